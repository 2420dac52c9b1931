/* [convolutional]'s CPU kernels (layers/convolutional.c has its meaning): the dispatcher. Resize
 * chooses the layer's engine (conv.h lists them, one file each) and sizes it; the forward and
 * backward run the convolution on it, then the bias or batch norm and the activation.
 *
 *   in  [batch][c][h][w]
 *   out [batch][filters][out_h][out_w]
 *   weights [filters][c/groups][size_h][size_w] (Conv.win: Winograd, the depthwise loops and
 *   the few-channel kernel take square windows only; others run on oneDNN or im2col + gemm)
 *
 * The engine: oneDNN with [net] engine=dnnl (not the default: see docs/engines.md), or engine=auto
 * where dnnl_conv_preferred says so for the layer's shape, unless it has only its slow reference
 * implementation for the layer; int8 layers on oneDNN's int8 kernels where conv_int8_on_dnnl says
 * so, else on the reference's int8 products; in precision=bf16 oneDNN where
 * dnnl_conv_bf16_runs, whatever the engine unless the cfg says engine=ref. Else Winograd with
 * [net] winograd=1 for a same 3x3 one-group layer where winograd_worth, in float32. Else the
 * reference: depthwise loops for one input channel per group, else im2col + gemm (int8 weights
 * through qgemm_float).
 *
 * precision=bf16 (Layer.precision): the weights, the column matrices (the input itself for a
 * direct or depthwise convolution) and delta are rounded to bf16 (gemm_operand) before the
 * products, as torch.autocast("cpu", torch.bfloat16) takes a convolution's operands; the bias
 * or batch norm and the activation stay float32.
 *
 * A training batch norm followed by leaky or relu (every engine) runs with the activation
 * in its passes (bias_norm_forward_activated, bias_norm_backward_activated), leaving l->pre
 * unwritten; the product then writes into the batch norm's x_hat buffer, which it keeps for the
 * backward instead of x_hat (bias_norm_product_output). */
#include "backend/cpu/conv.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bias_norm.h"
#include "backend/cpu/cpu_options.h"
#include "backend/cpu/layer_quant.h"
#include "layers/families.h"

static const char *const engine_names[] = {"ref", "dnnl", "wino"}; /* ConvEngine */

/* The shape's kinds. direct: 1x1, stride 1, no padding; depthwise: one input channel per group
 * and a square window (not direct); same: neither, stride 1 along both axes, the output as large
 * as the input. */
static int conv_direct(const Conv *cv)
{
    const Window2d w = cv->win;
    return w.size_h == 1 && w.size_w == 1 && w.stride_h == 1 && w.stride_w == 1 && w.pad_h == 0 &&
           w.pad_w == 0;
}

static int conv_depthwise(const Layer *l, const Conv *cv)
{
    return l->in_shape.c == cv->groups && cv->groups > 1 && window2d_is_square(cv->win) &&
           !conv_direct(cv);
}

static int conv_same(const Layer *l, const Conv *cv)
{
    return !conv_direct(cv) && !conv_depthwise(l, cv) && cv->win.stride_h == 1 &&
           cv->win.stride_w == 1 && l->out_shape.h == l->in_shape.h &&
           l->out_shape.w == l->in_shape.w;
}

/* Winograd's condition on the layer and the request: a same 3x3 one-group convolution that
 * winograd_worth, with [net] winograd=1. */
static int winograd_asked(const Layer *l, const Conv *cv, const CpuOptions *o)
{
    const Shape in = l->in_shape;
    return o->winograd && conv_same(l, cv) && window2d_is_square(cv->win) && cv->win.size_h == 3 &&
           cv->groups == 1 && winograd_worth(in.c, cv->filters, in.h, in.w);
}

/* The [net] engine the layer runs under: the cfg's; unnamed, auto in an inference net (no
 * gradients: oneDNN's inference forward folds batch norm, fuses the residual sums and keeps the
 * activations blocked, measured 1.3-2.5x the reference on resnet50 and mobilenetv2,
 * docs/engines.md), else ref. */
