/* The small conv+BN+leaky / maxpool / shortcut / route / connected / softmax net of
 * tests/ref/small_net.cfg against PyTorch (scripts/ref/make_small_net.py): forward
 * outputs, loss, every gradient, 3 SGD-momentum steps and the eval-mode output; and the same
 * net with 16-filter 3x3 convolutions (small_net_wide.cfg), whose layer 2 runs on Winograd. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/net.h"
#include "ref_fixture.h"
#include "ref_net.h"
#include "train/optimizer.h"

static void train_step(Net *net, Optimizer *opt)
{
    net_forward(net);
    net_backward(net);
    optimizer_step(opt, net, train_learning_rate(&opt->settings, net->step, 0));
    net->step++;
}

/* Checks tests/ref/NAME.cfg against NAME.ref; wino_layer: a layer that must run on Winograd
 * (-1: none). Returns nonzero when the fixture cannot be set up. */
static int check_fixture(const char *name, int wino_layer)
{
    char ref[128], cfg[128];
    snprintf(ref, sizeof ref, "tests/ref/%s.ref", name);
    snprintf(cfg, sizeof cfg, "tests/ref/%s.cfg", name);
    RefFixture f;
    Net net;
    Error e = {0};
    /* The reference's kernels (the Winograd layer's, at this batch's few tiles too) against
     * PyTorch: engine=ref, not auto. */
    const char *const keys[] = {"net.engine=ref", "net.winograd_min_tiles=0"};
    if (ref_fixture_load(ref, &f) || ref_net_build(&net, &f, cfg, keys, 2, 4))
        return 1;
    Optimizer opt;
    if (optimizer_init(&opt, &net, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        return 1;
    }
    if (wino_layer >= 0)
        CHECK(strcmp(net.layers[wino_layer].engine, "wino") == 0);
    net.train = 1;

    net_forward(&net);
    ref_expect_outputs(&f, &net);
    ref_expect_close(&f, "loss", &net.loss, 1);
    /* Running statistics after one forward. */
    ref_expect_params(&f, &net, "step1.", 0, REF_STATE_ONLY);
    net_zero_grads(&net);
    net_backward(&net);
    ref_expect_params(&f, &net, "grad.", 1, REF_TRAINABLE_ONLY);
    ref_expect_close(&f, "grad.input", net.input_delta, 4 * shape_size(net.in_shape));

    optimizer_step(&opt, &net, train_learning_rate(&opt.settings, 0, 0));
    net.step = 1;
    train_step(&net, &opt);
    net_forward(&net);
    ref_expect_close(&f, "step3.loss", &net.loss, 1);
    net_backward(&net);
    optimizer_step(&opt, &net, train_learning_rate(&opt.settings, net.step, 0));
    ref_expect_params(&f, &net, "step3.", 0, REF_ALL_PARAMS);

    net.train = 0;
    net_forward(&net);
    ref_expect_close(&f, "eval.out7", net_output(&net), 20);

    optimizer_free(&opt);
    net_free(&net);
    ref_fixture_free(&f);
    return 0;
}

int main(void)
{
    if (check_fixture("small_net", -1) || check_fixture("small_net_wide", 2))
        return 1;
    return check_report("test_ref_small_net");
}
