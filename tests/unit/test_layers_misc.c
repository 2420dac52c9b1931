/* Activations and the parameter-free layers: maxpool, avgpool, dropout, shortcut, route,
 * softmax. Exact values derived by hand or from the defining formulas, error messages,
 * and finite-difference gradient checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/activation.h"
#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "gradcheck.h"

/* ---- helpers ---- */

/* Parses and builds text as "t.cfg" (training net); returns the status, message in e. */
static int build(const char *text, Net *net, Error *e)
{
    return net_build_from_text(net, text, "t.cfg", 1, 1, e);
}

/* Builds text and sizes it for batch with an input delta; 0 on success. */
static int build_sized(const char *text, int batch, Net *net)
{
    Error e = {0};
    int st = build(text, net, &e);
    if (st == CDL_OK && (st = net_resize(net, batch, 1, &e)) != CDL_OK)
        net_free(net);
    if (st)
        fprintf(stderr, "cannot build test net: %s\n", e.msg);
    CHECK(st == CDL_OK);
    return st;
}

static int same_shape(Shape s, int c, int h, int w)
{
    return s.c == c && s.h == h && s.w == w;
}

/* ---- activations ---- */

static double ref_sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static double ref_softplus(double x)
{
    return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

/* f(x) from the definitions, in double. */
static double ref_activation(ActivationKind a, double x)
{
    switch (a) {
    case CDL_ACT_LINEAR:
        return x;
    case CDL_ACT_RELU:
        return x > 0 ? x : 0;
    case CDL_ACT_LEAKY:
        return x > 0 ? x : 0.1 * x;
    case CDL_ACT_LOGISTIC:
        return ref_sigmoid(x);
    case CDL_ACT_TANH:
        return tanh(x);
    case CDL_ACT_ELU:
        return x > 0 ? x : exp(x) - 1;
    case CDL_ACT_RELU6:
        return x < 0 ? 0 : x > 6 ? 6 : x;
    case CDL_ACT_GELU: /* x 0.5 (1 + erf(x/sqrt2)), as erfc to stay exact for x << 0 */
        return x * 0.5 * erfc(-x / sqrt(2.0));
    case CDL_ACT_SWISH:
        return x * ref_sigmoid(x);
    case CDL_ACT_MISH:
        return x * tanh(ref_softplus(x));
    case CDL_ACT_HARDSWISH:
        return x * fmin(fmax(x + 3, 0), 6) / 6;
    case CDL_ACT_HARDSIGMOID:
        return fmin(fmax(x + 3, 0), 6) / 6;
    case CDL_ACT_COUNT:
        break;
    }
    return NAN;
}

/* f'(x) derived by hand from the definitions, in double. */
static double ref_derivative(ActivationKind a, double x)
{
    double s = ref_sigmoid(x), t = tanh(ref_softplus(x));
    switch (a) {
    case CDL_ACT_LINEAR:
        return 1;
    case CDL_ACT_RELU:
        return x > 0;
    case CDL_ACT_LEAKY:
        return x > 0 ? 1 : 0.1;
    case CDL_ACT_LOGISTIC:
        return s * (1 - s);
    case CDL_ACT_TANH:
        return 1 - tanh(x) * tanh(x);
    case CDL_ACT_ELU:
        return x > 0 ? 1 : exp(x);
    case CDL_ACT_RELU6:
        return x > 0 && x < 6;
    case CDL_ACT_GELU:
        return 0.5 * erfc(-x / sqrt(2.0)) + x * exp(-x * x / 2) / sqrt(2 * M_PI);
    case CDL_ACT_SWISH:
        return s + x * s * (1 - s);
    case CDL_ACT_MISH:
        return t + x * (1 - t * t) * s;
    case CDL_ACT_HARDSWISH: /* at the kinks torch's choice: the middle piece on [-3, 3] */
        return x < -3 ? 0 : x <= 3 ? x / 3 + 0.5 : 1;
    case CDL_ACT_HARDSIGMOID: /* 0 at the kinks, as torch */
        return x > -3 && x < 3 ? 1.0 / 6 : 0;
    case CDL_ACT_COUNT:
        break;
    }
    return NAN;
}

static float act1(ActivationKind a, float x)
{
    float y;
    activation_forward(&x, &y, 1, a);
    return y;
}

static float act1_derivative(ActivationKind a, float x)
{
    float y = act1(a, x), d = 1.0f;
    activation_backward(&x, &y, &d, 1, a);
    return d;
}

static void test_activation_names(void)
{
    ActivationKind a;
    CHECK(activation_from_name("leaky", &a) == 0 && a == CDL_ACT_LEAKY);
    CHECK(activation_from_name("sigmoid", &a) == 0 && a == CDL_ACT_LOGISTIC);
    CHECK(activation_from_name("silu", &a) == 0 && a == CDL_ACT_SWISH);
    CHECK(activation_from_name("mish", &a) == 0 && a == CDL_ACT_MISH);
    CHECK(activation_from_name("softsign", &a) == -1);
    for (int k = 0; k < CDL_ACT_COUNT; k++) {
        CHECK(activation_from_name(activation_name((ActivationKind)k), &a) == 0 &&
              a == (ActivationKind)k);
        CHECK_CONTAINS(activation_valid_names(), activation_name((ActivationKind)k));
    }
}

/* Values match the formulas to float precision, and the backward derivative matches
 * both the hand-derived one and a central difference of the forward (h = 1e-2: the
 * O(h^2) truncation is < 2e-5 for these functions, float round-off ~2e-5). */
static void test_activation_values_and_derivatives(void)
{
    const float points[] = {-7.5f, -3.0f, -0.5f, 0.0f, 0.3f, 2.5f, 3.0f, 7.0f};
    for (int k = 0; k < CDL_ACT_COUNT; k++) {
        ActivationKind a = (ActivationKind)k;
        for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
            float x = points[i];
            double want = ref_activation(a, x);
            CHECK_NEAR(act1(a, x), want, 1e-6 * fmax(1.0, fabs(want)));
            int kink = (x == 0.0f && (a == CDL_ACT_RELU || a == CDL_ACT_LEAKY ||
                                      a == CDL_ACT_RELU6 || a == CDL_ACT_ELU)) ||
                       (fabsf(x) == 3.0f && (a == CDL_ACT_HARDSWISH || a == CDL_ACT_HARDSIGMOID));
            double slope = ref_derivative(a, x);
            /* f' jumps at a kink: the hand-derived one there is the convention torch takes */
            CHECK_NEAR(act1_derivative(a, x), slope, 1e-6 * fmax(1.0, fabs(slope)));
            if (kink)
                continue; /* a jump in f' (or in f'', elu's at 0): O(h) difference error */
            float h = 1e-2f;
            double fd = ((double)act1(a, x + h) - act1(a, x - h)) / (2.0 * h);
            CHECK_NEAR(act1_derivative(a, x), fd, 2e-4);
        }
    }
}

