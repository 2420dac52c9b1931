/* [attention]: gradient checks, token-by-token inference against the full forward, causality,
 * the dropout mask, cfg errors, the per-sample order against staged=1's, and the PyTorch
 * fixtures tests/ref/attention.ref and cross_attention.ref (scripts/ref/make_attention.py,
 * make_cross_attention.py). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "gradcheck.h"
#include "ref_fixture.h"
#include "ref_net.h"

/* A sequence net of batch 2 feeding T rows of C features into one [attention] with `keys`. */
#define ATTENTION_NET(t, c, keys) "[net]\nbatch=2\nseq=" #t "\ninputs=" #c "\n[attention]\n" keys

/* Cross-attention (source=) in a sequence net of batch 2 and 6 rows of 16 features: layer 1 (every
 * other row and feature of layer 0: 3 rows of 8) is the memory, layer 3 (6 rows of 8) the query. */
#define CROSS_NET(keys)                                                                            \
    "[net]\nbatch=2\nseq=6\ninputs=16\n[linear]\noutput=16\n[maxpool]\nsize=1\nstride=2\n"         \
    "[route]\nlayers=0\n[linear]\noutput=8\n[attention]\nsource=1\n" keys

/* ---- helpers ---- */

/* Builds text as "t.cfg" with gradients or not and sizes it for its [net] batch; returns the
 * status, printing the message. */
static int build(const char *text, int want_grads, Net *net)
{
    Error e = {0};
    if (net_build_from_text(net, text, "t.cfg", want_grads, 5, &e) ||
        net_resize(net, net->hyper.batch, 0, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return -1;
    }
    return 0;
}

static void fill_normal(float *x, size_t n, uint64_t stream)
{
    Rng rng;
    rng_seed(&rng, 77, stream);
    for (size_t i = 0; i < n; i++)
        x[i] = rng_normal(&rng);
}

static size_t input_floats(const Net *net)
{
    return (size_t)net->batch * shape_size(net->in_shape);
}

static size_t output_floats(const Net *net)
{
    return (size_t)net->batch * shape_size(net->layers[net->n_layers - 1].out_shape);
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs((double)a[i] - b[i]));
    return worst;
}

/* ---- gradient checks ---- */

static void test_gradcheck(void)
{
    gradcheck_cfg("attention 1 head causal", ATTENTION_NET(4, 8, "heads=1\n"));
    gradcheck_cfg("attention 2 heads causal", ATTENTION_NET(4, 8, "heads=2\n"));
    gradcheck_cfg("attention 1 head bidirectional", ATTENTION_NET(4, 8, "heads=1\ncausal=0\n"));
    gradcheck_cfg("attention 2 heads bidirectional", ATTENTION_NET(4, 8, "heads=2\ncausal=0\n"));
    /* The mask is a function of (seed, draw_id, layer): every forward of the check redraws it. */
    gradcheck_cfg("attention dropout", ATTENTION_NET(4, 8, "heads=2\ndropout=0.3\n"));
    gradcheck_cfg("attention dropout bidirectional",
                  ATTENTION_NET(4, 8, "heads=2\ndropout=0.3\ncausal=0\n"));
    /* More rows than one query block (64): the blocked score and gradient gemms. */
    gradcheck_cfg("attention 70 rows causal", ATTENTION_NET(70, 4, "heads=2\ndropout=0.2\n"));
    gradcheck_cfg("attention 70 rows bidirectional", ATTENTION_NET(70, 4, "heads=2\ncausal=0\n"));
    /* packed=1: the heads' products through backend/cpu/gemm_packed, in 16-row blocks */
    gradcheck_cfg("attention packed 70 rows causal",
                  ATTENTION_NET(70, 4, "heads=2\ndropout=0.2\npacked=1\n"));
    gradcheck_cfg("attention packed 70 rows bidirectional",
                  ATTENTION_NET(70, 4, "heads=2\ncausal=0\npacked=1\n"));
    /* dL/d(query) reaches the input through layers 3 and 0, dL/d(memory) through 1 and 0 */
    gradcheck_cfg("cross-attention 1 head", CROSS_NET("heads=1\n"));
    gradcheck_cfg("cross-attention 2 heads", CROSS_NET("heads=2\ncausal=0\n"));
    /* the dropout mask of (seed, draw_id, layer): every forward of the check draws it again */
    gradcheck_cfg("cross-attention dropout", CROSS_NET("heads=2\ndropout=0.3\n"));
    /* the memory is the query's own layer: both deltas are one buffer */
    gradcheck_cfg("cross-attention on its input",
                  ATTENTION_NET(4, 8, "heads=2\n") "[attention]\nheads=2\nsource=-1\n");
    gradcheck_cfg("two attentions, shortcut, softmax",
                  ATTENTION_NET(3, 6, "heads=3\n") "[attention]\nheads=2\ncausal=0\n"
                                                   "[shortcut]\nfrom=-2\n[softmax]\n");
}

