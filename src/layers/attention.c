/* [attention]: multi-head self-attention, as nanoGPT's CausalSelfAttention, or with source=
 * cross-attention, as nn.MultiheadAttention(query=in, key=value=memory).
 *
 *   in, out [batch][T][C] (Shape {1, T, C}); H = heads, D = C / H
 *   memory [batch][S][C]: with source=, the output of that earlier layer (l->in[1]), S rows of
 *   the same C features; its rows give k and v (the weights' key and value rows) where the input's
 *   give them without
 *   weights [3C][C], biases [3C]: the fused projection, query rows, then key, then value rows
 *   out_weights [C][C], out_biases [C]: the output projection
 *
 *   qkv = x weights^T + biases                                         [batch][T][3C]
 *   for each sample b and head h, with Q, K, V the head's D columns of the q, k, v thirds:
 *     P = softmax(Q K^T / sqrt(D)), row i over the keys j <= i (causal=1) or all j  [T][T]
 *     Y = dropout(P) V, the head's D columns of heads                  [batch][T][C]
 *   out = heads out_weights^T + out_biases
 *
 * The keys staged= and packed= choose the order and the kernels of the products: the CPU kernels
 * (backend/cpu/attention.c: the forward and forward_at, the cached step of generation;
 * backend/cpu/attention_backward.c: the backward) say how. */
#include "layers/attention.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/net.h"
#include "core/onnx_graph.h"

/* source=: the memory layer into l->inputs[1] and its rows into a->mem_seq, after the checks
 * that cross-attention needs (an earlier layer of C features per row, bidirectional, not
 * packed). */
static int parse_source(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    Attention *a = l->priv;
    int index;
    const int st = layer_parse_from(l, cfg, s, "source", &index, e);
    if (st)
        return st;
    const Shape m = net->layers[index].out_shape;
    if (m.c != 1 || m.w != a->channels)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s]: source names layer %d, whose output is %dx%dx%d: "
                         "expected 1 x rows x %d, the input's features per row",
                         cfg_where(cfg, s, cfg_find(s, "source")).text, l->index, s->name, index,
                         m.c, m.h, m.w, a->channels);
    if (a->causal)
        return layer_bad_key(
            l, cfg, s, "causal", 1,
            "cross-attention (source=) attends to every memory row: expected causal=0", e);
    if (a->packed_key)
        return layer_bad_key(l, cfg, s, "packed", 1,
                             "cross-attention (source=) has no packed kernels", e);
    l->inputs[1] = index;
    l->n_inputs = 2;
    a->mem_seq = m.h;
    return CDL_OK;
}

/* Where the masked keys are: which part of a sequence-to-sequence net's input row gives their
 * token ids (KeyPadding), and the reference path for self-attention too. */
enum KeyPadding { PAD_NONE, PAD_SOURCE, PAD_TARGET };
static const char *const padding_names[] = {"none", "source", "target"};

/* key_padding=: the net input into l->inputs[2], the rows of its ids into a->pad_first and
 * a->pad_stride, after checking that the keys are that part's rows. */
static int parse_key_padding(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, int padding,
                             Error *e)
{
    Attention *a = l->priv;
    if (!net->source)
        return cfg_bad_value(cfg, s, "key_padding", e,
                             "a key padding mask needs the source and target of a "
                             "sequence-to-sequence net ([net] source=S)");
    const int key_rows = a->mem_seq ? a->mem_seq : a->seq;
    const int part_rows = padding == PAD_SOURCE ? net->source : net->seq;
    if (key_rows != part_rows)
        return cfg_bad_value(cfg, s, "key_padding", e,
                             "the keys are %d rows (%s) but the %s has %d tokens", key_rows,
                             a->mem_seq ? "the source= layer's" : "the input's",
                             padding_names[padding], part_rows);
    if (!a->mem_seq) { /* the input as its own memory */
        if (a->packed_key || a->staged)
            return layer_bad_key(l, cfg, s, a->packed_key ? "packed" : "staged", 1,
                                 "key_padding= runs the default kernels only", e);
        l->inputs[1] = l->inputs[0];
        a->mem_seq = a->seq;
    }
    a->key_padding = padding;
    a->pad_first = padding == PAD_SOURCE ? 0 : net->source;
    a->pad_stride = net->in_shape.h;
    l->inputs[2] = -1; /* the net input's token ids */
    l->n_inputs = 3;
    return CDL_OK;
}

