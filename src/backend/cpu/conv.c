/* [convolutional]'s CPU kernels (layers/convolutional.c has its meaning): the dispatcher. Resize
 * chooses the layer's engine (conv.h lists them, one file each) and sizes it; the forward and
 * backward run the convolution on it, then the bias or batch norm and the activation.
 *
 *   in  [batch][c][h][w]
 *   out [batch][filters][out_h][out_w]
 *   weights [filters][c/groups][size][size]
 *
 * The engine: oneDNN with [net] engine=dnnl (not the default: see README), or engine=auto where
 * dnnl_conv_preferred says so for the layer's shape, unless it has only its slow reference
 * implementation for the layer or the layer runs with int8 weights; in precision=bf16 oneDNN where
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
#include "core/layer_quant.h"
#include "layers/families.h"
#include "ops/im2col.h"
#include "util/cache_lines.h"

static const char *const engine_names[] = {"ref", "dnnl", "wino"}; /* ConvEngine */

/* The shape's kinds. direct: 1x1, stride 1, no padding; depthwise: one input channel per group
 * (not direct); same: neither, stride 1, the output as large as the input. */
static int conv_direct(const Conv *cv)
{
    return cv->size == 1 && cv->stride == 1 && cv->padding == 0;
}

static int conv_depthwise(const Layer *l, const Conv *cv)
{
    return l->in_shape.c == cv->groups && cv->groups > 1 && !conv_direct(cv);
}

static int conv_same(const Layer *l, const Conv *cv)
{
    return !conv_direct(cv) && !conv_depthwise(l, cv) && cv->stride == 1 &&
           l->out_shape.h == l->in_shape.h && l->out_shape.w == l->in_shape.w;
}

/* Winograd's condition on the layer and the request: a same 3x3 one-group convolution that
 * winograd_worth, with [net] winograd=1. */
static int winograd_asked(const Layer *l, const Conv *cv)
{
    const Shape in = l->in_shape;
    return cv->ask.winograd && conv_same(l, cv) && cv->size == 3 && cv->groups == 1 &&
           winograd_worth(in.c, cv->filters, in.h, in.w);
}

/* The engine Conv.ask asks for: oneDNN (engine=dnnl, or auto where dnnl_conv_preferred says so
 * for the shape), else Winograd (winograd_asked), else the reference. */
static ConvEngine conv_engine_wanted(const Layer *l)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape, out = l->out_shape;
    const int wino = winograd_asked(l, cv);
    const int dnnl = cv->ask.engine == NET_ENGINE_DNNL ||
                     (cv->ask.engine == NET_ENGINE_AUTO &&
                      dnnl_conv_preferred(&(DnnlConvDesc){.in_c = in.c,
                                                          .in_h = in.h,
                                                          .in_w = in.w,
                                                          .out_c = cv->filters,
                                                          .out_h = out.h,
                                                          .out_w = out.w,
                                                          .size = cv->size,
                                                          .stride = cv->stride,
                                                          .padding = cv->padding,
                                                          .groups = cv->groups,
                                                          .winograd = wino}));
    return dnnl ? CONV_ENGINE_DNNL : wino ? CONV_ENGINE_WINO : CONV_ENGINE_REF;
}

const char *conv_engine_expected(const Layer *l)
{
    return engine_names[conv_engine_wanted(l)];
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
    const int out_hw = l->out_shape.h * l->out_shape.w;
    cpu->wanted = conv_engine_wanted(l);
    cpu->dnnl.bf16_wanted =
        (cv->ask.engine != NET_ENGINE_REF || !cv->ask.engine_given) && dnnl_conv_bf16_runs();
    cpu->wino.training =
        winograd_tiles(cv->ask.train_batch, in.h, in.w) >= cv->ask.winograd_min_tiles;
    cpu->direct = conv_direct(cv);
    cpu->depthwise = conv_depthwise(l, cv);
    cpu->same = conv_same(l, cv);
    const size_t kdim = (size_t)(in.c / cv->groups) * cv->size * cv->size;
    /* A same convolution's input gradient unfolds delta: filters/groups channels. */
    const size_t kdim_delta =
        cpu->same ? (size_t)(cv->filters / cv->groups) * cv->size * cv->size : 0;
    cpu->ref.cols_floats =
        cpu->direct || cpu->depthwise ? 0 : (kdim > kdim_delta ? kdim : kdim_delta) * out_hw;
    cpu->ref.small = cpu->wanted == CONV_ENGINE_REF && cv->groups == 1 && cv->stride == 1 &&
                     !cpu->direct &&
                     conv_small_plan(&cpu->ref.small_plan, in.c, in.h, in.w, cv->filters, cv->size,
                                     cv->padding) &&
                     conv_small_buf_floats(&cpu->ref.small_plan) <= cpu->ref.cols_floats;
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
    return conv_precision(l) == GEMM_BF16 ? cpu->w_bf16 : l->params[CONV_WEIGHTS].data;
}

const float *conv_input(const Layer *l, const ConvCpu *cpu)
{
    return conv_precision(l) == GEMM_BF16 && (cpu->direct || cpu->depthwise) ? cpu->x_bf16
                                                                             : l->in[0];
}

int conv_image_threads(int batch)
{
    const int nt = omp_get_max_threads();
    if (nt < 2 || batch < nt || (batch % nt && batch < 4 * nt))
        return 1;
    return nt;
}

static int conv_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    ConvCpu *cpu = conv_cpu(l);
    if (!cpu)
        return error_set(e, CDL_ERUNTIME, "layer %d [convolutional]: out of memory", l->index);
    cpu->dnnl.on = cpu->dnnl.fused = cpu->dnnl.folded = cpu->wino.on = 0;
    cpu->ref.images_per_gemm = 1;
    l->engine = "ref";
    l->scratch_per_sample = cpu->ref.cols_floats;
    if (!l->quant &&
        (l->precision == GEMM_BF16 ? cpu->dnnl.bf16_wanted : cpu->wanted == CONV_ENGINE_DNNL)) {
        int rc = conv_dnnl_resize(l, batch, st, e);
        if (rc || cpu->dnnl.on)
            return rc;
    }
    conv_im2col_plan(l, batch);
    const int threads = omp_get_max_threads();
    conv_winograd_resize(l, batch, threads, st);
    conv_im2col_resize(l, threads, st);
    conv_int8_resize(l, cpu->ref.images_per_gemm * l->out_shape.h * l->out_shape.w, threads, st);
    const size_t weights = l->params[CONV_WEIGHTS].count;
    const int bf16 = l->precision == GEMM_BF16;
    cpu->w_bf16 = layer_state_floats(st, bf16 ? weights : 0);
    cpu->x_bf16 = layer_state_floats(
        st, bf16 && (cpu->direct || cpu->depthwise) ? (size_t)batch * shape_size(l->in_shape) : 0);
    bias_norm_resize(&((Conv *)l->priv)->stage, batch, st);
    return CDL_OK;
}

