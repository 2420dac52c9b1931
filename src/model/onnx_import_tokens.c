/* `cdl import`: a vision transformer's token rows (onnx_import_internal.h), as torch exports
 * torchvision's VisionTransformer: the patch embedding's map Reshaped to [N, C, H*W] and
 * Transposed to [N, H*W, C], the class token Expanded to the batch and Concatenated in front, the
 * position embedding Added ([tokens]); MatMul of the rows by a constant ([linear]); Gather of one
 * row ([select_token]). The rows are [N,T,C] values (VALUE_ROWS) of layers shaped {1, T, C}.
 * cdl's own export writes the same, with the rows Reshaped to [N,1,T,C] (VALUE_ROWS4) after the
 * position embedding, the class token's Expand shape from a Shape of the map, MatMuls by
 * Transposes of [O][C] weights, and a Slice of one row. */
#include "model/onnx_import_internal.h"

#include <string.h>

int import_producer(const Importer *im, const char *value)
{
    for (int k = 0; k < im->m->n_nodes; k++)
        if (im->m->nodes[k].n_outputs && !strcmp(im->m->nodes[k].outputs[0], value))
            return k;
    return -1;
}

/* Takes in the nodes that compute the int64 shape value from (the class token's Expand to the
 * batch: torch's ConstantOfShape, Mul, Equal, Where; cdl's Shape, Slice, Concat), up to a Shape
 * of a layer's value; Constant nodes stay, bound as they come. */
static void consume_shape_chain(Importer *im, const char *value, int depth)
{
    const int k = import_producer(im, value);
    if (k < 0 || depth > 16 || !strcmp(im->m->nodes[k].op_type, "Constant"))
        return;
    im->consumed[k] = 1;
    if (!strcmp(im->m->nodes[k].op_type, "Shape"))
        return;
    for (int i = 0; i < im->m->nodes[k].n_inputs; i++)
        consume_shape_chain(im, im->m->nodes[k].inputs[i], depth + 1);
}

/* The float constant of count values that node k adds to or expands (its input other than
 * value, or input 0 of an Expand), whose last dims are [rows, c]; NULL otherwise. */
static const OnnxTensor *row_constant(const Importer *im, int k, const char *value, int rows, int c)
{
    const OnnxNode *node = k < 0 ? NULL : &im->m->nodes[k];
    const char *name = !node                              ? NULL
                       : !strcmp(node->op_type, "Expand") ? node->inputs[0]
                                                          : import_other_input(node, value);
    const OnnxTensor *t = name ? import_graph_constant(im, name) : NULL;
    if (!t || t->data_type != ONNX_READ_FLOAT || t->count != (size_t)rows * (size_t)c ||
        t->n_dims < 2 || t->dims[t->n_dims - 1] != c || t->dims[t->n_dims - 2] != rows)
        return NULL;
    return t;
}

/* The nodes after the Reshape to [N, C, P]: the Transpose to [N, P, C], and where they follow,
 * the Concat of an Expand of a [1, 1, C] constant in front, an Add of a [1, T, C] one and a
 * Reshape to [N, 1, T, C] (cdl's own layout of rows). */
typedef struct TokenChain {
    int transpose, concat, expand, add, reshape;
    const OnnxTensor *class_token, *positional;
} TokenChain;

/* Whether node k is a Reshape to [N, 1, rows, c] (N 0, -1 or the batch). */
static int reshape_to_rows4(const Importer *im, int k, int rows, int c)
{
    const OnnxNode *node = k < 0 ? NULL : &im->m->nodes[k];
    const OnnxTensor *shape =
        node && node->n_inputs == 2 ? import_graph_constant(im, node->inputs[1]) : NULL;
    if (!shape || shape->data_type != ONNX_READ_INT64 || shape->count != 4)
        return 0;
    const int64_t *d = shape->ints, batch = im->batch < 0 ? 1 : im->batch;
    return (d[0] == 0 || d[0] == -1 || d[0] == batch) && d[1] == 1 &&
           (d[2] == rows || d[2] == -1) && d[3] == c;
}

