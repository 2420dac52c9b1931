/* 2-D convolution through oneDNN (libdnnl, C API): the primitives of one layer for one batch
 * size, made once (dnnl_conv_prepare, at a net's resize) and run many times. Tensors are plain
 * NCHW float32 as everywhere in cdl:
 *
 *   x  [batch][in_c][in_h][in_w]       y  [batch][out_c][out_h][out_w]
 *   w  [out_c][in_c/groups][size_h][size_w] b  [out_c]
 *
 * The primitives choose their own layouts (dnnl_format_tag_any: on AVX2 the direct jit:avx2
 * kernels on nChw8c activations and 8i8o-blocked weights, where plain NCHW would get im2col and
 * oneDNN's sgemm); each call reorders its plain inputs into those layouts and its outputs back,
 * in the caller's scratch buffer, which also holds oneDNN's scratchpad (user scratchpad mode): it
 * comes from the net's slabs, so no pass allocates. Built without oneDNN (make DNNL=0, no
 * CDL_DNNL), every dnnl_conv_prepare fails and dnnl_conv_built returns 0. */
#ifndef CDL_DNNL_CONV_H
#define CDL_DNNL_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "core/activation.h"
#include "core/window2d.h"
#include "util/error.h"

/* The convolution a DnnlConv computes. */
typedef struct DnnlConvDesc {
    int batch, in_c, in_h, in_w, out_c, out_h, out_w;
    Window2d win; /* the kernel's extent, stride and padding per axis */
    int groups;
    int bias;    /* 1: y += b in the forward, and db in the weights' backward */
    int sum;     /* 1: y += the convolution (oneDNN's sum post-op, after the bias): the forward's
                    y comes holding what to add */
    int eltwise; /* 1: y = act(y) fused after the bias (and sum) */
    /* eltwise's activation: relu, leaky, relu6, logistic, swish, hardswish or hardsigmoid */
    ActivationKind act;
    int backward;  /* 1: also the weights' backward (and the bias's, with bias) */
    int data_grad; /* 1: also the input's backward */
    int winograd;  /* dnnl_conv_preferred and dnnl_conv_inference_preferred only: 1 when the
                    * reference would run it on Winograd */
    int bf16;      /* 1: x, w and dy taken in bf16 (rounded to nearest even), float32 sums, y,
                      dx, dw and db float32: the numerics of torch.autocast("cpu",
                      torch.bfloat16). On oneDNN's bf16 kernels (its reorders round) where they
                      outrun its float32 ones (dnnl_conv_bf16_kernels), else on its float32
                      kernels, the operands rounded into float32 copies (DNNL_ROUND_FLOATS) */
    /* 1: an inference forward (neither backward) of a 3x3 stride-1 float32 convolution may run on
     * oneDNN's Winograd kernels (F(4x4, 3x3) or F(2x2, 3x3): fewer products, rounding errors a
     * few times the direct ones'), where it has them */
    int winograd_inference;
    /* 1: an int8 inference forward (cdl quantize's calibrated layers): x (float32) quantized to
     * uint8 codes nhwc, round(x / x_scale + x_zero_point) clamped to 0..QUANT_CODE_MAX as the own
     * kernels' (quantize_nhwc; so AVX2's vpmaddubsw pairs cannot saturate), w the int8 values
     * [out_c][in_c/groups][size_h][size_w] of per-channel scales w_scales [out_c] (read by
     * dnnl_conv_prepare only), int32 sums of (code - zero point) * w; y = x_scale * w_scales[j] *
     * sum, then times a[j] with channel_scale (a folded batch norm), plus b[j], then the eltwise:
     * dnnl_conv_forward_int8. No bias or sum here.
     */
    int int8;
    float x_scale;
    int x_zero_point;
    const float *w_scales;
    int channel_scale;
    /* int8 chains (an int8 desc's, conv_dnnl_int8.c): with x_codes, x comes as the uint8 codes
     * of its grid already, [batch][h][w][c] (nhwc), taken as they are; with y_codes, y is written
     * as the uint8 codes of the next layer's grid (y_scale, y_zero_point), nhwc: round-to-nearest-
     * even of y / y_scale + y_zero_point clamped to 0..QUANT_CODE_MAX, where a and b come divided
     * by y_scale already (the eltwise's bound is divided here) */
    int x_codes, y_codes;
    float y_scale;
    int y_zero_point;
    /* 1: an int8 desc's y (float32) is written in nhwc, [batch][out_h][out_w][out_c], the
     * primitive's own layout, for a reader that takes it so (no reorder) */
    int y_nhwc;
} DnnlConvDesc;

