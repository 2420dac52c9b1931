/* Convolution through oneDNN's C API: primitive descriptors whose layouts oneDNN chooses
 * (format_tag_any), reorders between those and cdl's plain NCHW tensors and weights, user-mode
 * scratchpads, memory objects whose data handles each call points at the caller's buffers or
 * into its scratch. One CPU engine and one in-order stream serve the whole process. */
#include "backend/cpu/dnnl_conv.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bf16.h"
#include "backend/cpu/nhwc_to_nchw.h"
#include "backend/cpu/quantize.h"
#include "backend/cpu/quantize_nhwc.h"

#ifdef CDL_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

int dnnl_conv_built(void)
{
    return 1;
}

static const char *isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41:
        return "sse41";
    case dnnl_cpu_isa_avx:
        return "avx";
    case dnnl_cpu_isa_avx2:
        return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
        return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
        return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
        return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
        return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
        return "avx512_core_amx";
    default:
        return "other";
    }
}

void dnnl_describe(char *buf, size_t size)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, size, "%d.%d.%d, ISA %s, %s threading", v->major, v->minor, v->patch,
             isa_name(dnnl_get_effective_cpu_isa()),
             v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "non-OpenMP");
}

/* engine=auto's fixed rule (docs/engines.md, "Convolution engines"). With AVX-512 (DNNL_LANES 16,
 * oneDNN's avx512_core kernels on nChw16c) every convolution: at 1 thread resnet18_cifar, resnet18
 * 224, fashion and cifar_small trained 1.17-1.25x faster per step all on oneDNN than all on the
 * reference (own Winograd on AVX2, im2col + OpenBLAS SkylakeX), and mixing engines in a net costs
 * reorders at every change; the layers on Winograd go there too unless DNNL_AUTO_WINOGRAD is set
 * to 0 (then they stay on the reference: to retune when Winograd on AVX-512 measures faster than
 * oneDNN there). With AVX2 (nChw8c) the rule of the AVX2 machine: with the reorders, oneDNN's
 * direct kernels came out about even with the reference (0.8-1.1x its time) on stride-1 3x3
 * convolutions from 64 channels on maps from 8x8, and slower on 1x1 ones, stride 2, the first
 * layers (1 or 3 channels) and fashion's 32-channel and 7x7 ones. Measured on training steps:
 * conv.c asks for oneDNN for every layer of an inference net, whatever this says. */
#ifndef DNNL_AUTO_WINOGRAD
#define DNNL_AUTO_WINOGRAD 1
#endif
int dnnl_conv_preferred(const DnnlConvDesc *desc)
{
    if (DNNL_LANES == 16)
        return !desc->winograd || DNNL_AUTO_WINOGRAD;
    return desc->groups == 1 && dnnl_conv_is_3x3_stride1(desc) && desc->in_c >= 64 &&
           desc->in_h >= 8 && desc->in_w >= 8;
}

/* With AVX2 measured on an AVX2-only Zen 3 under other engineers' load, resnet18 and resnet50
 * batch 1, 1 thread, per-layer minima: oneDNN's direct jit:avx2 kernels took 2.6-2.8 ms on the
 * 64-channel 56x56, 128 at 28x28 and 256 at 14x14 layers, cdl's Winograd F(2x2, 3x3) 1.6-2.4 ms
 * (with its batch norm pass), but 3.8-4.1 ms against 3.6-3.8 on the 512-channel 7x7 ones
 * (docs/engines.md, "Inference on oneDNN"). */
#define WINOGRAD_INFERENCE_MIN_MAP 14
int dnnl_conv_inference_preferred(const DnnlConvDesc *desc)
{
    if (DNNL_LANES == 16 || !desc->winograd)
        return 1;
    return desc->in_h < WINOGRAD_INFERENCE_MIN_MAP || desc->in_w < WINOGRAD_INFERENCE_MIN_MAP;
}

/* 1 when oneDNN dispatches to want or a later ISA (the ISA bits nest: amx holds bf16's). */
static int isa_at_least(dnnl_cpu_isa_t want)
{
    return ((unsigned)dnnl_get_effective_cpu_isa() & (unsigned)want) == (unsigned)want;
}

/* Measured on Intel family 6 model 207 (Emerald Rapids, no AMX), one core, 12 independent
 * chains: vdpbf16ps 85 GFLOP/s (64 FLOP each) against vfmadd231ps's 173; resnet18_cifar b64
 * trained at 24.7 img/s on the bf16 kernels against 37.5 on the float32 ones. */
int dnnl_conv_bf16_kernels(void)
{
    __builtin_cpu_init();
    return isa_at_least(dnnl_cpu_isa_avx512_core_amx) ||
           (isa_at_least(dnnl_cpu_isa_avx512_core_bf16) && __builtin_cpu_is("amd"));
}

int dnnl_conv_bf16_runs(void)
{
    return DNNL_LANES == 16 || dnnl_conv_bf16_kernels();
}

int dnnl_conv_lanes_native(void)
{
    return isa_at_least(dnnl_cpu_isa_avx512_core) == (DNNL_LANES == 16);
}

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static dnnl_status_t engine_status = dnnl_runtime_error;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void make_engine(void)
{
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    if (engine_status == dnnl_success)
        engine_status = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
}