static CpuEngine conv_engine_setting(const Layer *l, const CpuOptions *o)
{
    const int inference = l->params[CONV_WEIGHTS].grad == NULL;
    return o->engine_given || !inference ? o->engine : CPU_ENGINE_AUTO;
}

/* The engine Conv.ask asks for: oneDNN (engine=dnnl; auto where dnnl_conv_inference_preferred
 * says so in an inference net, dnnl_conv_preferred in a training net), else Winograd
 * (winograd_asked), else the reference. dnnl_conv_preferred's rule for AVX2 builds was measured
 * on training steps; in an inference net oneDNN's forward (batch norm folded, activation fused,
 * nChw8c kept between layers) took 0.26-0.48x the reference's CPU time on mobilenetv2 (its 1x1
 * and depthwise layers) 0.42-1.05x on resnet18, 0.6x on resnet50 on an AVX2 Zen 3
 * (docs/engines.md): there every layer but the stride-1 3x3 ones that Winograd runs faster.
 */
static ConvEngine conv_engine_wanted(const Layer *l, const CpuOptions *o)
{
    const Conv *cv = l->priv;
    const int wino = winograd_asked(l, cv, o);
    const CpuEngine engine = conv_engine_setting(l, o);
    const int inference = l->params[CONV_WEIGHTS].grad == NULL;
    DnnlConvDesc desc = conv_dnnl_desc(l, 0, CDL_ACT_LINEAR, 0);
    desc.winograd = wino;
    const int dnnl = engine == CPU_ENGINE_DNNL ||
                     (engine == CPU_ENGINE_AUTO && (inference ? dnnl_conv_inference_preferred(&desc)
                                                              : dnnl_conv_preferred(&desc)));
    return dnnl ? CONV_ENGINE_DNNL : wino ? CONV_ENGINE_WINO : CONV_ENGINE_REF;
}

/* An int8 layer runs on oneDNN's int8 kernels (conv_dnnl_int8.c) where its input grid is
 * calibrated (oneDNN's int8 convolutions take their scales when made, so a grid from each
 * batch's range stays on the own kernels) and [net] engine=dnnl, or auto on a CPU with AVX2
 * (AVX-512 VNNI's CPUs have it), where oneDNN was measured faster than the own kernels: its
 * jit_uni_int8:avx2 kernels read the codes in nhwc and chain layers, where the own kernels copy
 * columns and scale back to float32 at every layer (docs/precision.md). */
static int conv_int8_on_dnnl(const Layer *l, const CpuOptions *o)
{
    const CpuEngine engine = conv_engine_setting(l, o);
    return l->quant && l->quant->static_input && dnnl_conv_built() &&
           (engine == CPU_ENGINE_DNNL || (engine == CPU_ENGINE_AUTO && qgemm_has_avx2()));
}

/* A bf16 layer's products run on oneDNN unless the reference engine is asked for by name, where
 * the CPU has bf16 instructions. */
static int conv_bf16_on_dnnl(const CpuOptions *o)
{
    return (o->engine != CPU_ENGINE_REF || !o->engine_given) && dnnl_conv_bf16_runs();
}

/* The engine resize will choose, named before it runs (LayerKernels.engine): a bf16 layer's is
 * oneDNN's where conv_bf16_on_dnnl. */
static const char *conv_engine_expected(const Layer *l, const ExecContext *exec)
{
    const CpuOptions *o = cpu_options(exec);
    if (l->quant)
        return engine_names[conv_int8_on_dnnl(l, o) ? CONV_ENGINE_DNNL : CONV_ENGINE_REF];
    if (l->precision == GEMM_BF16 && !l->quant && conv_bf16_on_dnnl(o))
        return engine_names[CONV_ENGINE_DNNL];
    return engine_names[conv_engine_wanted(l, o)];
}

/* The reference's scratch for one image: the columns of its input (forward, weight gradient) or,
 * when the backward makes an input gradient (input_grads), of a same convolution's delta
 * (filters/groups channels), whichever is larger; at least the small kernel's buffer. A first
 * layer makes no input gradient: with 3 channels and 32 filters its columns are a tenth. */
