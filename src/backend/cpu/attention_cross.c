/* [attention]'s cross-attention on the CPU (source=, Attention.mem_seq; layers/attention.c has its
 * meaning): the queries from the input, the keys and values from the memory, the projections over
 * the whole batch as [linear]'s (backend/cpu/gemm_rows and gemm_packed against the weights packed
 * once a step; the weight gradients OpenBLAS gemms, which the GPU's cuBLAS products match more
 * closely than backend/cpu/gemm_tn's order), the (sample, head) pairs in parallel, their products
 * on backend/cpu/gemm_strided over all T query rows at once (K^T and V^T transposed once per pair,
 * the transposed operands of dV and dK read through its strides), as self-attention's; staged=1
 * keeps OpenBLAS gemms there, the reference the tests compare with. The per-sample paths of
 * backend/cpu/attention.c are self-attention's alone.
 *
 *   in, out [batch][T][C]   memory [batch][S][C]   H heads of D = C / H columns
 *   q [batch][T][C] = in Wq^T + bq            Wq, bq: rows [0, C) of weights, biases
 *   kv [batch][S][2C] = memory Wkv^T + bkv    Wkv, bkv: rows [C, 3C), keys then values
 *   per (sample, head): P = softmax(Q K^T / sqrt(D)) [T][S], Y = P V [T][D]
 *   out = heads Wo^T + bo
 *
 * With key_padding= a score whose key is masked (a padded token, or a later row under causal=1) is
 * -inf before the softmax, so it gets weight 0 and no gradient; a row whose keys are all masked
 * gets zero weights (PyTorch's would be NaN). Where a sample's padding is its last keys (paired
 * text's always is), the products, the softmax and its backward stop at its last token's key
 * instead (pair_keys): the same weights, the padding's being exact zeros. Self-attention with
 * key_padding= (the input its own memory) runs backend/cpu/attention.c's kernels, which mask alike.
 *
 * forward_at computes row t alone from the cache: the memory's keys and values as the forward left
 * them (once per source).
 *
 * precision bf16, tf32 or fp16 (Layer.precision) rounds what self-attention's rounds
 * (backend/cpu/attention.c): the weights and out_weights into copies, which the projections pack
 * (gemm_operand), the input and the memory into x_rounded, q and kv once projected, the weights
 * (P o M) into the workspace before they multiply V, the heads before the output projection; in
 * the backward delta, dL/d(heads), dS, dL/dq and dL/d(kv) in place once what reads them in float32
 * (the bias gradients, the softmax backward) is done. The softmax, the biases and the sums stay
 * float32; 1/sqrt(D) scales the products of dS, not dS itself, so dS rounds as the GPU's does.
 *
 * With dropout= in training, Y = (P o M) V with M [T][S] per pair drawn as self-attention's: 0 with
 * probability dropout, else 1 / (1 - dropout), from (net seed, draw_id, layer), weight (i, j) at
 * attention_draw_index of the pair's index in the step's global mini-batch (the cfg's T and S as
 * strides, whatever rows the pass is cut to); P stays undropped for the softmax's backward.
 */
#include <math.h>
#include <string.h>

#include "backend/cpu/attention.h"
#include "backend/cpu/gather_samples.h"
#include "backend/cpu/gemm_rows.h"
#include "backend/cpu/softmax_row.h"
#include "backend/cpu/sum_rows.h"
#include "core/net.h"
#include "util/rng.h"

/* The workspace of one thread: the forward's weights P o M (dropped or rounded) or the
 * backward's dP [T][S], where the weights are copied (dropout or rounding: copied = 1) the
 * backward's weights [T][S], then K^T or V^T [D][S]. */
static size_t cross_workspace_floats(const Attention *a, int copied)
{
    const size_t ts = (size_t)a->seq * a->mem_seq;
    return (copied ? 2 : 1) * ts + (size_t)a->head_size * a->mem_seq;
}

/* 1 when the weights that multiply V are a copy of P: dropped (a->mask is set where dropout is)
 * or rounded. */
static int weights_copied(const Layer *l)
{
    const Attention *a = l->priv;
    return a->mask != NULL || l->precision != GEMM_FP32;
}