/* Far tails: no overflow to inf or NaN, and the right limits. */
static void test_activation_extremes(void)
{
    CHECK(act1(CDL_ACT_LOGISTIC, 100.0f) == 1.0f);
    CHECK(act1(CDL_ACT_LOGISTIC, -100.0f) >= 0.0f && act1(CDL_ACT_LOGISTIC, -100.0f) < 1e-30f);
    CHECK(act1(CDL_ACT_SWISH, 100.0f) == 100.0f);
    CHECK(fabsf(act1(CDL_ACT_SWISH, -100.0f)) < 1e-30f);
    CHECK(act1(CDL_ACT_MISH, 100.0f) == 100.0f);
    CHECK(act1(CDL_ACT_MISH, 1000.0f) == 1000.0f);
    CHECK(fabsf(act1(CDL_ACT_MISH, -100.0f)) < 1e-30f);
    CHECK(act1(CDL_ACT_TANH, 50.0f) == 1.0f);
    CHECK(act1(CDL_ACT_ELU, -100.0f) == -1.0f);
    CHECK(act1(CDL_ACT_GELU, 50.0f) == 50.0f);
    /* GELU(-8) = -8 Phi(-8) = -5.0e-15 keeps its relative precision (to 1e-5: the
     * function's own condition number there is x^2 = 64 times float's 6e-8). */
    CHECK_NEAR(act1(CDL_ACT_GELU, -8.0f) / ref_activation(CDL_ACT_GELU, -8.0), 1.0, 1e-5);
    /* A diverged net feeds NaN: it comes out NaN (no undefined NaN-to-int conversion). */
    CHECK(isnan(act1(CDL_ACT_LOGISTIC, NAN)) && isnan(act1(CDL_ACT_MISH, NAN)));
    CHECK(isnan(act1(CDL_ACT_SWISH, NAN)));
    /* Every kind, alone and in a vectorised array: NaN in, NaN out, as torch's (relu and relu6
     * too, which a diverged net would otherwise turn into zeros that hide it); relu and relu6
     * keep -0 as torch.relu does. */
    for (int k = 0; k < CDL_ACT_COUNT; k++) {
        float xs[37], ys[37];
        int nan_out = isnan(act1((ActivationKind)k, NAN));
        for (int i = 0; i < 37; i++)
            xs[i] = NAN;
        activation_forward(xs, ys, 37, (ActivationKind)k);
        for (int i = 0; i < 37; i++)
            nan_out &= isnan(ys[i]);
        CHECK(nan_out);
    }
    CHECK(signbit(act1(CDL_ACT_RELU, -0.0f)) && signbit(act1(CDL_ACT_RELU6, -0.0f)));
    CHECK(act1(CDL_ACT_RELU6, 7.0f) == 6.0f && act1(CDL_ACT_RELU, -2.0f) == 0.0f);
    for (int k = 0; k < CDL_ACT_COUNT; k++) {
        const float xs[] = {-1000.0f, -90.0f, 90.0f, 1000.0f};
        for (int i = 0; i < 4; i++) {
            float d = act1_derivative((ActivationKind)k, xs[i]);
            CHECK(isfinite(act1((ActivationKind)k, xs[i])) && isfinite(d));
        }
    }
}

/* The threaded path (large n) computes exactly what the serial one does, in place too. */
static void test_activation_large_arrays_match_elementwise(void)
{
    size_t n = 40009;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *d = malloc(n * sizeof *d);
    Rng r;
    rng_seed(&r, 5, 5);
    for (int k = 0; k < CDL_ACT_COUNT; k++) {
        ActivationKind a = (ActivationKind)k;
        for (size_t i = 0; i < n; i++)
            x[i] = 4.0f * rng_normal(&r);
        activation_forward(x, y, n, a);
        for (size_t i = 0; i < n; i++)
            d[i] = 1.0f;
        activation_backward(x, y, d, n, a);
        int bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += y[i] != act1(a, x[i]) || d[i] != act1_derivative(a, x[i]);
        CHECK(bad == 0);
        activation_forward(x, x, n, a);
        bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += x[i] != y[i];
        CHECK(bad == 0);
    }
    free(x);
    free(y);
    free(d);
}

/* ---- maxpool ---- */

/* darknet's default padding size-1 = 1 with offset 0: windows run off the right and
 * bottom edges, where missing values count as -infinity (the corner is -4, not 0). */
static void test_maxpool_default_padding_edges(void)
{
    Net net;
    if (build_sized("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=2\nstride=1\n", 1, &net))
        return;
    const float in[16] = {1, 5, 2, 0, 3, -1, 4, 6, -2, 8, 7, 1, 0, 9, -3, -4};
    const float want[16] = {5, 5, 6, 6, 8, 8, 7, 6, 9, 9, 7, 1, 9, 9, -3, -4};
    CHECK(same_shape(net.layers[0].out_shape, 1, 4, 4));
    memcpy(net.input, in, sizeof in);
    net_forward(&net);
    for (int i = 0; i < 16; i++)
        CHECK_NEAR(net.layers[0].out[i], want[i], 0);
    /* Backward sends each output's delta to its window's maximum. */
    for (int i = 0; i < 16; i++)
        net.layers[0].delta[i] = 1.0f;
    net_backward(&net);
    const float wins[16] = {0, 2, 0, 0, 0, 0, 0, 3, 0, 2, 2, 1, 0, 4, 1, 1};
    for (int i = 0; i < 16; i++)
        CHECK_NEAR(net.input_delta[i], wins[i], 0);
    net_free(&net);
}