static void conv_release(Layer *l)
{
    Conv *cv = l->priv;
    if (!cv->cpu)
        return;
    dnnl_conv_release(&cv->cpu->dnnl.dc);
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

static int conv_fuse_sum(Layer *l, int act)
{
    Conv *cv = l->priv;
    return cv->cpu ? conv_dnnl_fuse_sum(l, act) : 0;
}

static void conv_forward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    const int batch = ctx->batch;
    const GemmPrecision p = conv_precision(l);
    if (conv_dnnl_forward_runs(l, ctx)) {
        conv_dnnl_forward(l, ctx);
        return;
    }
    gemm_operand(p, l->params[CONV_WEIGHTS].data, l->params[CONV_WEIGHTS].count, cpu->w_bf16);
    const float *x =
        cpu->direct || cpu->depthwise
            ? gemm_operand(p, l->in[0], (size_t)batch * shape_size(l->in_shape), cpu->x_bf16)
            : l->in[0];
    /* the batch norm's input buffer, when its fused pass keeps it (else l->out) */
    float *y = bias_norm_product_output(&cv->stage, l, ctx);
    if (conv_winograd_runs(l, ctx))
        conv_winograd_forward(l, ctx, x, y);
    else if (cpu->depthwise)
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

/* ---- the reference, im2col + gemm ---- */

/* [convolutional]'s reference on the CPU: im2col + gemm (conv.c chooses it where no other engine
 * runs the layer; int8 weights' products in conv_int8.c).
 *
 *   in [batch][c][h][w] -> out [batch][filters][out_h][out_w], weights [filters][c/groups][k][k]
 *
 * Each image and group is one gemm: out_g[filters/g][out_hw] = W_g * cols, with cols the
 * im2col unfolding of the group's input channels (the input itself for a 1x1, stride 1,
 * unpadded convolution). A few-channel stride-1 one-group convolution (a first layer: at most
 * CONV_SMALL_MAX_TAPS taps) runs its forward and weight gradient on ops/conv_small.h's direct
 * kernel instead, in float32.
 *
 * Small maps with large weights (CONV_WEIGHTS_PER_COLUMN) put a chunk of n images side by side
 * instead: their column matrices [kdim][n*out_hw] (a 1x1 direct layer gathers its input), one
 * gemm per group into the scratch, scattered back to NCHW; weight gradients gather delta the same
 * way and take the n images as one long inner dimension; input gradients are W^T times the
 * gathered delta, folded back (col2im) image by image. n reaches CONV_GEMM_COLUMNS columns, at
 * most a thread's share of the batch (conv_set_images_per_gemm sets it, for tests).
 *
 * Threading: when the batch spreads evenly over the threads, each thread takes whole images
 * (its own im2col slice of the scratch buffer and a single-threaded gemm, since OpenBLAS
 * runs serially inside a parallel region); otherwise images go one by one with threaded
 * im2col and gemm. Weight gradients of an image-parallel backward are summed per thread and
 * reduced in thread order, so results depend on the thread count but not on timing. */
/* Threads that accumulate weight gradients in private copies: each copy costs one weight
 * tensor, so beyond this many the images of a backward run one by one instead. */
#define CONV_MAX_GRAD_THREADS 4

/* A gemm packs all its weights for each call, and OpenBLAS runs short gemms of large weights
 * slowly (512x4x4 layers: half the rate of N >= 256): layers with at least this many weights (of
 * a group) per output position put several images side by side in one gemm, up to
 * CONV_GEMM_COLUMNS columns. Measured under load: 1.4x on 512x4x4 layers (147456 weights per
 * position); 256x8x8 (9216) and 128x7x7 (1500-3000) layers ran 5-15% slower batched. */
#define CONV_WEIGHTS_PER_COLUMN 16384
#define CONV_GEMM_COLUMNS 512

/* Multiply-adds an image from which split_threads shares one image's work over the threads. */
#define CONV_SPLIT_MIN 262144

/* The image's forward and weight gradient run ops/conv_small.h: planned so at the layer's first
 * resize, float32 weights and products. */
static int conv_small_runs(const Layer *l, const Conv *cv)
{
    const ConvCpu *cpu = cv->cpu;
    return cpu->ref.small && !l->quant && conv_precision(l) == GEMM_FP32;
}

void conv_im2col_plan(Layer *l, int batch)
{
    const Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w;
    const int kdim = cg * cv->size * cv->size,
              kdim_delta = cpu->same ? fg * cv->size * cv->size : 0;
    const int kd = cpu->direct ? cg : kdim > kdim_delta ? kdim : kdim_delta;
    cpu->ref.image_floats = (size_t)(kd + (fg > cg ? fg : cg)) * out_hw;
    const int short_gemm = (double)fg * kdim >= (double)CONV_WEIGHTS_PER_COLUMN * out_hw;
    int k = cpu->ref.images_asked ? cpu->ref.images_asked
            : short_gemm          ? (CONV_GEMM_COLUMNS + out_hw - 1) / out_hw
                                  : 1;
    k = cpu->depthwise ? 1 : k < batch ? k : batch;
    cpu->ref.images_per_gemm = k;
    const int nt = conv_image_threads(batch), share = (batch + nt - 1) / nt;
    k = k < share ? k : share;
    const size_t per_sample = ((size_t)nt * k * cpu->ref.image_floats + batch - 1) / batch;
    if (k > 1 && per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
}

/* Threads that share each image's work when the images go one by one (image_threads 1): every
 * thread unfolds some channels and takes a fixed block of each product's rows or columns, with
 * single-threaded gemms (split_gemm), instead of OpenBLAS threading each call; 1 for layers
 * below CONV_SPLIT_MIN multiply-adds an image, for int8 weights (qgemm_float threads itself),
 * depthwise layers (their loops are threaded over planes) and few-channel layers on
 * ops/conv_small.h (one thread an image). */
static int split_threads(const Layer *l, const Conv *cv, int batch)
{
    const ConvCpu *cpu = cv->cpu;
    const int nt = omp_get_max_threads();
    if (nt < 2 || conv_image_threads(batch) > 1 || l->quant || cpu->depthwise ||
        conv_small_runs(l, cv) || l->flops < 2.0 * CONV_SPLIT_MIN)
        return 1;
    return nt;
}

/* The start of part t of n of [0, count) in whole blocks of align (the last part ends at count). */
static int part_start(int count, int t, int n, int align)
{
    const long blocks = (count + align - 1) / align;
    const int start = (int)(blocks * t / n) * align;
    return start < count ? start : count;
}

/* C [m][n] = op(A) op(B) + beta * C (alpha 1, row-major as gemm); split (inside a parallel
 * region): only this thread's block of it, the rows of C shared over the team when m >= n, else
 * its columns, in blocks of 16, so each value of C has one owner whatever the timing. */
static void conv_gemm(int split, int ta, int tb, int m, int n, int k, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    const int t = split ? omp_get_thread_num() : 0, nt = split ? omp_get_num_threads() : 1;
    if (m >= n) {
        const int r0 = part_start(m, t, nt, 16), r1 = part_start(m, t + 1, nt, 16);
        gemm(ta, tb, r1 - r0, n, k, 1.0f, a + (ta ? (size_t)r0 : (size_t)r0 * lda), lda, b, ldb,
             beta, c + (size_t)r0 * ldc, ldc);
    } else {
        const int c0 = part_start(n, t, nt, 16), c1 = part_start(n, t + 1, nt, 16);
        gemm(ta, tb, m, c1 - c0, k, 1.0f, a, lda, b + (tb ? (size_t)c0 * ldb : (size_t)c0), ldb,
             beta, c + c0, ldc);
    }
}

/* This thread's channels [*c0, *c1) of c when split (inside a parallel region), else all. */
static void split_channels(int split, int c, int *c0, int *c1)
{
    const int t = split ? omp_get_thread_num() : 0, n = split ? omp_get_num_threads() : 1;
    *c0 = part_start(c, t, n, 1);
    *c1 = part_start(c, t + 1, n, 1);
}

/* When split: the team waits until every thread's share of the last step is written. */
static void split_barrier(int split)
{
    if (split) {
#pragma omp barrier
    }
}

/* cols [kdim][out_hw] = im2col of one group's input channels xg, rounded to bf16 in place in
 * precision bf16; only the rows of channels [c0, c1). */
static void unfold_input(const Layer *l, const Conv *cv, const float *xg, int c0, int c1,
                         float *cols)
{
    const Shape in = l->in_shape;
    const int out_hw = l->out_shape.h * l->out_shape.w, kk = cv->size * cv->size;
    float *rows = cols + (size_t)c0 * kk * out_hw;
    im2col(xg + (size_t)c0 * in.h * in.w, c1 - c0, in.h, in.w, cv->size, cv->stride, cv->padding,
           rows, (size_t)out_hw);
    gemm_operand(conv_precision(l), rows, (size_t)(c1 - c0) * kk * out_hw, rows);
}

/* out_b[filters][out_hw] for one image x_b [c][h][w]; cols is this image's scratch slice. With
 * int8 weights (one group) the product is qgemm_float's, the input on the grid xq: the column
 * matrix cols [kdim][out_hw] is its input by columns, out_b its output by columns. split (inside
 * a parallel region, float weights): this thread's share of the image (split_threads). */
static void forward_image(const Layer *l, const Conv *cv, const float *x_b, float *out_b,
                          float *cols, QuantParams xq, int split)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    const float *w = conv_weights(l, cpu);
    int c0, c1;
    split_channels(split, cg, &c0, &c1);
    if (conv_small_runs(l, cv)) {
        conv_small_forward(&cpu->ref.small_plan, x_b, w, out_b, cols);
        return;
    }
    for (int g = 0; g < cv->groups; g++) {
        const float *xg = x_b + (size_t)g * cg * in.h * in.w;
        if (!cpu->direct) {
            unfold_input(l, cv, xg, c0, c1, cols);
            split_barrier(split);
        }
        const float *x_cols = cpu->direct ? xg : cols;
        float *out_g = out_b + (size_t)g * fg * out_hw;
        if (l->quant) {
            conv_int8_product(l, xq, out_hw, x_cols, out_g);
        } else {
            conv_gemm(split, 0, 0, fg, out_hw, kdim, w + (size_t)g * fg * kdim, kdim, x_cols,
                      out_hw, 0.0f, out_g, out_hw);
        }
        if (!cpu->direct)
            split_barrier(split); /* the next group or image overwrites cols */
    }
}

/* dW[filters][kdim] = beta * dW + delta_b * cols_b^T for one image, group by group; split as
 * forward_image's. */
static void weight_grads_image(const Layer *l, const Conv *cv, const float *x_b,
                               const float *delta_b, float beta, float *dw, float *cols, int split)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    int c0, c1;
    split_channels(split, cg, &c0, &c1);
    if (conv_small_runs(l, cv)) {
        conv_small_weight_grads(&cpu->ref.small_plan, x_b, delta_b, beta, dw, cols);
        return;
    }
    for (int g = 0; g < cv->groups; g++) {
        const float *xg = x_b + (size_t)g * cg * in.h * in.w;
        if (!cpu->direct) {
            unfold_input(l, cv, xg, c0, c1, cols);
            split_barrier(split);
        }
        conv_gemm(split, 0, 1, fg, kdim, out_hw, delta_b + (size_t)g * fg * out_hw, out_hw,
                  cpu->direct ? xg : cols, out_hw, beta, dw + (size_t)g * fg * kdim, kdim);
        if (!cpu->direct)
            split_barrier(split);
    }
}

