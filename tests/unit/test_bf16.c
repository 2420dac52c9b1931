/* precision=bf16 (backend/cpu/bf16.h, GemmPrecision): the rounding against torch's
 * (tests/ref/bf16.ref, scripts/ref/make_bf16.py), gemm on bf16 operands against the float32 gemm
 * on operands rounded beforehand, every gemm layer's forward and backward in bf16 against its
 * float32 passes on rounded operands, a convolution and a connected layer against
 * torch.autocast("cpu", torch.bfloat16), and the convolutions on oneDNN's bf16 kernels against
 * those on the rounding reference. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/bf16.h"
#include "backend/cpu/dnnl_conv.h"
#include "backend/cpu/gemm.h"
#include "check.h"
#include "core/net.h"
#include "ref_fixture.h"
#include "util/rng.h"

/* The float32 unit roundoff: a sum of k products in float32 is within k * U * sum |products| of
 * the exact one (first order). */
#define U 0x1p-24

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* bf16_round, bf16_round_floats and bf16_pack (its bits) give torch's rounding. */
static void test_rounding_matches_torch(const RefFixture *f)
{
    const RefTensor *in = ref_fixture_get(f, "round.in"), *out = ref_fixture_get(f, "round.out");
    CHECK(in && out && in->count == out->count);
    if (!in || !out || in->count != out->count)
        return;
    float *copy = malloc(in->count * sizeof *copy);
    uint16_t *packed = malloc(in->count * sizeof *packed);
    memcpy(copy, in->data, in->count * sizeof *copy);
    bf16_round_floats(copy, copy, in->count);
    bf16_pack(packed, in->data, in->count);
    int mismatches = 0;
    for (size_t i = 0; i < in->count; i++) {
        const float want = out->data[i], got = bf16_round(in->data[i]);
        const uint32_t unpacked = (uint32_t)packed[i] << 16;
        const int same = isnan(want)
                             ? isnan(got) && isnan(copy[i]) && unpacked == bits_of(got)
                             : bits_of(got) == bits_of(want) && bits_of(copy[i]) == bits_of(want) &&
                                   unpacked == bits_of(want);
        if (!same && mismatches++ < 5)
            fprintf(stderr, "FAIL bf16_round(0x%08x) = 0x%08x, torch 0x%08x\n",
                    bits_of(in->data[i]), bits_of(got), bits_of(want));
    }
    CHECK(mismatches == 0);
    free(copy);
    free(packed);
}

/* gemm on gemm_operand's bf16 copies is the float32 gemm on operands rounded one by one with
 * bf16_round (bit for bit: the same sgemm on the same values), and within the float32
 * accumulation bound k U sum|a b| of the exact product of the rounded operands; the product of
 * the unrounded operands differs by more than that bound (the rounding is not a no-op). */
static void test_gemm_on_bf16_operands(int trans_a, int trans_b)
{
    enum { M = 7, N = 9, K = 300 };
    Rng rng;
    rng_seed(&rng, 5, (uint64_t)(trans_a * 2 + trans_b));
    float a[M * K], b[K * N], a16[M * K], b16[K * N], a_r[M * K], b_r[K * N];
    float c[M * N], c_ref[M * N], c32[M * N];
    check_fill_normal(a, M * K, &rng);
    check_fill_normal(b, K * N, &rng);
    for (int i = 0; i < M * K; i++)
        a_r[i] = bf16_round(a[i]);
    for (int i = 0; i < K * N; i++)
        b_r[i] = bf16_round(b[i]);
    const int lda = trans_a ? M : K, ldb = trans_b ? K : N;
    const float *ao = gemm_operand(GEMM_BF16, a, M * K, a16);
    const float *bo = gemm_operand(GEMM_BF16, b, K * N, b16);
    CHECK(ao == a16 && bo == b16 && gemm_operand(GEMM_FP32, a, M * K, NULL) == a);
    gemm(trans_a, trans_b, M, N, K, 1.0f, ao, lda, bo, ldb, 0.0f, c, N);
    gemm(trans_a, trans_b, M, N, K, 1.0f, a_r, lda, b_r, ldb, 0.0f, c_ref, N);
    gemm(trans_a, trans_b, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c32, N);
    CHECK(memcmp(c, c_ref, sizeof c) == 0);
    int outside = 0, fp32_outside = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double exact = 0, abs_sum = 0;
            for (int p = 0; p < K; p++) {
                const double x = a_r[trans_a ? p * M + i : i * K + p];
                const double y = b_r[trans_b ? j * K + p : p * N + j];
                exact += x * y;
                abs_sum += fabs(x * y);
            }
            const double bound = K * U * abs_sum;
            outside += fabs(c[i * N + j] - exact) > bound;
            fp32_outside += fabs(c32[i * N + j] - exact) > bound;
        }
    CHECK(outside == 0);
    CHECK(fp32_outside > 0);
}