static int attention_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int heads, causal, staged, packed, padding;
    float dropout;
    const int cross = cfg_find(s, "source") != NULL;
    int st = cfg_get_int(cfg, s, "heads", 1, &heads, e);
    st = st ? st : cfg_get_flag(cfg, s, "causal", !cross, &causal, e);
    st = st ? st : cfg_get_flag(cfg, s, "staged", 0, &staged, e);
    st = st ? st : cfg_get_flag(cfg, s, "packed", 0, &packed, e);
    st = st ? st : cfg_get_float(cfg, s, "dropout", 0.0f, &dropout, e);
    st = st ? st : cfg_get_named(cfg, s, "key_padding", padding_names, 3, &padding, e);
    if (st)
        return st;
    const int channels = l->in_shape.w;
    if (l->in_shape.c != 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] needs token rows: a sequence net ([net] seq=T), or "
                         "in an image net one channel of T tokens ([tokens]' output), not %dx%dx%d "
                         "(CxHxW)",
                         cfg->path, s->line, l->index, s->name, l->in_shape.c, l->in_shape.h,
                         l->in_shape.w);
    if (heads < 1 || channels % heads)
        return cfg_bad_value(cfg, s, "heads", e,
                             "the %d features per token must split evenly over the heads",
                             channels);
    if (!(dropout >= 0.0f && dropout < 1.0f))
        return cfg_bad_value(cfg, s, "dropout", e, "expected a number in [0, 1)");

    Attention *a = l->priv;
    a->seq = l->in_shape.h;
    a->channels = channels;
    a->heads = heads;
    a->head_size = channels / heads;
    a->causal = causal;
    a->staged = staged;
    a->packed_key = packed;
    a->dropout = dropout;
    a->mem_seq = 0;
    a->key_padding = PAD_NONE;
    if (cross && (st = parse_source(l, cfg, s, net, e)))
        return st;
    if (padding != PAD_NONE && (st = parse_key_padding(l, cfg, s, net, padding, e)))
        return st;
    a->draw_seq = a->seq;
    a->draw_keys = a->mem_seq ? a->mem_seq : a->seq;
    const int reference = a->mem_seq > 0; /* cross-attention's kernels */

    const size_t c = (size_t)channels;
    l->out_shape = l->in_shape;
    /* torch.nn.MultiheadAttention's in_proj_weight, in_proj_bias and out_proj */
    layer_add_param(l, "weights", 1, 1, 2, (int64_t[]){3 * channels, channels});
    layer_add_param(l, "biases", 1, 0, 1, (int64_t[]){3 * channels});
    layer_add_param(l, "out_weights", 1, 1, 2, (int64_t[]){channels, channels});
    layer_add_param(l, "out_biases", 1, 0, 1, (int64_t[]){channels});
    /* backward's dL/d(heads) [T][C], dL/d(qkv) [T][3C] and the sample's bias gradients [4C];
     * cross-attention's dL/d(heads) [T][C], dL/dq [T][C] and dL/d(kv) [S][2C] (key padding's
     * self-attention runs either: on the CPU self-attention's kernels, on the GPU cross's) */
    const int own_memory = reference && l->inputs[1] == l->inputs[0];
    l->scratch_per_sample = reference && !own_memory ? 2 * (size_t)(a->seq + a->mem_seq) * c
                                                     : 4 * (size_t)a->seq * c + 4 * c;
    const double t = a->seq, s_rows = reference ? a->mem_seq : t;
    const double pairs = causal ? t * (t + 1) / 2 : t * s_rows;
    /* the query and output projections of T rows, the key and value ones of S (T without source=)
     */
    l->flops = (4.0 * t + 4.0 * s_rows) * (double)c * (double)c + 4.0 * pairs * (double)c;
    return CDL_OK;
}