/* With the flipped weights the input gradient of a same convolution is the convolution of delta
 * (padded by size-1-pad, which is pad). */
void conv_flip_weights(const Layer *l)
{
    const Conv *cv = l->priv;
    const ConvCpu *cpu = cv->cpu;
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int kk = cv->size * cv->size;
    const float *w = conv_weights(l, cpu);
    for (int g = 0; g < cv->groups; g++) {
        const float *wg = w + (size_t)g * fg * cg * kk;
        float *fl = cpu->ref.w_flipped + (size_t)g * fg * cg * kk;
        for (int c = 0; c < cg; c++)
            for (int f = 0; f < fg; f++)
                for (int k = 0; k < kk; k++)
                    fl[((size_t)c * fg + f) * kk + kk - 1 - k] = wg[((size_t)f * cg + c) * kk + k];
    }
}

/* dx_b += W^T * delta_b folded back onto the image (col2im), group by group; a same
 * convolution instead adds the flipped weights times delta_b's own im2col columns. split as
 * forward_image's. */
static void input_grads_image(const Layer *l, const Conv *cv, const float *delta_b, float *dx_b,
                              float *cols, int split)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    const int kk = cv->size * cv->size;
    const float *w = conv_weights(l, cpu);
    if (cpu->same) {
        const int kdim_delta = fg * kk;
        int f0, f1;
        split_channels(split, fg, &f0, &f1);
        for (int g = 0; g < cv->groups; g++) {
            im2col(delta_b + ((size_t)g * fg + f0) * out_hw, f1 - f0, in.h, in.w, cv->size, 1,
                   cv->size - 1 - cv->padding, cols + (size_t)f0 * kk * out_hw, (size_t)out_hw);
            split_barrier(split);
            conv_gemm(split, 0, 0, cg, out_hw, kdim_delta,
                      cpu->ref.w_flipped + (size_t)g * cg * kdim_delta, kdim_delta, cols, out_hw,
                      1.0f, dx_b + (size_t)g * cg * out_hw, out_hw);
            split_barrier(split);
        }
        return;
    }
    int c0, c1;
    split_channels(split, cg, &c0, &c1);
    for (int g = 0; g < cv->groups; g++) {
        const float *wg = w + (size_t)g * fg * kdim, *dg = delta_b + (size_t)g * fg * out_hw;
        float *dxg = dx_b + (size_t)g * cg * in.h * in.w;
        if (cpu->direct) {
            conv_gemm(split, 1, 0, kdim, out_hw, fg, wg, kdim, dg, out_hw, 1.0f, dxg, out_hw);
        } else {
            conv_gemm(split, 1, 0, kdim, out_hw, fg, wg, kdim, dg, out_hw, 0.0f, cols, out_hw);
            split_barrier(split);
            col2im(cols + (size_t)c0 * kk * out_hw, c1 - c0, in.h, in.w, cv->size, cv->stride,
                   cv->padding, (size_t)out_hw, dxg + (size_t)c0 * in.h * in.w);
            split_barrier(split);
        }
    }
}

