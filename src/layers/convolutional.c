/* [convolutional]: 2-D convolution with groups, optional batch norm and an activation.
 *
 *   in  [batch][c][h][w]
 *   out [batch][filters][out_h][out_w], out_h = (h + 2*padding - size)/stride + 1
 *   weights [filters][c/groups][size][size]; biases [filters]
 *   with batch_normalize: scales, biases (the BN shift; no conv bias), rolling_mean,
 *   rolling_variance [filters]
 *
 * Each image and group is one gemm: out_g[filters/g][out_hw] = W_g * cols, with cols the
 * im2col unfolding of the group's input channels (the input itself for a 1x1, stride 1,
 * unpadded convolution). Depthwise convolutions (one input channel per group) use direct
 * loops instead: their gemms would be a single row each. A few-channel stride-1 one-group
 * convolution (a first layer: at most CONV_SMALL_MAX_TAPS taps) runs its forward and weight
 * gradient on ops/conv_small.h's direct kernel instead, in float32.
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
 * reduced in thread order, so results depend on the thread count but not on timing.
 *
 * precision=bf16 (Layer.precision): the weights, the column matrices (the input itself for a
 * direct or depthwise convolution) and delta are rounded to bf16 (gemm_operand) before the
 * products, as torch.autocast("cpu", torch.bfloat16) takes a convolution's operands; the bias
 * or batch norm and the activation stay float32.
 *
 * A training batch norm followed by leaky or relu (every engine) runs with the activation
 * in its passes (bias_norm_forward_activated, bias_norm_backward_activated), leaving l->pre
 * unwritten; the product then writes into the batch norm's x_hat buffer, which it keeps for the
 * backward instead of x_hat (bias_norm_product_output).
 *
 * With [net] engine=dnnl (not the default: see docs/engines.md), or engine=auto where
 * dnnl_conv_preferred says so for the layer's shape, the convolution itself runs through oneDNN
 * (ops/dnnl_conv.h), reordering the same NCHW tensors to and from its blocked layouts: forward with
 * the bias fused (and relu or leaky too when there is no batch norm), backward data, and backward
 * weights with the bias gradient; batch norm and the other activations stay as above. oneDNN's
 * blocked copies of the tensors and its scratchpad are in the net's shared scratch buffer (resize
 * raises the layer's scratch to what they need); its reorders add the gradients (the += contract).
 * A layer falls back to the reference when oneDNN has only its slow reference implementation for it
 * ("ref:any") and when it runs with int8 weights. In precision=bf16 a layer runs on oneDNN
 * (DnnlConvDesc.bf16: x, w and dy rounded) where dnnl_conv_bf16_runs, whatever the engine unless
 * the cfg says engine=ref: on its bf16 kernels where they outrun its float32 ones, else on those
 * on rounded copies; elsewhere on the rounding reference. In an
 * inference net (no gradients) batch norm's running statistics are folded into the weights and bias
 * each forward (batchnorm_fold), so that oneDNN applies them with relu or leaky fused as without
 * batch norm; and the input and output pass in oneDNN's blocked layout nChw8c where the forward's
 * are that and the neighbours take it too (conv_layout, Layer.blocked: net_resize decides), in
 * inference forwards only. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/layer.h"
#include "core/layer_quant.h"
#include "core/net.h"
#include "backend/cpu/bias_norm.h"
#include "layers/convolutional.h"
#include "ops/conv_small.h"
#include "ops/dnnl_conv.h"
#include "ops/gemm.h"
#include "ops/im2col.h"
#include "ops/qgemm.h"
#include "ops/winograd.h"
#include "util/cache_lines.h"

/* Positions in l->params, in the order parse declares them. */
enum { P_WEIGHTS, P_BIASES };

/* Threads that accumulate weight gradients in private copies: each copy costs one weight
 * tensor, so beyond this many the images of a backward run one by one instead. */
#define CONV_MAX_GRAD_THREADS 4

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define CONV_PARALLEL_MIN 32768

/* A gemm packs all its weights for each call, and OpenBLAS runs short gemms of large weights
 * slowly (512x4x4 layers: half the rate of N >= 256): layers with at least this many weights (of
 * a group) per output position put several images side by side in one gemm, up to
 * CONV_GEMM_COLUMNS columns. Measured under load: 1.4x on 512x4x4 layers (147456 weights per
 * position); 256x8x8 (9216) and 128x7x7 (1500-3000) layers ran 5-15% slower batched. */
#define CONV_WEIGHTS_PER_COLUMN 16384
#define CONV_GEMM_COLUMNS 512

/* Multiply-adds an image from which split_threads shares one image's work over the threads. */
#define CONV_SPLIT_MIN 262144

/* Floats one thread copies at a time (a fused residual sum's input). */
#define CONV_COPY_BLOCK 16384

