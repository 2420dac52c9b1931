/* [convolutional] on cuDNN (conv_cudnn.h): descriptors, the algorithm choice at resize, and the
 * passes. Compiled only in a GPU=1 build: the simulator has no cuDNN. */
#ifndef CDL_GPU_SIM
#include "conv_cudnn.h"

#include "cudnn_shared.h"
#include "gpu.h"
#include "kernels/copy.h"
#include "layers/convolutional.h"

int conv_cudnn_describe(ConvCudnn *c, const Layer *l, int batch, int nhwc, Error *e)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape, out = l->out_shape;
    int st = CDL_OK;
    if (!c->conv) {
        st = cudnn_layer_check(cudnnCreateTensorDescriptor(&c->x), l, "cudnnCreateTensorDescriptor",
                               e);
        st = st ? st
                : cudnn_layer_check(cudnnCreateTensorDescriptor(&c->y), l,
                                    "cudnnCreateTensorDescriptor", e);
        st = st ? st
                : cudnn_layer_check(cudnnCreateFilterDescriptor(&c->w), l,
                                    "cudnnCreateFilterDescriptor", e);
        st = st ? st
                : cudnn_layer_check(cudnnCreateConvolutionDescriptor(&c->conv), l,
                                    "cudnnCreateConvolutionDescriptor", e);
        if (st)
            return st;
    }
    c->batch = 0;
    c->precision = l->precision;
    c->type = precision_storage(l->precision);
    c->nhwc = nhwc;
    const cudnnDataType_t data = cudnn_data_type(c->type);
    /* NHWC tensors and a KRSC filter, or NCHW and KCRS: one layout for all three */
    const cudnnTensorFormat_t format = c->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    st = cudnn_layer_check(cudnnSetTensor4dDescriptor(c->x, format, data, batch, in.c, in.h, in.w),
                           l, "cudnnSetTensor4dDescriptor (input)", e);
    st = st ? st
            : cudnn_layer_check(
                  cudnnSetTensor4dDescriptor(c->y, format, data, batch, out.c, out.h, out.w), l,
                  "cudnnSetTensor4dDescriptor (output)", e);
    st = st ? st
            : cudnn_layer_check(cudnnSetFilter4dDescriptor(c->w, data, format, cv->filters,
                                                           in.c / cv->groups, cv->win.size_h,
                                                           cv->win.size_w),
                                l, "cudnnSetFilter4dDescriptor", e);
    /* cross-correlation, as every framework's "convolution" and cdl's im2col; float32 sums in
     * every precision (the PSEUDO configurations of cuDNN's support matrix) */
    st = st ? st
            : cudnn_layer_check(
                  cudnnSetConvolution2dDescriptor(c->conv, cv->win.pad_h, cv->win.pad_w,
                                                  cv->win.stride_h, cv->win.stride_w, 1, 1,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                  l, "cudnnSetConvolution2dDescriptor", e);
    st = st ? st
            : cudnn_layer_check(cudnnSetConvolutionGroupCount(c->conv, cv->groups), l,
                                "cudnnSetConvolutionGroupCount", e);
    st = st ? st
            : cudnn_layer_check(cudnnSetConvolutionMathType(c->conv, c->precision == GEMM_FP32
                                                                         ? CUDNN_FMA_MATH
                                                                         : CUDNN_TENSOR_OP_MATH),
                                l, "cudnnSetConvolutionMathType", e);
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

/* 1 when an algorithm of math type m computes c's precision as the CPU does: not on tensor cores
 * in fp32 (TF32 would round the operands), and never converting float32 operands to fp16
 * (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION). */
static int math_usable(const ConvCudnn *c, cudnnMathType_t m)
{
    if (m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        return 0;
    return c->precision != GEMM_FP32 || m != CUDNN_TENSOR_OP_MATH;
}

/* found = the first of cuDNN's n ranked results perf (fastest first) that succeeded, is
 * deterministic, has a usable math type and is direct (the predicate), -1: none. The three
 * kinds of result have the same fields. */
#define FIND_USABLE(found, c, perf, n, direct)                                                     \
    do {                                                                                           \
        (found) = -1;                                                                              \
        for (int i_ = 0; i_ < (n) && (found) < 0; i_++)                                            \
            if ((perf)[i_].status == CUDNN_STATUS_SUCCESS && direct((perf)[i_].algo) &&            \
                (perf)[i_].determinism == CUDNN_DETERMINISTIC &&                                   \
                math_usable((c), (perf)[i_].mathType))                                             \
                (found) = i_;                                                                      \
    } while (0)

/* The error of l, whose passes needs cuDNN does not all offer (found, in the last layout tried,
 * NCHW; NHWC tried before it where tried_nhwc). */
static int no_algorithm(const Layer *l, CudnnPasses needs, CudnnPasses found, int tried_nhwc,
                        Error *e)
{
    const char *pass = !found.forward              ? "forward"
                       : needs.data && !found.data ? "input gradient"
                                                   : "weight gradient";
    return error_set(e, CDL_ERUNTIME,
                     "layer %d [convolutional]: cuDNN offers no deterministic direct algorithm "
                     "for its %s in its precision%s (gpu_engine=ref runs it on cdl's own kernels)",
                     l->index, pass, tried_nhwc ? ", NHWC or NCHW" : "");
}

/* 1 when cuDNN multiplies a tensor of type t_type from a rounded copy: a float32 tensor in a
 * precision other than fp32 (a 16-bit one is already in c's type). */
static int rounds(const ConvCudnn *c, ElemType t_type)
{
    return c->precision != GEMM_FP32 && t_type == ELEM_F32;
}

/* A tensor of outer blocks of channels x plane, stored channels-last (NHWC, KRSC) where
 * tensor_nhwc, else channels-first (NCHW, OIHW), as cuDNN's layout (c->nhwc) wants it: to cuDNN
 * (to_cudnn) or back from it; none where the two layouts are one. */
static CudnnTranspose transpose_of(const ConvCudnn *c, int tensor_nhwc, int outer, int channels,
                                   int plane, int to_cudnn)
{
    if (c->nhwc == tensor_nhwc)
        return (CudnnTranspose){0};
    /* the source's layout: the tensor's to cuDNN, cuDNN's back */
    const int from_nhwc = to_cudnn ? tensor_nhwc : c->nhwc;
    return from_nhwc ? (CudnnTranspose){outer, plane, channels}
                     : (CudnnTranspose){outer, channels, plane};
}

CudnnTranspose conv_cudnn_transpose(const ConvCudnn *c, const Layer *l, CudnnTensor t, int to_cudnn)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape, out = l->out_shape;
    switch (t) {
    case CUDNN_X: /* [batch][c][h * w] in the layer input's layout */
        return transpose_of(c, l->in_channels_last[0], c->batch, in.c, in.h * in.w, to_cudnn);
    case CUDNN_Y: /* [batch][filters][out_h * out_w] in the layer output's layout */
        return transpose_of(c, l->channels_last, c->batch, out.c, out.h * out.w, to_cudnn);
    case CUDNN_W: /* OIHW [filters][c / groups][size_h * size_w] always */
        break;
    }
    return transpose_of(c, 0, cv->filters, in.c / cv->groups, window2d_taps(cv->win), to_cudnn);
}

int conv_cudnn_moves(const ConvCudnn *c, const Layer *l)
{
    int moves = 0;
    for (CudnnTensor t = CUDNN_X; t <= CUDNN_W; t *= 2)
        moves |= conv_cudnn_transpose(c, l, t, 1).outer ? (int)t : 0;
    return moves;
}

const char *conv_cudnn_engine(const ConvCudnn *c, const Layer *l, int bn_on_own)
{
    static const char *const names[2][2] = {{"cudnn", "cudnn-bn-ref"},
                                            {"cudnn-nchw", "cudnn-nchw-bn-ref"}};
    return names[!c->nhwc && (l->in_channels_last[0] || l->channels_last)][bn_on_own != 0];
}

/* Where a pass's operands lie in the net's workspace, bytes from its start, each 256-aligned:
 * cuDNN's own workspace first (workspace_bytes), then those of the layer's tensors (by their
 * types, Layer.in_storage and Layer.storage, and layouts, planned before the resize) that need
 * one: the rounded or reordered copies of x and w, the slot of y (the rounded or reordered dy of
 * the backward, and the forward's output where cuDNN's type or layout is not l->out's) and the
 * result of a gradient in another type or layout (dw, then dx). Empty in fp32 NCHW. */
typedef struct CudnnSlots {
    size_t x, w, y, result, end;
} CudnnSlots;

static size_t align_256(size_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

static CudnnSlots slots_of(const ConvCudnn *c, const Layer *l)
{
    const size_t bytes = c->type == ELEM_F32 ? 4 : 2;
    const size_t x = (size_t)c->batch * shape_size(l->in_shape);
    const size_t y = (size_t)c->batch * shape_size(l->out_shape);
    const size_t count = l->params[CONV_WEIGHTS].count;
    const int moves = conv_cudnn_moves(c, l);
    const int x_moved = moves & CUDNN_X, y_moved = moves & CUDNN_Y;
    const int w_moved = moves & CUDNN_W;
    const size_t w = c->precision != GEMM_FP32 || w_moved ? count : 0;
    const size_t dw = c->type != ELEM_F32 || w_moved ? count : 0;
    const size_t dx = l->in_storage[0] != c->type || x_moved ? x : 0;
    CudnnSlots s = {.x = align_256(c->workspace_bytes)};
    s.w = s.x + (rounds(c, l->in_storage[0]) || x_moved ? align_256(x * bytes) : 0);
    s.y = s.w + align_256(w * bytes);
    s.result = s.y + (rounds(c, l->storage) || y_moved ? align_256(y * bytes) : 0);
    s.end = s.result + align_256((dx > dw ? dx : dw) * bytes);
    return s;
}

/* A query's status st as found or not: cuDNN's NOT_SUPPORTED (no algorithm for these
 * descriptors) is not an error, the others are (CDL_ERUNTIME naming what). */
static int cudnn_query(cudnnStatus_t st, int *supported, const Layer *l, const char *what, Error *e)
{
    *supported = st != CUDNN_STATUS_NOT_SUPPORTED;
    return *supported ? cudnn_layer_check(st, l, what, e) : CDL_OK;
}

/* conv_cudnn_choose's CudnnAsk (arg: the cudnnHandle_t): cuDNN's ranked heuristics of each pass,
 * the first usable algorithm, and the workspace it needs. */
static int ask_cudnn(ConvCudnn *c, const Layer *l, void *arg, CudnnPasses *found, Error *e)
{
    cudnnHandle_t handle = arg;
    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int n_fwd = 0, n_data = 0, n_filter = 0, ok[3];
    int st = cudnn_query(cudnnGetConvolutionForwardAlgorithm_v7(handle, c->x, c->w, c->conv, c->y,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                                &n_fwd, fwd),
                         &ok[0], l, "cudnnGetConvolutionForwardAlgorithm_v7", e);
    st = st ? st
            : cudnn_query(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                              handle, c->w, c->y, c->conv, c->x,
                              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n_data, data),
                          &ok[1], l, "cudnnGetConvolutionBackwardDataAlgorithm_v7", e);
    st = st ? st
            : cudnn_query(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                              handle, c->x, c->y, c->conv, c->w,
                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n_filter, filter),
                          &ok[2], l, "cudnnGetConvolutionBackwardFilterAlgorithm_v7", e);
    if (st)
        return st;
    int i_fwd, i_data, i_filter;
    FIND_USABLE(i_fwd, c, fwd, ok[0] ? n_fwd : 0, direct_forward);
    FIND_USABLE(i_data, c, data, ok[1] ? n_data : 0, direct_data);
    FIND_USABLE(i_filter, c, filter, ok[2] ? n_filter : 0, direct_filter);
    /* the heuristics' memory field is their estimate: the sizes the passes are checked against
     * come from the workspace queries */
    size_t bytes[3] = {0, 0, 0};
    if (i_fwd >= 0) {
        c->fwd = fwd[i_fwd].algo;
        st = cudnn_query(cudnnGetConvolutionForwardWorkspaceSize(handle, c->x, c->w, c->conv, c->y,
                                                                 c->fwd, &bytes[0]),
                         &ok[0], l, "cudnnGetConvolutionForwardWorkspaceSize", e);
    }
    if (!st && i_data >= 0) {
        c->bwd_data = data[i_data].algo;
        st = cudnn_query(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, c->w, c->y, c->conv,
                                                                      c->x, c->bwd_data, &bytes[1]),
                         &ok[1], l, "cudnnGetConvolutionBackwardDataWorkspaceSize", e);
    }
    if (!st && i_filter >= 0) {
        c->bwd_filter = filter[i_filter].algo;
        st = cudnn_query(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                             handle, c->x, c->y, c->conv, c->w, c->bwd_filter, &bytes[2]),
                         &ok[2], l, "cudnnGetConvolutionBackwardFilterWorkspaceSize", e);
    }
    if (st)
        return st;
    *found = (CudnnPasses){i_fwd >= 0 && ok[0], i_data >= 0 && ok[1], i_filter >= 0 && ok[2]};
    c->workspace_bytes = 0;
    for (int i = 0; i < 3; i++)
        c->workspace_bytes = bytes[i] > c->workspace_bytes ? bytes[i] : c->workspace_bytes;
    return CDL_OK;
}