/* As PyTorch's nn.Linear, for both projections (C inputs each): weights and biases
 * ~ U(-1/sqrt(C), 1/sqrt(C)). */
static void attention_init(Layer *l, Rng *rng)
{
    const Attention *a = l->priv;
    layer_init_uniform(l, rng, 1.0f / sqrtf((float)a->channels));
}

/* The causal mask [T][T]: 0 on and below the diagonal, -inf above it (the softmax gives those
 * keys weight 0); out of memory leaves the graph's buffer failed. */
static void onnx_causal_mask(OnnxGraph *g, const char *name, int t)
{
    float *mask = malloc((size_t)t * (size_t)t * sizeof *mask);
    if (!mask) {
        g->body.failed = 1;
        return;
    }
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++)
            mask[(size_t)i * t + j] = j <= i ? 0.0f : -INFINITY;
    onnx_initializer(g, name, ONNX_FLOAT, 2, (const int64_t[]){t, t}, mask);
    free(mask);
}

/* The fused projection of x's rows [N][R][C] to qkv [N][R][3C], reshaped and transposed to
 * [3][N][H][R][D] and gathered into the thirds asked for (want[k]: q, k, v) [N][H][R][D], named
 * "layer<i>.<prefix>q" etc.; the intermediate values "layer<i>.<prefix>qkv(.split, .heads)". */
static void export_heads(OnnxGraph *g, const Layer *l, const char *x, const char *w, const char *b,
                         const char *prefix, const int want[3], char thirds[3][ONNX_NAME_MAX])
{
    const Attention *a = l->priv;
    static const char *const suffixes[] = {"qkv", "qkv.split", "qkv.heads", "qkv.split_shape"};
    char v[4][ONNX_NAME_MAX], suffix[ONNX_NAME_MAX];
    for (int k = 0; k < 4; k++) {
        snprintf(suffix, sizeof suffix, "%s%s", prefix, suffixes[k]);
        onnx_name(v[k], l, suffix);
    }
    onnx_linear(g, x, w, b, v[0]);
    onnx_int64s(g, v[3], 5, (const int64_t[]){0, -1, 3, a->heads, a->head_size});
    onnx_node(g, "Reshape", 2, (const char *[]){v[0], v[3]}, v[1], 0, NULL);
    const int64_t to_heads[] = {2, 0, 3, 1, 4};
    const OnnxAttr perm_heads = onnx_attr_ints("perm", to_heads, 5);
    onnx_node(g, "Transpose", 1, (const char *[]){v[1]}, v[2], 1, &perm_heads);
    const OnnxAttr axis0 = onnx_attr_int("axis", 0);
    for (int k = 0; k < 3; k++) {
        if (!want[k])
            continue;
        char index[ONNX_NAME_MAX];
        snprintf(suffix, sizeof suffix, "%s%c", prefix, "qkv"[k]);
        onnx_name(thirds[k], l, suffix);
        snprintf(suffix, sizeof suffix, "%sindex%d", prefix, k);
        onnx_name(index, l, suffix);
        const int64_t at = k;
        onnx_initializer(g, index, ONNX_INT64, 0, NULL, &at);
        onnx_node(g, "Gather", 2, (const char *[]){v[2], index}, thirds[k], 1, &axis0);
    }
}

/* A decoder step's keys or values (what: "key" or "value"): the graph input "past.<i>.<what>"
 * [N][H][t][D] (the earlier rows') and the step's row current [N][H][1][D] concatenated into the
 * graph output "present.<i>.<what>" [N][H][t+1][D], which all names. */