/* The nets whose bf16 passes are compared with float32 passes on rounded operands: every way a
 * convolution multiplies (im2col, same with flipped weights, direct 1x1, depthwise, groups,
 * strided), a connected layer and a per-token linear layer. Linear activations and no batch norm:
 * the layer's output is its product (plus biases), and the seeded delta reaches the products
 * unchanged. */
static const char *const pass_cfgs[] = {
    "[net]\nbatch=3\nwidth=7\nheight=6\nchannels=4\n"
    "[convolutional]\nfilters=5\nsize=3\npad=1\nactivation=linear\n",
    "[net]\nbatch=3\nwidth=7\nheight=6\nchannels=4\n"
    "[convolutional]\nfilters=6\nsize=3\nstride=2\npadding=1\ngroups=2\nactivation=linear\n",
    "[net]\nbatch=3\nwidth=7\nheight=6\nchannels=4\n"
    "[convolutional]\nfilters=5\nsize=1\nactivation=linear\n",
    "[net]\nbatch=3\nwidth=7\nheight=6\nchannels=4\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\ngroups=4\nactivation=linear\n",
    "[net]\nbatch=3\nwidth=7\nheight=6\nchannels=4\n[connected]\noutput=5\nactivation=linear\n",
    "[net]\nbatch=3\nseq=4\ninputs=6\n[linear]\noutput=5\n",
};

/* Builds text (starting "[net]\n") in precision p with parameters from seed 1 and an input
 * gradient, on the reference convolutions (engine=ref): bf16 layers run there whatever the
 * engine, and bit-for-bit comparisons need the same sums in both precisions. */
static int build(const char *text, GemmPrecision p, Net *net)
{
    Error e = {0};
    char ref_text[1024];
    snprintf(ref_text, sizeof ref_text, "[net]\nengine=ref\n%s", text + strlen("[net]\n"));
    int st = net_build_from_text(net, ref_text, "t.cfg", 1, 1, &e);
    if (!st) {
        net_set_precision(net, p);
        if ((st = net_resize(net, net->hyper.batch, 1, &e)))
            net_free(net);
    }
    if (st)
        fprintf(stderr, "FAIL build: %s\n", e.msg);
    CHECK(st == CDL_OK);
    return st;
}

/* Forward on input, then backward from delta seeded into the last layer; train mode. */
static void run_passes(Net *net, const float *input, const float *delta)
{
    const Layer *last = &net->layers[net->n_layers - 1];
    memcpy(net->input, input, (size_t)net->batch * shape_size(net->in_shape) * sizeof *input);
    net->train = 1;
    net_forward(net);
    memcpy(last->delta, delta, (size_t)net->batch * shape_size(last->out_shape) * sizeof *delta);
    net_zero_grads(net);
    net_backward(net);
}