/* size 3 stride 2 on 5x5: padding 2, offset 1, out (5+2-3)/2+1 = 3; window (i,j) covers
 * rows 2i-1..2i+1. With in[y][x] = 10y + x the maximum is the window's bottom-right
 * in-bounds corner. */
static void test_maxpool_size3_stride2(void)
{
    Net net;
    if (build_sized("[net]\nwidth=5\nheight=5\nchannels=2\n[maxpool]\nsize=3\nstride=2\n", 2, &net))
        return;
    CHECK(same_shape(net.layers[0].out_shape, 2, 3, 3));
    for (int p = 0; p < 4; p++)
        for (int y = 0; y < 5; y++)
            for (int x = 0; x < 5; x++)
                net.input[p * 25 + y * 5 + x] = (float)(10 * y + x + 100 * p);
    net_forward(&net);
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                int y = 2 * i + 1 < 4 ? 2 * i + 1 : 4, x = 2 * j + 1 < 4 ? 2 * j + 1 : 4;
                CHECK_NEAR(net.layers[0].out[p * 9 + i * 3 + j], 10 * y + x + 100 * p, 0);
            }
    net_free(&net);
}

/* size x size (2 or 3) stride 2 (padding 0, darknet's default size - 1, or more), whose inside
 * windows take their own vectorised loop, against a direct window scan on even and odd maps,
 * with ties (small integer values; the first maximum in row order wins) and with nans every 7th
 * value NaN (a NaN wins, the last one in row order): the outputs and where the backward sends
 * each delta, exactly. */
static void check_maxpool_stride2(int size, int h, int w, int padding, int nans)
{
    char cfg[160];
    snprintf(cfg, sizeof cfg,
             "[net]\nwidth=%d\nheight=%d\nchannels=3\n[maxpool]\nsize=%d\nstride=2\npadding=%d\n",
             w, h, size, padding);
    Net net;
    if (build_sized(cfg, 2, &net))
        return;
    const int oh = (h + padding - size) / 2 + 1, ow = (w + padding - size) / 2 + 1, planes = 6;
    const int offset = padding / 2;
    CHECK(same_shape(net.layers[0].out_shape, 3, oh, ow));
    Rng r;
    rng_seed(&r, 9, (uint64_t)(size * 10000 + h * 100 + w));
    for (int i = 0; i < planes * h * w; i++)
        net.input[i] = nans && i % 7 == 3 ? NAN : (float)(int)(4.0f * rng_normal(&r));
    net_forward(&net);
    float *want_dx = calloc((size_t)planes * h * w, sizeof *want_dx);
    int bad = 0;
    for (int p = 0; p < planes; p++)
        for (int i = 0; i < oh; i++)
            for (int j = 0; j < ow; j++) {
                float best = -INFINITY;
                int at = -1;
                for (int y = 2 * i - offset; y < 2 * i - offset + size && y < h; y++)
                    for (int x = 2 * j - offset; x < 2 * j - offset + size && x < w; x++) {
                        if (y < 0 || x < 0)
                            continue;
                        const float v = net.input[(p * h + y) * w + x];
                        if (at < 0 || v > best || isnan(v)) {
                            best = v;
                            at = y * w + x;
                        }
                    }
                const int o = (p * oh + i) * ow + j;
                bad += isnan(best) ? !isnan(net.layers[0].out[o]) : net.layers[0].out[o] != best;
                net.layers[0].delta[o] = (float)(o + 1);
                want_dx[p * h * w + at] += (float)(o + 1);
            }
    CHECK(bad == 0);
    net_backward(&net);
    bad = 0;
    for (int i = 0; i < planes * h * w; i++)
        bad += net.input_delta[i] != want_dx[i];
    CHECK(bad == 0);
    free(want_dx);
    net_free(&net);
}

static void test_maxpool_stride2(void)
{
    check_maxpool_stride2(2, 28, 28, 1, 0); /* fashion's */
    check_maxpool_stride2(2, 7, 9, 1, 0);   /* a last row and column that cross the border */
    check_maxpool_stride2(2, 6, 8, 0, 0);
    check_maxpool_stride2(2, 5, 33, 0, 0);  /* odd maps without padding: last row, column dropped */
    check_maxpool_stride2(2, 14, 14, 1, 0); /* fashion's second: 7 columns, under a vector */
    check_maxpool_stride2(2, 32, 32, 1, 0); /* cifar_small's first: 16 columns, two vectors */
    check_maxpool_stride2(2, 4, 42, 1, 0);  /* 21 columns: two vectors and a part */
    /* 3x3: the first row and column of windows, and an odd map's last, cross the border */
    check_maxpool_stride2(3, 112, 112, 2, 0); /* resnet's stem (56 x 56 out) */
    check_maxpool_stride2(3, 13, 35, 2, 0);   /* 17 columns inside: two vectors and a part */
    check_maxpool_stride2(3, 9, 10, 0, 0);    /* no padding: every window inside */
    check_maxpool_stride2(3, 3, 3, 2, 0);     /* one window inside */
    check_maxpool_stride2(3, 2, 2, 2, 0);     /* none inside */
    check_maxpool_stride2(3, 17, 19, 4, 0);   /* offset 2 */
    /* a window with a NaN gives NaN, its delta to the last NaN, as torch's max_pool2d */
    check_maxpool_stride2(2, 32, 32, 1, 1);
    check_maxpool_stride2(2, 7, 9, 1, 1);
    check_maxpool_stride2(3, 30, 31, 2, 1);
}

/* The input gradient of a net whose layers' backward writes their input's delta whole
 * (LayerType.writes_input_delta) where the net leaves it unzeroed (Layer.in_delta_fresh): the
 * same bits over old NaNs in every delta as over zeros. fresh lists the layers that must find
 * their input's delta fresh, ending in -1. */
