/* [linear]'s CPU kernels (layers/linear.c has its meaning): a dense layer on every row.
 *
 *   in  [batch][rows][inputs]
 *   out [batch][rows][output]  out[b][r] = act(in[b][r] W^T + biases)
 *   W [output][inputs]: the layer's weights, or with tie=1 layer 0's [embedding] weights, which
 *   the forward reads and whose gradient the backward adds into
 *
 * In float32 (not int8, not bf16) the forward and the input gradient run on backend/cpu/gemm_rows:
 * W packed once per pass (backend/cpu/gemm_packed), the biases and the activation (its derivative
 * in the backward, with the biases' gradient) fused into the product's blocks of rows; the weight
 * gradient is backend/cpu/gemm_tn's (an own kernel with AVX-512, else OpenBLAS).
 *
 * precision=bf16 (Layer.precision): the products take the weights, the input and delta rounded
 * to bf16 (gemm_operand); the biases and the activation stay float32. */
#include "layers/linear.h"

#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_packed.h"
#include "backend/cpu/gemm_rows.h"
#include "backend/cpu/gemm_tn.h"
#include "backend/cpu/layer_quant.h"
#include "backend/cpu/qgemm.h"
#include "backend/cpu/sum_rows.h"

/* Below this many values a parallel region costs more than it saves. */
#define LINEAR_PARALLEL_MIN 32768

/* The weights W [output][inputs]: the layer's own, or the tied [embedding]'s. */
static const Param *weights_of(Layer *l)
{
    const Linear *li = l->priv;
    return li->tied ? li->tied : layer_param(l, "weights");
}

/* 1 when the forward and the input gradient run on backend/cpu/gemm_rows (float32 products). */
static int packed_path(const Layer *l)
{
    return !l->quant && l->precision == GEMM_FP32;
}

static int linear_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Linear *li = l->priv;
    const int rows = batch * l->in_shape.c * l->in_shape.h;
    li->qwork =
        layer_state_bytes(st, l->quant ? qgemm_work_bytes(rows, li->outputs, li->inputs) : 0);
    const int rounded = l->precision != GEMM_FP32 && !l->quant;
    li->w_rounded = layer_state_floats(st, rounded ? (size_t)li->outputs * li->inputs : 0);
    li->x_rounded = layer_state_floats(st, rounded ? (size_t)rows * li->inputs : 0);
    const size_t fwd = gemm_packed_floats(li->inputs, li->outputs),
                 bwd = gemm_packed_floats(li->outputs, li->inputs);
    li->w_packed = layer_kept_floats(st, packed_path(l) ? fwd : 0);
    li->w_packed_back = layer_kept_floats(st, packed_path(l) ? bwd : 0);
    li->bias_sums = layer_work_floats(st, packed_path(l) && li->has_biases
                                              ? gemm_act_backward_sums_floats(rows, li->outputs)
                                              : 0);
    return CDL_OK;
}

/* y[rows][outputs] = x[rows][inputs] W^T + biases, rows strided by x_stride and y_stride; in bf16
 * with the weights forward rounded and x's rows rounded into x_rounded first. */
static void linear_rows(Layer *l, const float *x, int x_stride, float *y, int y_stride, int rows)
{
    const Linear *li = l->priv;
    const Param *biases = layer_param(l, "biases");
    if (l->quant) {
        const QuantParams xq =
            layer_quant_input(l->quant, x, (size_t)rows, (size_t)li->inputs, (size_t)x_stride);
        qgemm_float(&l->quant->matrix, xq, rows, x, x_stride, QGEMM_ROWS, y, y_stride, QGEMM_ROWS,
                    li->qwork);
        for (int r = 0; biases && r < rows; r++)
            for (int j = 0; j < li->outputs; j++)
                y[(size_t)r * y_stride + j] += biases->data[j];
        return;
    }
    if (biases) {
#pragma omp parallel for schedule(static) if ((long)rows * li->outputs > LINEAR_PARALLEL_MIN)
        for (int r = 0; r < rows; r++)
            memcpy(y + (size_t)r * y_stride, biases->data, (size_t)li->outputs * sizeof *y);
    }
    const float *w = weights_of(l)->data;
    if (l->precision != GEMM_FP32) {
        for (int r = 0; r < rows; r++)
            gemm_operand(l->precision, x + (size_t)r * x_stride, (size_t)li->inputs,
                         li->x_rounded + (size_t)r * li->inputs);
        x = li->x_rounded, x_stride = li->inputs, w = li->w_rounded;
    }
    gemm(0, 1, rows, li->outputs, li->inputs, 1.0f, x, x_stride, w, li->inputs,
         biases ? 1.0f : 0.0f, y, y_stride);
}