static void test_layer_passes_are_fp32_on_rounded_operands(const char *text)
{
    Net n16, n32;
    if (build(text, GEMM_BF16, &n16))
        return;
    if (build(text, GEMM_FP32, &n32)) {
        net_free(&n16);
        return;
    }
    const size_t in_n = (size_t)n16.batch * shape_size(n16.in_shape);
    const Layer *l16 = &n16.layers[0], *l32 = &n32.layers[0];
    const size_t out_n = (size_t)n16.batch * shape_size(l16->out_shape);
    float *input = malloc(in_n * sizeof *input), *delta = malloc(out_n * sizeof *delta);
    float *input_r = malloc(in_n * sizeof *input), *delta_r = malloc(out_n * sizeof *delta);
    Rng rng;
    rng_seed(&rng, 9, 0);
    check_fill_normal(input, in_n, &rng);
    check_fill_normal(delta, out_n, &rng);
    bf16_round_floats(input_r, input, in_n);
    bf16_round_floats(delta_r, delta, out_n);
    Param *w32 = layer_param(&n32.layers[0], "weights");
    bf16_round_floats(w32->data, w32->data, w32->count); /* the biases stay float32 in bf16 */
    run_passes(&n16, input, delta);
    run_passes(&n32, input_r, delta_r);
    CHECK(memcmp(l16->out, l32->out, out_n * sizeof *delta) == 0);
    CHECK(memcmp(n16.input_delta, n32.input_delta, in_n * sizeof *input) == 0);
    const Param *g16 = layer_param(&n16.layers[0], "weights");
    CHECK(memcmp(g16->grad, w32->grad, g16->count * sizeof *g16->grad) == 0);
    /* The float32 net on the unrounded input differs: the bf16 net did round. */
    run_passes(&n32, input, delta);
    CHECK(memcmp(l16->out, l32->out, out_n * sizeof *delta) != 0);
    if (check_failures)
        fprintf(stderr, "  in the net:\n%s", text);
    free(input), free(delta), free(input_r), free(delta_r);
    net_free(&n16);
    net_free(&n32);
}

/* Convolutions that oneDNN's bf16 kernels run on a CPU with bf16 instructions (cfg text after
 * "[net]\n"; no engine key: bf16's default, oneDNN where native), with the shapes of resnets'
 * layers in small: a first layer of 3 channels, 3x3 same, 3x3 and 1x1 stride 2, a 1x1 bottleneck,
 * and the grouped and depthwise ones of pass_cfgs (oneDNN's or the reference, whichever runs). */
static const char *const dnnl_bf16_cfgs[] = {
    "batch=2\nwidth=9\nheight=7\nchannels=3\n"
    "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=linear\n",
    "batch=2\nwidth=9\nheight=7\nchannels=16\n"
    "[convolutional]\nfilters=32\nsize=3\npad=1\nactivation=linear\n",
    "batch=3\nwidth=9\nheight=7\nchannels=16\n"
    "[convolutional]\nfilters=32\nsize=3\nstride=2\npad=1\nactivation=linear\n",
    "batch=2\nwidth=8\nheight=8\nchannels=32\n"
    "[convolutional]\nfilters=16\nsize=1\nstride=2\nactivation=linear\n",
    "batch=2\nwidth=7\nheight=7\nchannels=32\n"
    "[convolutional]\nfilters=16\nsize=1\nactivation=linear\n",
    "batch=3\nwidth=7\nheight=6\nchannels=4\n"
    "[convolutional]\nfilters=6\nsize=3\nstride=2\npadding=1\ngroups=2\nactivation=linear\n",
    "batch=3\nwidth=7\nheight=6\nchannels=4\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\ngroups=4\nactivation=linear\n",
};