/* This thread's workspace (cross_workspace_floats). */
static float *thread_workspace(const Layer *l)
{
    const Attention *a = l->priv;
    return a->workspace +
           (size_t)omp_get_thread_num() * cross_workspace_floats(a, weights_copied(l));
}

/* The transpose K^T or V^T [D][S] at the end of a thread's workspace ws. */
static float *workspace_transpose(const Layer *l, float *ws)
{
    const Attention *a = l->priv;
    return ws + cross_workspace_floats(a, weights_copied(l)) - (size_t)a->head_size * a->mem_seq;
}

/* c[m][n] = alpha x y^T for x [m][k], y [n][k] (row strides ldx, ldy, ldc): OpenBLAS when staged,
 * else y^T into tr [k][n] and backend/cpu/gemm_strided (the scores Q K^T, the backward's dY V^T).
 */
static void product_by_transpose(const Attention *a, int m, int n, int k, float alpha,
                                 const float *x, int ldx, const float *y, int ldy, float *tr,
                                 float *c, int ldc)
{
    if (a->staged) {
        gemm(0, 1, m, n, k, alpha, x, ldx, y, ldy, 0.0f, c, ldc);
        return;
    }
    gemm_strided_transpose(n, k, y, (size_t)ldy, tr, (size_t)n);
    gemm_strided(m, n, k, alpha, x, (size_t)ldx, 1, tr, (size_t)n, 0.0f, c, (size_t)ldc);
}

int attention_cross_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    Attention *a = l->priv;
    const size_t q_rows = (size_t)batch * a->seq, m_rows = (size_t)batch * a->mem_seq;
    const size_t c = (size_t)a->channels, ts = (size_t)a->seq * a->mem_seq;
    const size_t probs = (size_t)batch * a->heads * ts;
    if (probs > NET_MAX_BATCH_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [attention]: a mini-batch of %d needs more than %zu attention "
                         "weights; lower batch or raise subdivisions",
                         l->index, batch, NET_MAX_BATCH_FLOATS);
    a->threads = omp_get_max_threads();
    a->packed = a->packed_proj = 0;
    a->block = a->seq;
    a->qkv = layer_state_floats(st, q_rows * c + m_rows * 2 * c);
    a->heads_out = layer_state_floats(st, q_rows * c);
    a->probs = layer_state_floats(st, probs);
    const int dropout = a->dropout > 0 && l->params[P_WEIGHTS].grad;
    a->mask = layer_state_floats(st, dropout ? probs : 0);
    a->mask_is_valid = 0;
    const int rounded = l->precision != GEMM_FP32;
    a->workspace =
        layer_state_floats(st, (size_t)a->threads * cross_workspace_floats(a, dropout || rounded));
    a->w_rounded = layer_state_floats(st, rounded ? 3 * c * c : 0);
    a->out_w_rounded = layer_state_floats(st, rounded ? c * c : 0);
    /* the input's rows, then the memory's */
    a->x_rounded = layer_state_floats(st, rounded ? (q_rows + m_rows) * c : 0);
    /* Wq^T then Wkv^T, and Wo^T, as gemm_pack packs them (kept from a step's first pass) */
    a->w_packed = layer_kept_floats(st, gemm_packed_floats((int)c, (int)c) +
                                            gemm_packed_floats((int)c, 2 * (int)c));
    a->out_w_packed = layer_kept_floats(st, gemm_packed_floats((int)c, (int)c));
    /* the backward's Wq, Wkv and Wo as they are (their products give the input gradients) */
    a->w_packed_back = layer_kept_floats(st, gemm_packed_floats((int)c, (int)c) +
                                                 gemm_packed_floats(2 * (int)c, (int)c));
    a->out_w_packed_back = layer_kept_floats(st, gemm_packed_floats((int)c, (int)c));
    return CDL_OK;
}

/* Where pair (b, h)'s tensors start: q and dq of row stride C, k and v (v = k + C) of 2C, p T x S.
 */
typedef struct CrossView {
    const float *q, *k;
    float *p, *mask;   /* mask NULL without dropout */
    size_t q_at, k_at; /* offsets of q in [batch][T][C], of k in [batch][S][2C] */
} CrossView;

