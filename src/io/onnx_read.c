/* ONNX model files, read side (see onnx_read.h): one decoder per message, each walking its
 * fields with pb_next and checking every count against the bytes it came from. */
#include "io/onnx_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/protobuf_read.h"
#include "util/file.h"

/* Field numbers of onnx.proto. */
enum { MODEL_IR_VERSION = 1, MODEL_PRODUCER = 2, MODEL_GRAPH = 7, MODEL_OPSET = 8 };
enum { OPSET_DOMAIN = 1, OPSET_VERSION = 2 };
enum { GRAPH_NODE = 1, GRAPH_INITIALIZER = 5, GRAPH_INPUT = 11, GRAPH_OUTPUT = 12 };
enum { NODE_INPUT = 1, NODE_OUTPUT = 2, NODE_NAME = 3, NODE_OP_TYPE = 4, NODE_ATTR = 5 };
enum { NODE_DOMAIN = 7 };
enum { ATTR_NAME = 1, ATTR_F = 2, ATTR_I = 3, ATTR_S = 4, ATTR_T = 5, ATTR_FLOATS = 7 };
enum { ATTR_INTS = 8, ATTR_TYPE = 20 };
enum { TENSOR_DIMS = 1, TENSOR_DATA_TYPE = 2, TENSOR_FLOAT_DATA = 4, TENSOR_INT32_DATA = 5 };
enum { TENSOR_INT64_DATA = 7, TENSOR_NAME = 8, TENSOR_RAW_DATA = 9, TENSOR_DATA_LOCATION = 14 };
enum {
    VALUE_NAME = 1,
    VALUE_TYPE = 2,
    TYPE_TENSOR = 1,
    TENSOR_TYPE_ELEM = 1,
    TENSOR_TYPE_SHAPE = 2
};
enum { SHAPE_DIM = 1, DIM_VALUE = 1 };

/* Largest tensor accepted, in values: beyond any model cdl can hold. */
#define ONNX_READ_MAX_VALUES ((size_t)1 << 31)

#define MALFORMED(e, what) error_set(e, CDL_ERUNTIME, "malformed protobuf: %s", what)

static int out_of_memory(Error *e)
{
    return error_set(e, CDL_ERUNTIME, "out of memory reading the ONNX model");
}

/* *s = a NUL-terminated copy of f's bytes (the previous value freed). */
static int take_string(const PbField *f, char **s, Error *e)
{
    if (f->wire != PB_BYTES)
        return MALFORMED(e, "a string field is not length-delimited");
    char *copy = malloc(f->len + 1);
    if (!copy)
        return out_of_memory(e);
    memcpy(copy, f->data, f->len);
    copy[f->len] = '\0';
    free(*s);
    *s = copy;
    return CDL_OK;
}

/* items (n elements of size bytes) grown by one zeroed element; NULL when memory ran out. */
static void *grow(void *items, int n, size_t size)
{
    char *grown = realloc(items, (size_t)(n + 1) * size);
    if (grown)
        memset(grown + (size_t)n * size, 0, size);
    return grown;
}

/* Appends one zeroed element to the array arr of n elements: slot = it, or NULL (e set, arr
 * unchanged) when memory ran out. */
#define APPEND(arr, n, slot, e)                                                                    \
    do {                                                                                           \
        void *grown_ = grow((arr), (n), sizeof *(arr));                                            \
        if (grown_) {                                                                              \
            (arr) = grown_;                                                                        \
            (slot) = &(arr)[(n)++];                                                                \
        } else {                                                                                   \
            (slot) = NULL;                                                                         \
            out_of_memory(e);                                                                      \
        }                                                                                          \
    } while (0)

static int append_string(char ***list, int *n, const PbField *f, Error *e)
{
    char **slot;
    APPEND(*list, *n, slot, e);
    return slot ? take_string(f, slot, e) : CDL_ERUNTIME;
}

/* Appends f's repeated int64 values to *v (*n of them so far). */
static int append_ints(int64_t **v, int *n, const PbField *f, Error *e)
{
    const long k = pb_count_ints(f);
    if (k < 0)
        return MALFORMED(e, "a packed int64 list is cut off");
    int64_t *grown = realloc(*v, ((size_t)*n + (size_t)k + 1) * sizeof **v);
    if (!grown)
        return out_of_memory(e);
    pb_read_ints(f, grown + *n);
    *v = grown;
    *n += (int)k;
    return CDL_OK;
}

