/* `cdl import`: int64 constants computed from int64 constants (onnx_import_internal.h), the
 * shape arithmetic exporters write where a value was static all along: torch writes F.pad's
 * pads as ConstantOfShape, Concat, Reshape to [-1, 2], Slice backwards, Transpose, Reshape,
 * Cast. Each node's result is a new constant; no layer. */
#include "model/onnx_import_internal.h"

#include <string.h>

/* Concat (axis 0) of 1-D constants. */
static int fold_concat(Importer *im, const OnnxNode *n)
{
    int64_t total = 0, *v = NULL;
    for (int k = 0; k < n->n_inputs; k++) {
        const OnnxTensor *t = import_find_value(im, n->inputs[k])->constant;
        if (t->n_dims != 1)
            return import_refuse(im, n, "only a Concat of 1-D int64 constants folds");
        total += (int64_t)t->count;
    }
    const int64_t axis = import_attr_int(n, "axis", 0);
    if (axis != 0 && axis != -1)
        return import_refuse(im, n, "attribute axis=%lld of 1-D constants", (long long)axis);
    int st = import_make_ints(im, n, 1, &total, &v);
    for (int k = 0; !st && k < n->n_inputs; k++) {
        const OnnxTensor *t = import_find_value(im, n->inputs[k])->constant;
        memcpy(v, t->ints, t->count * sizeof *v);
        v += t->count;
    }
    return st;
}

/* Reshape of a constant by a constant shape (0 copies a dim, one -1 is inferred). */
static int fold_reshape(Importer *im, const OnnxNode *n, const OnnxTensor *data,
                        const OnnxTensor *shape)
{
    int64_t dims[ONNX_READ_MAX_DIMS], known = 1, *v = NULL;
    int inferred = -1;
    if (shape->n_dims != 1 || shape->count > ONNX_READ_MAX_DIMS)
        return import_refuse(im, n, "shape '%s' is not a 1-D list of dims", shape->name);
    for (int k = 0; k < (int)shape->count; k++) {
        dims[k] = shape->ints[k] == 0 && k < data->n_dims ? data->dims[k] : shape->ints[k];
        if (dims[k] == -1 && inferred < 0)
            inferred = k;
        else if (dims[k] < 1)
            return import_refuse(im, n, "shape entry %lld is not supported",
                                 (long long)shape->ints[k]);
        else
            known *= dims[k];
    }
    if (inferred >= 0)
        dims[inferred] = known ? (int64_t)data->count / known : 0;
    int64_t count = 1;
    for (int k = 0; k < (int)shape->count; k++)
        count *= dims[k];
    if (count != (int64_t)data->count)
        return import_refuse(im, n, "reshapes %zu values into %lld", data->count, (long long)count);
    int st = import_make_ints(im, n, (int)shape->count, dims, &v);
    if (!st)
        memcpy(v, data->ints, data->count * sizeof *v);
    return st;
}

