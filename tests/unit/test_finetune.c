/* Fine-tuning: --weights loads the layers that match and names the others; freeze=1 (and
 * stopbackward=1) stops backward and the optimizer at a layer; a non-finite loss abandons the
 * step and names the first layer whose output went non-finite. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "model/finetune.h"
#include "train/optimizer.h"
#include "train/trainer.h"

/* Input 2x6x6: conv -> 3x6x6, maxpool -> 3x3x3, conv -> 4x3x3 (36 values), connected. */
#define NET_HEAD "[net]\nbatch=4\nwidth=6\nheight=6\nchannels=2\ndecay=0.1\n"
#define CONV(filters)                                                                              \
    "[convolutional]\nfilters=" #filters "\nsize=3\npad=1\nbatch_normalize=1\nactivation=leaky\n"
#define POOL "[maxpool]\nsize=2\nstride=2\n"
#define HEAD(outputs) "[connected]\noutput=" #outputs "\nactivation=linear\n[softmax]\n"

static void build(Net *net, const char *text, uint64_t seed)
{
    Error e = {0};
    if (net_build_from_text(net, text, "t.cfg", 1, seed, &e) || net_resize(net, 4, 0, &e)) {
        fprintf(stderr, "build: %s\n", e.msg);
        exit(1);
    }
}

static int same_floats(const float *a, const float *b, size_t n)
{
    return !memcmp(a, b, n * sizeof *a);
}

static int all_equal(const float *x, size_t n, float v)
{
    for (size_t i = 0; i < n; i++)
        if (x[i] != v)
            return 0;
    return 1;
}

static int layer_equals(const Layer *a, const Layer *b)
{
    for (int k = 0; k < a->n_params; k++)
        if (!same_floats(a->params[k].data, b->params[k].data, a->params[k].count))
            return 0;
    return 1;
}

/* A deterministic mini-batch with every label in range. */
static void fill_batch(Net *net)
{
    const size_t n = (size_t)net->batch * shape_size(net->in_shape);
    for (size_t i = 0; i < n; i++)
        net->input[i] = (float)((i * 37) % 11) / 11.0f - 0.4f;
    for (int b = 0; b < net->batch; b++)
        net->labels[b] = b % 3;
}

static int fill_cb(Net *net, int sub, void *ctx, Error *e)
{
    (void)sub, (void)ctx, (void)e;
    fill_batch(net);
    return CDL_OK;
}

static void test_matching_layers_load_and_a_new_head_keeps_its_init(void)
{
    Net base, net, fresh;
    build(&base, NET_HEAD CONV(3) POOL CONV(4) HEAD(4), 1);
    build(&net, NET_HEAD CONV(3) POOL CONV(4) HEAD(3), 2);
    build(&fresh, NET_HEAD CONV(3) POOL CONV(4) HEAD(3), 2);
    WeightsMatch m;
    Error e = {0};
    CHECK(finetune_copy_matching(&net, &base, &m, &e) == CDL_OK);
    CHECK(m.loaded == 2 && m.skipped == 1);
    CHECK(!strcmp(m.skipped_list, "3 [connected] (shape 3x36 vs 4x36)"));
    /* Running statistics travel with the parameters. */
    CHECK(layer_equals(&net.layers[0], &base.layers[0]));
    CHECK(layer_equals(&net.layers[2], &base.layers[2]));
    CHECK(layer_equals(&net.layers[3], &fresh.layers[3]));
    weights_match_free(&m);
    net_free(&base);
    net_free(&net);
    net_free(&fresh);
}

