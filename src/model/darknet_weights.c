/* Reading and writing darknet .weights files (layout in the header). */
#include "model/darknet_weights.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/atomic_file.h"

#define MAX_TENSORS 5

/* The tensors of one layer, in file order. */
typedef struct Layout {
    Param *tensors[MAX_TENSORS];
    int n;
    size_t floats;
} Layout;

/* l's tensors in darknet's order. CDL_EUSAGE when darknet has no place for them. */
static int layout_of(Layer *l, Layout *lay, Error *e)
{
    static const char *const conv[] = {"biases", "scales", "rolling_mean", "rolling_variance",
                                       "weights"};
    static const char *const connected[] = {"biases", "weights", "scales", "rolling_mean",
                                            "rolling_variance"};
    static const char *const batchnorm[] = {"scales", "rolling_mean", "rolling_variance"};
    const char *const *names = NULL;
    int n = 0;
    if (l->type->darknet_weights == DARKNET_CONVOLUTIONAL)
        names = conv, n = 5;
    else if (l->type->darknet_weights == DARKNET_CONNECTED)
        names = connected, n = 5;
    else if (l->type->darknet_weights == DARKNET_BATCHNORM)
        names = batchnorm, n = 3;
    memset(lay, 0, sizeof *lay);
    if (names && names != batchnorm && !layer_param(l, "biases"))
        return error_set(e, CDL_EUSAGE,
                         "layer %d [%s]: darknet .weights have no bias-free layer (bias=0)",
                         l->index, l->type->name);
    for (int k = 0; k < n; k++) {
        Param *p = layer_param(l, names[k]);
        if (!p) /* the batch-norm tensors of a layer without batch_normalize */
            continue;
        lay->tensors[lay->n++] = p;
        lay->floats += p->count;
    }
    /* Every tensor needs its place, but a [batchnorm]'s shift, which darknet keeps at 0. */
    const int unstored = names == batchnorm;
    for (int p = 0; p < l->n_params && lay->n + unstored != l->n_params; p++) {
        int placed = unstored && !strcmp(l->params[p].name, "biases");
        for (int k = 0; k < lay->n; k++)
            placed |= lay->tensors[k] == &l->params[p];
        if (!placed)
            return error_set(e, CDL_EUSAGE,
                             "layer %d [%s]: darknet .weights have no place for its %s", l->index,
                             l->type->name, l->params[p].name);
    }
    return CDL_OK;
}

/* The layer index of the last layer with tensors before index `before`, or -1. */
static int last_with_tensors(const Net *net, int before)
{
    int last = -1;
    for (int i = 0; i < before; i++)
        if (net->layers[i].n_params)
            last = i;
    return last;
}

/* The bytes after the header that net's layers take; fails for a layer darknet cannot hold. */
static int payload_bytes(const Net *net, size_t *bytes, Error *e)
{
    *bytes = 0;
    for (int i = 0; i < net->n_layers; i++) {
        Layout lay;
        int st = layout_of(&net->layers[i], &lay, e);
        if (st)
            return st;
        *bytes += lay.floats * sizeof(float);
    }
    return CDL_OK;
}

/* The refusal of a file of `have` payload bytes where `need` are expected. */
static int size_mismatch(const Net *net, const char *path, size_t have, size_t need, Error *e)
{
    if (have > need) {
        const int last = last_with_tensors(net, net->n_layers);
        return error_set(e, CDL_EUSAGE,
                         "%s: %zu bytes more than the layers of %s need (the last with tensors "
                         "is layer %d [%s]): these weights are not for this cfg",
                         path, have - need, net->cfg.path, last,
                         last >= 0 ? net->layers[last].type->name : "none");
    }
    size_t at = 0;
    int i = 0;
    for (; i < net->n_layers; i++) {
        Layout lay;
        layout_of(&net->layers[i], &lay, NULL);
        at += lay.floats * sizeof(float);
        if (at > have)
            break;
    }
    return error_set(e, CDL_EUSAGE,
                     "%s: the data ends inside layer %d [%s] of %s (%zu bytes short): these "
                     "weights are not for this cfg, or the file is truncated",
                     path, i, net->layers[i].type->name, net->cfg.path, need - have);
}

