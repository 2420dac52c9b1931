/* The recurrent layers [rnn], [lstm] and [gru]: gradient checks, PyTorch fixtures
 * (scripts/ref/make_recurrent.py), token-by-token inference, the fused lstm against the per-step
 * reference, parameters and cfg errors. */
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

/* A sequence net of `batch` samples of T tokens with I inputs each. */
#define SEQ_NET(batch, T, I) "[net]\nbatch=" #batch "\nseq=" #T "\ninputs=" #I "\n"

static const char *const sections[] = {"rnn", "lstm", "gru"};

/* ---- gradient checks ---- */

static void test_gradcheck_each_layer(void)
{
    gradcheck_cfg("rnn tanh", SEQ_NET(2, 4, 3) "[rnn]\noutput=5\n");
    gradcheck_cfg("rnn relu", SEQ_NET(2, 4, 3) "[rnn]\noutput=5\nactivation=relu\n");
    gradcheck_cfg("lstm", SEQ_NET(2, 4, 3) "[lstm]\noutput=5\n");
    gradcheck_cfg("lstm fused, two unit blocks", SEQ_NET(2, 3, 3) "[lstm]\noutput=20\nfused=1\n");
    gradcheck_cfg("lstm fused", SEQ_NET(2, 4, 3) "[lstm]\noutput=5\nfused=1\n");
    gradcheck_cfg("lstm fused=0", SEQ_NET(2, 4, 3) "[lstm]\noutput=5\nfused=0\n");
    gradcheck_cfg("lstm fused on an embedding's tokens",
                  "[net]\nbatch=2\nseq=4\ninputs=1\nvocab=6\n[embedding]\noutput=3\n[lstm]\n"
                  "output=20\nfused=1\n");
    gradcheck_cfg("gru", SEQ_NET(2, 4, 3) "[gru]\noutput=5\n");
}

/* A second recurrent layer sends its input gradient through the first; the softmax loss has
 * one label per token. */
static void test_gradcheck_stacked_with_softmax(void)
{
    gradcheck_cfg("gru + lstm + softmax",
                  SEQ_NET(3, 3, 2) "[gru]\noutput=4\n[lstm]\noutput=3\n[softmax]\n");
    gradcheck_cfg("lstm + rnn logistic",
                  SEQ_NET(2, 5, 3) "[lstm]\noutput=4\n[rnn]\noutput=3\nactivation=logistic\n");
}

/* ---- PyTorch fixtures ---- */

/* Each layer's output, input gradient and parameter gradients against torch.nn.RNN, LSTM and GRU
 * (scripts/ref/make_recurrent.py), with loss sum(out * r). */
static void test_matches_pytorch(void)
{
    ref_expect_sum_loss_fixture("rnn", 2);
    ref_expect_sum_loss_fixture("lstm", 2);
    ref_expect_sum_loss_fixture("gru", 2);
}

/* ---- token-by-token inference ---- */

static int build(const char *text, Net *net)
{
    Error e = {0};
    if (net_build_from_text(net, text, "t.cfg", 0, 5, &e) ||
        net_resize(net, net->hyper.batch, 0, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return -1;
    }
    return 0;
}

/* forward_at(0), ..., forward_at(T-1) from a cleared output give forward's rows, within float
 * round-off (the sgemms see other shapes); after a forward, forward_at(t) recomputes row t from
 * the state forward left. */
static void test_forward_at_row_by_row_equals_forward(void)
{
    for (size_t k = 0; k < sizeof sections / sizeof sections[0]; k++) {
        char text[256];
        snprintf(text, sizeof text, SEQ_NET(3, 6, 4) "[%s]\noutput=5\n[softmax]\n", sections[k]);
        Net net;
        if (build(text, &net))
            continue;
        CHECK(net_can_forward_at(&net));
        Rng rng;
        rng_seed(&rng, 3, 0);
        const size_t in_n = 3 * shape_size(net.in_shape);
        for (size_t i = 0; i < in_n; i++)
            net.input[i] = rng_normal(&rng);
        net_forward(&net);
        const Layer *rec = &net.layers[0], *last = &net.layers[1];
        const size_t n = 3 * shape_size(last->out_shape), h_n = 3 * shape_size(rec->out_shape);
        float *want = malloc(n * sizeof *want), *want_h = malloc(h_n * sizeof *want_h);
        memcpy(want, last->out, n * sizeof *want);
        memcpy(want_h, rec->out, h_n * sizeof *want_h);

        net_forward_at(&net, 0, 5);
        double worst = 0;
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(last->out[i] - want[i]));
        CHECK_NEAR(worst, 0, 1e-6);

        memset(rec->out, 0, h_n * sizeof *rec->out);
        memset(last->out, 0, n * sizeof *last->out);
        for (int t = 0; t < 6; t++)
            net_forward_at(&net, 0, t);
        worst = 0;
        for (size_t i = 0; i < h_n; i++)
            worst = fmax(worst, fabs(rec->out[i] - want_h[i]));
        CHECK_NEAR(worst, 0, 1e-5);
        worst = 0;
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(last->out[i] - want[i]));
        CHECK_NEAR(worst, 0, 1e-5);
        free(want);
        free(want_h);
        net_free(&net);
    }
}

