/* Net construction: [net] parsing, learning-rate policies, cfg errors and overrides, layer
 * state in the slabs, backend checks, parameter shapes. */
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "train/train_settings.h"

/* Parses and builds text; returns the status and leaves the message in e. */
static int build(const char *text, Net *net, Error *e)
{
    return net_build_from_text(net, text, "t.cfg", 1, 1, e);
}

static void test_errors_name_file_line_and_choices(void)
{
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[convolutoinal]\nfilters=2\n",
                     "t.cfg:5: unknown section [convolutoinal] (valid: net, convolutional");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[convolutional]\nfliters=2\n",
                     "t.cfg:6: unknown key 'fliters' in [convolutional] (valid keys: filters");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[convolutional]\nfilters=two\n",
                     "t.cfg:6: bad value 'two' for key 'filters' in [convolutional]: expected an "
                     "integer");
    expect_cfg_error("[convolutional]\nfilters=2\n", "t.cfg:1: the first section must be [net]");
    expect_cfg_error("[net]\nwidth=4\nheight=4\n[softmax]\n",
                     "t.cfg:1: [net] needs key 'channels'");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\nbatch=3\nsubdivisions=2\n[softmax]\n",
                     "t.cfg:1: batch=3 is not divisible by subdivisions=2");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n",
                     "t.cfg:1: the cfg defines no layers");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\npolicy=linear\n[softmax]\n",
                     "t.cfg:5: bad value 'linear' for key 'policy' in [net]: expected one of "
                     "constant, step, steps, exp, poly, cosine");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\n[softmax]\n[softmax]\n",
                     "t.cfg:5: layer 0: [softmax] is the loss and must be the last layer");
    expect_cfg_error("[net]\nwidth=4\n height\n", "t.cfg:3: expected key=value");
}

/* The optimizer the training keys of net's cfg name. */
static OptimizerKind optimizer_kind_of(const Net *net)
{
    TrainSettings t;
    Error e = {0};
    CHECK(train_settings_read(&net->cfg, &t, &e) == CDL_OK);
    return t.optimizer;
}

/* darknet's adam=1 asks for Adam; with another optimizer= it is a contradiction. */
static void test_darknet_adam_key_selects_adam(void)
{
    Net net;
    Error e = {0};
    CHECK(build("[net]\nwidth=4\nheight=4\nchannels=1\nadam=1\n[softmax]\n", &net, &e) == CDL_OK);
    if (!e.code) {
        CHECK(optimizer_kind_of(&net) == CDL_OPT_ADAM);
        net_free(&net);
    }
    CHECK(build("[net]\nwidth=4\nheight=4\nchannels=1\nadam=0\n[softmax]\n", &net, &e) == CDL_OK);
    if (!e.code) {
        CHECK(optimizer_kind_of(&net) == CDL_OPT_SGD);
        net_free(&net);
    }
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\noptimizer=adamw\nadam=1\n[softmax]\n",
                     "t.cfg:6: adam=1 (darknet's optimizer=adam) contradicts optimizer=adamw");
    expect_cfg_error("[net]\nwidth=4\nheight=4\nchannels=1\nadam=2\n[softmax]\n",
                     "t.cfg:5: bad value '2' for key 'adam' in [net]: must be <= 1");
}