static int append_floats(float **v, int *n, const PbField *f, Error *e)
{
    const long k = pb_count_floats(f);
    if (k < 0)
        return MALFORMED(e, "a packed float list is not a whole number of floats");
    float *grown = realloc(*v, ((size_t)*n + (size_t)k + 1) * sizeof **v);
    if (!grown)
        return out_of_memory(e);
    pb_read_floats(f, grown + *n);
    *v = grown;
    *n += (int)k;
    return CDL_OK;
}

static void tensor_free(OnnxTensor *t)
{
    free(t->name);
    free(t->floats);
    free(t->ints);
}

/* Checks the decoded tensor: known type, dims that multiply to the values it holds. */
static int tensor_finish(OnnxTensor *t, const PbField *raw, int n_floats, int n_ints, Error *e)
{
    const char *name = t->name ? t->name : "";
    size_t count = 1;
    for (int k = 0; k < t->n_dims; k++) {
        if (t->dims[k] < 0 || (t->dims[k] > 0 && count > ONNX_READ_MAX_VALUES / (size_t)t->dims[k]))
            return error_set(e, CDL_ERUNTIME, "tensor '%s': dimension %d is %lld", name, k,
                             (long long)t->dims[k]);
        count *= (size_t)t->dims[k];
    }
    t->count = count;
    if (t->data_type == ONNX_READ_FLOAT) {
        if (raw) {
            if (raw->len != count * 4)
                return error_set(e, CDL_ERUNTIME,
                                 "tensor '%s': raw_data holds %zu bytes, its "
                                 "dims need %zu",
                                 name, raw->len, count * 4);
            free(t->floats);
            t->floats = malloc(count * sizeof *t->floats + 1);
            if (!t->floats)
                return out_of_memory(e);
            const PbField packed = {.wire = PB_BYTES, .data = raw->data, .len = raw->len};
            pb_read_floats(&packed, t->floats);
        } else if ((size_t)n_floats != count)
            return error_set(e, CDL_ERUNTIME,
                             "tensor '%s': float_data holds %d values, its dims "
                             "need %zu",
                             name, n_floats, count);
        free(t->ints);
        t->ints = NULL;
        return CDL_OK;
    }
    if (t->data_type == ONNX_READ_INT64 || t->data_type == ONNX_READ_INT32 ||
        t->data_type == ONNX_READ_BOOL) {
        const size_t size = t->data_type == ONNX_READ_INT64   ? 8
                            : t->data_type == ONNX_READ_INT32 ? 4
                                                              : 1;
        if (raw) {
            if (raw->len != count * size)
                return error_set(e, CDL_ERUNTIME,
                                 "tensor '%s': raw_data holds %zu bytes, its "
                                 "dims need %zu",
                                 name, raw->len, count * size);
            free(t->ints);
            t->ints = malloc(count * sizeof *t->ints + 1);
            if (!t->ints)
                return out_of_memory(e);
            for (size_t i = 0; i < count; i++) {
                uint64_t v = 0;
                for (int b = (int)size - 1; b >= 0; b--)
                    v = v << 8 | raw->data[i * size + (size_t)b];
                t->ints[i] = size == 4 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
            }
        } else if ((size_t)n_ints != count)
            return error_set(e, CDL_ERUNTIME,
                             "tensor '%s': int_data holds %d values, its dims "
                             "need %zu",
                             name, n_ints, count);
        t->data_type = ONNX_READ_INT64;
        free(t->floats);
        t->floats = NULL;
        return CDL_OK;
    }
    return error_set(e, CDL_ERUNTIME,
                     "tensor '%s': data type %d is not supported (float32, "
                     "int32, int64 and bool are)",
                     name, t->data_type);
}