/* Builds "[net]\n" + head + text in precision p (parameters from seed 1, an input gradient). */
static int build_with(const char *head, const char *text, GemmPrecision p, Net *net)
{
    Error e = {0};
    char full[1024];
    snprintf(full, sizeof full, "[net]\n%s%s", head, text);
    int st = net_build_from_text(net, full, "t.cfg", 1, 1, &e);
    if (!st) {
        net_set_precision(net, p);
        if ((st = net_resize(net, net->hyper.batch, 1, &e)))
            net_free(net);
    }
    if (st)
        fprintf(stderr, "FAIL build: %s\n", e.msg);
    CHECK(st == CDL_OK);
    return st;
}

/* Elements of got outside want +- (2 k U s[i] + k 2^-126) (+ extra s[i]); prints the first
 * unless what is NULL. */
static int outside_sum_order(const char *what, const float *got, const float *want, const float *s,
                             size_t n, int k, double extra)
{
    int outside = 0;
    for (size_t i = 0; i < n; i++) {
        const double tol = (2.0 * k * U + extra) * s[i] + k * 0x1p-126;
        const double err = fabs((double)got[i] - want[i]);
        if (err > tol && outside++ < 3 && what)
            fprintf(stderr, "FAIL %s[%zu]: oneDNN bf16 %.9g, reference %.9g (tol %.3g)\n", what, i,
                    got[i], want[i], tol);
    }
    return outside;
}

/* A bf16 convolution on oneDNN and on the rounding reference (engine=ref) multiply the same bf16
 * operands exactly in float32 (oneDNN's reorders round to nearest even as bf16_round; vdpbf16ps
 * flushes subnormals, k 2^-126 at most) and sum them in float32 in other orders: each result of
 * k terms is within k U S of the exact sum, S the sum of the terms' magnitudes, which the float32
 * reference computes exactly enough on |operands| (forward: |w|*|x| + |b|; dx: |w| and |dy|; dw:
 * |x| and |dy|): tol = 2 k U S. The bias gradient sums dy, which the reference takes in float32
 * and oneDNN rounded (2^-8 of each term more). Where oneDNN has no bf16 kernel (or the CPU none)
 * the layer runs the reference, bit for bit. A float32 oneDNN convolution on the unrounded
 * operands falls outside: the rounding moves each operand by up to 2^-8 of itself. */
