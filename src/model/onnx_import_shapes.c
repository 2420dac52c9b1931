/* `cdl import`: the nodes that move channels or compute shapes (onnx_import_internal.h):
 * integer shape arithmetic folded to constants (Shape, Gather, Add/Sub/Mul/Div of int64
 * constants: torch's export of x.chunk(2, dim=1)), Slice of a channel group ([route]
 * groups=), and the channel shuffle Reshape-Transpose-Reshape ([shuffle]). */
#include "model/onnx_import_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An entry of a folded shape that is the graph input's symbolic batch: no arithmetic on it. */
#define SYMBOLIC_BATCH INT64_MIN

int import_make_ints(Importer *im, const OnnxNode *n, int n_dims, const int64_t *dims,
                     int64_t **values)
{
    size_t count = 1;
    for (int k = 0; k < n_dims; k++) {
        if (dims[k] < 0 || dims[k] > 4096)
            return import_refuse(im, n, "a folded shape tensor of dimension %lld",
                                 (long long)dims[k]);
        count *= (size_t)dims[k];
    }
    if (n_dims > ONNX_READ_MAX_DIMS || count > 4096)
        return import_refuse(im, n, "a folded shape tensor of %zu values", count);
    if (im->n_made == im->cap_made) {
        const int cap = im->cap_made ? 2 * im->cap_made : 16;
        OnnxTensor **grown = realloc(im->made, (size_t)cap * sizeof *grown);
        if (!grown)
            return import_out_of_memory(im);
        im->made = grown;
        im->cap_made = cap;
    }
    OnnxTensor *t = calloc(1, sizeof *t);
    int64_t *ints = calloc(count ? count : 1, sizeof *ints);
    if (!t || !ints) {
        free(t);
        free(ints);
        return import_out_of_memory(im);
    }
    im->made[im->n_made++] = t;
    t->name = (char *)n->outputs[0];
    t->data_type = ONNX_READ_INT64;
    t->n_dims = n_dims;
    memcpy(t->dims, dims, (size_t)n_dims * sizeof *dims);
    t->count = count;
    t->ints = ints;
    *values = ints;
    return import_bind(im, n->outputs[0], 0, t, 0);
}

/* A new 1-D int64 constant of count values (a scalar when scalar), bound to n's output. */
static int make_constant(Importer *im, const OnnxNode *n, size_t count, int scalar,
                         int64_t **values)
{
    const int64_t dims[1] = {(int64_t)count};
    return import_make_ints(im, n, scalar ? 0 : 1, dims, values);
}

int import_int_input(Importer *im, const OnnxNode *n, int k, const OnnxTensor **t)
{
    int st = import_input_constant(im, n, k, 2, t);
    if (!st && *t && (*t)->data_type != ONNX_READ_INT64)
        return import_refuse(im, n, "input '%s' must be int64", (*t)->name);
    return st;
}

/* Shape: the value's [N, C, H, W] (or [N, features]) as a constant. */
int import_shape(Importer *im, const OnnxNode *n)
{
    const ImportValue *x;
    int64_t *v = NULL;
    int st = import_check_attrs(im, n, (const char *const[]){NULL});
    st = st ? st : import_input_layer(im, n, 0, &x);
    if (!st && x->flat == VALUE_NHWC)
        return import_refuse_channels_last(im, n);
    if (st)
        return st;
    const Shape s = import_layer_shape(im, x->layer);
    const int rank = x->flat == VALUE_ROWS ? 3 : x->flat == VALUE_VECTOR ? 2 : 4;
    st = make_constant(im, n, (size_t)rank, 0, &v);
    if (st)
        return st;
    v[0] = im->batch > 0 ? im->batch : SYMBOLIC_BATCH;
    if (x->flat == VALUE_VECTOR)
        v[1] = (int64_t)shape_size(s);
    else if (x->flat == VALUE_ROWS) /* token rows [N, T, C] */
        v[1] = s.h, v[2] = s.w;
    else /* a map, or token rows [N, 1, T, C] */
        v[1] = s.c, v[2] = s.h, v[3] = s.w;
    return CDL_OK;
}

