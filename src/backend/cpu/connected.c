/* [connected]'s CPU kernels (layers/connected.c has its meaning): a gemm (qgemm_float with int8
 * weights) and the bias or batch-norm stage, then the activation.
 *
 *   in  [batch][inputs]   out [batch][outputs]   weights [outputs][inputs]
 */
#include "layers/connected.h"
#include "backend/cpu/bias_norm.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/layer_quant.h"
#include "backend/cpu/qgemm.h"

static int connected_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Connected *fc = l->priv;
    fc->qwork =
        layer_state_bytes(st, l->quant ? qgemm_work_bytes(batch, fc->outputs, fc->inputs) : 0);
    const int rounded = l->precision != GEMM_FP32 && !l->quant;
    fc->w_rounded = layer_state_floats(st, rounded ? l->params[CONNECTED_WEIGHTS].count : 0);
    fc->x_rounded = layer_state_floats(st, rounded ? (size_t)batch * fc->inputs : 0);
    bias_norm_resize(&fc->stage, batch, st);
    return CDL_OK;
}

static void connected_forward(Layer *l, const StepContext *ctx)
{
    Connected *fc = l->priv;
    const int batch = ctx->batch, inputs = fc->inputs, outputs = fc->outputs;
    const float *x = l->in[0];

    /* out[batch][outputs] = x[batch][inputs] * W^T */
    if (l->quant) {
        qgemm_float(&l->quant->matrix, layer_quant_input(l->quant, x, 1, (size_t)batch * inputs, 0),
                    batch, x, inputs, QGEMM_ROWS, l->out, outputs, QGEMM_ROWS, fc->qwork);
    } else {
        const Param *w = &l->params[CONNECTED_WEIGHTS];
        gemm(0, 1, batch, outputs, inputs, 1.0f,
             gemm_operand(l->precision, x, (size_t)batch * inputs, fc->x_rounded), inputs,
             gemm_operand(l->precision, w->data, w->count, fc->w_rounded), inputs, 0.0f, l->out,
             outputs);
    }

    bias_norm_forward(&fc->stage, l, ctx, l->out, layer_activation_input(l));
    layer_activate(l, batch);
}

static void connected_backward(Layer *l, const StepContext *ctx)
{
    Connected *fc = l->priv;
    const int batch = ctx->batch, inputs = fc->inputs, outputs = fc->outputs;

    layer_activation_backward(l, batch);
    bias_norm_backward(&fc->stage, l, ctx, l->delta);
    /* The bias and batch norm took their gradients: only the products read delta from here. */
    const float *delta = gemm_operand(l->precision, l->delta, (size_t)batch * outputs, l->delta);

    const int rounded = l->precision != GEMM_FP32;
    const float *x = rounded ? fc->x_rounded : l->in[0];
    const float *w = rounded ? fc->w_rounded : l->params[CONNECTED_WEIGHTS].data;
    /* dW[outputs][inputs] += delta^T * x */
    gemm(1, 0, outputs, inputs, batch, 1.0f, delta, outputs, x, inputs, 1.0f,
         l->params[CONNECTED_WEIGHTS].grad, inputs);
    float *dx = l->in_delta[0];
    /* dx[batch][inputs] += delta * W, or = when the net left it unzeroed (Layer.in_delta_fresh) */
    if (dx)
        gemm(0, 0, batch, inputs, outputs, 1.0f, delta, outputs, w, inputs,
             layer_input_delta_beta(l, 0), dx, inputs);
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_connected_kernels = {
    .resize = connected_resize,
    .forward = connected_forward,
    .backward = connected_backward,
};