static void test_dnnl_bf16_matches_reference(const char *text)
{
    Net nd, nr, na;
    if (build_with("", text, GEMM_BF16, &nd))
        return;
    if (build_with("engine=ref\n", text, GEMM_BF16, &nr)) {
        net_free(&nd);
        return;
    }
    if (build_with("engine=ref\n", text, GEMM_FP32, &na)) {
        net_free(&nd), net_free(&nr);
        return;
    }
    Layer *ld = &nd.layers[0], *lr = &nr.layers[0], *la = &na.layers[0];
    const int native = dnnl_conv_bf16_runs();
    CHECK(!strcmp(lr->engine, "ref"));
    CHECK(native || !strcmp(ld->engine, "ref"));
    const size_t in_n = (size_t)nd.batch * shape_size(nd.in_shape);
    const size_t out_n = (size_t)nd.batch * shape_size(ld->out_shape);
    float *input = malloc(in_n * sizeof *input), *delta = malloc(out_n * sizeof *delta);
    float *abs_in = malloc(in_n * sizeof *input), *abs_delta = malloc(out_n * sizeof *delta);
    Rng rng;
    rng_seed(&rng, 11, 0);
    check_fill_normal(input, in_n, &rng);
    check_fill_normal(delta, out_n, &rng);
    for (size_t i = 0; i < in_n; i++)
        abs_in[i] = fabsf(bf16_round(input[i]));
    for (size_t i = 0; i < out_n; i++)
        abs_delta[i] = fabsf(bf16_round(delta[i]));
    for (int q = 0; q < la->n_params; q++) {
        Param *a = &la->params[q];
        for (size_t i = 0; i < a->count; i++)
            a->data[i] = fabsf(q == 0 ? bf16_round(a->data[i]) : a->data[i]);
    }
    run_passes(&nd, input, delta);
    run_passes(&nr, input, delta);
    run_passes(&na, abs_in, abs_delta);
    const Shape in = nd.in_shape, out = ld->out_shape;
    const Param *wd = layer_param(ld, "weights"), *wr = layer_param(lr, "weights");
    const Param *bd = layer_param(ld, "biases"), *br = layer_param(lr, "biases");
    const Param *wa = layer_param(la, "weights"), *ba = layer_param(la, "biases");
    const int k_fwd = (int)(wd->count / (size_t)out.c) + 1;
    const int k_dx = (int)(wd->count / (size_t)in.c) + 1;
    const int k_dw = nd.batch * out.h * out.w + 1;
    int outside = 0;
    outside += outside_sum_order("y", ld->out, lr->out, la->out, out_n, k_fwd, 0);
    outside +=
        outside_sum_order("dx", nd.input_delta, nr.input_delta, na.input_delta, in_n, k_dx, 0);
    outside += outside_sum_order("dw", wd->grad, wr->grad, wa->grad, wd->count, k_dw, 0);
    outside += outside_sum_order("db", bd->grad, br->grad, ba->grad, bd->count, k_dw, 0x1p-8);
    CHECK(outside == 0);
    if (!strcmp(ld->engine, "ref"))
        CHECK(memcmp(ld->out, lr->out, out_n * sizeof *ld->out) == 0);
    /* float32 on oneDNN (or the reference), unrounded operands: outside somewhere */
    Net nf;
    if (!build_with("engine=dnnl\n", text, GEMM_FP32, &nf)) {
        run_passes(&nf, input, delta);
        CHECK(outside_sum_order(NULL, nf.layers[0].out, lr->out, la->out, out_n, k_fwd, 0) > 0);
        net_free(&nf);
    }
    if (check_failures)
        fprintf(stderr, "  in the net (engine %s):\n%s", ld->engine, text);
    else
        printf("test_bf16: bf16 convolution %dx%dx%d -> %dx%dx%d, %d weights: on %s\n", in.c, in.h,
               in.w, out.c, out.h, out.w, (int)wd->count, ld->engine);
    free(input), free(delta), free(abs_in), free(abs_delta);
    net_free(&nd), net_free(&nr), net_free(&na);
}

/* Compares layer 0's forward of a one-layer net with the fixture's autocast output `out`.
 * autocast rounds the bias to bf16 and the output once, after the float32 sum of the bf16
 * products; cdl sums the same products in float32 (another order) and adds the float32 bias. So
 * element i of output channel j may differ by half a bf16 ulp of the output (2^-8 |out|), the
 * bias's rounding (2^-8 |b_j|), the two sums' orders (2 k U S_i, S_i = sum of |products|) and
 * cdl's bias addition (U S_i bounds it too): tol = 2^-8 (|out_i| + |b_j|) + (2k+1) U S_i.
 * The float32 layer, whose operands differ by up to 2^-8 each, must fall outside somewhere. */
