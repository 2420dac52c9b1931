/* Loading a zoo net from, and saving it to, safetensors under torchvision's names. */
#include "model/safetensors_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "model/torchvision_names.h"

/* Entries a refusal lists per kind of problem before "and N more". */
#define LIST_SHOWN 6

/* A comma-separated list that shows its first LIST_SHOWN entries and counts the rest. */
typedef struct NameList {
    char text[400];
    int n;
} NameList;

static void list_add(NameList *l, const char *fmt, const char *name, const char *a, const char *b)
{
    if (l->n++ < LIST_SHOWN) {
        const size_t used = strlen(l->text);
        char entry[200];
        snprintf(entry, sizeof entry, fmt, name, a, b);
        snprintf(l->text + used, sizeof l->text - used, "%s%s", used ? ", " : "", entry);
    }
}

/* "; WHAT: a, b and 3 more" when l has entries. */
static void list_append(char *out, size_t size, const char *what, const NameList *l)
{
    if (!l->n)
        return;
    const size_t used = strlen(out);
    char more[32] = "";
    if (l->n > LIST_SHOWN)
        snprintf(more, sizeof more, " and %d more", l->n - LIST_SHOWN);
    snprintf(out + used, size - used, "; %s: %s%s", what, l->text, more);
}

/* torch's shape of entry x: its own (TorchTensor.n_dims), else the Param's. */
static int torch_dims(const TorchTensor *x, const Param *p, const int64_t **dims)
{
    *dims = x->n_dims ? x->dims : p->dims;
    return x->n_dims ? x->n_dims : p->n_dims;
}

static int same_dims(const TorchTensor *x, const Param *p, const SafetensorsTensor *t)
{
    const int64_t *dims;
    const int n = torch_dims(x, p, &dims);
    if (n != t->n_dims)
        return 0;
    for (int d = 0; d < n; d++)
        if (dims[d] != t->dims[d])
            return 0;
    return 1;
}

static int named(const TorchNames *names, const char *name)
{
    for (int k = 0; k < names->n_tensors; k++)
        if (!strcmp(names->tensors[k].name, name))
            return 1;
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Checks every name, dtype and shape; marks the head skipped (*head_skipped) when only its
 * shapes differ. */
static int check_tensors(const Net *net, const Safetensors *st, const TorchNames *names,
                         int *head_skipped, char *head_why, size_t why_size, Error *e)
{
    NameList missing = {0}, shapes = {0}, head = {0}, dtypes = {0}, extra = {0};
    for (int k = 0; k < names->n_tensors; k++) {
        const TorchTensor *x = &names->tensors[k];
        if (x->param < 0)
            continue;
        const SafetensorsTensor *t = safetensors_find(st, x->name);
        const Param *p = &net->layers[x->layer].params[x->param];
        char mine[64], theirs[64];
        if (!t) {
            list_add(&missing, "%s", x->name, "", "");
            continue;
        }
        if (!safetensors_is_float(t))
            list_add(&dtypes, "%s (%s)", x->name, t->dtype, "");
        if (same_dims(x, p, t))
            continue;
        const int64_t *dims;
        const int n_dims = torch_dims(x, p, &dims);
        weights_shape_text(dims, n_dims, mine, sizeof mine);
        weights_shape_text(t->dims, t->n_dims, theirs, sizeof theirs);
        list_add(x->layer == names->head_layer ? &head : &shapes, "%s %s vs %s", x->name, mine,
                 theirs);
    }
    for (int k = 0; k < st->n_tensors; k++) {
        const char *name = st->tensors[k].name;
        if (!named(names, name) && !ends_with(name, ".num_batches_tracked"))
            list_add(&extra, "%s", name, "", "");
    }
    *head_skipped = head.n > 0;
    snprintf(head_why, why_size, "%s", head.text);
    if (!missing.n && !shapes.n && !dtypes.n && !extra.n)
        return CDL_OK;
    char lists[1000] = "";
    list_append(lists, sizeof lists, "shapes differ (cfg vs file)", &shapes);
    list_append(lists, sizeof lists, "missing from the file", &missing);
    list_append(lists, sizeof lists, "not in the cfg", &extra);
    list_append(lists, sizeof lists, "not F32, F16 or BF16", &dtypes);
    return error_set(e, CDL_EUSAGE, "%s: does not fit %s (torchvision %s names)%s", st->path,
                     net->cfg.path, names->family, lists);
}

/* Copies the file's tensors into the layers that take them. */
static int copy_tensors(Net *net, const Safetensors *st, const TorchNames *names, int skip_layer,
                        WeightsMatch *m, Error *e)
{
    int last_layer = -1;
    for (int k = 0; k < names->n_tensors; k++) {
        const TorchTensor *x = &names->tensors[k];
        if (x->param < 0 || x->layer == skip_layer)
            continue;
        const Param *p = &net->layers[x->layer].params[x->param];
        int st_code = safetensors_read_f32(st, safetensors_find(st, x->name), p->data, e);
        if (st_code)
            return st_code;
        m->loaded += x->layer != last_layer;
        last_layer = x->layer;
    }
    return CDL_OK;
}

int safetensors_load_net(Net *net, const char *path, WeightsMatch *m, Error *e)
{
    memset(m, 0, sizeof *m);
    if (!(m->skipped_list = calloc(1, 512)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    TorchNames names;
    Safetensors st;
    int st_code = torchvision_names(net, &names, e);
    if (!st_code)
        st_code = safetensors_open(&st, path, e);
    else
        memset(&st, 0, sizeof st);
    int head_skipped = 0;
    char head_why[400];
    if (!st_code)
        st_code = check_tensors(net, &st, &names, &head_skipped, head_why, sizeof head_why, e);
    if (!st_code && head_skipped) {
        const Layer *h = &net->layers[names.head_layer];
        snprintf(m->skipped_list, 512, "%d [%s] (%s)", h->index, h->type->name, head_why);
        m->skipped = 1;
    }
    if (!st_code)
        st_code = copy_tensors(net, &st, &names, head_skipped ? names.head_layer : -1, m, e);
    safetensors_close(&st);
    torchvision_names_free(&names);
    return st_code;
}

int safetensors_save_net(const Net *net, const char *path, Error *e)
{
    TorchNames names;
    int st = torchvision_names(net, &names, e);
    SafetensorsTensor *tensors =
        st ? NULL : calloc(names.n_tensors ? (size_t)names.n_tensors : 1, sizeof *tensors);
    if (!st && !tensors)
        st = error_set(e, CDL_ERUNTIME, "out of memory");
    static const int64_t zero = 0;
    for (int k = 0; !st && k < names.n_tensors; k++) {
        const TorchTensor *x = &names.tensors[k];
        SafetensorsTensor *t = &tensors[k];
        t->name = names.tensors[k].name;
        if (x->param < 0) {
            snprintf(t->dtype, sizeof t->dtype, "I64");
            t->count = 1;
            t->data = &zero;
            continue;
        }
        const Param *p = &net->layers[x->layer].params[x->param];
        snprintf(t->dtype, sizeof t->dtype, "F32");
        const int64_t *dims;
        t->n_dims = torch_dims(x, p, &dims);
        memcpy(t->dims, dims, (size_t)t->n_dims * sizeof *dims);
        t->count = p->count;
        t->data = p->data;
    }
    static const char *const keys[] = {"format"}, *const values[] = {"pt"};
    if (!st)
        st = safetensors_write(path, tensors, names.n_tensors, keys, values, 1, e);
    free(tensors);
    torchvision_names_free(&names);
    return st;
}