static void test_skipped_layers_say_why(void)
{
    Net base, net;
    build(&base, NET_HEAD CONV(3) POOL CONV(4) HEAD(4), 1);
    build(&net, NET_HEAD CONV(3) POOL "[connected]\noutput=5\n" CONV(4) POOL HEAD(4), 2);
    WeightsMatch m;
    Error e = {0};
    CHECK(finetune_copy_matching(&net, &base, &m, &e) == CDL_OK);
    CHECK(m.loaded == 1 && m.skipped == 3);
    CHECK(!strcmp(m.skipped_list, "2 [connected] (the base has [convolutional] there), "
                                  "3 [convolutional] (the base has [connected] there), "
                                  "5 [connected] (not in the base: it has 5 layers)"));
    weights_match_free(&m);
    net_free(&net);
    build(&net,
          NET_HEAD CONV(3) POOL
          "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=leaky\n" HEAD(4),
          2);
    CHECK(finetune_copy_matching(&net, &base, &m, &e) == CDL_OK);
    CHECK(!strcmp(m.skipped_list, "2 [convolutional] (tensors weights,biases vs "
                                  "weights,biases,scales,rolling_mean,rolling_variance)"));
    weights_match_free(&m);
    net_free(&net);
    net_free(&base);
}

/* Layers 0..2 frozen: freeze=1 on the second convolution. */
static const char *frozen_cfg =
    NET_HEAD CONV(3) POOL "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\n"
                          "activation=leaky\nfreeze=1\n" HEAD(3);

static void test_freeze_stops_backward_at_the_frozen_layer(void)
{
    Net net;
    build(&net, frozen_cfg, 1);
    CHECK(net.train_from == 3);
    net.train = 1;
    fill_batch(&net);
    net_forward(&net);
    /* Frozen layers get no delta buffer: their backward never runs and nothing feeds them. */
    for (int i = 0; i < 3; i++)
        CHECK(net.layers[i].delta == NULL && !net_layer_input_delta(&net, &net.layers[i + 1], 0));
    net_backward(&net);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < net.layers[i].n_params; k++) {
            const Param *p = &net.layers[i].params[k];
            CHECK(!p->trainable || all_equal(p->grad, p->count, 0.0f));
        }
    }
    double head = 0;
    const Param *w = layer_param(&net.layers[3], "weights");
    for (size_t j = 0; j < w->count; j++)
        head += fabs(w->grad[j]);
    CHECK(head > 0);
    /* Nothing reads the frozen layers' deltas: the head gets no input delta buffer. */
    CHECK(net_layer_input_delta(&net, &net.layers[3], 0) == NULL);
    net_free(&net);
}

static void test_frozen_batch_norm_keeps_its_running_statistics(void)
{
    Net net, trained;
    build(&net, frozen_cfg, 1);
    build(&trained, NET_HEAD CONV(3) POOL CONV(4) HEAD(3), 1);
    float *state = malloc(net.n_state * sizeof *state);
    memcpy(state, net.state, net.n_state * sizeof *state);
    net.train = trained.train = 1;
    fill_batch(&net);
    fill_batch(&trained);
    net_forward(&net);
    net_forward(&trained);
    CHECK(same_floats(net.state, state, net.n_state));
    CHECK(!same_floats(trained.state, state, net.n_state)); /* the same init, not frozen */
    CHECK(net.train == 1);
    free(state);
    net_free(&net);
    net_free(&trained);
}

static void test_the_optimizer_leaves_frozen_layers_alone(void)
{
    Net net, before;
    build(&net, frozen_cfg, 1);
    build(&before, frozen_cfg, 1);
    Optimizer opt;
    Error e = {0};
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    net.train = 1;
    float loss;
    for (int step = 0; step < 2; step++)
        CHECK(trainer_step_with(&net, &opt, fill_cb, NULL, 0.1f, &loss, &e) == CDL_OK);
    /* decay=0.1 would move every weight, with or without a gradient. */
    for (int i = 0; i < 3; i++)
        CHECK(layer_equals(&net.layers[i], &before.layers[i]));
    CHECK(!layer_equals(&net.layers[3], &before.layers[3]));
    optimizer_free(&opt);
    net_free(&net);
    net_free(&before);
}