static void release_arg(DnnlConvArg *a)
{
    if (a->user)
        dnnl_memory_destroy(a->user);
    if (a->inner)
        dnnl_memory_destroy(a->inner);
    if (a->reorder)
        dnnl_primitive_destroy(a->reorder);
}

void dnnl_conv_release(DnnlConv *d)
{
    for (int k = 0; k < DNNL_CONV_PRIMS; k++) {
        DnnlConvPrim *p = &d->p[k];
        if (p->prim)
            dnnl_primitive_destroy(p->prim);
        if (p->scratchpad)
            dnnl_memory_destroy(p->scratchpad);
        if (p->zero_point)
            dnnl_memory_destroy(p->zero_point);
        for (int i = 0; i < p->n_args; i++)
            release_arg(&p->args[i]);
    }
    memset(d, 0, sizeof *d);
}

/* The plain descriptors of one convolution: x, y, bias, and weights ([groups][out/g][in/g][k][k]
 * as goihw when grouped, else oihw: the same bytes as cdl's [out_c][in_c/groups][k][k]; int8 in
 * an int8 desc); any: the same shapes with the layout left to oneDNN, float32 (y, and the
 * gradients dx and dw), and in the operands' type (bf16 or float32: x, w and dy as the products
 * take them; uint8 x and int8 w in an int8 desc); channel: an int8 forward's a and b
 * [1][out_c][1][1]. */
typedef struct Mds {
    dnnl_memory_desc_t x, w, b, y, x_any, w_any, y_any, x_op, w_op, y_op, channel;
    /* Padding is symmetric, as PyTorch gives it: oneDNN's output size (in + 2 pad - size) /
     * stride + 1 rounds down as ours does, leaving what the last window misses unread. */
    dnnl_dims_t strides, pad;
} Mds;

/* 1 when c's operands are bf16 tensors (oneDNN's bf16 kernels), 0 when float32 ones. */
static int bf16_operands(const DnnlConvDesc *c)
{
    return c->bf16 && dnnl_conv_bf16_kernels();
}

static dnnl_status_t make_mds(const DnnlConvDesc *c, Mds *m)
{
    memset(m, 0, sizeof *m);
    const dnnl_dims_t x = {c->batch, c->in_c, c->in_h, c->in_w};
    const dnnl_dims_t y = {c->batch, c->out_c, c->out_h, c->out_w};
    const dnnl_dims_t b = {c->out_c};
    const dnnl_format_tag_t any = dnnl_format_tag_any;
    const dnnl_data_type_t op = c->int8 ? dnnl_u8 : bf16_operands(c) ? dnnl_bf16 : dnnl_f32;
    const dnnl_data_type_t w_op = c->int8 ? dnnl_s8 : op, w_type = c->int8 ? dnnl_s8 : dnnl_f32;
    const dnnl_dims_t channel = {1, c->out_c, 1, 1};
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&m->x, 4, x, dnnl_f32, dnnl_nchw);
    s = s ? s : dnnl_memory_desc_init_by_tag(&m->channel, 4, channel, dnnl_f32, dnnl_nchw);
    s = s ? s : dnnl_memory_desc_init_by_tag(&m->y, 4, y, dnnl_f32, dnnl_nchw);
    s = s ? s : dnnl_memory_desc_init_by_tag(&m->x_any, 4, x, dnnl_f32, any);
    s = s ? s : dnnl_memory_desc_init_by_tag(&m->y_any, 4, y, dnnl_f32, any);
    s = s ? s : dnnl_memory_desc_init_by_tag(&m->x_op, 4, x, op, any);
    s = s ? s : dnnl_memory_desc_init_by_tag(&m->y_op, 4, y, op, any);
    s = s ? s : dnnl_memory_desc_init_by_tag(&m->b, 1, b, dnnl_f32, dnnl_x);
    if (c->int8) { /* codes in nhwc: as they are (x_codes), or made by quantize_nhwc */
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->x_op, 4, x, dnnl_u8, dnnl_nhwc);
        if (c->x_codes)
            m->x = m->x_op;
    }
    if (c->int8 && (c->y_codes || c->y_nhwc)) { /* codes or nhwc floats out, as they are */
        const dnnl_data_type_t type = c->y_codes ? dnnl_u8 : dnnl_f32;
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->y, 4, y, type, dnnl_nhwc);
        m->y_any = m->y;
    }
    if (c->groups > 1) {
        const dnnl_dims_t w = {c->groups, c->out_c / c->groups, c->in_c / c->groups, c->win.size_h,
                               c->win.size_w};
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->w, 5, w, w_type, dnnl_goihw);
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->w_any, 5, w, dnnl_f32, any);
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->w_op, 5, w, w_op, any);
    } else {
        const dnnl_dims_t w = {c->out_c, c->in_c, c->win.size_h, c->win.size_w};
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->w, 4, w, w_type, dnnl_oihw);
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->w_any, 4, w, dnnl_f32, any);
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->w_op, 4, w, w_op, any);
    }
    m->strides[0] = c->win.stride_h;
    m->strides[1] = c->win.stride_w;
    m->pad[0] = c->win.pad_h;
    m->pad[1] = c->win.pad_w;
    return s;
}

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* The plain descriptor of primitive argument arg. */
static const dnnl_memory_desc_t *plain_md(const Mds *m, int arg)
{
    switch (arg) {
    case DNNL_ARG_SRC:
    case DNNL_ARG_DIFF_SRC:
        return &m->x;
    case DNNL_ARG_WEIGHTS:
    case DNNL_ARG_DIFF_WEIGHTS:
        return &m->w;
    case DNNL_ARG_BIAS:
    case DNNL_ARG_DIFF_BIAS:
        return &m->b;
    case DNNL_ARG_DST:
    case DNNL_ARG_DIFF_DST:
        return &m->y;
    default: /* an int8 forward's a or b (post-op arguments) */
        return &m->channel;
    }
}

