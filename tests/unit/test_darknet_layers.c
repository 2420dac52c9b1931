/* darknet compatibility of cfgs: the [crop], [cost], [reorg] and [upsample] layers (values from
 * darknet's definitions, gradient checks), refused sections and keys, ignored keys' warnings,
 * bn_darknet's batch norm, and darknet's letterbox resize. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl_conv.h"
#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "data/augment.h"
#include "data/resize_darknet.h"
#include "gradcheck.h"
#include "ref_net.h"

#define NET_HEAD(w, h, c) "[net]\nbatch=2\nwidth=" #w "\nheight=" #h "\nchannels=" #c "\n"

/* Builds text (inference net, batch 1) and fills its input with 0, 1, 2, ...; 0 on success. */
static int build_counting(const char *text, Net *net)
{
    Error e = {0};
    int st = net_build_from_text(net, text, "t.cfg", 0, 1, &e);
    if (st == CDL_OK && (st = net_resize(net, 1, 0, &e)) != CDL_OK)
        net_free(net);
    if (st)
        fprintf(stderr, "cannot build test net: %s\n", e.msg);
    CHECK(st == CDL_OK);
    if (!st)
        for (size_t i = 0; i < shape_size(net->in_shape); i++)
            net->input[i] = (float)i;
    return st;
}

/* ---- [crop] ---- */

static void test_crop_takes_the_centre_window_scaled_to_minus_one_one(void)
{
    /* 5x4 (WxH) input, 2x3 window: offsets ((4-3)/2, (5-2)/2) = (0, 1); out = 2 in - 1. */
    Net net;
    if (build_counting("[net]\nwidth=5\nheight=4\nchannels=2\n[crop]\ncrop_width=2\n"
                       "crop_height=3\nflip=1\n",
                       &net))
        return;
    net_forward(&net);
    CHECK(net.layers[0].out_shape.c == 2 && net.layers[0].out_shape.h == 3 &&
          net.layers[0].out_shape.w == 2);
    for (int k = 0; k < 2; k++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 2; x++)
                CHECK_NEAR(net.layers[0].out[(k * 3 + y) * 2 + x],
                           2.0 * (k * 20 + y * 5 + x + 1) - 1.0, 0);
    net_free(&net);
}

static void test_crop_noadjust_keeps_values(void)
{
    Net net;
    if (build_counting("[net]\nwidth=3\nheight=3\nchannels=1\n[crop]\ncrop_width=1\n"
                       "crop_height=1\nnoadjust=1\n",
                       &net))
        return;
    net_forward(&net);
    CHECK(net.layers[0].out[0] == 4.0f); /* the centre pixel */
    net_free(&net);
}

static void test_crop_training_windows_stay_inside_and_vary(void)
{
    /* 1 channel, 6x6 input counting 0..35, 2x2 windows: each sample's window is a 2x2 block of
     * the input (mirrored or not), and 16 samples do not all take the same one. */
    Net net;
    Error e = {0};
    CHECK(net_build_from_text(&net,
                              "[net]\nbatch=16\nwidth=6\nheight=6\nchannels=1\n[crop]\n"
                              "crop_width=2\ncrop_height=2\nflip=1\nnoadjust=1\n",
                              "t.cfg", 1, 1, &e) == CDL_OK);
    CHECK(net_resize(&net, 16, 0, &e) == CDL_OK);
    for (int b = 0; b < 16; b++)
        for (int i = 0; i < 36; i++)
            net.input[b * 36 + i] = (float)i;
    net.train = 1;
    net_forward(&net);
    int distinct = 0, mirrored = 0;
    for (int b = 0; b < 16; b++) {
        const float *o = net.layers[0].out + b * 4;
        mirrored += o[0] > o[1];
        CHECK(fabsf(o[0] - o[1]) == 1.0f && (int)o[0] / 6 == (int)o[1] / 6);
        CHECK(o[2] == o[0] + 6 && o[3] == o[1] + 6);
        distinct += b > 0 && o[0] != net.layers[0].out[0];
    }
    CHECK(distinct > 0 && mirrored > 0 && mirrored < 16);
    net_free(&net);
}