static void test_stopbackward_freezes_like_freeze(void)
{
    Net net;
    build(&net,
          NET_HEAD "[convolutional]\nfilters=3\nsize=3\npad=1\nstopbackward=1\n" POOL
                   "[convolutional]\nfilters=4\nsize=3\npad=1\nfreeze=0\n" HEAD(3),
          1);
    CHECK(net.train_from == 1);
    net_free(&net);
}

static void test_the_last_frozen_layer_sets_where_training_starts(void)
{
    Net net;
    build(&net,
          NET_HEAD "[convolutional]\nfilters=3\nsize=3\npad=1\nfreeze=1\n"
                   "[maxpool]\nsize=2\nstride=2\nstopbackward=1\n" CONV(4) HEAD(3),
          1);
    CHECK(net.train_from == 2);
    net_free(&net);
}

static void test_freeze_takes_0_or_1(void)
{
    expect_cfg_error(NET_HEAD "[maxpool]\nsize=2\nfreeze=2\n[softmax]\n",
                     "t.cfg:9: bad value '2' for key 'freeze' in [maxpool]: expected 0 or 1");
}

static void test_the_first_nonfinite_output_is_found(void)
{
    Net net;
    build(&net, NET_HEAD CONV(3) POOL CONV(4) HEAD(3), 1);
    fill_batch(&net);
    net_forward(&net);
    CHECK(net_first_nonfinite_output(&net) == net.n_layers);
    layer_param(&net.layers[2], "weights")->data[5] = NAN;
    net_forward(&net);
    CHECK(net_first_nonfinite_output(&net) == 2);
    net.input[7] = INFINITY;
    net_forward(&net);
    CHECK(net_first_nonfinite_output(&net) == -1);
    net_free(&net);
    /* relu and maxpool keep a NaN (as torch's), so it is found where it starts, not hidden as 0 */
    build(&net,
          NET_HEAD
          "engine=ref\n[convolutional]\nfilters=3\nsize=3\npad=1\nactivation=relu\n" POOL HEAD(3),
          1);
    fill_batch(&net);
    layer_param(&net.layers[0], "weights")->data[4] = NAN;
    net_forward(&net);
    CHECK(net_first_nonfinite_output(&net) == 0);
    CHECK(!isfinite(net.loss));
    net_free(&net);
}

static void test_a_nonfinite_loss_abandons_the_step_and_names_the_layer(void)
{
    Net net;
    build(&net, NET_HEAD CONV(3) POOL CONV(4) HEAD(3), 1);
    Optimizer opt;
    Error e = {0};
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    net.train = 1;
    float loss;
    CHECK(trainer_step_with(&net, &opt, fill_cb, NULL, 0.1f, &loss, &e) == CDL_OK);
    layer_param(&net.layers[3], "weights")->data[0] = INFINITY;
    float *params = malloc(net.n_params * sizeof *params);
    memcpy(params, net.params, net.n_params * sizeof *params);
    CHECK(trainer_step_with(&net, &opt, fill_cb, NULL, 0.1f, &loss, &e) == CDL_ERUNTIME);
    CHECK(!isfinite(loss));
    CHECK(!strcmp(e.msg, "step 2: the loss is not finite; layer 3 [connected] produced the first "
                         "non-finite output (its parameters are not finite)"));
    CHECK(net.step == 1);
    CHECK(same_floats(net.params, params, net.n_params));
    CHECK(all_equal(net.grads, net.n_params, 0.0f));
    free(params);
    optimizer_free(&opt);
    net_free(&net);
}

int main(void)
{
    test_matching_layers_load_and_a_new_head_keeps_its_init();
    test_skipped_layers_say_why();
    test_freeze_stops_backward_at_the_frozen_layer();
    test_frozen_batch_norm_keeps_its_running_statistics();
    test_the_optimizer_leaves_frozen_layers_alone();
    test_stopbackward_freezes_like_freeze();
    test_the_last_frozen_layer_sets_where_training_starts();
    test_freeze_takes_0_or_1();
    test_the_first_nonfinite_output_is_found();
    test_a_nonfinite_loss_abandons_the_step_and_names_the_layer();
    return check_report("test_finetune");
}