static CrossView cross_view(const Attention *a, int batch, int b, int h)
{
    const size_t c = (size_t)a->channels, t = (size_t)a->seq, s = (size_t)a->mem_seq;
    const size_t col = (size_t)h * a->head_size;
    const size_t q_at = b * t * c + col, k_at = b * s * 2 * c + col;
    const float *kv = a->qkv + (size_t)batch * t * c;
    const size_t p_at = ((size_t)b * a->heads + h) * t * s;
    return (CrossView){
        a->qkv + q_at, kv + k_at, a->probs + p_at, a->mask_is_valid ? a->mask + p_at : NULL,
        q_at,          k_at};
}

/* Row i's scores of sample b [S] with every masked key -inf; 0 when none is left. */
static int mask_scores(const Attention *a, const float *ids, int i, float *scores)
{
    const int s = a->mem_seq;
    int left = 0;
    for (int j = 0; j < s; j++) {
        const int masked = (a->causal && j > i) || (ids && ids[j] < 0);
        if (masked)
            scores[j] = -INFINITY;
        left += !masked;
    }
    return left;
}

/* The keys of pair_keys' answer: all S for -1. */
static int keys_computed(const Attention *a, int keys)
{
    return keys < 0 ? a->mem_seq : keys;
}

/* Row i's weights [S] from its scores (the first keys_computed(keys), pair_keys' keys): the softmax
 * over the keys left to it (the first keys, or under causal=1 up to i), zero past them; padding
 * before a token (keys -1) is masked key by key. */
static void row_weights(const Attention *a, const float *ids, int i, int keys, float *row)
{
    const int s = a->mem_seq;
    if (keys < 0) {
        if (!mask_scores(a, ids, i, row))
            memset(row, 0, (size_t)s * sizeof *row);
        else
            softmax_row_probs(row, row, (size_t)s, 1.0f);
        return;
    }
    const int n = a->causal && i + 1 < keys ? i + 1 : keys;
    if (n > 0)
        softmax_row_probs(row, row, (size_t)n, 1.0f);
    memset(row + n, 0, (size_t)(s - n) * sizeof *row);
}

/* weights [T][S] = P o M for pair (the pair's index in the step's global mini-batch), drawing M
 * into v's mask at attention_draw_index. */
static void drop_weights(const Attention *a, const CrossView *v, uint64_t key, uint64_t pair,
                         float *weights)
{
    const int s = a->mem_seq;
    const float keep_scale = 1.0f / (1.0f - a->dropout);
    for (int i = 0; i < a->seq; i++)
        for (int j = 0; j < s; j++) {
            const size_t at = (size_t)i * s + j;
            const uint64_t draw = attention_draw_index(a, pair, i, j);
            v->mask[at] = rng_uniform_at(key, draw) < a->dropout ? 0.0f : keep_scale;
            weights[at] = v->p[at] * v->mask[at];
        }
}

/* Weights (P_WEIGHTS or P_OUT_WEIGHTS) as the products take them: rounded as the last forward
 * rounded them in 16-bit precisions, else themselves. */
static const float *weights_operand(const Layer *l, int param)
{
    const Attention *a = l->priv;
    if (l->precision == GEMM_FP32)
        return l->params[param].data;
    return param == P_WEIGHTS ? a->w_rounded : a->out_w_rounded;
}

/* The memory's rows [batch][S][C] as rounded in 16-bit precisions, after the input's in x_rounded;
 * NULL in fp32. */
static float *memory_rounded(const Attention *a, int batch)
{
    return a->x_rounded ? a->x_rounded + (size_t)batch * a->seq * a->channels : NULL;
}

