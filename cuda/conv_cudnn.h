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
 * Channels-last (Layer.channels_last or in_channels_last[0], core/net_channels_last.h), every
 * descriptor is NHWC, grouped and depthwise layers too: x [batch][h][w][c], y
 * [batch][oh][ow][filters], w KRSC [filters][size][size][c/groups], a copy of the OIHW weights
 * transposed into the workspace (the weight gradient transposed back, added to the OIHW one).
 * One layout for all three, as PyTorch gives cuDNN (its convolution makes input and weight
 * contiguous in one memory format): where the layer's input or output is the other, NCHW one
 * (the net's first convolution reads the NCHW net input; the last before a reader without NHWC
 * kernels writes NCHW), that tensor and its gradient are transposed in the workspace
 * (cuda_transpose) on their way to or from cuDNN.
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

typedef struct ConvCudnn {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    int batch;               /* the batch the descriptors describe, 0 before conv_cudnn_describe */
    GemmPrecision precision; /* the layer's, which the descriptors describe */
    ElemType type;           /* of x, y, w in cuDNN's view: precision_storage(precision) */
    int nhwc;                /* 1: the descriptors are NHWC (KRSC), 0: NCHW (KCRS) */
    /* Chosen by conv_cudnn_choose for that batch, with the workspace the three need (the most) */
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    size_t workspace_bytes;
} ConvCudnn;

/* Creates c's descriptors if they are not yet and sets them to layer l ([convolutional], its
 * in_shape and out_shape set by parse) over batch samples in l->precision, NHWC where l's input
 * or output is (Layer.in_channels_last, Layer.channels_last); no handle, no device. Returns CDL_OK,
 * or CDL_ERUNTIME naming the layer and cuDNN's status. */
int conv_cudnn_describe(ConvCudnn *c, const Layer *l, int batch, Error *e);

/* Picks the fastest deterministic direct algorithm of each pass by cuDNN's heuristics
 * (cudnnGet*Algorithm_v7, which runs nothing) for c's descriptors (FMA math only in fp32), and
 * their workspace. */
int conv_cudnn_choose(ConvCudnn *c, cudnnHandle_t handle, const Layer *l, Error *e);

/* The bytes of the net's workspace the passes of l (with c chosen) use: cuDNN's workspace, then
 * the rounded copies and 16-bit results that l's tensor types (Layer.in_storage, Layer.storage)
 * need in precisions other than fp32, and channels-last the KRSC weights and their gradient and
 * the transposed copies of an NCHW input or output and of their gradients. */
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