/* ---- token-by-token inference ---- */

/* net_forward_at row by row, from a cache that a forward over other tokens filled, equals
 * net_forward on the whole sequence. */
static void check_forward_at_row_by_row(const char *keys)
{
    char text[256];
    snprintf(text, sizeof text, ATTENTION_NET(70, 8, "%s"), keys);
    Net net;
    if (build(text, 0, &net))
        return;
    const size_t in_n = input_floats(&net), out_n = output_floats(&net);
    float *x = malloc(in_n * sizeof *x), *want = malloc(out_n * sizeof *want);
    fill_normal(x, in_n, 1);
    memcpy(net.input, x, in_n * sizeof *x);
    net_forward(&net);
    memcpy(want, net_output(&net), out_n * sizeof *want);

    fill_normal(net.input, in_n, 2); /* a stale cache that every row must overwrite */
    net_forward(&net);
    memcpy(net.input, x, in_n * sizeof *x);
    for (int t = 0; t < net.seq; t++)
        net_forward_at(&net, 0, t);
    const double diff = max_abs_diff(net_output(&net), want, out_n);
    char label[64];
    snprintf(label, sizeof label, "%s", keys);
    for (char *c = label; *c; c++)
        *c = *c == '\n' ? ' ' : *c;
    printf("attention %sforward_at row by row: max abs diff %.3g\n", label, diff);
    CHECK(diff <= 1e-5);
    free(x);
    free(want);
    net_free(&net);
}

static void test_forward_at_equals_forward(void)
{
    check_forward_at_row_by_row("heads=2\n");
    check_forward_at_row_by_row("heads=1\n");
    /* Dropout is off in inference, both ways. */
    check_forward_at_row_by_row("heads=4\ndropout=0.5\n");
}

/* After a forward over a prompt, forward_at of the last row sees a changed last token as a full
 * forward over the changed sequence does. */
static void test_forward_at_after_prompt(void)
{
    Net net;
    if (build(ATTENTION_NET(6, 8, "heads=2\n"), 0, &net))
        return;
    const size_t in_n = input_floats(&net), out_n = output_floats(&net);
    const int t = net.seq - 1, c = net.in_shape.w;
    float *x = malloc(in_n * sizeof *x), *want = malloc(out_n * sizeof *want);
    fill_normal(x, in_n, 3);
    for (int b = 0; b < net.batch; b++) /* a new last token */
        fill_normal(x + ((size_t)b * net.seq + t) * c, (size_t)c, 4 + (uint64_t)b);
    memcpy(net.input, x, in_n * sizeof *x);
    net_forward(&net);
    memcpy(want, net_output(&net), out_n * sizeof *want);

    fill_normal(net.input, in_n, 3); /* the prompt, with the old last token */
    net_forward(&net);
    memcpy(net.input, x, in_n * sizeof *x);
    net_forward_at(&net, 0, t);
    double diff = 0;
    for (int b = 0; b < net.batch; b++) {
        const size_t row = ((size_t)b * net.seq + t) * c;
        diff = fmax(diff, max_abs_diff(net_output(&net) + row, want + row, (size_t)c));
    }
    printf("attention forward_at after a prompt: max abs diff %.3g\n", diff);
    CHECK(diff <= 1e-5);
    free(x);
    free(want);
    net_free(&net);
}

/* ---- causality ---- */

/* Changes the rows after `t` of every sample and returns the largest change of rows <= t. */
static double change_of_rows_up_to(const char *text, int t)
{
    Net net;
    if (build(text, 0, &net))
        return INFINITY;
    const size_t in_n = input_floats(&net), out_n = output_floats(&net);
    const size_t row = (size_t)net.in_shape.w, sample = (size_t)net.seq * row;
    float *before = malloc(out_n * sizeof *before);
    fill_normal(net.input, in_n, 5);
    net_forward(&net);
    memcpy(before, net_output(&net), out_n * sizeof *before);
    for (int b = 0; b < net.batch; b++)
        fill_normal(net.input + b * sample + (t + 1) * row, sample - (t + 1) * row, 6);
    net_forward(&net);
    double diff = 0;
    for (int b = 0; b < net.batch; b++)
        diff = fmax(diff, max_abs_diff(net_output(&net) + b * sample, before + b * sample,
                                       (size_t)(t + 1) * row));
    free(before);
    net_free(&net);
    return diff;
}

