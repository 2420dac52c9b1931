/* Partial loading of a model's tensors into a net, layer by layer where they match. */
#include "model/finetune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/net_quant.h"
#include "model/model_io.h"

/* The longest text one skipped layer adds to the list (longer reasons are cut). */
#define SKIP_TEXT_MAX 240

void weights_shape_text(const int64_t *dims, int n_dims, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int d = 0; d < n_dims && used < size; d++)
        used +=
            (size_t)snprintf(out + used, size - used, "%s%lld", d ? "x" : "", (long long)dims[d]);
}

static int same_shape(const Param *a, const Param *b)
{
    if (a->n_dims != b->n_dims)
        return 0;
    for (int d = 0; d < a->n_dims; d++)
        if (a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

/* "weights,biases" */
static void names_text(const Layer *l, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < l->n_params && used < size; k++)
        used += (size_t)snprintf(out + used, size - used, "%s%s", k ? "," : "", l->params[k].name);
}

/* Why layer d of dst cannot take the tensors of src's layer at its index; "" when it can. */
static void mismatch(const Net *src, const Layer *d, char *why, size_t size)
{
    why[0] = '\0';
    if (d->index >= src->n_layers) {
        snprintf(why, size, "not in the base: it has %d layers", src->n_layers);
        return;
    }
    const Layer *s = &src->layers[d->index];
    if (s->type != d->type) {
        snprintf(why, size, "the base has [%s] there", s->type->name);
        return;
    }
    int same_names = s->n_params == d->n_params;
    for (int k = 0; same_names && k < d->n_params; k++)
        same_names = !strcmp(s->params[k].name, d->params[k].name);
    if (!same_names) {
        char mine[80], theirs[80];
        names_text(d, mine, sizeof mine);
        names_text(s, theirs, sizeof theirs);
        snprintf(why, size, "tensors %s vs %s", mine, theirs);
        return;
    }
    for (int k = 0; k < d->n_params; k++)
        if (!same_shape(&d->params[k], &s->params[k])) {
            char mine[64], theirs[64];
            weights_shape_text(d->params[k].dims, d->params[k].n_dims, mine, sizeof mine);
            weights_shape_text(s->params[k].dims, s->params[k].n_dims, theirs, sizeof theirs);
            snprintf(why, size, "shape %s vs %s", mine, theirs);
            return;
        }
}

/* The index of the net's last layer with tensors (its head), or -1. */
static int last_with_params(const Net *net)
{
    int last = -1;
    for (int i = 0; i < net->n_layers; i++)
        if (net->layers[i].n_params)
            last = i;
    return last;
}

/* Copies the tensors of every matching layer; appends the others to m->skipped_list, which has
 * room for SKIP_TEXT_MAX characters per layer. */
static void copy_matching_layers(Net *dst, const Net *src, WeightsMatch *m)
{
    size_t used = 0;
    int head = -1; /* the last layer loaded */
    m->skipped_list[0] = '\0';
    for (int i = 0; i < dst->n_layers; i++) {
        Layer *d = &dst->layers[i];
        if (!d->n_params)
            continue;
        char why[SKIP_TEXT_MAX - 64], entry[SKIP_TEXT_MAX];
        mismatch(src, d, why, sizeof why);
        if (why[0]) {
            snprintf(entry, sizeof entry, "%s%d [%s] (%s)", m->skipped ? ", " : "", i,
                     d->type->name, why);
            memcpy(m->skipped_list + used, entry, strlen(entry) + 1);
            used += strlen(entry);
            m->skipped++;
            continue;
        }
        const Layer *s = &src->layers[i];
        for (int k = 0; k < d->n_params; k++)
            memcpy(d->params[k].data, s->params[k].data,
                   d->params[k].count * sizeof *d->params[k].data);
        m->loaded++;
        head = i;
    }
    m->head_loaded = head >= 0 && head == last_with_params(dst);
}

int finetune_copy_matching(Net *dst, const Net *src, WeightsMatch *m, Error *e)
{
    memset(m, 0, sizeof *m);
    const size_t cap = 1 + (size_t)dst->n_layers * SKIP_TEXT_MAX;
    if (!(m->skipped_list = malloc(cap)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    copy_matching_layers(dst, src, m);
    return CDL_OK;
}

int finetune_load_weights(Net *net, const char *path, WeightsMatch *m, Error *e)
{
    memset(m, 0, sizeof *m);
    Net base;
    ModelMeta meta;
    int st = model_load(path, &base, 0, NULL, &meta, e);
    if (st)
        return st;
    st = net_is_quantized(&base)
             ? error_set(e, CDL_EUSAGE,
                         "%s is an int8 model (cdl quantize): training starts from float "
                         "weights; use the checkpoint it was made from",
                         path)
             : finetune_copy_matching(net, &base, m, e);
    if (!st && m->head_loaded) { /* the names go with the head */
        m->names = meta.names;
        m->n_names = meta.n_names;
        meta.names = NULL;
        meta.n_names = 0;
    }
    model_meta_free(&meta);
    net_free(&base);
    if (!st && !m->loaded)
        st = error_set(e, CDL_EUSAGE,
                       "%s: its architecture differs from the cfg: no layer matches (skipped "
                       "layers %s)",
                       path, m->skipped_list);
    return st;
}

void weights_match_free(WeightsMatch *m)
{
    free(m->skipped_list);
    for (int i = 0; i < m->n_names; i++)
        free(m->names[i]);
    free(m->names);
    memset(m, 0, sizeof *m);
}

int finetune_head_save(const Net *net, HeadValues *h, Error *e)
{
    memset(h, 0, sizeof *h);
    h->layer = last_with_params(net);
    if (h->layer < 0)
        return error_set(e, CDL_EUSAGE, "a new head needs a layer with tensors: the net has none");
    const Layer *l = &net->layers[h->layer];
    for (int k = 0; k < l->n_params; k++)
        h->count += l->params[k].count;
    if (!(h->data = malloc((h->count ? h->count : 1) * sizeof *h->data)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    size_t at = 0;
    for (int k = 0; k < l->n_params; at += l->params[k++].count)
        memcpy(h->data + at, l->params[k].data, l->params[k].count * sizeof *h->data);
    return CDL_OK;
}

void finetune_head_restore(Net *net, HeadValues *h)
{
    const Layer *l = &net->layers[h->layer];
    size_t at = 0;
    for (int k = 0; k < l->n_params; at += l->params[k++].count)
        memcpy(l->params[k].data, h->data + at, l->params[k].count * sizeof *h->data);
    free(h->data);
    memset(h, 0, sizeof *h);
}