static void test_crop_refuses_a_window_larger_than_its_input(void)
{
    expect_cfg_error(NET_HEAD(4, 4, 1) "[crop]\ncrop_width=5\ncrop_height=2\n",
                     "t.cfg:6: layer 0: [crop] crop_height=2, crop_width=5: expected a window");
}

/* ---- [reorg] ---- */

/* darknet's reorg_cpu(x, w, h, c, batch, stride, forward=0, out), as blas.c writes it. */
static void darknet_reorg(const float *x, int w, int h, int c, int stride, float *out)
{
    int out_c = c / (stride * stride);
    for (int k = 0; k < c; ++k)
        for (int j = 0; j < h; ++j)
            for (int i = 0; i < w; ++i) {
                int in_index = i + w * (j + h * k);
                int c2 = k % out_c;
                int offset = k / out_c;
                int w2 = i * stride + offset % stride;
                int h2 = j * stride + offset / stride;
                int out_index = w2 + w * stride * (h2 + h * stride * c2);
                out[in_index] = x[out_index];
            }
}

static void test_reorg_is_darknets_permutation(void)
{
    Net net;
    if (build_counting(NET_HEAD(4, 6, 8) "[reorg]\nstride=2\n", &net))
        return;
    net_forward(&net);
    const Shape s = net.layers[0].out_shape;
    CHECK(s.c == 32 && s.h == 3 && s.w == 2);
    float expected[192];
    darknet_reorg(net.input, 4, 6, 8, 2, expected);
    CHECK(!memcmp(net.layers[0].out, expected, sizeof expected));
    net_free(&net);
}

static void test_reorg_refuses_sizes_its_stride_does_not_divide(void)
{
    expect_cfg_error(NET_HEAD(5, 4, 4) "[reorg]\nstride=2\n",
                     "[reorg] stride=2 must be at least 1 and divide the input's height (4) and "
                     "width (5), its square the channels (4)");
    expect_cfg_error(NET_HEAD(4, 4, 2) "[reorg]\nstride=2\n", "the channels (2)");
}

/* ---- [upsample] ---- */

static void test_upsample_repeats_each_value_times_scale(void)
{
    Net net;
    if (build_counting(NET_HEAD(2, 2, 1) "[upsample]\nstride=3\nscale=0.5\n", &net))
        return;
    net_forward(&net);
    CHECK(net.layers[0].out_shape.h == 6 && net.layers[0].out_shape.w == 6);
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 6; x++)
            CHECK(net.layers[0].out[y * 6 + x] == 0.5f * (float)((y / 3) * 2 + x / 3));
    net_free(&net);
}

static void test_negative_stride_sums_each_window_times_scale(void)
{
    /* darknet's reverse upsample: out[y][x] = scale * sum of in over the window at (2y, 2x). */
    Net net;
    if (build_counting(NET_HEAD(4, 2, 2) "[upsample]\nstride=-2\nscale=0.25\n", &net))
        return;
    net_forward(&net);
    const Shape out = net.layers[0].out_shape;
    CHECK(out.c == 2 && out.h == 1 && out.w == 2);
    for (int k = 0; k < 2; k++)
        for (int x = 0; x < 2; x++) {
            const int corner = k * 8 + 2 * x;
            const float sum = (float)(corner + corner + 1 + corner + 4 + corner + 5);
            CHECK(net.layers[0].out[k * 2 + x] == 0.25f * sum);
        }
    net_free(&net);
}

