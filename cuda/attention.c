/* [attention]'s GPU kernels (layers/attention.c has its meaning): the projections as cuBLAS
 * products over all rows, the heads' products as strided batched cuBLAS products over the heads of
 * one sample (a head's Q, K and V are D columns of their rows, heads D columns apart), and the
 * masked softmax, the dropout mask and the softmax's backward as own kernels
 * (cuda/kernels/attention.cu). The scores are computed for every key and the causal mask applied
 * by the softmax (the CPU skips most masked blocks: the same values). The dropout mask is drawn
 * from the CPU's key and indices (util/rng.h's counter-based draws on the device), so both masks
 * are the same. staged= and packed= choose the CPU's order of work only: the GPU computes the same
 * values either way. forward_at keeps qkv as the key/value cache, as the CPU does: row t of
 * every sample gets its q, k and v, then one block per (sample, head) attends to the rows <= t.
 * Cross-attention (source=, S memory rows) keeps q and kv as the CPU does
 * (backend/cpu/attention_cross.c), its dropout mask [T][S] per pair drawn at the CPU's indices
 * (attention_draw_index, pair T' S' + i S' + j with the cfg's T' and S': the same kernels over S
 * keys); its forward_at computes
 * query row t against the memory's keys and values that the forward left (once per source), and
 * gather_samples moves each sample's cache for beam search. key_padding= runs those kernels as
 * the CPU does (self-attention reading its input as the memory): the softmax gives the keys whose
 * token id in the net input is negative weight 0 (a row of them all, zero weights), so the
 * backward, through P, gives them no gradient. The input, the output and their gradients are
 * float32 or 16-bit (Layer.in_storage, Layer.storage: the projections read and write them as they
 * are). Inside, qkv, P, the dropped weights, the heads and the gradients of the heads and of qkv
 * are of the inner type (inner_type: 16-bit under bf16 and fp16, float32 in fp32 and tf32): the
 * values the CPU's reference rounds as the products' operands, which cuBLAS reads as they are.
 * The scores before the softmax and dP, dS stay float32 (the softmax's exponentials and its
 * backward's difference dP - sum P dP need float32's digits; the products round dS into their
 * copies as the CPU does), as the dropout mask. forward_at's cache is of the inner type, its row
 * weights float32.
 *
 *   in, out [batch][T][C]   memory (source=) [batch][S][C]; S = T in self-attention
 *   self: qkv [batch][T][3C]; cross: q [batch][T][C] then kv [batch][S][2C] in Attention.qkv
 *   P [batch][H][T][S] (forward_at: [batch][H][S] float32 weights in its memory)   heads
 *   [batch][T][C], all of the inner type; mask [batch][H][T][S] float32
 *   Attention.workspace on the GPU: work of one pass, [batch][H][T][S] float32 for the scores
 *   (16-bit inner type; float32 P takes its scores in place) or dS (nets with gradients), then
 *   [batch][H][T][S] of the inner type for the dropped weights P m (dropout in training)
 *   the backward's dL/d(heads) [batch][T][C], then dL/d(qkv) [batch][T][3C] (self) or dL/dq
 *   [batch][T][C] and dL/d(kv) [batch][S][2C] (cross), of the inner type, in the net's workspace
 */
#include <math.h>

#include "core/net.h"
#include "gather_samples.h"
#include "gpu.h"
#include "kernels/attention.h"
#include "kernels/dropout.h"
#include "kernels/sequence.h"
#include "layers/attention.h"

/* Key rows per sample: the memory's in cross-attention, the input's otherwise. */
static int keys_of(const Attention *a)
{
    return a->mem_seq ? a->mem_seq : a->seq;
}

/* The elements of P (and of the scores, the mask, dS) of a mini-batch of batch. */
static size_t probs_count(const Attention *a, int batch)
{
    return (size_t)batch * (size_t)a->heads * (size_t)a->seq * (size_t)keys_of(a);
}

/* The type of qkv, P, the dropped weights, the heads and the gradients of qkv and the heads: the
 * 16-bit format of precision bf16 or fp16 (core/net_storage.h's rule: these kernels take 16-bit
 * tensors), float32 in fp32 and tf32. */
static ElemType inner_type(const Layer *l)
{
    return precision_storage(l->precision);
}

