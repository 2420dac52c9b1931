/* The small conv+BN+leaky / maxpool / shortcut / route / connected / softmax net of
 * tests/ref/small_net.cfg against PyTorch (scripts/ref/make_small_net.py): forward
 * outputs, loss, every gradient, 3 SGD-momentum steps and the eval-mode output. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "core/net.h"
#include "ref_fixture.h"
#include "train/sgd.h"

#define REF_TOLERANCE 1e-4

static const RefFixture *fixture;

static void expect_close(const char *name, const float *got, size_t count)
{
    const RefTensor *t = ref_fixture_get(fixture, name);
    check_count++;
    if (!t || t->count != count) {
        check_failures++;
        fprintf(stderr, "FAIL %s: fixture tensor missing or %zu values, cdl has %zu\n", name,
                t ? t->count : 0, count);
        return;
    }
    double err = ref_max_rel_error(got, t->data, count);
    if (!(err <= REF_TOLERANCE)) {
        check_failures++;
        fprintf(stderr, "FAIL %s: relative error %.3g > %g\n", name, err, REF_TOLERANCE);
    }
}

enum { ALL_PARAMS, TRAINABLE_ONLY, STATE_ONLY };

/* Compares the parameters picked by which (under prefix "step1." / "step3.") or their
 * gradients ("grad."). */
static void expect_params(Net *net, const char *prefix, int gradients, int which)
{
    for (int i = 0; i < net->n_layers; i++)
        for (int k = 0; k < net->layers[i].n_params; k++) {
            Param *p = &net->layers[i].params[k];
            if ((which == TRAINABLE_ONLY && !p->trainable) || (which == STATE_ONLY && p->trainable))
                continue;
            char name[96];
            snprintf(name, sizeof name, "%slayer%d.%s", prefix, i, p->name);
            expect_close(name, gradients ? p->grad : p->data, p->count);
        }
}

static int load_params(Net *net)
{
    for (int i = 0; i < net->n_layers; i++)
        for (int k = 0; k < net->layers[i].n_params; k++) {
            Param *p = &net->layers[i].params[k];
            char name[96];
            snprintf(name, sizeof name, "layer%d.%s", i, p->name);
            const RefTensor *t = ref_fixture_get(fixture, name);
            if (!t || t->count != p->count) {
                fprintf(stderr, "FAIL fixture lacks %s\n", name);
                return -1;
            }
            for (size_t j = 0; j < p->count; j++)
                p->data[j] = t->data[j];
        }
    return 0;
}

static void train_step(Net *net, float *velocity)
{
    net_forward(net);
    net_backward(net);
    sgd_step(net, velocity, net_learning_rate(&net->hyper, net->step));
    net->step++;
}

int main(void)
{
    RefFixture f;
    Net net;
    Error e = {0};
    if (ref_fixture_load("tests/ref/small_net.ref", &f))
        return 1;
    fixture = &f;
    if (net_build_from_file(&net, "tests/ref/small_net.cfg", NULL, 0, 1, 1, &e) ||
        net_resize(&net, 4, 1, &e) || load_params(&net)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        return 1;
    }
    const RefTensor *input = ref_fixture_get(&f, "input"), *labels = ref_fixture_get(&f, "labels");
    for (size_t i = 0; i < input->count; i++)
        net.input[i] = input->data[i];
    for (int b = 0; b < 4; b++)
        net.labels[b] = (int)labels->data[b];
    float *velocity = calloc(net.n_params, sizeof *velocity);
    net.train = 1;

    net_forward(&net);
    for (int i = 0; i < net.n_layers; i++) {
        char name[16];
        snprintf(name, sizeof name, "out%d", i);
        expect_close(name, net.layers[i].out, (size_t)4 * shape_size(net.layers[i].out_shape));
    }
    expect_close("loss", &net.loss, 1);
    expect_params(&net, "step1.", 0, STATE_ONLY); /* running statistics after one forward */
    net_zero_grads(&net);
    net_backward(&net);
    expect_params(&net, "grad.", 1, TRAINABLE_ONLY);
    expect_close("grad.input", net.input_delta, input->count);

    sgd_step(&net, velocity, net_learning_rate(&net.hyper, 0));
    net.step = 1;
    train_step(&net, velocity);
    net_forward(&net);
    expect_close("step3.loss", &net.loss, 1);
    net_backward(&net);
    sgd_step(&net, velocity, net_learning_rate(&net.hyper, net.step));
    expect_params(&net, "step3.", 0, ALL_PARAMS);

    net.train = 0;
    net_forward(&net);
    expect_close("eval.out7", net_output(&net), 20);

    free(velocity);
    net_free(&net);
    ref_fixture_free(&f);
    return check_report("test_ref_small_net");
}