/* 1 when g is one of the tensors of which: x and dx (DNNL_CONV_X_BLOCKED), y and dy, the
 * forward's w (DNNL_CONV_W_PACKED). */
static int arg_of(const DnnlConvArg *g, unsigned which)
{
    return g->arg == DNNL_ARG_SRC || g->arg == DNNL_ARG_DIFF_SRC
               ? (which & DNNL_CONV_X_BLOCKED) != 0
           : g->arg == DNNL_ARG_DST || g->arg == DNNL_ARG_DIFF_DST
               ? (which & DNNL_CONV_Y_BLOCKED) != 0
           : g->arg == DNNL_ARG_WEIGHTS ? (which & DNNL_CONV_W_PACKED) != 0
                                        : 0;
}

/* nChw8c, or nChw16c with AVX-512 (DNNL_LANES): the blocked layout activations pass in. */
static dnnl_format_tag_t blocked_tag(void)
{
    return DNNL_LANES == 16 ? dnnl_nChw16c : dnnl_nChw8c;
}

/* 1 when inner's layout is tag in type, that of plain (NCHW float32) in float32 the same size as
 * plain (for a blocked tag: whole blocks). */
static int layout_like(const_dnnl_memory_t plain, const_dnnl_memory_t inner, dnnl_data_type_t type,
                       dnnl_format_tag_t tag)
{
    const dnnl_memory_desc_t *in = NULL, *pl = NULL;
    dnnl_memory_desc_t f32, typed;
    return !dnnl_memory_get_memory_desc(inner, &in) && !dnnl_memory_get_memory_desc(plain, &pl) &&
           pl->ndims == 4 && !dnnl_memory_desc_init_by_tag(&f32, 4, pl->dims, dnnl_f32, tag) &&
           !dnnl_memory_desc_init_by_tag(&typed, 4, pl->dims, type, tag) &&
           dnnl_memory_desc_equal(in, &typed) &&
           dnnl_memory_desc_get_size(&f32) == dnnl_memory_desc_get_size(pl);
}

/* 1 when md is the nhwc layout of a tensor of dims (NCHW order) and type. */
static int is_nhwc(const dnnl_memory_desc_t *md, const dnnl_dims_t dims, dnnl_data_type_t type)
{
    dnnl_memory_desc_t nhwc;
    return !dnnl_memory_desc_init_by_tag(&nhwc, 4, dims, type, dnnl_nhwc) &&
           dnnl_memory_desc_equal(md, &nhwc);
}

/* Argument a of pd: its plain memory, and where pd chose another layout or a->add asks for it,
 * that layout's memory at p->bytes in the scratch and the reorder between the two (for a->add
 * one that adds into the plain tensor: a sum post-op); an operand of a bf16 convolution on float32
 * kernels (DNNL_ROUND_FLOATS) always gets the scratch copy, which run() rounds. */
static dnnl_status_t make_arg(DnnlConvPrim *p, DnnlConvArg *a, const Mds *m,
                              const_dnnl_primitive_desc_t pd, const DnnlConvDesc *c)
{
    const dnnl_memory_desc_t *user = plain_md(m, a->arg);
    const dnnl_memory_desc_t *inner =
        dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, a->arg);
    if (!inner)
        return dnnl_runtime_error;
    const int operand =
        a->arg == DNNL_ARG_SRC || a->arg == DNNL_ARG_WEIGHTS || a->arg == DNNL_ARG_DIFF_DST;
    if (c->bf16 && !bf16_operands(c) && operand)
        a->round = DNNL_ROUND_FLOATS;
    dnnl_status_t s = dnnl_memory_create(&a->user, user, engine, DNNL_MEMORY_NONE);
    const int same = dnnl_memory_desc_equal(user, inner);
    if (s || (!a->add && same && !a->round))
        return s;
    s = dnnl_memory_create(&a->inner, inner, engine, DNNL_MEMORY_NONE);
    a->offset = p->bytes;
    p->bytes += align64(dnnl_memory_desc_get_size(inner));
    if (s || (a->round && same))
        return s; /* rounded straight from the caller's tensor */
    if (c->int8 && a->arg == DNNL_ARG_SRC) {
        a->quantize = 1; /* x_op's nhwc codes, made by quantize_nhwc */
        return s;
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t sum = NULL;
    if (!s && a->add) {
        s = dnnl_post_ops_create(&sum);
        s = s ? s : dnnl_post_ops_append_sum(sum, 1.0f);
        s = s ? s : dnnl_primitive_attr_create(&attr);
        s = s ? s : dnnl_primitive_attr_set_post_ops(attr, sum);
    }
    dnnl_primitive_desc_t rpd = NULL;
    s = s        ? s
        : a->out ? dnnl_reorder_primitive_desc_create(&rpd, inner, engine, user, engine, attr)
                 : dnnl_reorder_primitive_desc_create(&rpd, user, engine, inner, engine, attr);
    s = s ? s : dnnl_primitive_create(&a->reorder, rpd);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_primitive_attr_destroy(attr);
    dnnl_post_ops_destroy(sum);
    if (!a->round && !s && !a->out && arg_of(a, DNNL_CONV_X_BLOCKED | DNNL_CONV_Y_BLOCKED) &&
        layout_like(a->user, a->inner, dnnl_bf16, blocked_tag()))
        a->round = DNNL_ROUND_PACK;
    if (!s && c->int8 && a->arg == DNNL_ARG_DST && !a->add && nhwc_to_nchw_runs(c->out_c)) {
        const dnnl_dims_t y = {c->batch, c->out_c, c->out_h, c->out_w};
        a->transpose = is_nhwc(inner, y, dnnl_f32);
    }
    return s;
}