/* The floats that hold n elements of type t. */
static size_t floats_for(size_t n, ElemType t)
{
    return (n * elem_bytes(t) + sizeof(float) - 1) / sizeof(float);
}

/* Where the heads' operands are, in Attention.qkv or in their gradients, elements of type: q rows
 * q_stride elements apart, k and v (v = k + C) rows kv_stride apart, sample b's at q + b T
 * q_stride and k + b S kv_stride. */
typedef struct HeadsView {
    void *q, *k;
    ElemType type;
    int q_stride, kv_stride;
} HeadsView;

/* The view of qkv (or of its gradient, laid out alike) of type for a mini-batch of batch. */
static HeadsView heads_view(const Attention *a, void *qkv, ElemType type, int batch)
{
    const int c = a->channels;
    if (a->mem_seq)
        return (HeadsView){qkv, elem_at(qkv, type, (size_t)batch * a->seq * c), type, c, 2 * c};
    return (HeadsView){qkv, elem_at(qkv, type, (size_t)c), type, 3 * c, 3 * c};
}

static void *sample_q(const Attention *a, HeadsView v, int b)
{
    return elem_at(v.q, v.type, (size_t)b * a->seq * v.q_stride);
}

static void *sample_k(const Attention *a, HeadsView v, int b)
{
    return elem_at(v.k, v.type, (size_t)b * keys_of(a) * v.kv_stride);
}

/* Sample b's values (its keys' columns C on). */
static void *sample_v(const Attention *a, HeadsView v, int b)
{
    return elem_at(sample_k(a, v, b), v.type, (size_t)a->channels);
}

/* The forward's float32 scores: P itself in float32 (the softmax in place); in 16 bits the start
 * of Attention.workspace (where the backward's dS goes). */
static float *scores_of(const Layer *l)
{
    const Attention *a = l->priv;
    return inner_type(l) == ELEM_F32 ? a->probs : a->workspace;
}

/* 1 when Attention.workspace starts with probs floats: the scores (16 bits) or dS (gradients). */
static int works_in_float(const Layer *l)
{
    return inner_type(l) != ELEM_F32 || l->params[P_WEIGHTS].grad;
}

/* The dropped weights P m in Attention.workspace, after the float32 scores or dS if any. */
static void *dropped_of(const Layer *l, size_t probs)
{
    const Attention *a = l->priv;
    return a->workspace + (works_in_float(l) ? probs : 0);
}

static int attention_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    Attention *a = l->priv;
    const size_t rows = (size_t)batch * (size_t)a->seq, c = (size_t)a->channels;
    const size_t m_rows = (size_t)batch * (size_t)a->mem_seq;
    const size_t probs = probs_count(a, batch);
    if (probs > NET_MAX_BATCH_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [attention]: a mini-batch of %d needs more than %zu attention "
                         "weights; lower batch or raise subdivisions",
                         l->index, batch, NET_MAX_BATCH_FLOATS);
    const int grads = l->params[P_WEIGHTS].grad != NULL;
    const size_t qkv = a->mem_seq ? rows * c + m_rows * 2 * c : rows * 3 * c;
    const ElemType inner = inner_type(l);
    a->threads = 1;
    a->packed = a->packed_proj = 0;
    a->block = a->seq;
    a->qkv = layer_state_bytes(st, qkv * elem_bytes(inner));
    a->heads_out = layer_state_bytes(st, rows * c * elem_bytes(inner));
    /* P, or forward_at's float32 weights of one row per pair (the net keeps the state, not the
     * work, for forward_at) */
    const size_t row_weights = (size_t)batch * a->heads * keys_of(a) * sizeof(float);
    a->probs = layer_state_bytes(st, size_max(probs * elem_bytes(inner), row_weights));
    /* Dropout acts in training only, which needs gradients. (Sized by the condition, not by
     * a->mask: the state's pointers are NULL while the net measures the layer.) */
    const int drops = a->dropout > 0 && grads;
    a->mask = layer_state_floats(st, drops ? probs : 0);
    a->mask_is_valid = 0;
    /* the float32 scores (16 bits) or dS (with gradients), then the dropped weights */
    const size_t floats = works_in_float(l) ? probs : 0;
    a->workspace = layer_work_floats(st, floats + (drops ? floats_for(probs, inner) : 0));
    a->w_rounded = a->out_w_rounded = a->x_rounded = NULL;
    /* the backward's dL/d(heads) and dL/d(qkv) first, or the forward's float32 sums of a 16-bit
     * projection (at most qkv's rows: project); the products' float32 operands are at most qkv
     * (float32), the inputs or the output's gradient (16 bits), dS or the input weights */
    const size_t rounded = inner == ELEM_F32 ? qkv : (rows + m_rows) * c;
    const size_t sums = inner == ELEM_F32 && l->storage == ELEM_F32 ? 0 : qkv;
    gpu_reserve_scratch(l, batch, size_max(floats_for(rows * c + qkv, inner), sums),
                        size_max(size_max(rounded, probs), 3 * c * c));
    a->w_packed = a->out_w_packed = a->w_packed_back = a->out_w_packed_back = NULL;
    return CDL_OK;
}

