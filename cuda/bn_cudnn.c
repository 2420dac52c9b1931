/* Batch norm on cuDNN (bn_cudnn.h): where it computes cdl's meaning, the descriptors, and the
 * passes. Compiled only in a GPU=1 build: the simulator has no cuDNN. */
#ifndef CDL_GPU_SIM
#include "bn_cudnn.h"

#include <limits.h>

#include "cudnn_shared.h"
#include "gpu.h"

/* cuDNN's spatial inference kernels take at most this batch (PyTorch's limit for them). */
#define BN_CUDNN_MAX_BATCH 65535

const char *bn_cudnn_refusal(const BnCudnnCase *c)
{
    if (c->darknet)
        return "bn_darknet=1 (darknet's sqrt(var) + 1e-6 is not cuDNN's formula)";
    if ((double)c->eps < CUDNN_BN_MIN_EPSILON)
        return "bn_eps below cuDNN's CUDNN_BN_MIN_EPSILON";
    if (c->x == ELEM_BF16)
        return "bf16 tensors (cuDNN's batch norm documents float and half)";
    if (c->y != c->x || c->dy != c->x)
        return "tensors of different types (cuDNN's batch norm takes one for x, y, dy and dx)";
    if ((double)c->batch * c->spatial < 2)
        return "one value per channel (cuDNN's unbiased variance divides by n - 1)";
    if (c->batch > BN_CUDNN_MAX_BATCH)
        return "a batch above 65535 (cuDNN's spatial batch norm grid)";
    if ((double)c->batch * c->channels * c->spatial > INT_MAX)
        return "over 2^31 - 1 values (cuDNN's 32-bit indexing)";
    return NULL;
}

int bn_cudnn_describe(BnCudnn *c, const Layer *l, int batch, int channels, int spatial,
                      ElemType type, int nhwc, Error *e)
{
    int st = CDL_OK;
    c->batch = 0;
    if (!c->x)
        st = cudnn_layer_check(cudnnCreateTensorDescriptor(&c->x), l,
                               "batch norm: cudnnCreateTensorDescriptor", e);
    if (!st && !c->params)
        st = cudnn_layer_check(cudnnCreateTensorDescriptor(&c->params), l,
                               "batch norm: cudnnCreateTensorDescriptor", e);
    if (st)
        return st;
    st = cudnn_layer_check(
        cudnnSetTensor4dDescriptor(c->x, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                   cudnn_data_type(type), batch, channels, spatial, 1),
        l, "batch norm: cudnnSetTensor4dDescriptor", e);
    st = st ? st
            : cudnn_layer_check(
                  cudnnDeriveBNTensorDescriptor(c->params, c->x, CUDNN_BATCHNORM_SPATIAL), l,
                  "batch norm: cudnnDeriveBNTensorDescriptor", e);
    if (st)
        return st;
    c->batch = batch;
    c->channels = channels;
    c->spatial = spatial;
    c->type = type;
    c->nhwc = nhwc;
    return CDL_OK;
}

size_t bn_cudnn_scratch_bytes(int batch, int channels, int spatial, ElemType type)
{
    return (size_t)batch * channels * spatial * elem_bytes(type);
}

void bn_cudnn_release(BnCudnn *c)
{
    if (c->x)
        cudnnDestroyTensorDescriptor(c->x);
    if (c->params)
        cudnnDestroyTensorDescriptor(c->params);
    *c = (BnCudnn){0};
}

int bn_cudnn_takes(const BnCudnn *c, const StepContext *ctx, ElemType x, ElemType y, ElemType dy)
{
    if (!c || !c->batch || c->batch != ctx->batch || x != c->type)
        return 0;
    const BnCudnnCase k = {.darknet = ctx->bn_darknet,
                           .eps = ctx->bn_eps,
                           .batch = ctx->batch,
                           .channels = c->channels,
                           .spatial = c->spatial,
                           .x = x,
                           .y = y,
                           .dy = dy};
    return bn_cudnn_refusal(&k) == NULL;
}

/* The bytes of one of c's tensors. */
static size_t tensor_bytes(const BnCudnn *c)
{
    return bn_cudnn_scratch_bytes(c->batch, c->channels, c->spatial, c->type);
}

/* copy = t, on the pass's stream. */
static void copy_tensor(const BnCudnn *c, const StepContext *ctx, void *copy, const void *t)
{
    gpu_note(ctx,
             cudaMemcpyAsync(copy, t, tensor_bytes(c), cudaMemcpyDeviceToDevice, gpu_stream(ctx)),
             "batch norm on cuDNN: a copy of a tensor");
}

void bn_cudnn_forward_train(const BnCudnn *c, const StepContext *ctx, const void *x, void *y,
                            void *x_keep, const float *scale, const float *bias, float *mean,
                            float *inv_std, float *running_mean, float *running_var)
{
    const float one = 1.0f, zero = 0.0f;
    copy_tensor(c, ctx, x_keep, x);
    /* a replayed forward (gradient checkpointing) has moved the running statistics once: cuDNN
     * leaves them when both are NULL */
    cudnn_note(ctx,
               cudnnBatchNormalizationForwardTraining(
                   gpu_handles(ctx)->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, c->x, x_keep,
                   c->x, y, c->params, scale, bias, (double)ctx->bn_momentum,
                   ctx->replay ? NULL : running_mean, ctx->replay ? NULL : running_var,
                   (double)ctx->bn_eps, mean, inv_std),
               "cudnnBatchNormalizationForwardTraining");
}

void bn_cudnn_forward_eval(const BnCudnn *c, const StepContext *ctx, const void *x, void *y,
                           void *x_keep, const float *scale, const float *bias,
                           const float *running_mean, const float *running_var)
{
    const float one = 1.0f, zero = 0.0f;
    if (x == y) {
        copy_tensor(c, ctx, x_keep, x);
        x = x_keep;
    }
    cudnn_note(ctx,
               cudnnBatchNormalizationForwardInference(
                   gpu_handles(ctx)->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, c->x, x, c->x, y,
                   c->params, scale, bias, running_mean, running_var, (double)ctx->bn_eps),
               "cudnnBatchNormalizationForwardInference");
}

void bn_cudnn_backward(const BnCudnn *c, const StepContext *ctx, const void *x_keep, const void *dy,
                       void *dx, float dx_beta, const float *scale, float *dscale, float *dbias,
                       const float *mean, const float *inv_std)
{
    if (tensor_bytes(c) > ctx->exec->workspace_floats * sizeof(float)) {
        gpu_note(ctx, cudaErrorInvalidValue, "batch norm on cuDNN: a pass it was not sized for");
        return;
    }
    const float one = 1.0f, zero = 0.0f;
    void *scratch = ctx->exec->workspace;
    if (dx == dy) { /* in place: cuDNN reads a copy of dy */
        copy_tensor(c, ctx, scratch, dy);
        dy = scratch;
    }
    /* the parameter gradients added (beta 1: cdl's gradient contract); an unwanted dx written
     * into the workspace */
    cudnn_note(ctx,
               cudnnBatchNormalizationBackward(
                   gpu_handles(ctx)->cudnn, CUDNN_BATCHNORM_SPATIAL, &one, dx ? &dx_beta : &zero,
                   &one, &one, c->x, x_keep, c->x, dy, c->x, dx ? dx : scratch, c->params, scale,
                   dscale, dbias, (double)ctx->bn_eps, mean, inv_std),
               "cudnnBatchNormalizationBackward");
}
#endif
