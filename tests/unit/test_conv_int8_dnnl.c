/* int8 convolutions on oneDNN's int8 kernels (backend/cpu/conv_dnnl_int8.c, [net] engine=dnnl)
 * against the own int8 kernels (engine=ref, conv_int8.c) on the convolution configurations of
 * the zoo cfgs: the 7x7 stride-2 stem, 3x3 bodies at stride 1 and 2, 1x1 bottlenecks and stride-2
 * projections, fashion's one-channel first layer, channel counts that are not whole blocks, k
 * not a multiple of 4; batch norm (folded) or a bias; relu, leaky, relu6 or linear; and a
 * residual block through [shortcut].
 *
 * The tolerance. Both engines take the same int8 weights, the same calibrated input grid
 * (s_x, zp), and the inputs are placed within 0.3 of a code (x = s_x (c - zp + u), |u| <= 0.3),
 * away from the rounding ties, so both give every input the same code and both int32 sums
 * sum_k (c_k - zp) q_jk are the same, exactly. Output j is a_j s_x s_w[j] sum + b_j (a_j, b_j
 * the batch norm's folded scale and bias, or 1 and the bias): the engines differ only in the
 * float rounding of that scaling and bias, a few roundings of values that stay below 2^20 units
 * of a_j s_x s_w[j] here (at most 1/16 unit each), whereas one input code wrong (padding, zero
 * point, the weights' zero-point sums) moves the sum by |q_jk| >= 1 unit. So each output must
 * agree within half a unit, |a_j| s_x s_w[j] / 2 (on Zen 4 they agree exactly). Built without
 * oneDNN (make DNNL=0), engine=dnnl runs the own kernels and the outputs are equal. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bn_math.h"
#include "backend/cpu/dnnl_conv.h"
#include "backend/cpu/net_quant.h"
#include "check.h"
#include "core/net.h"
#include "util/rng.h"

enum { BATCH = 2 };

typedef struct Int8Case {
    int c, h, w; /* input */
    int filters, size, stride, padding, bn;
    const char *activation;
    const char *from; /* the cfgs that use it */
} Int8Case;

static const Int8Case cases[] = {
    {3, 17, 17, 16, 7, 2, 3, 1, "relu", "resnet18/34/50: 7x7 stride-2 stem"},
    {16, 9, 9, 16, 3, 1, 1, 1, "relu", "resnet*: 3x3 body"},
    {16, 9, 8, 32, 3, 2, 1, 1, "relu", "resnet*: 3x3 stride 2"},
    {32, 7, 7, 16, 1, 1, 0, 1, "relu", "resnet50: 1x1 bottleneck"},
    {16, 9, 9, 32, 1, 2, 0, 1, "linear", "resnet*: 1x1 stride-2 projection"},
    {1, 12, 12, 32, 3, 1, 1, 1, "leaky", "fashion, resnet_fashion: first layer"},
    {32, 6, 6, 64, 3, 1, 1, 1, "leaky", "fashion: second layer"},
    {20, 7, 7, 20, 3, 1, 1, 0, "leaky", "digits: bias and leaky, 20 channels"},
    {5, 6, 6, 7, 1, 1, 0, 0, "linear", "1x1, k = 5"},
    {8, 6, 6, 8, 3, 1, 1, 1, "relu6", "mobilenetv2: relu6"},
};

/* The input grid every layer is calibrated on: [-1, 2]. */
static QuantParams grid(void)
{
    return quant_params_u8(-1.0f, 2.0f);
}

/* Batch norm's statistics and affine parameters, and biases, away from 0 and 1 (the same draws
 * for every net of a test). */
static void randomize_params(Net *net)
{
    Rng rng;
    rng_seed(&rng, 11, 0);
    for (int j = 0; j < net->n_layers; j++) {
        Layer *l = &net->layers[j];
        for (int p = 0; p < l->n_params; p++) {
            Param *q = &l->params[p];
            for (size_t i = 0; i < q->count && strcmp(q->name, "weights"); i++) {
                const float u = rng_uniform(&rng);
                q->data[i] = !strcmp(q->name, "rolling_variance") ? 0.3f + u
                             : !strcmp(q->name, "scales") ? (u < 0.1f ? -1.0f : 1.0f) * (0.5f + u)
                                                          : 0.6f * u - 0.3f;
            }
        }
    }
}

