/* fp16's dynamic loss scaling (train/loss_scale.h) on a net's gradient slab: a step whose
 * gradients are not finite is skipped (gradients zeroed, scale halved, counted), a finite one
 * divides them by the scale exactly, LOSS_SCALE_GROWTH_INTERVAL finite steps double it, other
 * precisions leave the gradients alone; the softmax's loss gradient carries the scale. */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "core/net.h"
#include "train/loss_scale.h"

/* A [net] section of the given precision, then the layers. */
static const char *const net_text = "[net]\nbatch=2\nwidth=3\nheight=1\nchannels=1\nprecision=%s\n"
                                    "[connected]\noutput=4\n[softmax]\n";

static int build(Net *net, const char *precision)
{
    char text[256];
    snprintf(text, sizeof text, net_text, precision);
    Error e = {0};
    if (net_build_from_text(net, text, "loss_scale.cfg", 1, 7, &e) ||
        net_resize(net, net->hyper.batch, 1, &e)) {
        fprintf(stderr, "FAIL cannot build: %s\n", e.msg);
        CHECK(0);
        return 1;
    }
    return 0;
}

static void fill_grads(Net *net, float value)
{
    for (size_t i = 0; i < net->n_params; i++)
        net->grads[i] = value * (float)(i + 1);
}

static void test_non_finite_step_is_skipped(void)
{
    Net net;
    if (build(&net, "fp16"))
        return;
    LossScale s = loss_scale_start(net.precision);
    CHECK(s.enabled && s.scale == LOSS_SCALE_INIT && s.skipped == 0);
    fill_grads(&net, 1.0f);
    net.grads[1] = INFINITY;
    CHECK(loss_scale_unscale(&s, &net) == 0);
    CHECK(s.scale == LOSS_SCALE_INIT / 2 && s.skipped == 1 && s.good_steps == 0);
    int zeroed = 1;
    for (size_t i = 0; i < net.n_params; i++)
        zeroed &= net.grads[i] == 0.0f;
    CHECK(zeroed);
    fill_grads(&net, 1.0f);
    net.grads[0] = NAN;
    CHECK(loss_scale_unscale(&s, &net) == 0 && s.scale == LOSS_SCALE_INIT / 4 && s.skipped == 2);
    net_free(&net);
}

static void test_finite_steps_unscale_and_grow(void)
{
    Net net;
    if (build(&net, "fp16"))
        return;
    LossScale s = loss_scale_start(net.precision);
    fill_grads(&net, 3.0f);
    CHECK(loss_scale_unscale(&s, &net) == 1);
    int exact = 1; /* a power of two divides exactly */
    for (size_t i = 0; i < net.n_params; i++)
        exact &= net.grads[i] == 3.0f * (float)(i + 1) / LOSS_SCALE_INIT;
    CHECK(exact);
    for (int step = 1; step < LOSS_SCALE_GROWTH_INTERVAL - 1; step++) {
        fill_grads(&net, 1.0f);
        loss_scale_unscale(&s, &net);
    }
    CHECK(s.scale == LOSS_SCALE_INIT && s.good_steps == LOSS_SCALE_GROWTH_INTERVAL - 1);
    fill_grads(&net, 1.0f);
    loss_scale_unscale(&s, &net);
    CHECK(s.scale == 2 * LOSS_SCALE_INIT && s.good_steps == 0 && s.skipped == 0);
    net_free(&net);
}

static void test_other_precisions_leave_gradients(void)
{
    Net net;
    if (build(&net, "bf16"))
        return;
    LossScale s = loss_scale_start(net.precision);
    CHECK(!s.enabled && s.scale == 1.0f);
    fill_grads(&net, 1.0f);
    net.grads[0] = INFINITY;
    CHECK(loss_scale_unscale(&s, &net) == 1 && isinf(net.grads[0]) && net.grads[1] == 2.0f);
    net_free(&net);
}

/* The softmax's input gradient with Net.grad_scale s is s times the one with 1, bit for bit (a
 * power of two). */
static void test_softmax_gradient_carries_the_scale(void)
{
    Net net;
    if (build(&net, "fp16"))
        return;
    float grads[2][64];
    for (int pass = 0; pass < 2; pass++) {
        net.grad_scale = pass ? 1024.0f : 1.0f;
        for (size_t i = 0; i < shape_size(net.in_shape) * (size_t)net.batch; i++)
            net.input[i] = 0.25f * (float)i - 0.5f;
        net.labels[0] = 1;
        net.labels[1] = 3;
        net_zero_grads(&net);
        net_forward(&net);
        net_backward(&net);
        for (size_t i = 0; i < net.n_params && i < 64; i++)
            grads[pass][i] = net.grads[i];
    }
    int scaled = 1;
    for (size_t i = 0; i < net.n_params && i < 64; i++)
        scaled &= grads[1][i] == 1024.0f * grads[0][i];
    CHECK(scaled);
    net_free(&net);
}

int main(void)
{
    test_non_finite_step_is_skipped();
    test_finite_steps_unscale_and_grow();
    test_other_precisions_leave_gradients();
    test_softmax_gradient_carries_the_scale();
    return check_report("test_loss_scale");
}
