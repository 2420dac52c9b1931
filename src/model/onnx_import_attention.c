/* `cdl import`: torch's export of nn.MultiheadAttention(C, H, batch_first=True) on token rows
 * [N,T,C] (torchvision's ViT encoder blocks) as one [attention] causal=0
 * (onnx_import_internal.h). torch 1.13 writes, from the rows:
 *
 *   Transpose [1,0,2] to [T,N,C]; MatMul by in_proj_weight^T [C,3C]; Add in_proj_bias [3C];
 *   three Slices of the last axis (bounds computed from a Shape of the sum) into q, k, v;
 *   each Reshaped to [T, N*H, D] (and q, v Transposed [1,0,2], k [1,2,0]); q Divided by
 *   sqrt(D); MatMul q k; Softmax (last axis); MatMul by v; Transpose [1,0,2]; Reshape to
 *   [T*N, C]; Gemm by out_proj (transB); Reshape to [T,N,C]; Transpose [1,0,2] back to [N,T,C].
 *
 * The nodes between the first Transpose and the Gemm are found as those reading, directly or
 * not, the first Transpose's output; they must be of the operators above (plus the shape
 * arithmetic's), hold exactly the three MatMuls, one Softmax and one Add of a float constant
 * (the bias: any other, a mask, is refused; a Mul by 1, the alpha of torch's masked product,
 * is the identity), and end before the last Transpose.
 *
 * cdl's own export of [attention] (layers/attention.c) on [N,1,T,C] rows starts as a [linear]
 * of 3C outputs (its MatMul by the Transposed weights and Add of the biases), then Reshapes to
 * [N, T, 3, H, D], Transposes to [3, N, H, T, D], Gathers q, k, v, Transposes k, MatMul,
 * Mul by 1/sqrt(D), Softmax (axis 3), MatMul, Transpose, Reshape to [N, 1, T, C], and a MatMul
 * by the Transposed out_weights and an Add of out_biases: that [linear] becomes the
 * [attention]. */
#include "model/onnx_import_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the subgraph holds: node indices (-1: not found), and the heads' size. */
typedef struct AttentionNodes {
    int own; /* cdl's own export: the region starts after the in-projection */
    int in_proj, in_bias, softmax, scale, out_proj, out_reshape, out_transpose;
    int matmuls, float_adds;
    int64_t head_size, heads_times_batch;
    const OnnxTensor *w_in, *b_in, *w_out, *b_out;
} AttentionNodes;

/* Nothing found yet, of torch's form (own 0) or cdl's (own 1). */
static AttentionNodes attention_nodes(int own)
{
    AttentionNodes a = {.own = own};
    a.in_proj = a.in_bias = a.softmax = a.scale = a.out_proj = a.out_reshape = a.out_transpose = -1;
    return a;
}

static int is_op(const OnnxNode *n, const char *op)
{
    return !strcmp(n->op_type, op);
}

/* Whether value is among the n names in region. */
static int in_region(const char *const *region, int n, const char *value)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(region[k], value))
            return 1;
    return 0;
}

/* The float constant input of node (its only one), or NULL. */
static const OnnxTensor *float_constant_input(const Importer *im, const OnnxNode *node)
{
    for (int i = 0; i < node->n_inputs; i++) {
        const OnnxTensor *t = import_graph_constant(im, node->inputs[i]);
        if (t && t->data_type == ONNX_READ_FLOAT)
            return t;
    }
    return NULL;
}

/* Classifies node k of the region into a (see the file comment); a refusal for an operator the
 * subgraph does not hold. */