/* Builds the net of text, gives its convolutions int8 weights on the calibrated grid, resizes. */
static int build_int8(const char *text, Net *net)
{
    Error e = {0};
    int st = net_build_from_text(net, text, "int8.cfg", 0, 5, &e);
    unsigned char *which = st ? NULL : calloc((size_t)net->n_layers, 1);
    if (!st) {
        randomize_params(net);
        for (int i = 0; i < net->n_layers; i++)
            which[i] = net_layer_quantizable(&net->layers[i]) >= 0 &&
                       !strcmp(net->layers[i].type->name, "convolutional");
        st = net_quant_alloc(net, which, &e);
    }
    if (!st) {
        net_quant_from_float(net);
        net_quant_prepare(net);
        for (int i = 0; i < net->n_layers; i++)
            if (net->layers[i].quant) {
                net->layers[i].quant->static_input = 1;
                net->layers[i].quant->input = grid();
            }
        st = net_resize(net, BATCH, 0, &e);
    }
    free(which);
    if (st)
        fprintf(stderr, "FAIL build: %s\n", e.msg);
    CHECK(st == 0);
    return st;
}

/* Inputs within 0.3 of a code of the grid: codes 0..QUANT_CODE_MAX, or with beyond, -64 to
 * 2 QUANT_CODE_MAX + 64 (a third beyond the grid, which both engines clip to 0..QUANT_CODE_MAX;
 * oneDNN's u8 would hold codes to 255, whose pairs of products can saturate AVX2's vpmaddubsw). */
static void inputs_on_codes(Net *net, int beyond)
{
    const QuantParams q = grid();
    const int low = beyond ? -64 : 0,
              count = beyond ? 2 * QUANT_CODE_MAX + 129 : QUANT_CODE_MAX + 1;
    Rng rng;
    rng_seed(&rng, 23, 0);
    const size_t n = (size_t)BATCH * shape_size(net->in_shape);
    for (size_t i = 0; i < n; i++) {
        const int code = low + (int)(rng_uniform(&rng) * count) % count;
        net->input[i] = q.scale * ((float)(code - q.zero_point) + 0.6f * rng_uniform(&rng) - 0.3f);
    }
}

/* Inputs within 0.3 of a code of the grid, on the grid. */
static void on_grid_inputs(Net *net)
{
    inputs_on_codes(net, 0);
}

/* a_j of layer l (its batch norm's folded scale, or 1). */
static float channel_scale(const Net *net, Layer *l, int j)
{
    const Param *scales = layer_param(l, "scales");
    if (!scales)
        return 1.0f;
    const float one = 1.0f;
    float a, b;
    batchnorm_fold(&one, 1, scales->data + j, layer_param(l, "biases")->data + j,
                   layer_param(l, "rolling_mean")->data + j,
                   layer_param(l, "rolling_variance")->data + j, 1, net->hyper.bn_eps,
                   net->hyper.bn_darknet, &a, &b);
    return a;
}

/* engine=dnnl puts an int8 layer on oneDNN in a build with it; with AVX2 (VNNI's CPUs have it;
 * where this was measured) it must take every shape here, elsewhere oneDNN may lack int8
 * kernels with zero points for some (then the own kernels run it); without oneDNN it never does. */
static int on_dnnl_where_expected(const Layer *l)
{
    const int on = !strcmp(l->engine, "dnnl");
    return dnnl_conv_built() ? on || !qgemm_has_avx2() : !on;
}

/* net_forward, first checking that the net's input [BATCH][in_shape] was placed in its current
 * buffer (one left zero makes both engines agree whatever they compute). */
static void forward_placed(Net *net)
{
    check_varies("the net's input", net->input, (size_t)BATCH * shape_size(net->in_shape));
    net_forward(net);
}

/* Builds the int8 net of case k's convolution followed by the cfg text tail on the ref engine
 * (nets[0]) and on oneDNN (nets[1]); 1 when either failed to build, nothing then left built. */