static void test_causality(void)
{
    /* Both within the first query block and across blocks. */
    CHECK(change_of_rows_up_to(ATTENTION_NET(8, 8, "heads=2\n"), 3) == 0);
    CHECK(change_of_rows_up_to(ATTENTION_NET(80, 4, "heads=2\n"), 70) == 0);
    /* A bidirectional layer's rows see the whole sequence. */
    CHECK(change_of_rows_up_to(ATTENTION_NET(8, 8, "heads=2\ncausal=0\n"), 3) > 1e-3);
}

/* ---- dropout ---- */

/* The training output of text for a fixed input at `threads` threads and draw_id (malloc'd). */
static float *training_output(const char *text, int threads, uint64_t draw_id)
{
    omp_set_num_threads(threads);
    Net net;
    if (build(text, 1, &net))
        return NULL;
    fill_normal(net.input, input_floats(&net), 7);
    net.train = 1;
    net.draw_id = draw_id;
    net_forward(&net);
    float *out = malloc(output_floats(&net) * sizeof *out);
    memcpy(out, net_output(&net), output_floats(&net) * sizeof *out);
    net_free(&net);
    return out;
}

static void test_dropout_mask(void)
{
    const char *text = ATTENTION_NET(70, 8, "heads=2\ndropout=0.3\n");
    const size_t n = 2 * 70 * 8;
    const int threads = omp_get_max_threads();
    float *one = training_output(text, 1, 3), *all = training_output(text, 2, 3);
    float *again = training_output(text, 2, 3), *other = training_output(text, 2, 4);
    omp_set_num_threads(threads);
    if (!one || !all || !again || !other)
        return;
    CHECK(max_abs_diff(one, all, n) <= 1e-6);  /* the mask does not depend on the threads */
    CHECK(max_abs_diff(all, again, n) == 0);   /* the same pass redraws the same mask */
    CHECK(max_abs_diff(all, other, n) > 1e-2); /* another pass draws another */
    free(one);
    free(all);
    free(again);
    free(other);
}

/* In inference (and so in eval) dropout does nothing. */
static void test_dropout_off_in_inference(void)
{
    Net with, without;
    if (build(ATTENTION_NET(5, 8, "heads=2\ndropout=0.5\n"), 1, &with))
        return;
    if (build(ATTENTION_NET(5, 8, "heads=2\n"), 1, &without)) {
        net_free(&with);
        return;
    }
    fill_normal(with.input, input_floats(&with), 8);
    fill_normal(without.input, input_floats(&without), 8);
    net_forward(&with);
    net_forward(&without);
    CHECK(max_abs_diff(net_output(&with), net_output(&without), output_floats(&with)) == 0);
    net_free(&with);
    net_free(&without);
}

/* ---- parameters ---- */

/* nn.Linear's defaults: every value within 1/sqrt(C) = 0.25; the 768 weights reach close to it. */
static void test_init_and_params(void)
{
    Net net;
    if (build(ATTENTION_NET(3, 16, "heads=4\n"), 1, &net))
        return;
    Layer *l = &net.layers[0];
    static const struct {
        const char *name;
        size_t count;
        int decay;
    } want[] = {{"weights", 3 * 16 * 16, 1},
                {"biases", 3 * 16, 0},
                {"out_weights", 16 * 16, 1},
                {"out_biases", 16, 0}};
    CHECK(l->n_params == 4);
    for (int k = 0; k < 4 && k < l->n_params; k++) {
        const Param *p = &l->params[k];
        CHECK(!strcmp(p->name, want[k].name) && p->count == want[k].count &&
              p->decay == want[k].decay && p->trainable);
        float max = 0;
        for (size_t i = 0; i < p->count; i++)
            max = fmaxf(max, fabsf(p->data[i]));
        CHECK(max <= 0.25f);
        if (k == 0)
            CHECK(max > 0.24f);
    }
    CHECK(net.layers[0].out_shape.h == 3 && net.layers[0].out_shape.w == 16);
    CHECK_NEAR(l->flops, 8.0 * 3 * 16 * 16 + 4.0 * 6 * 16, 1e-9);
    net_free(&net);
}