static int find_token_chain(const Importer *im, const OnnxNode *n, int c, int patches,
                            TokenChain *t)
{
    const OnnxNode *nodes = im->m->nodes;
    static const int64_t to_rows[3] = {0, 2, 1};
    t->transpose = import_sole_reader(im, n->outputs[0], "Transpose");
    const OnnxAttribute *perm =
        t->transpose < 0 ? NULL : onnx_node_attr(&nodes[t->transpose], "perm");
    if (!perm || perm->n_ints != 3 || memcmp(perm->ints, to_rows, sizeof to_rows))
        return 0;
    const char *rows = nodes[t->transpose].outputs[0];
    t->concat = import_sole_reader(im, rows, "Concat");
    t->expand = t->add = -1;
    t->class_token = t->positional = NULL;
    if (t->concat >= 0) {
        const OnnxNode *cat = &nodes[t->concat];
        if (cat->n_inputs != 2 || strcmp(cat->inputs[1], rows) ||
            import_attr_int(cat, "axis", 0) != 1)
            return 0;
        t->expand = import_producer(im, cat->inputs[0]);
        if (t->expand < 0 || strcmp(nodes[t->expand].op_type, "Expand") ||
            nodes[t->expand].n_inputs != 2 || import_readers(im, cat->inputs[0]) != 1 ||
            !(t->class_token = row_constant(im, t->expand, NULL, 1, c)))
            return 0;
        rows = cat->outputs[0];
    }
    const int tokens = patches + (t->concat >= 0);
    t->add = import_sole_reader(im, rows, "Add");
    t->positional = row_constant(im, t->add, rows, tokens, c);
    if (!t->positional)
        t->add = -1;
    rows = t->add >= 0 ? nodes[t->add].outputs[0] : rows;
    t->reshape = import_sole_reader(im, rows, "Reshape");
    if (!reshape_to_rows4(im, t->reshape, tokens, c))
        t->reshape = -1;
    return 1;
}

int import_tokens(Importer *im, const OnnxNode *n, const ImportValue *x, const OnnxTensor *shape)
{
    const Shape in = import_layer_shape(im, x->layer);
    const int patches = in.h * in.w;
    const int64_t *d = shape->ints;
    const int batch = d[0] == 0 || d[0] == -1 || d[0] == (im->batch < 0 ? 1 : im->batch);
    TokenChain t;
    char buf[128];
    if (x->flat != VALUE_MAP || x->layer < 0 || !batch || d[1] != in.c ||
        !(d[2] == patches || d[2] == -1) || !find_token_chain(im, n, in.c, patches, &t))
        return import_refuse(im, n,
                             "shape %s of a %dx%dx%d map: cdl takes a map into token rows only "
                             "as a vision transformer's patches, a Reshape to [N, C, H*W] and a "
                             "Transpose [0,2,1] (then optionally a class token Concatenated in "
                             "front and a position embedding Added: [tokens])",
                             import_ints_text(d, (int)shape->count, buf, sizeof buf), in.c, in.h,
                             in.w);
    int layer;
    int st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_TOKENS, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    const int last = t.reshape >= 0  ? t.reshape
                     : t.add >= 0    ? t.add
                     : t.concat >= 0 ? t.concat
                                     : t.transpose;
    l->class_token = t.class_token != NULL;
    l->positional = t.positional != NULL;
    l->out = (Shape){1, patches + l->class_token, in.c};
    if (t.class_token)
        import_add_param(l, "class_token", t.class_token->floats, t.class_token->count);
    if (t.positional)
        import_add_param(l, "positional", t.positional->floats, t.positional->count);
    const int taken[] = {t.transpose, t.concat, t.expand, t.add, t.reshape};
    for (size_t k = 0; k < sizeof taken / sizeof *taken; k++)
        if (taken[k] >= 0)
            im->consumed[taken[k]] = 1;
    if (t.expand >= 0)
        consume_shape_chain(im, im->m->nodes[t.expand].inputs[1], 0);
    l->head = im->m->nodes[last].outputs[0];
    return import_bind_output(im, &im->m->nodes[last], im->n_layers - 1,
                              t.reshape >= 0 ? VALUE_ROWS4 : VALUE_ROWS);
}

const OnnxTensor *import_transposed_constant(const Importer *im, const char *value)
{
    static const int64_t swap[2] = {1, 0};
    const int k = import_producer(im, value);
    const OnnxNode *node = k < 0 ? NULL : &im->m->nodes[k];
    if (!node || strcmp(node->op_type, "Transpose") || node->n_inputs != 1)
        return NULL;
    const OnnxAttribute *perm = onnx_node_attr(node, "perm");
    const OnnxTensor *t = import_graph_constant(im, node->inputs[0]);
    if ((perm && (perm->n_ints != 2 || memcmp(perm->ints, swap, sizeof swap))) || !t ||
        t->data_type != ONNX_READ_FLOAT || t->n_dims != 2)
        return NULL;
    for (int r = 0; r < im->m->n_nodes; r++)
        for (int i = 0; i < im->m->nodes[r].n_inputs; i++)
            if (!strcmp(im->m->nodes[r].inputs[i], value) &&
                strcmp(im->m->nodes[r].op_type, "MatMul"))
                return NULL;
    return t;
}