static size_t conv_cols_floats(const Layer *l, const ConvCpu *cpu, int input_grads)
{
    const Conv *cv = l->priv;
    const int taps = window2d_taps(cv->win);
    const size_t kdim = (size_t)(l->in_shape.c / cv->groups) * taps;
    const size_t kdim_delta =
        cpu->same && input_grads ? (size_t)(cv->filters / cv->groups) * taps : 0;
    const size_t cols = cpu->direct || cpu->depthwise ? 0
                                                      : (kdim > kdim_delta ? kdim : kdim_delta) *
                                                            l->out_shape.h * l->out_shape.w;
    const size_t small = cpu->ref.small ? conv_small_buf_floats(&cpu->ref.small_plan) : 0;
    return cols > small ? cols : small;
}

/* The layer's CPU state with what does not depend on the batch: the engine asked for, the shape's
 * kind, the reference's column matrices and few-channel plan; NULL when out of memory. */
static ConvCpu *conv_cpu_make(const Layer *l)
{
    const Conv *cv = l->priv;
    ConvCpu *cpu = calloc(1, sizeof *cpu);
    if (!cpu)
        return NULL;
    const Shape in = l->in_shape;
    cpu->direct = conv_direct(cv);
    cpu->depthwise = conv_depthwise(l, cv);
    cpu->same = conv_same(l, cv);
    const Window2d win = cv->win;
    cpu->ref.small = cpu->wanted == CONV_ENGINE_REF && cv->groups == 1 && window2d_is_square(win) &&
                     win.stride_h == 1 && !cpu->direct &&
                     conv_small_plan(&cpu->ref.small_plan, in.c, in.h, in.w, cv->filters,
                                     win.size_h, win.pad_h) &&
                     conv_small_buf_floats(&cpu->ref.small_plan) <= conv_cols_floats(l, cpu, 1);
    return cpu;
}

/* Conv.cpu, made on first use; NULL when out of memory. */
static ConvCpu *conv_cpu(Layer *l)
{
    Conv *cv = l->priv;
    if (!cv->cpu)
        cv->cpu = conv_cpu_make(l);
    return cv->cpu;
}

void conv_set_images_per_gemm(Layer *l, int images)
{
    /* without memory for the state, resize fails */
    if (l->type == &convolutional_layer && conv_cpu(l))
        ((Conv *)l->priv)->cpu->ref.images_asked = images > 0 ? images : 0;
}

GemmPrecision conv_precision(const Layer *l)
{
    return l->quant ? GEMM_FP32 : l->precision;
}

const float *conv_weights(const Layer *l, const ConvCpu *cpu)
{
    return conv_precision(l) != GEMM_FP32 ? cpu->w_rounded : l->params[CONV_WEIGHTS].data;
}

const float *conv_input(const Layer *l, const ConvCpu *cpu)
{
    return conv_precision(l) != GEMM_FP32 && (cpu->direct || cpu->depthwise) ? cpu->x_rounded
                                                                             : l->in[0];
}

int conv_image_threads(int batch)
{
    const int nt = omp_get_max_threads();
    if (nt < 2 || batch < nt || (batch % nt && batch < 4 * nt))
        return 1;
    return nt;
}

/* The engine choices the net's options ([net] engine=, winograd=, winograd_min_tiles=) make for
 * the layer. */
static void conv_choose(const Layer *l, ConvCpu *cpu, const CpuOptions *o)
{
    const Conv *cv = l->priv;
    cpu->wanted = conv_engine_wanted(l, o);
    cpu->dnnl.bf16_wanted = conv_bf16_on_dnnl(o);
    cpu->wino.training =
        winograd_tiles(cv->train_batch, l->in_shape.h, l->in_shape.w) >= o->winograd_min_tiles;
}

/* Raises the scratch to what the reference's column matrices take: all of an image's passes, or
 * those Winograd leaves it (a training net's weight gradient without wino.grad); none when
 * Winograd runs every pass. */