/* Refuses a tensor that a mismatched layout would produce: non-finite values, or a negative
 * variance. */
static int check_values(const Layer *l, const Param *p, const char *path, Error *e)
{
    const int variance = !strcmp(p->name, "rolling_variance");
    for (size_t k = 0; k < p->count; k++)
        if (!isfinite(p->data[k]) || (variance && p->data[k] < 0))
            return error_set(e, CDL_EUSAGE,
                             "%s: layer %d [%s]: %s[%zu] = %g is not a valid value: these "
                             "weights are not for this cfg, or the file is corrupt",
                             path, l->index, l->type->name, p->name, k, (double)p->data[k]);
    return CDL_OK;
}

/* w [rows][cols] = its transpose, read as [cols][rows] (scratch holds rows*cols floats). */
static void transpose(float *w, size_t rows, size_t cols, float *scratch)
{
    memcpy(scratch, w, rows * cols * sizeof *w);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            w[r * cols + c] = scratch[c * rows + r];
}

static int read_header(FILE *f, const char *path, size_t file_bytes, DarknetHeader *h,
                       size_t *header_bytes, Error *e)
{
    int32_t version[3];
    if (file_bytes < sizeof version || fread(version, sizeof version, 1, f) != 1)
        return error_set(e, CDL_EUSAGE, "%s: too short for a darknet .weights header", path);
    h->major = version[0], h->minor = version[1], h->revision = version[2];
    for (int k = 0; k < 3; k++)
        if (version[k] < 0 || version[k] > DARKNET_VERSION_MAX)
            return error_set(e, CDL_EUSAGE,
                             "%s: not darknet .weights (its header says version %ld.%ld.%ld; "
                             "each part of darknet's is in 0..%d)",
                             path, (long)h->major, (long)h->minor, (long)h->revision,
                             DARKNET_VERSION_MAX);
    /* In range, major * 10 + minor cannot overflow (darknet's own test overflows on others). */
    const int wide = h->major * 10 + h->minor >= 2 && h->major < 1000 && h->minor < 1000;
    *header_bytes = sizeof version + (wide ? sizeof(uint64_t) : sizeof(int32_t));
    int32_t seen32 = 0;
    int ok = file_bytes >= *header_bytes &&
             (wide ? fread(&h->seen, sizeof h->seen, 1, f) : fread(&seen32, sizeof seen32, 1, f));
    if (!ok)
        return error_set(e, CDL_EUSAGE, "%s: too short for a darknet .weights header", path);
    if (!wide)
        h->seen = (uint64_t)(uint32_t)seen32;
    return CDL_OK;
}

/* Reads every layer's tensors from f, positioned after the header. */
static int read_tensors(Net *net, FILE *f, const char *path, int transposed, Error *e)
{
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        Layout lay;
        int st = layout_of(l, &lay, e);
        for (int k = 0; k < lay.n && !st; k++) {
            Param *p = lay.tensors[k];
            if (fread(p->data, sizeof *p->data, p->count, f) != p->count)
                return error_set(e, CDL_ERUNTIME, "%s: read error in layer %d [%s]", path, i,
                                 l->type->name);
            if (transposed && l->type->darknet_weights == DARKNET_CONNECTED &&
                !strcmp(p->name, "weights")) {
                const size_t out = shape_size(l->out_shape), in = p->count / out;
                float *scratch = malloc(p->count * sizeof *scratch);
                if (!scratch)
                    return error_set(e, CDL_ERUNTIME, "out of memory");
                transpose(p->data, out, in, scratch);
                free(scratch);
            }
            st = check_values(l, p, path, e);
        }
        if (st)
            return st;
        Param *shift = layer_param(l, "biases");
        if (l->type->darknet_weights == DARKNET_BATCHNORM && shift)
            memset(shift->data, 0, shift->count * sizeof *shift->data);
    }
    return CDL_OK;
}

