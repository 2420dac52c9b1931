/* [linear]'s GPU kernels (layers/linear.c has its meaning): a dense layer on every row through
 * cuBLAS, the biases added to the rows, then the activation. With tie=1, W is layer 0's
 * [embedding] weights: the forward reads them and the backward adds into their gradient (before
 * the embedding's own backward, which adds after it). Input and output each float32 or 16-bit
 * (Layer.in_storage, Layer.storage: a 16-bit input is the product's operand as it is). int8
 * weights have no GPU kernels yet and are refused at resize.
 *
 *   in  [batch][rows][inputs]   out [batch][rows][output]   out[b][r] = act(in[b][r] W^T + biases)
 *   W [output][inputs]   biases [output]
 */
#include "layers/linear.h"

#include "gpu.h"
#include "kernels/layer_activation.h"
#include "kernels/sequence.h"
#include "layer_activation.h"

/* The weights W [output][inputs]: the layer's own, or the tied [embedding]'s. */
static const Param *weights_of(Layer *l)
{
    const Linear *li = l->priv;
    return li->tied ? li->tied : layer_param(l, "weights");
}

static int linear_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)st;
    const Linear *li = l->priv;
    if (l->quant)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [linear] with int8 weights has no GPU implementation", l->index);
    const size_t in = (size_t)batch * shape_size(l->in_shape);
    const size_t out = (size_t)batch * shape_size(l->out_shape);
    gpu_reserve_scratch(l, batch, 0,
                        size_max(size_max(in, out), (size_t)li->outputs * (size_t)li->inputs));
    return CDL_OK;
}

/* y rows [rows][output] at y_stride = x rows [rows][inputs] at x_stride times W^T, plus the
 * biases; x of the input's type, y of the activation input's (layer_pre_storage). */
static void linear_rows_gpu(Layer *l, const StepContext *ctx, const void *x, int x_stride, void *y,
                            int y_stride, int rows)
{
    const Linear *li = l->priv;
    const Param *biases = layer_param(l, "biases");
    const ElemType y_type = layer_pre_storage(l);
    gpu_gemm_typed(ctx, l->precision, 0, 1, rows, li->outputs, li->inputs, 1.0f, x,
                   l->in_storage[0], x_stride, weights_of(l)->data, ELEM_F32, li->inputs, 0.0f, y,
                   y_type, y_stride);
    if (biases)
        gpu_note(ctx,
                 cuda_add_row_vector_typed(y, y_type, y, y_type, biases->data, rows, li->outputs,
                                           (size_t)y_stride, gpu_stream(ctx)),
                 "linear biases");
}

static void linear_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Linear *li = l->priv;
    const int rows = ctx->batch * l->in_shape.c * l->in_shape.h;
    linear_rows_gpu(l, ctx, l->in[0], li->inputs, layer_activation_input(l), li->outputs, rows);
    gpu_layer_activate(l, ctx);
}

/* Row t of each sample: samples are in_sample and out_sample floats apart. */
static void linear_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const Linear *li = l->priv;
    const int in_sample = (int)shape_size(l->in_shape), out_sample = (int)shape_size(l->out_shape);
    const size_t at = (size_t)t * li->outputs;
    const ElemType pre_type = layer_pre_storage(l);
    linear_rows_gpu(l, ctx, elem_at(l->in[0], l->in_storage[0], (size_t)t * li->inputs), in_sample,
                    elem_at(layer_activation_input(l), pre_type, at), out_sample, ctx->batch);
    if (!l->pre || l->activation == CDL_ACT_LINEAR)
        return;
    for (int b = 0; b < ctx->batch; b++) {
        const size_t row = (size_t)b * out_sample + at;
        gpu_note(ctx,
                 cuda_activation_forward(elem_at(l->out, l->storage, row), l->storage,
                                         elem_at(l->pre, pre_type, row), pre_type,
                                         (size_t)li->outputs, (int)l->activation, gpu_stream(ctx)),
                 "linear activation forward_at");
    }
}

static void linear_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Linear *li = l->priv;
    const int rows = ctx->batch * l->in_shape.c * l->in_shape.h;
    const int inputs = li->inputs, outputs = li->outputs;
    const Param *biases = layer_param(l, "biases"), *weights = weights_of(l);
    gpu_layer_activation_backward(l, ctx);
    if (biases)
        gpu_note(ctx,
                 cuda_column_sums_add_typed(biases->grad, l->delta, l->storage, rows, outputs,
                                            (size_t)outputs, gpu_stream(ctx)),
                 "linear biases gradient");
    /* dW[outputs][inputs] += delta^T x */
    gpu_gemm_typed(ctx, l->precision, 1, 0, outputs, inputs, rows, 1.0f, l->delta, l->storage,
                   outputs, l->in[0], l->in_storage[0], inputs, 1.0f, weights->grad, ELEM_F32,
                   inputs);
    /* dx[rows][inputs] += delta W, or = where the net left it unzeroed (Layer.in_delta_fresh) */
    if (l->in_delta[0])
        gpu_gemm_typed(ctx, l->precision, 0, 0, rows, inputs, outputs, 1.0f, l->delta, l->storage,
                       outputs, weights->data, ELEM_F32, inputs, layer_input_delta_beta(l, 0),
                       l->in_delta[0], l->in_storage[0], inputs);
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_linear_kernels = {
    .resize = linear_resize_gpu,
    .forward = linear_forward_gpu,
    .backward = linear_backward_gpu,
    .forward_at = linear_forward_at,
    .stores_16bit = 1,
};