static int build_case_pair(const Int8Case *k, const char *tail, Net nets[2])
{
    const char *engines[2] = {"ref", "dnnl"};
    for (int e = 0; e < 2; e++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "[net]\nbatch=%d\nwidth=%d\nheight=%d\nchannels=%d\nengine=%s\n"
                 "[convolutional]\nfilters=%d\nsize=%d\nstride=%d\npadding=%d\n"
                 "batch_normalize=%d\nactivation=%s\n%s",
                 BATCH, k->w, k->h, k->c, engines[e], k->filters, k->size, k->stride, k->padding,
                 k->bn, k->activation, tail);
        if (build_int8(text, &nets[e])) {
            if (e)
                net_free(&nets[0]);
            return 1;
        }
    }
    return 0;
}

/* Case k's layer on both engines, its inputs on the grid or, with beyond, a third beyond it. */
static void test_layer(const Int8Case *k, int beyond)
{
    Net nets[2];
    if (build_case_pair(k, "", nets))
        return;
    for (int e = 0; e < 2; e++) {
        inputs_on_codes(&nets[e], beyond);
        forward_placed(&nets[e]);
    }
    Layer *ref = &nets[0].layers[0], *dnnl = &nets[1].layers[0];
    CHECK(!strcmp(ref->engine, "ref"));
    CHECK(on_dnnl_where_expected(dnnl));
    const size_t plane = (size_t)ref->out_shape.h * ref->out_shape.w;
    const size_t n = (size_t)BATCH * shape_size(ref->out_shape);
    const float s_x = grid().scale;
    double worst_units = 0;
    int over = 0;
    for (size_t i = 0; i < n; i++) {
        const int j = (int)(i / plane % (size_t)k->filters);
        const double unit =
            fabs((double)channel_scale(&nets[0], ref, j)) * s_x * ref->quant->scales[j];
        const double units = fabs((double)dnnl->out[i] - ref->out[i]) / unit;
        over += !(units <= 0.5);
        worst_units = units > worst_units ? units : worst_units;
    }
    printf("%-45s engine %-4s (%s)%s: at most %.3g units of a sum apart\n", k->from, dnnl->engine,
           nets[1].layers[0].quant ? "int8" : "?", beyond ? ", beyond the grid" : "", worst_units);
    CHECK(over == 0);
    net_free(&nets[0]);
    net_free(&nets[1]);
}

/* Calibrates the grids of the convolutions after the first on on_grid_inputs (their inputs'
 * ranges), the first keeping grid(). */
static void calibrate_after_first(Net *net)
{
    Error e = {0};
    for (int i = 1; i < net->n_layers; i++) {
        LayerQuant *q = net->layers[i].quant;
        if (q) {
            q->static_input = q->seen = 0;
            q->observe = 1;
        }
    }
    CHECK(net_resize(net, BATCH, 0, &e) == 0);
    on_grid_inputs(net); /* each net_resize gives the net a new input buffer */
    forward_placed(net);
    for (int i = 1; i < net->n_layers; i++) {
        LayerQuant *q = net->layers[i].quant;
        if (q) {
            q->observe = 0;
            q->static_input = 1;
            q->input = quant_params_u8(q->seen_min, q->seen_max);
        }
    }
    CHECK(net_resize(net, BATCH, 0, &e) == 0);
    on_grid_inputs(net);
}

/* A residual block (a stem of `channels` channels on side x side, then body: convolutions whose
 * last, layer `last`, is linear with as many filters, and a [shortcut] to the stem with relu) on
 * both engines, the body calibrated; on oneDNN the last convolution hands its output to the
 * shortcut in float32 nhwc (Layer.nhwc_to) where the shortcut takes it (a build for AVX-512, or
 * AVX2 and FMA).
 * The body's inputs are the stem's outputs, not placed on their grid, so an input at a rounding
 * tie may take the next code on one engine: each output is held within one code of every input
 * of the last convolution, |a_j| s_x s_w[j] sum_k |q_jk| (s_x its calibrated input scale; a bound
 * of the block's plumbing, the layers' precision being test_layer's). */