static int parse_tensor(const PbField *msg, OnnxTensor *t, Error *e)
{
    PbReader r;
    PbField f, raw = {0};
    int have_raw = 0, n_floats = 0, n_ints = 0, got, st = CDL_OK;
    if (msg->wire != PB_BYTES)
        return MALFORMED(e, "a tensor is not a message");
    pb_reader_init(&r, msg->data, msg->len);
    while (!st && (got = pb_next(&r, &f, e)) == 1) {
        switch (f.field) {
        case TENSOR_DIMS: {
            const long k = pb_count_ints(&f);
            if (k < 0 || t->n_dims + k > ONNX_READ_MAX_DIMS)
                return error_set(e, CDL_ERUNTIME, "tensor '%s': more than %d dims or malformed",
                                 t->name ? t->name : "", ONNX_READ_MAX_DIMS);
            pb_read_ints(&f, t->dims + t->n_dims);
            t->n_dims += (int)k;
            break;
        }
        case TENSOR_DATA_TYPE:
            t->data_type = (int)pb_field_int(&f);
            break;
        case TENSOR_FLOAT_DATA:
            st = append_floats(&t->floats, &n_floats, &f, e);
            break;
        case TENSOR_INT32_DATA:
        case TENSOR_INT64_DATA:
            st = append_ints(&t->ints, &n_ints, &f, e);
            break;
        case TENSOR_NAME:
            st = take_string(&f, &t->name, e);
            break;
        case TENSOR_RAW_DATA:
            if (f.wire != PB_BYTES)
                return MALFORMED(e, "raw_data is not length-delimited");
            raw = f;
            have_raw = 1;
            break;
        case TENSOR_DATA_LOCATION:
            if (pb_field_int(&f) != 0)
                return error_set(e, CDL_ERUNTIME, "tensor '%s': external data is not supported",
                                 t->name ? t->name : "");
            break;
        }
    }
    if (st || got < 0)
        return st ? st : CDL_ERUNTIME;
    return tensor_finish(t, have_raw ? &raw : NULL, n_floats, n_ints, e);
}

static void attr_free(OnnxAttribute *a)
{
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    if (a->t) {
        tensor_free(a->t);
        free(a->t);
    }
}

static int parse_attr(const PbField *msg, OnnxAttribute *a, Error *e)
{
    PbReader r;
    PbField f;
    int got, st = CDL_OK;
    pb_reader_init(&r, msg->data, msg->len);
    while (!st && (got = pb_next(&r, &f, e)) == 1) {
        switch (f.field) {
        case ATTR_NAME:
            st = take_string(&f, &a->name, e);
            break;
        case ATTR_F:
            if (f.wire != PB_FIXED32)
                return MALFORMED(e, "attribute f is not a float");
            a->f = pb_field_float(&f);
            break;
        case ATTR_I:
            a->i = pb_field_int(&f);
            break;
        case ATTR_S:
            st = take_string(&f, &a->s, e);
            break;
        case ATTR_T:
            if (!a->t && !(a->t = calloc(1, sizeof *a->t)))
                return out_of_memory(e);
            st = parse_tensor(&f, a->t, e);
            break;
        case ATTR_FLOATS:
            st = append_floats(&a->floats, &a->n_floats, &f, e);
            break;
        case ATTR_INTS:
            st = append_ints(&a->ints, &a->n_ints, &f, e);
            break;
        case ATTR_TYPE:
            a->type = (int)pb_field_int(&f);
            break;
        }
    }
    if (!st && got >= 0 && !a->name)
        st = MALFORMED(e, "an attribute has no name");
    return st ? st : got < 0 ? CDL_ERUNTIME : CDL_OK;
}

static void node_free(OnnxNode *n)
{
    free(n->name);
    free(n->op_type);
    free(n->domain);
    for (int k = 0; k < n->n_inputs; k++)
        free(n->inputs[k]);
    for (int k = 0; k < n->n_outputs; k++)
        free(n->outputs[k]);
    free(n->inputs);
    free(n->outputs);
    for (int k = 0; k < n->n_attrs; k++)
        attr_free(&n->attrs[k]);
    free(n->attrs);
}

static int parse_node(const PbField *msg, OnnxNode *n, Error *e)
{
    PbReader r;
    PbField f;
    int got, st = CDL_OK;
    pb_reader_init(&r, msg->data, msg->len);
    while (!st && (got = pb_next(&r, &f, e)) == 1) {
        switch (f.field) {
        case NODE_INPUT:
            st = append_string(&n->inputs, &n->n_inputs, &f, e);
            break;
        case NODE_OUTPUT:
            st = append_string(&n->outputs, &n->n_outputs, &f, e);
            break;
        case NODE_NAME:
            st = take_string(&f, &n->name, e);
            break;
        case NODE_OP_TYPE:
            st = take_string(&f, &n->op_type, e);
            break;
        case NODE_DOMAIN:
            st = take_string(&f, &n->domain, e);
            break;
        case NODE_ATTR: {
            if (f.wire != PB_BYTES)
                return MALFORMED(e, "an attribute is not a message");
            OnnxAttribute *a;
            APPEND(n->attrs, n->n_attrs, a, e);
            st = a ? parse_attr(&f, a, e) : CDL_ERUNTIME;
            break;
        }
        }
    }
    if (st || got < 0)
        return st ? st : CDL_ERUNTIME;
    static const char empty[] = "";
    char **fill[] = {&n->name, &n->op_type, &n->domain};
    for (size_t k = 0; k < sizeof fill / sizeof fill[0]; k++)
        if (!*fill[k] && !(*fill[k] = strdup(empty)))
            return out_of_memory(e);
    if (!n->op_type[0])
        return MALFORMED(e, "a node has no op_type");
    return CDL_OK;
}

