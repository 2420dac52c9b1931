/* The embedding / positional / layernorm / linear (GELU, tied output) / softmax net of
 * tests/ref/seq_layers.cfg against PyTorch (scripts/ref/make_seq_layers.py): every layer's
 * output, the loss, every gradient and the tensors after one AdamW step. */
#include <stdio.h>

#include "check.h"
#include "core/net.h"
#include "ref_fixture.h"
#include "ref_net.h"
#include "train/optimizer.h"

int main(void)
{
    RefFixture f;
    Net net;
    Error e = {0};
    if (ref_fixture_load("tests/ref/seq_layers.ref", &f) ||
        ref_net_build(&net, &f, "tests/ref/seq_layers.cfg", NULL, 0, 3))
        return 1;
    Optimizer opt;
    if (optimizer_init(&opt, &net, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        return 1;
    }
    net.train = 1;

    net_forward(&net);
    ref_expect_outputs(&f, &net);
    ref_expect_close(&f, "loss", &net.loss, 1);
    net_zero_grads(&net);
    net_backward(&net);
    /* The embedding's gradient includes the tied output projection's. */
    ref_expect_params(&f, &net, "grad.", 1, REF_TRAINABLE_ONLY);

    optimizer_step(&opt, &net, train_learning_rate(&opt.settings, 0, 0));
    ref_expect_params(&f, &net, "step1.", 0, REF_ALL_PARAMS);

    optimizer_free(&opt);
    net_free(&net);
    ref_fixture_free(&f);
    return check_report("test_ref_seq_layers");
}
