/* The per-channel stage that follows a convolution or connected product: a bias, or (with
 * batch_normalize=1) batch normalisation whose shift is that bias. It is also the whole
 * [batchnorm] layer. Tensors are [batch][channels][spatial]. */
#ifndef CDL_BIAS_NORM_H
#define CDL_BIAS_NORM_H

#include "core/layer.h"
#include "core/net.h"
#include "core/onnx_graph.h"

typedef struct BiasNorm {
    int batch_normalize;
    int first_param;       /* index of "biases" in l->params; with batch norm "scales",
                              "rolling_mean" and "rolling_variance" follow it */
    int channels, spatial; /* per sample */
    float *x_hat;          /* [batch][channels][spatial], batch norm only (net's slab) */
    float *inv_std;        /* [channels], batch norm only (net's slab) */
    double *sync_sums;     /* [2 * channels + 1], batch norm only: sync_bn's BnSync.buf */
    float *mean;           /* [channels], batch norm only: the batch mean, with keeps_input */
    int keeps_input;       /* this step's fused forward normalised x_hat's own floats (the
                              product's output, bias_norm_product_output) and kept them there */
} BiasNorm;

/* Declares the parameters on l (biases; with batch norm also scales and the running
 * statistics). */
void bias_norm_declare(BiasNorm *bn, Layer *l, int batch_normalize, int channels, int spatial);
/* biases 0, scales 1, running mean 0, running variance 1. */
void bias_norm_init(const BiasNorm *bn, Layer *l);
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
/* ONNX: without batch norm, adds the biases [channels] as an initializer for the caller's
 * Conv B or Gemm C input (name receives it); with batch norm, y = BatchNormalization(x) in
 * inference mode (running statistics, epsilon bn_eps; 0 with bn_darknet). */
void bias_norm_onnx_biases(const BiasNorm *bn, const Layer *l, OnnxGraph *g,
                           char name[ONNX_NAME_MAX]);
void bias_norm_onnx_batchnorm(const BiasNorm *bn, const Layer *l, const Net *net, OnnxGraph *g,
                              const char *x, const char *y);

#endif
