/* [rnn], [lstm] and [gru]'s GPU kernels (layers/recurrent.c has their meaning): the per-step path
 * of backend/cpu/recurrent.c on the device. Forward projects the inputs of all batch*T rows in one
 * cuBLAS product, then per step multiplies the batch's h_{t-1} by W_hh^T (cuBLAS) and runs the
 * cell's element-wise step (cuda/kernels/recurrent.cu; the rnn's activation through
 * cuda_activation_forward, a launch per sample). Backward runs the steps in reverse, leaving each
 * step's dL/da_t in place of its gate values, then dL/dx and the weight gradients over all rows
 * (dW_hh from h_{t-1} rows gathered by a shift). [lstm] fused= picks the CPU's path: the GPU
 * computes its values (with its tanh formula, fused_formulas) in the per-step order. forward_at
 * runs step t alone from the state the steps before left in out and saved, which gather_samples
 * moves between samples for beam search (device copies). The input and its gradient, and the
 * output and its gradient, are float32 or 16-bit (Layer.in_storage[0], Layer.storage); the
 * recurrence itself stays float32: with a 16-bit output the steps carry h in a float32 copy
 * (Recurrent.h_rows) that out takes rounded, and backward reads the delta into float32.
 *
 *   in [batch][T][I]   out [batch][T][H]   gates, dhh [batch][T][G*H]   saved [batch][T][S*H]
 *   hh [batch][G*H]   dh, dh_carry, dc [batch][H]   work: h_{t-1} rows [batch][T][H]
 * (Recurrent.xh), on layer 0's table the per-id sums [vocab][G*H] (Recurrent.token_rows,
 * token_input)
 */
#include "layers/recurrent.h"

#include "gather_samples.h"
#include "gpu.h"
#include "kernels/copy.h"
#include "kernels/layer_activation.h"
#include "kernels/recurrent.h"
#include "kernels/sequence.h"

/* Floats per hidden unit that a cell's step keeps for backward (the CPU's CellSteps.saved). */
static int saved_of(const Recurrent *rc)
{
    return rc->cell->kind == CELL_LSTM ? 2 : rc->cell->kind == CELL_GRU ? 1 : 0;
}

static int kind_of(const Recurrent *rc)
{
    return rc->cell->kind == CELL_LSTM  ? RECURRENT_LSTM
           : rc->cell->kind == CELL_GRU ? RECURRENT_GRU
                                        : RECURRENT_RNN;
}

/* The CPU runs [lstm] with fused=1 or -1 (its default) on its fused recurrence
 * (backend/cpu/lstm_fused.c), whose tanh is 2 sigmoid(2x) - 1: the GPU takes the same formula
 * there, tanhf (the per-step path's) elsewhere. */
static int fused_formulas(const Recurrent *rc)
{
    return rc->cell->kind == CELL_LSTM && rc->fused != 0;
}

/* Layer 0's [embedding] when the CPU's fused lstm reads its table (Recurrent.embedding): its
 * backward then takes dL/da summed per token id, dW_ih from those sums and E's gradient added
 * into directly (one addition per value, leaving the embedding's delta alone); the GPU does the
 * same. NULL: the input's own rows. */
static const Layer *token_input(const Layer *l)
{
    const Recurrent *rc = l->priv;
    return fused_formulas(rc) ? rc->embedding : NULL;
}