/* The shape of a TypeProto.Tensor: elem_type and dims (-1 for symbolic ones). */
static int parse_tensor_type(const PbField *msg, OnnxValueInfo *v, Error *e)
{
    PbReader r, rs, rd;
    PbField f, fs, fd;
    int got;
    pb_reader_init(&r, msg->data, msg->len);
    while ((got = pb_next(&r, &f, e)) == 1) {
        if (f.field == TENSOR_TYPE_ELEM)
            v->elem_type = (int)pb_field_int(&f);
        if (f.field != TENSOR_TYPE_SHAPE || f.wire != PB_BYTES)
            continue;
        pb_reader_init(&rs, f.data, f.len);
        while ((got = pb_next(&rs, &fs, e)) == 1) {
            if (fs.field != SHAPE_DIM || fs.wire != PB_BYTES)
                continue;
            if (v->n_dims == ONNX_READ_MAX_DIMS)
                return error_set(e, CDL_ERUNTIME, "value '%s' has more than %d dims",
                                 v->name ? v->name : "", ONNX_READ_MAX_DIMS);
            int64_t d = -1;
            pb_reader_init(&rd, fs.data, fs.len);
            while ((got = pb_next(&rd, &fd, e)) == 1)
                if (fd.field == DIM_VALUE && fd.wire == PB_VARINT)
                    d = pb_field_int(&fd);
            if (got < 0)
                return CDL_ERUNTIME;
            v->dims[v->n_dims++] = d;
        }
        if (got < 0)
            return CDL_ERUNTIME;
    }
    return got < 0 ? CDL_ERUNTIME : CDL_OK;
}

static int parse_value_info(const PbField *msg, OnnxValueInfo *v, Error *e)
{
    PbReader r, rt;
    PbField f, ft;
    int got, st = CDL_OK;
    if (msg->wire != PB_BYTES)
        return MALFORMED(e, "a graph input or output is not a message");
    pb_reader_init(&r, msg->data, msg->len);
    while (!st && (got = pb_next(&r, &f, e)) == 1) {
        if (f.field == VALUE_NAME)
            st = take_string(&f, &v->name, e);
        else if (f.field == VALUE_TYPE && f.wire == PB_BYTES) {
            pb_reader_init(&rt, f.data, f.len);
            while (!st && (got = pb_next(&rt, &ft, e)) == 1)
                if (ft.field == TYPE_TENSOR && ft.wire == PB_BYTES)
                    st = parse_tensor_type(&ft, v, e);
            if (got < 0)
                return CDL_ERUNTIME;
        }
    }
    if (!st && got >= 0 && !v->name)
        st = MALFORMED(e, "a graph input or output has no name");
    return st ? st : got < 0 ? CDL_ERUNTIME : CDL_OK;
}

static int parse_graph(const PbField *msg, OnnxModel *m, Error *e)
{
    PbReader r;
    PbField f;
    int got, st = CDL_OK;
    if (msg->wire != PB_BYTES)
        return MALFORMED(e, "the graph is not a message");
    pb_reader_init(&r, msg->data, msg->len);
    while (!st && (got = pb_next(&r, &f, e)) == 1) {
        if (f.field == GRAPH_NODE) {
            if (f.wire != PB_BYTES)
                return MALFORMED(e, "a node is not a message");
            OnnxNode *n;
            APPEND(m->nodes, m->n_nodes, n, e);
            st = n ? parse_node(&f, n, e) : CDL_ERUNTIME;
            if (st)
                error_prefix(e, st, "node %d: ", m->n_nodes - 1);
        } else if (f.field == GRAPH_INITIALIZER) {
            OnnxTensor *t;
            APPEND(m->initializers, m->n_initializers, t, e);
            st = t ? parse_tensor(&f, t, e) : CDL_ERUNTIME;
            if (st)
                error_prefix(e, st, "initializer %d: ", m->n_initializers - 1);
        } else if (f.field == GRAPH_INPUT || f.field == GRAPH_OUTPUT) {
            const int in = f.field == GRAPH_INPUT;
            OnnxValueInfo *v;
            if (in)
                APPEND(m->inputs, m->n_inputs, v, e);
            else
                APPEND(m->outputs, m->n_outputs, v, e);
            st = v ? parse_value_info(&f, v, e) : CDL_ERUNTIME;
        }
    }
    return st ? st : got < 0 ? CDL_ERUNTIME : CDL_OK;
}