void attention_cross_forward(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    const int t = a->seq, s = a->mem_seq, c = a->channels, d = a->head_size;
    const int pairs = ctx->batch * a->heads;
    const GemmPrecision p = l->precision;
    const size_t q_rows = (size_t)ctx->batch * t, m_rows = (size_t)ctx->batch * s;
    a->mask_is_valid = ctx->train && a->dropout > 0 && a->mask;
    const uint64_t key = a->mask_is_valid ? rng_key(ctx->seed, layer_draw_stream(ctx, l)) : 0;
    const uint64_t first_pair = (uint64_t)ctx->sample_offset * (uint64_t)a->heads;
    const Param *w = &l->params[P_WEIGHTS], *out_w = &l->params[P_OUT_WEIGHTS];
    const float *w_op = gemm_operand(p, w->data, w->count, a->w_rounded);
    const float *out_w_op = gemm_operand(p, out_w->data, out_w->count, a->out_w_rounded);
    const float *x = gemm_operand(p, l->in[0], q_rows * c, a->x_rounded);
    const float *m = gemm_operand(p, l->in[1], m_rows * c, memory_rounded(a, ctx->batch));
    const float *bias = l->params[P_BIASES].data;
    float *kv = a->qkv + q_rows * c;
    float *wq = a->w_packed, *wkv = wq + gemm_packed_floats(c, c);
    if (!ctx->same_weights) {
        gemm_pack(1, c, c, w_op, c, wq);
        gemm_pack(1, c, 2 * c, w_op + (size_t)c * c, c, wkv);
        gemm_pack(1, c, c, out_w_op, c, a->out_w_packed);
    }
    gemm_bias_act((int)q_rows, c, c, x, c, wq, bias, CDL_ACT_LINEAR, a->qkv, a->qkv);
    gemm_bias_act((int)m_rows, 2 * c, c, m, c, wkv, bias + c, CDL_ACT_LINEAR, kv, kv);
    gemm_operand(p, a->qkv, (q_rows + 2 * m_rows) * c, a->qkv);
    const float scale = 1.0f / sqrtf((float)d);
#pragma omp parallel for schedule(static)                                                          \
    num_threads(loop_threads(a)) if (pairs_in_parallel(a, pairs))
    for (int pair = 0; pair < pairs; pair++) {
        const int b = pair / a->heads;
        const CrossView v = cross_view(a, ctx->batch, b, pair % a->heads);
        const float *ids = sample_ids(l, b);
        const int keys = pair_keys(a, ids), n = keys_computed(a, keys);
        float *ws = thread_workspace(l);
        /* P [T][n] = scale Q K^T, then row by row the softmax */
        product_by_transpose(a, t, n, d, scale, v.q, c, v.k, 2 * c, workspace_transpose(l, ws), v.p,
                             s);
        for (int i = 0; i < t; i++)
            row_weights(a, ids, i, keys, v.p + (size_t)i * s);
        const float *weights = v.p;
        if (v.mask) {
            drop_weights(a, &v, key, first_pair + (uint64_t)pair, ws);
            weights = ws;
        }
        weights = gemm_operand(p, weights, (size_t)t * s, ws);
        /* Y = (P o M) V over the first n keys */
        head_product(a, 0, t, d, n, 1.0f, weights, s, v.k + c, 2 * c, 0.0f, a->heads_out + v.q_at,
                     c);
    }
    gemm_operand(p, a->heads_out, q_rows * c, a->heads_out);
    gemm_bias_act((int)q_rows, c, c, a->heads_out, c, a->out_w_packed, l->params[P_OUT_BIASES].data,
                  CDL_ACT_LINEAR, l->out, l->out);
}

/* Row t of every sample: its query, its scores over the keys (the rows <= t under causal=1, else
 * the whole memory, whose keys and values the forward computed once), their weights and its output
 * row. */