/* ---- several images per gemm: a chunk of n images side by side in one matrix, image j in
 * columns [j*out_hw, (j+1)*out_hw) of rows ld = n*out_hw apart ---- */

/* dst[r][j*hw + i] = src[j*stride + r*hw + i] for the n images of src, rows r < rows. */
static void pack_images(const float *src, size_t stride, int n, int rows, int hw, float *dst)
{
    const size_t ld = (size_t)n * hw;
    for (int j = 0; j < n; j++)
        for (int r = 0; r < rows; r++)
            memcpy(dst + r * ld + (size_t)j * hw, src + j * stride + (size_t)r * hw,
                   (size_t)hw * sizeof *dst);
}

/* The inverse of pack_images: dst[j*stride + r*hw + i] = (or, with add, +=) src[r][j*hw + i]. */
static void unpack_images(const float *src, int n, int rows, int hw, float *dst, size_t stride,
                          int add)
{
    const size_t ld = (size_t)n * hw;
    for (int j = 0; j < n; j++)
        for (int r = 0; r < rows; r++) {
            const float *restrict s = src + r * ld + (size_t)j * hw;
            float *restrict d = dst + j * stride + (size_t)r * hw;
            if (add)
                for (int i = 0; i < hw; i++)
                    d[i] += s[i];
            else
                memcpy(d, s, (size_t)hw * sizeof *d);
        }
}

/* cols [kdim][n*out_hw]: group g's column matrices of the n images from x (the input itself for a
 * direct convolution), rounded to bf16 in precision bf16 (a direct one's x is rounded already). */
static void unfold_images(const Layer *l, const Conv *cv, const float *x, int n, int g, float *cols)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, out_hw = l->out_shape.h * l->out_shape.w;
    const size_t in_size = shape_size(in), ld = (size_t)n * out_hw;
    const float *xg = x + (size_t)g * cg * in.h * in.w;
    if (cpu->direct) {
        pack_images(xg, in_size, n, cg, out_hw, cols);
        return;
    }
    for (int j = 0; j < n; j++)
        im2col(xg + j * in_size, cg, in.h, in.w, cv->size, cv->stride, cv->padding,
               cols + (size_t)j * out_hw, ld);
    gemm_operand(conv_precision(l), cols, (size_t)cg * cv->size * cv->size * ld, cols);
}

/* The scratch of a chunk of n images: the columns, then the product's (or delta's) rows. */
static float *chunk_rows(const Conv *cv, const Layer *l, float *scratch, int n)
{
    const ConvCpu *cpu = cv->cpu;
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const size_t rows = (size_t)(fg > cg ? fg : cg) * l->out_shape.h * l->out_shape.w;
    return scratch + (cpu->ref.image_floats - rows) * n;
}

/* forward_image for the n images x [n][c][h][w] -> out [n][filters][out_h][out_w]. */
static void forward_images(const Layer *l, const Conv *cv, const float *x, float *out, int n,
                           float *scratch, QuantParams xq)
{
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    const int ld = n * out_hw;
    const float *w = conv_weights(l, cv->cpu);
    float *cols = scratch, *y = chunk_rows(cv, l, scratch, n);
    for (int g = 0; g < cv->groups; g++) {
        unfold_images(l, cv, x, n, g, cols);
        if (l->quant) {
            conv_int8_product(l, xq, ld, cols, y);
        } else {
            gemm(0, 0, fg, ld, kdim, 1.0f, w + (size_t)g * fg * kdim, kdim, cols, ld, 0.0f, y, ld);
        }
        unpack_images(y, n, fg, out_hw, out + (size_t)g * fg * out_hw, shape_size(l->out_shape), 0);
    }
}

/* weight_grads_image for the n images x and their delta: dW = beta * dW + delta * cols^T, the
 * n images' columns one long inner dimension. */
static void weight_grads_images(const Layer *l, const Conv *cv, const float *x, const float *delta,
                                int n, float beta, float *dw, float *scratch)
{
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    const int ld = n * out_hw;
    float *cols = scratch, *d = chunk_rows(cv, l, scratch, n);
    for (int g = 0; g < cv->groups; g++) {
        unfold_images(l, cv, x, n, g, cols);
        pack_images(delta + (size_t)g * fg * out_hw, shape_size(l->out_shape), n, fg, out_hw, d);
        gemm(0, 1, fg, kdim, ld, 1.0f, d, ld, cols, ld, beta, dw + (size_t)g * fg * kdim, kdim);
    }
}

/* input_grads_image for the n images' delta, adding into their dx. */
static void input_grads_images(const Layer *l, const Conv *cv, const float *delta, float *dx, int n,
                               float *scratch)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    const int ld = n * out_hw, in_hw = in.h * in.w;
    const size_t in_size = shape_size(in), out_size = shape_size(l->out_shape);
    const float *w = conv_weights(l, cpu);
    float *cols = scratch, *rows = chunk_rows(cv, l, scratch, n);
    for (int g = 0; g < cv->groups; g++) {
        float *dxg = dx + (size_t)g * cg * in_hw;
        if (cpu->same) {
            const int kdim_delta = fg * cv->size * cv->size;
            for (int j = 0; j < n; j++)
                im2col(delta + j * out_size + (size_t)g * fg * out_hw, fg, in.h, in.w, cv->size, 1,
                       cv->size - 1 - cv->padding, cols + (size_t)j * out_hw, (size_t)ld);
            gemm(0, 0, cg, ld, kdim_delta, 1.0f, cpu->ref.w_flipped + (size_t)g * cg * kdim_delta,
                 kdim_delta, cols, ld, 0.0f, rows, ld);
            unpack_images(rows, n, cg, out_hw, dxg, in_size, 1);
            continue;
        }
        pack_images(delta + (size_t)g * fg * out_hw, out_size, n, fg, out_hw, rows);
        gemm(1, 0, kdim, ld, fg, 1.0f, w + (size_t)g * fg * kdim, kdim, rows, ld, 0.0f, cols, ld);
        if (cpu->direct)
            unpack_images(cols, n, cg, out_hw, dxg, in_size, 1);
        else
            for (int j = 0; j < n; j++)
                col2im(cols + (size_t)j * out_hw, cg, in.h, in.w, cv->size, cv->stride, cv->padding,
                       (size_t)ld, dxg + j * in_size);
    }
}

/* Images per gemm in a pass over the batch on nt image threads (1: image by image): resize's
 * choice, at most a thread's share of the batch and what the scratch holds for nt threads. */
static int chunk_images(const Conv *cv, const StepContext *ctx, int nt)
{
    const ConvCpu *cpu = cv->cpu;
    int k = cpu->ref.images_per_gemm, share = (ctx->batch + nt - 1) / nt;
    k = k < share ? k : share;
    if (k > 1 && (size_t)nt * k * cpu->ref.image_floats > ctx->exec->workspace_floats)
        k = (int)(ctx->exec->workspace_floats / ((size_t)nt * cpu->ref.image_floats));
    return k > 1 ? k : 1;
}

/* Inside a parallel region: this thread's images [*b0, *b1) of the batch (a fixed contiguous
 * range) and its scratch for chunks of k images. */
