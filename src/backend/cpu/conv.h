/* [convolutional] on the CPU: the layer's CPU state (ConvCpu, pointed to by Conv.cpu) and the
 * engines the dispatcher (conv.c) chooses from, one file each:
 *
 *   conv_im2col.c    the reference: im2col + gemm, image by image, several images per gemm, or one
 *                    image's work shared by the threads; backend/cpu/conv_small.h's direct kernel
 * for few-channel layers' forward and weight gradient conv_depthwise.c depthwise convolutions (one
 * input channel per group): direct loops conv_int8.c      int8 weights (l->quant): the reference's
 * products through qgemm_float conv_winograd.c  F(2x2, 3x3) for 3x3 same one-group layers
 * (backend/cpu/winograd.h) conv_dnnl.c      oneDNN (backend/cpu/dnnl_conv.h), its blocked layouts,
 * folded batch norm and fused residual sums
 *
 * Tensors are those of layers/convolutional.h: in [batch][c][h][w], out
 * [batch][filters][out_h][out_w], weights [filters][c/groups][size][size]. */
#ifndef CDL_CPU_CONV_H
#define CDL_CPU_CONV_H

#include "backend/cpu/conv_small.h"
#include "backend/cpu/dnnl_conv.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/qgemm.h"
#include "backend/cpu/winograd.h"
#include "layers/convolutional.h"

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define CONV_PARALLEL_MIN 32768

/* Floats one thread copies or compares at a time (a fused residual sum's input, kept weights). */
#define CONV_COPY_BLOCK 16384

/* The engine a layer's request (Conv.ask) asks for, by the CPU's rules (conv_engine_wanted). */
typedef enum ConvEngine { CONV_ENGINE_REF, CONV_ENGINE_DNNL, CONV_ENGINE_WINO } ConvEngine;

/* The reference's state (conv_im2col.c). */
typedef struct ConvIm2col {
    size_t cols_floats; /* im2col columns of one image and group (the scratch per sample) */
    float *w_flipped;   /* same: per group [c/groups][filters/groups][size][size], the
                           weights transposed and turned 180 degrees (a backward's) */
    float *dw_partial;  /* [n_partial][weights]: weight gradients of threads 1.. */
    int n_partial;
    /* Images side by side in one gemm (resize's choice; 1: image by image), what
     * conv_set_images_per_gemm asked for (0: from the shape), and the scratch floats one image
     * of such a gemm takes: its columns, then its rows of the product or of delta. */
    int images_per_gemm, images_asked;
    size_t image_floats;
    /* few input channels (a first layer), stride 1, one group, on the reference engine: the
     * forward and weight gradient of an image run backend/cpu/conv_small.h's direct kernel in
     * float32 (its plan fits in an image's im2col scratch) */
    int small;
    ConvSmall small_plan;
} ConvIm2col;

/* int8 weights (l->quant, conv_int8.c): qgemm_float's work for one image (of a chunk), per
 * thread. */
typedef struct ConvInt8 {
    unsigned char *work;
    size_t work_bytes;
    int threads;
} ConvInt8;

