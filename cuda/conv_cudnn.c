/* [convolutional] on cuDNN (conv_cudnn.h): descriptors, the algorithm choice at resize, and the
 * passes. Compiled only in a GPU=1 build: the simulator has no cuDNN. */
#ifndef CDL_GPU_SIM
#include "conv_cudnn.h"

#include <stdio.h>

#include "gpu.h"
#include "layers/convolutional.h"

/* Status st of cuDNN's call what on layer l as the net's error (CDL_OK when it succeeded). */
static int cudnn_check(cudnnStatus_t st, const Layer *l, const char *what, Error *e)
{
    if (st == CUDNN_STATUS_SUCCESS)
        return CDL_OK;
    return error_set(e, CDL_ERUNTIME, "layer %d [convolutional] on cuDNN: %s: %s", l->index, what,
                     cudnnGetErrorString(st));
}

int conv_cudnn_describe(ConvCudnn *c, const Layer *l, int batch, Error *e)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape, out = l->out_shape;
    int st = CDL_OK;
    if (!c->conv) {
        st = cudnn_check(cudnnCreateTensorDescriptor(&c->x), l, "cudnnCreateTensorDescriptor", e);
        st = st ? st
                : cudnn_check(cudnnCreateTensorDescriptor(&c->y), l, "cudnnCreateTensorDescriptor",
                              e);
        st = st ? st
                : cudnn_check(cudnnCreateFilterDescriptor(&c->w), l, "cudnnCreateFilterDescriptor",
                              e);
        st = st ? st
                : cudnn_check(cudnnCreateConvolutionDescriptor(&c->conv), l,
                              "cudnnCreateConvolutionDescriptor", e);
        if (st)
            return st;
    }
    c->batch = 0;
    st = cudnn_check(cudnnSetTensor4dDescriptor(c->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch,
                                                in.c, in.h, in.w),
                     l, "cudnnSetTensor4dDescriptor (input)", e);
    st = st ? st
            : cudnn_check(cudnnSetTensor4dDescriptor(c->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                     batch, out.c, out.h, out.w),
                          l, "cudnnSetTensor4dDescriptor (output)", e);
    st = st ? st
            : cudnn_check(cudnnSetFilter4dDescriptor(c->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                     cv->filters, in.c / cv->groups, cv->win.size_h,
                                                     cv->win.size_w),
                          l, "cudnnSetFilter4dDescriptor", e);
    /* cross-correlation, as every framework's "convolution" and cdl's im2col */
    st = st ? st
            : cudnn_check(cudnnSetConvolution2dDescriptor(
                              c->conv, cv->win.pad_h, cv->win.pad_w, cv->win.stride_h,
                              cv->win.stride_w, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                          l, "cudnnSetConvolution2dDescriptor", e);
    st = st ? st
            : cudnn_check(cudnnSetConvolutionGroupCount(c->conv, cv->groups), l,
                          "cudnnSetConvolutionGroupCount", e);
    st = st ? st
            : cudnn_check(cudnnSetConvolutionMathType(c->conv, CUDNN_FMA_MATH), l,
                          "cudnnSetConvolutionMathType", e);
    if (!st)
        c->batch = batch;
    return st;
}

/* The algorithms that compute a convolution as sums of products (the GEMM family, direct), not
 * through transforms: FFT and Winograd round differently, beyond the float32 round-off the
 * GPU's results are held to against the CPU reference (test_backend_ops). */
