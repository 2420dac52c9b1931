/* torch.optim semantics against PyTorch (scripts/ref/make_optim_steps.py) on the net of
 * tests/ref/optim_net.cfg: the loss, the step-1 gradients and every tensor after each of 3 steps
 * of Adam, AdamW, SGD with Nesterov momentum, SGD with a clipped gradient norm and SGD on a
 * label-smoothed loss; and the rates of the cosine schedule with warmup. */
#include <stdio.h>

#include "check.h"
#include "core/net.h"
#include "ref_fixture.h"
#include "ref_net.h"
#include "train/optimizer.h"

#define MAX_OVERRIDES 8

/* A fixture and the settings it was made with (the overrides of FIXTURES in the script). */
typedef struct OptimCase {
    const char *name;
    const char *overrides[MAX_OVERRIDES];
    int n_overrides;
} OptimCase;

static const OptimCase cases[] = {
    {"optim_adam", {"net.optimizer=adam", "net.learning_rate=0.01", "net.decay=0.01"}, 3},
    {"optim_adamw",
     {"net.optimizer=adamw", "net.learning_rate=0.01", "net.decay=0.1", "net.decay_bn_bias=1",
      "net.beta1=0.8", "net.beta2=0.99", "net.eps=1e-6"},
     7},
    {"optim_nesterov", {"net.nesterov=1"}, 1},
    {"optim_clip", {"net.clip_grad_norm=0.5"}, 1},
    {"optim_smoothing", {"3.label_smoothing=0.1"}, 1},
};

/* Builds the case's net, sized for the fixture's batch of 4, from the fixture's tensors. */
static int setup(const OptimCase *c, const RefFixture *f, Net *net)
{
    if (ref_net_build(net, f, "tests/ref/optim_net.cfg", c->overrides, c->n_overrides, 4)) {
        fprintf(stderr, "  (in the setup of %s)\n", c->name);
        return -1;
    }
    net->train = 1;
    return 0;
}

static void test_three_steps_match_pytorch(const OptimCase *c)
{
    char path[128];
    snprintf(path, sizeof path, "tests/ref/%s.ref", c->name);
    RefFixture f;
    Net net;
    if (ref_fixture_load(path, &f) || setup(c, &f, &net)) {
        check_failures++;
        ref_fixture_free(&f);
        return;
    }
    const int failures_before = check_failures;
    Optimizer opt;
    Error e = {0};
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    for (int step = 1; step <= 3; step++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "step%d.", step);
        char loss_name[32];
        snprintf(loss_name, sizeof loss_name, "%sloss", prefix);
        net_forward(&net);
        ref_expect_close(&f, loss_name, &net.loss, 1);
        net_backward(&net);
        if (step == 1) {
            ref_expect_params(&f, &net, "grad.", 1, REF_TRAINABLE_ONLY);
            ref_expect_close(&f, "grad.input", net.input_delta, 4 * shape_size(net.in_shape));
        }
        optimizer_step(&opt, &net, train_learning_rate(&opt.settings, net.step, 0));
        net.step++;
        ref_expect_params(&f, &net, prefix, 0, REF_ALL_PARAMS);
    }
    if (check_failures != failures_before)
        fprintf(stderr, "  (those failures are in %s)\n", path);
    optimizer_free(&opt);
    net_free(&net);
    ref_fixture_free(&f);
}

static void test_cosine_with_warmup_matches_pytorch(void)
{
    RefFixture f;
    Net net;
    Error e = {0};
    if (ref_fixture_load("tests/ref/optim_cosine.ref", &f)) {
        check_failures++;
        return;
    }
    CHECK(net_build_from_text(&net,
                              "[net]\nwidth=1\nheight=1\nchannels=2\nlearning_rate=0.1\n"
                              "policy=cosine\nlr_min=0.001\nwarmup=3\nmax_batches=10\n[softmax]\n",
                              "cosine.cfg", 0, 1, &e) == CDL_OK);
    TrainSettings ts;
    CHECK(train_settings_read(&net.cfg, &ts, &e) == CDL_OK);
    float over_max_batches[11], over_the_run[11];
    for (int t = 0; t < 11; t++)
        over_max_batches[t] = train_learning_rate(&ts, (uint64_t)t, 0);
    ref_expect_close(&f, "lr", over_max_batches, 11);
    /* Without max_batches the cosine spans the run's length. */
    ts.max_batches = 0;
    for (int t = 0; t < 11; t++)
        over_the_run[t] = train_learning_rate(&ts, (uint64_t)t, 10);
    ref_expect_close(&f, "lr", over_the_run, 11);
    /* After the span the rate stays at lr_min. */
    CHECK(train_learning_rate(&ts, 11, 10) == ts.lr_min);
    CHECK(train_learning_rate(&ts, 1000, 10) == ts.lr_min);
    net_free(&net);
    ref_fixture_free(&f);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_three_steps_match_pytorch(&cases[i]);
    test_cosine_with_warmup_matches_pytorch();
    return check_report("test_optim_ref");
}
