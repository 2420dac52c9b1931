/* [attention]'s CPU kernels: its per-batch state, the forward and forward_at, the cached step of
 * generation (layers/attention.c has its meaning; backend/cpu/attention_backward.c the backward).
 *
 *   in, out [batch][T][C], qkv [batch][T][3C], P [batch][H][T][T], heads [batch][T][C]: the
 *   formulas in layers/attention.c
 *
 * Queries go in blocks: with the causal mask a block needs only the keys up to its last row,
 * so the score products skip most of the masked upper triangle. With key_padding= (the input as
 * its own memory, Attention.mem_seq = T) a sample's trailing padding cuts its keys the same way
 * (pair_keys), and padding before a token is masked key by key in the softmax, as
 * backend/cpu/attention_cross.c masks it: the padded keys get weight 0 and no gradient. The heads'
 * products are backend/cpu/gemm_strided's on the calling thread over blocks of STRIDED_ROW_BLOCK
 * rows (K^T and V^T transposed once per pair; the backward's dK and dV over all query rows at once,
 * from the transposes that gemm_strided reads through its strides), OpenBLAS gemms over blocks of
 * ATTENTION_ROW_BLOCK rows in staged=1's reference; with packed=1 (fp32, not staged) they
 * go through backend/cpu/gemm_packed instead (K^T and V packed once per (sample, head) pair, blocks
 * of one 16-key panel of rows, so a causal row computes less than a panel of masked scores; the
 * 1/sqrt(D) goes into the softmax; the backward keeps the pair's scale * dS [T][T], takes dQ
 * block by block and dK, dV from the transposes of dS and of the weights). packed=1 is off by
 * default: under load it measured no faster than the gemms (the packing and the transposes
 * cost what the kernel saves at D = 32).
 * The samples run in parallel, one whole sample per task (its projections, single-threaded
 * products: in fp32 on backend/cpu/gemm_rows and backend/cpu/gemm_packed with both weight matrices
 * packed once per pass, in bf16 OpenBLAS gemms; and its heads), dynamically scheduled: one parallel
 * region per forward and one plus the two weight-gradient products (backend/cpu/gemm_tn) per
 * backward, so a thread that another process holds up costs one sample's work, not a barrier per
 * stage (under load, a region per projection and per stage left the two threads waiting on each
 * other). The bias gradients are summed per sample, then over the samples in order, so results do
 * not depend on which thread ran what. staged=1 keeps the reference: stage by stage over the whole
 * batch (the projections as multi-threaded gemms, the (sample, head) pairs in parallel), the heads'
 * products as OpenBLAS gemms; the tests compare the default against it. The dropout mask is drawn
 * from (net seed, draw_id, layer index) as [dropout] draws its own, weight (pair, i, j) at
 * attention_draw_index (the cfg's rows as strides, so a pass cut to a batch's rows draws the
 * padded pass's mask on the rows it keeps).
 *
 * forward_at keeps qkv as the key/value cache: row t of each sample gets its q, k and v, then
 * attends to the cached keys and values of rows <= t, O(t C) per call (gather_samples moves
 * a sample's cache to another). A bidirectional layer
 * (causal=0) attends to all T rows in forward, which a token-by-token pass cannot know: its
 * forward_at sees rows <= t only and so differs from forward.
 *
 * precision=bf16 (Layer.precision): every product takes bf16 operands (gemm_operand), as
 * torch.autocast("cpu", torch.bfloat16) runs the projections and attention's two matmuls: the
 * weights and input are rounded into copies, qkv and heads_out (the outputs of bf16 products,
 * bf16 tensors under autocast) in place, P into the workspace (the softmax backward reads it
 * in float32), and in the backward delta, dL/d(heads), dS and dL/d(qkv) in place once what
 * needs them in float32 (the bias gradients, the softmax backward) is done. The softmax, the
 * biases and the sums stay float32. */
#include "backend/cpu/attention.h"