/* Whether desc's kernel is 3x3 with stride 1 along both axes (Winograd's shape). */
static inline int dnnl_conv_is_3x3_stride1(const DnnlConvDesc *desc)
{
    return window2d_is_square(desc->win) && desc->win.size_h == 3 && desc->win.stride_h == 1;
}

/* oneDNN's handles (opaque here; dnnl_primitive_t and dnnl_memory_t in dnnl.h). */
struct dnnl_primitive;
struct dnnl_memory;

enum { DNNL_CONV_FWD, DNNL_CONV_BWD_DATA, DNNL_CONV_BWD_WEIGHTS, DNNL_CONV_PRIMS };
enum { DNNL_CONV_MAX_ARGS = 5 };

enum { DNNL_ROUND_NONE, DNNL_ROUND_PACK, DNNL_ROUND_FLOATS };

/* One argument of a primitive: the caller's plain tensor, and where the primitive wants another
 * layout (oneDNN's blocked ones, e.g. nChw8c activations), a copy in the scratch buffer that a
 * reorder fills before the primitive (inputs) or empties into the plain tensor after it
 * (outputs). */
typedef struct DnnlConvArg {
    int arg;                        /* DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, ... */
    int out;                        /* 1: the primitive writes it */
    int add;                        /* 1: an output added into the caller's tensor (+=) */
    int ready;                      /* 1: an input the previous primitive left in inner */
    struct dnnl_memory *user;       /* plain, at the caller's pointer */
    struct dnnl_memory *inner;      /* the primitive's layout, NULL when that is the plain one */
    struct dnnl_primitive *reorder; /* user to inner (inputs) or inner to user (outputs) */
    /* DNNL_ROUND_PACK: a bf16 input (x or dy) whose inner is nChw8c: a caller's float32 nChw8c
     * tensor (dnnl_conv_blocked) is rounded into it element by element (bf16_pack), no reorder.
     * DNNL_ROUND_FLOATS: an operand (x, w or dy) of a bf16 convolution on float32 kernels: inner
     * is always a copy in the scratch, rounded there (bf16_round_floats) after its reorder, or
     * from the caller's tensor where that has inner's layout. */
    int round;
    /* 1: an int8 forward's x (float32 NCHW), quantized into its inner uint8 nhwc by
     * quantize_nhwc (no reorder) */
    int quantize;
    /* 1: an int8 forward's y whose inner is float32 nhwc and the caller's NCHW, moved into it by
     * nhwc_to_nchw (nhwc_to_nchw_runs) instead of the reorder */
    int transpose;
    size_t offset; /* inner's bytes from the scratch buffer's aligned start */
} DnnlConvArg;

/* One primitive (forward, backward data or backward weights) with its arguments. */
typedef struct DnnlConvPrim {
    struct dnnl_primitive *prim; /* NULL where not asked for */
    int n_args;
    DnnlConvArg args[DNNL_CONV_MAX_ARGS];
    struct dnnl_memory *scratchpad; /* oneDNN's own, after the blocked copies; NULL if none */
    size_t scratchpad_offset;
    size_t bytes; /* the blocked copies and the scratchpad, 64-byte aligned each */
    /* an int8 forward's input zero point (a runtime argument of oneDNN's), at DnnlConv's */
    struct dnnl_memory *zero_point;
} DnnlConvPrim;

