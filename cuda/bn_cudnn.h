/* Batch norm on cuDNN (gpu_engine=cudnn): the batch-norm stage (cuda/bias_norm.h) of
 * [convolutional] and [batchnorm] through cuDNN's spatial batch norm (the legacy API:
 * cudnnBatchNormalizationForwardTraining, ForwardInference, Backward, CUDNN_BATCHNORM_SPATIAL),
 * wherever it computes cdl's meaning; bn_cudnn_refusal says where it does not, and the stage
 * runs on cdl's own kernels there. Not in a GPU=sim build (no cuDNN there): this header declares
 * nothing then.
 *
 *   x, y, dy, dx  [batch][channels][spatial], or [batch][spatial][channels] (channels-last):
 *                 described as N x C x H x W = batch x channels x spatial x 1, packed NCHW or NHWC
 *   scale, bias, running mean and variance, batch mean and inv_std  [channels] float32
 *                 (cudnnDeriveBNTensorDescriptor's 1 x C x 1 x 1)
 *
 * The meaning is cdl's default one (PyTorch's, backend/cpu/bn_math.h), which is cuDNN's: training
 * normalises with the biased batch variance, 1/sqrt(var + bn_eps), and moves the running mean and
 * the unbiased running variance by bn_momentum, cuDNN's exponential average factor (running =
 * (1 - factor) running + factor batch); inference divides by sqrt(running var + bn_eps); cuDNN's
 * saved mean and inverse variance are cdl's BiasNorm.mean and inv_std. Where they differ:
 * - cuDNN sums the statistics (and the backward's sums) in float32 in its own order, cdl's
 *   kernels in double in a fixed order: the results agree within float32 round-off of sums of
 *   batch * spatial terms, about u sqrt(batch * spatial) relative (u = 2^-24), which
 *   test_backend_ops's float32 tolerance takes for every layer;
 * - cuDNN's backward takes the normalisation's input x (with the saved mean and inv_std) where cdl
 *   keeps x_hat: the forward copies x, in its type, into the stage's x_hat buffer (of float32
 *   size, so any type fits; the buffer is not otherwise used on cuDNN), and cuDNN normalises that
 *   copy, so the stage may still write y over x. The copy is exact (recomputing x from x_hat as
 *   x_hat / inv_std + mean would cost the same pass and err by about u |mean| inv_std of x_hat,
 *   unbounded against x_hat where a channel's mean is far from 0);
 * - cdl's darknet formula (bn_darknet=1), a channel of one value, bf16 and mixed types: the
 *   own kernels (bn_cudnn_refusal).
 * Only the legacy non-Ex calls: the Ex variants' fused activation is cuDNN's relu alone (cdl's
 * activation is a stage of its own, any of them), and their NHWC fast path wants fp16 with
 * channels a multiple of 4 and a reserve buffer; the plain calls take both layouts. The forward
 * in inference and the backward where dx is dy (a convolution's stage works in place) or not
 * wanted give cuDNN separate buffers: cuDNN documents no in-place batch norm. */
#ifndef CDL_CUDA_BN_CUDNN_H
#define CDL_CUDA_BN_CUDNN_H

#ifndef CDL_GPU_SIM
#include <cudnn.h>

#include "core/layer.h"

/* What decides whether cuDNN's batch norm computes cdl's (bn_cudnn_refusal). */
typedef struct BnCudnnCase {
    int darknet; /* [net] bn_darknet */
    float eps;   /* [net] bn_eps */
    int batch, channels, spatial;
    ElemType x, y, dy; /* the types of the stage's input (and of its gradient), output, and the
                          output's gradient */
} BnCudnnCase;

/* NULL where cuDNN's batch norm computes cdl's for case c; else why not, a phrase (the stage then
 * runs on cdl's kernels): darknet's formula; bn_eps below CUDNN_BN_MIN_EPSILON; bf16 tensors
 * (cuDNN documents its batch norm for float, half and double tensors with float statistics, and
 * PyTorch keeps bf16 off it); tensors of different types (cuDNN's configurations give x, y, dy
 * and dx one type); a channel of one value in the batch (cuDNN's unbiased variance divides by
 * n - 1); a batch above 65535 (cuDNN's spatial inference grid, PyTorch's limit) or over 2^31 - 1
 * values (its 32-bit indexing). */
const char *bn_cudnn_refusal(const BnCudnnCase *c);

/* A stage's cuDNN descriptors and what they describe. */
typedef struct BnCudnn {
    cudnnTensorDescriptor_t x;      /* x, y, dy and dx */
    cudnnTensorDescriptor_t params; /* scale, bias and the statistics, derived from x */
    int batch;                      /* described, 0: not (the stage runs on cdl's kernels) */
    int channels, spatial;
    ElemType type; /* of x, y, dy and dx: float32 or fp16 */
    int nhwc;      /* 1: [batch][spatial][channels] */
} BnCudnn;

/* Creates c's descriptors if they are not yet and describes batch samples of channels x spatial
 * values of type in layout nhwc; no handle, no device. Returns CDL_OK, or CDL_ERUNTIME naming
 * layer l and cuDNN's status (c->batch 0 then). */
int bn_cudnn_describe(BnCudnn *c, const Layer *l, int batch, int channels, int spatial,
                      ElemType type, int nhwc, Error *e);

/* Bytes of the net's workspace c's passes use from its start: one tensor of c's type, the copy of
 * dy where dx is dy, or the dx that is not wanted. */
size_t bn_cudnn_scratch_bytes(int batch, int channels, int spatial, ElemType type);

/* Destroys c's descriptors (none made: nothing). */
void bn_cudnn_release(BnCudnn *c);

/* 1 when a pass of ctx over tensors of types x, y and dy runs on c: c describes ctx's batch and
 * those types, and bn_cudnn_refusal allows ctx's batch-norm settings. */
int bn_cudnn_takes(const BnCudnn *c, const StepContext *ctx, ElemType x, ElemType y, ElemType dy);

/* Training: x_keep = x (c's type, the stage's x_hat buffer), then y = the normalised x_keep,
 * mean and inv_std [channels] its batch's, and the running statistics moved unless ctx->replay. */
void bn_cudnn_forward_train(const BnCudnn *c, const StepContext *ctx, const void *x, void *y,
                            void *x_keep, const float *scale, const float *bias, float *mean,
                            float *inv_std, float *running_mean, float *running_var);

/* Inference: y = (x - running_mean) / sqrt(running_var + eps) * scale + bias; y may be x (x is
 * then copied into x_keep first). */
void bn_cudnn_forward_eval(const BnCudnn *c, const StepContext *ctx, const void *x, void *y,
                           void *x_keep, const float *scale, const float *bias,
                           const float *running_mean, const float *running_var);

/* Backward of bn_cudnn_forward_train from x_keep, mean and inv_std: dscale and dbias [channels]
 * += their gradients; dx = dx_beta dx + dL/dx (dx may be dy; NULL: not wanted). */
void bn_cudnn_backward(const BnCudnn *c, const StepContext *ctx, const void *x_keep, const void *dy,
                       void *dx, float dx_beta, const float *scale, float *dscale, float *dbias,
                       const float *mean, const float *inv_std);

#endif
#endif