static void check_against_autocast(const char *text, const RefFixture *f, const char *prefix,
                                   const float *input, int k, int per_channel)
{
    char name[64];
    Net net[2];
    for (int p = 0; p < 2; p++) {
        if (build(text, p ? GEMM_FP32 : GEMM_BF16, &net[p])) {
            if (p)
                net_free(&net[0]);
            return;
        }
    }
    snprintf(name, sizeof name, "%s.out", prefix);
    const RefTensor *want = ref_fixture_get(f, name);
    snprintf(name, sizeof name, "%s.weights", prefix);
    const RefTensor *w = ref_fixture_get(f, name);
    snprintf(name, sizeof name, "%s.biases", prefix);
    const RefTensor *b = ref_fixture_get(f, name);
    const size_t in_n = (size_t)net[0].batch * shape_size(net[0].in_shape);
    int outside[2] = {0, 0};
    for (int p = 0; p < 2 && want && w && b; p++) {
        Layer *l = &net[p].layers[0];
        CHECK(want->count == (size_t)net[p].batch * shape_size(l->out_shape));
        memcpy(layer_param(l, "weights")->data, w->data, w->count * sizeof *w->data);
        memcpy(layer_param(l, "biases")->data, b->data, b->count * sizeof *b->data);
        memcpy(net[p].input, input, in_n * sizeof *input);
        net[p].train = 0;
        net_forward(&net[p]);
        const int channels = (int)b->count;
        for (size_t i = 0;
             i < want->count && want->count == (size_t)net[p].batch * shape_size(l->out_shape);
             i++) {
            /* element i: sample s, channel j, position q of per_channel */
            const size_t s = i / ((size_t)channels * per_channel);
            const int j = (int)(i / per_channel % channels), q = (int)(i % per_channel);
            double abs_sum = 0;
            if (per_channel == 1) { /* connected: sum over the inputs */
                for (int t = 0; t < k; t++)
                    abs_sum += fabs((double)bf16_round(w->data[(size_t)j * k + t]) *
                                    bf16_round(input[s * k + t]));
            } else { /* 3x3 pad 1 convolution: sum over channels and taps in bounds */
                const Shape in = net[p].in_shape;
                const int oy = q / in.w, ox = q % in.w;
                for (int c = 0; c < in.c; c++)
                    for (int ky = 0; ky < 3; ky++)
                        for (int kx = 0; kx < 3; kx++) {
                            const int iy = oy + ky - 1, ix = ox + kx - 1;
                            if (iy < 0 || iy >= in.h || ix < 0 || ix >= in.w)
                                continue;
                            abs_sum +=
                                fabs((double)bf16_round(
                                         w->data[((size_t)(j * in.c + c) * 3 + ky) * 3 + kx]) *
                                     bf16_round(input[((s * in.c + c) * in.h + iy) * in.w + ix]));
                        }
            }
            const double tol =
                0x1p-8 * (fabs(want->data[i]) + fabs(b->data[j])) + (2.0 * k + 1) * U * abs_sum;
            const double err = fabs(l->out[i] - want->data[i]);
            if (err > tol && !p && outside[p] < 5)
                fprintf(stderr, "FAIL %s[%zu]: %.9g, autocast %.9g (tol %.3g)\n", prefix, i,
                        l->out[i], want->data[i], tol);
            outside[p] += err > tol;
        }
    }
    CHECK(want && w && b);
    CHECK(outside[0] == 0);
    CHECK(outside[1] > 0);
    net_free(&net[0]);
    net_free(&net[1]);
}

static void test_layers_match_autocast(const RefFixture *f)
{
    const RefTensor *x = ref_fixture_get(f, "input"), *conv_out = ref_fixture_get(f, "conv.out");
    CHECK(x && conv_out);
    if (!x || !conv_out)
        return;
    check_against_autocast("[net]\nbatch=2\nwidth=6\nheight=6\nchannels=3\n"
                           "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=linear\n",
                           f, "conv", x->data, 27, 36);
    check_against_autocast("[net]\nbatch=2\nwidth=6\nheight=6\nchannels=4\n"
                           "[connected]\noutput=5\nactivation=linear\n",
                           f, "fc", conv_out->data, 144, 1);
}

/* max_i |a[i] - b[i]| / max_i |b[i]|: an error against the tensor's scale. */
static double scaled_error(const float *a, const float *b, size_t n)
{
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return scale > 0 ? diff / scale : diff;
}

/* A sequence net of every family whose products go through gemm besides those above. */
static const char *const seq_cfg =
    "[net]\nbatch=2\nseq=6\nvocab=7\n[embedding]\noutput=8\n[attention]\nheads=2\n"
    "[lstm]\noutput=8\n[gru]\noutput=8\n[rnn]\noutput=8\n[linear]\n[softmax]\n";