void attention_cross_forward_at(Layer *l, const StepContext *ctx, int t)
{
    Attention *a = l->priv;
    const int s = a->mem_seq, c = a->channels, d = a->head_size, stride = a->seq * c;
    const int pairs = ctx->batch * a->heads, keys = a->causal ? t + 1 : s;
    const size_t at = (size_t)t * c;
    const GemmPrecision p = l->precision;
    attention_linear_rows(p, l->in[0] + at, stride, ctx->batch, c, c, weights_operand(l, P_WEIGHTS),
                          l->params[P_BIASES].data, a->qkv + at, stride, a->x_rounded);
    round_rows(p, a->qkv + at, ctx->batch, c, (size_t)stride);
    const float scale = 1.0f / sqrtf((float)d);
#pragma omp parallel for schedule(static)                                                          \
    num_threads(loop_threads(a)) if ((size_t)pairs * keys * d > ATTENTION_PARALLEL_MIN)
    for (int pair = 0; pair < pairs; pair++) {
        const int b = pair / a->heads;
        const CrossView v = cross_view(a, ctx->batch, b, pair % a->heads);
        const float *ids = sample_ids(l, b);
        const float *q = v.q + at;
        float *row = v.p + (size_t)t * s, *y = a->heads_out + v.q_at + at;
        for (int j = 0; j < keys; j++) {
            const float *k = v.k + (size_t)j * 2 * c;
            float dot = 0;
#pragma omp simd reduction(+ : dot)
            for (int i = 0; i < d; i++)
                dot += q[i] * k[i];
            row[j] = scale * dot;
        }
        if ((a->causal || ids) && !mask_scores(a, ids, t, row))
            memset(row, 0, (size_t)s * sizeof *row);
        else
            softmax_row_probs(row, row, (size_t)s, 1.0f);
        gemm_operand(p, row, (size_t)keys, row);
        memset(y, 0, (size_t)d * sizeof *y);
        for (int j = 0; j < keys; j++) {
            const float *value = v.k + c + (size_t)j * 2 * c, weight = row[j];
#pragma omp simd
            for (int i = 0; i < d; i++)
                y[i] += weight * value[i];
        }
    }
    round_rows(p, a->heads_out + at, ctx->batch, c, (size_t)stride);
    attention_linear_rows(GEMM_FP32, a->heads_out + at, stride, ctx->batch, c, c,
                          weights_operand(l, P_OUT_WEIGHTS), l->params[P_OUT_BIASES].data,
                          l->out + at, stride, NULL);
}

/* Each sample's q [T][C] and kv [S][2C]: the memory's keys and values move too (beam search's
 * hypotheses share one source, so they are the same), and key padding's self-attention keeps its
 * cache there. */
size_t attention_cross_gather_samples(Layer *l, int batch, const int *from, int n, float *scratch)
{
    Attention *a = l->priv;
    const size_t q = (size_t)a->seq * a->channels;
    const size_t q_floats = gather_sample_blocks(a->qkv, q, from, n, scratch);
    const size_t kv_floats = gather_sample_blocks(
        a->qkv + (size_t)batch * q, (size_t)a->mem_seq * 2 * a->channels, from, n, scratch);
    return q_floats > kv_floats ? q_floats : kv_floats;
}

/* Pair (b, h)'s dQ into dq [batch][T][C] and dK, dV into dkv [batch][S][2C] (each element once)
 * from dheads [batch][T][C]; ws holds cross_workspace_floats. */
static void cross_pair_backward(const Layer *l, int batch, int pair, const float *dheads, float *dq,
                                float *dkv, float *ws)
{
    const Attention *a = l->priv;
    const GemmPrecision p = l->precision;
    const int t = a->seq, s = a->mem_seq, c = a->channels, d = a->head_size;
    const float *ids = sample_ids(l, pair / a->heads);
    const int keys = keys_computed(a, pair_keys(a, ids));
    const CrossView v = cross_view(a, batch, pair / a->heads, pair % a->heads);
    const float *dy = dheads + v.q_at, *weights = v.p;
    const float scale = 1.0f / sqrtf((float)d);
    float *dk = dkv + v.k_at, *dp = ws;
    if (weights_copied(l)) { /* the weights Y used: P o M, rounded */
        float *copy = ws + (size_t)t * s;
        for (size_t at = 0; at < (size_t)t * s; at++)
            copy[at] = v.mask ? v.p[at] * v.mask[at] : v.p[at];
        weights = gemm_operand(p, copy, (size_t)t * s, copy);
    }
    /* dP = dY V^T; dV = (P o M)^T dY */
    product_by_transpose(a, t, keys, d, 1.0f, dy, c, v.k + c, 2 * c, workspace_transpose(l, ws), dp,
                         s);
    head_product(a, 1, keys, d, t, 1.0f, weights, s, dy, c, 0.0f, dk + c, 2 * c);
    for (int i = 0; i < t; i++) { /* through the mask (dP *= M), then the softmax: dS */
        float *row = dp + (size_t)i * s;
        softmax_row_backward(v.p + (size_t)i * s, v.mask ? v.mask + (size_t)i * s : NULL, keys,
                             1.0f, row);
        gemm_operand(p, row, (size_t)keys, row);
    }
    head_product(a, 0, t, d, keys, scale, dp, s, v.k, 2 * c, 0.0f, dq + v.q_at, c); /* dQ */
    head_product(a, 1, keys, d, t, scale, dp, s, v.q, c, 0.0f, dk, 2 * c);          /* dK */
    for (int j = keys; j < s; j++) { /* the padding's keys and values have no gradient */
        memset(dk + (size_t)j * 2 * c, 0, (size_t)d * sizeof *dk);
        memset(dk + (size_t)j * 2 * c + c, 0, (size_t)d * sizeof *dk);
    }
}

