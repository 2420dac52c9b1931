/* [attention]'s GPU kernels (layers/attention.c has its meaning): the two projections as cuBLAS
 * products over all rows, the heads' products as strided batched cuBLAS products over the heads of
 * one sample (a head's Q, K and V are D columns of qkv, heads D columns apart), and the masked
 * softmax, the dropout mask and the softmax's backward as own kernels
 * (cuda/kernels/attention.cu). The scores are computed for every key and the causal mask applied
 * by the softmax (the CPU skips most masked blocks: the same values). The dropout mask is drawn
 * from the CPU's key and indices (util/rng.h's counter-based draws on the device), so both masks
 * are the same. staged= and packed= choose the CPU's order of work only: the GPU computes the same
 * values either way. forward_at keeps qkv as the key/value cache, as the CPU does: row t of
 * every sample gets its q, k and v, then one block per (sample, head) attends to the rows <= t.
 *
 *   in, out [batch][T][C]   qkv [batch][T][3C]   P, mask [batch][H][T][T]   heads [batch][T][C]
 *   Attention.workspace on the GPU: work of one pass, [batch][H][T][T] for the dropped weights P m
 *   (dropout in training) then [batch][H][T][T] for dS (nets with gradients)
 *   the backward's dL/d(heads) [batch][T][C] and dL/d(qkv) [batch][T][3C] in the net's workspace
 */
#include <math.h>

#include "core/net.h"
#include "gpu.h"
#include "kernels/attention.h"
#include "kernels/dropout.h"
#include "kernels/sequence.h"
#include "layers/attention.h"

static size_t probs_floats(const Attention *a, int batch)
{
    return (size_t)batch * (size_t)a->heads * (size_t)a->seq * (size_t)a->seq;
}

static int attention_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    Attention *a = l->priv;
    if (a->mem_seq)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [attention] with source= (cross-attention) or key_padding= "
                         "has no GPU implementation",
                         l->index);
    const size_t rows = (size_t)batch * (size_t)a->seq, c = (size_t)a->channels;
    const size_t probs = probs_floats(a, batch);
    if (probs > NET_MAX_BATCH_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [attention]: a mini-batch of %d needs more than %zu attention "
                         "weights; lower batch or raise subdivisions",
                         l->index, batch, NET_MAX_BATCH_FLOATS);
    const int grads = l->params[P_WEIGHTS].grad != NULL;
    a->threads = 1;
    a->packed = a->packed_proj = 0;
    a->block = a->seq;
    a->qkv = layer_state_floats(st, rows * 3 * c);
    a->heads_out = layer_state_floats(st, rows * c);
    a->probs = layer_state_floats(st, probs);
    /* Dropout acts in training only, which needs gradients. */
    a->mask = layer_state_floats(st, a->dropout > 0 && grads ? probs : 0);
    a->mask_is_valid = 0;
    a->workspace = layer_work_floats(st, ((a->mask ? 1 : 0) + (grads ? 1 : 0)) * probs);
    a->w_rounded = a->out_w_rounded = a->x_rounded = NULL;
    /* the backward's dL/d(heads) and dL/d(qkv) first; the products' operands are at most qkv,
     * P or the input weights */
    gpu_reserve_scratch(l, batch, rows * 4 * c, size_max(size_max(rows * 3 * c, probs), 3 * c * c));
    a->w_packed = a->out_w_packed = a->w_packed_back = a->out_w_packed_back = NULL;
    return CDL_OK;
}

/* y [rows][n] at y_stride = x [rows][k] at x_stride times w^T ([n][k]) + bias. */
static void project(const StepContext *ctx, GemmPrecision p, const float *x, int x_stride, int rows,
                    int k, int n, const float *w, const float *bias, float *y, int y_stride)
{
    gpu_gemm(ctx, p, 0, 1, rows, n, k, 1.0f, x, x_stride, w, k, 0.0f, y, y_stride);
    gpu_note(ctx, cuda_add_row_vector(y, y, bias, rows, n, (size_t)y_stride, gpu_stream(ctx)),
             "attention biases");
}