#include <math.h>
#include <string.h>

#include "backend/cpu/gather_samples.h"
#include "backend/cpu/gemm_rows.h"
#include "backend/cpu/softmax_row.h"
#include "core/net.h"

static int attention_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    Attention *a = l->priv;
    if (runs_cross_kernels(l))
        return attention_cross_resize(l, batch, st, e);
    const size_t rows = (size_t)batch * (size_t)a->seq, c = (size_t)a->channels;
    const size_t probs = (size_t)batch * (size_t)a->heads * (size_t)a->seq * (size_t)a->seq;
    if (probs > NET_MAX_BATCH_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [attention]: a mini-batch of %d needs more than %zu attention "
                         "weights; lower batch or raise subdivisions",
                         l->index, batch, NET_MAX_BATCH_FLOATS);
    a->threads = omp_get_max_threads();
    a->packed = a->packed_key && !a->staged && l->precision == GEMM_FP32;
    const int block = a->packed ? STRIP : a->staged ? ATTENTION_ROW_BLOCK : STRIDED_ROW_BLOCK;
    a->block = a->seq < block ? a->seq : block;
    a->qkv = layer_state_floats(st, rows * 3 * c);
    a->heads_out = layer_state_floats(st, rows * c);
    a->probs = layer_state_floats(st, probs);
    /* Dropout acts in training only, which needs gradients. */
    a->mask = layer_state_floats(st, a->dropout > 0 && l->params[P_WEIGHTS].grad ? probs : 0);
    a->mask_is_valid = 0;
    a->workspace = layer_state_floats(st, (size_t)a->threads * workspace_floats(a));
    const int rounded = l->precision != GEMM_FP32;
    a->w_rounded = layer_state_floats(st, rounded ? 3 * c * c : 0);
    a->out_w_rounded = layer_state_floats(st, rounded ? c * c : 0);
    a->x_rounded = layer_state_floats(st, rounded ? rows * c : 0);
    a->packed_proj = !a->staged && l->precision == GEMM_FP32;
    const size_t w_fwd = gemm_packed_floats((int)c, 3 * (int)c),
                 w_bwd = gemm_packed_floats(3 * (int)c, (int)c);
    const size_t out_fwd = gemm_packed_floats((int)c, (int)c); /* the backward's is the same */
    a->w_packed = layer_kept_floats(st, a->packed_proj ? w_fwd : 0);
    a->out_w_packed = layer_kept_floats(st, a->packed_proj ? out_fwd : 0);
    a->w_packed_back = layer_kept_floats(st, a->packed_proj ? w_bwd : 0);
    a->out_w_packed_back = layer_kept_floats(st, a->packed_proj ? out_fwd : 0);
    return CDL_OK;
}

/* row[0..n) = softmax(scale * row[0..n)), row[n..width) = 0 (the masked keys); with ids (NULL:
 * none) the keys j < n whose ids[j] is padding are masked too, and a row with no key left is all
 * zeros (PyTorch's would be NaN). */
static void softmax_masked_row(float *row, int n, int width, float scale, const float *ids)
{
    int left = n;
    for (int j = 0; ids && j < n; j++)
        if (ids[j] < 0) {
            row[j] = -INFINITY;
            left--;
        }
    if (left > 0)
        softmax_row_probs(row, row, (size_t)n, scale);
    else
        memset(row, 0, (size_t)n * sizeof *row);
    memset(row + n, 0, (size_t)(width - n) * sizeof *row);
}

/* One (sample, head) pair: P and Y from its q, k, v; with use_mask, draws the dropout mask from
 * dropout_key at the pair's index in the step's global mini-batch (attention_draw_index) and
 * applies it. ws holds
 * workspace_floats(a). Packed, K^T and V are packed once for the pair's blocks and the scale
 * goes into the softmax; else the products are OpenBLAS gemms. */