typedef struct Conv {
    int filters, size, stride, padding, groups;
    int direct;         /* 1x1, stride 1, no padding: the input is its own column matrix */
    int depthwise;      /* one input channel per group: direct loops, no gemm */
    int same;           /* stride 1, output as large as the input: the input gradient is a
                           convolution of delta with the flipped weights, no col2im */
    size_t cols_floats; /* im2col columns of one image and group (the scratch per sample) */
    float *w_flipped;   /* same: per group [c/groups][filters/groups][size][size], the
                           weights transposed and turned 180 degrees (a backward's) */
    BiasNorm stage;     /* bias, or batch norm over batch and positions */
    float *dw_partial;  /* [n_partial][weights]: weight gradients of threads 1.. */
    int n_partial;
    /* int8 weights (l->quant): qgemm_float's work for one image, per thread */
    unsigned char *qwork;
    size_t qwork_bytes;
    int qwork_threads;
    /* precision=bf16: the weights rounded by each forward, and the rounded input of a direct or
     * depthwise convolution [batch][c][h][w] (the others round their column matrices) */
    float *w_bf16, *x_bf16;
    /* engine=dnnl: wanted (parse), and the layer runs on oneDNN (resize); fused: its forward
     * applies the activation (relu or leaky without batch norm), leaving l->pre unwritten (their
     * derivatives read the output only) */
    int dnnl_wanted, dnnl, fused;
    /* precision=bf16 runs on oneDNN (parse: dnnl_conv_bf16_runs, unless the cfg says
     * engine=ref), x, w and dy rounded by it; else on the rounding reference below, as where
     * oneDNN has only "ref:any" */
    int dnnl_bf16_wanted;
    DnnlConv dc;
    /* engine=dnnl in an inference net (no gradients) with batch norm: its inference forward
     * folds the running statistics into w_fold and b_fold (work) and runs them as the
     * convolution's weights and bias, the activation fused as without batch norm */
    int folded;
    float *w_fold, *b_fold;
    /* A folded layer on oneDNN whose output a [shortcut] alone reads (conv_fuse_sum): 1 + that
     * shortcut's activation, which the inference forward applies after adding its other input
     * (oneDNN's sum post-op) into the shortcut's output (Layer.sum_into); 0: none */
    int sum_act;
    size_t base_scratch; /* parse's scratch_per_sample (resize adds oneDNN's to it) */
    /* [net] winograd=1: wanted (parse: a same 3x3 one-group convolution), and the layer runs
     * its forward and input gradient on ops/winograd.h (resize: float32, not int8); wino_u: the
     * transformed weights (the forward's, or the flipped ones of the input gradient) */
    int wino_wanted, winograd;
    /* its training passes run on Winograd too: the mini-batch ([net] batch / subdivisions) has
     * [net] winograd_min_tiles output tiles (else im2col; its passes in inference mode, such as
     * training's validation, stay on Winograd, as an inference net's, eval's, do) */
    int wino_training;
    /* and its weight gradient too (resize: a training net on Winograd, winograd_grad_worth) */
    int wino_grad;
    WinogradPlan wino;
    float *wino_u;
    /* An inference net's (no gradients) transformed weights, kept from one forward to the next
     * outside the slabs (resize allocates them, release frees them): wino_kept [16][k][c] of
     * the weights wino_seen holds a copy of, valid when wino_fresh; a forward whose weights
     * differ from wino_seen (a load, an update) transforms them again. NULL: every forward
     * transforms them into wino_u. */
    float *wino_kept, *wino_seen;
    size_t wino_kept_floats;
    int wino_fresh;
    /* Images side by side in one gemm (resize's choice; 1: image by image), what
     * conv_set_images_per_gemm asked for (0: from the shape), and the scratch floats one image
     * of such a gemm takes: its columns, then its rows of the product or of delta. */
    int images_per_gemm, images_asked;
    size_t image_floats;
    /* few input channels (a first layer), stride 1, one group, on the reference engine: the
     * forward and weight gradient of an image run ops/conv_small.h's direct kernel in float32
     * (parse: its plan fits in an image's im2col scratch) */
    int small;
    ConvSmall small_plan;
} Conv;

/* The line of key when the section sets it, else the section header's. */
static int conv_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int filters, size, stride, pad, padding, groups, bn;
    int rc = cfg_get_int(cfg, s, "filters", 1, &filters, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "size", 1, &size, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "stride", 1, &stride, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "pad", 0, &pad, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "padding", 0, &padding, e);
    if (!rc && pad) /* as darknet: pad=1 means size/2 whatever padding= says */
        padding = size / 2;
    if (!rc)
        rc = cfg_get_int(cfg, s, "groups", 1, &groups, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "batch_normalize", 0, &bn, e);
    if (!rc)
        rc = layer_parse_activation(l, cfg, s, CDL_ACT_LOGISTIC, e);
    if (rc)
        return rc;

    const char *path = cfg->path;
    const Shape in = l->in_shape;
    if (filters < 1)
        return layer_bad_key(l, cfg, s, "filters", filters, "expected at least 1", e);
    if (size < 1)
        return layer_bad_key(l, cfg, s, "size", size, "expected at least 1", e);
    if (stride < 1)
        return layer_bad_key(l, cfg, s, "stride", stride, "expected at least 1", e);
    if (padding < 0)
        return layer_bad_key(l, cfg, s, "padding", padding, "expected 0 or more", e);
    if ((size_t)size > NET_MAX_FLOATS || (size_t)padding > NET_MAX_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] size=%d, padding=%d: expected at most %zu", path,
                         s->line, l->index, s->name, size, padding, NET_MAX_FLOATS);
    if (groups < 1 || in.c % groups || filters % groups)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d: [%s] groups=%d must divide both the input channels "
                         "(%d) and filters (%d)",
                         cfg_where(cfg, s, cfg_find(s, "groups")).text, l->index, s->name, groups,
                         in.c, filters);
    const int out_h = conv_out_size(in.h, size, stride, padding);
    const int out_w = conv_out_size(in.w, size, stride, padding);
    if (out_h < 1 || out_w < 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] output would be empty: input %dx%d, size=%d, "
                         "stride=%d, padding=%d",
                         path, s->line, l->index, s->name, in.h, in.w, size, stride, padding);
    const double kdim_values = (double)(in.c / groups) * size * size;
    if (kdim_values * filters > (double)NET_MAX_FLOATS ||
        kdim_values * out_h * out_w > (double)NET_MAX_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] is too large: %.0f weights and %.0f im2col values "
                         "per image (at most %zu each)",
                         path, s->line, l->index, s->name, kdim_values * filters,
                         kdim_values * out_h * out_w, NET_MAX_FLOATS);

    Conv *cv = l->priv;
    cv->filters = filters;
    cv->size = size;
    cv->stride = stride;
    cv->padding = padding;
    cv->groups = groups;
    cv->direct = size == 1 && stride == 1 && padding == 0;
    cv->depthwise = in.c == groups && groups > 1 && !cv->direct;
    cv->same = !cv->direct && !cv->depthwise && stride == 1 && out_h == in.h && out_w == in.w;

    l->out_shape = (Shape){filters, out_h, out_w};
    const size_t out_hw = (size_t)out_h * out_w;
    const size_t kdim = (size_t)(in.c / groups) * size * size;
    layer_add_param(l, "weights", 1, 1, 4, (int64_t[]){filters, in.c / groups, size, size});
    bias_norm_declare(&cv->stage, l, bn != 0, filters, (int)out_hw);
    /* A same convolution's input gradient unfolds delta: filters/groups channels. */
    const size_t kdim_delta = cv->same ? (size_t)(filters / groups) * size * size : 0;
    cv->cols_floats =
        cv->direct || cv->depthwise ? 0 : (kdim > kdim_delta ? kdim : kdim_delta) * out_hw;
    l->flops = 2.0 * (double)out_hw * filters * (double)kdim;
    l->scratch_per_sample = cv->cols_floats;
    const int wino = net->winograd && cv->same && size == 3 && groups == 1 &&
                     winograd_worth(in.c, filters, in.h, in.w);
    cv->dnnl_wanted =
        net->engine == NET_ENGINE_DNNL ||
        (net->engine == NET_ENGINE_AUTO && dnnl_conv_preferred(&(DnnlConvDesc){.in_c = in.c,
                                                                               .in_h = in.h,
                                                                               .in_w = in.w,
                                                                               .out_c = filters,
                                                                               .out_h = out_h,
                                                                               .out_w = out_w,
                                                                               .size = size,
                                                                               .stride = stride,
                                                                               .padding = padding,
                                                                               .groups = groups,
                                                                               .winograd = wino}));
    cv->dnnl_bf16_wanted =
        (net->engine != NET_ENGINE_REF || !net->engine_given) && dnnl_conv_bf16_runs();
    cv->wino_wanted = !cv->dnnl_wanted && wino;
    cv->wino_training = winograd_tiles(net->hyper.batch / net->hyper.subdivisions, in.h, in.w) >=
                        net->winograd_min_tiles;
    l->engine = cv->dnnl_wanted ? "dnnl" : cv->wino_wanted ? "wino" : "ref";
    cv->small = !cv->dnnl_wanted && !cv->wino_wanted && groups == 1 && stride == 1 && !cv->direct &&
                conv_small_plan(&cv->small_plan, in.c, in.h, in.w, filters, size, padding) &&
                conv_small_buf_floats(&cv->small_plan) <= cv->cols_floats;
    cv->base_scratch = l->scratch_per_sample;
    return CDL_OK;
}