/* Gather (axis 0) of a 1-D int64 constant by constant indices. */
int import_gather(Importer *im, const OnnxNode *n)
{
    const OnnxTensor *data, *idx;
    int64_t *v = NULL;
    int st = import_check_attrs(im, n, (const char *const[]){"axis", NULL});
    st = st ? st : import_int_input(im, n, 0, &data);
    st = st ? st : import_int_input(im, n, 1, &idx);
    if (st)
        return st;
    if (import_attr_int(n, "axis", 0) != 0 || data->n_dims != 1 || idx->n_dims > 1)
        return import_refuse(im, n, "only a Gather of shape entries (1-D data, axis 0) folds");
    st = make_constant(im, n, idx->count, idx->n_dims == 0, &v);
    for (size_t k = 0; !st && k < idx->count; k++) {
        const int64_t i = idx->ints[k] < 0 ? idx->ints[k] + (int64_t)data->count : idx->ints[k];
        if (i < 0 || i >= (int64_t)data->count)
            return import_refuse(im, n, "index %lld is outside the %zu values",
                                 (long long)idx->ints[k], data->count);
        if (data->ints[i] == SYMBOLIC_BATCH)
            return import_refuse(im, n, "reads the symbolic batch size: cdl folds fixed shapes");
        v[k] = data->ints[i];
    }
    return st;
}

/* Add, Sub, Mul or Div (op) of two int64 constants, one of them a single value or both of
 * one count. */
int import_int_arithmetic(Importer *im, const OnnxNode *n, char op)
{
    const OnnxTensor *a, *b;
    int64_t *v = NULL;
    int st = import_check_attrs(im, n, (const char *const[]){NULL});
    st = st ? st : import_int_input(im, n, 0, &a);
    st = st ? st : import_int_input(im, n, 1, &b);
    if (st)
        return st;
    const size_t count = a->count > b->count ? a->count : b->count;
    if ((a->count != count && a->count != 1) || (b->count != count && b->count != 1))
        return import_refuse(im, n, "shapes of %zu and %zu values do not broadcast", a->count,
                             b->count);
    st = make_constant(im, n, count, a->n_dims == 0 && b->n_dims == 0, &v);
    for (size_t k = 0; !st && k < count; k++) {
        const int64_t x = a->ints[a->count == 1 ? 0 : k], y = b->ints[b->count == 1 ? 0 : k];
        if (x == SYMBOLIC_BATCH || y == SYMBOLIC_BATCH)
            return import_refuse(im, n, "computes with the symbolic batch size");
        if (op == 'D' && y == 0)
            return import_refuse(im, n, "divides by zero");
        v[k] = op == 'A' ? x + y : op == 'S' ? x - y : op == 'M' ? x * y : x / y;
    }
    return st;
}

/* Slice of channels [start, end) of a feature map: [route] groups= C / (end - start),
 * group_id= start / (end - start), when the range is one of equal groups. */