static void head_forward(const Attention *a, GemmPrecision prec, HeadView hv, uint64_t pair,
                         int use_mask, uint64_t dropout_key, float *ws)
{
    const int t = a->seq, d = a->head_size, ld = 3 * a->channels;
    const float scale = 1.0f / sqrtf((float)d), keep_scale = 1.0f / (1.0f - a->dropout);
    float *kt = ws + (size_t)a->block * t;     /* K^T [D][T], packed or not */
    float *vp = kt + gemm_packed_floats(d, t); /* packed: V [T][D] */
    if (a->packed) {
        gemm_pack_rows(1, d, t, hv.k, ld, 0, d, kt);
        gemm_pack_rows(0, t, d, hv.v, ld, 0, t, vp);
    } else {
        transpose_head(a, hv.k, ld, kt);
    }
    for (int r0 = 0; r0 < t; r0 += a->block) {
        const int rows = r0 + a->block < t ? a->block : t - r0;
        const int keys = keys_of_block(a, hv, r0 + rows);
        float *p = hv.p + (size_t)r0 * t;
        /* scores[rows][keys] = scale * Q[r0 .. r0+rows) K[0 .. keys)^T */
        if (a->packed)
            packed_product(rows, keys, d, hv.q + (size_t)r0 * ld, ld, kt, d, 0, 0.0f, p, t);
        else
            head_product(a, 0, rows, keys, d, scale, hv.q + (size_t)r0 * ld, ld, kt, t, 0.0f, p, t);
        for (int i = 0; i < rows; i++)
            softmax_masked_row(p + (size_t)i * t, keys_of_row(a, hv, r0 + i), keys,
                               a->packed ? scale : 1.0f, ids_masked_one_by_one(hv));
        const float *weights = p;
        if (use_mask) {
            float *m = hv.mask + (size_t)r0 * t;
            for (int i = 0; i < rows; i++)
                for (int j = 0; j < keys; j++) {
                    const size_t at = (size_t)i * t + j;
                    const uint64_t draw = attention_draw_index(a, pair, r0 + i, j);
                    m[at] = rng_uniform_at(dropout_key, draw) < a->dropout ? 0.0f : keep_scale;
                    ws[at] = p[at] * m[at];
                }
            weights = ws;
        }
        if (prec != GEMM_FP32) {
            for (int i = 0; i < rows; i++)
                gemm_operand(prec, weights + (size_t)i * t, (size_t)keys, ws + (size_t)i * t);
            weights = ws;
        }
        /* Y[r0 .. r0+rows) = weights[rows][keys] V[0 .. keys) */
        float *y = hv.y + (size_t)r0 * a->channels;
        if (a->packed)
            packed_product(rows, d, keys, weights, t, vp, t, 0, 0.0f, y, a->channels);
        else
            head_product(a, 0, rows, d, keys, 1.0f, weights, t, hv.v, ld, 0.0f, y, a->channels);
    }
}

/* What one forward's tasks share: the operands as precision p takes them, the dropout draw. */
typedef struct ForwardStep {
    GemmPrecision p;
    const float *x, *w_in, *w_out;           /* x [batch][T][C] */
    const float *w_in_packed, *w_out_packed; /* packed_proj: w_in^T, w_out^T packed, else NULL */
    float *out;
    int use_mask;
    uint64_t key, first_pair; /* the dropout key, the global index of the batch's first pair */
} ForwardStep;

/* qkv of rows [r0, r0 + n) from x (rounded into x_rounded in bf16), itself rounded in bf16. */
static void project_in(const Layer *l, const ForwardStep *s, size_t r0, int n)
{
    const Attention *a = l->priv;
    const size_t c = (size_t)a->channels;
    float *qkv = a->qkv + r0 * 3 * c;
    if (s->w_in_packed)
        gemm_bias_act(n, 3 * (int)c, (int)c, s->x + r0 * c, (int)c, s->w_in_packed,
                      l->params[P_BIASES].data, CDL_ACT_LINEAR, qkv, qkv);
    else
        attention_linear_rows(s->p, s->x + r0 * c, (int)c, n, (int)c, 3 * (int)c, s->w_in,
                              l->params[P_BIASES].data, qkv, 3 * (int)c,
                              a->x_rounded ? a->x_rounded + r0 * c : NULL);
    gemm_operand(s->p, qkv, (size_t)n * 3 * c, qkv);
}