static void test_residual_block(const char *name, const char *body, int last, int side,
                                int channels)
{
    char text[2][1024];
    const char *engines[2] = {"ref", "dnnl"};
    Net nets[2];
    for (int e = 0; e < 2; e++) {
        snprintf(text[e], sizeof text[e],
                 "[net]\nbatch=%d\nwidth=%d\nheight=%d\nchannels=3\nengine=%s\n"
                 "[convolutional]\nfilters=%d\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
                 "%s",
                 BATCH, side, side, engines[e], channels, body);
        if (build_int8(text[e], &nets[e])) {
            if (e)
                net_free(&nets[0]);
            return;
        }
        calibrate_after_first(&nets[e]);
        forward_placed(&nets[e]);
    }
    for (int i = 0; i <= last; i++)
        CHECK(on_dnnl_where_expected(&nets[1].layers[i]));
    Layer *sum = &nets[1].layers[last + 1];
    /* shortcut_takes_nhwc: only in a build for AVX-512, or AVX2 and FMA (not the sanitizer's) */
    const int nhwc = !strcmp(nets[1].layers[last].engine, "dnnl") && sum->kernels->takes_nhwc(sum);
    CHECK(nets[1].layers[last].nhwc_to == (nhwc ? sum : NULL));
    CHECK(nets[0].layers[last].nhwc_to == NULL);
    Layer *last_ref = &nets[0].layers[last];
    const LayerQuant *q = last_ref->quant;
    const size_t plane = (size_t)side * side, n = (size_t)BATCH * channels * plane;
    const float *yr = nets[0].layers[last + 1].out, *yd = sum->out;
    int over = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const int j = (int)(i / plane % (size_t)channels);
        double taps = 0;
        for (int t = 0; t < q->k; t++)
            taps += abs(q->values[(size_t)j * q->k + t]);
        const double bound = fabs((double)channel_scale(&nets[0], last_ref, j)) * q->input.scale *
                             q->scales[j] * (taps + 0.5);
        const double err = fabs((double)yd[i] - yr[i]);
        over += !(err <= bound);
        worst = err / bound > worst ? err / bound : worst;
    }
    printf("%-45s %s shortcut: at most %.3g of the bound apart\n", name, nhwc ? "nhwc" : "plain",
           worst);
    CHECK(over == 0);
    net_free(&nets[0]);
    net_free(&nets[1]);
}

/* An int8 chain (Layer.codes_to): each zoo configuration (cases[]) followed, directly or through
 * a [maxpool] (between), by a 3x3 convolution with batch norm and relu that alone reads it, the
 * last calibrated on its input (the reference net's grid given to both), against the own kernels'
 * per-layer path (the first's output in float32, pooled in float32, quantized again by the last).
 * Also checks that the chain is made wherever both convolutions run on oneDNN.
 *
 * The tolerance. The first layer's outputs y agree within half a unit u_j / 2 of their sums
 * (test_layer; u_j = |a_j| s_x s_w[j]), so the chain's code of y on the last's grid (s, zp),
 * round(y / s + zp), can differ from the reference's only where y / s + zp lies within
 * d = max_j u_j / (2 s) (plus 1e-4 for the float rounding of the scaling) of a rounding tie, and
 * then by one code; a maximum of codes is the code of the maximum (rounding keeps the order), so
 * a pooled code differs only where a code of its window does, by one. Where no input code in its
 * window differs, an output of the last layer has the same int32 sum on both paths and agrees
 * within half its unit; each differing code of y lies in at most `windows` pooling windows, each
 * read by at most 3 x 3 positions x 16 filters = 144 outputs. So at most 144 windows outputs per
 * such uncertain code lie beyond half a unit, and each within |a_j| s s_w[j] (sum_k |q_jk| + 1/2)
 * (one code at every tap). With narrow, the last layer's grid has half its calibrated scale, so
 * that the first's outputs beyond it make codes the chain clips at QUANT_CODE_MAX before rounding
 * (an eltwise clip; oneDNN's u8 would keep them up to 255), as the reference's quantize_code. */