/* A tensor of the projections, float32 or 16-bit: a layer's input or output, or qkv. */
typedef struct Rows {
    void *at;
    ElemType type;
    int stride; /* elements from a row to the next */
} Rows;

/* y [rows][n] = x [rows][k] times w^T ([n][k]) + bias. A 16-bit y is rounded once, from the
 * float32 sums plus the bias (the CPU's reference rounds qkv so), the sums in float32 rows at y's
 * stride from the start of the net's workspace (free in the forward: gpu_reserve_scratch). */
static void project(const StepContext *ctx, GemmPrecision p, Rows x, int rows, int k, int n,
                    const float *w, const float *bias, Rows y)
{
    const Rows sums = y.type == ELEM_F32 ? y : (Rows){ctx->exec->workspace, ELEM_F32, y.stride};
    gpu_gemm_typed(ctx, p, 0, 1, rows, n, k, 1.0f, x.at, x.type, x.stride, w, ELEM_F32, k, 0.0f,
                   sums.at, sums.type, sums.stride);
    gpu_note(ctx,
             cuda_add_row_vector_typed(y.at, y.type, sums.at, sums.type, bias, rows, n,
                                       (size_t)y.stride, gpu_stream(ctx)),
             "attention biases");
}

/* Input k's rows ([batch][rows][C]) from element i on, rows stride apart. */
static Rows input_rows(const Layer *l, int k, size_t i, int stride)
{
    return (Rows){elem_at(l->in[k], l->in_storage[k], i), l->in_storage[k], stride};
}

/* The output's rows ([batch][T][C]) from element i on, rows stride apart. */
static Rows output_rows(const Layer *l, size_t i, int stride)
{
    return (Rows){elem_at(l->out, l->storage, i), l->storage, stride};
}

/* The input projections: self-attention's qkv = in W^T + b; cross-attention's q from the input
 * (rows [0, C) of W and b) and kv from the memory (rows [C, 3C)). */
static void project_inputs(Layer *l, const StepContext *ctx, HeadsView v)
{
    const Attention *a = l->priv;
    const int c = a->channels;
    const float *w = l->params[P_WEIGHTS].data, *bias = l->params[P_BIASES].data;
    if (!a->mem_seq) {
        project(ctx, l->precision, input_rows(l, 0, 0, c), ctx->batch * a->seq, c, 3 * c, w, bias,
                (Rows){v.q, v.type, 3 * c});
        return;
    }
    project(ctx, l->precision, input_rows(l, 0, 0, c), ctx->batch * a->seq, c, c, w, bias,
            (Rows){v.q, v.type, c});
    project(ctx, l->precision, input_rows(l, 1, 0, c), ctx->batch * a->mem_seq, c, 2 * c,
            w + (size_t)c * c, bias + c, (Rows){v.k, v.type, 2 * c});
}