/* Makes d->p[k] from pd with its n arguments (args[i]; outs[i]: 1 for those it writes, 2 for
 * those it adds into the caller's tensor); the first argument's copy at the scratch's start. */
static dnnl_status_t make_prim(DnnlConv *d, int k, const Mds *m, const DnnlConvDesc *c,
                               dnnl_primitive_desc_t pd, int n, const int *args, const int *outs)
{
    DnnlConvPrim *p = &d->p[k];
    dnnl_status_t s = dnnl_primitive_create(&p->prim, pd);
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success)
        snprintf(d->impl[k], sizeof d->impl[k], "%s", impl);
    for (int i = 0; i < n && !s; i++) {
        p->args[i] = (DnnlConvArg){.arg = args[i], .out = outs[i] != 0, .add = outs[i] == 2};
        p->n_args = i + 1;
        s = make_arg(p, &p->args[i], m, pd, c);
    }
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    const size_t sp_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
    if (!s && sp_bytes) {
        s = dnnl_memory_create(&p->scratchpad, sp, engine, DNNL_MEMORY_NONE);
        p->scratchpad_offset = p->bytes;
        p->bytes += align64(sp_bytes);
    }
    return s;
}

/* 1 when pd's implementation is oneDNN's reference one ("ref:any"), far slower than cdl's. */
static int ref_impl(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
           !strncmp(impl, "ref", 3);
}

/* The forward's primitive descriptor: x and y in the layout oneDNN picks, except in inference,
 * where oneDNN 2.6 on AVX-512 picks brgconv on nhwc, a layout no other layer takes: there x and
 * y (each of whole DNNL_LANES blocks; the other left to oneDNN) are asked in nChw16c (its
 * jit:avx512_core kernels), so that the activations can stay blocked between layers
 * (dnnl_conv_blocked), unless no kernel but the reference one takes them (bf16 operands too: x
 * in bf16 nChw16c, which bf16_pack fills from the float32 blocked tensor); and a 3x3 stride-1
 * one with desc.winograd_inference runs on oneDNN's Winograd kernels where it has them
 * (jit_wino_4x3, jit_fp32_wino_2x3: 2-3x the direct kernels' speed on resnet's 3x3 layers). An
 * int8 one keeps oneDNN's layouts (nhwc: its int8 kernels take no nChw16c float32 output). */
static dnnl_status_t forward_pd(dnnl_primitive_desc_t *fpd, dnnl_convolution_desc_t *fd,
                                const DnnlConvDesc *c, const Mds *m, dnnl_prop_kind_t prop,
                                const_dnnl_primitive_attr_t attr)
{
    const dnnl_memory_desc_t *b = c->bias ? &m->b : NULL;
    if (prop == dnnl_forward_inference && DNNL_LANES == 16 && !c->int8 &&
        (c->in_c % DNNL_LANES == 0 || c->out_c % DNNL_LANES == 0)) {
        const dnnl_dims_t x = {c->batch, c->in_c, c->in_h, c->in_w};
        const dnnl_dims_t y = {c->batch, c->out_c, c->out_h, c->out_w};
        /* bf16 operands: x in bf16 nChw16c, rounded from the float32 blocked tensor as it is
         * (DNNL_ROUND_PACK), y in float32 nChw16c */
        const dnnl_data_type_t op = bf16_operands(c) ? dnnl_bf16 : dnnl_f32;
        dnnl_memory_desc_t xb = m->x_op, yb = m->y_any;
        dnnl_status_t s = c->in_c % DNNL_LANES
                              ? dnnl_success
                              : dnnl_memory_desc_init_by_tag(&xb, 4, x, op, dnnl_nChw16c);
        s = s || c->out_c % DNNL_LANES
                ? s
                : dnnl_memory_desc_init_by_tag(&yb, 4, y, dnnl_f32, dnnl_nChw16c);
        const int winograd =
            c->winograd_inference && dnnl_conv_is_3x3_stride1(c) && c->groups == 1 && !c->bf16;
        const dnnl_alg_kind_t algs[2] = {dnnl_convolution_winograd, dnnl_convolution_direct};
        for (int k = winograd ? 0 : 1; !s && k < 2; k++) {
            dnnl_status_t t = dnnl_convolution_forward_desc_init(
                fd, prop, algs[k], &xb, &m->w_op, b, &yb, m->strides, m->pad, m->pad);
            t = t ? t : dnnl_primitive_desc_create(fpd, fd, attr, engine, NULL);
            if (!t && !ref_impl(*fpd))
                return t;
            if (!t)
                dnnl_primitive_desc_destroy(*fpd);
            *fpd = NULL;
        }
    }
    dnnl_status_t s =
        dnnl_convolution_forward_desc_init(fd, prop, dnnl_convolution_direct, &m->x_op, &m->w_op, b,
                                           &m->y_any, m->strides, m->pad, m->pad);
    return s ? s : dnnl_primitive_desc_create(fpd, fd, attr, engine, NULL);
}