static void test_chain(const Int8Case *k, const char *between, int windows, int narrow)
{
    char tail[256];
    snprintf(tail, sizeof tail,
             "%s[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n",
             between);
    Net nets[2];
    if (build_case_pair(k, tail, nets))
        return;
    for (int e = 0; e < 2; e++)
        calibrate_after_first(&nets[e]);
    Error err = {0};
    const int n_last = nets[0].n_layers - 1;
    if (narrow)
        nets[0].layers[n_last].quant->input.scale /= 2;
    nets[1].layers[n_last].quant->input = nets[0].layers[n_last].quant->input;
    for (int e = 0; e < 2; e++) {
        CHECK(net_resize(&nets[e], BATCH, 0, &err) == 0);
        on_grid_inputs(&nets[e]);
    }
    for (int e = 0; e < 2; e++)
        forward_placed(&nets[e]);
    Layer *first = &nets[1].layers[0], *last = &nets[0].layers[n_last];
    const int both =
        !strcmp(first->engine, "dnnl") && !strcmp(nets[1].layers[n_last].engine, "dnnl");
    CHECK(on_dnnl_where_expected(first) && on_dnnl_where_expected(&nets[1].layers[n_last]));
    CHECK(first->codes_to == (both ? &nets[1].layers[1] : NULL));
    CHECK(nets[1].layers[n_last - 1].codes_to == (both ? &nets[1].layers[n_last] : NULL));
    CHECK(nets[0].layers[0].codes_to == NULL);
    /* the uncertain codes of the second layer's input */
    const Layer *y_ref = &nets[0].layers[0];
    const QuantParams g = last->quant->input;
    double u_max = 0;
    for (int j = 0; j < k->filters; j++) {
        const double u = fabs((double)channel_scale(&nets[0], (Layer *)y_ref, j)) * grid().scale *
                         y_ref->quant->scales[j];
        u_max = u > u_max ? u : u_max;
    }
    const double d = u_max / (2 * g.scale) + 1e-4;
    size_t uncertain = 0;
    for (size_t i = 0; i < (size_t)BATCH * shape_size(y_ref->out_shape); i++) {
        const double v = (double)y_ref->out[i] / g.scale + g.zero_point;
        uncertain += fabs(v - floor(v) - 0.5) <= d;
    }
    const LayerQuant *q = last->quant;
    const size_t plane = (size_t)last->out_shape.h * last->out_shape.w;
    const size_t n = (size_t)BATCH * shape_size(last->out_shape);
    const float *yr = last->out, *yd = nets[1].layers[n_last].out;
    size_t over = 0, apart = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const int j = (int)(i / plane % 16);
        double taps = 0;
        for (int t = 0; t < q->k; t++)
            taps += abs(q->values[(size_t)j * q->k + t]);
        const double unit = fabs((double)channel_scale(&nets[0], last, j)) * g.scale * q->scales[j];
        const double e = fabs((double)yd[i] - yr[i]);
        over += !(e <= unit * (taps + 0.5));
        apart += !(e <= unit * 0.5);
        worst = e / (unit * (taps + 0.5)) > worst ? e / (unit * (taps + 0.5)) : worst;
    }
    printf("%-45s %s3x3%s: %s, %zu of %zu beyond half a unit (%zu uncertain codes), at most "
           "%.3g of the bound\n",
           k->from, *between ? "maxpool, " : "", narrow ? " on half its grid" : "",
           first->codes_to ? "chained" : "not chained", apart, n, uncertain, worst);
    CHECK(over == 0);
    CHECK(apart <= (size_t)144 * windows * uncertain);
    net_free(&nets[0]);
    net_free(&nets[1]);
}

/* An int8 convolution on oneDNN whose sole reader is a [maxpool] (Layer.nhwc_to) writes its
 * float32 output in nhwc, which the maxpool pools into NCHW: against the own kernels' NCHW path.
 * The convolution's outputs agree within half a unit u_j / 2 (test_layer) and a maximum moves by
 * no more than its inputs do, so each pooled output is within u_j / 2 of the reference's. */
static void test_nhwc_maxpool(const Int8Case *k, const char *maxpool)
{
    Net nets[2];
    if (build_case_pair(k, maxpool, nets))
        return;
    for (int e = 0; e < 2; e++) {
        on_grid_inputs(&nets[e]);
        forward_placed(&nets[e]);
    }
    Layer *conv = &nets[0].layers[0], *ref = &nets[0].layers[1], *pooled = &nets[1].layers[1];
    const int on = !strcmp(nets[1].layers[0].engine, "dnnl");
    CHECK(on_dnnl_where_expected(&nets[1].layers[0]));
    CHECK(nets[1].layers[0].nhwc_to == (on ? pooled : NULL) && pooled->codes_from == NULL);
    CHECK(conv->nhwc_to == NULL);
    const size_t plane = (size_t)ref->out_shape.h * ref->out_shape.w;
    const size_t n = (size_t)BATCH * shape_size(ref->out_shape);
    double worst = 0;
    int over = 0;
    for (size_t i = 0; i < n; i++) {
        const int j = (int)(i / plane % (size_t)k->filters);
        const double unit =
            fabs((double)channel_scale(&nets[0], conv, j)) * grid().scale * conv->quant->scales[j];
        const double units = fabs((double)pooled->out[i] - ref->out[i]) / unit;
        over += !(units <= 0.5);
        worst = units > worst ? units : worst;
    }
    printf("%-45s then maxpool: %s, at most %.3g units apart\n", k->from, on ? "nhwc" : "plain",
           worst);
    CHECK(over == 0);
    net_free(&nets[0]);
    net_free(&nets[1]);
}