/* oneDNN's state (conv_dnnl.c). */
typedef struct ConvDnnl {
    /* precision=bf16 runs on oneDNN (dnnl_conv_bf16_runs, unless the cfg says engine=ref), x, w
     * and dy rounded by it; else on the rounding reference, as where oneDNN has only "ref:any" */
    int bf16_wanted;
    /* the layer runs on oneDNN (resize); fused: its forward applies the activation (relu or
     * leaky without batch norm), leaving l->pre unwritten (their derivatives read the output
     * only) */
    int on, fused;
    DnnlConv dc;
    /* in an inference net (no gradients) with batch norm: its inference forward folds the
     * running statistics into w_fold (work) and b_fold and runs them as the convolution's weights
     * and bias, the activation fused as without batch norm */
    int folded;
    float *w_fold, *b_fold;
    /* an inference net's weights (folded, with batch norm) in its steady forward primitive's own
     * layout (dnnl_conv_pack_weights), and b_fold, in kept memory, valid while packed_ready: made
     * once for the forwards of the same weights (StepContext.same_weights); NULL where they
     * cannot be packed ahead (then every forward folds and reorders) */
    void *w_packed;
    int packed_ready;
    /* an inference forward's Winograd twin of dc (conv_dnnl_winograd_prepare; not prepared where
     * none): the steady primitive, from the second forward of the same weights on */
    DnnlConv wino;
    /* A folded layer whose output a [shortcut] alone reads (conv_dnnl_fuse_sum): 1 + that
     * shortcut's activation, which the inference forward applies after adding its other input
     * (oneDNN's sum post-op) into the shortcut's output (Layer.sum_into); 0: none */
    int sum_act;
    /* the layer runs int8 (l->quant, calibrated) on oneDNN's int8 kernels (conv_dnnl_int8.c):
     * w_packed holds its int8 weights, with batch norm a_fold and b_fold its folded scale and
     * bias per channel (kept, valid while packed_ready; w_fold: ones, the weights folded) */
    int int8;
    float *a_fold;
} ConvDnnl;

/* Winograd's state (conv_winograd.c). */
typedef struct ConvWinograd {
    /* the layer runs its forward and input gradient on backend/cpu/winograd.h (resize: float32, not
     * int8); u: the transformed weights (the forward's, or the flipped ones of the input
     * gradient) */
    int on;
    /* its training passes run on Winograd too: the mini-batch ([net] batch / subdivisions) has
     * [net] winograd_min_tiles output tiles (else im2col; its passes in inference mode, such as
     * training's validation, stay on Winograd, as an inference net's, eval's, do) */
    int training;
    /* and its weight gradient too (resize: a training net on Winograd, winograd_grad_worth) */
    int grad;
    WinogradPlan plan;
    float *u;
    /* An inference net's (no gradients) transformed weights, kept from one forward to the next
     * outside the slabs (resize allocates them, release frees them): kept [16][k][c] and kept_bias
     * [k] made from the parameters (weights, then the stage's) seen holds a copy of, valid when
     * fresh; a forward whose parameters differ from seen (a load, an update, new running
     * statistics) makes them again, compared only where the net does not know them unchanged
     * (StepContext.same_weights). NULL: every forward makes them, into u and b_fold. */
    float *kept, *kept_bias, *seen;
    size_t kept_floats;
    int fresh;
    /* the layer is in an inference net (resize): its inference forwards fold the batch norm into
     * the weights (w_fold [k][c][3][3] and b_fold [k], work, with batch norm) before the
     * transform, and apply the bias and activation in the output transform; sum_act: 1 + the
     * activation of the [shortcut] whose sum they write too (conv_winograd_fuse_sum), 0: none */
    int fold;
    float *w_fold, *b_fold;
    int sum_act;
} ConvWinograd;

/* The layer's CPU state, Conv.cpu: made by its first resize, freed by its release; the buffers
 * point into the net's slabs (LayerState), but Winograd's kept weights and oneDNN's primitives. */
typedef struct ConvCpu {
    ConvEngine wanted; /* what Conv.ask asks for (the engine resize tries first) */
    int direct;        /* 1x1, stride 1, no padding: the input is its own column matrix */
    int depthwise;     /* one input channel per group: direct loops, no gemm */
    int same;          /* stride 1, output as large as the input: the input gradient is a
                          convolution of delta with the flipped weights, no col2im */
    int input_grads;   /* the backward makes an input gradient (LayerState.input_grads) */
    /* precision=bf16: the weights rounded by each forward, and the rounded input of a direct or
     * depthwise convolution [batch][c][h][w] (the others round their column matrices) */
    float *w_rounded, *x_rounded;
    ConvIm2col ref;
    ConvInt8 int8;
    ConvDnnl dnnl;
    ConvWinograd wino;
} ConvCpu;