static int classify(Importer *im, int k, int c, const char *start, AttentionNodes *a)
{
    static const char *const shape_ops[] = {
        "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat",          "Slice",
        "Cast",  "Sub",    "Equal",     "Where",   "ConstantOfShape", NULL};
    const OnnxNode *node = &im->m->nodes[k];
    const OnnxTensor *t = float_constant_input(im, node);
    if (is_op(node, "MatMul")) {
        a->matmuls++;
        if (t && !strcmp(node->inputs[0], start) && t->n_dims == 2 && t->dims[0] == c &&
            t->dims[1] == 3 * c)
            a->in_proj = k, a->w_in = t;
        return CDL_OK;
    }
    if (is_op(node, "Add") && t) {
        a->float_adds++;
        if (t->count == (size_t)(3 * c) && a->in_proj >= 0 &&
            import_other_input(node, im->m->nodes[a->in_proj].outputs[0]))
            a->in_bias = k, a->b_in = t;
        else
            return import_refuse(im, node,
                                 "adds a constant inside a multi-head attention (a mask?): cdl's "
                                 "attention over an image's tokens lets every token see every "
                                 "token");
        return CDL_OK;
    }
    if ((is_op(node, "Div") || is_op(node, "Mul")) && t && t->count == 1) {
        if (t->floats[0] == 1.0f) /* torch's baddbmm with a mask: scores times alpha 1 */
            return CDL_OK;
        if (a->scale >= 0)
            return import_refuse(im, node, "a second scaling of the attention scores");
        a->scale = k;
        return CDL_OK;
    }
    if (is_op(node, "Softmax")) {
        /* the last axis of torch's [N*H, T, S] scores or cdl's [N, H, T, S] (before opset 13 an
           axis flattens the rest into it: the same for the last) */
        const int64_t axis = import_attr_int(node, "axis", im->m->opset >= 13 ? -1 : 1);
        if (a->softmax >= 0 || !(axis == -1 || axis == (a->own ? 3 : 2)))
            return import_refuse(im, node, "expected one Softmax over the keys (axis -1)");
        a->softmax = k;
        return CDL_OK;
    }
    if (is_op(node, "Reshape")) {
        const OnnxTensor *shape =
            node->n_inputs == 2 ? import_graph_constant(im, node->inputs[1]) : NULL;
        if (shape && shape->data_type == ONNX_READ_INT64 && shape->count == 3 && a->head_size == 0)
            a->heads_times_batch = shape->ints[1], a->head_size = shape->ints[2];
        return CDL_OK;
    }
    if (is_op(node, "Transpose") || is_op(node, "Add") || is_op(node, "Mul") || is_op(node, "Div"))
        return CDL_OK;
    for (int s = 0; shape_ops[s]; s++)
        if (is_op(node, shape_ops[s]))
            return CDL_OK;
    return import_refuse(im, node,
                         "inside a multi-head attention (after '%s'): operator not part of "
                         "nn.MultiheadAttention's export",
                         start);
}

/* Finds the subgraph from the Transpose n (node index first) of rows of c features into a. */
static int find_attention(Importer *im, const OnnxNode *n, int first, int c, AttentionNodes *a)
{
    const OnnxNode *nodes = im->m->nodes;
    size_t values = 1; /* n's output, then every output of the nodes after it */
    for (int k = first + 1; k < im->m->n_nodes; k++)
        values += (size_t)nodes[k].n_outputs;
    const char **region = malloc(values * sizeof *region);
    if (!region)
        return import_out_of_memory(im);
    int n_region = 0, st = CDL_OK;
    region[n_region++] = n->outputs[0];
    for (int k = first + 1; !st && k < im->m->n_nodes && a->out_proj < 0; k++) {
        const OnnxNode *node = &nodes[k];
        int reads = 0;
        for (int i = 0; i < node->n_inputs && !reads; i++)
            reads = in_region(region, n_region, node->inputs[i]);
        if (!reads)
            continue;
        const int out_proj =
            a->own ? is_op(node, "MatMul") && import_transposed_constant(im, node->inputs[1])
                   : is_op(node, "Gemm");
        if (out_proj && a->softmax >= 0) { /* the out-projection ends it */
            a->out_proj = k;
            break;
        }
        st = classify(im, k, c, n->outputs[0], a);
        for (int o = 0; !st && o < node->n_outputs; o++)
            region[n_region++] = node->outputs[o];
        im->consumed[k] = 1;
    }
    /* nothing outside reads the region's values */
    for (int k = a->out_proj + 1; !st && a->out_proj >= 0 && k < im->m->n_nodes; k++)
        for (int i = 0; i < nodes[k].n_inputs; i++)
            if (in_region(region, n_region, nodes[k].inputs[i]))
                st = import_refuse(im, &nodes[k], "reads a value inside a multi-head attention");
    for (int k = 0; !st && k < im->m->n_outputs; k++)
        if (in_region(region, n_region, im->m->outputs[k].name))
            st = import_refuse(im, n, "a value inside the attention is a graph output");
    free(region);
    return st;
}