/* An int8 forward's attributes: per-channel output scales x_scale * w_scales[j], and the input's
 * zero point, given at run time (oneDNN's int8 convolutions take it no other way). */
static dnnl_status_t int8_attr(const DnnlConvDesc *c, dnnl_primitive_attr_t attr)
{
    float *scales = malloc((size_t)c->out_c * sizeof *scales);
    if (!scales)
        return dnnl_out_of_memory;
    const float y_scale = c->y_codes ? c->y_scale : 1.0f;
    for (int j = 0; j < c->out_c; j++)
        scales[j] = c->x_scale * c->w_scales[j] / y_scale;
    const int32_t runtime = DNNL_RUNTIME_S32_VAL;
    dnnl_status_t s = dnnl_primitive_attr_set_output_scales(attr, c->out_c, 1 << 1, scales);
    s = s ? s : dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &runtime);
    free(scales);
    return s;
}

/* c->act as eltwise post-ops: relu (leaky's slope 0.1), relu6 as a clip (its bound divided by
 * y_scale for y_codes), logistic, swish (alpha 1: x logistic(x)), hardswish (oneDNN 2.6's takes no
 * parameters: x relu6(x + 3) / 6), hardsigmoid as x / 6 + 1/2 clipped to [0, 1]. */
static dnnl_status_t append_activation(dnnl_post_ops_t ops, const DnnlConvDesc *c)
{
    const float y_scale = c->int8 && c->y_codes ? c->y_scale : 1.0f;
    switch (c->act) {
    case CDL_ACT_RELU:
    case CDL_ACT_LEAKY:
        return dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu,
                                            c->act == CDL_ACT_LEAKY ? 0.1f : 0.0f, 0.0f);
    case CDL_ACT_RELU6:
        return dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_clip, 0.0f, 6.0f / y_scale);
    case CDL_ACT_LOGISTIC:
        return dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_logistic, 0.0f, 0.0f);
    case CDL_ACT_SWISH:
        return dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_swish, 1.0f, 0.0f);
    case CDL_ACT_HARDSWISH:
        return dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_hardswish, 0.0f, 0.0f);
    case CDL_ACT_HARDSIGMOID: {
        dnnl_status_t s =
            dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_linear, 1.0f / 6.0f, 0.5f);
        return s ? s : dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_clip, 0.0f, 1.0f);
    }
    default:
        return dnnl_invalid_arguments;
    }
}