static void attention_forward_gpu(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    const int t = a->seq, c = a->channels, h = a->heads, d = a->head_size;
    const int rows = ctx->batch * t;
    const long long tt = (long long)t * t;
    const size_t probs = probs_floats(a, ctx->batch);
    const float scale = 1.0f / sqrtf((float)d);
    a->mask_is_valid = ctx->train && a->dropout > 0 && a->mask;

    project(ctx, l->precision, l->in[0], c, rows, c, 3 * c, l->params[P_WEIGHTS].data,
            l->params[P_BIASES].data, a->qkv, 3 * c);
    /* S = scale Q K^T per (sample, head), into P */
    for (int b = 0; b < ctx->batch; b++) {
        const float *q = a->qkv + (size_t)b * t * 3 * c;
        gpu_gemm_batched(ctx, l->precision, 0, 1, t, t, d, scale, q, 3 * c, d, q + c, 3 * c, d,
                         0.0f, a->probs + (size_t)b * h * tt, t, tt, h);
    }
    gpu_note(ctx,
             cuda_attention_softmax(a->probs, ctx->batch * h * t, t, a->causal, gpu_stream(ctx)),
             "attention softmax");
    const float *weights = a->probs;
    if (a->mask_is_valid) {
        /* [dropout]'s kernel: weight e of the batch's (pairs, T, T) is draw first + e of the
         * layer's key, the CPU's index ((pair + first_pair) T + i) T + j with first =
         * first_pair T T; a captured step keys on the draw id each replay uploads */
        const uint64_t key = rng_key(ctx->seed, layer_draw_stream(ctx, l));
        const uint64_t first = (uint64_t)ctx->sample_offset * (uint64_t)h * (uint64_t)tt;
        const GpuHandles *gh = gpu_handles(ctx);
        gpu_note(ctx,
                 cuda_dropout_forward(a->workspace, a->mask, a->probs, key,
                                      gh->capturing ? &gh->step->draw_id : NULL, ctx->seed,
                                      l->index, first, a->dropout, 1.0f / (1.0f - a->dropout), 1,
                                      probs, gpu_stream(ctx)),
                 "attention dropout");
        weights = a->workspace;
    }
    /* Y = weights V per (sample, head), the heads side by side */
    for (int b = 0; b < ctx->batch; b++) {
        const float *v = a->qkv + (size_t)b * t * 3 * c + 2 * c;
        gpu_gemm_batched(ctx, l->precision, 0, 0, t, d, t, 1.0f, weights + (size_t)b * h * tt, t,
                         tt, v, 3 * c, d, 0.0f, a->heads_out + (size_t)b * t * c, c, d, h);
    }
    project(ctx, l->precision, a->heads_out, c, rows, c, c, l->params[P_OUT_WEIGHTS].data,
            l->params[P_OUT_BIASES].data, l->out, c);
}

static void attention_forward_at(Layer *l, const StepContext *ctx, int t)
{
    Attention *a = l->priv;
    const int c = a->channels, stride = a->seq * c;
    const size_t at = (size_t)t * c;
    /* Row t of every sample: rows of the batch are T rows apart. P's rows hold the scores. */
    project(ctx, l->precision, l->in[0] + at, stride, ctx->batch, c, 3 * c,
            l->params[P_WEIGHTS].data, l->params[P_BIASES].data, a->qkv + 3 * at, 3 * stride);
    gpu_note(ctx,
             cuda_attention_row(a->heads_out, a->probs, a->qkv, ctx->batch, a->seq, c, a->heads, t,
                                gpu_stream(ctx)),
             "attention forward_at");
    project(ctx, l->precision, a->heads_out + at, stride, ctx->batch, c, c,
            l->params[P_OUT_WEIGHTS].data, l->params[P_OUT_BIASES].data, l->out + at, stride);
}