static void attention_forward_gpu(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    const int t = a->seq, s = keys_of(a), c = a->channels, h = a->heads, d = a->head_size;
    const long long ts = (long long)t * s;
    const size_t probs = probs_count(a, ctx->batch);
    const float scale = 1.0f / sqrtf((float)d);
    const ElemType inner = inner_type(l);
    const HeadsView v = heads_view(a, a->qkv, inner, ctx->batch);
    float *scores = scores_of(l);
    a->mask_is_valid = ctx->train && a->dropout > 0 && a->mask;

    project_inputs(l, ctx, v);
    /* S = scale Q K^T per (sample, head), float32 */
    for (int b = 0; b < ctx->batch; b++)
        gpu_gemm_batched_typed(ctx, l->precision, 0, 1, t, s, d, scale, sample_q(a, v, b), inner,
                               v.q_stride, d, sample_k(a, v, b), inner, v.kv_stride, d, 0.0f,
                               scores + (size_t)b * h * ts, ELEM_F32, s, ts, h);
    if (a->key_padding)
        gpu_note(ctx,
                 cuda_attention_softmax_padded(a->probs, inner, scores, ctx->batch, h, t, s,
                                               a->causal, l->in[2] + a->pad_first, a->pad_stride,
                                               gpu_stream(ctx)),
                 "attention key padding softmax");
    else
        gpu_note(ctx,
                 cuda_attention_softmax(a->probs, inner, scores, ctx->batch * h * t, s, a->causal,
                                        gpu_stream(ctx)),
                 "attention softmax");
    const void *weights = a->probs;
    if (a->mask_is_valid) {
        /* [dropout]'s kernel: weight (pair, i, j) of the batch's (pairs, T, S) draws at the
         * CPU's attention_draw_index, ((pair + first_pair) T' + i) S' + j with the cfg's T' and
         * S' (S = T in self-attention), first = first_pair T' S'; a captured step keys on the
         * draw id each replay uploads */
        const uint64_t key = rng_key(ctx->seed, layer_draw_stream(ctx, l));
        const uint64_t first_pair = (uint64_t)ctx->sample_offset * (uint64_t)h;
        const DropoutDraws draws = {attention_draw_index(a, first_pair, 0, 0), (uint64_t)t,
                                    (uint64_t)s, (uint64_t)a->draw_seq, (uint64_t)a->draw_keys};
        const GpuHandles *gh = gpu_handles(ctx);
        void *dropped = dropped_of(l, probs);
        gpu_note(ctx,
                 cuda_dropout_forward(dropped, inner, a->mask, a->probs, inner, key,
                                      gh->capturing ? &gh->step->draw_id : NULL, ctx->seed,
                                      l->index, draws, dropout_layout_nchw(), a->dropout,
                                      1.0f / (1.0f - a->dropout), 1, probs, gpu_stream(ctx)),
                 "attention dropout");
        weights = dropped;
    }
    /* Y = weights V per (sample, head), the heads side by side */
    for (int b = 0; b < ctx->batch; b++)
        gpu_gemm_batched_typed(ctx, l->precision, 0, 0, t, d, s, 1.0f,
                               elem_at(weights, inner, (size_t)b * h * ts), inner, s, ts,
                               sample_v(a, v, b), inner, v.kv_stride, d, 0.0f,
                               elem_at(a->heads_out, inner, (size_t)b * t * c), inner, c, d, h);
    project(ctx, l->precision, (Rows){a->heads_out, inner, c}, ctx->batch * t, c, c,
            l->params[P_OUT_WEIGHTS].data, l->params[P_OUT_BIASES].data, output_rows(l, 0, c));
}

/* Row t of every sample from the cache: its q (and in self-attention, its k and v; in key
 * padding's, into the kv rows), then one block per (sample, head) attends to the keys of rows
 * <= t (causal) or to the whole memory, whose keys and values the forward computed once per
 * source. Rows of the batch are T rows apart; P's memory holds the float32 weights. */