/* Refuses a scaling of the scores other than by 1/sqrt(d) (a Div by sqrt(d), a Mul by its
 * inverse). */
static int check_scale(Importer *im, const AttentionNodes *a, int64_t d)
{
    const OnnxNode *scale = &im->m->nodes[a->scale];
    const float want = is_op(scale, "Div") ? sqrtf((float)d) : 1.0f / sqrtf((float)d);
    if (!(fabsf(float_constant_input(im, scale)->floats[0] - want) <= 1e-6f * want))
        return import_refuse(im, scale, "scales the queries by other than 1/sqrt(%lld)",
                             (long long)d);
    return CDL_OK;
}

/* The out-projection Gemm's weights and bias, and the Reshape to [T,N,C] and Transpose [1,0,2]
 * after it. */
static int find_out_projection(Importer *im, int c, AttentionNodes *a)
{
    const OnnxNode *gemm = &im->m->nodes[a->out_proj];
    static const int64_t swap[3] = {1, 0, 2};
    int st = import_input_constant(im, gemm, 1, 0, &a->w_out);
    st = st ? st : import_input_constant(im, gemm, 2, 0, &a->b_out);
    if (st)
        return st;
    if (import_attr_int(gemm, "transB", 0) != 1 || import_attr_int(gemm, "transA", 0) ||
        import_attr_float(gemm, "alpha", 1) != 1 || import_attr_float(gemm, "beta", 1) != 1 ||
        a->w_out->count != (size_t)c * (size_t)c || a->b_out->count != (size_t)c)
        return import_refuse(im, gemm,
                             "the attention's output projection: expected a Gemm (transB=1) by "
                             "[%d,%d] weights and %d biases",
                             c, c, c);
    a->out_reshape = import_sole_reader(im, gemm->outputs[0], "Reshape");
    a->out_transpose =
        a->out_reshape < 0
            ? -1
            : import_sole_reader(im, im->m->nodes[a->out_reshape].outputs[0], "Transpose");
    const OnnxAttribute *perm =
        a->out_transpose < 0 ? NULL : onnx_node_attr(&im->m->nodes[a->out_transpose], "perm");
    if (!perm || perm->n_ints != 3 || memcmp(perm->ints, swap, sizeof swap))
        return import_refuse(im, gemm,
                             "the attention's output projection is not Reshaped to [T,N,C] and "
                             "Transposed [1,0,2] back to the rows");
    return CDL_OK;
}

int import_attention(Importer *im, const OnnxNode *n, const ImportValue *x)
{
    static const int64_t swap[3] = {1, 0, 2};
    const OnnxAttribute *perm = onnx_node_attr(n, "perm");
    if (!perm || perm->n_ints != 3 || memcmp(perm->ints, swap, sizeof swap))
        return import_refuse(im, n,
                             "a Transpose of token rows imports only as the start of a multi-head "
                             "attention (perm [1,0,2])");
    const Shape in = import_layer_shape(im, x->layer);
    const int c = in.w;
    AttentionNodes a = attention_nodes(0);
    int st = find_attention(im, n, (int)(n - im->m->nodes), c, &a);
    if (st)
        return st;
    const int64_t batch = im->batch < 0 ? 1 : im->batch;
    const int64_t d = a.head_size, heads = d > 0 && c % d == 0 ? c / d : 0;
    if (a.out_proj < 0 || a.in_proj < 0 || a.in_bias < 0 || a.softmax < 0 || a.scale < 0 ||
        a.matmuls != 3 || a.float_adds != 1 || heads < 1 || a.heads_times_batch != batch * heads)
        return import_refuse(im, n,
                             "token rows Transposed [1,0,2] import only as nn.MultiheadAttention's "
                             "export: MatMul by [%d,%d], Add of the bias, q, k, v Reshaped to "
                             "[T, N*H, D], q scaled, MatMul, Softmax, MatMul, Gemm (found %d "
                             "MatMuls, %d Adds of float constants%s)",
                             c, 3 * c, a.matmuls, a.float_adds,
                             a.out_proj < 0 ? ", no out-projection Gemm" : "");
    st = check_scale(im, &a, d);
    st = st ? st : find_out_projection(im, c, &a);
    int layer;
    st = st ? st : import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_ATTENTION, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->heads = (int)heads;
    l->out = in;
    float *w = import_add_owned_param(im, l, "weights", NULL, a.w_in->count);
    if (!w)
        return CDL_ERUNTIME;
    for (int o = 0; o < 3 * c; o++) /* in_proj_weight [3C][C] from its transpose */
        for (int i = 0; i < c; i++)
            w[(size_t)o * c + i] = a.w_in->floats[(size_t)i * 3 * c + o];
    import_add_param(l, "biases", a.b_in->floats, a.b_in->count);
    import_add_param(l, "out_weights", a.w_out->floats, a.w_out->count);
    import_add_param(l, "out_biases", a.b_out->floats, a.b_out->count);
    im->consumed[a.out_proj] = im->consumed[a.out_reshape] = im->consumed[a.out_transpose] = 1;
    const OnnxNode *last = &im->m->nodes[a.out_transpose];
    l->head = last->outputs[0];
    return import_bind_output(im, last, im->n_layers - 1, VALUE_ROWS);
}

