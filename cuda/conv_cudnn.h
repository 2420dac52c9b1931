/* [convolutional] on cuDNN (the GPU's engine "cudnn", [net] gpu_engine=cudnn, the default of a
 * GPU=1 build): the layer's descriptors, its algorithms chosen once per shape, and its passes
 * through cuDNN's legacy convolution API (cudnnConvolutionForward, BackwardData, BackwardFilter).
 * Not in a GPU=sim build: the simulator has no cuDNN (gpu_backend.c refuses gpu_engine=cudnn
 * there), and this header declares nothing then.
 *
 *   x  [batch][c][h][w]            NCHW, l->in[0]
 *   y  [batch][filters][oh][ow]    NCHW, l->out before the bias/batch norm
 *   w  [filters][c/groups][size][size]  KCRS, the group count on the convolution descriptor
 *
 * Channels-last (Layer.channels_last or in_channels_last[0], core/net_channels_last.h), cuDNN's
 * layout is chosen per layer with its algorithms (conv_cudnn_plan): NHWC first, every descriptor,
 * grouped and depthwise layers too: x [batch][h][w][c], y [batch][oh][ow][filters], w KRSC
 * [filters][size][size][c/groups], a copy of the OIHW weights transposed into the workspace (the
 * weight gradient transposed back, added to the OIHW one). One layout for all three, as PyTorch
 * gives cuDNN (its convolution makes input and weight contiguous in one memory format). Where a
 * pass the net needs has no usable algorithm in NHWC (cuDNN's heuristics decide, at resize), the
 * layer is described NCHW instead, as without channels-last. Either way a tensor of the layer
 * whose layout is not cuDNN's (an NCHW input or output under NHWC descriptors: the net's first
 * convolution reads the NCHW net input, the last before a reader without NHWC kernels writes
 * NCHW; an NHWC one under NCHW descriptors) is transposed, and its gradient, in the workspace
 * (cuda_transpose) on its way to or from cuDNN.
 *
 * In precision fp32 the math is float32 on FMA kernels only (CUDNN_FMA_MATH: CUDNN_DEFAULT_MATH
 * lets cuDNN pick TF32 tensor cores on Ampere and newer, which rounds the operands to 10 mantissa
 * bits, far from the CPU's numbers). In bf16 and fp16 x, w and y are 16-bit tensors (cuDNN's
 * PSEUDO_BFLOAT16 and PSEUDO_HALF configurations: float32 compute type, CUDNN_TENSOR_OP_MATH),
 * in tf32 float32 tensors with CUDNN_TENSOR_OP_MATH, which lets cuDNN multiply on TF32 tensor
 * cores. Either way cuDNN multiplies operands rounded as the CPU's precision rounds them (to
 * nearest even, backend/cpu/round.h): a 16-bit stored input (Layer.in_storage) as it is, a
 * float32 input and the weights rounded into copies in the workspace (tf32: rounded to 10
 * mantissa bits in float32, so that the tensor cores' own conversion changes nothing); sums in
 * float32. cuDNN adds one rounding the CPU reference has not in bf16 and fp16: its outputs are
 * 16-bit tensors, so y is rounded to 16 bits before the bias/batch norm where the layer stores
 * its output in float32 (in 16-bit storage the own engine rounds it there too), dx where the
 * input's gradient is float32, and the weight gradient always, before it is added to the float32
 * gradient (as PyTorch's autocast gets it from its bf16 weight copy). Only deterministic
 * algorithms, as the rest of the GPU backend has no float atomics: a run repeats its numbers. */
#ifndef CDL_CUDA_CONV_CUDNN_H
#define CDL_CUDA_CONV_CUDNN_H

#ifndef CDL_GPU_SIM
#include <cudnn.h>

#include "core/layer.h"

/* The passes of a convolution on cuDNN: those the net needs, or those cuDNN offers a usable
 * algorithm for in one layout. */
typedef struct CudnnPasses {
    int forward, data, filter; /* y = conv(x, w); dx = conv_data(w, dy); dw += conv_filter(x, dy) */
} CudnnPasses;

typedef struct ConvCudnn {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    int batch;               /* the batch the descriptors describe, 0 before conv_cudnn_describe */
    GemmPrecision precision; /* the layer's, which the descriptors describe */
    ElemType type;           /* of x, y, w in cuDNN's view: precision_storage(precision) */
    int nhwc;                /* cuDNN's layout: 1 the descriptors are NHWC (KRSC), 0 NCHW (KCRS) */
    /* Chosen by conv_cudnn_plan for that batch, with the workspace they need (the most); an
     * algorithm of a pass the net does not need may be unset */
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    size_t workspace_bytes;
    /* What the plan was made for: the layouts of l's input and output, the passes needed */
    int in_nhwc, out_nhwc;
    CudnnPasses needs;
} ConvCudnn;