/* ---- cfg errors ---- */

static void test_cfg_errors(void)
{
    expect_cfg_error(ATTENTION_NET(4, 8, "heads=3\n"),
                     "t.cfg:6: bad value '3' for key 'heads' in [attention]");
    expect_cfg_error(ATTENTION_NET(4, 8, "heads=0\n"), "t.cfg:6: bad value '0' for key 'heads'");
    expect_cfg_error(ATTENTION_NET(4, 8, "dropout=1\n"),
                     "t.cfg:6: bad value '1' for key 'dropout' in [attention]: expected a number "
                     "in [0, 1)");
    expect_cfg_error(ATTENTION_NET(4, 8, "heads=2\ndropout=-0.1\n"),
                     "t.cfg:7: bad value '-0.1' for key 'dropout'");
    expect_cfg_error(ATTENTION_NET(4, 8, "causal=2\n"), "t.cfg:6: bad value '2' for key 'causal'");
    expect_cfg_error(
        "[net]\nwidth=4\nheight=4\nchannels=3\n[attention]\n",
        "t.cfg:5: layer 0: [attention] needs token rows: a sequence net ([net] seq=T), "
        "or in an image net one channel of T tokens ([tokens]' output), not 3x4x4 "
        "(CxHxW)");
    /* source=: an earlier layer of the input's features per row, bidirectional, the reference
     * kernels */
    expect_cfg_error(ATTENTION_NET(4, 8, "heads=1\n") "[attention]\nsource=1\n",
                     "t.cfg:8: layer 1 [attention]: source=1 names layer 1, not an earlier layer");
    expect_cfg_error(ATTENTION_NET(4, 8, "source=-1\n"),
                     "t.cfg:6: layer 0 [attention]: source=-1: there is no earlier layer");
    expect_cfg_error("[net]\nbatch=2\nseq=4\ninputs=8\n[linear]\noutput=4\n[linear]\noutput=8\n"
                     "[attention]\nsource=0\n",
                     "t.cfg:10: layer 2 [attention]: source names layer 0, whose output is 1x4x4: "
                     "expected 1 x rows x 8");
    expect_cfg_error(ATTENTION_NET(4, 8, "heads=1\n") "[attention]\nsource=-1\ncausal=1\n",
                     "t.cfg:9: layer 1: [attention] causal=1: cross-attention (source=) attends to "
                     "every memory row: expected causal=0");
    expect_cfg_error(
        ATTENTION_NET(4, 8, "heads=1\n") "[attention]\nsource=-1\npacked=1\n",
        "t.cfg:9: layer 1: [attention] packed=1: cross-attention (source=) has no packed "
        "kernels");
}

/* ---- the per-sample order against the staged reference ---- */

/* A training pass of "[net] batch=3 seq=t inputs=16, [attention] keys" (seed 5, precision prec)
 * at `threads` threads: forward on a fixed input, backward from a fixed output gradient. The
 * net is left built for its caller to read and free; returns 0, or -1 on failure. */
static int training_pass(const char *keys, int t, GemmPrecision prec, int threads, Net *net)
{
    char text[256];
    snprintf(text, sizeof text, "[net]\nbatch=3\nseq=%d\ninputs=16\n[attention]\n%s", t, keys);
    omp_set_num_threads(threads);
    Error e = {0};
    if (net_build_from_text(net, text, "t.cfg", 1, 5, &e) ||
        (net_set_precision(net, prec), net_resize(net, 3, 1, &e))) {
        fprintf(stderr, "FAIL build %s: %s\n", keys, e.msg);
        check_failures++;
        return -1;
    }
    fill_normal(net->input, input_floats(net), 7);
    net->train = 1;
    net->draw_id = 3;
    net_forward(net);
    net_zero_grads(net);
    fill_normal(net->layers[net->n_layers - 1].delta, output_floats(net), 8);
    net_backward(net);
    return 0;
}

/* The output, the input gradient and every parameter gradient of the default (per-sample)
 * order against staged=1's, within 1e-5 relative, at 1 and 2 threads; and the default run
 * twice gives the same bytes. */