CudnnPasses conv_cudnn_needs(const Layer *l, int input_grads)
{
    return (CudnnPasses){1, input_grads != 0, l->params[CONV_WEIGHTS].grad != NULL};
}

/* 1 when found has every pass of needs. */
static int offers(CudnnPasses found, CudnnPasses needs)
{
    return (found.forward || !needs.forward) && (found.data || !needs.data) &&
           (found.filter || !needs.filter);
}

int conv_cudnn_plan(ConvCudnn *c, const Layer *l, int batch, CudnnPasses needs, CudnnAsk ask,
                    void *arg, Error *e)
{
    const int tensors_nhwc = l->in_channels_last[0] || l->channels_last;
    CudnnPasses found = {0};
    /* NHWC first where a tensor is, NCHW last */
    for (int nhwc = tensors_nhwc; nhwc >= 0; nhwc--) {
        int st = conv_cudnn_describe(c, l, batch, nhwc, e);
        st = st ? st : ask(c, l, arg, &found, e);
        if (st) {
            c->batch = 0;
            return st;
        }
        if (offers(found, needs)) {
            c->in_nhwc = l->in_channels_last[0];
            c->out_nhwc = l->channels_last;
            c->needs = needs;
            return CDL_OK;
        }
    }
    c->batch = 0;
    return no_algorithm(l, needs, found, tensors_nhwc, e);
}