/* From the next resize, l (a [convolutional] layer; others are left alone) puts images images side
 * by side in one gemm where it can (at most its thread's share of the batch); 1 runs image by
 * image, 0 (the default) chooses from the map size. For tests. */
void conv_set_images_per_gemm(Layer *l, int images);

/* ---- shared by the engines (conv.c) ---- */

/* The precision of the layer's products: an int8 layer's forward multiplies in int8. */
GemmPrecision conv_precision(const Layer *l);
/* The weights the products take: the bf16 copy the forward rounded, or the float32 weights. */
const float *conv_weights(const Layer *l, const ConvCpu *cpu);
/* The input the products of the backward take: the forward's bf16 copy of a direct or depthwise
 * convolution's, else the input (whose column matrices are rounded as they are made). */
const float *conv_input(const Layer *l, const ConvCpu *cpu);
/* Threads to spread the batch's images over, or 1 to run images one by one with threaded
 * kernels (when there are fewer images than threads, or they would split unevenly). */
int conv_image_threads(int batch);

/* ---- the reference, im2col + gemm (conv_im2col.c) ---- */

/* Sets the images per gemm for batch (ConvIm2col.images_per_gemm, image_floats) and raises
 * l->scratch_per_sample to the threads' chunks of them. */
void conv_im2col_plan(Layer *l, int batch);
/* Takes the work of a backward on threads: the threads' partial weight gradients and a same
 * layer's flipped weights (none in a net without gradients). */
void conv_im2col_resize(Layer *l, int threads, LayerState *st);
/* y = the convolution of x (after the rounding of bf16) for the batch, on whole images per
 * thread, chunks of images per gemm or one image's work over the threads. */
void conv_im2col_forward(Layer *l, const StepContext *ctx, const float *x, float *y);
/* dW += the weight gradient of the batch (delta rounded in bf16). */
void conv_im2col_weight_grads(Layer *l, const StepContext *ctx);
/* dx += the input gradient of the batch (a same layer's after conv_flip_weights). */
void conv_im2col_input_grads(Layer *l, const StepContext *ctx, float *dx);
/* ref.w_flipped[g][c][f][size-1-ki][size-1-kj] = W[g][f][c][ki][kj] (a same layer's). */
void conv_flip_weights(const Layer *l);

/* ---- depthwise (conv_depthwise.c) ---- */

/* out = the convolution of x, one plane of each filter at a time. */
void conv_depthwise_forward(const Layer *l, const float *x, float *out, int batch);
/* dW += the weight gradient, and dx (unless NULL) += the input gradient, of input x. */
void conv_depthwise_backward(const Layer *l, const float *x, float *dx, int batch);

/* ---- int8 weights (conv_int8.c) ---- */

/* Takes the work of threads threads for products of columns columns (images per gemm times the
 * map); none with float weights. */
void conv_int8_resize(Layer *l, int columns, int threads, LayerState *st);
/* The threads on which a forward of image_threads threads can run (as many as resize took). */
int conv_int8_threads(const Layer *l, int image_threads);
/* The input's int8 grid: the whole mini-batch's x on one grid, as quantize_dynamic's input
 * ({1, 0} with float weights). */
QuantParams conv_int8_input(Layer *l, const float *x, int batch);
/* out [filters][n] = W * cols [kdim][n] (ld n) through qgemm_float on the grid xq, with the
 * calling thread's work. */
void conv_int8_product(const Layer *l, QuantParams xq, int n, const float *cols, float *out);

/* ---- Winograd (conv_winograd.c) ---- */

/* Plans the layer for batch on threads (ConvWinograd.on) and takes its transformed weights
 * (work) and scratch; the kept weights of an inference net outside the slabs. */
void conv_winograd_resize(Layer *l, int batch, int threads, LayerState *st);
/* The pass runs on Winograd: planned so by resize, still float32 (net_set_precision may have
 * changed it since), and in inference mode or of a mini-batch with tiles enough. */