static dnnl_status_t build(DnnlConv *d, const DnnlConvDesc *c)
{
    Mds m;
    dnnl_status_t s = make_mds(c, &m);
    /* Both with user scratchpads; the backward ones without the forward's post-op. */
    dnnl_primitive_attr_t attr = NULL, battr = NULL;
    dnnl_post_ops_t ops = NULL;
    s = s ? s : dnnl_primitive_attr_create(&attr);
    s = s ? s : dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    s = s ? s : dnnl_primitive_attr_create(&battr);
    s = s ? s : dnnl_primitive_attr_set_scratchpad_mode(battr, dnnl_scratchpad_mode_user);
    if (!s && c->int8)
        s = int8_attr(c, attr);
    if (!s && (c->sum || c->eltwise || c->int8)) {
        s = dnnl_post_ops_create(&ops);
        s = s || !c->sum ? s : dnnl_post_ops_append_sum(ops, 1.0f);
        s = s || !c->int8 || !c->channel_scale
                ? s
                : dnnl_post_ops_append_binary(ops, dnnl_binary_mul, &m.channel);
        s = s || !c->int8 ? s : dnnl_post_ops_append_binary(ops, dnnl_binary_add, &m.channel);
        s = s || !c->eltwise ? s : append_activation(ops, c);
        s = s || !c->int8 || !c->y_codes
                ? s
                : dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_linear, 1.0f,
                                               (float)c->y_zero_point);
        /* the codes clamped to the own kernels' 0..QUANT_CODE_MAX (not the u8's 255) before
         * the rounding, as quantize_code: no pair of products saturates vpmaddubsw's int16.
         * clip_v2, not clip: with relu6's clip before it, oneDNN 2.6's jit_uni_int8:avx2 gave
         * wrong codes (test_conv_int8_dnnl's chain on half its grid) */
        s = s || !c->int8 || !c->y_codes
                ? s
                : dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_clip_v2, 0.0f,
                                               (float)QUANT_CODE_MAX);
        s = s ? s : dnnl_primitive_attr_set_post_ops(attr, ops);
    }
    const dnnl_prop_kind_t prop =
        c->backward || c->data_grad ? dnnl_forward_training : dnnl_forward_inference;
    dnnl_convolution_desc_t fd, bd, wd;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL, wpd = NULL;
    const int nb = c->bias ? 4 : 3;
    s = s ? s : forward_pd(&fpd, &fd, c, &m, prop, attr);
    if (!s && c->int8) { /* x, w, y, then b and a (the post-ops' order: a first) */
        const int mul = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;
        const int add = DNNL_ARG_ATTR_MULTIPLE_POST_OP(c->channel_scale) | DNNL_ARG_SRC_1;
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, add, mul};
        s = make_prim(d, DNNL_CONV_FWD, &m, c, fpd, 4 + c->channel_scale, args,
                      (const int[]){0, 0, 1, 0, 0});
        d->zero_point = c->x_zero_point;
        dnnl_memory_desc_t zp;
        s = s ? s : dnnl_memory_desc_init_by_tag(&zp, 1, (dnnl_dims_t){1}, dnnl_s32, dnnl_x);
        s = s ? s
              : dnnl_memory_create(&d->p[DNNL_CONV_FWD].zero_point, &zp, engine, &d->zero_point);
    } else if (!s) {
        const int args[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
        s = make_prim(d, DNNL_CONV_FWD, &m, c, fpd, nb, args, (const int[]){0, 0, 1, 0});
    }
    if (!s && c->data_grad) {
        s = dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &m.x_any,
                                                     &m.w_op, &m.y_op, m.strides, m.pad, m.pad);
        s = s ? s : dnnl_primitive_desc_create(&bpd, &bd, battr, engine, fpd);
        const int args[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
        s = s ? s : make_prim(d, DNNL_CONV_BWD_DATA, &m, c, bpd, 3, args, (const int[]){0, 0, 2});
    }
    if (!s && c->backward) {
        s = dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_direct, &m.x_op,
                                                        &m.w_any, c->bias ? &m.b : NULL, &m.y_op,
                                                        m.strides, m.pad, m.pad);
        s = s ? s : dnnl_primitive_desc_create(&wpd, &wd, battr, engine, fpd);
        const int args[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS,
                            DNNL_ARG_DIFF_BIAS};
        s = s ? s
              : make_prim(d, DNNL_CONV_BWD_WEIGHTS, &m, c, wpd, nb, args,
                          (const int[]){0, 0, 2, 2});
    }
    /* Both backward primitives take dy first, at the scratch's start: where they want the same
     * layout, the backward data (run second) reads the weights' backward's copy. */
    DnnlConvArg *dy_w = &d->p[DNNL_CONV_BWD_WEIGHTS].args[0];
    DnnlConvArg *dy_d = &d->p[DNNL_CONV_BWD_DATA].args[0];
    if (!s && c->backward && c->data_grad && dy_w->inner && dy_d->inner)
        dy_d->ready =
            dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_dst_md, 0),
                                   dnnl_primitive_desc_query_md(bpd, dnnl_query_diff_dst_md, 0));
    size_t most = 0;
    for (int k = 0; k < DNNL_CONV_PRIMS; k++)
        most = d->p[k].bytes > most ? d->p[k].bytes : most;
    d->scratch_bytes = most ? most + 64 : 0;
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bpd);
    dnnl_primitive_desc_destroy(wpd);
    dnnl_post_ops_destroy(ops);
    dnnl_primitive_attr_destroy(attr);
    dnnl_primitive_attr_destroy(battr);
    return s;
}

int dnnl_conv_prepare(DnnlConv *d, const DnnlConvDesc *desc, Error *e)
{
    if (d->prepared && !memcmp(&d->desc, desc, sizeof *desc))
        return CDL_OK;
    dnnl_conv_release(d);
    pthread_once(&engine_once, make_engine);
    dnnl_status_t s = engine_status;
    s = s ? s : build(d, desc);
    if (s) {
        dnnl_conv_release(d);
        return error_set(e, CDL_ERUNTIME,
                         "oneDNN: no convolution for %dx%dx%d -> %dx%dx%d, size %dx%d, stride "
                         "%d,%d, padding %d,%d, groups %d (status %d)",
                         desc->in_c, desc->in_h, desc->in_w, desc->out_c, desc->out_h, desc->out_w,
                         desc->win.size_h, desc->win.size_w, desc->win.stride_h, desc->win.stride_w,
                         desc->win.pad_h, desc->win.pad_w, desc->groups, (int)s);
    }
    d->desc = *desc;
    d->prepared = 1;
    return CDL_OK;
}

/* The forward's argument arg (DNNL_ARG_SRC or DNNL_ARG_DST). */
static const DnnlConvArg *forward_arg(const DnnlConv *d, int arg)
{
    const DnnlConvPrim *p = &d->p[DNNL_CONV_FWD];
    for (int i = 0; i < p->n_args; i++)
        if (p->args[i].arg == arg)
            return &p->args[i];
    return NULL;
}

/* 1 when argument a's primitive layout is nChw8c (DNNL_LANES: nChw16c with AVX-512) in float32,
 * the same size as plain NCHW, or a bf16 input's in bf16 (DNNL_ROUND_PACK). */