static void export_cache(OnnxGraph *g, const Layer *l, const char *what, const char *current,
                         char all[ONNX_NAME_MAX])
{
    const Attention *a = l->priv;
    OnnxValue past = onnx_value_batch("", ONNX_FLOAT, g->batch);
    past.rank = 4;
    past.dims[1] = a->heads;
    past.dims[3] = a->head_size;
    past.dim_names[2] = "t";
    snprintf(past.name, sizeof past.name, "past.%d.%s", l->index, what);
    OnnxValue present = past;
    present.dim_names[2] = "t+1";
    snprintf(present.name, sizeof present.name, "present.%d.%s", l->index, what);
    onnx_graph_declare(g, &past, 0);
    onnx_graph_declare(g, &present, 1);
    snprintf(all, ONNX_NAME_MAX, "%s", present.name);
    const OnnxAttr axis = onnx_attr_int("axis", 2);
    onnx_node(g, "Concat", 2, (const char *[]){past.name, current}, all, 1, &axis);
}

/* masked = logits [N][H][T][S] + 0, or -inf where the source's id is padding (key_padding=source,
 * as nn.MultiheadAttention's key_padding_mask). */
static void export_key_padding(OnnxGraph *g, const Layer *l, const char *logits, const char *masked)
{
    static const char *const suffixes[] = {"padded",   "pad_inf",   "pad_zero",
                                           "pad_mask", "pad_mask4", NULL};
    enum { PADDED, INF, ZERO, MASK, MASK4 };
    char v[5][ONNX_NAME_MAX];
    for (int k = 0; suffixes[k]; k++)
        onnx_name(v[k], l, suffixes[k]);
    onnx_padding(g, ONNX_SOURCE_IDS, v[PADDED]);
    onnx_scalar(g, v[INF], -INFINITY);
    onnx_scalar(g, v[ZERO], 0.0f);
    onnx_node(g, "Where", 3, (const char *[]){v[PADDED], v[INF], v[ZERO]}, v[MASK], 0, NULL);
    onnx_unsqueeze(g, v[MASK], 2, (const int64_t[]){1, 2}, v[MASK4]);
    onnx_node(g, "Add", 2, (const char *[]){logits, v[MASK4]}, masked, 0, NULL);
}

/* The fused projection's q, k, v [N][H][T][D] (export_heads; with source=, k and v of the memory's
 * rows [N][S][C], computed in the graph that reads the memory; in a decoder step, a
 * self-attention's k and v after its past rows, export_cache); P = Softmax(Q K^T * scale (+ the
 * causal mask over a whole sequence, + the source's padding mask)) [N][H][T][S], Y = P V,
 * transposed and reshaped back to [N][T][C] ([N][1][T][C], token rows in an image net), then the
 * output projection. A decoder step's target keys are never padding: key_padding=target masks
 * nothing there. */
