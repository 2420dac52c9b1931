/* The embedding / positional / layernorm / linear (GELU, tied output) / softmax net of
 * tests/ref/seq_layers.cfg against PyTorch (scripts/ref/make_seq_layers.py): every layer's
 * output, the loss, every gradient and the tensors after one AdamW step. */
#include <stdio.h>

#include "check.h"
#include "core/net.h"
#include "ref_fixture.h"
#include "ref_net.h"
#include "train/optimizer.h"

#define BATCH 3

int main(void)
{
    RefFixture f;
    Net net;
    Error e = {0};
    if (ref_fixture_load("tests/ref/seq_layers.ref", &f))
        return 1;
    if (net_build_from_file(&net, "tests/ref/seq_layers.cfg", NULL, 0, 1, 1, &e) ||
        net_resize(&net, BATCH, 0, &e) || ref_load_params(&f, &net)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        return 1;
    }
    const RefTensor *input = ref_fixture_get(&f, "input"), *labels = ref_fixture_get(&f, "labels");
    const size_t tokens = (size_t)BATCH * (size_t)net.seq;
    if (!input || !labels || input->count != tokens || labels->count != tokens) {
        fprintf(stderr, "FAIL setup: the fixture lacks the ids or labels of %zu tokens\n", tokens);
        return 1;
    }
    for (size_t i = 0; i < tokens; i++) {
        net.input[i] = input->data[i];
        net.labels[i] = (int)labels->data[i];
    }
    Optimizer opt;
    if (optimizer_init(&opt, &net, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        return 1;
    }
    net.train = 1;

    net_forward(&net);
    for (int i = 0; i < net.n_layers; i++) {
        char name[16];
        snprintf(name, sizeof name, "out%d", i);
        ref_expect_close(&f, name, net.layers[i].out,
                         (size_t)BATCH * shape_size(net.layers[i].out_shape));
    }
    ref_expect_close(&f, "loss", &net.loss, 1);
    net_zero_grads(&net);
    net_backward(&net);
    /* The embedding's gradient includes the tied output projection's. */
    ref_expect_params(&f, &net, "grad.", 1, REF_TRAINABLE_ONLY);

    optimizer_step(&opt, &net, net_learning_rate(&net.hyper, 0, 0));
    ref_expect_params(&f, &net, "step1.", 0, REF_ALL_PARAMS);

    optimizer_free(&opt);
    net_free(&net);
    ref_fixture_free(&f);
    return check_report("test_ref_seq_layers");
}