static int arg_blocked(const DnnlConvArg *a)
{
    return a && a->inner &&
           (a->round == DNNL_ROUND_PACK || layout_like(a->user, a->inner, dnnl_f32, blocked_tag()));
}

int dnnl_conv_nhwc(const DnnlConv *d, int which)
{
    const DnnlConvDesc *c = &d->desc;
    const DnnlConvArg *a =
        forward_arg(d, which == DNNL_CONV_X_BLOCKED ? DNNL_ARG_SRC : DNNL_ARG_DST);
    return d->prepared && !c->backward && !c->data_grad && !c->int8 && !c->bf16 && a && a->inner &&
           !a->round && layout_like(a->user, a->inner, dnnl_f32, dnnl_nhwc);
}

int dnnl_conv_blocked(const DnnlConv *d, int which)
{
    if (!arg_blocked(forward_arg(d, which == DNNL_CONV_X_BLOCKED ? DNNL_ARG_SRC : DNNL_ARG_DST)))
        return 0;
    for (int k = DNNL_CONV_BWD_DATA; k < DNNL_CONV_PRIMS; k++)
        for (int i = 0; i < d->p[k].n_args; i++)
            if (arg_of(&d->p[k].args[i], (unsigned)which) && !arg_blocked(&d->p[k].args[i]))
                return 0;
    return 1;
}

/* Runs a reorder from one memory to another and waits for it. */
static void reorder(dnnl_primitive_t r, dnnl_memory_t from, dnnl_memory_t to)
{
    const dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    dnnl_primitive_execute(r, stream, 2, a);
    dnnl_stream_wait(stream);
}

/* The bytes of m's layout (0 when oneDNN cannot tell). */
static size_t memory_bytes(const_dnnl_memory_t m)
{
    const dnnl_memory_desc_t *md = NULL;
    return dnnl_memory_get_memory_desc(m, &md) ? 0 : dnnl_memory_desc_get_size(md);
}