static float *thread_chunk(const Conv *cv, const StepContext *ctx, int k, int *b0, int *b1)
{
    const ConvCpu *cpu = cv->cpu;
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    *b0 = (int)((long)ctx->batch * t / n);
    *b1 = (int)((long)ctx->batch * (t + 1) / n);
    return ctx->exec->workspace + (size_t)t * k * cpu->ref.image_floats;
}

/* The forward of the batch x into out, in chunks of k images, on nt image threads. */
static void forward_chunks(Layer *l, const Conv *cv, const StepContext *ctx, const float *x,
                           float *out, int nt, int k, QuantParams xq)
{
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int b0, b1;
        float *scratch = thread_chunk(cv, ctx, k, &b0, &b1);
        for (int b = b0; b < b1; b += k)
            forward_images(l, cv, x + b * in_size, out + b * out_size, b1 - b < k ? b1 - b : k,
                           scratch, xq);
    }
}

/* The input gradient of the batch in chunks of k images, on nt image threads. */
static void input_grads_chunks(const Layer *l, const Conv *cv, const StepContext *ctx, float *dx,
                               int nt, int k)
{
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int b0, b1;
        float *scratch = thread_chunk(cv, ctx, k, &b0, &b1);
        for (int b = b0; b < b1; b += k)
            input_grads_images(l, cv, l->delta + b * out_size, dx + b * in_size,
                               b1 - b < k ? b1 - b : k, scratch);
    }
}

/* Weight gradients of the whole batch. Image-parallel: thread t takes a fixed contiguous
 * range of images and sums them into its own copy (thread 0 straight into the gradient);
 * the copies are then added in thread order. */
void conv_im2col_weight_grads(Layer *l, const StepContext *ctx)
{
    const Conv *cv = l->priv;
    const ConvCpu *cpu = cv->cpu;
    const int nt = conv_image_threads(ctx->batch);
    const int batch = ctx->batch;
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
    const size_t count = l->params[CONV_WEIGHTS].count;
    const float *x = conv_input(l, cpu);
    float *dw = l->params[CONV_WEIGHTS].grad;
    int threads = nt < cpu->ref.n_partial + 1 ? nt : cpu->ref.n_partial + 1;
    /* Chunks of k images per gemm (chunk_images), else image by image. */
    const int k = chunk_images(cv, ctx, threads);

    const int split = k == 1 ? split_threads(l, cv, batch) : 1;
    if (split > 1) {
#pragma omp parallel num_threads(split)
        for (int b = 0; b < batch; b++)
            weight_grads_image(l, cv, x + b * in_size, l->delta + b * out_size, 1.0f, dw,
                               ctx->exec->workspace, 1);
        return;
    }
    if (threads < 2) {
        for (int b = 0; b < batch; b += k)
            if (k > 1)
                weight_grads_images(l, cv, x + b * in_size, l->delta + b * out_size,
                                    batch - b < k ? batch - b : k, 1.0f, dw, ctx->exec->workspace);
            else
                weight_grads_image(l, cv, x + b * in_size, l->delta + b * out_size, 1.0f, dw,
                                   ctx->exec->workspace, 0);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), n = omp_get_num_threads();
        const int b0 = (int)((long)batch * t / n), b1 = (int)((long)batch * (t + 1) / n);
        float *acc = t ? cpu->ref.dw_partial + (size_t)(t - 1) * count : dw;
        if (t == 0)
            threads = n;
        if (t && b0 == b1)
            memset(acc, 0, count * sizeof *acc);
        for (int b = b0; b < b1; b += k)
            if (k > 1)
                weight_grads_images(l, cv, x + b * in_size, l->delta + b * out_size,
                                    b1 - b < k ? b1 - b : k, t == 0 || b > b0 ? 1.0f : 0.0f, acc,
                                    ctx->exec->workspace + (size_t)t * k * cpu->ref.image_floats);
            else
                weight_grads_image(l, cv, x + b * in_size, l->delta + b * out_size,
                                   t == 0 || b > b0 ? 1.0f : 0.0f, acc,
                                   ctx->exec->workspace + (size_t)b * cpu->ref.cols_floats, 0);
    }
#pragma omp parallel for simd schedule(static) if (parallel : count >= 16384)
    for (size_t i = 0; i < count; i++) {
        float sum = dw[i];
        for (int t = 1; t < threads; t++)
            sum += cpu->ref.dw_partial[(size_t)(t - 1) * count + i];
        dw[i] = sum;
    }
}

void conv_im2col_resize(Layer *l, int threads, LayerState *st)
{
    const Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    ConvIm2col *ref = &cpu->ref;
    /* Only a backward needs them; inference nets have no gradient slab. */
    const int backward = l->params[CONV_WEIGHTS].grad != NULL;
    ref->n_partial = backward && !cpu->depthwise
                         ? (threads < CONV_MAX_GRAD_THREADS ? threads : CONV_MAX_GRAD_THREADS) - 1
                         : 0;
    const size_t weights = l->params[CONV_WEIGHTS].count;
    ref->dw_partial = layer_work_floats(st, (size_t)ref->n_partial * weights);
    ref->w_flipped = layer_work_floats(st, cpu->same && backward ? weights : 0);
}

void conv_im2col_forward(Layer *l, const StepContext *ctx, const float *x, float *y)
{
    const Conv *cv = l->priv;
    const ConvCpu *cpu = cv->cpu;
    const int batch = ctx->batch;
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
    const int nt = conv_int8_threads(l, conv_image_threads(batch));
    const QuantParams xq = conv_int8_input(l, x, batch);
    const int k = chunk_images(cv, ctx, nt), split = split_threads(l, cv, batch);
    if (k > 1) {
        forward_chunks(l, cv, ctx, x, y, nt, k, xq);
    } else if (split > 1) {
#pragma omp parallel num_threads(split)
        for (int b = 0; b < batch; b++)
            forward_image(l, cv, x + b * in_size, y + b * out_size, ctx->exec->workspace, xq, 1);
    } else {
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
        for (int b = 0; b < batch; b++)
            forward_image(l, cv, x + b * in_size, y + b * out_size,
                          ctx->exec->workspace + (nt > 1 ? b : 0) * cpu->ref.cols_floats, xq, 0);
    }
}

void conv_im2col_input_grads(Layer *l, const StepContext *ctx, float *dx)
{
    const Conv *cv = l->priv;
    const ConvCpu *cpu = cv->cpu;
    const int batch = ctx->batch;
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
    const int nt = conv_image_threads(batch);
    const int k = chunk_images(cv, ctx, nt);
    if (k > 1) {
        input_grads_chunks(l, cv, ctx, dx, nt, k);
        return;
    }
    const int split = split_threads(l, cv, batch);
    if (split > 1) {
#pragma omp parallel num_threads(split)
        for (int b = 0; b < batch; b++)
            input_grads_image(l, cv, l->delta + b * out_size, dx + b * in_size,
                              ctx->exec->workspace, 1);
        return;
    }
#pragma omp parallel for schedule(static) if (nt > 1)
    for (int b = 0; b < batch; b++)
        input_grads_image(l, cv, l->delta + b * out_size, dx + b * in_size,
                          ctx->exec->workspace + (nt > 1 ? b : 0) * cpu->ref.cols_floats, 0);
}

/* ---- depthwise ---- */