static void check_fresh_input_deltas(const char *cfg, const int *fresh)
{
    Net net;
    if (build_sized(cfg, 2, &net))
        return;
    const size_t n_in = (size_t)2 * shape_size(net.in_shape);
    const int last = net.n_layers - 1;
    const size_t n_last = (size_t)2 * shape_size(net.layers[last].out_shape);
    Rng r;
    rng_seed(&r, 4, 1);
    for (size_t i = 0; i < n_in; i++)
        net.input[i] = rng_normal(&r);
    float *dx[2];
    for (int run = 0; run < 2; run++) {
        net_forward(&net);
        for (int i = 0; i < last; i++) {
            const size_t n = (size_t)2 * shape_size(net.layers[i].out_shape);
            for (size_t j = 0; j < n; j++)
                net.layers[i].delta[j] = run ? NAN : 0.0f;
        }
        for (size_t i = 0; i < n_last; i++)
            net.layers[last].delta[i] = (float)(i % 5) - 2.0f;
        net_backward(&net);
        for (const int *f = fresh; *f >= 0; f++)
            CHECK(net.layers[*f].in_delta_fresh[0]);
        dx[run] = malloc(n_in * sizeof *dx[run]);
        memcpy(dx[run], net.input_delta, n_in * sizeof *dx[run]);
    }
    int bad = 0, nonzero = 0;
    for (size_t i = 0; i < n_in; i++) {
        bad += memcmp(&dx[0][i], &dx[1][i], sizeof dx[0][i]) != 0;
        nonzero += dx[0][i] != 0.0f;
    }
    CHECK(bad == 0);
    CHECK(nonzero > 0);
    free(dx[0]);
    free(dx[1]);
    net_free(&net);
}

/* maxpool, connected; a sequence stack: [linear] (OpenBLAS-free packed path, bf16) and
 * [attention] (per sample and staged=1) after a layer only they read. */
static void test_fresh_input_delta_ignores_old_contents(void)
{
    check_fresh_input_deltas("[net]\nwidth=6\nheight=6\nchannels=2\n[maxpool]\nsize=1\n[maxpool]\n"
                             "size=2\nstride=2\n[connected]\noutput=3\n",
                             (const int[]){1, 2, -1});
    static const char *const seq_stacks[] = {
        "[linear]\noutput=8\nactivation=gelu\n[linear]\noutput=6\n[attention]\nheads=2\n"
        "[linear]\noutput=6\n",
        "precision=bf16\n[linear]\noutput=8\n[linear]\noutput=6\n[attention]\nheads=3\n"
        "staged=1\n[linear]\noutput=6\n",
    };
    for (int i = 0; i < 2; i++) {
        char cfg[512];
        snprintf(cfg, sizeof cfg, "[net]\nseq=5\ninputs=4\n%s", seq_stacks[i]);
        check_fresh_input_deltas(cfg, (const int[]){1, 2, 3, -1});
    }
}

/* [shortcut]'s backward over fresh input deltas (Layer.in_delta_fresh, both inputs) holding NaNs
 * gives the bits of its backward adding into zeros: inputs of one shape (one pass), one layer as
 * both inputs (written once, added to once), and a larger input it samples (zeroed first). */
static void test_shortcut_fresh_input_deltas(void)
{
    Net net;
    if (build_sized("[net]\nwidth=6\nheight=6\nchannels=2\n[maxpool]\nsize=1\n"
                    "[maxpool]\nsize=1\n[shortcut]\nfrom=-2\nactivation=relu\n"
                    "[shortcut]\nfrom=-1\n[maxpool]\nsize=2\nstride=2\n[shortcut]\nfrom=-5\n"
                    "[connected]\noutput=3\n",
                    2, &net))
        return;
    Rng r;
    rng_seed(&r, 5, 1);
    for (size_t i = 0; i < (size_t)2 * shape_size(net.in_shape); i++)
        net.input[i] = rng_normal(&r);
    net.train = 1;
    net_forward(&net);
    const StepContext ctx = {.batch = 2, .train = 1};
    const int shortcuts[] = {2, 3, 5};
    for (int s = 0; s < 3; s++) {
        Layer *l = &net.layers[shortcuts[s]];
        const size_t n_out = (size_t)2 * shape_size(l->out_shape);
        size_t n_in[2];
        float *seed = malloc(n_out * sizeof *seed), *got[2][2];
        for (size_t i = 0; i < n_out; i++)
            seed[i] = (float)(i % 7) - 3.0f;
        for (int run = 0; run < 2; run++) {
            for (int k = 0; k < 2; k++) {
                n_in[k] = (size_t)2 * shape_size(net.layers[l->inputs[k]].out_shape);
                for (size_t i = 0; i < n_in[k]; i++)
                    l->in_delta[k][i] = run ? NAN : 0.0f;
                l->in_delta_fresh[k] = (unsigned char)run;
            }
            memcpy(l->delta, seed, n_out * sizeof *seed);
            l->kernels->backward(l, &ctx);
            for (int k = 0; k < 2; k++) {
                got[run][k] = malloc(n_in[k] * sizeof *got[run][k]);
                memcpy(got[run][k], l->in_delta[k], n_in[k] * sizeof *got[run][k]);
            }
        }
        for (int k = 0; k < 2; k++) {
            CHECK(!memcmp(got[0][k], got[1][k], n_in[k] * sizeof *got[0][k]));
            free(got[0][k]);
            free(got[1][k]);
        }
        free(seed);
    }
    net_free(&net);
}

static void test_maxpool_shapes_and_errors(void)
{
    Net net;
    /* size defaults to stride: size 2 stride 2 padding 1 on 7 -> (7+1-2)/2+1 = 4 */
    if (!build_sized("[net]\nwidth=7\nheight=6\nchannels=3\n[maxpool]\nstride=2\n", 1, &net)) {
        CHECK(same_shape(net.layers[0].out_shape, 3, 3, 4));
        net_free(&net);
    }
    if (!build_sized("[net]\nwidth=6\nheight=6\nchannels=1\n[maxpool]\nsize=3\nstride=3\n"
                     "padding=0\n",
                     1, &net)) {
        CHECK(same_shape(net.layers[0].out_shape, 1, 2, 2));
        net_free(&net);
    }
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=0\n",
                     "t.cfg:6: bad value '0' for key 'size' in [maxpool]: must be >= 1");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=2\nstride=0\n",
                     "t.cfg:7: bad value '0' for key 'stride' in [maxpool]: must be >= 1");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=2\npadding=-1\n",
                     "t.cfg:7: bad value '-1' for key 'padding' in [maxpool]");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=2\npadding=3\n",
                     "t.cfg:7: bad value '3' for key 'padding' in [maxpool]");
    expect_cfg_error("[net]\nwidth=2\nheight=2\nchannels=1\n[maxpool]\nsize=5\npadding=0\n",
                     "t.cfg:5: layer 0 [maxpool]: empty output");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=2\nfilters=3\n",
                     "t.cfg:7: unknown key 'filters' in [maxpool] (valid keys: stride, size, "
                     "padding, freeze, stopbackward, checkpoint)");
}