int import_row_matmul(Importer *im, const OnnxNode *n, const ImportValue *x, const OnnxTensor *w,
                      int transposed)
{
    int layer;
    const Shape in = import_layer_shape(im, x->layer);
    const int flat = x->flat;
    if (w->n_dims != 2 || w->dims[transposed ? 1 : 0] != in.w)
        return import_refuse(im, n, "weight '%s' does not take the %d features of a token row",
                             w->name, in.w);
    int st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_LINEAR, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    const int64_t inputs = in.w, outputs = w->dims[transposed ? 0 : 1];
    l->outputs = (int)outputs;
    l->out = (Shape){1, in.h, (int)outputs};
    l->open_bias = 1;
    float *wd = transposed ? NULL : import_add_owned_param(im, l, "weights", NULL, w->count);
    if (transposed) /* [O][C] already: cdl's layout */
        import_add_param(l, "weights", w->floats, w->count);
    else if (!wd)
        return CDL_ERUNTIME;
    if (!import_add_owned_param(im, l, "biases", NULL, (size_t)outputs))
        return CDL_ERUNTIME;
    for (int64_t o = 0; wd && o < outputs; o++)
        for (int64_t i = 0; i < inputs; i++)
            wd[o * inputs + i] = w->floats[i * outputs + o];
    return import_bind_output(im, n, im->n_layers - 1, flat);
}

/* The row that Slice n of [N,1,T,C] rows takes (axis 2 or -2, one row, step 1), or -1. */
static int64_t sliced_row(Importer *im, const OnnxNode *n, int rows)
{
    const OnnxTensor *t[4] = {NULL};
    for (int k = 1; k < n->n_inputs && k < 5; k++)
        if (n->inputs[k][0] && import_int_input(im, n, k, &t[k - 1]))
            return -1;
    if (!t[0] || !t[1] || t[0]->count != 1 || t[1]->count != 1 || !t[2] || t[2]->count != 1 ||
        (t[2]->ints[0] != 2 && t[2]->ints[0] != -2) ||
        (t[3] && (t[3]->count != 1 || t[3]->ints[0] != 1)))
        return -1;
    const int64_t start = t[0]->ints[0] < 0 ? t[0]->ints[0] + rows : t[0]->ints[0];
    const int64_t end = t[1]->ints[0] < 0 ? t[1]->ints[0] + rows : t[1]->ints[0];
    return end == start + 1 ? start : -1;
}

int import_select_token(Importer *im, const OnnxNode *n, const ImportValue *x)
{
    const OnnxTensor *index = NULL;
    int layer;
    const int gather = x->flat == VALUE_ROWS;
    int st = import_check_attrs(
        im, n, gather ? (const char *const[]){"axis", NULL} : (const char *const[]){NULL});
    st = st || !gather ? st : import_int_input(im, n, 1, &index);
    if (st)
        return st;
    const Shape in = import_layer_shape(im, x->layer);
    int64_t i = !gather ? sliced_row(im, n, in.h) : index->count == 1 ? index->ints[0] : -1;
    i = gather && i < 0 && index->count == 1 ? i + in.h : i;
    if ((gather && (import_attr_int(n, "axis", 0) != 1 || index->n_dims != 0)) || i < 0 ||
        i >= in.h)
        return import_refuse(im, n,
                             "cdl takes one row of token rows ([select_token]): a Gather of "
                             "[N,T,C] rows on axis 1 by a scalar index, or a Slice of [N,1,T,C] "
                             "ones on axis 2, below row %d",
                             in.h);
    st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_SELECT_TOKEN, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->index = (int)i;
    l->out = (Shape){1, 1, in.w};
    /* a Gather drops the rows' axis ([N,C]); the Slice keeps [N,1,1,C], a map of that shape */
    return import_bind_output(im, n, im->n_layers - 1, gather ? VALUE_VECTOR : VALUE_MAP);
}