void attention_cross_backward(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    const GemmPrecision p = l->precision;
    const int c = a->channels, pairs = ctx->batch * a->heads;
    const int q_rows = ctx->batch * a->seq, m_rows = ctx->batch * a->mem_seq;
    Param *w = &l->params[P_WEIGHTS], *out_w = &l->params[P_OUT_WEIGHTS];
    const float *w_op = weights_operand(l, P_WEIGHTS);
    float *dheads = ctx->exec->workspace;    /* [batch][T][C] */
    float *dq = dheads + (size_t)q_rows * c; /* [batch][T][C] */
    float *dkv = dq + (size_t)q_rows * c;    /* [batch][S][2C] */
    float *wq_back = a->w_packed_back, *wkv_back = wq_back + gemm_packed_floats(c, c);
    if (!ctx->same_weights) {
        gemm_pack(0, c, c, w_op, c, wq_back);
        gemm_pack(0, 2 * c, c, w_op + (size_t)c * c, c, wkv_back);
        gemm_pack(0, c, c, weights_operand(l, P_OUT_WEIGHTS), c, a->out_w_packed_back);
    }

    /* Output projection: d out_weights += delta^T heads, d heads = delta out_weights. */
    sum_rows_add(l->params[P_OUT_BIASES].grad, l->delta, (size_t)q_rows, (size_t)c);
    gemm_operand(p, l->delta, (size_t)q_rows * c, l->delta);
    gemm(1, 0, c, c, q_rows, 1.0f, l->delta, c, a->heads_out, c, 1.0f, out_w->grad, c);
    gemm_packed(q_rows, c, c, l->delta, c, a->out_w_packed_back, 0.0f, dheads, c);
    gemm_operand(p, dheads, (size_t)q_rows * c, dheads);

#pragma omp parallel for schedule(static)                                                          \
    num_threads(loop_threads(a)) if (pairs_in_parallel(a, pairs))
    for (int pair = 0; pair < pairs; pair++)
        cross_pair_backward(l, ctx->batch, pair, dheads, dq, dkv, thread_workspace(l));

    /* Input projections: d weights += [dq^T in; dkv^T memory], d in += dq Wq, d memory += dkv
     * Wkv. Where the memory is the input, both deltas are one buffer: the second adds. */
    float *bias_grad = l->params[P_BIASES].grad;
    sum_rows_add(bias_grad, dq, (size_t)q_rows, (size_t)c);
    sum_rows_add(bias_grad + c, dkv, (size_t)m_rows, 2 * (size_t)c);
    gemm_operand(p, dq, (size_t)q_rows * c, dq);
    gemm_operand(p, dkv, (size_t)m_rows * 2 * c, dkv);
    const float *x = a->x_rounded ? a->x_rounded : l->in[0];
    const float *m = a->x_rounded ? memory_rounded(a, ctx->batch) : l->in[1];
    gemm(1, 0, c, c, q_rows, 1.0f, dq, c, x, c, 1.0f, w->grad, c);
    gemm(1, 0, 2 * c, c, m_rows, 1.0f, dkv, 2 * c, m, c, 1.0f, w->grad + (size_t)c * c, c);
    float *dx = l->in_delta[0], *dm = l->in_delta[1];
    if (dx)
        gemm_packed(q_rows, c, c, dq, c, wq_back, layer_input_delta_beta(l, 0), dx, c);
    if (dm)
        gemm_packed(m_rows, c, 2 * c, dkv, 2 * c, wkv_back,
                    dm == dx ? 1.0f : layer_input_delta_beta(l, 1), dm, c);
}
