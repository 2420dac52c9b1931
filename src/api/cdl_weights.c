/* The public API's initial weights (cdl.h): a cfg's net loaded from a cdl checkpoint (the layers
 * that match), darknet .weights, or a safetensors file under torchvision's names; and the
 * safetensors export. */
#include "cdl.h"

#include <stdio.h>
#include <string.h>

#include "cdl_model.h"
#include "io/safetensors.h"
#include "model/darknet_weights.h"
#include "model/finetune.h"
#include "model/safetensors_weights.h"

/* api_load_weights without a new head. */
static int load_weights(Net *net, const char *path, char *note, size_t note_size,
                        ModelMeta *head_names, Error *e)
{
    if (!cdl_is_checkpoint(path) && !safetensors_is_path(path)) {
        DarknetHeader h;
        int st = darknet_weights_load(net, path, &h, e);
        char keys[64] = "";
        snprintf(keys, sizeof keys, "%s%s%s", h.set_bn_darknet ? "bn_darknet=1" : "",
                 h.set_bn_darknet && h.set_letterbox ? ", " : "",
                 h.set_letterbox ? "letterbox=1" : "");
        if (!st)
            snprintf(note, note_size, "%s: darknet %d.%d.%d weights (seen %llu images)%s%s%s", path,
                     h.major, h.minor, h.revision, (unsigned long long)h.seen,
                     keys[0] ? "; as darknet computes, " : "", keys,
                     keys[0] ? " (not set by the cfg; --set net.KEY=0 keeps cdl's)" : "");
        return st;
    }
    WeightsMatch m;
    const int safetensors = safetensors_is_path(path);
    int st = safetensors ? safetensors_load_net(net, path, &m, e)
                         : finetune_load_weights(net, path, &m, e);
    if (!st)
        snprintf(note, note_size, "%s: loaded %d layer%s%s%s", path, m.loaded,
                 m.loaded == 1 ? "" : "s", m.skipped ? ", skipped layers " : "", m.skipped_list);
    if (!st && head_names) {
        head_names->names = m.names;
        head_names->n_names = m.n_names;
        m.names = NULL;
        m.n_names = 0;
    }
    weights_match_free(&m);
    return st;
}

int api_load_weights(Net *net, const char *path, int new_head, char *note, size_t note_size,
                     ModelMeta *head_names, Error *e)
{
    if (!new_head)
        return load_weights(net, path, note, note_size, head_names, e);
    HeadValues h;
    int st = finetune_head_save(net, &h, e);
    if (st)
        return st;
    st = load_weights(net, path, note, note_size, NULL, e);
    const int layer = h.layer;
    finetune_head_restore(net, &h);
    const size_t used = strlen(note);
    if (!st && used < note_size)
        snprintf(note + used, note_size - used,
                 "; new head (--new-head): layer %d [%s] keeps its initial values", layer,
                 net->layers[layer].type->name);
    return st;
}

int api_check_head_names(const ModelMeta *head, char *const *names, int n, const char *path,
                         const char *data_path, Error *e)
{
    const int st = model_meta_check_names(head, names, n, path, data_path, e);
    return st ? error_append(e, st,
                             "; --weights loaded its head (the last layer with tensors) as it "
                             "is: add --new-head to fine-tune a new head on these classes (or "
                             "give that layer another shape), or train on the classes it was "
                             "trained on")
              : CDL_OK;
}

int cdl_model_load_weights(cdl_model *model, const char *path, char *note, size_t note_size,
                           char *err, size_t err_size)
{
    Error e = {0};
    char line[1200];
    ModelMeta head = {0};
    int st = api_load_weights(&model->net, path, 0, line, sizeof line, &head, &e);
    net_weights_changed(&model->net);
    if (st)
        return api_report(&e, err, err_size);
    if (head.n_names && !model->meta.n_names) { /* a cfg's model: the loaded head's classes */
        model->meta.names = head.names;
        model->meta.n_names = head.n_names;
        head.names = NULL;
        head.n_names = 0;
        snprintf(model->origin, sizeof model->origin, "%s", path);
    }
    model_meta_free(&head);
    if (note_size)
        snprintf(note, note_size, "%s", line);
    return CDL_OK;
}

int cdl_model_export_safetensors(const cdl_model *model, const char *path, char *err,
                                 size_t err_size)
{
    Error e = {0};
    return safetensors_save_net(&model->net, path, &e) ? api_report(&e, err, err_size) : CDL_OK;
}