int import_own_attention(Importer *im, const OnnxNode *n, const ImportValue *x,
                         const OnnxTensor *shape)
{
    const Shape in = import_layer_shape(im, x->layer);
    ImportLayer *l = x->layer == im->n_layers - 1 ? &im->layers[x->layer] : NULL;
    const int c = in.w / 3;
    const int64_t *d = shape->ints, heads = d[3], size = d[4];
    const int fused = l && l->kind == K_LINEAR && in.w % 3 == 0 && !l->open_bias &&
                      l->activation == CDL_ACT_LINEAR && !strcmp(l->head, x->name) &&
                      import_readers(im, x->name) == 1;
    if (!fused || shape->data_type != ONNX_READ_INT64 || (d[1] != -1 && d[1] != in.h) ||
        d[2] != 3 || heads < 1 || heads * size != c)
        return import_refuse(im, n,
                             "a Reshape of token rows to 5 dims imports only as cdl's own export "
                             "of [attention]: the fused projection's [linear] of 3C outputs "
                             "Reshaped to [N, T, 3, H, D]");
    AttentionNodes a = attention_nodes(1);
    int st = find_attention(im, n, (int)(n - im->m->nodes), c, &a);
    if (st)
        return st;
    if (a.out_proj < 0 || a.softmax < 0 || a.scale < 0 || a.matmuls != 2 || a.float_adds != 0)
        return import_refuse(im, n,
                             "the heads of token rows import only as cdl's own export of "
                             "[attention]: Transpose, Gather q, k, v, MatMul, Mul by 1/sqrt(D), "
                             "Softmax, MatMul, Transpose, Reshape, MatMul by the Transposed "
                             "out_weights (found %d MatMuls, %d Adds of float constants)",
                             a.matmuls, a.float_adds);
    const OnnxNode *out = &im->m->nodes[a.out_proj];
    a.w_out = import_transposed_constant(im, out->inputs[1]);
    const int add = import_sole_reader(im, out->outputs[0], "Add");
    const char *bias = add < 0 ? NULL : import_other_input(&im->m->nodes[add], out->outputs[0]);
    a.b_out = bias ? import_graph_constant(im, bias) : NULL;
    if (a.w_out->count != (size_t)c * (size_t)c || !a.b_out ||
        a.b_out->data_type != ONNX_READ_FLOAT || a.b_out->count != (size_t)c)
        return import_refuse(im, out,
                             "the attention's output projection: expected [%d,%d] weights and an "
                             "Add of %d biases",
                             c, c, c);
    st = check_scale(im, &a, size);
    if (st)
        return st;
    l->kind = K_ATTENTION;
    l->heads = (int)heads;
    l->outputs = 0;
    l->out = (Shape){1, in.h, c};
    import_add_param(l, "out_weights", a.w_out->floats, a.w_out->count);
    import_add_param(l, "out_biases", a.b_out->floats, a.b_out->count);
    im->consumed[a.out_proj] = im->consumed[add] = 1;
    l->head = im->m->nodes[add].outputs[0];
    return import_bind_output(im, &im->m->nodes[add], x->layer, x->flat);
}