static int recurrent_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Recurrent *rc = l->priv;
    const size_t B = (size_t)batch, T = (size_t)rc->steps, H = (size_t)rc->hidden;
    const size_t GH = (size_t)rc->cell->gates * H, SH = (size_t)saved_of(rc) * H;
    rc->time_major = 0;
    rc->ld_gates = GH;
    rc->ld_saved = SH;
    rc->ld_xh = H;
    rc->gates = layer_state_floats(st, B * T * GH);
    rc->saved = layer_state_floats(st, B * T * SH);
    rc->dhh = rc->cell->kind == CELL_GRU ? layer_state_floats(st, B * T * GH) : rc->gates;
    rc->hh = layer_state_floats(st, B * GH);
    rc->dh = layer_state_floats(st, B * H);
    rc->dh_carry = layer_state_floats(st, B * H);
    rc->dc = layer_state_floats(st, B * H);
    const int grads = l->params[P_WEIGHTS_IH].grad != NULL, half = l->storage != ELEM_F32;
    rc->h_rows = layer_state_floats(st, half ? B * T * H : 0);
    rc->dy_rows = layer_work_floats(st, half && grads ? B * T * H : 0);
    rc->xh = layer_work_floats(st, grads ? B * T * H : 0);
    const Layer *emb = token_input(l);
    rc->token_rows = layer_work_floats(st, grads && emb ? (size_t)emb->params[0].dims[0] * GH : 0);
    rc->zeros = rc->w_ih_rounded = rc->w_hh_rounded = rc->x_rounded = rc->h_rounded = NULL;
    rc->w_hh_packed = rc->dx_tm = rc->wcat = rc->tiles = rc->bias = NULL;
    rc->token_of = NULL;
    /* the products' operands: rows of x, gates or h, W_ih and W_hh, and the per-id sums and the
     * embedding's table where token_input reads it */
    const size_t I = (size_t)rc->inputs;
    size_t largest = size_max(B * T * size_max(I, GH), GH * size_max(I, H));
    if (emb)
        largest = size_max(largest, (size_t)emb->params[0].dims[0] * size_max(GH, I));
    gpu_reserve_scratch(l, batch, 0, largest);
    return CDL_OK;
}

/* The outputs h [batch][T][H] in float32, as the steps write and read them: out, or its float32
 * copy where out is 16-bit. */
static float *h_rows(const Layer *l)
{
    const Recurrent *rc = l->priv;
    return rc->h_rows ? rc->h_rows : l->out;
}

/* Rounds rows [t, t + steps) of every sample's float32 h into the 16-bit out (nothing where out is
 * float32: the steps wrote it). */
static cudaError_t store_outputs(Layer *l, int batch, int t, int steps, cudaStream_t stream)
{
    const Recurrent *rc = l->priv;
    const size_t TH = (size_t)rc->steps * rc->hidden, at = (size_t)t * rc->hidden;
    if (!rc->h_rows)
        return cudaSuccess;
    return cuda_convert_rows(elem_at(l->out, l->storage, at), l->storage, TH, rc->h_rows + at,
                             ELEM_F32, TH, batch, (size_t)steps * rc->hidden, 0, stream);
}

/* Step t of every sample from gates row t (W_ih x_t) and the state of step t - 1. */
static void step_forward(Layer *l, const StepContext *ctx, int t)
{
    Recurrent *rc = l->priv;
    const int batch = ctx->batch, T = rc->steps, H = rc->hidden, G = rc->cell->gates;
    float *h = h_rows(l);
    /* hh[batch][G*H] = h_{t-1} W_hh^T, the rows h_{t-1} of the batch T*H apart */
    if (t > 0)
        gpu_gemm(ctx, l->precision, 0, 1, batch, G * H, H, 1.0f, h + (size_t)(t - 1) * H, T * H,
                 l->params[P_WEIGHTS_HH].data, H, 0.0f, rc->hh, G * H);
    gpu_note(ctx,
             cuda_recurrent_step_forward(kind_of(rc), fused_formulas(rc), rc->gates,
                                         t > 0 ? rc->hh : NULL, l->params[P_BIASES_IH].data,
                                         l->params[P_BIASES_HH].data, rc->saved, h, batch, T, H, G,
                                         saved_of(rc), t, gpu_stream(ctx)),
             "recurrent step");
    if (rc->cell->kind != CELL_RNN)
        return;
    for (int b = 0; b < batch; b++) {
        const size_t row = ((size_t)b * T + (size_t)t) * H;
        gpu_note(ctx,
                 cuda_activation_forward(h + row, ELEM_F32, rc->gates + row, ELEM_F32, (size_t)H,
                                         (int)l->activation, gpu_stream(ctx)),
                 "rnn activation");
    }
}

