/* The bias or batch-norm stage on the CPU (layers/bias_norm.h): tensors [batch][channels][spatial].
 */
#ifndef CDL_CPU_BIAS_NORM_H
#define CDL_CPU_BIAS_NORM_H

#include "layers/bias_norm.h"

/* Takes x_hat and inv_std from st (batch norm only; see LayerState). */
void bias_norm_resize(BiasNorm *bn, int batch, LayerState *st);
/* y = x + bias, or batch norm in the net's mode (training: batch statistics, moving the
 * running ones). y may equal x. */
void bias_norm_forward(BiasNorm *bn, Layer *l, const StepContext *ctx, const float *x, float *y);
/* Batch norm only, inference mode: its running statistics folded into the weights w
 * [channels][per_channel] of the product before it (batchnorm_fold), into w_out and the bias
 * b_out [channels]. */
void bias_norm_fold(const BiasNorm *bn, Layer *l, const StepContext *ctx, const float *w,
                    size_t per_channel, float *w_out, float *b_out);
/* Adds the parameter gradients and turns delta from dL/dy into dL/dx in place. */
void bias_norm_backward(const BiasNorm *bn, Layer *l, const StepContext *ctx, float *delta);
/* Where the product before the stage writes its output [batch][channels][spatial]: x_hat's
 * buffer when bias_norm_forward_activated will take the stage and activation in one (training;
 * the normalising pass then writes only l->out, and the backward remakes x_hat from the kept
 * input), else l->out. */
float *bias_norm_product_output(const BiasNorm *bn, Layer *l, const StepContext *ctx);
/* The stage and l's activation in one: when batch norm trains and the activation is leaky or
 * relu, l->out = f(batch norm of x) in the normalising pass (l->pre unwritten: the derivative
 * comes from x_hat; x may equal l->out, or be bias_norm_product_output's x_hat buffer), returning
 * 1; else 0, having done nothing (the caller runs bias_norm_forward and layer_activate). */
int bias_norm_forward_activated(BiasNorm *bn, Layer *l, const StepContext *ctx, const float *x);
/* The backward of the same: delta from dL/d(l->out) to dL/dx in place through the activation
 * and the batch norm together, returning 1; else 0, having done nothing (the caller runs
 * layer_activation_backward and bias_norm_backward). */
int bias_norm_backward_activated(const BiasNorm *bn, Layer *l, const StepContext *ctx,
                                 float *delta);
#endif