/* ---- avgpool ---- */

static void test_avgpool_is_global_mean(void)
{
    Net net;
    if (build_sized("[net]\nwidth=3\nheight=2\nchannels=2\n[avgpool]\n", 1, &net))
        return;
    CHECK(same_shape(net.layers[0].out_shape, 2, 1, 1));
    const float in[12] = {1, 2, 3, 4, 5, 6, -1, -1, -1, -1, -1, 11};
    memcpy(net.input, in, sizeof in);
    net_forward(&net);
    CHECK_NEAR(net.layers[0].out[0], 3.5, 1e-6);
    CHECK_NEAR(net.layers[0].out[1], 1.0, 1e-6);
    net.layers[0].delta[0] = 6.0f;
    net.layers[0].delta[1] = -3.0f;
    net_backward(&net);
    CHECK_NEAR(net.input_delta[0], 1.0, 1e-6);
    CHECK_NEAR(net.input_delta[11], -0.5, 1e-6);
    net_free(&net);
}

/* ---- dropout ---- */

static const char *dropout_cfg =
    "[net]\nwidth=100\nheight=100\nchannels=10\n[dropout]\nprobability=0.3\n";

static void test_dropout_eval_is_identity(void)
{
    Net net;
    if (build_sized(dropout_cfg, 2, &net))
        return;
    size_t n = 2 * 100000;
    for (size_t i = 0; i < n; i++)
        net.input[i] = (float)i * 0.25f - 7.0f;
    net.train = 0;
    net_forward(&net);
    CHECK(memcmp(net.layers[0].out, net.input, n * sizeof *net.input) == 0);
    net_free(&net);
}

/* P(keep) = 0.7: over 1e5 values the kept fraction has sd 0.0015, so 0.7 +- 0.008 is
 * over 5 sd; kept values are scaled by exactly 1/(1-p). */
static void test_dropout_training_mask(void)
{
    Net net;
    if (build_sized(dropout_cfg, 1, &net))
        return;
    size_t n = 100000;
    for (size_t i = 0; i < n; i++)
        net.input[i] = 1.0f;
    net.train = 1;
    net.draw_id = 3;
    net_forward(&net);
    float scale = 1.0f / (1.0f - 0.3f);
    size_t kept = 0, other = 0;
    for (size_t i = 0; i < n; i++) {
        float v = net.layers[0].out[i];
        kept += v == scale;
        other += v != scale && v != 0.0f;
    }
    CHECK(other == 0);
    CHECK_NEAR((double)kept / (double)n, 0.7, 0.008);
    /* Backward passes the delta through the same mask. */
    for (size_t i = 0; i < n; i++)
        net.layers[0].delta[i] = 2.0f;
    net_backward(&net);
    size_t agree = 0;
    for (size_t i = 0; i < n; i++)
        agree += net.input_delta[i] == 2.0f * net.layers[0].out[i];
    CHECK(agree == n);
    /* The same pass id redraws the same mask; another draws a different one. */
    float *first = malloc(n * sizeof *first);
    memcpy(first, net.layers[0].out, n * sizeof *first);
    net_forward(&net);
    CHECK(memcmp(first, net.layers[0].out, n * sizeof *first) == 0);
    net.draw_id = 4;
    net_forward(&net);
    CHECK(memcmp(first, net.layers[0].out, n * sizeof *first) != 0);
    free(first);
    net_free(&net);
}

static void test_dropout_errors(void)
{
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[dropout]\nprobability=1\n",
                     "t.cfg:6: bad value '1' for key 'probability' in [dropout]: expected a number "
                     "in [0, 1)");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[dropout]\nprobability=-0.1\n",
                     "t.cfg:6: bad value '-0.1' for key 'probability'");
}

/* ---- shortcut ---- */

/* 0: identity 1x4x4, 1: 1x2x2, 2: copy of 0 (1x4x4), then the case under test. */
#define SHORTCUT_BASE                                                                              \
    "[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=1\n[maxpool]\nsize=2\nstride=2\n"       \
    "[route]\nlayers=0\n"

static void test_shortcut_same_shape_alpha_beta(void)
{
    Net net;
    if (build_sized("[net]\nwidth=2\nheight=2\nchannels=1\n[maxpool]\nsize=1\n[maxpool]\n"
                    "size=2\nstride=1\n[shortcut]\nfrom=0\nalpha=0.5\nbeta=2\n",
                    1, &net))
        return;
    const float in[4] = {1, -2, 3, 5};
    /* layer 1 (size 2, stride 1, padding 1): {5, 5, 5, 5}; out = 0.5*layer1 + 2*in */
    memcpy(net.input, in, sizeof in);
    net_forward(&net);
    CHECK(same_shape(net.layers[2].out_shape, 1, 2, 2));
    CHECK(net.layers[2].n_inputs == 2 && net.layers[2].inputs[0] == 1 &&
          net.layers[2].inputs[1] == 0);
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(net.layers[2].out[i], 2.5 + 2.0 * in[i], 1e-6);
    net_free(&net);
}

/* from is 4x4, output 2x2: stride 2, out[j][i] = prev[j][i] + from[2j][2i]. */
static void test_shortcut_from_larger_is_strided(void)
{
    Net net;
    if (build_sized("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=1\n[maxpool]\n"
                    "size=2\nstride=2\n[shortcut]\nfrom=-2\n",
                    1, &net))
        return;
    for (int i = 0; i < 16; i++)
        net.input[i] = (float)i;
    net_forward(&net);
    CHECK(same_shape(net.layers[2].out_shape, 1, 2, 2));
    /* maxpool 2x2 of in[y][x] = 4y + x: {5, 7, 13, 15}; from[2j][2i]: {0, 2, 8, 10} */
    const float want[4] = {5 + 0, 7 + 2, 13 + 8, 15 + 10};
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(net.layers[2].out[i], want[i], 0);
    net_free(&net);
}