static void conv_init(Layer *l, Rng *rng)
{
    const Conv *cv = l->priv;
    Param *w = &l->params[P_WEIGHTS];
    const int fan_in = (l->in_shape.c / cv->groups) * cv->size * cv->size;
    const float std = sqrtf(2.0f / (float)fan_in);
    for (size_t i = 0; i < w->count; i++)
        w->data[i] = std * rng_normal(rng);
    bias_norm_init(&cv->stage, l);
}

/* Makes the oneDNN primitives for batch (the same ones on resize's measuring and carving calls)
 * and raises the scratch to what they need; cv->dnnl = 0 when the layer stays on the reference. */
static int dnnl_resize(Layer *l, Conv *cv, int batch, LayerState *st, Error *e)
{
    const int backward = l->params[P_WEIGHTS].grad != NULL;
    const int bn = cv->stage.batch_normalize;
    const Shape in = l->in_shape, out = l->out_shape;
    cv->folded = bn && !backward;
    const ActivationKind act = cv->sum_act ? (ActivationKind)(cv->sum_act - 1) : l->activation;
    cv->fused = (!bn || cv->folded) && (act == CDL_ACT_RELU || act == CDL_ACT_LEAKY);
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
        .bias = !bn || cv->folded,
        .sum = cv->sum_act != 0,
        .eltwise = cv->fused,
        .slope = act == CDL_ACT_LEAKY ? 0.1f : 0.0f,
        .backward = backward,
        .data_grad = backward,
        .bf16 = l->precision == GEMM_BF16,
    };
    int rc = dnnl_conv_prepare(&cv->dc, &d, e);
    if (rc)
        return rc;
    for (int k = 0; k < DNNL_CONV_PRIMS; k++)
        if (!strncmp(cv->dc.impl[k], "ref", 3)) {
            dnnl_conv_release(&cv->dc);
            return CDL_OK;
        }
    cv->dnnl = 1;
    l->engine = "dnnl";
    const size_t floats = (cv->dc.scratch_bytes + sizeof(float) - 1) / sizeof(float);
    const size_t per_sample = (floats + (size_t)batch - 1) / (size_t)batch;
    if (per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
    bias_norm_resize(&cv->stage, batch, st);
    cv->w_fold = layer_work_floats(st, cv->folded ? l->params[P_WEIGHTS].count : 0);
    cv->b_fold = layer_work_floats(st, cv->folded ? (size_t)out.c : 0);
    /* a folded layer's training forward (the reference's) rounds into these in bf16 */
    const int bf16_ref = cv->folded && d.bf16;
    cv->w_bf16 = layer_state_floats(st, bf16_ref ? l->params[P_WEIGHTS].count : 0);
    cv->x_bf16 = layer_state_floats(
        st, bf16_ref && (cv->direct || cv->depthwise) ? (size_t)batch * shape_size(in) : 0);
    return CDL_OK;
}

/* Allocates cv->wino_kept and wino_seen for a winograd layer of an inference net (and marks them
 * stale), once for the largest size asked; without the memory each forward transforms. */