/* After a forward, the states move between samples (sample k gets sample from[k]'s) with their
 * input rows: forward_at(5) then gives row 5 of sample from[k]'s forward, to float round-off. */
static void test_gathered_state_gives_the_moved_samples_rows(void)
{
    for (size_t k = 0; k < sizeof sections / sizeof sections[0]; k++) {
        char text[256];
        snprintf(text, sizeof text, SEQ_NET(3, 6, 4) "[%s]\noutput=5\n[softmax]\n", sections[k]);
        Net net;
        if (build(text, &net))
            continue;
        CHECK(net_can_gather_samples(&net, 0));
        Rng rng;
        rng_seed(&rng, 5, 0);
        const size_t row = shape_size(net.in_shape), in_n = 3 * row;
        float *x = malloc(in_n * sizeof *x);
        for (size_t i = 0; i < in_n; i++)
            x[i] = net.input[i] = rng_normal(&rng);
        net_forward(&net);
        const Layer *last = &net.layers[1];
        const size_t per_sample = shape_size(last->out_shape), width = (size_t)last->out_shape.w;
        float *want = malloc(3 * per_sample * sizeof *want);
        memcpy(want, last->out, 3 * per_sample * sizeof *want);
        const int from[3] = {2, 0, 0};
        float *scratch = malloc(net_gather_samples(&net, 0, from, 3, NULL) * sizeof *scratch);
        net_gather_samples(&net, 0, from, 3, scratch);
        for (int b = 0; b < 3; b++)
            memcpy(net.input + b * row, x + from[b] * row, row * sizeof *x);
        net_forward_at(&net, 0, 5);
        double worst = 0;
        for (int b = 0; b < 3; b++)
            for (size_t i = 0; i < width; i++)
                worst = fmax(worst, fabs(last->out[b * per_sample + 5 * width + i] -
                                         want[from[b] * per_sample + 5 * width + i]));
        CHECK_NEAR(worst, 0, 1e-5);
        free(scratch);
        free(want);
        free(x);
        net_free(&net);
    }
}

/* Each sample's state starts at zero: a sample's outputs do not depend on the others, and its
 * first row depends on its first token alone. */
static void test_samples_are_independent(void)
{
    for (size_t k = 0; k < sizeof sections / sizeof sections[0]; k++) {
        char text[256];
        snprintf(text, sizeof text, SEQ_NET(2, 4, 3) "[%s]\noutput=5\n", sections[k]);
        Net net;
        if (build(text, &net))
            continue;
        Rng rng;
        rng_seed(&rng, 4, 0);
        for (size_t i = 0; i < 2 * 12; i++)
            net.input[i] = rng_normal(&rng);
        memcpy(net.input + 12, net.input, 3 * sizeof *net.input); /* same first token */
        net_forward(&net);
        const float *out = net.layers[0].out;
        float first[20];
        memcpy(first, out, sizeof first);
        for (int i = 0; i < 5; i++)
            CHECK_NEAR(out[20 + i], first[i], 1e-6);
        for (size_t i = 12; i < 2 * 12; i++)
            net.input[i] = rng_normal(&rng);
        net_forward(&net);
        CHECK(!memcmp(out, first, sizeof first));
        net_free(&net);
    }
}

/* Forward and backward of the net of cfg text (one recurrent layer, `batch` samples; inputs
 * ~ N(0, input_scale^2)) at `threads` threads: the output, then the parameter and input gradients
 * (malloc'd). */