/* dst[0..bytes) += src's floats (the same layout), in a fixed order. */
static void add_floats(float *dst, const float *src, size_t bytes)
{
    const size_t n = bytes / sizeof *dst;
#pragma omp parallel for simd schedule(static) if (parallel : n >= 65536)
    for (size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

/* Runs primitive k on the caller's plain tensors ptr[i] (one per argument, in make_prim's
 * order; const only to oneDNN's reading of the inputs): the inputs reordered into the scratch
 * where the primitive wants another layout, the primitive, the outputs reordered back; the
 * tensors blocked names taken in the primitive's layout as they are (one added into, dx, comes
 * from the scratch by a plain sum instead of the reorder's); with fresh the one added into is
 * written instead: straight where blocked, zeroed before the reorder's sum where plain. */
static void run(DnnlConv *d, int k, const void *const *ptr, void *scratch, unsigned blocked,
                int fresh)
{
    DnnlConvPrim *p = &d->p[k];
    char *base = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    dnnl_exec_arg_t a[DNNL_CONV_MAX_ARGS + 2];
    for (int i = 0; i < p->n_args; i++) {
        DnnlConvArg *g = &p->args[i];
        dnnl_memory_set_data_handle(g->user, (void *)(uintptr_t)ptr[i]);
        if (g->round == DNNL_ROUND_FLOATS) {
            float *copy = (float *)(base + g->offset);
            dnnl_memory_set_data_handle(g->inner, copy);
            if (!g->ready) { /* from the caller's tensor where it has the copy's layout */
                const int moved = g->reorder && !arg_of(g, blocked);
                if (moved)
                    reorder(g->reorder, g->user, g->inner);
                bf16_round_floats(copy, moved ? copy : ptr[i],
                                  memory_bytes(g->inner) / sizeof *copy);
            }
        } else if (g->round && arg_of(g, blocked)) {
            dnnl_memory_set_data_handle(g->inner, base + g->offset);
            if (!g->ready)
                bf16_pack((uint16_t *)(base + g->offset), ptr[i],
                          memory_bytes(g->inner) / sizeof(uint16_t));
        } else if (g->quantize) {
            const DnnlConvDesc *c = &d->desc;
            dnnl_memory_set_data_handle(g->inner, base + g->offset);
            quantize_nhwc(ptr[i], (uint8_t *)(base + g->offset), c->batch, c->in_c,
                          (size_t)c->in_h * c->in_w, 1.0f / c->x_scale, c->x_zero_point);
        } else if (g->inner && arg_of(g, blocked) && (!g->add || fresh)) {
            dnnl_memory_set_data_handle(g->inner, (void *)(uintptr_t)ptr[i]);
        } else if (g->inner) {
            if (g->add && fresh) /* the reorder adds into it */
                memset((void *)(uintptr_t)ptr[i], 0, memory_bytes(g->user));
            dnnl_memory_set_data_handle(g->inner, base + g->offset);
            if (!g->out && !g->ready)
                reorder(g->reorder, g->user, g->inner);
        }
        a[i] = (dnnl_exec_arg_t){g->arg, g->inner ? g->inner : g->user};
    }
    int n = p->n_args;
    if (p->scratchpad) {
        dnnl_memory_set_data_handle(p->scratchpad, base + p->scratchpad_offset);
        a[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->scratchpad};
    }
    if (p->zero_point)
        a[n++] = (dnnl_exec_arg_t){DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, p->zero_point};
    dnnl_primitive_execute(p->prim, stream, n, a);
    dnnl_stream_wait(stream);
    for (int i = 0; i < p->n_args; i++) {
        DnnlConvArg *g = &p->args[i];
        if (g->inner && g->out && arg_of(g, blocked) && g->add && !fresh)
            add_floats((float *)(uintptr_t)ptr[i], (const float *)(base + g->offset),
                       memory_bytes(g->inner));
        else if (g->transpose)
            nhwc_to_nchw((const float *)(base + g->offset), (float *)(uintptr_t)ptr[i],
                         d->desc.batch, d->desc.out_c, (size_t)d->desc.out_h * d->desc.out_w);
        else if (g->inner && g->out && !arg_of(g, blocked))
            reorder(g->reorder, g->inner, g->user);
    }
}

void dnnl_conv_forward(DnnlConv *d, const float *x, const float *w, const float *b, float *y,
                       void *scratch, unsigned blocked)
{
    run(d, DNNL_CONV_FWD, (const void *[]){x, w, y, b}, scratch, blocked, 0);
}

void dnnl_conv_forward_int8(DnnlConv *d, const void *x, const void *w_packed, const float *a,
                            const float *b, void *y, void *scratch)
{
    run(d, DNNL_CONV_FWD, (const void *[]){x, w_packed, y, b, a}, scratch, DNNL_CONV_W_PACKED, 0);
}

size_t dnnl_conv_packed_weights_bytes(const DnnlConv *d)
{
    const DnnlConvArg *w = forward_arg(d, DNNL_ARG_WEIGHTS);
    if (!w || w->round)
        return 0;
    return memory_bytes(w->inner ? w->inner : w->user);
}

void dnnl_conv_pack_weights(DnnlConv *d, const void *w, void *packed)
{
    const DnnlConvArg *g = forward_arg(d, DNNL_ARG_WEIGHTS);
    if (!g->inner) {
        memcpy(packed, w, memory_bytes(g->user));
        return;
    }
    dnnl_memory_set_data_handle(g->user, (void *)(uintptr_t)w);
    dnnl_memory_set_data_handle(g->inner, packed);
    reorder(g->reorder, g->user, g->inner);
}

void dnnl_conv_backward(DnnlConv *d, const float *x, const float *dy, const float *w, float *dx,
                        float *dw, float *db, void *scratch, unsigned blocked, int dx_fresh)
{
    run(d, DNNL_CONV_BWD_WEIGHTS, (const void *[]){dy, x, dw, db}, scratch, blocked, 0);
    if (dx)
        run(d, DNNL_CONV_BWD_DATA, (const void *[]){dy, w, dx}, scratch, blocked, dx_fresh);
}

#else /* built without oneDNN (make DNNL=0) */

int dnnl_conv_built(void)
{
    return 0;
}

int dnnl_conv_bf16_kernels(void)
{
    return 0;
}

int dnnl_conv_bf16_runs(void)
{
    return 0;
}

int dnnl_conv_lanes_native(void)
{
    return 0;
}

void dnnl_describe(char *buf, size_t size)
{
    snprintf(buf, size, "not built (make DNNL=0)");
}

int dnnl_conv_prepare(DnnlConv *d, const DnnlConvDesc *desc, Error *e)
{
    (void)d;
    (void)desc;
    return error_set(e, CDL_ERUNTIME, "this cdl is built without oneDNN (make DNNL=0)");
}

int dnnl_conv_preferred(const DnnlConvDesc *desc)
{
    (void)desc;
    return 0;
}

int dnnl_conv_inference_preferred(const DnnlConvDesc *desc)
{
    (void)desc;
    return 0;
}

void dnnl_conv_release(DnnlConv *d)
{
    memset(d, 0, sizeof *d);
}

int dnnl_conv_blocked(const DnnlConv *d, int which)
{
    (void)d, (void)which;
    return 0;
}

int dnnl_conv_nhwc(const DnnlConv *d, int which)
{
    (void)d, (void)which;
    return 0;
}

void dnnl_conv_forward(DnnlConv *d, const float *x, const float *w, const float *b, float *y,
                       void *scratch, unsigned blocked)
{
    (void)d, (void)x, (void)w, (void)b, (void)y, (void)scratch, (void)blocked;
}

size_t dnnl_conv_packed_weights_bytes(const DnnlConv *d)
{
    (void)d;
    return 0;
}

void dnnl_conv_pack_weights(DnnlConv *d, const void *w, void *packed)
{
    (void)d, (void)w, (void)packed;
}

void dnnl_conv_forward_int8(DnnlConv *d, const void *x, const void *w_packed, const float *a,
                            const float *b, void *y, void *scratch)
{
    (void)d, (void)x, (void)w_packed, (void)a, (void)b, (void)y, (void)scratch;
}

void dnnl_conv_backward(DnnlConv *d, const float *x, const float *dy, const float *w, float *dx,
                        float *dw, float *db, void *scratch, unsigned blocked, int dx_fresh)
{
    (void)d, (void)x, (void)dy, (void)w, (void)dx, (void)dw, (void)db, (void)scratch, (void)blocked;
    (void)dx_fresh;
}

#endif