int conv_cudnn_choose(ConvCudnn *c, cudnnHandle_t handle, const Layer *l, int batch,
                      CudnnPasses needs, Error *e)
{
    return conv_cudnn_plan(c, l, batch, needs, ask_cudnn, handle, e);
}

int conv_cudnn_planned(const ConvCudnn *c, const Layer *l, int batch, CudnnPasses needs)
{
    return c->batch == batch && c->precision == l->precision &&
           c->in_nhwc == l->in_channels_last[0] && c->out_nhwc == l->channels_last &&
           c->needs.forward == needs.forward && c->needs.data == needs.data &&
           c->needs.filter == needs.filter;
}

size_t conv_cudnn_scratch_bytes(const ConvCudnn *c, const Layer *l)
{
    return slots_of(c, l).end;
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

/* The pass's batch must be the one the descriptors and workspace were sized for: net_resize
 * resizes every layer before a pass of another batch. */
static int batch_described(const ConvCudnn *c, const Layer *l, const StepContext *ctx)
{
    if (ctx->batch == c->batch &&
        conv_cudnn_scratch_bytes(c, l) <= ctx->exec->workspace_floats * sizeof(float))
        return 1;
    gpu_note(ctx, cudaErrorInvalidValue,
             "convolution on cuDNN: a pass the layer was not sized for");
    return 0;
}

/* The n values of tensor t (of type t_type, in the layer's layout) as cuDNN multiplies them in
 * c's precision and layout: t itself where it has both, else a copy: t transposed into copy in
 * c's type (which rounds it to 16 bits) where r says so, and a float32 t rounded (in place after
 * the transpose: tf32). */
static const void *operand(const ConvCudnn *c, const StepContext *ctx, const void *t,
                           ElemType t_type, CudnnTranspose r, size_t n, void *copy)
{
    if (r.outer) {
        gpu_note(ctx,
                 cuda_transpose(copy, c->type, t, t_type, r.outer, r.rows, r.columns, 0,
                                gpu_stream(ctx)),
                 "convolution on cuDNN: an operand into cuDNN's layout");
        if (c->type != ELEM_F32)
            return copy;
        t = copy;
    }
    if (!rounds(c, t_type))
        return t;
    gpu_note(ctx,
             cuda_round_operand(copy, (const float *)t, n, gpu_operand_format(c->precision),
                                gpu_stream(ctx)),
             "convolution on cuDNN: rounding an operand");
    return copy;
}

/* Where cuDNN writes a result for tensor t of type t_type: t where it has cuDNN's type and
 * layout (r none), else the slot (then moved into t by result_store). */
static void *result_at(const ConvCudnn *c, void *t, ElemType t_type, CudnnTranspose r, void *slot)
{
    return t_type == c->type && !r.outer ? t : slot;
}

/* The n values cuDNN wrote at at into t (of type t_type; transposed back as r says), added to t
 * with accumulate; nothing where cuDNN wrote t itself. */
static void result_store(const ConvCudnn *c, const StepContext *ctx, void *t, ElemType t_type,
                         CudnnTranspose r, const void *at, size_t n, int accumulate)
{
    if (at == t)
        return;
    gpu_note(ctx,
             r.outer ? cuda_transpose(t, t_type, at, c->type, r.outer, r.rows, r.columns,
                                      accumulate, gpu_stream(ctx))
                     : cuda_convert_rows(t, t_type, n, at, c->type, n, 1, n, accumulate,
                                         gpu_stream(ctx)),
             "convolution on cuDNN: a result into the layer's type and layout");
}

void conv_cudnn_forward(const ConvCudnn *c, const Layer *l, const StepContext *ctx)
{
    if (!batch_described(c, l, ctx))
        return;
    const float one = 1.0f, zero = 0.0f;
    cudnnHandle_t h = gpu_handles(ctx)->cudnn;
    char *ws = (char *)ctx->exec->workspace;
    const CudnnSlots s = slots_of(c, l);
    const size_t n_x = (size_t)c->batch * shape_size(l->in_shape);
    const size_t n_y = (size_t)c->batch * shape_size(l->out_shape);
    const Param *w = &l->params[CONV_WEIGHTS];
    const void *x = operand(c, ctx, l->in[0], l->in_storage[0],
                            conv_cudnn_transpose(c, l, CUDNN_X, 1), n_x, ws + s.x);
    const void *wt = operand(c, ctx, w->data, ELEM_F32, conv_cudnn_transpose(c, l, CUDNN_W, 1),
                             w->count, ws + s.w);
    const CudnnTranspose y_back = conv_cudnn_transpose(c, l, CUDNN_Y, 0);
    void *y = result_at(c, l->out, l->storage, y_back, ws + s.y);
    cudnn_note(ctx,
               cudnnConvolutionForward(h, &one, c->x, x, c->w, wt, c->conv, c->fwd, ws,
                                       c->workspace_bytes, &zero, c->y, y),
               "cudnnConvolutionForward");
    result_store(c, ctx, l->out, l->storage, y_back, y, n_y, 0);
}

void conv_cudnn_backward(const ConvCudnn *c, const Layer *l, const StepContext *ctx)
{
    if (!batch_described(c, l, ctx))
        return;
    const float one = 1.0f, zero = 0.0f, dx_beta = layer_input_delta_beta(l, 0);
    const Param *w = &l->params[CONV_WEIGHTS];
    cudnnHandle_t h = gpu_handles(ctx)->cudnn;
    char *ws = (char *)ctx->exec->workspace;
    const CudnnSlots s = slots_of(c, l);
    const size_t n_x = (size_t)c->batch * shape_size(l->in_shape);
    const size_t n_y = (size_t)c->batch * shape_size(l->out_shape);
    const void *x = operand(c, ctx, l->in[0], l->in_storage[0],
                            conv_cudnn_transpose(c, l, CUDNN_X, 1), n_x, ws + s.x);
    const void *dy = operand(c, ctx, l->delta, l->storage, conv_cudnn_transpose(c, l, CUDNN_Y, 1),
                             n_y, ws + s.y);
    /* dw added by cuDNN (beta 1) where it is written in place, else summed from the slot */
    const CudnnTranspose dw_back = conv_cudnn_transpose(c, l, CUDNN_W, 0),
                         dx_back = conv_cudnn_transpose(c, l, CUDNN_X, 0);
    void *dw = result_at(c, w->grad, ELEM_F32, dw_back, ws + s.result);
    cudnn_note(ctx,
               cudnnConvolutionBackwardFilter(h, &one, c->x, x, c->y, dy, c->conv, c->bwd_filter,
                                              ws, c->workspace_bytes, dw == w->grad ? &one : &zero,
                                              c->w, dw),
               "cudnnConvolutionBackwardFilter");
    result_store(c, ctx, w->grad, ELEM_F32, dw_back, dw, w->count, 1);
    if (!l->in_delta[0])
        return;
    const void *wt = operand(c, ctx, w->data, ELEM_F32, conv_cudnn_transpose(c, l, CUDNN_W, 1),
                             w->count, ws + s.w);
    void *dx = result_at(c, l->in_delta[0], l->in_storage[0], dx_back, ws + s.result);
    cudnn_note(ctx,
               cudnnConvolutionBackwardData(h, &one, c->w, wt, c->y, dy, c->conv, c->bwd_data, ws,
                                            c->workspace_bytes,
                                            dx == l->in_delta[0] ? &dx_beta : &zero, c->x, dx),
               "cudnnConvolutionBackwardData");
    result_store(c, ctx, l->in_delta[0], l->in_storage[0], dx_back, dx, n_x, dx_beta != 0.0f);
}
#endif