static float *results_of(const char *text, int batch, int threads, float input_scale, size_t *n)
{
    omp_set_num_threads(threads);
    Net net;
    Error e = {0};
    *n = 0;
    if (net_build_from_text(&net, text, "t.cfg", 1, 2, &e) || net_resize(&net, batch, 1, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        return NULL;
    }
    Rng rng;
    rng_seed(&rng, 6, 0);
    const size_t in_n = (size_t)batch * shape_size(net.in_shape);
    Layer *l = &net.layers[0];
    const size_t out_n = (size_t)batch * shape_size(l->out_shape);
    for (size_t i = 0; i < in_n; i++)
        net.input[i] = input_scale * rng_normal(&rng);
    net.train = 1;
    net_zero_grads(&net);
    net_forward(&net);
    float *all = malloc((out_n + net.n_params + in_n) * sizeof *all);
    memcpy(all, l->out, out_n * sizeof *all);
    for (size_t i = 0; i < out_n; i++)
        l->delta[i] = rng_normal(&rng);
    net_backward(&net);
    memcpy(all + out_n, net.grads, net.n_params * sizeof *all);
    memcpy(all + out_n + net.n_params, net.input_delta, in_n * sizeof *all);
    *n = out_n + net.n_params + in_n;
    net_free(&net);
    return all;
}

/* A layer wide enough for the per-step work to run threaded. */
static float *results_at_threads(const char *section, int threads, size_t *n)
{
    char text[256];
    snprintf(text, sizeof text, SEQ_NET(8, 3, 4) "[%s]\noutput=700\n", section);
    return results_of(text, 8, threads, 1.0f, n);
}

/* got[1] [n[1]] within 1e-5 of the largest value of got[0] [n[0]] (the per-step reference's
 * results) everywhere. */
static void check_matches_reference(float *const got[2], const size_t n[2])
{
    CHECK(got[0] && got[1] && n[0] == n[1]);
    double worst = 0, scale = 0;
    for (size_t i = 0; got[0] && got[1] && i < n[0]; i++) {
        worst = fmax(worst, fabs(got[1][i] - got[0][i]));
        scale = fmax(scale, fabs(got[0][i]));
    }
    CHECK(scale > 0);
    CHECK_NEAR(worst / scale, 0, 1e-5);
}

/* The fused lstm (the default) against the per-step reference (fused=0) on the same weights and
 * data: output, parameter and input gradients within 1e-5 of their largest value, at 1 and 2
 * threads, and the same bits from a second run; hidden sizes of one, several and a short last block
 * of units, inputs that fill no whole panel, a single step; inputs of scale 1, and of scale 40,
 * where the gates saturate (the fused path's own sigmoid and tanh at their clamps). */
static void test_fused_lstm_matches_reference(void)
{
    static const int shapes[][4] = {{5, 6, 7, 40}, {3, 1, 5, 20}, {8, 3, 4, 16}, {2, 4, 3, 5}};
    static const float input_scales[] = {1.0f, 40.0f};
    const int saved = omp_get_max_threads();
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int run = 0; run < 4; run++) {
            const int threads = 1 + run % 2;
            const float input_scale = input_scales[run / 2];
            const int *sh = shapes[k];
            float *got[2];
            size_t n[2];
            for (int fused = 0; fused < 2; fused++) {
                char text[256];
                snprintf(text, sizeof text,
                         "[net]\nbatch=%d\nseq=%d\ninputs=%d\n[lstm]\noutput=%d\nfused=%d\n", sh[0],
                         sh[1], sh[2], sh[3], fused);
                got[fused] = results_of(text, sh[0], threads, input_scale, &n[fused]);
            }
            check_matches_reference(got, n);
            size_t n_again;
            char text[256];
            snprintf(text, sizeof text,
                     "[net]\nbatch=%d\nseq=%d\ninputs=%d\n[lstm]\noutput=%d\nfused=1\n", sh[0],
                     sh[1], sh[2], sh[3]);
            float *again =
                results_of(text, sh[0], threads, input_scale, &n_again); /* the same bits */
            CHECK(again && got[1] && n_again == n[1] &&
                  !memcmp(again, got[1], n_again * sizeof *again));
            free(again);
            free(got[0]);
            free(got[1]);
        }
    omp_set_num_threads(saved);
}