/* out of rows [r0, r0 + n) from heads_out (rounded in place in bf16). */
static void project_out(const Layer *l, const ForwardStep *s, size_t r0, int n)
{
    const Attention *a = l->priv;
    const size_t c = (size_t)a->channels;
    float *heads = a->heads_out + r0 * c;
    gemm_operand(s->p, heads, (size_t)n * c, heads);
    /* heads_out is rounded already: its copy would be itself */
    if (s->w_out_packed)
        gemm_bias_act(n, (int)c, (int)c, heads, (int)c, s->w_out_packed,
                      l->params[P_OUT_BIASES].data, CDL_ACT_LINEAR, s->out + r0 * c,
                      s->out + r0 * c);
    else
        attention_linear_rows(GEMM_FP32, heads, (int)c, n, (int)c, (int)c, s->w_out,
                              l->params[P_OUT_BIASES].data, s->out + r0 * c, (int)c, NULL);
}

/* Pair `pair` (sample pair / H, head pair % H) of the batch, in the workspace of this thread. */
static void pair_forward(const Layer *l, const ForwardStep *s, int pair)
{
    const Attention *a = l->priv;
    head_forward(a, s->p, head_view(l, pair / a->heads, pair % a->heads),
                 s->first_pair + (uint64_t)pair, s->use_mask, s->key,
                 a->workspace + (size_t)omp_get_thread_num() * workspace_floats(a));
}

static void attention_forward(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    if (runs_cross_kernels(l)) {
        attention_cross_forward(l, ctx);
        return;
    }
    const int t = a->seq, rows = ctx->batch * t, pairs = ctx->batch * a->heads;
    const GemmPrecision p = l->precision;
    const Param *w = &l->params[P_WEIGHTS], *out_w = &l->params[P_OUT_WEIGHTS];
    a->mask_is_valid = ctx->train && a->dropout > 0 && a->mask;
    const ForwardStep s = {
        .p = p,
        .x = l->in[0],
        .w_in = gemm_operand(p, w->data, w->count, a->w_rounded),
        .w_out = gemm_operand(p, out_w->data, out_w->count, a->out_w_rounded),
        .out = l->out,
        .use_mask = a->mask_is_valid,
        .key = a->mask_is_valid ? rng_key(ctx->seed, layer_draw_stream(ctx, l)) : 0,
        .first_pair = (uint64_t)ctx->sample_offset * (uint64_t)a->heads,
        .w_in_packed = a->packed_proj ? a->w_packed : NULL,
        .w_out_packed = a->packed_proj ? a->out_w_packed : NULL,
    };
    if (a->packed_proj && !ctx->same_weights) {
        const int c = a->channels;
        gemm_pack(1, c, 3 * c, w->data, c, a->w_packed);
        gemm_pack(1, c, c, out_w->data, c, a->out_w_packed);
    }
    if (a->staged) {
        project_in(l, &s, 0, rows);
#pragma omp parallel for schedule(static)                                                          \
    num_threads(loop_threads(a)) if (pairs_in_parallel(a, pairs))
        for (int pair = 0; pair < pairs; pair++)
            pair_forward(l, &s, pair);
        project_out(l, &s, 0, rows);
        return;
    }
#pragma omp parallel for schedule(dynamic)                                                         \
    num_threads(loop_threads(a)) if (pairs_in_parallel(a, pairs) && ctx->batch > 1)
    for (int b = 0; b < ctx->batch; b++) {
        project_in(l, &s, (size_t)b * t, t);
        for (int h = 0; h < a->heads; h++)
            pair_forward(l, &s, b * a->heads + h);
        project_out(l, &s, (size_t)b * t, t);
    }
}