static int direct_forward(cudnnConvolutionFwdAlgo_t a)
{
    return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD &&
           a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

static int direct_data(cudnnConvolutionBwdDataAlgo_t a)
{
    return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT &&
           a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD &&
           a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}

static int direct_filter(cudnnConvolutionBwdFilterAlgo_t a)
{
    return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT &&
           a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

/* found = the first of cuDNN's n ranked results perf (fastest first) that succeeded, is
 * deterministic, computes in float32 FMA and is direct (the predicate), -1: none. The three
 * kinds of result have the same fields. */
#define FIND_USABLE(found, perf, n, direct)                                                        \
    do {                                                                                           \
        (found) = -1;                                                                              \
        for (int i_ = 0; i_ < (n) && (found) < 0; i_++)                                            \
            if ((perf)[i_].status == CUDNN_STATUS_SUCCESS && direct((perf)[i_].algo) &&            \
                (perf)[i_].determinism == CUDNN_DETERMINISTIC &&                                   \
                (perf)[i_].mathType != CUDNN_TENSOR_OP_MATH &&                                     \
                (perf)[i_].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)                      \
                (found) = i_;                                                                      \
    } while (0)

static int no_algorithm(const Layer *l, const char *pass, Error *e)
{
    return error_set(e, CDL_ERUNTIME,
                     "layer %d [convolutional]: cuDNN offers no deterministic float32 algorithm "
                     "for its %s (gpu_engine=ref runs it on cdl's own kernels)",
                     l->index, pass);
}

int conv_cudnn_choose(ConvCudnn *c, cudnnHandle_t handle, const Layer *l, Error *e)
{
    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n_fwd = 0, n_data = 0, n_filter = 0;
    int st = cudnn_check(cudnnGetConvolutionForwardAlgorithm_v7(handle, c->x, c->w, c->conv, c->y,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                                &n_fwd, fwd),
                         l, "cudnnGetConvolutionForwardAlgorithm_v7", e);
    st = st ? st
            : cudnn_check(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                              handle, c->w, c->y, c->conv, c->x,
                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n_data, data),
                          l, "cudnnGetConvolutionBackwardDataAlgorithm_v7", e);
    st = st ? st
            : cudnn_check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                              handle, c->x, c->y, c->conv, c->w,
                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n_filter, filter),
                          l, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", e);
    if (st)
        return st;
    int i_fwd, i_data, i_filter;
    FIND_USABLE(i_fwd, fwd, n_fwd, direct_forward);
    FIND_USABLE(i_data, data, n_data, direct_data);
    FIND_USABLE(i_filter, filter, n_filter, direct_filter);
    if (i_fwd < 0)
        return no_algorithm(l, "forward", e);
    if (i_data < 0)
        return no_algorithm(l, "input gradient", e);
    if (i_filter < 0)
        return no_algorithm(l, "weight gradient", e);
    c->fwd = fwd[i_fwd].algo;
    c->bwd_data = data[i_data].algo;
    c->bwd_filter = filter[i_filter].algo;
    /* the heuristics' memory field is their estimate: the sizes the passes are checked against
     * come from the workspace queries */
    size_t bytes[3] = {0, 0, 0};
    st = cudnn_check(cudnnGetConvolutionForwardWorkspaceSize(handle, c->x, c->w, c->conv, c->y,
                                                             c->fwd, &bytes[0]),
                     l, "cudnnGetConvolutionForwardWorkspaceSize", e);
    st = st ? st
            : cudnn_check(cudnnGetConvolutionBackwardDataWorkspaceSize(
                              handle, c->w, c->y, c->conv, c->x, c->bwd_data, &bytes[1]),
                          l, "cudnnGetConvolutionBackwardDataWorkspaceSize", e);
    st = st ? st
            : cudnn_check(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                              handle, c->x, c->y, c->conv, c->w, c->bwd_filter, &bytes[2]),
                          l, "cudnnGetConvolutionBackwardFilterWorkspaceSize", e);
    if (st)
        return st;
    c->workspace_bytes = bytes[0];
    for (int i = 1; i < 3; i++)
        c->workspace_bytes = bytes[i] > c->workspace_bytes ? bytes[i] : c->workspace_bytes;
    return CDL_OK;
}

void conv_cudnn_release(ConvCudnn *c)
{
    if (c->x)
        cudnnDestroyTensorDescriptor(c->x);
    if (c->y)
        cudnnDestroyTensorDescriptor(c->y);
    if (c->w)
        cudnnDestroyFilterDescriptor(c->w);
    if (c->conv)
        cudnnDestroyConvolutionDescriptor(c->conv);
    *c = (ConvCudnn){0};
}

/* Keeps a failed call's status as the pass's failure (gpu_note), naming the call and status. */
static void note_cudnn(const StepContext *ctx, cudnnStatus_t st, const char *what)
{
    if (st == CUDNN_STATUS_SUCCESS)
        return;
    char text[96];
    snprintf(text, sizeof text, "%s (%s)", what, cudnnGetErrorString(st));
    gpu_note(ctx, cudaErrorUnknown, text);
}

/* The pass's batch must be the one the descriptors and workspace were sized for: net_resize
 * resizes every layer before a pass of another batch. */
static int batch_described(const ConvCudnn *c, const StepContext *ctx)
{
    if (ctx->batch == c->batch && c->workspace_bytes <= ctx->exec->workspace_floats * sizeof(float))
        return 1;
    gpu_note(ctx, cudaErrorInvalidValue,
             "convolution on cuDNN: a pass the layer was not sized for");
    return 0;
}

void conv_cudnn_forward(const ConvCudnn *c, const Layer *l, const StepContext *ctx)
{
    if (!batch_described(c, ctx))
        return;
    const float one = 1.0f, zero = 0.0f;
    cudnnHandle_t h = gpu_handles(ctx)->cudnn;
    note_cudnn(ctx,
               cudnnConvolutionForward(h, &one, c->x, l->in[0], c->w, l->params[CONV_WEIGHTS].data,
                                       c->conv, c->fwd, ctx->exec->workspace, c->workspace_bytes,
                                       &zero, c->y, l->out),
               "cudnnConvolutionForward");
}

void conv_cudnn_backward(const ConvCudnn *c, const Layer *l, const StepContext *ctx)
{
    if (!batch_described(c, ctx))
        return;
    const float one = 1.0f, dx_beta = layer_input_delta_beta(l, 0);
    const Param *w = &l->params[CONV_WEIGHTS];
    cudnnHandle_t h = gpu_handles(ctx)->cudnn;
    note_cudnn(ctx,
               cudnnConvolutionBackwardFilter(h, &one, c->x, l->in[0], c->y, l->delta, c->conv,
                                              c->bwd_filter, ctx->exec->workspace,
                                              c->workspace_bytes, &one, c->w, w->grad),
               "cudnnConvolutionBackwardFilter");
    if (l->in_delta[0])
        note_cudnn(ctx,
                   cudnnConvolutionBackwardData(h, &one, c->w, w->data, c->y, l->delta, c->conv,
                                                c->bwd_data, ctx->exec->workspace,
                                                c->workspace_bytes, &dx_beta, c->x, l->in_delta[0]),
                   "cudnnConvolutionBackwardData");
}
#endif
