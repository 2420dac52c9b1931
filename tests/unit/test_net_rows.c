/* A sequence-to-sequence net at a mini-batch's runtime length (core/net.h net_set_rows,
 * net_fit_rows): a batch computed at the rows of its longest source and target gives the loss
 * and every gradient the same batch gives padded to source= and seq=, on the CPU and on the GPU
 * (the simulator's in GPU=sim builds); the shapes come back. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/net.h"

/* An encoder and decoder layer each (nn.Transformer's post-norm layout) over 6 source and 7
 * target rows of a 9-token vocabulary, with every family that can take a runtime length:
 * embedding part=, positional, self- and cross-attention with key padding, shortcut, layernorm,
 * linear (a feed-forward with relu, the tied head), [dropout] of probability DROPOUT and the
 * softmax loss. ATTENTION_DROPOUT goes into each [attention]. Both draw their masks at the cfg's
 * rows as strides (attention's (pair, row, key), [dropout]'s (sample, row, column)), so a cut
 * pass draws the padded pass's. */
#define NET_CFG(ATTENTION_DROPOUT, DROPOUT)                                                        \
    "[net]\nbatch=4\nsource=6\nseq=7\ninputs=1\nvocab=9\n"                                         \
    "[embedding]\noutput=8\npart=source\n[positional]\n"                                           \
    "[attention]\nheads=2\ncausal=0\nkey_padding=source\n" ATTENTION_DROPOUT                       \
    "[shortcut]\nfrom=-2\n[layernorm]\n"                                                           \
    "[linear]\noutput=16\nactivation=relu\n[linear]\noutput=8\n[shortcut]\nfrom=-3\n"              \
    "[layernorm]\n"                                                                                \
    "[embedding]\noutput=8\npart=target\nshare=0\n[positional]\n[dropout]\nprobability=" DROPOUT   \
    "[attention]\nheads=2\nkey_padding=target\n" ATTENTION_DROPOUT "[shortcut]\nfrom=-2\n"         \
    "[layernorm]\n[attention]\nheads=2\nsource=8\nkey_padding=source\n" ATTENTION_DROPOUT          \
    "[shortcut]\nfrom=-2\n[layernorm]\n[linear]\ntie=1\n[softmax]\n"

/* Sample b's source has lengths[b][0] tokens, its target lengths[b][1] (then BOS, the target,
 * EOS as data/text_pairs.h lays them out), the rest padding: the longest source is 4 of 6 and
 * the longest target 4 (5 rows with BOS) of 7. */
static const int LENGTHS[4][2] = {{4, 2}, {1, 4}, {3, 3}, {2, 1}};

static void fill_batch(Net *net)
{
    const int s = net->source, t = net->seq;
    float *x = net_host_input(net);
    int *y = net_host_labels(net);
    for (int b = 0; b < net->batch; b++) {
        float *row = x + (size_t)b * (size_t)(s + t);
        for (int r = 0; r < s; r++)
            row[r] = r < LENGTHS[b][0] ? (float)((3 * b + r) % 7) : -1.0f;
        for (int r = 0; r < t; r++) {
            const int n = LENGTHS[b][1];
            row[s + r] = r == 0 ? 7.0f : r <= n ? (float)((b + 2 * r) % 7) : -1.0f;
            y[b * t + r] = r < n ? (b + 2 * r + 2) % 7 : r == n ? 8 : -1;
        }
    }
}

/* One training pass over the batch: the loss, and the gradients into grads [n_params]. */
static float train_pass(Net *net, int fit, float *grads)
{
    fill_batch(net);
    if (fit)
        net_fit_rows(net);
    net_commit_batch(net);
    net_zero_grads(net);
    net_forward(net);
    net_backward(net);
    Error e = {0};
    CHECK(net_sync(net, &e) == CDL_OK);
    net->backend->download(grads, net->grads, net->n_params * sizeof *grads);
    return net->loss;
}

/* The net of cfg on backend (the CPU, and the GPU in builds that have it: the simulator's). */
static void test_runtime_rows_match_padded(const char *cfg, Backend backend)
{
    Net net;
    Error e = {0};
    if (net_build_from_text_on(&net, cfg, "t.cfg", 1, 3, (NetPlacement){backend, 0}, &e) ||
        net_resize(&net, 4, 0, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return;
    }
    net.train = 1;
    CHECK(net_can_set_rows(&net));
    float *padded = malloc(net.n_params * sizeof *padded);
    float *fitted = malloc(net.n_params * sizeof *fitted);
    const float loss_padded = train_pass(&net, 0, padded);
    const float loss_fitted = train_pass(&net, 1, fitted);
    CHECK(net.rows_source == 4 && net.rows_target == 5);
    CHECK(net.layers[0].out_shape.h == 4 && net.layers[10].out_shape.h == 5);
    CHECK(net.layers[net.n_layers - 1].out_shape.h == 5);
    CHECK(loss_padded > 0);
    CHECK_NEAR(loss_fitted, loss_padded, 1e-5 * fabsf(loss_padded));
    double worst = 0;
    for (size_t i = 0; i < net.n_params; i++) {
        const double d = fabs((double)fitted[i] - padded[i]) / fmax(1.0, fabs(padded[i]));
        worst = d > worst ? d : worst;
    }
    if (worst > 1e-5) {
        fprintf(stderr, "FAIL gradients differ by %g\n", worst);
        check_failures++;
    }
    net_set_rows(&net, net.source, net.seq);
    CHECK(net.layers[0].out_shape.h == 6 && net.layers[10].out_shape.h == 7);
    CHECK(net.layers[net.n_layers - 1].out_shape.h == 7);
    free(padded);
    free(fitted);
    net_free(&net);
}

/* Families without set_rows keep a net at its sized rows. */
static void test_other_families_refuse(void)
{
    Net net;
    Error e = {0};
    if (net_build_from_text(&net,
                            "[net]\nbatch=2\nsource=3\nseq=4\ninputs=1\nvocab=5\n"
                            "[embedding]\noutput=4\npart=target\n[lstm]\noutput=4\n[linear]\n"
                            "output=5\n[softmax]\n",
                            "t.cfg", 0, 1, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return;
    }
    CHECK(!net_can_set_rows(&net));
    net_free(&net);
}

int main(void)
{
    const char *const cfgs[] = {NET_CFG("", "0\n"), NET_CFG("dropout=0.3\n", "0.3\n")};
    for (int i = 0; i < 2; i++) {
        test_runtime_rows_match_padded(cfgs[i], CDL_BACKEND_CPU);
        if (backend_find(CDL_BACKEND_GPU))
            test_runtime_rows_match_padded(cfgs[i], CDL_BACKEND_GPU);
    }
    test_other_families_refuse();
    return check_report("net_rows");
}