static void attention_forward_at(Layer *l, const StepContext *ctx, int t)
{
    Attention *a = l->priv;
    const int c = a->channels, s = keys_of(a), stride = a->seq * c;
    const size_t at = (size_t)t * c;
    const float *w = l->params[P_WEIGHTS].data, *bias = l->params[P_BIASES].data;
    const ElemType inner = inner_type(l);
    const HeadsView v = heads_view(a, a->qkv, inner, ctx->batch);
    const Rows x = input_rows(l, 0, at, stride);
    if (!a->mem_seq)
        project(ctx, l->precision, x, ctx->batch, c, 3 * c, w, bias,
                (Rows){elem_at(v.q, inner, 3 * at), inner, 3 * stride});
    else {
        project(ctx, l->precision, x, ctx->batch, c, c, w, bias,
                (Rows){elem_at(v.q, inner, at), inner, stride});
        if (l->in[1] == l->in[0])
            project(ctx, l->precision, x, ctx->batch, c, 2 * c, w + (size_t)c * c, bias + c,
                    (Rows){elem_at(v.k, inner, 2 * at), inner, 2 * s * c});
    }
    const float *ids = a->key_padding ? l->in[2] + a->pad_first : NULL;
    gpu_note(ctx,
             cuda_attention_row(a->heads_out, a->probs, v.q, v.q_stride, v.k, v.kv_stride, inner,
                                ctx->batch, a->seq, s, c, a->heads, t, a->causal ? t + 1 : s, ids,
                                a->pad_stride, gpu_stream(ctx)),
             "attention forward_at");
    project(ctx, l->precision, (Rows){elem_at(a->heads_out, inner, at), inner, stride}, ctx->batch,
            c, c, l->params[P_OUT_WEIGHTS].data, l->params[P_OUT_BIASES].data,
            output_rows(l, at, stride));
}

/* Beam search's reordering of the cache (LayerKernels.gather_samples), on the device: each
 * sample's qkv [T][3C], or in cross-attention its q [T][C] and kv [S][2C] (the memory's keys and
 * values move too: a beam's hypotheses share one source). */
static size_t attention_gather_samples(Layer *l, const ExecContext *exec, int batch,
                                       const int *from, int n, float *scratch)
{
    Attention *a = l->priv;
    const ElemType inner = inner_type(l);
    const size_t c = (size_t)a->channels, t = (size_t)a->seq, e = elem_bytes(inner);
    if (!a->mem_seq)
        return gpu_gather_sample_blocks(exec, a->qkv, t * 3 * c * e, from, n, scratch);
    const size_t q = gpu_gather_sample_blocks(exec, a->qkv, t * c * e, from, n, scratch);
    const size_t kv = gpu_gather_sample_blocks(exec, elem_at(a->qkv, inner, (size_t)batch * t * c),
                                               (size_t)a->mem_seq * 2 * c * e, from, n, scratch);
    return q > kv ? q : kv;
}

/* An input projection's backward over input k: d biases[at..at+n) += column sums of dy
 * [rows][n] (of the layer's inner type), d weights rows [at, at+n) += dy^T x, and dx [rows][C]
 * (in_delta[k]) = dx beta + dy weights' rows (NULL: none). */
static void project_backward(Layer *l, const StepContext *ctx, int k, int rows, int n,
                             const void *dy, int at, float beta)
{
    const int c = ((const Attention *)l->priv)->channels;
    const Param *w = &l->params[P_WEIGHTS];
    const ElemType dy_type = inner_type(l);
    gpu_note(ctx,
             cuda_column_sums_add_typed(l->params[P_BIASES].grad + at, dy, dy_type, rows, n,
                                        (size_t)n, gpu_stream(ctx)),
             "attention biases gradient");
    gpu_gemm_typed(ctx, l->precision, 1, 0, n, c, rows, 1.0f, dy, dy_type, n, l->in[k],
                   l->in_storage[k], c, 1.0f, w->grad + (size_t)at * c, ELEM_F32, c);
    if (l->in_delta[k])
        gpu_gemm_typed(ctx, l->precision, 0, 0, rows, c, n, 1.0f, dy, dy_type, n,
                       w->data + (size_t)at * c, ELEM_F32, c, beta, l->in_delta[k],
                       l->in_storage[k], c);
}