static void test_upsample_refuses_stride_0_and_uneven_downsampling(void)
{
    expect_cfg_error(NET_HEAD(4, 4, 1) "[upsample]\nstride=0\n",
                     "t.cfg:6: layer 0: [upsample] stride=0: expected a nonzero factor");
    expect_cfg_error(NET_HEAD(6, 4, 1) "[upsample]\nstride=-3\n",
                     "[upsample] stride=-3: the input's 4x6 (height x width) is not a multiple "
                     "of 3");
}

/* ---- [cost] ---- */

static void test_cost_after_softmax_passes_the_probabilities_and_loss(void)
{
    /* The same net with and without a trailing [cost]: equal outputs and loss. */
    Net with, without;
    Error e = {0};
    CHECK(net_build_from_text(&with, NET_HEAD(3, 1, 2) "[softmax]\n[cost]\ntype=sse\n", "t.cfg", 1,
                              1, &e) == CDL_OK);
    CHECK(net_build_from_text(&without, NET_HEAD(3, 1, 2) "[softmax]\n", "t.cfg", 1, 1, &e) ==
          CDL_OK);
    CHECK(net_resize(&with, 2, 0, &e) == CDL_OK && net_resize(&without, 2, 0, &e) == CDL_OK);
    for (int i = 0; i < 12; i++)
        with.input[i] = without.input[i] = sinf((float)i);
    with.labels[0] = without.labels[0] = 4;
    with.labels[1] = without.labels[1] = 1;
    with.train = without.train = 1;
    net_forward(&with);
    net_forward(&without);
    CHECK(with.classes == 6 && !memcmp(net_output(&with), net_output(&without), 12 * 4));
    CHECK(with.loss == without.loss);
    CHECK_CONTAINS(with.cfg.warnings, "t.cfg:8: warning: darknet key 'type' in [cost] is ignored");
    net_free(&with);
    net_free(&without);
}

static void test_cost_elsewhere_is_refused_naming_its_loss(void)
{
    expect_cfg_error(NET_HEAD(3, 1, 2) "[cost]\n",
                     "t.cfg:6: layer 0: unsupported section [cost] (a type=sse loss) here");
    expect_cfg_error(NET_HEAD(3, 1, 2) "[convolutional]\n[cost]\ntype=masked\n",
                     "t.cfg:7: layer 1: unsupported section [cost] (a type=masked loss) here");
    expect_cfg_error(NET_HEAD(3, 1, 2) "[softmax]\n[cost]\n[dropout]\n",
                     "t.cfg:6: layer 0: [softmax] is the loss and must be the last layer (or be "
                     "followed by darknet's [cost] alone)");
}

static void test_gradients_of_the_darknet_layers(void)
{
    gradcheck_cfg("crop", NET_HEAD(5, 4, 2) "[crop]\ncrop_width=3\ncrop_height=2\nflip=1\n");
    gradcheck_cfg("crop noadjust", NET_HEAD(4, 4, 1) "[crop]\ncrop_width=2\ncrop_height=3\n"
                                                     "noadjust=1\n");
    gradcheck_cfg("reorg", NET_HEAD(4, 2, 4) "[reorg]\nstride=2\n");
    gradcheck_cfg("upsample", NET_HEAD(2, 3, 2) "[upsample]\nstride=2\nscale=1.5\n");
    gradcheck_cfg("upsample stride=-2", NET_HEAD(4, 6, 2) "[upsample]\nstride=-2\nscale=0.5\n");
    gradcheck_cfg("crop conv softmax", NET_HEAD(5, 5, 2) "[crop]\ncrop_width=3\ncrop_height=3\n"
                                                         "[convolutional]\nfilters=3\nsize=3\n"
                                                         "[softmax]\n");
}

/* ---- sections and keys darknet has ---- */