/* [convolutional]'s depthwise layers on the CPU (one input channel per group, conv.c chooses):
 * direct loops, their gemms would be a single row each. Filter f reads input channel
 * f / (filters/groups) only.
 *
 *   in [batch][c][h][w] -> out [batch][filters][out_h][out_w], weights [filters][1][size][size]
 */
/* The range [lo, hi) of output columns ox whose tap ox*stride + off lies inside [0, w). */
static void valid_columns(int off, int w, int stride, int out_w, int *lo, int *hi)
{
    int a = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int b = w - off <= 0 ? 0 : (w - 1 - off) / stride + 1;
    if (b > out_w)
        b = out_w;
    *lo = a < b ? a : b;
    *hi = b;
}

void conv_depthwise_forward(const Layer *l, const float *x, float *out, int batch)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape;
    const int fg = cv->filters / cv->groups, size = cv->size, stride = cv->stride;
    const int pad = cv->padding, out_h = l->out_shape.h, out_w = l->out_shape.w;
    const float *w = conv_weights(l, cv->cpu);
    const int planes = batch * cv->filters;

#pragma omp parallel for schedule(static) if (l->flops * batch >= CONV_PARALLEL_MIN)
    for (int bf = 0; bf < planes; bf++) {
        const int b = bf / cv->filters, f = bf % cv->filters;
        const float *restrict src = x + ((size_t)b * in.c + f / fg) * in.h * in.w;
        const float *restrict wf = w + (size_t)f * size * size;
        float *restrict dst = out + (size_t)bf * out_h * out_w;
        for (int oy = 0; oy < out_h; oy++) {
            float *restrict o = dst + (size_t)oy * out_w;
            for (int ox = 0; ox < out_w; ox++)
                o[ox] = 0.0f;
            for (int ki = 0; ki < size; ki++) {
                const int iy = oy * stride - pad + ki;
                if (iy < 0 || iy >= in.h)
                    continue;
                const float *restrict row = src + (size_t)iy * in.w;
                for (int kj = 0; kj < size; kj++) {
                    const int off = kj - pad;
                    const float wv = wf[ki * size + kj];
                    int lo, hi;
                    valid_columns(off, in.w, stride, out_w, &lo, &hi);
                    if (stride == 1) {
                        for (int ox = lo; ox < hi; ox++)
                            o[ox] += wv * row[ox + off];
                    } else {
                        for (int ox = lo; ox < hi; ox++)
                            o[ox] += wv * row[ox * stride + off];
                    }
                }
            }
        }
    }
}

/* Weight and input gradients; parallel over input channels, each of which owns its
 * filters' weight gradients and its slice of dx, so no two threads touch one value. */
void conv_depthwise_backward(const Layer *l, const float *x, float *dx, int batch)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape;
    const int fg = cv->filters / cv->groups, size = cv->size, stride = cv->stride;
    const int pad = cv->padding, out_h = l->out_shape.h, out_w = l->out_shape.w;
    const size_t in_hw = (size_t)in.h * in.w, out_hw = (size_t)out_h * out_w;
    const float *w = conv_weights(l, cv->cpu);
    float *dw = l->params[CONV_WEIGHTS].grad;

#pragma omp parallel for schedule(static) if (l->flops * batch >= CONV_PARALLEL_MIN)
    for (int ch = 0; ch < in.c; ch++) {
        for (int f = ch * fg; f < (ch + 1) * fg; f++) {
            for (int ki = 0; ki < size; ki++) {
                for (int kj = 0; kj < size; kj++) {
                    const int off = kj - pad;
                    const float wv = w[((size_t)f * size + ki) * size + kj];
                    int lo, hi;
                    valid_columns(off, in.w, stride, out_w, &lo, &hi);
                    double acc = 0.0;
                    for (int b = 0; b < batch; b++) {
                        const float *src = x + ((size_t)b * in.c + ch) * in_hw;
                        const float *d = l->delta + ((size_t)b * cv->filters + f) * out_hw;
                        float *dxc = dx ? dx + ((size_t)b * in.c + ch) * in_hw : NULL;
                        for (int oy = 0; oy < out_h; oy++) {
                            const int iy = oy * stride - pad + ki;
                            if (iy < 0 || iy >= in.h)
                                continue;
                            const float *restrict row = src + (size_t)iy * in.w;
                            const float *restrict drow = d + (size_t)oy * out_w;
                            float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
                            for (int ox = lo; ox < hi; ox++)
                                sum += drow[ox] * row[ox * stride + off];
                            acc += sum;
                            if (!dxc)
                                continue;
                            float *restrict dxrow = dxc + (size_t)iy * in.w;
                            for (int ox = lo; ox < hi; ox++)
                                dxrow[ox * stride + off] += wv * drow[ox];
                        }
                    }
                    dw[((size_t)f * size + ki) * size + kj] += (float)acc;
                }
            }
        }
    }
}

/* ---- int8 weights ---- */

/* [convolutional] with int8 weights (l->quant, `cdl quantize`) on the CPU: the reference's
 * products (conv_im2col.c, one group) through qgemm_float, the column matrices its input by
 * columns and the output by columns, the whole mini-batch's input on one grid, as
 * quantize_dynamic's. The bias or batch norm and the activation stay float32.
 *
 *   cols [kdim][n] -> out [filters][n], W [filters][kdim] in int8
 */
void conv_int8_resize(Layer *l, int columns, int threads, LayerState *st)
{
    const Conv *cv = l->priv;
    ConvInt8 *q = &cv->cpu->int8;
    const int kdim = (l->in_shape.c / cv->groups) * cv->size * cv->size;
    q->threads = l->quant ? threads : 0;
    q->work_bytes = l->quant ? qgemm_work_bytes(columns, cv->filters, kdim) : 0;
    q->work = layer_state_bytes(st, (size_t)q->threads * q->work_bytes);
}

/* A work buffer per thread, as many as resize took (the thread count may have grown since). */
int conv_int8_threads(const Layer *l, int image_threads)
{
    const ConvInt8 *q = &((const Conv *)l->priv)->cpu->int8;
    return l->quant && image_threads > q->threads ? q->threads : image_threads;
}

QuantParams conv_int8_input(Layer *l, const float *x, int batch)
{
    return l->quant ? layer_quant_input(l->quant, x, 1, (size_t)batch * shape_size(l->in_shape), 0)
                    : (QuantParams){1.0f, 0};
}

void conv_int8_product(const Layer *l, QuantParams xq, int n, const float *cols, float *out)
{
    const ConvInt8 *q = &((const Conv *)l->priv)->cpu->int8;
    unsigned char *work = q->work + (size_t)omp_get_thread_num() * q->work_bytes;
    qgemm_float(&l->quant->matrix, xq, n, cols, n, QGEMM_COLS, out, n, QGEMM_COLS, work);
}

/* ---- Winograd ---- */

/* [convolutional] on Winograd F(2x2, 3x3) (ops/winograd.h), the engine of [net] winograd=1 for
 * a same 3x3 one-group layer where winograd_worth (conv.c chooses), in float32: the forward and
 * the input gradient (a Winograd convolution of delta with the flipped weights), and in a training
 * net whose mini-batch has [net] winograd_min_tiles output tiles the weight gradient too where
 * winograd_grad_worth (else the reference's). An inference net keeps the transformed weights
 * from one forward to the next while the weights do not change.
 *
 *   in [batch][c][h][w] -> out [batch][filters][h][w], weights [filters][c][3][3]
 */