/* Row t of one (sample, head) pair from the cached keys and values of rows <= t; scores
 * holds T floats. In bf16 the weights are rounded before they multiply V, as head_forward's. */
static void head_forward_at(const Attention *a, GemmPrecision prec, HeadView hv, int t,
                            float *scores)
{
    const int d = a->head_size, ld = 3 * a->channels;
    const float scale = 1.0f / sqrtf((float)d);
    const float *q = hv.q + (size_t)t * ld;
    for (int j = 0; j <= t; j++) {
        const float *k = hv.k + (size_t)j * ld;
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int i = 0; i < d; i++)
            dot += q[i] * k[i];
        scores[j] = scale * dot;
    }
    softmax_masked_row(scores, t + 1, t + 1, 1.0f, hv.ids);
    gemm_operand(prec, scores, (size_t)t + 1, scores);
    float *y = hv.y + (size_t)t * a->channels;
    memset(y, 0, (size_t)d * sizeof *y);
    for (int j = 0; j <= t; j++) {
        const float *v = hv.v + (size_t)j * ld;
        const float w = scores[j];
#pragma omp simd
        for (int i = 0; i < d; i++)
            y[i] += w * v[i];
    }
}

static void attention_forward_at(Layer *l, const StepContext *ctx, int t)
{
    Attention *a = l->priv;
    if (runs_cross_kernels(l)) {
        attention_cross_forward_at(l, ctx, t);
        return;
    }
    const int c = a->channels, stride = a->seq * c, pairs = ctx->batch * a->heads;
    const size_t at = (size_t)t * c;
    const GemmPrecision p = l->precision;
    const int rounded = p != GEMM_FP32;
    /* Row t of every sample: rows of the batch are T rows apart; the weights as the forward
     * before rounded them. */
    attention_linear_rows(p, l->in[0] + at, stride, ctx->batch, c, 3 * c,
                          rounded ? a->w_rounded : l->params[P_WEIGHTS].data,
                          l->params[P_BIASES].data, a->qkv + 3 * at, 3 * stride, a->x_rounded);
    round_rows(p, a->qkv + 3 * at, ctx->batch, 3 * c, 3 * (size_t)stride);
    const size_t ws_floats = workspace_floats(a);
#pragma omp parallel for schedule(static) num_threads(                                             \
    loop_threads(a)) if ((size_t)pairs * (t + 1) * a->head_size > ATTENTION_PARALLEL_MIN)
    for (int pair = 0; pair < pairs; pair++)
        head_forward_at(a, p, head_view(l, pair / a->heads, pair % a->heads), t,
                        a->workspace + (size_t)omp_get_thread_num() * ws_floats);
    round_rows(p, a->heads_out + at, ctx->batch, c, (size_t)stride);
    attention_linear_rows(GEMM_FP32, a->heads_out + at, stride, ctx->batch, c, c,
                          rounded ? a->out_w_rounded : l->params[P_OUT_WEIGHTS].data,
                          l->params[P_OUT_BIASES].data, l->out + at, stride, NULL);
}

/* The key/value cache of each sample: qkv's [T][3C] (cross-attention's q and kv). */
static size_t attention_gather_samples(Layer *l, const ExecContext *exec, int batch,
                                       const int *from, int n, float *scratch)
{
    (void)exec;
    Attention *a = l->priv;
    if (runs_cross_kernels(l))
        return attention_cross_gather_samples(l, batch, from, n, scratch);
    return gather_sample_blocks(a->qkv, (size_t)a->seq * 3 * (size_t)a->channels, from, n, scratch);
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_attention_kernels = {
    .resize = attention_resize,
    .forward = attention_forward,
    .backward = attention_backward,
    .forward_at = attention_forward_at,
    .keeps_rows = 1,
    .gather_samples = attention_gather_samples,
};