static void attention_backward_gpu(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    const int t = a->seq, s = keys_of(a), c = a->channels, h = a->heads, d = a->head_size;
    const int rows = ctx->batch * t;
    const long long ts = (long long)t * s;
    const size_t probs = probs_count(a, ctx->batch);
    const float scale = 1.0f / sqrtf((float)d);
    const Param *out_w = &l->params[P_OUT_WEIGHTS];
    const ElemType inner = inner_type(l);
    void *dheads = ctx->exec->workspace; /* [batch][T][C] */
    const HeadsView v = heads_view(a, a->qkv, inner, ctx->batch);
    const HeadsView dv = heads_view(a, elem_at(dheads, inner, (size_t)rows * c), inner, ctx->batch);
    const float *mask = a->mask_is_valid ? a->mask : NULL;
    float *ds = a->workspace; /* float32: the softmax's backward reads it */

    /* Output projection: d out_biases += column sums of delta, d out_weights += delta^T heads,
     * d heads = delta out_weights. */
    gpu_note(ctx,
             cuda_column_sums_add_typed(l->params[P_OUT_BIASES].grad, l->delta, l->storage, rows, c,
                                        (size_t)c, gpu_stream(ctx)),
             "attention out_biases gradient");
    gpu_gemm_typed(ctx, l->precision, 1, 0, c, c, rows, 1.0f, l->delta, l->storage, c, a->heads_out,
                   inner, c, 1.0f, out_w->grad, ELEM_F32, c);
    gpu_gemm_typed(ctx, l->precision, 0, 0, rows, c, c, 1.0f, l->delta, l->storage, c, out_w->data,
                   ELEM_F32, c, 0.0f, dheads, inner, c);

    const void *weights = a->probs;
    if (mask) {
        void *dropped = dropped_of(l, probs);
        gpu_note(ctx,
                 cuda_attention_apply_mask(dropped, a->probs, inner, mask, probs, gpu_stream(ctx)),
                 "attention dropout backward");
        weights = dropped;
    }
    /* dP = dY V^T per (sample, head), then dS through the mask and the softmax */
    for (int b = 0; b < ctx->batch; b++)
        gpu_gemm_batched_typed(ctx, l->precision, 0, 1, t, s, d, 1.0f,
                               elem_at(dheads, inner, (size_t)b * t * c), inner, c, d,
                               sample_v(a, v, b), inner, v.kv_stride, d, 0.0f,
                               ds + (size_t)b * h * ts, ELEM_F32, s, ts, h);
    gpu_note(ctx,
             cuda_attention_softmax_backward(ds, a->probs, inner, mask, ctx->batch * h * t, s,
                                             a->causal, gpu_stream(ctx)),
             "attention softmax backward");
    /* dQ = scale dS K, dK = scale dS^T Q, dV = weights^T dY per (sample, head): every column of
     * the gradients of q, k and v written */
    for (int b = 0; b < ctx->batch; b++) {
        const float *ds_b = ds + (size_t)b * h * ts;
        gpu_gemm_batched_typed(ctx, l->precision, 0, 0, t, d, s, scale, ds_b, ELEM_F32, s, ts,
                               sample_k(a, v, b), inner, v.kv_stride, d, 0.0f, sample_q(a, dv, b),
                               inner, dv.q_stride, d, h);
        gpu_gemm_batched_typed(ctx, l->precision, 1, 0, s, d, t, scale, ds_b, ELEM_F32, s, ts,
                               sample_q(a, v, b), inner, v.q_stride, d, 0.0f, sample_k(a, dv, b),
                               inner, dv.kv_stride, d, h);
        gpu_gemm_batched_typed(ctx, l->precision, 1, 0, s, d, t, 1.0f,
                               elem_at(weights, inner, (size_t)b * h * ts), inner, s, ts,
                               elem_at(dheads, inner, (size_t)b * t * c), inner, c, d, 0.0f,
                               sample_v(a, dv, b), inner, dv.kv_stride, d, h);
    }
    /* Input projections: self-attention's one over qkv; cross-attention's over q, then over kv
     * into the memory's gradient (which adds where the memory is the input). */
    if (!a->mem_seq) {
        project_backward(l, ctx, 0, rows, 3 * c, dv.q, 0, layer_input_delta_beta(l, 0));
        return;
    }
    project_backward(l, ctx, 0, rows, c, dv.q, 0, layer_input_delta_beta(l, 0));
    project_backward(l, ctx, 1, ctx->batch * a->mem_seq, 2 * c, dv.k, c,
                     l->in_delta[1] == l->in_delta[0] ? 1.0f : layer_input_delta_beta(l, 1));
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_attention_kernels = {
    .resize = attention_resize_gpu,
    .forward = attention_forward_gpu,
    .backward = attention_backward_gpu,
    .forward_at = attention_forward_at,
    .keeps_rows = 1,
    .gather_samples = attention_gather_samples,
    .stores_16bit = 1,
};