static void recurrent_forward_gpu(Layer *l, const StepContext *ctx)
{
    Recurrent *rc = l->priv;
    const int rows = ctx->batch * rc->steps, I = rc->inputs, GH = rc->cell->gates * rc->hidden;
    /* gates[batch*T][G*H] = x[batch*T][I] W_ih^T */
    gpu_gemm_typed(ctx, l->precision, 0, 1, rows, GH, I, 1.0f, l->in[0], l->in_storage[0], I,
                   l->params[P_WEIGHTS_IH].data, ELEM_F32, I, 0.0f, rc->gates, ELEM_F32, GH);
    for (int t = 0; t < rc->steps; t++)
        step_forward(l, ctx, t);
    gpu_note(ctx, store_outputs(l, ctx->batch, 0, rc->steps, gpu_stream(ctx)), "recurrent output");
}

static void recurrent_forward_at(Layer *l, const StepContext *ctx, int t)
{
    Recurrent *rc = l->priv;
    const int T = rc->steps, I = rc->inputs, GH = rc->cell->gates * rc->hidden;
    /* gates row t of every sample = x_t W_ih^T */
    gpu_gemm_typed(ctx, l->precision, 0, 1, ctx->batch, GH, I, 1.0f,
                   elem_at(l->in[0], l->in_storage[0], (size_t)t * I), l->in_storage[0], T * I,
                   l->params[P_WEIGHTS_IH].data, ELEM_F32, I, 0.0f, rc->gates + (size_t)t * GH,
                   ELEM_F32, T * GH);
    step_forward(l, ctx, t);
    gpu_note(ctx, store_outputs(l, ctx->batch, t, 1, gpu_stream(ctx)), "recurrent output");
}