static void check_against_staged(const char *keys, int t, GemmPrecision prec)
{
    char staged[128];
    snprintf(staged, sizeof staged, "%sstaged=1\n", keys);
    for (int threads = 1; threads <= 2; threads++) {
        Net got, again, want;
        if (training_pass(keys, t, prec, threads, &got))
            return;
        if (training_pass(keys, t, prec, threads, &again) ||
            training_pass(staged, t, prec, threads, &want)) {
            net_free(&got);
            return;
        }
        const size_t out_n = output_floats(&got), in_n = input_floats(&got);
        double worst = check_rel_error(net_output(&got), net_output(&want), out_n);
        worst = fmax(worst, check_rel_error(got.input_delta, want.input_delta, in_n));
        const Layer *l = &got.layers[0], *lw = &want.layers[0];
        for (int k = 0; k < l->n_params; k++)
            worst = fmax(
                worst, check_rel_error(l->params[k].grad, lw->params[k].grad, l->params[k].count));
        if (!(worst <= 1e-5))
            fprintf(stderr, "FAIL %s T=%d %d threads: %.3g relative from staged=1\n", keys, t,
                    threads, worst);
        CHECK(worst <= 1e-5);
        CHECK(!memcmp(net_output(&got), net_output(&again), out_n * sizeof(float)));
        CHECK(!memcmp(got.grads, again.grads, got.n_params * sizeof(float)));
        CHECK(!memcmp(got.input_delta, again.input_delta, in_n * sizeof(float)));
        net_free(&got);
        net_free(&again);
        net_free(&want);
    }
}

static void test_matches_staged(void)
{
    const int threads = omp_get_max_threads();
    check_against_staged("heads=2\n", 70, GEMM_FP32);
    check_against_staged("heads=4\n", 128, GEMM_FP32);
    check_against_staged("heads=2\ncausal=0\n", 70, GEMM_FP32);
    check_against_staged("heads=2\ndropout=0.2\n", 70, GEMM_FP32);
    check_against_staged("heads=2\n", 70, GEMM_BF16);
    check_against_staged("heads=2\npacked=1\n", 70, GEMM_FP32);
    check_against_staged("heads=4\npacked=1\n", 128, GEMM_FP32);
    check_against_staged("heads=2\npacked=1\ncausal=0\n", 70, GEMM_FP32);
    check_against_staged("heads=2\npacked=1\ndropout=0.2\n", 70, GEMM_FP32);
    check_against_staged("heads=1\npacked=1\n", 5, GEMM_FP32);
    omp_set_num_threads(threads);
}

/* ---- PyTorch ---- */

/* Forward output and every gradient of loss = sum(out * r), against the fixture's tensors
 * PREFIXout, PREFIXgrad.*. */
static void check_against_fixture(const RefFixture *f, const char *override, const char *prefix)
{
    Net net;
    if (ref_net_build(&net, f, "tests/ref/attention.cfg", &override, override ? 1 : 0, 2)) {
        check_failures++;
        return;
    }
    ref_expect_sum_loss_grads(f, &net, prefix);
    net_free(&net);
}

static void test_matches_pytorch(void)
{
    RefFixture f;
    if (ref_fixture_load("tests/ref/attention.ref", &f)) {
        check_failures++;
        return;
    }
    check_against_fixture(&f, NULL, "");
    check_against_fixture(&f, "0.causal=0", "bidirectional.");
    ref_fixture_free(&f);
}

/* Cross-attention against nn.MultiheadAttention(query, memory, memory) with a memory of 3 rows
 * and a query of 6 (tests/ref/cross_attention.ref, scripts/ref/make_cross_attention.py): the
 * output, the input's gradient (through both the query and the memory) and every parameter's. */
static void test_cross_matches_pytorch(void)
{
    RefFixture f;
    Net net;
    if (ref_fixture_load("tests/ref/cross_attention.ref", &f)) {
        check_failures++;
        return;
    }
    if (ref_net_build(&net, &f, "tests/ref/cross_attention.cfg", NULL, 0, 2)) {
        check_failures++;
    } else {
        ref_expect_sum_loss_grads(&f, &net, "");
        net_free(&net);
    }
    ref_fixture_free(&f);
}

int main(void)
{
    test_gradcheck();
    test_forward_at_equals_forward();
    test_forward_at_after_prompt();
    test_causality();
    test_dropout_mask();
    test_dropout_off_in_inference();
    test_init_and_params();
    test_cfg_errors();
    test_matches_staged();
    test_matches_pytorch();
    test_cross_matches_pytorch();
    return check_report("test_attention");
}