static void linear_forward(Layer *l, const StepContext *ctx)
{
    const Linear *li = l->priv;
    const int rows = ctx->batch * l->in_shape.c * l->in_shape.h;
    const Param *w = weights_of(l);
    if (packed_path(l)) {
        const Param *biases = layer_param(l, "biases");
        if (!ctx->same_weights)
            gemm_pack(1, li->inputs, li->outputs, w->data, li->inputs, li->w_packed);
        gemm_bias_act(rows, li->outputs, li->inputs, l->in[0], li->inputs, li->w_packed,
                      biases ? biases->data : NULL, l->activation, layer_activation_input(l),
                      l->out);
        return;
    }
    gemm_operand(l->quant ? GEMM_FP32 : l->precision, w->data, w->count, li->w_rounded);
    linear_rows(l, l->in[0], li->inputs, layer_activation_input(l), li->outputs, rows);
    layer_activate(l, ctx->batch);
}

static void linear_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const Linear *li = l->priv;
    const int in_sample = (int)shape_size(l->in_shape), out_sample = (int)shape_size(l->out_shape);
    linear_rows(l, l->in[0] + (size_t)t * li->inputs, in_sample,
                layer_activation_input(l) + (size_t)t * li->outputs, out_sample, ctx->batch);
    layer_activate_row(l, ctx->batch, t);
}

static void linear_backward(Layer *l, const StepContext *ctx)
{
    const Linear *li = l->priv;
    const int rows = ctx->batch * l->in_shape.c * l->in_shape.h;
    const int inputs = li->inputs, outputs = li->outputs;
    const Param *biases = layer_param(l, "biases"), *weights = weights_of(l);
    float *dx = l->in_delta[0];
    const float dx_beta = layer_input_delta_beta(l, 0);
    if (packed_path(l)) {
        /* delta = dL/d(pre), the biases' sums and dx += delta W block by block; then W's sums. */
        if (!ctx->same_weights)
            gemm_pack(0, outputs, inputs, weights->data, inputs, li->w_packed_back);
        gemm_act_backward(rows, inputs, outputs, l->delta, l->pre, l->out, l->activation,
                          li->w_packed_back, dx_beta, dx, biases ? biases->grad : NULL,
                          li->bias_sums);
        dx = NULL;
    } else {
        layer_activation_backward(l, ctx->batch);
        if (biases)
            sum_rows_add(biases->grad, l->delta, (size_t)rows, (size_t)outputs);
    }
    /* The biases took their gradients: only the products read delta from here. */
    const float *delta = gemm_operand(l->precision, l->delta, (size_t)rows * outputs, l->delta);
    const int rounded = l->precision != GEMM_FP32;
    const float *x = rounded ? li->x_rounded : l->in[0],
                *w = rounded ? li->w_rounded : weights->data;
    /* dW[outputs][inputs] += delta^T x (backend/cpu/gemm_tn) */
    gemm_tn(outputs, inputs, rows, delta, outputs, x, inputs, 1.0f, weights->grad, inputs);
    /* dx[rows][inputs] += delta W (unless backend/cpu/gemm_rows took it) */
    if (dx)
        gemm(0, 0, rows, inputs, outputs, 1.0f, delta, outputs, w, inputs, dx_beta, dx, inputs);
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_linear_kernels = {
    .resize = linear_resize,
    .forward = linear_forward,
    .backward = linear_backward,
    .forward_at = linear_forward_at,
};