/* Backpropagation through time, then the gradients over all batch*T rows. */
static void recurrent_backward_gpu(Layer *l, const StepContext *ctx)
{
    Recurrent *rc = l->priv;
    const int batch = ctx->batch, T = rc->steps, I = rc->inputs, H = rc->hidden;
    const int G = rc->cell->gates, GH = G * H, rows = batch * T;
    cudaStream_t stream = gpu_stream(ctx);
    const size_t state_bytes = (size_t)batch * H * sizeof(float);
    gpu_note(ctx, cudaMemsetAsync(rc->dh_carry, 0, state_bytes, stream), "recurrent backward");
    gpu_note(ctx, cudaMemsetAsync(rc->dc, 0, state_bytes, stream), "recurrent backward");
    float *h = h_rows(l), *dy = rc->dy_rows ? rc->dy_rows : l->delta;
    if (rc->dy_rows)
        gpu_note(ctx,
                 cuda_convert_rows(dy, ELEM_F32, 0, l->delta, l->storage, 0, 1, (size_t)rows * H, 0,
                                   stream),
                 "recurrent delta");
    for (int t = T - 1; t >= 0; t--) {
        gpu_note(ctx,
                 cuda_recurrent_step_backward(kind_of(rc), rc->gates, rc->dhh, rc->saved, h, dy,
                                              rc->dh, rc->dh_carry, rc->dc, batch, T, H, G,
                                              saved_of(rc), t, stream),
                 "recurrent step backward");
        if (rc->cell->kind == CELL_RNN) {
            for (int b = 0; b < batch; b++) {
                const size_t row = ((size_t)b * T + (size_t)t) * H;
                gpu_note(ctx,
                         cuda_activation_backward(rc->dh + (size_t)b * H, rc->gates + row, ELEM_F32,
                                                  h + row, ELEM_F32, (size_t)H, (int)l->activation,
                                                  stream),
                         "rnn activation backward");
            }
            gpu_note(ctx, cuda_recurrent_store(rc->gates, rc->dh, batch, T, H, t, stream),
                     "rnn step backward");
        }
        /* dh_carry[batch][H] += dL/d(W_hh h_{t-1}) W_hh */
        if (t > 0)
            gpu_gemm(ctx, l->precision, 0, 0, batch, H, GH, 1.0f, rc->dhh + (size_t)t * GH, T * GH,
                     l->params[P_WEIGHTS_HH].data, H, 1.0f, rc->dh_carry, H);
    }
    /* The biases: column sums of dL/da (b_ih) and of dL/d(W_hh h) (b_hh: the same but the gru's).
     */
    gpu_note(ctx, cuda_column_sums_add(l->params[P_BIASES_IH].grad, rc->gates, rows, GH, stream),
             "recurrent biases_ih gradient");
    gpu_note(ctx, cuda_column_sums_add(l->params[P_BIASES_HH].grad, rc->dhh, rows, GH, stream),
             "recurrent biases_hh gradient");
    const Layer *emb = token_input(l);
    if (emb) {
        /* sums[vocab][G*H] = dL/da summed per token id (in row order), dW_ih += sums^T E,
         * E's gradient += sums W_ih */
        const Param *e = &emb->params[0];
        const int vocab = (int)e->dims[0];
        gpu_note(ctx,
                 cudaMemsetAsync(rc->token_rows, 0, (size_t)vocab * GH * sizeof(float), stream),
                 "lstm token sums");
        gpu_note(ctx,
                 cuda_embedding_grad(rc->token_rows, rc->gates, ELEM_F32, emb->in[0], rows,
                                     (size_t)rows, vocab, GH, rows, stream),
                 "lstm token sums");
        gpu_gemm(ctx, l->precision, 1, 0, GH, I, vocab, 1.0f, rc->token_rows, GH, e->data, I, 1.0f,
                 l->params[P_WEIGHTS_IH].grad, I);
        if (e->grad)
            gpu_gemm(ctx, l->precision, 0, 0, vocab, I, GH, 1.0f, rc->token_rows, GH,
                     l->params[P_WEIGHTS_IH].data, I, 1.0f, e->grad, I);
    } else {
        /* dx[batch*T][I] += da W_ih, dW_ih += da^T x */
        if (l->in_delta[0])
            gpu_gemm_typed(ctx, l->precision, 0, 0, rows, I, GH, 1.0f, rc->gates, ELEM_F32, GH,
                           l->params[P_WEIGHTS_IH].data, ELEM_F32, I, 1.0f, l->in_delta[0],
                           l->in_storage[0], I);
        gpu_gemm_typed(ctx, l->precision, 1, 0, GH, I, rows, 1.0f, rc->gates, ELEM_F32, GH,
                       l->in[0], l->in_storage[0], I, 1.0f, l->params[P_WEIGHTS_IH].grad, ELEM_F32,
                       I);
    }
    /* dW_hh += dhh^T h_prev */
    gpu_note(ctx, cuda_recurrent_shift(rc->xh, h, batch, T, H, stream), "recurrent h_prev");
    gpu_gemm(ctx, l->precision, 1, 0, GH, H, rows, 1.0f, rc->dhh, GH, rc->xh, H, 1.0f,
             l->params[P_WEIGHTS_HH].grad, H);
}

/* Beam search's reordering of the state (LayerKernels.gather_samples): each sample's outputs
 * h [T][H] (the float32 ones, then rounded again into a 16-bit out) and, for [lstm] and [gru], its
 * saved values [T][S*H]. */
static size_t recurrent_gather_samples(Layer *l, const ExecContext *exec, int batch,
                                       const int *from, int n, float *scratch)
{
    (void)batch;
    const Recurrent *rc = l->priv;
    const size_t T = (size_t)rc->steps, H = (size_t)rc->hidden, SH = (size_t)saved_of(rc) * H;
    const size_t out =
        gpu_gather_sample_blocks(exec, h_rows(l), T * H * sizeof(float), from, n, scratch);
    if (scratch)
        gpu_note_exec(exec, store_outputs(l, n, 0, rc->steps, (cudaStream_t)exec->stream),
                      "beam search's cache gather");
    const size_t saved =
        SH ? gpu_gather_sample_blocks(exec, rc->saved, T * SH * sizeof(float), from, n, scratch)
           : 0;
    return out > saved ? out : saved;
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up for rnn, lstm and gru). */
const LayerKernels gpu_recurrent_kernels = {
    .resize = recurrent_resize_gpu,
    .forward = recurrent_forward_gpu,
    .backward = recurrent_backward_gpu,
    .forward_at = recurrent_forward_at,
    .gather_samples = recurrent_gather_samples,
    .keeps_rows = 1,
    .stores_16bit = 1,
};