static void winograd_keep(const Layer *l, Conv *cv)
{
    cv->wino_fresh = 0;
    const size_t weights = l->params[P_WEIGHTS].count,
                 floats = l->params[P_WEIGHTS].grad
                              ? 0
                              : winograd_weights_floats(cv->filters, l->in_shape.c) + weights;
    if (floats <= cv->wino_kept_floats)
        return;
    free_lines(cv->wino_kept);
    cv->wino_kept = zeroed_lines(floats, sizeof *cv->wino_kept);
    cv->wino_kept_floats = cv->wino_kept ? floats : 0;
    cv->wino_seen = cv->wino_kept ? cv->wino_kept + floats - weights : NULL;
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
 * since, or else transformed into wino_u. */
static const float *winograd_forward_weights(const Layer *l, Conv *cv)
{
    const Param *pw = &l->params[P_WEIGHTS];
    if (!cv->wino_kept || pw->grad) {
        winograd_weights(pw->data, cv->filters, l->in_shape.c, cv->wino_u);
        return cv->wino_u;
    }
    if (!cv->wino_fresh || weights_differ(cv->wino_seen, pw->data, pw->count)) {
        winograd_weights(pw->data, cv->filters, l->in_shape.c, cv->wino_kept);
        memcpy(cv->wino_seen, pw->data, pw->count * sizeof *pw->data);
        cv->wino_fresh = 1;
    }
    return cv->wino_kept;
}

/* Plans the winograd layer (cv->winograd) for batch on threads: its transformed weights and
 * the threads' scratch, which the input gradient's swapped plan needs as much of (and the weight
 * gradient's, cv->wino_grad). bf16 and int8 layers stay on the reference. */
static void winograd_resize(Layer *l, Conv *cv, int batch, int threads, LayerState *st)
{
    const Shape in = l->in_shape;
    const int training = l->params[P_WEIGHTS].grad != NULL;
    cv->winograd = cv->wino_wanted && !l->quant && l->precision == GEMM_FP32;
    cv->wino_grad = cv->winograd && training && cv->wino_training &&
                    winograd_grad_worth(in.c, cv->filters, in.h, in.w);
    cv->wino_u =
        layer_work_floats(st, cv->winograd ? winograd_weights_floats(cv->filters, in.c) : 0);
    if (!cv->winograd)
        return;
    l->engine = training && !cv->wino_training ? "ref" : "wino"; /* what its training passes run */
    winograd_keep(l, cv);
    cv->wino = winograd_plan(batch, in.c, cv->filters, in.h, in.w, threads);
    size_t floats = winograd_scratch_floats(&cv->wino);
    if (cv->wino_grad && winograd_grad_scratch_floats(&cv->wino) > floats)
        floats = winograd_grad_scratch_floats(&cv->wino);
    const size_t per_sample = (floats + (size_t)batch - 1) / (size_t)batch;
    if (per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
}

static int image_threads(int batch);

/* Sets images_per_gemm and image_floats, and raises the scratch to nt threads' chunks of them
 * (chunk_images). */
static void size_chunks(Layer *l, Conv *cv, int batch)
{
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w;
    const int kdim = cg * cv->size * cv->size, kdim_delta = cv->same ? fg * cv->size * cv->size : 0;
    const int kd = cv->direct ? cg : kdim > kdim_delta ? kdim : kdim_delta;
    cv->image_floats = (size_t)(kd + (fg > cg ? fg : cg)) * out_hw;
    const int short_gemm = (double)fg * kdim >= (double)CONV_WEIGHTS_PER_COLUMN * out_hw;
    int k = cv->images_asked ? cv->images_asked
            : short_gemm     ? (CONV_GEMM_COLUMNS + out_hw - 1) / out_hw
                             : 1;
    k = cv->depthwise ? 1 : k < batch ? k : batch;
    cv->images_per_gemm = k;
    const int nt = image_threads(batch), share = (batch + nt - 1) / nt;
    k = k < share ? k : share;
    const size_t per_sample = ((size_t)nt * k * cv->image_floats + batch - 1) / batch;
    if (k > 1 && per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
}

static int conv_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    Conv *cv = l->priv;
    cv->dnnl = cv->fused = cv->folded = cv->winograd = 0;
    cv->images_per_gemm = 1;
    l->engine = "ref";
    l->scratch_per_sample = cv->base_scratch;
    if (!l->quant && (l->precision == GEMM_BF16 ? cv->dnnl_bf16_wanted : cv->dnnl_wanted)) {
        int rc = dnnl_resize(l, cv, batch, st, e);
        if (rc || cv->dnnl)
            return rc;
    }
    size_chunks(l, cv, batch);
    const int threads = omp_get_max_threads();
    /* Only a backward needs them; inference nets have no gradient slab. */
    const int backward = l->params[P_WEIGHTS].grad != NULL;
    winograd_resize(l, cv, batch, threads, st);
    cv->n_partial = backward && !cv->depthwise
                        ? (threads < CONV_MAX_GRAD_THREADS ? threads : CONV_MAX_GRAD_THREADS) - 1
                        : 0;
    const size_t weights = l->params[P_WEIGHTS].count;
    cv->dw_partial = layer_work_floats(st, (size_t)cv->n_partial * weights);
    cv->w_flipped = layer_work_floats(st, cv->same && backward ? weights : 0);
    const int kdim = (l->in_shape.c / cv->groups) * cv->size * cv->size;
    cv->qwork_threads = l->quant ? threads : 0;
    cv->qwork_bytes = l->quant
                          ? qgemm_work_bytes(cv->images_per_gemm * l->out_shape.h * l->out_shape.w,
                                             cv->filters, kdim)
                          : 0;
    cv->qwork = layer_state_bytes(st, (size_t)cv->qwork_threads * cv->qwork_bytes);
    const int bf16 = l->precision == GEMM_BF16;
    cv->w_bf16 = layer_state_floats(st, bf16 ? weights : 0);
    cv->x_bf16 = layer_state_floats(
        st, bf16 && (cv->direct || cv->depthwise) ? (size_t)batch * shape_size(l->in_shape) : 0);
    bias_norm_resize(&cv->stage, batch, st);
    return CDL_OK;
}

/* The precision of the layer's products: an int8 layer's forward multiplies in int8. */
static GemmPrecision conv_precision(const Layer *l)
{
    return l->quant ? GEMM_FP32 : l->precision;
}

/* The layer's pass runs on ops/winograd.h: planned so by resize, still float32 (net_set_precision
 * may have changed it since), and in inference mode or of a mini-batch with tiles enough. */
static int conv_winograd(const Layer *l, const Conv *cv, const StepContext *ctx)
{
    return cv->winograd && conv_precision(l) == GEMM_FP32 && !l->quant &&
           (!ctx->train || cv->wino_training);
}

/* The weights the products take: the bf16 copy the forward rounded, or the float32 weights. */
static const float *conv_weights(const Layer *l, const Conv *cv)
{
    return conv_precision(l) == GEMM_BF16 ? cv->w_bf16 : l->params[P_WEIGHTS].data;
}

/* A folded layer on oneDNN with a linear activation adds the shortcut's other input and
 * applies relu, leaky or nothing after it as post-ops (LayerKernels.fuse_sum). */
static int conv_fuse_sum(Layer *l, int act)
{
    Conv *cv = l->priv;
    cv->sum_act = 0;
    if (act < 0 || !cv->dnnl || !cv->folded || l->activation != CDL_ACT_LINEAR ||
        (act != CDL_ACT_LINEAR && act != CDL_ACT_RELU && act != CDL_ACT_LEAKY))
        return 0;
    cv->sum_act = act + 1;
    return 1;
}

/* A layer on oneDNN, where the batch norm (folded, or bias_norm's nChw8c kernels in training)
 * and the activation (elementwise) take any layout, takes its input and gives its output in
 * nChw8c where its primitives' own layouts are that (dnnl_conv_blocked: in a training net the
 * backward's dy and dx too), each apart. */
static int conv_layout(const Layer *l, int k)
{
    const Conv *cv = l->priv;
    if (!cv->dnnl || (cv->folded && l->blocked >> LAYER_TRAIN_BIT & 1))
        return LAYOUT_PLAIN; /* a folded layer's training forward is the reference's */
    return dnnl_conv_blocked(&cv->dc, k < 0 ? DNNL_CONV_Y_BLOCKED : DNNL_CONV_X_BLOCKED)
               ? LAYOUT_FREE
               : LAYOUT_PLAIN;
}

/* The image's forward and weight gradient run ops/conv_small.h: planned so by parse, float32
 * weights and products. */
static int conv_small_runs(const Layer *l, const Conv *cv)
{
    return cv->small && !l->quant && conv_precision(l) == GEMM_FP32;
}

static void conv_release(Layer *l)
{
    Conv *cv = l->priv;
    dnnl_conv_release(&cv->dc);
    free_lines(cv->wino_kept);
}

/* A grouped convolution's gemms take row blocks of the weights that int8 panels do not split. */
static int conv_quant_weights(const Layer *l)
{
    const Conv *cv = l->priv;
    return cv->groups == 1 ? P_WEIGHTS : -1;
}

/* Threads to spread the batch's images over, or 1 to run images one by one with threaded
 * kernels (when there are fewer images than threads, or they would split unevenly). */
static int image_threads(int batch)
{
    const int nt = omp_get_max_threads();
    if (nt < 2 || batch < nt || (batch % nt && batch < 4 * nt))
        return 1;
    return nt;
}

/* Threads that share each image's work when the images go one by one (image_threads 1): every
 * thread unfolds some channels and takes a fixed block of each product's rows or columns, with
 * single-threaded gemms (split_gemm), instead of OpenBLAS threading each call; 1 for layers
 * below CONV_SPLIT_MIN multiply-adds an image, for int8 weights (qgemm_float threads itself),
 * depthwise layers (their loops are threaded over planes) and few-channel layers on
 * ops/conv_small.h (one thread an image). */
static int split_threads(const Layer *l, const Conv *cv, int batch)
{
    const int nt = omp_get_max_threads();
    if (nt < 2 || image_threads(batch) > 1 || l->quant || cv->depthwise || conv_small_runs(l, cv) ||
        l->flops < 2.0 * CONV_SPLIT_MIN)
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
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    const float *w = conv_weights(l, cv);
    int c0, c1;
    split_channels(split, cg, &c0, &c1);
    if (conv_small_runs(l, cv)) {
        conv_small_forward(&cv->small_plan, x_b, w, out_b, cols);
        return;
    }
    for (int g = 0; g < cv->groups; g++) {
        const float *xg = x_b + (size_t)g * cg * in.h * in.w;
        if (!cv->direct) {
            unfold_input(l, cv, xg, c0, c1, cols);
            split_barrier(split);
        }
        const float *x_cols = cv->direct ? xg : cols;
        float *out_g = out_b + (size_t)g * fg * out_hw;
        if (l->quant) {
            unsigned char *work = cv->qwork + (size_t)omp_get_thread_num() * cv->qwork_bytes;
            qgemm_float(&l->quant->matrix, xq, out_hw, x_cols, out_hw, QGEMM_COLS, out_g, out_hw,
                        QGEMM_COLS, work);
        } else {
            conv_gemm(split, 0, 0, fg, out_hw, kdim, w + (size_t)g * fg * kdim, kdim, x_cols,
                      out_hw, 0.0f, out_g, out_hw);
        }
        if (!cv->direct)
            split_barrier(split); /* the next group or image overwrites cols */
    }
}

/* dW[filters][kdim] = beta * dW + delta_b * cols_b^T for one image, group by group; split as
 * forward_image's. */
static void weight_grads_image(const Layer *l, const Conv *cv, const float *x_b,
                               const float *delta_b, float beta, float *dw, float *cols, int split)
{
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    int c0, c1;
    split_channels(split, cg, &c0, &c1);
    if (conv_small_runs(l, cv)) {
        conv_small_weight_grads(&cv->small_plan, x_b, delta_b, beta, dw, cols);
        return;
    }
    for (int g = 0; g < cv->groups; g++) {
        const float *xg = x_b + (size_t)g * cg * in.h * in.w;
        if (!cv->direct) {
            unfold_input(l, cv, xg, c0, c1, cols);
            split_barrier(split);
        }
        conv_gemm(split, 0, 1, fg, kdim, out_hw, delta_b + (size_t)g * fg * out_hw, out_hw,
                  cv->direct ? xg : cols, out_hw, beta, dw + (size_t)g * fg * kdim, kdim);
        if (!cv->direct)
            split_barrier(split);
    }
}

/* w_flipped[g][c][f][size-1-ki][size-1-kj] = W[g][f][c][ki][kj]: with it the input gradient
 * of a same convolution is the convolution of delta (padded by size-1-pad, which is pad). */
static void flip_weights(const Layer *l, Conv *cv)
{
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int kk = cv->size * cv->size;
    const float *w = conv_weights(l, cv);
    for (int g = 0; g < cv->groups; g++) {
        const float *wg = w + (size_t)g * fg * cg * kk;
        float *fl = cv->w_flipped + (size_t)g * fg * cg * kk;
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
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    const int kk = cv->size * cv->size;
    const float *w = conv_weights(l, cv);
    if (cv->same) {
        const int kdim_delta = fg * kk;
        int f0, f1;
        split_channels(split, fg, &f0, &f1);
        for (int g = 0; g < cv->groups; g++) {
            im2col(delta_b + ((size_t)g * fg + f0) * out_hw, f1 - f0, in.h, in.w, cv->size, 1,
                   cv->size - 1 - cv->padding, cols + (size_t)f0 * kk * out_hw, (size_t)out_hw);
            split_barrier(split);
            conv_gemm(split, 0, 0, cg, out_hw, kdim_delta,
                      cv->w_flipped + (size_t)g * cg * kdim_delta, kdim_delta, cols, out_hw, 1.0f,
                      dx_b + (size_t)g * cg * out_hw, out_hw);
            split_barrier(split);
        }
        return;
    }
    int c0, c1;
    split_channels(split, cg, &c0, &c1);
    for (int g = 0; g < cv->groups; g++) {
        const float *wg = w + (size_t)g * fg * kdim, *dg = delta_b + (size_t)g * fg * out_hw;
        float *dxg = dx_b + (size_t)g * cg * in.h * in.w;
        if (cv->direct) {
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
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, out_hw = l->out_shape.h * l->out_shape.w;
    const size_t in_size = shape_size(in), ld = (size_t)n * out_hw;
    const float *xg = x + (size_t)g * cg * in.h * in.w;
    if (cv->direct) {
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
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const size_t rows = (size_t)(fg > cg ? fg : cg) * l->out_shape.h * l->out_shape.w;
    return scratch + (cv->image_floats - rows) * n;
}

/* forward_image for the n images x [n][c][h][w] -> out [n][filters][out_h][out_w]. */
static void forward_images(const Layer *l, const Conv *cv, const float *x, float *out, int n,
                           float *scratch, QuantParams xq)
{
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    const int ld = n * out_hw;
    const float *w = conv_weights(l, cv);
    float *cols = scratch, *y = chunk_rows(cv, l, scratch, n);
    for (int g = 0; g < cv->groups; g++) {
        unfold_images(l, cv, x, n, g, cols);
        if (l->quant) {
            unsigned char *work = cv->qwork + (size_t)omp_get_thread_num() * cv->qwork_bytes;
            qgemm_float(&l->quant->matrix, xq, ld, cols, ld, QGEMM_COLS, y, ld, QGEMM_COLS, work);
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
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * cv->size * cv->size;
    const int ld = n * out_hw, in_hw = in.h * in.w;
    const size_t in_size = shape_size(in), out_size = shape_size(l->out_shape);
    const float *w = conv_weights(l, cv);
    float *cols = scratch, *rows = chunk_rows(cv, l, scratch, n);
    for (int g = 0; g < cv->groups; g++) {
        float *dxg = dx + (size_t)g * cg * in_hw;
        if (cv->same) {
            const int kdim_delta = fg * cv->size * cv->size;
            for (int j = 0; j < n; j++)
                im2col(delta + j * out_size + (size_t)g * fg * out_hw, fg, in.h, in.w, cv->size, 1,
                       cv->size - 1 - cv->padding, cols + (size_t)j * out_hw, (size_t)ld);
            gemm(0, 0, cg, ld, kdim_delta, 1.0f, cv->w_flipped + (size_t)g * cg * kdim_delta,
                 kdim_delta, cols, ld, 0.0f, rows, ld);
            unpack_images(rows, n, cg, out_hw, dxg, in_size, 1);
            continue;
        }
        pack_images(delta + (size_t)g * fg * out_hw, out_size, n, fg, out_hw, rows);
        gemm(1, 0, kdim, ld, fg, 1.0f, w + (size_t)g * fg * kdim, kdim, rows, ld, 0.0f, cols, ld);
        if (cv->direct)
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
    int k = cv->images_per_gemm, share = (ctx->batch + nt - 1) / nt;
    k = k < share ? k : share;
    if (k > 1 && (size_t)nt * k * cv->image_floats > ctx->exec->workspace_floats)
        k = (int)(ctx->exec->workspace_floats / ((size_t)nt * cv->image_floats));
    return k > 1 ? k : 1;
}

/* Inside a parallel region: this thread's images [*b0, *b1) of the batch (a fixed contiguous
 * range) and its scratch for chunks of k images. */
static float *thread_chunk(const Conv *cv, const StepContext *ctx, int k, int *b0, int *b1)
{
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    *b0 = (int)((long)ctx->batch * t / n);
    *b1 = (int)((long)ctx->batch * (t + 1) / n);
    return ctx->exec->workspace + (size_t)t * k * cv->image_floats;
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

/* ---- depthwise: filter f reads input channel f / (filters/groups) only ---- */

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

static void depthwise_forward(const Layer *l, const Conv *cv, const float *x, float *out, int batch)
{
    const Shape in = l->in_shape;
    const int fg = cv->filters / cv->groups, size = cv->size, stride = cv->stride;
    const int pad = cv->padding, out_h = l->out_shape.h, out_w = l->out_shape.w;
    const float *w = conv_weights(l, cv);
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
static void depthwise_backward(const Layer *l, const Conv *cv, const float *x, float *dx, int batch)
{
    const Shape in = l->in_shape;
    const int fg = cv->filters / cv->groups, size = cv->size, stride = cv->stride;
    const int pad = cv->padding, out_h = l->out_shape.h, out_w = l->out_shape.w;
    const size_t in_hw = (size_t)in.h * in.w, out_hw = (size_t)out_h * out_w;
    const float *w = conv_weights(l, cv);
    float *dw = l->params[P_WEIGHTS].grad;

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

/* dnnl_conv_forward's and _backward's blocked for this pass (Layer.blocked). */
static unsigned dnnl_blocked(const Layer *l, const StepContext *ctx)
{
    const unsigned b = layer_blocked(l, ctx);
    return (b & 1 ? DNNL_CONV_X_BLOCKED : 0) | (b >> LAYER_OUT_BIT & 1 ? DNNL_CONV_Y_BLOCKED : 0);
}

static void conv_forward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    const int batch = ctx->batch;
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
    const GemmPrecision p = conv_precision(l);

    /* A folded layer's training forward (batch statistics) takes the reference's image by image
     * path below, whose scratch the layer keeps. oneDNN takes float32 x and w in either
     * precision (in bf16 its reorders round them). */
    if (cv->dnnl && !(cv->folded && ctx->train)) {
        const float *x = l->in[0];
        const int bn = cv->stage.batch_normalize && !cv->folded;
        const float *w = l->params[P_WEIGHTS].data;
        const float *b = bn ? NULL : l->params[cv->stage.first_param].data;
        if (cv->folded) {
            const Param *pw = &l->params[P_WEIGHTS];
            bias_norm_fold(&cv->stage, l, ctx, w, pw->count / (size_t)cv->filters, cv->w_fold,
                           cv->b_fold);
            w = cv->w_fold;
            b = cv->b_fold;
        }
        /* with batch norm, its input buffer when its fused pass keeps it (else l->out) */
        float *y = bn          ? bias_norm_product_output(&cv->stage, l, ctx)
                   : cv->fused ? l->out
                               : layer_activation_input(l);
        if (cv->sum_act) { /* folded: an inference forward */
            y = l->sum_into->out;
            const size_t n = (size_t)batch * out_size;
#pragma omp parallel for schedule(static) if (n > CONV_PARALLEL_MIN)
            for (size_t i = 0; i < n; i += CONV_COPY_BLOCK)
                memcpy(y + i, l->sum_into->in[1] + i,
                       (n - i < CONV_COPY_BLOCK ? n - i : CONV_COPY_BLOCK) * sizeof *y);
        }
        dnnl_conv_forward(&cv->dc, x, w, b, y, ctx->exec->workspace, dnnl_blocked(l, ctx));
        if (bn && bias_norm_forward_activated(&cv->stage, l, ctx, y))
            return;
        if (bn)
            bias_norm_forward(&cv->stage, l, ctx, l->out, layer_activation_input(l));
        if (!cv->fused && !cv->sum_act)
            layer_activate(l, batch);
        return;
    }
    gemm_operand(p, l->params[P_WEIGHTS].data, l->params[P_WEIGHTS].count, cv->w_bf16);
    const float *x = cv->direct || cv->depthwise
                         ? gemm_operand(p, l->in[0], (size_t)batch * in_size, cv->x_bf16)
                         : l->in[0];
    /* the batch norm's input buffer, when its fused pass keeps it (else l->out) */
    float *y = bias_norm_product_output(&cv->stage, l, ctx);
    if (conv_winograd(l, cv, ctx)) {
        winograd_conv(&cv->wino, winograd_forward_weights(l, cv), x, y, 0, ctx->exec->workspace);
    } else if (cv->depthwise) {
        depthwise_forward(l, cv, x, y, batch);
    } else {
        /* int8: a work buffer per thread, as many as resize took (the thread count may have
         * grown since); the whole mini-batch on one grid, as quantize_dynamic's input. */
        const int threads = image_threads(batch);
        const int nt = l->quant && threads > cv->qwork_threads ? cv->qwork_threads : threads;
        const QuantParams xq = l->quant
                                   ? layer_quant_input(l->quant, x, 1, (size_t)batch * in_size, 0)
                                   : (QuantParams){1.0f, 0};
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
                              ctx->exec->workspace + (nt > 1 ? b : 0) * cv->cols_floats, xq, 0);
        }
    }

    if (bias_norm_forward_activated(&cv->stage, l, ctx, y))
        return;
    bias_norm_forward(&cv->stage, l, ctx, l->out, layer_activation_input(l));
    layer_activate(l, batch);
}

/* The input the products of the backward take: the forward's bf16 copy of a direct or depthwise
 * convolution's, else the input (whose column matrices are rounded as they are made). */
static const float *conv_input(const Layer *l, const Conv *cv)
{
    return conv_precision(l) == GEMM_BF16 && (cv->direct || cv->depthwise) ? cv->x_bf16 : l->in[0];
}

/* Weight gradients of the whole batch. Image-parallel: thread t takes a fixed contiguous
 * range of images and sums them into its own copy (thread 0 straight into the gradient);
 * the copies are then added in thread order. */
static void weight_grads(Layer *l, Conv *cv, const StepContext *ctx, int nt)
{
    const int batch = ctx->batch;
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
    const size_t count = l->params[P_WEIGHTS].count;
    const float *x = conv_input(l, cv);
    float *dw = l->params[P_WEIGHTS].grad;
    int threads = nt < cv->n_partial + 1 ? nt : cv->n_partial + 1;
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
        float *acc = t ? cv->dw_partial + (size_t)(t - 1) * count : dw;
        if (t == 0)
            threads = n;
        if (t && b0 == b1)
            memset(acc, 0, count * sizeof *acc);
        for (int b = b0; b < b1; b += k)
            if (k > 1)
                weight_grads_images(l, cv, x + b * in_size, l->delta + b * out_size,
                                    b1 - b < k ? b1 - b : k, t == 0 || b > b0 ? 1.0f : 0.0f, acc,
                                    ctx->exec->workspace + (size_t)t * k * cv->image_floats);
            else
                weight_grads_image(l, cv, x + b * in_size, l->delta + b * out_size,
                                   t == 0 || b > b0 ? 1.0f : 0.0f, acc,
                                   ctx->exec->workspace + (size_t)b * cv->cols_floats, 0);
    }
#pragma omp parallel for simd schedule(static) if (parallel : count >= 16384)
    for (size_t i = 0; i < count; i++) {
        float sum = dw[i];
        for (int t = 1; t < threads; t++)
            sum += cv->dw_partial[(size_t)(t - 1) * count + i];
        dw[i] = sum;
    }
}

/* The backward on oneDNN, after the activation's and batch norm's (else the bias gradient comes
 * with the weights'): the weights' and the input's, which oneDNN adds into the gradients. */
static void dnnl_backward(Layer *l, Conv *cv, const StepContext *ctx)
{
    const int bn = cv->stage.batch_normalize;
    Param *w = &l->params[P_WEIGHTS], *b = &l->params[cv->stage.first_param];
    dnnl_conv_backward(&cv->dc, l->in[0], l->delta, w->data, l->in_delta[0], w->grad,
                       bn ? NULL : b->grad, ctx->exec->workspace, dnnl_blocked(l, ctx),
                       l->in_delta_fresh[0]);
}

static void conv_backward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    const int batch = ctx->batch;
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);

    if (!bias_norm_backward_activated(&cv->stage, l, ctx, l->delta)) {
        layer_activation_backward(l, batch);
        if (!cv->dnnl || cv->stage.batch_normalize)
            bias_norm_backward(&cv->stage, l, ctx, l->delta);
    }
    if (cv->dnnl) {
        dnnl_backward(l, cv, ctx);
        return;
    }
    /* The bias and batch norm took their gradients: only the products read delta from here. */
    gemm_operand(conv_precision(l), l->delta, (size_t)batch * out_size, l->delta);

    float *dx = l->in_delta[0];
    /* the products below add into it; Winograd's writes a fresh one instead */
    const int fresh = dx && l->in_delta_fresh[0];
    if (fresh && !conv_winograd(l, cv, ctx))
        memset(dx, 0, (size_t)batch * in_size * sizeof *dx);
    if (cv->depthwise) {
        depthwise_backward(l, cv, conv_input(l, cv), dx, batch);
        return;
    }
    const int nt = image_threads(batch);
    if (conv_winograd(l, cv, ctx) && cv->wino_grad)
        winograd_weight_grads(&cv->wino, l->in[0], l->delta, l->params[P_WEIGHTS].grad,
                              ctx->exec->workspace);
    else
        weight_grads(l, cv, ctx, nt);
    if (!dx)
        return;
    if (cv->same)
        flip_weights(l, cv);
    if (conv_winograd(l, cv, ctx)) {
        const WinogradPlan *p = &cv->wino;
        const WinogradPlan dp = winograd_plan(batch, p->k, p->c, p->h, p->w, p->threads);
        winograd_weights(cv->w_flipped, p->c, p->k, cv->wino_u);
        winograd_conv(&dp, cv->wino_u, l->delta, dx, !fresh, ctx->exec->workspace);
        return;
    }
    const int k = chunk_images(cv, ctx, nt);
    if (k > 1) {
        input_grads_chunks(l, cv, ctx, dx, nt, k);
        return;
    }
    const int split = split_threads(l, cv, batch);
    if (split > 1) {
#pragma omp parallel num_threads(split)
        for (int b = 0; b < batch; b++)
            input_grads_image(l, cv, l->delta + b * out_size, dx + b * in_size, ctx->exec->workspace, 1);
        return;
    }
#pragma omp parallel for schedule(static) if (nt > 1)
    for (int b = 0; b < batch; b++)
        input_grads_image(l, cv, l->delta + b * out_size, dx + b * in_size,
                          ctx->exec->workspace + (nt > 1 ? b : 0) * cv->cols_floats, 0);
}

/* Conv (bias as its B input, or no bias and BatchNormalization), then the activation. */
static int conv_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)e;
    const Conv *cv = l->priv;
    char x[ONNX_NAME_MAX], w[ONNX_NAME_MAX], b[ONNX_NAME_MAX], conv[ONNX_NAME_MAX];
    char pre[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    onnx_param(g, l, P_WEIGHTS, w);
    const char *out = onnx_output(g, l, 0);
    onnx_activation_input(pre, l->activation, out);
    const int64_t kernel[] = {cv->size, cv->size}, strides[] = {cv->stride, cv->stride};
    const int64_t pads[] = {cv->padding, cv->padding, cv->padding, cv->padding};
    const OnnxAttr attrs[] = {
        onnx_attr_ints("kernel_shape", kernel, 2),
        onnx_attr_ints("strides", strides, 2),
        onnx_attr_ints("pads", pads, 4),
        onnx_attr_int("group", cv->groups),
    };
    if (cv->stage.batch_normalize) {
        onnx_name(conv, l, "conv");
        onnx_node(g, "Conv", 2, (const char *[]){x, w}, conv, 4, attrs);
        bias_norm_onnx_batchnorm(&cv->stage, l, net, g, conv, pre);
    } else {
        bias_norm_onnx_biases(&cv->stage, l, g, b);
        onnx_node(g, "Conv", 3, (const char *[]){x, w, b}, pre, 4, attrs);
    }
    onnx_activation(g, l->activation, pre, out);
    return CDL_OK;
}

const LayerType convolutional_layer = {
    .name = "convolutional",
    .priv_size = sizeof(Conv),
    .parse = conv_parse,
    .init = conv_init,
    .export_onnx = conv_export_onnx,
    .quant_weights = conv_quant_weights,
    .quant_calibrated = 1,
    .gemm_bound = 1,
    .darknet_weights = DARKNET_CONVOLUTIONAL,
    .backward_ignores_output = 1,
    .writes_input_delta = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_convolutional_kernels = {
    .resize = conv_resize,
    .release = conv_release,
    .layout = conv_layout,
    .fuse_sum = conv_fuse_sum,
    .forward = conv_forward,
    .backward = conv_backward,
};

void conv_set_images_per_gemm(Layer *l, int images)
{
    if (l->type == &convolutional_layer)
        ((Conv *)l->priv)->images_asked = images > 0 ? images : 0;
}