/* Allocates wino.kept and seen for a winograd layer of an inference net (and marks them stale),
 * once for the largest size asked; without the memory each forward transforms. */
static void winograd_keep(const Layer *l, const Conv *cv, ConvWinograd *wg)
{
    wg->fresh = 0;
    const size_t weights = l->params[CONV_WEIGHTS].count,
                 floats = l->params[CONV_WEIGHTS].grad
                              ? 0
                              : winograd_weights_floats(cv->filters, l->in_shape.c) + weights;
    if (floats <= wg->kept_floats)
        return;
    free_lines(wg->kept);
    wg->kept = zeroed_lines(floats, sizeof *wg->kept);
    wg->kept_floats = wg->kept ? floats : 0;
    wg->seen = wg->kept ? wg->kept + floats - weights : NULL;
}

void conv_winograd_release(ConvCpu *cpu)
{
    free_lines(cpu->wino.kept);
}

/* Whether n floats of a and b differ in any bit, the threads comparing blocks. */
static int weights_differ(const float *a, const float *b, size_t n)
{
    int differ = 0;
#pragma omp parallel for schedule(static) reduction(| : differ) if (n > CONV_PARALLEL_MIN)
    for (size_t i = 0; i < n; i += CONV_COPY_BLOCK)
        differ |= memcmp(a + i, b + i,
                         (n - i < CONV_COPY_BLOCK ? n - i : CONV_COPY_BLOCK) * sizeof *a) != 0;
    return differ;
}

/* The forward's transformed weights: those kept, transformed again when the weights changed
 * since, or else transformed into u. */
static const float *winograd_forward_weights(const Layer *l, const Conv *cv, ConvWinograd *wg)
{
    const Param *pw = &l->params[CONV_WEIGHTS];
    if (!wg->kept || pw->grad) {
        winograd_weights(pw->data, cv->filters, l->in_shape.c, wg->u);
        return wg->u;
    }
    if (!wg->fresh || weights_differ(wg->seen, pw->data, pw->count)) {
        winograd_weights(pw->data, cv->filters, l->in_shape.c, wg->kept);
        memcpy(wg->seen, pw->data, pw->count * sizeof *pw->data);
        wg->fresh = 1;
    }
    return wg->kept;
}

/* Plans the winograd layer (wino.on) for batch on threads: its transformed weights and the
 * threads' scratch, which the input gradient's swapped plan needs as much of (and the weight
 * gradient's, wino.grad). bf16 and int8 layers stay on the reference. */