/* bn_darknet=1 and letterbox=1 where the cfg did not choose (see the header): set in the net and
 * recorded in its cfg, so checkpoints of the net keep them. */
static int use_darknet_defaults(Net *net, DarknetHeader *h, Error *e)
{
    CfgSection *s = &net->cfg.sections[0];
    h->set_bn_darknet = !cfg_find(s, "bn_darknet");
    h->set_letterbox = !cfg_find(s, "letterbox") && !cfg_find(s, "center_crop");
    int st = CDL_OK;
    if (h->set_bn_darknet) {
        net->hyper.bn_darknet = 1;
        if (!cfg_find(s, "bn_momentum")) /* bn_darknet's default, as a cfg with it gets */
            net->hyper.bn_momentum = 0.01f;
        st = cfg_apply_override(&net->cfg, "net.bn_darknet=1", e);
    }
    if (!st && h->set_letterbox) /* read by net_augment (train/net_keys.h) */
        st = cfg_apply_override(&net->cfg, "net.letterbox=1", e);
    return st;
}

int darknet_weights_load(Net *net, const char *path, DarknetHeader *header, Error *e)
{
    size_t need;
    int st = payload_bytes(net, &need, e);
    if (st)
        return st;
    FILE *f = fopen(path, "rb");
    if (!f)
        return error_set(e, CDL_ERUNTIME, "%s: cannot open weights: %s", path, strerror(errno));
    struct stat info;
    if (fstat(fileno(f), &info)) {
        fclose(f);
        return error_set(e, CDL_ERUNTIME, "%s: %s", path, strerror(errno));
    }
    const size_t file_bytes = (size_t)info.st_size;
    DarknetHeader h = {0};
    size_t header_bytes = 0;
    st = read_header(f, path, file_bytes, &h, &header_bytes, e);
    if (!st && file_bytes - header_bytes != need)
        st = size_mismatch(net, path, file_bytes - header_bytes, need, e);
    st = st ? st : read_tensors(net, f, path, h.major > 1000 || h.minor > 1000, e);
    fclose(f);
    st = st ? st : use_darknet_defaults(net, &h, e);
    if (!st && header)
        *header = h;
    return st;
}

int darknet_weights_save(const Net *net, const char *path, uint64_t seen, Error *e)
{
    size_t need;
    int st = payload_bytes(net, &need, e);
    for (int i = 0; i < net->n_layers && !st; i++) {
        Layer *l = &net->layers[i];
        const Param *shift = layer_param(l, "biases");
        if (l->type->darknet_weights != DARKNET_BATCHNORM || !shift)
            continue;
        for (size_t k = 0; k < shift->count && !st; k++)
            if (shift->data[k] != 0.0f)
                st = error_set(e, CDL_EUSAGE,
                               "layer %d [batchnorm]: its shift (biases) is not zero, and darknet "
                               ".weights have no place for it",
                               i);
    }
    if (st)
        return st;
    AtomicFile out;
    if ((st = atomic_file_open(&out, path, FILE_KIND_WEIGHTS, e)))
        return st;
    const int32_t version[3] = {0, 2, 0};
    int ok = fwrite(version, sizeof version, 1, out.file) == 1 &&
             fwrite(&seen, sizeof seen, 1, out.file) == 1;
    for (int i = 0; i < net->n_layers && ok; i++) {
        Layout lay;
        layout_of(&net->layers[i], &lay, NULL);
        for (int k = 0; k < lay.n && ok; k++)
            ok = fwrite(lay.tensors[k]->data, sizeof(float), lay.tensors[k]->count, out.file) ==
                 lay.tensors[k]->count;
    }
    if (!ok) {
        atomic_file_abort(&out);
        return error_set(e, CDL_ERUNTIME, "%s: write error: %s", path, strerror(errno));
    }
    return atomic_file_commit(&out, e);
}