/* Attention and the recurrent layers round intermediate products too (qkv, the attention
 * weights, h_{t-1}), so their bf16 passes are not float32 passes on rounded inputs; they are
 * checked against the float32 net instead. Each rounding moves an operand by at most 2^-8
 * (0.4%) of itself, and a gradient here passes through about a dozen of them (six layers, two
 * products each), so every output and gradient tensor stays within 12 * 2^-8 < 5% of its
 * largest value (scaled_error; an element-wise relative error would count sums that cancel),
 * yet differs; and forward_at, token by token from the cache, gives the forward's last row up
 * to roundings of differently summed products (2%). */
static void test_sequence_layers_in_bf16(void)
{
    Net net[2];
    for (int p = 0; p < 2; p++)
        if (build(seq_cfg, p ? GEMM_FP32 : GEMM_BF16, &net[p])) {
            if (p)
                net_free(&net[0]);
            return;
        }
    const int T = net[0].seq, V = net[0].vocab;
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < net[p].batch * T; i++) {
            net[p].input[i] = (float)((i * 5 + 3) % V);
            net[p].labels[i] = (i * 3 + 1) % V;
        }
        net[p].train = 1;
        net[p].loss_divisor = (float)(net[p].batch * T);
        net_forward(&net[p]);
        net_zero_grads(&net[p]);
        net_backward(&net[p]);
    }
    const Layer *out16 = &net[0].layers[net[0].n_layers - 1],
                *out32 = &net[1].layers[net[1].n_layers - 1];
    const size_t out_n = (size_t)net[0].batch * shape_size(out16->out_shape);
    CHECK(scaled_error(out16->out, out32->out, out_n) <= 0.05);
    CHECK(memcmp(out16->out, out32->out, out_n * sizeof *out16->out) != 0);
    for (int i = 0; i < net[0].n_layers; i++)
        for (int q = 0; q < net[0].layers[i].n_params; q++) {
            const Param *a = &net[0].layers[i].params[q], *b = &net[1].layers[i].params[q];
            const double err = a->grad ? scaled_error(a->grad, b->grad, a->count) : 0;
            if (err > 0.05)
                fprintf(stderr, "FAIL layer %d %s: bf16 gradient off by %g of its scale\n", i,
                        a->name, err);
            CHECK(err <= 0.05);
        }
    CHECK(memcmp(net[0].grads, net[1].grads, net[0].n_params * sizeof *net[0].grads) != 0);

    /* forward_at: the last row again, token by token after a forward over the others */
    float *last = malloc(out_n * sizeof *last);
    net[0].train = 0;
    net_forward(&net[0]);
    memcpy(last, out16->out, out_n * sizeof *last);
    for (int t = 0; t < T; t++)
        net_forward_at(&net[0], 0, t);
    const size_t row = shape_size(out16->out_shape) / (size_t)T;
    for (int b = 0; b < net[0].batch; b++) {
        const size_t at = ((size_t)b * T + (size_t)(T - 1)) * row;
        CHECK(scaled_error(out16->out + at, last + at, row) <= 0.02);
    }
    free(last);
    net_free(&net[0]);
    net_free(&net[1]);
}

int main(void)
{
    RefFixture f;
    if (ref_fixture_load("tests/ref/bf16.ref", &f))
        return 1;
    test_rounding_matches_torch(&f);
    for (int t = 0; t < 4; t++)
        test_gemm_on_bf16_operands(t / 2, t % 2);
    for (size_t i = 0; i < sizeof pass_cfgs / sizeof pass_cfgs[0]; i++)
        test_layer_passes_are_fp32_on_rounded_operands(pass_cfgs[i]);
    test_layers_match_autocast(&f);
    for (size_t i = 0; i < sizeof dnnl_bf16_cfgs / sizeof dnnl_bf16_cfgs[0]; i++)
        test_dnnl_bf16_matches_reference(dnnl_bf16_cfgs[i]);
    test_sequence_layers_in_bf16();
    ref_fixture_free(&f);
    return check_report("test_bf16");
}