static void test_darknet_sections_cdl_lacks_are_refused_by_name(void)
{
    expect_cfg_error(NET_HEAD(4, 4, 1) "inputs=3\n[convolutional]\n[detection]\n",
                     "t.cfg:8: unsupported section [detection]: YOLOv1's detection layer");
    expect_cfg_error(NET_HEAD(4, 4, 1) "[crnn]\n",
                     "unsupported section [crnn]: a convolutional recurrent layer");
    expect_cfg_error(NET_HEAD(4, 4, 1) "[local]\n", "unsupported section [local]");
    expect_cfg_error(NET_HEAD(4, 4, 1) "[bogus]\n",
                     "t.cfg:6: unknown section [bogus] (valid: net, convolutional");
}

static void test_darknet_keys_at_their_no_op_value_are_accepted(void)
{
    Net net;
    Error e = {0};
    CHECK(net_build_from_text(&net,
                              NET_HEAD(4, 4, 1) "[convolutional]\nbinary=0\nxnor=0.0\ndilation=1\n"
                                                "flipped=0\ndot=0\n[softmax]\ntemperature=1\n",
                              "t.cfg", 0, 1, &e) == CDL_OK);
    CHECK(net.cfg.warnings == NULL);
    net_free(&net);
}

static void test_darknet_keys_that_change_the_math_are_refused(void)
{
    expect_cfg_error(NET_HEAD(4, 4, 1) "[convolutional]\nxnor=1\n",
                     "t.cfg:7: unsupported value '1' for key 'xnor' in [convolutional]: XNOR "
                     "convolutions are not supported (cdl accepts only xnor=0)");
    expect_cfg_error(NET_HEAD(4, 4, 1) "[convolutional]\nsize=3\ndilation=2\n",
                     "key 'dilation' in [convolutional]");
    expect_cfg_error(NET_HEAD(4, 4, 1) "[softmax]\ntemperature=3\n",
                     "t.cfg:7: unsupported value '3' for key 'temperature' in [softmax]");
    expect_cfg_error(NET_HEAD(4, 4, 1) "[softmax]\ntree=9k.tree\n", "hierarchical (tree) softmax");
    expect_cfg_error(NET_HEAD(4, 4, 4) "[reorg]\nstride=2\nextra=1\n", "key 'extra' in [reorg]");
}

static void test_ignored_darknet_keys_warn_once_naming_the_first_line(void)
{
    Net net;
    Error e = {0};
    CHECK(net_build_from_text(&net,
                              NET_HEAD(6, 6, 1) "seen=64\n[crop]\ncrop_width=4\ncrop_height=4\n"
                                                "shift=.2\n[convolutional]\ndot=1\n"
                                                "[convolutional]\ndot=1\n",
                              "t.cfg", 0, 1, &e) == CDL_OK);
    const char *w = net.cfg.warnings ? net.cfg.warnings : "";
    CHECK_CONTAINS(w, "t.cfg:6: warning: darknet key 'seen' in [net] is ignored");
    CHECK_CONTAINS(w, "t.cfg:10: warning: darknet key 'shift' in [crop] is ignored: darknet's CPU "
                      "crop layer ignores it too (GPU only) (reported once)\n");
    CHECK_CONTAINS(w, "t.cfg:12: warning: darknet key 'dot' in [convolutional] is ignored");
    CHECK(!strstr(w, "t.cfg:14:"));
    net_free(&net);
}

static void test_darknet_section_aliases(void)
{
    Net net;
    Error e = {0};
    CHECK(net_build_from_text(&net, NET_HEAD(4, 4, 1) "[conv]\n[max]\n[avg]\n[conn]\n[soft]\n",
                              "t.cfg", 0, 1, &e) == CDL_OK);
    CHECK(!strcmp(net.layers[3].type->name, "connected"));
    net_free(&net);
}

/* ---- batch norm as darknet's ---- */