/* from is 2x2, output 4x4: sample 2, out[2j][2i] = prev + from[j][i], others prev. */
static void test_shortcut_from_smaller_is_sampled(void)
{
    Net net;
    if (build_sized(SHORTCUT_BASE "[shortcut]\nfrom=1\n", 1, &net))
        return;
    for (int i = 0; i < 16; i++)
        net.input[i] = (float)i;
    net_forward(&net);
    CHECK(same_shape(net.layers[3].out_shape, 1, 4, 4));
    const float from[4] = {5, 7, 13, 15};
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            float want = (float)(4 * y + x);
            if (y % 2 == 0 && x % 2 == 0)
                want += from[(y / 2) * 2 + x / 2];
            CHECK_NEAR(net.layers[3].out[y * 4 + x], want, 0);
        }
    net_free(&net);
}

/* Only the first min(c1, c2) channels are summed. */
static void test_shortcut_channel_mismatch(void)
{
    Net net;
    /* 0: 2x2x2 identity, 1: 4x2x2 (0 twice), 2: out 4 channels += 2 channels of 0 */
    if (build_sized("[net]\nwidth=2\nheight=2\nchannels=2\n[maxpool]\nsize=1\n[route]\n"
                    "layers=0,0\n[shortcut]\nfrom=0\n",
                    1, &net))
        return;
    for (int i = 0; i < 8; i++)
        net.input[i] = (float)(i + 1);
    net_forward(&net);
    CHECK(same_shape(net.layers[1].out_shape, 4, 2, 2));
    CHECK(same_shape(net.layers[2].out_shape, 4, 2, 2));
    for (int i = 0; i < 16; i++) {
        float prev = (float)(i % 8 + 1);
        CHECK_NEAR(net.layers[2].out[i], i < 8 ? 2 * prev : prev, 0);
    }
    net_free(&net);
}

static void test_shortcut_errors(void)
{
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[shortcut]\nfrom=-1\n",
                     "t.cfg:6: layer 0 [shortcut]: from=-1: there is no earlier layer");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=1\n[shortcut]\n"
                     "from=1\n",
                     "t.cfg:8: layer 1 [shortcut]: from=1 names layer 1, not an earlier layer "
                     "(0..0, or -1..-1)");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=1\n[shortcut]\n"
                     "from=-3\n",
                     "t.cfg:8: layer 1 [shortcut]: from=-3 names layer -2, not an earlier layer");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=1\n[shortcut]\n"
                     "activation=leaky\n",
                     "t.cfg:7: layer 1 [shortcut] needs key 'from'");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[maxpool]\nsize=1\n[shortcut]\n"
                     "from=0\nactivation=leakyy\n",
                     "t.cfg:9: bad value 'leakyy' for key 'activation' in [shortcut]");
}

/* ---- route ---- */

static void test_route_concatenates_in_order(void)
{
    Net net;
    /* 0: identity 2x2x2, 1: maxpool size 2 stride 1 (2x2x2), 2: route of 1 then 0. */
    if (build_sized("[net]\nwidth=2\nheight=2\nchannels=2\n[maxpool]\nsize=1\n[maxpool]\n"
                    "size=2\nstride=1\n[route]\nlayers=-1,0\n",
                    2, &net))
        return;
    CHECK(same_shape(net.layers[2].out_shape, 4, 2, 2));
    CHECK(net.layers[2].n_inputs == 2 && net.layers[2].inputs[0] == 1 &&
          net.layers[2].inputs[1] == 0);
    for (int i = 0; i < 16; i++)
        net.input[i] = (float)i;
    net_forward(&net);
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 8; k++) {
            CHECK_NEAR(net.layers[2].out[b * 16 + k], net.layers[1].out[b * 8 + k], 0);
            CHECK_NEAR(net.layers[2].out[b * 16 + 8 + k], (float)(b * 8 + k), 0);
        }
    /* Backward splits the delta: layer 1 gets the first half of each sample, layer 0 the
     * second half plus what layer 1 routes back to it: each plane's values increase, so
     * every window of layer 1 picks the plane's last element. */
    for (int i = 0; i < 32; i++)
        net.layers[2].delta[i] = (float)i;
    net_backward(&net);
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 8; k++) {
            int plane = k / 4;
            double want0 = b * 16 + 8 + k;
            if (k % 4 == 3)
                for (int m = 0; m < 4; m++)
                    want0 += b * 16 + plane * 4 + m;
            CHECK_NEAR(net.layers[1].delta[b * 8 + k], b * 16 + k, 0);
            CHECK_NEAR(net.layers[0].delta[b * 8 + k], want0, 0);
        }
    net_free(&net);
}

/* groups=2, group_id=1 (yolov4-tiny's CSP split): each input gives its second half of channels,
 * and the backward adds into that half alone. */
static void test_route_groups_take_one_channel_group(void)
{
    Net net;
    /* 0: identity 2x2x4 (values i), 1: identity 2x2x2, 2: route of 0 then 1, group 1 of 2. */
    if (build_sized("[net]\nwidth=2\nheight=2\nchannels=4\n[maxpool]\nsize=1\n[route]\nlayers=0\n"
                    "groups=2\ngroup_id=0\n[route]\nlayers=0,1\ngroups=2\ngroup_id=1\n",
                    2, &net))
        return;
    CHECK(same_shape(net.layers[1].out_shape, 2, 2, 2));
    CHECK(same_shape(net.layers[2].out_shape, 3, 2, 2));
    for (int i = 0; i < 32; i++)
        net.input[i] = (float)i;
    net_forward(&net);
    /* Layer 1 is channels 0-1 of each sample; layer 2 channels 2-3, then layer 1's channel 1. */
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++) {
            CHECK_NEAR(net.layers[1].out[b * 8 + k], b * 16 + k, 0);
            CHECK_NEAR(net.layers[2].out[b * 12 + k], b * 16 + 8 + k, 0);
            CHECK_NEAR(net.layers[2].out[b * 12 + 4 + k], b * 16 + 12 + k, 0);
            CHECK_NEAR(net.layers[2].out[b * 12 + 8 + k], b * 16 + 4 + k, 0);
        }
    for (int i = 0; i < 24; i++)
        net.layers[2].delta[i] = (float)(i + 1);
    net_backward(&net);
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 4; k++) {
            CHECK_NEAR(net.layers[1].delta[b * 8 + k], 0, 0);
            CHECK_NEAR(net.layers[1].delta[b * 8 + 4 + k], b * 12 + 8 + k + 1, 0);
        }
    net_free(&net);
}