int import_slice(Importer *im, const OnnxNode *n)
{
    const ImportValue *x;
    const OnnxTensor *starts, *ends, *axes, *steps;
    int st = import_check_attrs(im, n, (const char *const[]){NULL});
    st = st ? st : import_int_input(im, n, 1, &starts);
    st = st ? st : import_int_input(im, n, 2, &ends);
    st = st ? st : n->n_inputs > 3 && n->inputs[3][0] ? import_int_input(im, n, 3, &axes) : CDL_OK;
    st = st ? st : n->n_inputs > 4 && n->inputs[4][0] ? import_int_input(im, n, 4, &steps) : CDL_OK;
    st = st ? st : import_input_layer(im, n, 0, &x);
    if (!st && x->flat == VALUE_ROWS4)
        return import_select_token(im, n, x);
    if (st)
        return st;
    axes = n->n_inputs > 3 && n->inputs[3][0] ? axes : NULL;
    steps = n->n_inputs > 4 && n->inputs[4][0] ? steps : NULL;
    const Shape in = import_layer_shape(im, x->layer);
    const int64_t axis = axes && axes->count == 1 ? axes->ints[0] : 0;
    if (x->flat || x->layer < 0 || starts->count != 1 || ends->count != 1 ||
        (axes && axes->count != 1) || (axis != 1 && axis != -3) ||
        (steps && (steps->count != 1 || steps->ints[0] != 1)))
        return import_refuse(im, n,
                             "only a Slice of a feature map's channels (one axis, 1, step 1) "
                             "is supported");
    int64_t start = starts->ints[0], end = ends->ints[0];
    start = start < 0 ? start + in.c : start > in.c ? in.c : start;
    end = end < 0 ? end + in.c : end > in.c ? in.c : end;
    const int64_t width = end - start;
    if (width <= 0 || start < 0 || in.c % width || start % width)
        return import_refuse(im, n,
                             "channels [%lld, %lld) of %d: a [route] takes one of equal groups",
                             (long long)start, (long long)end, in.c);
    ImportLayer *l = import_add_layer(im, K_ROUTE, n); /* reads x's layer wherever it is */
    if (!l)
        return CDL_ERUNTIME;
    l->refs[0] = x->layer;
    l->n_refs = 1;
    l->groups = (int)(in.c / width);
    l->group_id = (int)(start / width);
    l->out = (Shape){(int)width, in.h, in.w};
    return import_bind_output(im, n, im->n_layers - 1, 0);
}

/* Whether the int64 constant shape is the map s with the given batch: N as 0, -1 (when no
 * other -1), the batch or 1; C, H, W as themselves or one -1. */
static int is_map_shape(const OnnxTensor *shape, Shape s, int64_t batch)
{
    if (shape->data_type != ONNX_READ_INT64 || shape->count != 4)
        return 0;
    const int64_t *d = shape->ints, want[4] = {0, s.c, s.h, s.w};
    int inferred = 0;
    for (int k = 0; k < 4; k++) {
        inferred += d[k] == -1;
        if (d[k] != -1 && d[k] != want[k] && !(k == 0 && (d[k] == 0 || d[k] == batch)))
            return 0;
    }
    return inferred <= 1;
}

/* Reshape of a map [N,C,H,W] to [N,g,C/g,H,W], whose only reader is a Transpose with perm
 * [0,2,1,3,4], whose only reader is a Reshape back to [N,C,H,W]: [shuffle] groups=g, the two
 * later nodes taken in. */
int import_channel_shuffle(Importer *im, const OnnxNode *n, const OnnxTensor *shape)
{
    const ImportValue *x;
    int layer;
    int st = import_input_layer(im, n, 0, &x);
    if (st)
        return st;
    const Shape in = import_layer_shape(im, x->layer);
    const int64_t *d = shape->ints;
    const int64_t batch = im->batch < 0 ? 1 : im->batch;
    const int transpose = import_sole_reader(im, n->outputs[0], "Transpose");
    const OnnxAttribute *perm =
        transpose < 0 ? NULL : onnx_node_attr(&im->m->nodes[transpose], "perm");
    static const int64_t swap[5] = {0, 2, 1, 3, 4};
    const int back =
        transpose < 0 ? -1 : import_sole_reader(im, im->m->nodes[transpose].outputs[0], "Reshape");
    const OnnxTensor *back_shape = back < 0 || im->m->nodes[back].n_inputs != 2
                                       ? NULL
                                       : import_graph_constant(im, im->m->nodes[back].inputs[1]);
    if (x->flat || x->layer < 0 || !(d[0] == 0 || d[0] == batch) || d[1] < 1 ||
        d[1] * d[2] != in.c || d[3] != in.h || d[4] != in.w || !perm || perm->n_ints != 5 ||
        memcmp(perm->ints, swap, sizeof swap) || !back_shape ||
        !is_map_shape(back_shape, in, batch))
        return import_refuse(im, n,
                             "a rank-5 Reshape imports only as the channel shuffle: [N,g,C/g,H,W], "
                             "Transpose [0,2,1,3,4], Reshape back to [N,C,H,W]");
    st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_SHUFFLE, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->groups = (int)d[1];
    l->out = in;
    im->consumed[transpose] = im->consumed[back] = 1;
    return import_bind_output(im, &im->m->nodes[back], im->n_layers - 1, 0);
}