typedef struct DnnlConv {
    DnnlConvDesc desc; /* what the primitives compute (valid when prepared) */
    int prepared;
    DnnlConvPrim p[DNNL_CONV_PRIMS];
    /* Bytes of the one scratch buffer dnnl_conv_* take (any alignment): the largest primitive's
     * blocked copies and scratchpad, plus room to align it to 64 bytes. */
    size_t scratch_bytes;
    char impl[DNNL_CONV_PRIMS][32]; /* oneDNN's implementation names ("jit:avx2", ...) */
    int32_t zero_point;             /* desc.x_zero_point, where the primitive reads it */
} DnnlConv;

/* 1 when this cdl is built with oneDNN. */
int dnnl_conv_built(void);
/* oneDNN's version ("2.6.3") and the instruction set it dispatches to ("avx2", ...) into buf;
 * "not built" without it. */
void dnnl_describe(char *buf, size_t size);

/* 1 when oneDNN's bf16 kernels outrun its float32 ones on this CPU, so that a DnnlConvDesc with
 * bf16 runs on them: ISA avx512_core_amx, or avx512_core_bf16 (vdpbf16ps) on AMD, where it runs
 * at about twice the float32 FMA rate (Zen 4 and 5). Intel's cores without AMX issue vdpbf16ps
 * at half the rate of their two float32 FMA units (docs/precision.md, bf16 mixed precision). A
 * fixed rule on the CPU, no timing, so that results are reproducible. 0 without oneDNN. */
int dnnl_conv_bf16_kernels(void);
/* 1 when oneDNN runs bf16 convolutions here (engine=auto's choice for precision=bf16): on its
 * bf16 kernels (dnnl_conv_bf16_kernels), or in a build for AVX-512 on its float32 ones with the
 * operands rounded, as it runs every float32 convolution there; 0 on AVX2, where the rounding
 * reference runs them, and without oneDNN. */
int dnnl_conv_bf16_runs(void);

/* 1 when oneDNN's blocked kernels (with the reorders) measured faster than cdl's reference on
 * desc's shape and winograd (batch, bias and the rest aside): [net] engine=auto's fixed rule
 * (docs/engines.md): every convolution with AVX-512, stride-1 3x3 ones from 64 channels on maps
 * from 8x8 with AVX2. 0 in a build without oneDNN. */
int dnnl_conv_preferred(const DnnlConvDesc *desc);

/* 1 when an inference forward of desc's shape runs faster on oneDNN (batch norm folded, the
 * activation and residual sum fused, nChw8c kept between layers) than on cdl's Winograd (desc's
 * winograd): every convolution with AVX-512 (oneDNN's own Winograd there); with AVX2, where
 * oneDNN 2.6 has only direct kernels, all but stride-1 3x3 ones on Winograd with maps from 14x14
 * (docs/engines.md, "Inference on oneDNN"). 0 in a build without oneDNN. */
int dnnl_conv_inference_preferred(const DnnlConvDesc *desc);
/* Makes d's primitives for desc, unless d already holds them (then nothing is done). Releases
 * any others first. Returns CDL_ERUNTIME when oneDNN has no implementation for it. */
int dnnl_conv_prepare(DnnlConv *d, const DnnlConvDesc *desc, Error *e);
/* Releases d's primitives (d zeroed; a zeroed d is released already). */
void dnnl_conv_release(DnnlConv *d);

/* Channels per block of the blocked activation layout that cdl passes between layers on oneDNN
 * (Layer.blocked), DNNL_LANES, written nChw8c in the comments: nChw16c in a build for AVX-512,
 * the layout of oneDNN's avx512_core kernels, else nChw8c, that of its avx2 ones. Where oneDNN
 * picks another layout (an older CPU than the build's, ONEDNN_MAX_CPU_ISA) the layers stay plain
 * (dnnl_conv_blocked). */
#if defined(__AVX512F__)
#define DNNL_LANES 16
#else
#define DNNL_LANES 8
#endif

/* 1 when oneDNN's convolution kernels on this CPU block activations in DNNL_LANES channels, as
 * this build does (a build without -march for AVX-512 run on an AVX-512 CPU, or the reverse,
 * keeps every layer plain); 0 without oneDNN. */