/* Creates c's descriptors if they are not yet and sets them to layer l ([convolutional], its
 * in_shape and out_shape set by parse) over batch samples in l->precision, in cuDNN's layout
 * nhwc (1 NHWC and KRSC, 0 NCHW and KCRS), whatever the layouts of l's tensors; no handle, no
 * device. Returns CDL_OK, or CDL_ERUNTIME naming the layer and cuDNN's status. */
int conv_cudnn_describe(ConvCudnn *c, const Layer *l, int batch, int nhwc, Error *e);

/* The passes a net needs of l: the forward, the weight gradient where l's weights have one (a
 * net with gradients), the input gradient where input_grads (LayerState.input_grads). */
CudnnPasses conv_cudnn_needs(const Layer *l, int input_grads);

/* Asks for c's descriptors as described (c->nhwc's layout): sets c's algorithm of each pass
 * with a usable one, which *found says, and c->workspace_bytes, the most they need.
 * conv_cudnn_choose's asks cuDNN's heuristics; a test's may answer anything. Returns CDL_OK or
 * the error of a failed query. */
typedef int (*CudnnAsk)(ConvCudnn *c, const Layer *l, void *arg, CudnnPasses *found, Error *e);

/* cuDNN's layout and algorithms for l over batch, for the passes needs: NHWC where l's input or
 * output is NHWC and ask (given arg) offers every pass needed there, else NCHW where it offers
 * them there; c is then described and chosen in that layout. Returns CDL_OK, ask's or
 * describe's error, or CDL_ERUNTIME naming the first pass needed that neither layout offers
 * (c->batch 0 after an error). */
int conv_cudnn_plan(ConvCudnn *c, const Layer *l, int batch, CudnnPasses needs, CudnnAsk ask,
                    void *arg, Error *e);

/* conv_cudnn_plan asking cuDNN's heuristics (cudnnGet*Algorithm_v7, which runs nothing) for the
 * fastest deterministic direct algorithm of each pass (FMA math only in fp32). */
int conv_cudnn_choose(ConvCudnn *c, cudnnHandle_t handle, const Layer *l, int batch,
                      CudnnPasses needs, Error *e);

/* 1 when c is planned for l as it is now (batch, precision, its tensors' layouts) and needs. */
int conv_cudnn_planned(const ConvCudnn *c, const Layer *l, int batch, CudnnPasses needs);

/* One of l's tensors and its gradient: x and dx, y and dy, w and dw; as bits in moves. */
typedef enum { CUDNN_X = 1, CUDNN_Y = 2, CUDNN_W = 4 } CudnnTensor;

/* A tensor's layout change between the layer and cuDNN (cuda_transpose): each of the
 * [outer][rows][columns] matrices of the source transposed; outer 0: none. */
typedef struct CudnnTranspose {
    int outer, rows, columns;
} CudnnTranspose;

/* How c's passes move tensor t of l to cuDNN's layout (to_cudnn; from l's layout) or back from
 * it: none where l's layout of t is cuDNN's (the weights are OIHW, NCHW's), else [batch]
 * [channels][plane] matrices from channels-first, [batch][plane][channels] from channels-last
 * (the weights' outer: filters, their channels c/groups, their plane the taps). */
CudnnTranspose conv_cudnn_transpose(const ConvCudnn *c, const Layer *l, CudnnTensor t,
                                    int to_cudnn);

/* The tensors of l that c's passes transpose (CudnnTensor bits). */
int conv_cudnn_moves(const ConvCudnn *c, const Layer *l);

/* l's engine as `cdl info` and profiles name it: "cudnn", or "cudnn-nchw" where l's input or
 * output is NHWC but cuDNN runs c's descriptors NCHW (no NHWC algorithm for a pass needed); with
 * "-bn-ref" after it where bn_on_own (its batch norm runs on cdl's kernels, cuda/bn_cudnn.h). */
const char *conv_cudnn_engine(const ConvCudnn *c, const Layer *l, int bn_on_own);

/* The bytes of the net's workspace the passes of l (with c chosen) use: cuDNN's workspace, then
 * the rounded copies and 16-bit results that l's tensor types (Layer.in_storage, Layer.storage)
 * need in precisions other than fp32, and with NHWC descriptors the KRSC weights and their
 * gradient, and the transposed copies of the tensors (and their gradients) whose layout is not
 * cuDNN's. */
size_t conv_cudnn_scratch_bytes(const ConvCudnn *c, const Layer *l);

/* Destroys the descriptors (none created: nothing). */
void conv_cudnn_release(ConvCudnn *c);

/* y = conv(x, w), written whole (beta 0). */
void conv_cudnn_forward(const ConvCudnn *c, const Layer *l, const StepContext *ctx);

/* dw += conv_filter(x, dy) (beta 1, cdl's gradient contract); with dx, dx = conv_data(w, dy)
 * written or added by layer_input_delta_beta. dy is l->delta. */
void conv_cudnn_backward(const ConvCudnn *c, const Layer *l, const StepContext *ctx);

#endif
#endif