static void test_override_sets_net_and_layer_keys(void)
{
    Cfg cfg;
    Error e = {0};
    CHECK(cfg_parse_text("[net]\nbatch=2\n[convolutional]\nfilters=3\n[softmax]\n", "t.cfg", &cfg,
                         &e) == CDL_OK);
    CHECK(cfg_apply_override(&cfg, "net.batch=8", &e) == CDL_OK);
    CHECK(cfg_apply_override(&cfg, "0.filters=64", &e) == CDL_OK);
    CHECK(cfg_apply_override(&cfg, "0.size=3", &e) == CDL_OK);
    CHECK(!strcmp(cfg_find(&cfg.sections[0], "batch")->value, "8"));
    CHECK(!strcmp(cfg_find(&cfg.sections[1], "filters")->value, "64"));
    CHECK(!strcmp(cfg_find(&cfg.sections[1], "size")->value, "3"));
    CHECK(cfg_apply_override(&cfg, "5.filters=1", &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "no layer 5");
    CHECK(cfg_apply_override(&cfg, "filters=1", &e) == CDL_EUSAGE);
    cfg_free(&cfg);
}

static void test_learning_rate_policies(void)
{
    TrainSettings h = {0};
    h.learning_rate = 0.1f;
    h.power = 4;
    h.policy = CDL_LR_CONSTANT;
    CHECK_NEAR(train_learning_rate(&h, 1000, 0), 0.1, 1e-7);
    h.burn_in = 10;
    CHECK_NEAR(train_learning_rate(&h, 5, 0), 0.1 * 0.0625, 1e-7); /* (5/10)^4 */
    h.burn_in = 0;
    h.policy = CDL_LR_STEPS;
    h.n_steps = 2;
    h.steps[0] = 10;
    h.steps[1] = 20;
    h.scales[0] = 0.1f;
    h.scales[1] = 0.5f;
    CHECK_NEAR(train_learning_rate(&h, 9, 0), 0.1, 1e-7);
    CHECK_NEAR(train_learning_rate(&h, 10, 0), 0.01, 1e-7);
    CHECK_NEAR(train_learning_rate(&h, 25, 0), 0.005, 1e-7);
    h.policy = CDL_LR_STEP;
    h.step = 10;
    h.scale = 0.5f;
    CHECK_NEAR(train_learning_rate(&h, 25, 0), 0.025, 1e-7);
    h.policy = CDL_LR_EXP;
    h.gamma = 0.9f;
    CHECK_NEAR(train_learning_rate(&h, 2, 0), 0.081, 1e-7);
    h.policy = CDL_LR_POLY;
    h.max_batches = 100;
    h.power = 2;
    CHECK_NEAR(train_learning_rate(&h, 50, 0), 0.025, 1e-7);
}

static void test_slabs_hold_every_parameter(void)
{
    Net net;
    Error e = {0};
    int st = build("[net]\nwidth=4\nheight=4\nchannels=2\n[convolutional]\nfilters=3\nsize=3\n"
                   "pad=1\nbatch_normalize=1\n[connected]\noutput=5\n[softmax]\n",
                   &net, &e);
    CHECK(st == CDL_OK);
    if (st) {
        fprintf(stderr, "%s\n", e.msg);
        return;
    }
    /* conv: 3*2*3*3 weights + 3 scales + 3 biases; connected: 5*48 + 5 */
    CHECK(net.n_params == 54 + 6 + 245);
    CHECK(net.n_state == 6);
    CHECK(net.classes == 5);
    CHECK(net.layers[0].out_shape.c == 3 && net.layers[0].out_shape.h == 4);
    net_free(&net);
}

/* Every parameter of every zoo cfg has a shape whose product is its count. */
static void test_zoo_params_are_shaped(void)
{
    glob_t g = {0};
    CHECK(glob("cfg/*.cfg", 0, NULL, &g) == 0 && g.gl_pathc > 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        Net net;
        Error e = {0};
        const int st = net_build_from_file(&net, g.gl_pathv[i], NULL, 0, 0, 1, &e);
        CHECK(st == CDL_OK);
        if (st) {
            fprintf(stderr, "%s\n", e.msg);
            continue;
        }
        for (int j = 0; j < net.n_layers; j++)
            for (int k = 0; k < net.layers[j].n_params; k++) {
                const Param *p = &net.layers[j].params[k];
                size_t product = 1;
                for (int d = 0; d < p->n_dims; d++)
                    product *= (size_t)p->dims[d];
                CHECK(p->n_dims >= 1 && p->n_dims <= PARAM_MAX_DIMS);
                CHECK(product == p->count);
            }
        net_free(&net);
    }
    globfree(&g);
}

/* A layer's private per-batch state is measured at net_resize and lies in the activation slab:
 * batch norm's x_hat [batch][c][h][w], inv_std [c] and batch mean [c], dropout's mask, maxpool's
 * argmax ints (bytes, rounded up to LAYER_STATE_ALIGN). */
static void test_layer_state_lies_in_the_activation_slab(void)
{
    Net net;
    Error e = {0};
    int st = build("[net]\nbatch=3\nwidth=4\nheight=2\nchannels=2\n[batchnorm]\n[dropout]\n"
                   "probability=0.5\n[maxpool]\nsize=2\nstride=2\n[softmax]\n",
                   &net, &e);
    CHECK(st == CDL_OK);
    if (st) {
        fprintf(stderr, "%s\n", e.msg);
        return;
    }
    CHECK(net_resize(&net, 3, 0, &e) == CDL_OK);
    CHECK(net.layers[0].state_floats == 3 * 16 + 2 + 2);
    CHECK(net.layers[1].state_floats == 3 * 16);
    CHECK(net.layers[2].state_floats == 0);
    CHECK(net.layers[2].state_bytes == (3 * 4 * sizeof(int) + 15) / 16 * 16);
    CHECK(net.layers[3].state_floats == 0 && net.layers[3].state_bytes == 0);
    /* Every layer's private data comes with the net: none owns an allocation of its own. */
    for (int i = 0; i < net.n_layers; i++)
        CHECK((net.layers[i].priv != NULL) == (net.layers[i].type->priv_size > 0));
    net_free(&net);
}

/* A net is built for a backend: on the CPU every family has kernels (Layer.kernels); a backend this
 * build lacks is refused at build with one line. */
static void test_a_net_is_built_for_a_backend(void)
{
    const char *text = "[net]\nwidth=4\nheight=4\nchannels=1\n[convolutional]\nfilters=2\n"
                       "[maxpool]\nsize=2\nstride=2\n[connected]\noutput=3\n[softmax]\n";
    Net net;
    Error e = {0};
    int st =
        net_build_from_text_on(&net, text, "t.cfg", 1, 1, (NetPlacement){CDL_BACKEND_CPU, 0}, &e);
    CHECK(st == CDL_OK);
    if (st)
        return;
    CHECK(net.backend == backend_find(CDL_BACKEND_CPU) && !strcmp(net.backend->name, "CPU"));
    for (int i = 0; i < net.n_layers; i++)
        CHECK(net.layers[i].kernels && net.layers[i].kernels->forward &&
              net.layers[i].kernels->backward);
    net_free(&net);
    if (!backend_find(CDL_BACKEND_GPU)) {
        CHECK(net_build_from_text_on(&net, text, "t.cfg", 1, 1, (NetPlacement){CDL_BACKEND_GPU, 0},
                                     &e) == CDL_EUSAGE);
        CHECK_CONTAINS(e.msg, "this cdl was built without a GPU backend (make GPU=1)");
    }
}

/* Absurd sizes are refused with a message, before any int overflows or huge allocation. */
static void test_huge_sizes_are_refused(void)
{
    const char *head = "[net]\nwidth=8\nheight=8\nchannels=1\n";
    char text[512];
    expect_cfg_error("[net]\nwidth=100000\nheight=100000\nchannels=100000\n[softmax]\n",
                     "t.cfg:1: the input 100000x100000x100000 (CxHxW) is too large");
    snprintf(text, sizeof text, "%s[convolutional]\npadding=2147483647\n", head);
    expect_cfg_error(text, "t.cfg:6: bad value '2147483647' for key 'padding' in [convolutional]: "
                           "expected an integer in -16777216..16777216");
    snprintf(text, sizeof text, "%s[convolutional]\nsize=16777216\npadding=8388608\n", head);
    expect_cfg_error(text, "t.cfg:5: layer 0: [convolutional] is too large: 281474976710656 "
                           "weights");
    snprintf(text, sizeof text, "%s[convolutional]\nfilters=16000000\nsize=5\n", head);
    expect_cfg_error(text, "t.cfg:5: layer 0: [convolutional] is too large: 400000000 weights");
    expect_cfg_error("[net]\nwidth=2\nheight=1\nchannels=16777216\n[dropout]\n[route]\n"
                     "layers=-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1\n",
                     "t.cfg:6: layer 1 [route] is too large: its output 268435456x1x2");
    snprintf(text, sizeof text, "%s[connected]\noutput=4000000\n[connected]\noutput=100\n", head);
    expect_cfg_error(text, "t.cfg:7: layer 1 [connected]: the net would have more than");
    snprintf(text, sizeof text, "%s[maxpool]\nsize=2147483647\n", head);
    expect_cfg_error(text, "t.cfg:6: bad value '2147483647' for key 'size' in [maxpool]: expected "
                           "an integer in -16777216..16777216");
    expect_cfg_error("[net]\nwidth=1\nheight=1\nchannels=16777216\n[dropout]\n[route]\n"
                     "layers=-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1,-1\n[route]\n"
                     "layers=-1,-2\n",
                     "t.cfg:9: layer 2 [route]: more than 268435456 channels");
    /* A batch whose activations would not fit is refused by net_resize, not attempted. */
    Net net;
    Error e = {0};
    snprintf(text, sizeof text, "%s[connected]\noutput=4\n[softmax]\n", head);
    CHECK(build(text, &net, &e) == CDL_OK);
    CHECK(net_resize(&net, 2147483647, 0, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "t.cfg: a mini-batch of 2147483647 images needs more than");
    CHECK(net_resize(&net, 2, 0, &e) == CDL_OK);
    net_free(&net);
}

int main(void)
{
    test_errors_name_file_line_and_choices();
    test_darknet_adam_key_selects_adam();
    test_override_sets_net_and_layer_keys();
    test_learning_rate_policies();
    test_slabs_hold_every_parameter();
    test_huge_sizes_are_refused();
    test_layer_state_lies_in_the_activation_slab();
    test_a_net_is_built_for_a_backend();
    test_zoo_params_are_shaped();
    return check_report("test_net");
}