/* A layer whose grid comes from each batch's range (not calibrated) stays on the own kernels. */
static void test_dynamic_grid_stays_own(void)
{
    Net net;
    Error e = {0};
    const char *text = "[net]\nbatch=2\nwidth=8\nheight=8\nchannels=16\nengine=dnnl\n"
                       "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=relu\n";
    if (net_build_from_text(&net, text, "d.cfg", 0, 5, &e)) {
        CHECK(0);
        return;
    }
    unsigned char which[1] = {1};
    CHECK(net_quant_alloc(&net, which, &e) == 0);
    net_quant_from_float(&net);
    net_quant_prepare(&net);
    CHECK(net_resize(&net, BATCH, 0, &e) == 0);
    CHECK(!strcmp(net.layers[0].engine, "ref"));
    net_free(&net);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        test_layer(&cases[i], 0);
        test_layer(&cases[i], 1);
    }
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        test_chain(&cases[i], "", 1, 0);
        test_chain(&cases[i], "", 1, 1);
    }
    /* resnet's stem and its 3x3 stride-2 maxpool (darknet's padding 2: windows from -1), where
     * an input lies in up to 2 x 2 windows; fashion's 2x2 stride-2 ones */
    test_chain(&cases[0], "[maxpool]\nsize=3\nstride=2\n", 4, 0);
    test_chain(&cases[5], "[maxpool]\nsize=2\nstride=2\n", 1, 0);
    test_chain(&cases[6], "[maxpool]\nsize=2\nstride=2\n", 1, 0);
    /* resnet's stem and its 3x3 stride-2 maxpool; fashion's first and second layers with its 2x2
     * stride-2 maxpool (here the net's output, no convolution after it) */
    test_nhwc_maxpool(&cases[0], "[maxpool]\nsize=3\nstride=2\n");
    test_nhwc_maxpool(&cases[5], "[maxpool]\nsize=2\nstride=2\n");
    test_nhwc_maxpool(&cases[6], "[maxpool]\nsize=2\nstride=2\n");
    /* resnet18's basic block; resnet50's bottleneck (1x1, 3x3, 1x1 to the block's width) on
     * resnet's last maps, 7x7 (a part of a tile of 16 positions: shortcut.c) */
    test_residual_block("basic block",
                        "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
                        "activation=relu\n[convolutional]\nfilters=16\nsize=3\npad=1\n"
                        "batch_normalize=1\nactivation=linear\n[shortcut]\nfrom=-3\n"
                        "activation=relu\n",
                        2, 8, 16);
    /* 20 channels: a last tile of 4 (AVX-512: 16 + 4; AVX2: 8 + 8 + 4) in the nhwc shortcut */
    test_residual_block("basic block, 20 channels",
                        "[convolutional]\nfilters=20\nsize=3\npad=1\nbatch_normalize=1\n"
                        "activation=relu\n[convolutional]\nfilters=20\nsize=3\npad=1\n"
                        "batch_normalize=1\nactivation=linear\n[shortcut]\nfrom=-3\n"
                        "activation=relu\n",
                        2, 7, 20);
    test_residual_block("bottleneck",
                        "[convolutional]\nfilters=16\nsize=1\nbatch_normalize=1\n"
                        "activation=relu\n[convolutional]\nfilters=16\nsize=3\npad=1\n"
                        "batch_normalize=1\nactivation=relu\n[convolutional]\nfilters=16\n"
                        "size=1\nbatch_normalize=1\nactivation=linear\n[shortcut]\nfrom=-4\n"
                        "activation=relu\n",
                        3, 7, 16);
    test_dynamic_grid_stays_own();
    return check_report("test_conv_int8_dnnl");
}