static void conv_ref_scratch(Layer *l, ConvCpu *cpu, int input_grads)
{
    const ConvWinograd *wg = &cpu->wino;
    const int training = l->params[CONV_WEIGHTS].grad != NULL;
    const int wino = wg->on && (wg->training || !training);
    cpu->input_grads = input_grads && !wino; /* made by the reference */
    cpu->ref.cols_floats =
        wino && (wg->grad || !training) ? 0 : conv_cols_floats(l, cpu, cpu->input_grads);
    if (cpu->ref.cols_floats > l->scratch_per_sample)
        l->scratch_per_sample = cpu->ref.cols_floats;
}

static int conv_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    ConvCpu *cpu = conv_cpu(l);
    if (!cpu)
        return error_set(e, CDL_ERUNTIME, "layer %d [convolutional]: out of memory", l->index);
    conv_choose(l, cpu, cpu_options(st->exec));
    cpu->dnnl.on = cpu->dnnl.fused = cpu->dnnl.folded = cpu->dnnl.int8 = cpu->wino.on = 0;
    cpu->dnnl.w_packed = NULL;
    cpu->dnnl.packed_ready = 0;
    cpu->ref.images_per_gemm = 1;
    l->engine = "ref";
    l->scratch_per_sample = 0;
    conv_ref_scratch(l, cpu, st->input_grads);
    if (l->quant                    ? conv_int8_on_dnnl(l, cpu_options(st->exec))
        : l->precision == GEMM_BF16 ? cpu->dnnl.bf16_wanted
        : l->precision == GEMM_FP32 ? cpu->wanted == CONV_ENGINE_DNNL
                                    : 0) {
        int rc =
            l->quant ? conv_dnnl_int8_resize(l, batch, st, e) : conv_dnnl_resize(l, batch, st, e);
        if (rc || cpu->dnnl.on)
            return rc;
    }
    const int threads = omp_get_max_threads();
    l->scratch_per_sample = 0;
    conv_winograd_resize(l, batch, threads, st);
    conv_ref_scratch(l, cpu, st->input_grads);
    if (cpu->ref.cols_floats)
        conv_im2col_plan(l, batch);
    conv_im2col_resize(l, threads, st);
    conv_int8_resize(l, cpu->ref.images_per_gemm * l->out_shape.h * l->out_shape.w, threads, st);
    const size_t weights = l->params[CONV_WEIGHTS].count;
    const int rounded = l->precision != GEMM_FP32;
    cpu->w_rounded = layer_state_floats(st, rounded ? weights : 0);
    cpu->x_rounded = layer_state_floats(st, rounded && (cpu->direct || cpu->depthwise)
                                                ? (size_t)batch * shape_size(l->in_shape)
                                                : 0);
    bias_norm_resize(&((Conv *)l->priv)->stage, batch, st);
    return CDL_OK;
}

static void conv_release(Layer *l)
{
    Conv *cv = l->priv;
    if (!cv->cpu)
        return;
    dnnl_conv_release(&cv->cpu->dnnl.dc);
    dnnl_conv_release(&cv->cpu->dnnl.wino);
    conv_winograd_release(cv->cpu);
    free(cv->cpu);
    cv->cpu = NULL;
}

/* A layer on oneDNN may take and give nChw8c (conv_dnnl_layout); the others are plain. */
static int conv_layout(const Layer *l, int k)
{
    const Conv *cv = l->priv;
    return cv->cpu ? conv_dnnl_layout(l, k) : LAYOUT_PLAIN;
}

/* Either engine's fused sum (each forgets its last one when it declines). */
static int conv_fuse_sum(Layer *l, int act)
{
    Conv *cv = l->priv;
    if (!cv->cpu)
        return 0;
    const int dnnl = conv_dnnl_fuse_sum(l, act), wino = conv_winograd_fuse_sum(l, act);
    return dnnl || wino;
}