int conv_winograd_runs(const Layer *l, const StepContext *ctx);
/* y = the convolution of x, returning 0 (the caller applies the bias or batch norm and the
 * activation); or, for a folding layer's inference forward (ConvWinograd.fold), l->out (or the
 * [shortcut]'s output, Layer.sum_into) with the folded batch norm or bias and the activation
 * applied, returning 1 (y unused). */
int conv_winograd_forward(Layer *l, const StepContext *ctx, const float *x, float *y);
/* LayerKernels.fuse_sum of a folding layer with a linear activation: its inference forwards add
 * the [shortcut]'s other input and apply act (winograd_fuses_activation) in the output transform,
 * all three tensors plain NCHW (the layer's output is never blocked, the shortcut ties its own). */
int conv_winograd_fuse_sum(Layer *l, int act);
/* dW += the weight gradient in the transformed domain. */
void conv_winograd_weight_grads(Layer *l, const StepContext *ctx);
/* dx = (fresh) or += the input gradient, a Winograd convolution of delta with the flipped
 * weights (conv_flip_weights). */
void conv_winograd_input_grads(Layer *l, const StepContext *ctx, float *dx, int fresh);
void conv_winograd_release(ConvCpu *cpu);

/* ---- oneDNN (conv_dnnl.c) ---- */

/* The oneDNN description of l's convolution for batch images: its shapes and window, with the
 * eltwise fields of activation act (relu, leaky: slope 0.1, relu6: bound 6) set when fused; the
 * other fields 0. */
DnnlConvDesc conv_dnnl_desc(const Layer *l, int batch, ActivationKind act, int fused);

/* Makes the oneDNN primitives for batch (the same ones on resize's measuring and carving calls)
 * and raises the scratch to what they need; dnnl.on = 0 when the layer stays on the reference. */
int conv_dnnl_resize(Layer *l, int batch, LayerState *st, Error *e);
/* The forward runs on oneDNN: not a folded layer's training forward (batch statistics), which
 * takes the reference's path, whose scratch the layer keeps. */
int conv_dnnl_forward_runs(const Layer *l, const StepContext *ctx);
/* The whole forward on oneDNN: the convolution with its fused bias, activation or sum, then the
 * batch norm and activation that are not fused. */
void conv_dnnl_forward(Layer *l, const StepContext *ctx);
/* The weights' and input's gradients, after the activation's and batch norm's (else the bias
 * gradient comes with the weights'): oneDNN adds them into the gradients. */
void conv_dnnl_backward(Layer *l, const StepContext *ctx);
/* LayerKernels.layout and fuse_sum: a layer on oneDNN may take and give nChw8c, and a folded one
 * may write a [shortcut]'s sum. */
int conv_dnnl_layout(const Layer *l, int k);
/* LayerKernels.gives_nhwc (which: DNNL_CONV_Y_BLOCKED) and takes_nhwc (DNNL_CONV_X_BLOCKED) of a
 * float32 layer on oneDNN in an inference net. */
int conv_dnnl_nhwc(const Layer *l, int which);

/* ---- int8 on oneDNN (conv_dnnl_int8.c) ---- */

/* Makes the layer's int8 primitive for batch (dnnl.on and dnnl.int8 = 1), or leaves dnnl.on 0
 * where oneDNN has only its reference kernel for it (the own int8 kernels run it then). */
int conv_dnnl_int8_resize(Layer *l, int batch, LayerState *st, Error *e);
void conv_dnnl_int8_forward(Layer *l, const StepContext *ctx);
/* LayerKernels.pass_codes of two int8 layers on oneDNN (conv_dnnl_int8.c's int8 chains). */
int conv_dnnl_int8_pass_codes(const Layer *l, const Layer *reader);
/* LayerKernels.gives_nhwc of an int8 layer on oneDNN. */
int conv_dnnl_int8_gives_nhwc(const Layer *l);
int conv_dnnl_fuse_sum(Layer *l, int act);

#endif