static void attention_backward_gpu(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    const int t = a->seq, c = a->channels, h = a->heads, d = a->head_size;
    const int rows = ctx->batch * t;
    const long long tt = (long long)t * t;
    const size_t probs = probs_floats(a, ctx->batch);
    const float scale = 1.0f / sqrtf((float)d);
    Param *w = &l->params[P_WEIGHTS], *out_w = &l->params[P_OUT_WEIGHTS];
    float *dheads = ctx->exec->workspace;    /* [batch][T][C] */
    float *dqkv = dheads + (size_t)rows * c; /* [batch][T][3C] */
    const float *mask = a->mask_is_valid ? a->mask : NULL;
    float *dropped = a->workspace, *ds = a->workspace + (a->mask ? probs : 0);

    /* Output projection: d out_biases += column sums of delta, d out_weights += delta^T heads,
     * d heads = delta out_weights. */
    gpu_note(ctx,
             cuda_column_sums_add(l->params[P_OUT_BIASES].grad, l->delta, rows, c, gpu_stream(ctx)),
             "attention out_biases gradient");
    gpu_gemm(ctx, l->precision, 1, 0, c, c, rows, 1.0f, l->delta, c, a->heads_out, c, 1.0f,
             out_w->grad, c);
    gpu_gemm(ctx, l->precision, 0, 0, rows, c, c, 1.0f, l->delta, c, out_w->data, c, 0.0f, dheads,
             c);

    const float *weights = a->probs;
    if (mask) {
        gpu_note(ctx, cuda_attention_apply_mask(dropped, a->probs, mask, probs, gpu_stream(ctx)),
                 "attention dropout backward");
        weights = dropped;
    }
    /* dP = dY V^T per (sample, head), then dS through the mask and the softmax */
    for (int b = 0; b < ctx->batch; b++)
        gpu_gemm_batched(ctx, l->precision, 0, 1, t, t, d, 1.0f, dheads + (size_t)b * t * c, c, d,
                         a->qkv + (size_t)b * t * 3 * c + 2 * c, 3 * c, d, 0.0f,
                         ds + (size_t)b * h * tt, t, tt, h);
    gpu_note(ctx,
             cuda_attention_softmax_backward(ds, a->probs, mask, ctx->batch * h * t, t, a->causal,
                                             gpu_stream(ctx)),
             "attention softmax backward");
    /* dQ = scale dS K, dK = scale dS^T Q, dV = weights^T dY per (sample, head): every column of
     * dqkv written */
    for (int b = 0; b < ctx->batch; b++) {
        const float *q = a->qkv + (size_t)b * t * 3 * c, *ds_b = ds + (size_t)b * h * tt;
        float *dq = dqkv + (size_t)b * t * 3 * c;
        gpu_gemm_batched(ctx, l->precision, 0, 0, t, d, t, scale, ds_b, t, tt, q + c, 3 * c, d,
                         0.0f, dq, 3 * c, d, h);
        gpu_gemm_batched(ctx, l->precision, 1, 0, t, d, t, scale, ds_b, t, tt, q, 3 * c, d, 0.0f,
                         dq + c, 3 * c, d, h);
        gpu_gemm_batched(ctx, l->precision, 1, 0, t, d, t, 1.0f, weights + (size_t)b * h * tt, t,
                         tt, dheads + (size_t)b * t * c, c, d, 0.0f, dq + 2 * c, 3 * c, d, h);
    }
    /* Input projection: d biases += column sums of dqkv, d weights += dqkv^T x, d x (+)= dqkv
     * weights. */
    gpu_note(ctx,
             cuda_column_sums_add(l->params[P_BIASES].grad, dqkv, rows, 3 * c, gpu_stream(ctx)),
             "attention biases gradient");
    gpu_gemm(ctx, l->precision, 1, 0, 3 * c, c, rows, 1.0f, dqkv, 3 * c, l->in[0], c, 1.0f, w->grad,
             c);
    if (l->in_delta[0])
        gpu_gemm(ctx, l->precision, 0, 0, rows, c, 3 * c, 1.0f, dqkv, 3 * c, w->data, c,
                 layer_input_delta_beta(l, 0), l->in_delta[0], c);
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_attention_kernels = {
    .resize = attention_resize_gpu,
    .forward = attention_forward_gpu,
    .backward = attention_backward_gpu,
    .forward_at = attention_forward_at,
};