static int parse_opset(const PbField *msg, OnnxModel *m, Error *e)
{
    PbReader r;
    PbField f;
    char *domain = NULL;
    int64_t version = 0;
    int got, st = CDL_OK;
    if (msg->wire != PB_BYTES)
        return MALFORMED(e, "opset_import is not a message");
    pb_reader_init(&r, msg->data, msg->len);
    while (!st && (got = pb_next(&r, &f, e)) == 1) {
        if (f.field == OPSET_DOMAIN)
            st = take_string(&f, &domain, e);
        else if (f.field == OPSET_VERSION)
            version = pb_field_int(&f);
    }
    if (!st && got >= 0 && (!domain || !domain[0] || !strcmp(domain, "ai.onnx")))
        m->opset = version;
    free(domain);
    return st ? st : got < 0 ? CDL_ERUNTIME : CDL_OK;
}

int onnx_model_parse(const void *bytes, size_t len, OnnxModel *m, Error *e)
{
    memset(m, 0, sizeof *m);
    PbReader r;
    PbField f;
    int got, st = CDL_OK, graphs = 0;
    pb_reader_init(&r, bytes, len);
    while (!st && (got = pb_next(&r, &f, e)) == 1) {
        switch (f.field) {
        case MODEL_IR_VERSION:
            m->ir_version = pb_field_int(&f);
            break;
        case MODEL_PRODUCER:
            st = take_string(&f, &m->producer, e);
            break;
        case MODEL_GRAPH:
            st = graphs++ ? MALFORMED(e, "two graphs") : parse_graph(&f, m, e);
            break;
        case MODEL_OPSET:
            st = parse_opset(&f, m, e);
            break;
        }
    }
    if (!st && got < 0)
        st = CDL_ERUNTIME;
    if (!st && !graphs)
        st = error_set(e, CDL_ERUNTIME, "not an ONNX model: no graph");
    if (st)
        onnx_model_free(m);
    return st;
}

int onnx_model_load(const char *path, OnnxModel *m, Error *e)
{
    memset(m, 0, sizeof *m);
    char *data;
    size_t len;
    const int err = file_read_path(path, FILE_MAX_ONNX_BYTES, "ONNX model", &data, &len, e);
    if (err)
        return err;
    const int st = onnx_model_parse(data, len, m, e);
    free(data);
    return st ? error_prefix(e, st, "%s: ", path) : CDL_OK;
}

void onnx_model_free(OnnxModel *m)
{
    for (int k = 0; k < m->n_nodes; k++)
        node_free(&m->nodes[k]);
    for (int k = 0; k < m->n_initializers; k++)
        tensor_free(&m->initializers[k]);
    OnnxValueInfo *lists[] = {m->inputs, m->outputs};
    const int counts[] = {m->n_inputs, m->n_outputs};
    for (int l = 0; l < 2; l++) {
        for (int k = 0; k < counts[l]; k++)
            free(lists[l][k].name);
        free(lists[l]);
    }
    free(m->nodes);
    free(m->initializers);
    free(m->producer);
    memset(m, 0, sizeof *m);
}

const OnnxTensor *onnx_model_initializer(const OnnxModel *m, const char *name)
{
    for (int k = 0; k < m->n_initializers; k++)
        if (m->initializers[k].name && !strcmp(m->initializers[k].name, name))
            return &m->initializers[k];
    return NULL;
}

const OnnxAttribute *onnx_node_attr(const OnnxNode *n, const char *name)
{
    for (int k = 0; k < n->n_attrs; k++)
        if (!strcmp(n->attrs[k].name, name))
            return &n->attrs[k];
    return NULL;
}