static int attention_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Attention *a = l->priv;
    const int cross = l->n_inputs > 1 && l->inputs[1] != l->inputs[0];
    const int step = g->part == ONNX_DECODER_STEP;
    static const char *const suffixes[] = {"k_t",    "scores",        "scaled", "scale", "mask",
                                           "masked", "padded_scores", "probs",  "y",     "y.rows",
                                           "heads",  "rows",          NULL};
    enum { K_T, SCORES, SCALED, SCALE, MASK, MASKED, PADDED, PROBS, Y, Y_ROWS, HEADS, ROWS_SHAPE };
    char v[12][ONNX_NAME_MAX], x[ONNX_NAME_MAX], p[4][ONNX_NAME_MAX];
    char qkv[3][ONNX_NAME_MAX], memory[ONNX_NAME_MAX], memory_kv[3][ONNX_NAME_MAX];
    char keys[ONNX_NAME_MAX], values[ONNX_NAME_MAX];
    for (int k = 0; suffixes[k]; k++)
        onnx_name(v[k], l, suffixes[k]);
    onnx_input_nchw(g, l, 0, x);
    for (int k = 0; k < 4; k++)
        onnx_param(g, l, k, p[k]);
    export_heads(g, l, x, p[P_WEIGHTS], p[P_BIASES], "", (const int[]){1, !cross, !cross}, qkv);
    if (cross) {
        onnx_input_nchw(g, l, 1, memory);
        export_heads(g, l, memory, p[P_WEIGHTS], p[P_BIASES], "memory.", (const int[]){0, 1, 1},
                     memory_kv);
        snprintf(keys, sizeof keys, "%s", memory_kv[1]);
        snprintf(values, sizeof values, "%s", memory_kv[2]);
    } else if (step) {
        export_cache(g, l, "key", qkv[1], keys);
        export_cache(g, l, "value", qkv[2], values);
    } else {
        snprintf(keys, sizeof keys, "%s", qkv[1]);
        snprintf(values, sizeof values, "%s", qkv[2]);
    }
    const int64_t key_t[] = {0, 1, 3, 2}, to_rows[] = {0, 2, 1, 3};
    const OnnxAttr perm_key = onnx_attr_ints("perm", key_t, 4);
    onnx_node(g, "Transpose", 1, (const char *[]){keys}, v[K_T], 1, &perm_key);
    onnx_node(g, "MatMul", 2, (const char *[]){qkv[0], v[K_T]}, v[SCORES], 0, NULL);
    onnx_scalar(g, v[SCALE], 1.0f / sqrtf((float)a->head_size));
    onnx_node(g, "Mul", 2, (const char *[]){v[SCORES], v[SCALE]}, v[SCALED], 0, NULL);
    const char *logits = v[SCALED];
    if (a->causal && !step) {
        onnx_causal_mask(g, v[MASK], a->seq);
        onnx_node(g, "Add", 2, (const char *[]){v[SCALED], v[MASK]}, v[MASKED], 0, NULL);
        logits = v[MASKED];
    }
    if (a->key_padding && a->pad_first == 0) {
        export_key_padding(g, l, logits, v[PADDED]);
        logits = v[PADDED];
    }
    const OnnxAttr last = onnx_attr_int("axis", 3);
    onnx_node(g, "Softmax", 1, (const char *[]){logits}, v[PROBS], 1, &last);
    onnx_node(g, "MatMul", 2, (const char *[]){v[PROBS], values}, v[Y], 0, NULL);
    const OnnxAttr perm_rows = onnx_attr_ints("perm", to_rows, 4);
    onnx_node(g, "Transpose", 1, (const char *[]){v[Y]}, v[Y_ROWS], 1, &perm_rows);
    /* back to the input's layout: [N][T][C] in a sequence net, [N][1][T][C] in an image net */
    if (g->sequence)
        onnx_int64s(g, v[ROWS_SHAPE], 3, (const int64_t[]){0, -1, a->channels});
    else
        onnx_int64s(g, v[ROWS_SHAPE], 4, (const int64_t[]){0, 1, -1, a->channels});
    onnx_node(g, "Reshape", 2, (const char *[]){v[Y_ROWS], v[ROWS_SHAPE]}, v[HEADS], 0, NULL);
    onnx_linear(g, v[HEADS], p[P_OUT_WEIGHTS], p[P_OUT_BIASES], onnx_output(g, l, 0));
    return CDL_OK;
}

/* T follows the input's rows and S the memory's (cross-attention); key padding keeps reading the
 * net input as it is laid out (pad_first, pad_stride). */
static void attention_set_rows(Layer *l, const Net *net)
{
    Attention *a = l->priv;
    layer_rows_follow_input(l, net);
    a->seq = l->in_shape.h;
    if (a->mem_seq)
        a->mem_seq = net->layers[l->inputs[1]].out_shape.h;
}

const LayerType attention_layer = {
    .name = "attention",
    .set_rows = attention_set_rows,
    .priv_size = sizeof(Attention),
    .parse = attention_parse,
    .init = attention_init,
    .export_onnx = attention_export_onnx,
    .writes_input_delta = 1,
    .splits_batch = 1,
};