static void test_bn_darknet_divides_by_sqrt_var_plus_1e6(void)
{
    for (int darknet = 0; darknet <= 1; darknet++) {
        Net net;
        char text[256];
        snprintf(text, sizeof text,
                 "[net]\nwidth=1\nheight=1\nchannels=1\nbn_darknet=%d\n"
                 "[batchnorm]\n",
                 darknet);
        if (build_counting(text, &net))
            return;
        Layer *bn = &net.layers[0];
        layer_param(bn, "scales")->data[0] = 1.5f;
        layer_param(bn, "biases")->data[0] = 0.25f;
        layer_param(bn, "rolling_mean")->data[0] = -0.5f;
        layer_param(bn, "rolling_variance")->data[0] = 1e-4f;
        net.input[0] = 1.0f;
        net_forward(&net);
        const double std = darknet ? sqrt(1e-4) + 1e-6 : sqrt(1e-4 + 1e-5);
        CHECK_NEAR(bn->out[0], 1.5 * 1.5 / std + 0.25, 1e-5 * (1.5 * 1.5 / std));
        net_free(&net);
    }
    expect_cfg_error(NET_HEAD(1, 1, 1) "bn_darknet=2\n[batchnorm]\n",
                     "bad value '2' for key 'bn_darknet' in [net]: must be <= 1");
}

/* Training with bn_darknet=1 against scripts/ref/make_bn_darknet.py (darknet's forward in
 * float64, the exact gradient of it): the outputs, every gradient and the running statistics
 * moved by the default momentum 0.01, through the fused leaky and relu passes and the plain one,
 * on the reference engine and on oneDNN in plain and blocked (nChw16c/8c) layouts. */
static void test_bn_darknet_trains_as_darknets_reference(void)
{
    const char *const engines[][2] = {{"net.engine=ref", "net.dnnl_train_blocked=0"},
                                      {"net.engine=dnnl", "net.dnnl_train_blocked=0"},
                                      {"net.engine=dnnl", "net.dnnl_train_blocked=1"}};
    RefFixture f;
    CHECK(ref_fixture_load("tests/ref/bn_darknet.ref", &f) == 0);
    for (int k = 0; f.n && k < (dnnl_conv_built() ? 3 : 1); k++) {
        Net net;
        CHECK(ref_net_build(&net, &f, "tests/ref/bn_darknet.cfg", engines[k], 2, 2) == 0);
        if (!net.layers)
            continue;
        CHECK(net.hyper.bn_momentum == 0.01f);
        /* on oneDNN's blocked layouts, layer 0 (its own pass) and 2 (leaky's fused) */
        if (k == 2 && dnnl_conv_lanes_native())
            CHECK((net.layers[0].blocked & net.layers[2].blocked) >> LAYER_OUT_BIT & 1);
        ref_expect_sum_loss_grads(&f, &net, "");
        ref_expect_params(&f, &net, "after.", 0, REF_STATE_ONLY);
        net_free(&net);
    }
    ref_fixture_free(&f);
}

static void test_bn_darknet_gradients(void)
{
    gradcheck_cfg("bn_darknet conv + bn leaky",
                  NET_HEAD(4, 3, 2) "bn_darknet=1\n[convolutional]\nfilters=3\nsize=3\npad=1\n"
                                    "batch_normalize=1\nactivation=leaky\n");
    gradcheck_cfg("bn_darknet conv + bn linear, [batchnorm]",
                  NET_HEAD(3, 3, 2) "bn_darknet=1\n[convolutional]\nfilters=3\nsize=1\n"
                                    "batch_normalize=1\nactivation=linear\n[batchnorm]\n");
    gradcheck_cfg("bn_darknet connected + bn",
                  NET_HEAD(2, 2, 3) "bn_darknet=1\n[connected]\noutput=4\nbatch_normalize=1\n"
                                    "activation=linear\n");
}

/* ---- darknet's resize ---- */

static void test_resize_darknet_aligns_corners(void)
{
    /* 3 columns to 5: positions 0, .5, 1, 1.5, 2 (x * 2/4); 2 rows to 3: 0, .5, 1. */
    float in[6] = {0, 4, 8, 12, 16, 20}, out[15];
    const Image img = {1, 2, 3, in};
    resize_darknet(&img, 1, 3, 5, out);
    const float expected[15] = {0, 2, 4, 6, 8, 6, 8, 10, 12, 14, 12, 14, 16, 18, 20};
    for (int i = 0; i < 15; i++)
        CHECK_NEAR(out[i], expected[i], 1e-6);
}