void conv_winograd_resize(Layer *l, int batch, int threads, LayerState *st)
{
    const Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    ConvWinograd *wg = &cpu->wino;
    const Shape in = l->in_shape;
    const int training = l->params[CONV_WEIGHTS].grad != NULL;
    wg->on = cpu->wanted == CONV_ENGINE_WINO && !l->quant && l->precision == GEMM_FP32;
    wg->grad =
        wg->on && training && wg->training && winograd_grad_worth(in.c, cv->filters, in.h, in.w);
    wg->u = layer_work_floats(st, wg->on ? winograd_weights_floats(cv->filters, in.c) : 0);
    if (!wg->on)
        return;
    l->engine = training && !wg->training ? "ref" : "wino"; /* what its training passes run */
    winograd_keep(l, cv, wg);
    wg->plan = winograd_plan(batch, in.c, cv->filters, in.h, in.w, threads);
    size_t floats = winograd_scratch_floats(&wg->plan);
    if (wg->grad && winograd_grad_scratch_floats(&wg->plan) > floats)
        floats = winograd_grad_scratch_floats(&wg->plan);
    const size_t per_sample = (floats + (size_t)batch - 1) / (size_t)batch;
    if (per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
}

int conv_winograd_runs(const Layer *l, const StepContext *ctx)
{
    const ConvWinograd *wg = &((const Conv *)l->priv)->cpu->wino;
    return wg->on && conv_precision(l) == GEMM_FP32 && !l->quant && (!ctx->train || wg->training);
}

void conv_winograd_forward(Layer *l, const StepContext *ctx, const float *x, float *y)
{
    const Conv *cv = l->priv;
    ConvWinograd *wg = &cv->cpu->wino;
    winograd_conv(&wg->plan, winograd_forward_weights(l, cv, wg), x, y, 0, ctx->exec->workspace);
}

void conv_winograd_weight_grads(Layer *l, const StepContext *ctx)
{
    const ConvWinograd *wg = &((const Conv *)l->priv)->cpu->wino;
    winograd_weight_grads(&wg->plan, l->in[0], l->delta, l->params[CONV_WEIGHTS].grad,
                          ctx->exec->workspace);
}

void conv_winograd_input_grads(Layer *l, const StepContext *ctx, float *dx, int fresh)
{
    const ConvCpu *cpu = ((const Conv *)l->priv)->cpu;
    const WinogradPlan *p = &cpu->wino.plan;
    const WinogradPlan dp = winograd_plan(ctx->batch, p->k, p->c, p->h, p->w, p->threads);
    winograd_weights(cpu->ref.w_flipped, p->c, p->k, cpu->wino.u);
    winograd_conv(&dp, cpu->wino.u, l->delta, dx, !fresh, ctx->exec->workspace);
}

/* ---- oneDNN ---- */

/* [convolutional] on oneDNN (ops/dnnl_conv.h), the engine of [net] engine=dnnl, or engine=auto
 * where dnnl_conv_preferred says so for the layer's shape (conv.c chooses): the convolution
 * reorders the same NCHW tensors to and from its blocked layouts: forward with the bias fused (and
 * relu or leaky too when there is no batch norm), backward data, and backward weights with the
 * bias gradient; batch norm and the other activations stay as on the reference. oneDNN's blocked
 * copies of the tensors and its scratchpad are in the net's shared scratch buffer (resize raises
 * the layer's scratch to what they need); its reorders add the gradients (the += contract). A
 * layer falls back to the reference when oneDNN has only its slow reference implementation for it
 * ("ref:any"). In precision=bf16 the layer runs on oneDNN (DnnlConvDesc.bf16: x, w and dy rounded)
 * on its bf16 kernels where they outrun its float32 ones, else on those on rounded copies. In an
 * inference net (no gradients) batch norm's running statistics are folded into the weights and
 * bias each forward (batchnorm_fold), so that oneDNN applies them with relu or leaky fused as
 * without batch norm; and the input and output pass in oneDNN's blocked layout nChw8c where the
 * forward's are that and the neighbours take it too (conv_dnnl_layout, Layer.blocked: net_resize
 * decides), in inference forwards only. Built without oneDNN (make DNNL=0), dnnl_conv_prepare
 * fails and no layer comes here.
 *
 *   in [batch][c][h][w] -> out [batch][filters][out_h][out_w]
 */
int conv_dnnl_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    ConvDnnl *dn = &cpu->dnnl;
    const int backward = l->params[CONV_WEIGHTS].grad != NULL;
    const int bn = cv->stage.batch_normalize;
    const Shape in = l->in_shape, out = l->out_shape;
    dn->folded = bn && !backward;
    const ActivationKind act = dn->sum_act ? (ActivationKind)(dn->sum_act - 1) : l->activation;
    dn->fused = (!bn || dn->folded) && (act == CDL_ACT_RELU || act == CDL_ACT_LEAKY);
    const DnnlConvDesc d = {
        .batch = batch,
        .in_c = in.c,
        .in_h = in.h,
        .in_w = in.w,
        .out_c = out.c,
        .out_h = out.h,
        .out_w = out.w,
        .size = cv->size,
        .stride = cv->stride,
        .padding = cv->padding,
        .groups = cv->groups,
        .bias = !bn || dn->folded,
        .sum = dn->sum_act != 0,
        .eltwise = dn->fused,
        .slope = act == CDL_ACT_LEAKY ? 0.1f : 0.0f,
        .backward = backward,
        .data_grad = backward,
        .bf16 = l->precision == GEMM_BF16,
    };
    int rc = dnnl_conv_prepare(&dn->dc, &d, e);
    if (rc)
        return rc;
    for (int k = 0; k < DNNL_CONV_PRIMS; k++)
        if (!strncmp(dn->dc.impl[k], "ref", 3)) {
            dnnl_conv_release(&dn->dc);
            return CDL_OK;
        }
    dn->on = 1;
    l->engine = "dnnl";
    const size_t floats = (dn->dc.scratch_bytes + sizeof(float) - 1) / sizeof(float);
    const size_t per_sample = (floats + (size_t)batch - 1) / (size_t)batch;
    if (per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
    bias_norm_resize(&cv->stage, batch, st);
    dn->w_fold = layer_work_floats(st, dn->folded ? l->params[CONV_WEIGHTS].count : 0);
    dn->b_fold = layer_work_floats(st, dn->folded ? (size_t)out.c : 0);
    /* a folded layer's training forward (the reference's) rounds into these in bf16 */
    const int bf16_ref = dn->folded && d.bf16;
    cpu->w_bf16 = layer_state_floats(st, bf16_ref ? l->params[CONV_WEIGHTS].count : 0);
    cpu->x_bf16 = layer_state_floats(
        st, bf16_ref && (cpu->direct || cpu->depthwise) ? (size_t)batch * shape_size(in) : 0);
    return CDL_OK;
}

/* A folded layer on oneDNN with a linear activation adds the shortcut's other input and
 * applies relu, leaky or nothing after it as post-ops (LayerKernels.fuse_sum). */
int conv_dnnl_fuse_sum(Layer *l, int act)
{
    ConvDnnl *dn = &((Conv *)l->priv)->cpu->dnnl;
    dn->sum_act = 0;
    if (act < 0 || !dn->on || !dn->folded || l->activation != CDL_ACT_LINEAR ||
        (act != CDL_ACT_LINEAR && act != CDL_ACT_RELU && act != CDL_ACT_LEAKY))
        return 0;
    dn->sum_act = act + 1;
    return 1;
}

/* A layer on oneDNN, where the batch norm (folded, or bias_norm's nChw8c kernels in training)
 * and the activation (elementwise) take any layout, takes its input and gives its output in
 * nChw8c where its primitives' own layouts are that (dnnl_conv_blocked: in a training net the
 * backward's dy and dx too), each apart. */
int conv_dnnl_layout(const Layer *l, int k)
{
    const ConvDnnl *dn = &((const Conv *)l->priv)->cpu->dnnl;
    if (!dn->on || (dn->folded && l->blocked >> LAYER_TRAIN_BIT & 1))
        return LAYOUT_PLAIN; /* a folded layer's training forward is the reference's */
    return dnnl_conv_blocked(&dn->dc, k < 0 ? DNNL_CONV_Y_BLOCKED : DNNL_CONV_X_BLOCKED)
               ? LAYOUT_FREE
               : LAYOUT_PLAIN;
}

/* dnnl_conv_forward's and _backward's blocked for this pass (Layer.blocked). */
static unsigned dnnl_blocked(const Layer *l, const StepContext *ctx)
{
    const unsigned b = layer_blocked(l, ctx);
    return (b & 1 ? DNNL_CONV_X_BLOCKED : 0) | (b >> LAYER_OUT_BIT & 1 ? DNNL_CONV_Y_BLOCKED : 0);
}

int conv_dnnl_forward_runs(const Layer *l, const StepContext *ctx)
{
    const ConvDnnl *dn = &((const Conv *)l->priv)->cpu->dnnl;
    return dn->on && !(dn->folded && ctx->train);
}

/* oneDNN takes float32 x and w in either precision (in bf16 its reorders round them). */
void conv_dnnl_forward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    ConvDnnl *dn = &cv->cpu->dnnl;
    const int batch = ctx->batch;
    const float *x = l->in[0];
    const int bn = cv->stage.batch_normalize && !dn->folded;
    const float *w = l->params[CONV_WEIGHTS].data;
    const float *b = bn ? NULL : l->params[cv->stage.first_param].data;
    if (dn->folded) {
        const Param *pw = &l->params[CONV_WEIGHTS];
        bias_norm_fold(&cv->stage, l, ctx, w, pw->count / (size_t)cv->filters, dn->w_fold,
                       dn->b_fold);
        w = dn->w_fold;
        b = dn->b_fold;
    }
    /* with batch norm, its input buffer when its fused pass keeps it (else l->out) */
    float *y = bn          ? bias_norm_product_output(&cv->stage, l, ctx)
               : dn->fused ? l->out
                           : layer_activation_input(l);
    if (dn->sum_act) { /* folded: an inference forward */
        y = l->sum_into->out;
        const size_t n = (size_t)batch * shape_size(l->out_shape);
#pragma omp parallel for schedule(static) if (n > CONV_PARALLEL_MIN)
        for (size_t i = 0; i < n; i += CONV_COPY_BLOCK)
            memcpy(y + i, l->sum_into->in[1] + i,
                   (n - i < CONV_COPY_BLOCK ? n - i : CONV_COPY_BLOCK) * sizeof *y);
    }
    dnnl_conv_forward(&dn->dc, x, w, b, y, ctx->exec->workspace, dnnl_blocked(l, ctx));
    if (bn && bias_norm_forward_activated(&cv->stage, l, ctx, y))
        return;
    if (bn)
        bias_norm_forward(&cv->stage, l, ctx, l->out, layer_activation_input(l));
    if (!dn->fused && !dn->sum_act)
        layer_activate(l, batch);
}

void conv_dnnl_backward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    const int bn = cv->stage.batch_normalize;
    Param *w = &l->params[CONV_WEIGHTS], *b = &l->params[cv->stage.first_param];
    dnnl_conv_backward(&cv->cpu->dnnl.dc, l->in[0], l->delta, w->data, l->in_delta[0], w->grad,
                       bn ? NULL : b->grad, ctx->exec->workspace, dnnl_blocked(l, ctx),
                       l->in_delta_fresh[0]);
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_convolutional_kernels = {
    .resize = conv_resize,
    .release = conv_release,
    .layout = conv_layout,
    .fuse_sum = conv_fuse_sum,
    .forward = conv_forward,
    .backward = conv_backward,
};