/* The fused lstm on layer 0's [embedding] (its token table, Recurrent.embedding) against the
 * per-step reference (fused=0), which multiplies the embedding's output rows: the output and
 * every parameter gradient, the embedding's included, within 1e-5 of their largest value, at 1
 * and 2 threads; ids outside the vocabulary (a zero row, no gradient) among the tokens, and a
 * short last block of units. */
static void test_token_lstm_matches_reference(void)
{
    enum { BATCH = 5, T = 6, VOCAB = 9 };
    const int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        float *got[2];
        size_t n[2];
        for (int fused = 0; fused < 2; fused++) {
            omp_set_num_threads(threads);
            char text[256];
            snprintf(text, sizeof text,
                     "[net]\nbatch=%d\nseq=%d\ninputs=1\nvocab=%d\n[embedding]\noutput=7\n"
                     "[lstm]\noutput=40\nfused=%d\n",
                     BATCH, T, VOCAB, fused);
            Net net;
            Error e = {0};
            got[fused] = NULL;
            if (net_build_from_text(&net, text, "t.cfg", 1, 2, &e) ||
                net_resize(&net, BATCH, 1, &e)) {
                fprintf(stderr, "FAIL build: %s\n", e.msg);
                continue;
            }
            Rng rng;
            rng_seed(&rng, 8, 0);
            for (int i = 0; i < BATCH * T; i++)
                net.input[i] =
                    i % 7 == 3 ? (i % 2 ? -1.0f : (float)VOCAB + 2) : (float)rng_below(&rng, VOCAB);
            const Layer *l = &net.layers[1];
            const size_t out_n = (size_t)BATCH * shape_size(l->out_shape);
            net.train = 1;
            net_zero_grads(&net);
            net_forward(&net);
            n[fused] = out_n + net.n_params;
            got[fused] = malloc(n[fused] * sizeof *got[fused]);
            memcpy(got[fused], l->out, out_n * sizeof *l->out);
            for (size_t i = 0; i < out_n; i++)
                l->delta[i] = rng_normal(&rng);
            net_backward(&net);
            memcpy(got[fused] + out_n, net.grads, net.n_params * sizeof *net.grads);
            net_free(&net);
        }
        check_matches_reference(got, n);
        free(got[0]);
        free(got[1]);
    }
    omp_set_num_threads(saved);
}

static void test_results_do_not_depend_on_thread_count(void)
{
    const int saved = omp_get_max_threads();
    for (size_t k = 0; k < sizeof sections / sizeof sections[0]; k++) {
        size_t n1, n2;
        float *one = results_at_threads(sections[k], 1, &n1);
        float *two = results_at_threads(sections[k], 2, &n2);
        CHECK(one && two && n1 == n2);
        double worst = 0;
        for (size_t i = 0; one && two && i < n1; i++)
            worst = fmax(worst, fabs(one[i] - two[i]) / (1 + fabs(one[i])));
        CHECK_NEAR(worst, 0, 1e-5);
        free(one);
        free(two);
    }
    omp_set_num_threads(saved);
}

/* ---- parameters, shapes, flops ---- */

static void test_params_shapes_and_init(void)
{
    static const int gates[] = {1, 4, 3};
    for (size_t k = 0; k < sizeof sections / sizeof sections[0]; k++) {
        char text[256];
        snprintf(text, sizeof text, SEQ_NET(1, 7, 3) "[%s]\noutput=16\n", sections[k]);
        Net net;
        if (build(text, &net))
            continue;
        Layer *l = &net.layers[0];
        const size_t G = (size_t)gates[k];
        CHECK(l->out_shape.c == 1 && l->out_shape.h == 7 && l->out_shape.w == 16);
        CHECK(l->n_params == 4);
        static const char *const names[] = {"weights_ih", "weights_hh", "biases_ih", "biases_hh"};
        const size_t counts[] = {G * 16 * 3, G * 16 * 16, G * 16, G * 16};
        const int decay[] = {1, 1, 0, 0};
        for (int p = 0; p < 4; p++) {
            const Param *pa = layer_param(l, names[p]);
            CHECK(pa && pa->count == counts[p] && pa->trainable && pa->decay == decay[p]);
            /* U(-1/4, 1/4): within the bound, and spread over it */
            float lo = 1, hi = -1;
            for (size_t i = 0; pa && i < pa->count; i++) {
                lo = fminf(lo, pa->data[i]);
                hi = fmaxf(hi, pa->data[i]);
            }
            CHECK(lo >= -0.25f && hi <= 0.25f && hi - lo > 0.25f);
        }
        CHECK_NEAR(l->flops, 2.0 * 7 * G * 16 * (3 + 16), 0);
        CHECK(l->activation == (k == 0 ? CDL_ACT_TANH : CDL_ACT_LINEAR));
        net_free(&net);
    }
}