static int conv_pass_codes(const Layer *l, const Layer *reader)
{
    const Conv *cv = l->priv;
    return cv->cpu && l->quant && reader->quant ? conv_dnnl_int8_pass_codes(l, reader) : 0;
}

static int conv_gives_nhwc(const Layer *l)
{
    const Conv *cv = l->priv;
    return !cv->cpu   ? 0
           : l->quant ? conv_dnnl_int8_gives_nhwc(l)
                      : conv_dnnl_nhwc(l, DNNL_CONV_Y_BLOCKED);
}

static int conv_takes_nhwc(const Layer *l)
{
    const Conv *cv = l->priv;
    return cv->cpu && !l->quant && conv_dnnl_nhwc(l, DNNL_CONV_X_BLOCKED);
}

static void conv_forward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    const int batch = ctx->batch;
    const GemmPrecision p = conv_precision(l);
    if (conv_dnnl_forward_runs(l, ctx)) {
        (cpu->dnnl.int8 ? conv_dnnl_int8_forward : conv_dnnl_forward)(l, ctx);
        return;
    }
    gemm_operand(p, l->params[CONV_WEIGHTS].data, l->params[CONV_WEIGHTS].count, cpu->w_rounded);
    const float *x =
        cpu->direct || cpu->depthwise
            ? gemm_operand(p, l->in[0], (size_t)batch * shape_size(l->in_shape), cpu->x_rounded)
            : l->in[0];
    /* the batch norm's input buffer, when its fused pass keeps it (else l->out) */
    float *y = bias_norm_product_output(&cv->stage, l, ctx);
    if (conv_winograd_runs(l, ctx)) {
        if (conv_winograd_forward(l, ctx, x, y))
            return; /* the stage and activation came with its output transform */
    } else if (cpu->depthwise)
        conv_depthwise_forward(l, x, y, batch);
    else
        conv_im2col_forward(l, ctx, x, y);

    if (bias_norm_forward_activated(&cv->stage, l, ctx, y))
        return;
    bias_norm_forward(&cv->stage, l, ctx, l->out, layer_activation_input(l));
    layer_activate(l, batch);
}

static void conv_backward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    const int batch = ctx->batch;

    if (!bias_norm_backward_activated(&cv->stage, l, ctx, l->delta)) {
        layer_activation_backward(l, batch);
        if (!cpu->dnnl.on || cv->stage.batch_normalize)
            bias_norm_backward(&cv->stage, l, ctx, l->delta);
    }
    if (cpu->dnnl.on) {
        conv_dnnl_backward(l, ctx);
        return;
    }
    /* The bias and batch norm took their gradients: only the products read delta from here. */
    gemm_operand(conv_precision(l), l->delta, (size_t)batch * shape_size(l->out_shape), l->delta);

    float *dx = l->in_delta[0];
    /* the products below add into it; Winograd's writes a fresh one instead */
    const int fresh = dx && l->in_delta_fresh[0], wino = conv_winograd_runs(l, ctx);
    if (fresh && !wino)
        memset(dx, 0, (size_t)batch * shape_size(l->in_shape) * sizeof *dx);
    if (cpu->depthwise) {
        conv_depthwise_backward(l, conv_input(l, cpu), dx, batch);
        return;
    }
    if (wino && cpu->wino.grad)
        conv_winograd_weight_grads(l, ctx);
    else
        conv_im2col_weight_grads(l, ctx);
    if (!dx)
        return;
    if (cpu->same)
        conv_flip_weights(l);
    if (wino)
        conv_winograd_input_grads(l, ctx, dx, fresh);
    else
        conv_im2col_input_grads(l, ctx, dx);
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_convolutional_kernels = {
    .engine = conv_engine_expected,
    .resize = conv_resize,
    .release = conv_release,
    .layout = conv_layout,
    .fuse_sum = conv_fuse_sum,
    .pass_codes = conv_pass_codes,
    .gives_nhwc = conv_gives_nhwc,
    .takes_nhwc = conv_takes_nhwc,
    .forward = conv_forward,
    .backward = conv_backward,
};