int dnnl_conv_lanes_native(void);

/* Bits of dnnl_conv_forward's blocked: its x, its y in nChw8c ([batch][c/L][h][w][L], L =
 * DNNL_LANES, c a multiple of L), as the forward's own layout, without the reorder; its w as
 * dnnl_conv_pack_weights wrote it (the forward's own layout). */
enum { DNNL_CONV_X_BLOCKED = 1, DNNL_CONV_Y_BLOCKED = 2, DNNL_CONV_W_PACKED = 4 };

/* The bytes of the forward's weights in the layout its primitive takes them (a prepared d); 0
 * where they cannot be packed ahead (bf16 operands rounded on float32 kernels), and without
 * oneDNN. An int8 forward's hold the weights' sums it corrects the zero point with. */
size_t dnnl_conv_packed_weights_bytes(const DnnlConv *d);
/* packed (dnnl_conv_packed_weights_bytes) = the plain weights w (float32, or int8 in an int8
 * desc) in the forward's own layout, for forwards with DNNL_CONV_W_PACKED: an inference net
 * reorders its weights once, not every forward. */
void dnnl_conv_pack_weights(DnnlConv *d, const void *w, void *packed);

/* 1 when d's forward (prepared) reads x (DNNL_CONV_X_BLOCKED) or writes y (DNNL_CONV_Y_BLOCKED)
 * in nChw8c, the same size as plain NCHW, and so do its backward primitives (those prepared)
 * with x and dx, or dy: then it can take those tensors so as they are. */
int dnnl_conv_blocked(const DnnlConv *d, int which);
/* 1 when d's forward (prepared) is a float32 inference one (no backward primitives) that reads x
 * (which: DNNL_CONV_X_BLOCKED) or writes y (DNNL_CONV_Y_BLOCKED) in nhwc, [batch][h][w][c] (oneDNN
 * 2.6's brgconv kernels on AVX-512 for channels not in whole blocks of 16): then it can take that
 * tensor so as it is, named by the same bit in the forward's blocked. */
int dnnl_conv_nhwc(const DnnlConv *d, int which);

/* y = conv(x, w) (+ b) (then the fused eltwise); scratch holds d->scratch_bytes. blocked: x
 * and y in nChw8c (dnnl_conv_blocked) or nhwc (dnnl_conv_nhwc) where its bits say so, else plain
 * NCHW. */
void dnnl_conv_forward(DnnlConv *d, const float *x, const float *w, const float *b, float *y,
                       void *scratch, unsigned blocked);
/* An int8 desc's forward (see DnnlConvDesc.int8): y [batch][out_c][out_h][out_w] (plain NCHW
 * float32, with y_nhwc nhwc float32, with y_codes nhwc uint8 codes) = the convolution of x (plain
 * NCHW float32 quantized, or with x_codes nhwc uint8 codes) by w_packed (dnnl_conv_pack_weights' of
 * the int8 values), scaled, times a [out_c] (with channel_scale; else ignored), plus b [out_c]. */
void dnnl_conv_forward_int8(DnnlConv *d, const void *x, const void *w_packed, const float *a,
                            const float *b, void *y, void *scratch);
/* The backward for x, w and the output's gradient dy: dw (and db with bias) += the gradients of
 * the weights (and bias), then, unless dx is NULL, dx += the input's (desc.data_grad), or dx =
 * with dx_fresh (what dx held is ignored: in nChw8c the primitive writes it without the copy).
 * blocked: x and dx (DNNL_CONV_X_BLOCKED), dy (DNNL_CONV_Y_BLOCKED) in nChw8c where its bits say
 * so (then dnnl_conv_blocked holds for the backward's layouts too), else plain NCHW. */
void dnnl_conv_backward(DnnlConv *d, const float *x, const float *dy, const float *w, float *dx,
                        float *dw, float *db, void *scratch, unsigned blocked, int dx_fresh);

#endif