/* Slice of a 1-D or 2-D constant along one axis, with any step (ONNX's clamping). */
static int fold_slice(Importer *im, const OnnxNode *n, const OnnxTensor *data)
{
    const OnnxTensor *starts, *ends, *axes = NULL, *steps = NULL;
    int st = import_int_input(im, n, 1, &starts);
    st = st ? st : import_int_input(im, n, 2, &ends);
    st = st ? st : import_int_input(im, n, 3, &axes);
    st = st ? st : import_int_input(im, n, 4, &steps);
    if (st)
        return st;
    const int64_t axis = axes && axes->count == 1 ? axes->ints[0] : 0;
    const int a = (int)(axis < 0 ? axis + data->n_dims : axis);
    const int64_t step = steps && steps->count == 1 ? steps->ints[0] : 1;
    if (data->n_dims < 1 || data->n_dims > 2 || starts->count != 1 || ends->count != 1 ||
        (axes && axes->count != 1) || (steps && steps->count != 1) || a < 0 || a >= data->n_dims ||
        step == 0)
        return import_refuse(im, n,
                             "only a Slice of a 1-D or 2-D int64 constant along one "
                             "axis folds");
    const int64_t dim = data->dims[a];
    int64_t start = starts->ints[0], end = ends->ints[0];
    start = start < 0 ? start + dim : start;
    end = end < 0 ? end + dim : end;
    const int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
    start = start < 0 ? 0 : start > hi ? hi : start;
    end = end < lo ? lo : end > hi ? hi : end;
    int64_t taken = step > 0 ? (end - start + step - 1) / step : (start - end - step - 1) / -step;
    taken = taken < 0 ? 0 : taken;
    int64_t dims[2] = {data->dims[0], data->n_dims == 2 ? data->dims[1] : 1}, *v = NULL;
    const int64_t inner = data->n_dims == 2 && a == 0 ? dims[1] : 1;
    const int64_t outer = data->n_dims == 2 && a == 1 ? dims[0] : 1;
    dims[a] = taken;
    st = import_make_ints(im, n, data->n_dims, dims, &v);
    for (int64_t o = 0; !st && o < outer; o++)
        for (int64_t k = 0; k < taken; k++)
            for (int64_t i = 0; i < inner; i++)
                *v++ = data->ints[(o * dim + start + k * step) * inner + i];
    return st;
}

/* Transpose of a 2-D constant (perm [1,0], or none). */
static int fold_transpose(Importer *im, const OnnxNode *n, const OnnxTensor *data)
{
    const OnnxAttribute *perm = onnx_node_attr(n, "perm");
    if (data->n_dims != 2 || (perm && (perm->n_ints != 2 || perm->ints[0] != 1)))
        return import_refuse(im, n, "only a Transpose of a 2-D int64 constant folds");
    const int64_t dims[2] = {data->dims[1], data->dims[0]};
    int64_t *v = NULL;
    int st = import_make_ints(im, n, 2, dims, &v);
    for (int64_t r = 0; !st && r < dims[0]; r++)
        for (int64_t c = 0; c < dims[1]; c++)
            v[r * dims[1] + c] = data->ints[c * dims[0] + r];
    return st;
}

/* ConstantOfShape with an int64 value: that value in every place. */
static int fold_constant_of_shape(Importer *im, const OnnxNode *n, const OnnxTensor *shape)
{
    const OnnxAttribute *value = onnx_node_attr(n, "value");
    int64_t *v = NULL;
    if (!value || !value->t || value->t->data_type != ONNX_READ_INT64 || value->t->count != 1 ||
        shape->n_dims != 1 || shape->count > ONNX_READ_MAX_DIMS)
        return import_refuse(im, n, "only an int64 ConstantOfShape folds (a shape computation)");
    int st = import_make_ints(im, n, (int)shape->count, shape->ints, &v);
    for (size_t k = 0; !st && k < import_find_value(im, n->outputs[0])->constant->count; k++)
        v[k] = value->t->ints[0];
    return st;
}

int import_fold_ints(Importer *im, const OnnxNode *n)
{
    const OnnxTensor *data = import_find_value(im, n->inputs[0])->constant;
    const char *op = n->op_type;
    if (!strcmp(op, "Concat"))
        return fold_concat(im, n);
    if (!strcmp(op, "Reshape") && n->n_inputs == 2)
        return fold_reshape(im, n, data, import_find_value(im, n->inputs[1])->constant);
    if (!strcmp(op, "Slice"))
        return fold_slice(im, n, data);
    if (!strcmp(op, "Transpose"))
        return fold_transpose(im, n, data);
    if (!strcmp(op, "ConstantOfShape"))
        return fold_constant_of_shape(im, n, data);
    if (!strcmp(op, "Cast") && import_attr_int(n, "to", 0) == ONNX_READ_INT64)
        return import_bind(im, n->outputs[0], 0, data, 0);
    return import_refuse(im, n, "this operator on int64 constants does not fold");
}