static void test_route_errors(void)
{
    expect_cfg_error(SHORTCUT_BASE "[route]\nlayers=0,-1\ngroups=2\n",
                     "t.cfg:14: bad value '2' for key 'groups' in [route]: layer 0's 1 channels "
                     "do not split into 2 equal groups");
    expect_cfg_error(SHORTCUT_BASE "[route]\nlayers=0\ngroups=2\ngroup_id=2\n",
                     "t.cfg:15: bad value '2' for key 'group_id' in [route]: must be < 2");
    expect_cfg_error(SHORTCUT_BASE "[route]\nlayers=0\ngroups=0\n",
                     "t.cfg:14: bad value '0' for key 'groups' in [route]: must be >= 1");
    expect_cfg_error(SHORTCUT_BASE "[route]\nlayers=-1,1\n",
                     "t.cfg:13: layer 3 [route]: inputs must have the same height and width: layer "
                     "2 is 1x4x4, layer 1 is 1x2x2 (CxHxW)");
    expect_cfg_error(
        SHORTCUT_BASE "[route]\nlayers=3\n",
        "t.cfg:13: layer 3 [route]: layers entry 3 names layer 3, not an earlier layer "
        "(0..2, or -1..-3)");
    expect_cfg_error(SHORTCUT_BASE "[route]\nlayers=0,-4\n",
                     "t.cfg:13: layer 3 [route]: layers entry -4 names layer -1, not an earlier");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[route]\nlayers=-1\n",
                     "t.cfg:6: layer 0 [route]: layers=-1: there is no earlier layer");
    expect_cfg_error(SHORTCUT_BASE "[route]\n", "t.cfg:12: layer 3 [route] needs key 'layers'");
    expect_cfg_error(SHORTCUT_BASE "[route]\nlayers=0,x\n",
                     "t.cfg:13: bad value '0,x' for key 'layers' in [route]");
}

/* ---- softmax ---- */

static void test_softmax_probabilities_and_loss(void)
{
    Net net;
    if (build_sized("[net]\nbatch=2\nwidth=1\nheight=1\nchannels=4\n[softmax]\n", 2, &net))
        return;
    /* Sample 1 is sample 0 shifted by 1000: the max subtraction keeps it finite and equal. */
    const double logits[2][4] = {{1, 2, 3, 4}, {1001, 1002, 1003, 1004}};
    const int labels[2] = {3, 0};
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 4; i++)
            net.input[b * 4 + i] = (float)logits[b][i];
    net.labels[0] = labels[0];
    net.labels[1] = labels[1];
    net_forward(&net);
    double sum = exp(-3.0) + exp(-2.0) + exp(-1.0) + 1.0, want_loss = 0;
    for (int b = 0; b < 2; b++) {
        for (int i = 0; i < 4; i++)
            CHECK_NEAR(net.layers[0].out[b * 4 + i], exp(i - 3.0) / sum, 1e-6);
        want_loss -= log(exp(labels[b] - 3.0) / sum);
    }
    /* loss_divisor is the [net] batch (2). */
    CHECK_NEAR(net.loss_divisor, 2.0, 0);
    CHECK_NEAR(net.loss, want_loss / 2, 1e-5);
    /* Backward: (p - onehot) / 2, whatever the seed delta holds. */
    for (int i = 0; i < 8; i++)
        net.layers[0].delta[i] = 100.0f;
    net_backward(&net);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 4; i++)
            CHECK_NEAR(net.input_delta[b * 4 + i], (exp(i - 3.0) / sum - (i == labels[b])) / 2,
                       1e-6);
    net_free(&net);
}

/* p underflows to 0 in float, yet the loss, from the log-sum-exp of the inputs, is exact:
 * -log p = log(1 + e^-200) + 200 = 200, as PyTorch's cross-entropy. */
static void test_softmax_loss_is_exact_when_probability_underflows(void)
{
    Net net;
    if (build_sized("[net]\nwidth=1\nheight=1\nchannels=2\n[softmax]\n", 1, &net))
        return;
    net.input[0] = 0.0f;
    net.input[1] = -200.0f;
    net.labels[0] = 1;
    net_forward(&net);
    CHECK(net.layers[0].out[1] == 0.0f);
    CHECK_NEAR(net.loss, 200.0, 1e-3);
    net_free(&net);
}

/* Without labels backward applies the softmax Jacobian to the delta: compare with a
 * central difference of L = sum p * r. */
static void test_softmax_without_labels_backpropagates_delta(void)
{
    Net net;
    if (build_sized("[net]\nwidth=3\nheight=1\nchannels=2\n[softmax]\n", 1, &net))
        return;
    int *labels = net.labels;
    net.labels = NULL;
    const float r[6] = {0.3f, -1.2f, 2.0f, 0.7f, -0.4f, 1.1f};
    for (int i = 0; i < 6; i++)
        net.input[i] = 0.5f * (float)i - 1.0f;
    net_forward(&net);
    CHECK(net.loss == 0.0f);
    memcpy(net.layers[0].delta, r, sizeof r);
    net_backward(&net);
    for (int i = 0; i < 6; i++) {
        double l[2];
        for (int s = 0; s < 2; s++) {
            float saved = net.input[i];
            net.input[i] += s ? -1e-2f : 1e-2f;
            net_forward(&net);
            l[s] = 0;
            for (int k = 0; k < 6; k++)
                l[s] += (double)net.layers[0].out[k] * r[k];
            net.input[i] = saved;
        }
        CHECK_NEAR(net.input_delta[i], (l[0] - l[1]) / 2e-2, 2e-4);
    }
    net.labels = labels;
    net_free(&net);
}

static void test_softmax_errors(void)
{
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[softmax]\ngroups=2\n",
                     "t.cfg:6: bad value '2' for key 'groups' in [softmax]: only groups=1");
    Net net;
    if (!build_sized("[net]\nwidth=4\nheight=4\nchannels=1\n[softmax]\ngroups=1\n", 1, &net)) {
        CHECK(net.classes == 16);
        net_free(&net);
    }
}