/* darknet's recurrent cfgs: one step over 256 inputs (time_steps=1, one-hot bytes). */
static void test_darknet_one_step_net_runs(void)
{
    Net net;
    if (build("[net]\ninputs=256\ntime_steps=1\nbatch=2\n[gru]\noutput=8\n[gru]\noutput=8\n"
              "[rnn]\noutput=8\nhidden=8\nactivation=leaky\n",
              &net))
        return;
    CHECK(net.seq == 1 && net.layers[2].out_shape.h == 1 && net.layers[2].out_shape.w == 8);
    net.input[3] = net.input[256 + 7] = 1;
    net_forward(&net);
    CHECK(net_first_nonfinite_output(&net) == net.n_layers);
    net_free(&net);
}

/* ---- cfg errors ---- */

static void test_cfg_errors_name_file_and_line(void)
{
    expect_cfg_error(SEQ_NET(1, 4, 3) "[lstm]\n", "t.cfg:5: layer 0: [lstm] needs output=");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[gru]\noutput=0\n",
                     "t.cfg:6: layer 0: [gru] output=0: expected at least 1");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[rnn]\noutput=8\nhidden=4\n",
                     "t.cfg:7: layer 0: [rnn] hidden=4 differs from output=8");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[lstm]\noutput=4\n",
                     "t.cfg:5: layer 0: [lstm] needs a sequence net: [net] seq=T");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[connected]\noutput=4\n[rnn]\noutput=4\n",
                     "t.cfg:7: layer 1: [rnn] needs an input of T=4 token rows");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[rnn]\noutput=4\nactivation=sigmund\n",
                     "t.cfg:7: bad value 'sigmund' for key 'activation' in [rnn]");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[lstm]\noutput=4\nfused=2\n",
                     "t.cfg:7: layer 0: [lstm] fused=2: expected -1 (auto), 0 or 1");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[lstm]\noutput=4\nactivation=relu\n",
                     "t.cfg:7: unknown key 'activation' in [lstm]");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[gru]\noutput=4\nhidden=4\n",
                     "t.cfg:7: unknown key 'hidden' in [gru]");
    /* darknet's keys for what cdl lacks */
    expect_cfg_error(SEQ_NET(1, 4, 3) "[rnn]\nbatch_normalize=1\noutput=4\n",
                     "t.cfg:6: unsupported value '1' for key 'batch_normalize' in [rnn]: cdl's "
                     "recurrent layers have no batch norm (cdl accepts only batch_normalize=0)");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[gru]\noutput=4\nbatch_normalize=1\n",
                     "t.cfg:7: unsupported value '1' for key 'batch_normalize' in [gru]");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[lstm]\noutput=4\nbatch_normalize=1\n",
                     "t.cfg:7: unsupported value '1' for key 'batch_normalize' in [lstm]");
    expect_cfg_error(SEQ_NET(1, 4, 3) "[rnn]\noutput=4\nshortcut=1\n",
                     "t.cfg:7: unsupported value '1' for key 'shortcut' in [rnn]: darknet's "
                     "shortcut through time");
}

int main(void)
{
    test_params_shapes_and_init();
    test_cfg_errors_name_file_and_line();
    test_darknet_one_step_net_runs();
    test_samples_are_independent();
    test_forward_at_row_by_row_equals_forward();
    test_gathered_state_gives_the_moved_samples_rows();
    test_matches_pytorch();
    test_results_do_not_depend_on_thread_count();
    test_fused_lstm_matches_reference();
    test_token_lstm_matches_reference();
    test_gradcheck_each_layer();
    test_gradcheck_stacked_with_softmax();
    return check_report("test_recurrent");
}