static void test_resize_darknet_keeps_darknets_last_row_quirk(void)
{
    /* 8 rows to 3: h_scale = 3.5, rows at 0, 3.5 and 7 exactly. 14 rows of ones to 12: in float
     * h_scale = 13/11 and 11 * h_scale = 12.999999, so the last row is row 12 with dy = 0.999999
     * and, as darknet skips the lower row on the last one, only (1 - dy) of it: about 0. */
    float in[14] = {1, 2, 3, 4, 5, 6, 7, 8}, out[12];
    const Image tall = {1, 8, 1, in};
    resize_darknet(&tall, 1, 3, 1, out);
    CHECK(out[0] == 1 && out[1] == 4.5f && out[2] == 8);
    for (int i = 0; i < 14; i++)
        in[i] = 1.0f;
    const Image ones = {1, 14, 1, in};
    resize_darknet(&ones, 1, 12, 1, out);
    CHECK_NEAR(out[10], 1.0, 1e-6);
    CHECK(out[11] < 1e-5f);
}

static void test_letterbox_uses_darknets_resize(void)
{
    /* A 2x1 (WxH) image into a 3x3 net: resized to 3x1 (0, .5, 1 of the way), centred on
     * row 1, the rest 0.5. */
    float in[2] = {0.0f, 1.0f}, out[9];
    Image img = {1, 1, 2, in};
    Cfg cfg;
    Error e = {0};
    CHECK(cfg_parse_text("[net]\nwidth=3\nheight=3\nchannels=1\nletterbox=1\n", "t.cfg", &cfg,
                         &e) == CDL_OK);
    AugmentConfig a;
    CHECK(augment_config_parse(&cfg, &cfg.sections[0], 1, 3, 3, &a, &e) == CDL_OK);
    AugmentScratch s = {0};
    CHECK(augment_eval(&a, &img, &s, out, NULL) == CDL_OK);
    const float expected[9] = {0.5f, 0.5f, 0.5f, 0.0f, 0.5f, 1.0f, 0.5f, 0.5f, 0.5f};
    CHECK(!memcmp(out, expected, sizeof expected));
    augment_scratch_free(&s);
    cfg_free(&cfg);
}

int main(void)
{
    test_crop_takes_the_centre_window_scaled_to_minus_one_one();
    test_crop_noadjust_keeps_values();
    test_crop_training_windows_stay_inside_and_vary();
    test_crop_refuses_a_window_larger_than_its_input();
    test_reorg_is_darknets_permutation();
    test_reorg_refuses_sizes_its_stride_does_not_divide();
    test_upsample_repeats_each_value_times_scale();
    test_negative_stride_sums_each_window_times_scale();
    test_upsample_refuses_stride_0_and_uneven_downsampling();
    test_cost_after_softmax_passes_the_probabilities_and_loss();
    test_cost_elsewhere_is_refused_naming_its_loss();
    test_gradients_of_the_darknet_layers();
    test_darknet_sections_cdl_lacks_are_refused_by_name();
    test_darknet_keys_at_their_no_op_value_are_accepted();
    test_darknet_keys_that_change_the_math_are_refused();
    test_ignored_darknet_keys_warn_once_naming_the_first_line();
    test_darknet_section_aliases();
    test_bn_darknet_divides_by_sqrt_var_plus_1e6();
    test_bn_darknet_trains_as_darknets_reference();
    test_bn_darknet_gradients();
    test_resize_darknet_aligns_corners();
    test_resize_darknet_keeps_darknets_last_row_quirk();
    test_letterbox_uses_darknets_resize();
    return check_report("darknet_layers");
}