/* ---- gradient checks ---- */

#define NET_HEAD(w, h, c) "[net]\nbatch=2\nwidth=" #w "\nheight=" #h "\nchannels=" #c "\n"

static void test_gradients(void)
{
    /* maxpool: darknet default padding (even and odd sizes), explicit padding, stride
     * larger than size, and overlapping windows. */
    gradcheck_cfg("maxpool 2/2", NET_HEAD(5, 5, 2) "[maxpool]\nsize=2\nstride=2\n");
    gradcheck_cfg("maxpool 3/2", NET_HEAD(6, 7, 2) "[maxpool]\nsize=3\nstride=2\n");
    gradcheck_cfg("maxpool 2/1", NET_HEAD(4, 4, 3) "[maxpool]\nsize=2\nstride=1\n");
    gradcheck_cfg("maxpool 3/1 pad 0",
                  NET_HEAD(6, 5, 2) "[maxpool]\nsize=3\nstride=1\npadding=0\n");
    gradcheck_cfg("maxpool 2/3 pad 1",
                  NET_HEAD(8, 8, 1) "[maxpool]\nsize=2\nstride=3\npadding=1\n");
    gradcheck_cfg("maxpool 5/1", NET_HEAD(6, 6, 1) "[maxpool]\nsize=5\nstride=1\n");

    gradcheck_cfg("maxpool after maxpool, connected",
                  NET_HEAD(6, 6, 2) "[maxpool]\nsize=1\n[maxpool]\nsize=2\nstride=2\n"
                                    "[connected]\noutput=3\n");
    gradcheck_cfg("avgpool", NET_HEAD(3, 4, 3) "[avgpool]\n");
    gradcheck_cfg("dropout", NET_HEAD(6, 6, 3) "[dropout]\nprobability=0.3\n");

    gradcheck_cfg("shortcut same shape",
                  NET_HEAD(4, 4, 2) "[maxpool]\nsize=1\n[maxpool]\nsize=3\nstride=1\n"
                                    "[shortcut]\nfrom=0\nalpha=0.7\nbeta=1.3\n");
    gradcheck_cfg("shortcut from fewer channels",
                  NET_HEAD(3, 3, 2) "[maxpool]\nsize=1\n[route]\nlayers=0,0,0\n"
                                    "[shortcut]\nfrom=0\nbeta=0.5\n");
    gradcheck_cfg("shortcut from more channels",
                  NET_HEAD(3, 3, 2) "[maxpool]\nsize=1\n[route]\nlayers=0,0\n[route]\n"
                                    "layers=0\n[shortcut]\nfrom=1\n");
    gradcheck_cfg("shortcut from larger",
                  NET_HEAD(6, 6, 2) "[maxpool]\nsize=1\n[maxpool]\nsize=2\nstride=2\n"
                                    "[shortcut]\nfrom=0\nalpha=2\nbeta=-0.5\n");
    gradcheck_cfg("shortcut from smaller",
                  NET_HEAD(6, 6, 2) "[maxpool]\nsize=1\n[maxpool]\nsize=2\nstride=2\n"
                                    "[route]\nlayers=0\n[shortcut]\nfrom=1\nbeta=0.5\n");

    gradcheck_cfg("route 2", NET_HEAD(4, 4, 2) "[maxpool]\nsize=1\n[maxpool]\nsize=2\n"
                                               "stride=1\n[route]\nlayers=-1,0\n");
    gradcheck_cfg("route 3 with a repeat",
                  NET_HEAD(4, 4, 2) "[maxpool]\nsize=1\n[maxpool]\nsize=2\nstride=1\n"
                                    "[route]\nlayers=0,1,0\n[shortcut]\nfrom=1\nalpha=0.5\n");
    gradcheck_cfg("route groups",
                  NET_HEAD(3, 3, 4) "[maxpool]\nsize=1\n[maxpool]\nsize=2\nstride=1\n"
                                    "[route]\nlayers=0,1,0\ngroups=2\ngroup_id=1\n");

    gradcheck_cfg("softmax", NET_HEAD(3, 2, 2) "[softmax]\n");
    gradcheck_cfg("avgpool softmax", NET_HEAD(3, 3, 5) "[avgpool]\n[softmax]\n");
    gradcheck_cfg("dropout softmax", NET_HEAD(2, 2, 3) "[dropout]\nprobability=0.3\n[softmax]\n");

    /* Every activation through a shortcut: pre-activation = 3 x, x ~ N(0, 1), which
     * reaches relu6's upper clip and the far tails. */
    for (int k = 0; k < CDL_ACT_COUNT; k++) {
        char cfg[512], label[64];
        const char *name = activation_name((ActivationKind)k);
        snprintf(cfg, sizeof cfg,
                 NET_HEAD(4, 4, 2) "[maxpool]\nsize=1\n[shortcut]\nfrom=0\nalpha=2\n"
                                   "activation=%s\n",
                 name);
        snprintf(label, sizeof label, "activation %s", name);
        gradcheck_cfg(label, cfg);
    }
}

int main(void)
{
    test_activation_names();
    test_activation_values_and_derivatives();
    test_activation_extremes();
    test_activation_large_arrays_match_elementwise();
    test_maxpool_default_padding_edges();
    test_maxpool_size3_stride2();
    test_maxpool_stride2();
    test_maxpool_shapes_and_errors();
    test_fresh_input_delta_ignores_old_contents();
    test_shortcut_fresh_input_deltas();
    test_avgpool_is_global_mean();
    test_dropout_eval_is_identity();
    test_dropout_training_mask();
    test_dropout_errors();
    test_shortcut_same_shape_alpha_beta();
    test_shortcut_from_larger_is_strided();
    test_shortcut_from_smaller_is_sampled();
    test_shortcut_channel_mismatch();
    test_shortcut_errors();
    test_route_concatenates_in_order();
    test_route_groups_take_one_channel_group();
    test_route_errors();
    test_softmax_probabilities_and_loss();
    test_softmax_loss_is_exact_when_probability_underflows();
    test_softmax_without_labels_backpropagates_delta();
    test_softmax_errors();
    test_gradients();
    return check_report("test_layers_misc");
}
