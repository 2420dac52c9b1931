/* The layers the modern zoo's families need (issue 41): [scale_channels] (squeeze-excitation),
 * [shuffle] (ShuffleNet's channel shuffle), [pad] (explicit padding), and ConvNeXt's [drop_path]
 * (stochastic depth), [layernorm] channels=1 (LayerNorm2d) and [layer_scale], DenseNet's
 * pre-activation ([batchnorm] activation=) and bias-free convolutions ([convolutional] bias=0),
 * Inception's windowed average pooling ([avgpool] size=), a vision transformer's [tokens] and
 * [select_token]
 * ([attention] on token rows in an image net), each with values
 * derived by hand, its cfg errors, finite-difference gradient checks and a PyTorch fixture
 * (scripts/ref/make_zoo_layers.py; [drop_path]'s masks are checked by their statistics instead).
 * The hard activations are checked with the others in test_layers_misc and test_layers_dense, and
 * here inside the fixture. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu/dnnl_conv.h"
#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "gradcheck.h"
#include "layer_test.h"
#include "ref_net.h"

#define IMAGE_NET(batch, c, h, w)                                                                  \
    "[net]\nbatch=" #batch "\nchannels=" #c "\nheight=" #h "\nwidth=" #w "\n"

/* ---- [scale_channels] ---- */

/* out[b][k][i] = scale[b][k] * from[b][k][i]: layer 1 (the avgpool of layer 0's planes) scales
 * layer 0's planes. With the input 1..16 over 2 channels of 2x2 for 2 samples, each plane's mean
 * is its value + 1.5 - i % 4; the backward of all-ones deltas gives the scale's plane sum of
 * from, and from's the scale. */
static void test_scale_channels_values(void)
{
    Net net;
    if (build_test_net(IMAGE_NET(2, 2, 2, 2) "[maxpool]\nsize=1\n[avgpool]\n"
                                             "[scale_channels]\nfrom=0\n",
                       &net))
        return;
    CHECK(net.layers[2].out_shape.c == 2 && net.layers[2].out_shape.h == 2 &&
          net.layers[2].out_shape.w == 2);
    float want[16];
    for (int i = 0; i < 16; i++) {
        net.input[i] = (float)(i + 1);
        want[i] = (float)(i + 1) * (float)(i / 4 * 4 + 2.5);
    }
    net.train = 1;
    net_forward(&net);
    check_values(net.layers[2].out, want, 16, 0);
    net_zero_grads(&net);
    for (int i = 0; i < 16; i++)
        net.layers[2].delta[i] = 1.0f;
    net_backward(&net);
    /* d layer0 = scale (direct) + 1/4 of the plane sum of from (through the avgpool) */
    for (int i = 0; i < 16; i++)
        want[i] = (float)(i / 4 * 4 + 2.5) + (float)(4 * (i / 4 * 4 + 2.5)) / 4.0f;
    check_values(net.layers[0].delta, want, 16, 1e-6);
    net_free(&net);
}

static void test_scale_channels_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[scale_channels]\nfrom=-1\n",
                     "t.cfg:7: layer 0 [scale_channels]: from=-1: there is no earlier layer");
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[maxpool]\nsize=1\n[avgpool]\n[scale_channels]\n",
                     "t.cfg:9: layer 2 [scale_channels] needs key 'from'");
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[maxpool]\nsize=1\n[scale_channels]\nfrom=0\n",
                     "t.cfg:9: layer 1 [scale_channels]: the previous layer must hold one value "
                     "per channel of layer 0 (2x1x1), not 2x2x2 (CxHxW)");
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[maxpool]\nsize=1\n[route]\nlayers=0,0\n[avgpool]\n"
                                           "[scale_channels]\nfrom=0\n",
                     "of layer 0 (2x1x1), not 4x1x1");
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[avgpool]\n[scale_channels]\nfrom=0\nscale_wh=1\n",
                     "t.cfg:9: layer 1: [scale_channels] scale_wh=1: only 0 (a scale per "
                     "channel) is supported");
}

static void test_scale_channels_gradients(void)
{
    gradcheck_cfg("scale_channels (squeeze-excitation)",
                  IMAGE_NET(2, 3, 4, 5) "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                                        "activation=linear\n[avgpool]\n[convolutional]\n"
                                        "filters=2\nsize=1\nactivation=relu\n[convolutional]\n"
                                        "filters=4\nsize=1\nactivation=logistic\n"
                                        "[scale_channels]\nfrom=0\nactivation=tanh\n");
    /* from=-1: both inputs one layer, out = x^2 (one delta added to twice) */
    gradcheck_cfg("scale_channels of a layer by itself",
                  IMAGE_NET(2, 3, 2, 2) "[avgpool]\n[scale_channels]\nfrom=-1\n");
}

/* ---- [shuffle] ---- */

/* Channels 0..5 in 2 groups come out as 0 3 1 4 2 5 (torch.nn.ChannelShuffle(2)), in 3 groups as
 * 0 2 4 1 3 5; the backward sends each output plane's delta back to its source plane. */
static void test_shuffle_values(void)
{
    static const float two[6] = {0, 3, 1, 4, 2, 5}, three[6] = {0, 2, 4, 1, 3, 5};
    for (int g = 2; g <= 3; g++) {
        char text[160];
        snprintf(text, sizeof text,
                 IMAGE_NET(2, 6, 1, 2) "[maxpool]\nsize=1\n[shuffle]\ngroups=%d\n", g);
        Net net;
        if (build_test_net(text, &net))
            continue;
        const float *order = g == 2 ? two : three;
        float want[24], back[24];
        for (int i = 0; i < 24; i++) {
            const int b = i / 12, k = i / 2 % 6, x = i % 2;
            net.input[i] = (float)i;
            want[i] = (float)(b * 12 + (int)order[k] * 2 + x);
        }
        net.train = 1;
        net_forward(&net);
        check_values(net.layers[1].out, want, 24, 0);
        net_zero_grads(&net);
        for (int i = 0; i < 24; i++)
            net.layers[1].delta[i] = (float)(100 + i);
        net_backward(&net);
        for (int i = 0; i < 24; i++)
            back[(int)want[i]] = (float)(100 + i);
        check_values(net.layers[0].delta, back, 24, 0);
        net_free(&net);
    }
}

static void test_shuffle_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 6, 2, 2) "[shuffle]\ngroups=4\n",
                     "t.cfg:7: layer 0: [shuffle] groups=4: expected a positive divisor of the "
                     "input's channels");
    expect_cfg_error(IMAGE_NET(1, 6, 2, 2) "[shuffle]\ngroups=0\n", "groups=0: expected");
}

static void test_shuffle_gradients(void)
{
    gradcheck_cfg("shuffle between grouped convolutions",
                  IMAGE_NET(2, 4, 3, 4) "[convolutional]\nfilters=6\nsize=1\ngroups=2\n"
                                        "activation=linear\n[shuffle]\ngroups=3\n"
                                        "[convolutional]\nfilters=4\nsize=3\npad=1\ngroups=2\n"
                                        "activation=linear\n");
}

/* ---- [pad] ---- */

/* A 2x3 plane padded by top 1, bottom 0, left 2, right 1 with value -1 is 3x6, the plane at row 1,
 * column 2; the backward takes that window of the delta. */
static void test_pad_values(void)
{
    Net net;
    if (build_test_net(IMAGE_NET(1, 1, 2, 3) "[maxpool]\nsize=1\n[pad]\ntop=1\nbottom=0\n"
                                             "left=2\nright=1\nvalue=-1\n",
                       &net))
        return;
    CHECK(net.layers[1].out_shape.c == 1 && net.layers[1].out_shape.h == 3 &&
          net.layers[1].out_shape.w == 6);
    const float want[18] = {-1, -1, -1, -1, -1, -1, -1, -1, 1, 2, 3, -1, -1, -1, 4, 5, 6, -1};
    for (int i = 0; i < 6; i++)
        net.input[i] = (float)(i + 1);
    net.train = 1;
    net_forward(&net);
    check_values(net.layers[1].out, want, 18, 0);
    net_zero_grads(&net);
    for (int i = 0; i < 18; i++)
        net.layers[1].delta[i] = (float)i;
    net_backward(&net);
    const float back[6] = {8, 9, 10, 14, 15, 16};
    check_values(net.layers[0].delta, back, 6, 0);
    net_free(&net);
}

static void test_pad_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 1, 2, 3) "[pad]\nleft=-1\n",
                     "t.cfg:7: bad value '-1' for key 'left' in [pad]: must be >= 0");
    expect_cfg_error(IMAGE_NET(1, 1, 2, 3) "[pad]\npadding=-2\n",
                     "t.cfg:7: bad value '-2' for key 'padding' in [pad]: must be >= 0");
}

static void test_pad_gradients(void)
{
    gradcheck_cfg("pad between convolutions",
                  IMAGE_NET(2, 2, 3, 4) "[convolutional]\nfilters=3\nsize=1\nactivation=linear\n"
                                        "[pad]\ntop=2\nright=1\nvalue=0.25\n"
                                        "[convolutional]\nfilters=2\nsize=3\nactivation=tanh\n");
}

/* ---- [drop_path] ---- */

/* torchvision's StochasticDepth(p, "row") in training: each of 4000 samples of 3 values kept whole,
 * times exactly 1/(1-p) in float, or dropped whole; the kept share within 4 standard deviations of
 * 1 - p (sqrt(p(1-p)/4000) = 0.0068 for p = 0.25); the backward sends each sample's delta through
 * its own factor. In inference, and with probability=0, the identity. */
static void test_drop_path_masks(void)
{
    enum { N = 4000, V = 3 };
    const float p = 0.25f, scale = 1.0f / (1.0f - p);
    Net net;
    if (build_test_net(IMAGE_NET(4000, 3, 1, 1) "[maxpool]\nsize=1\n[drop_path]\n"
                                                "probability=0.25\n",
                       &net))
        return;
    for (int i = 0; i < N * V; i++)
        net.input[i] = (float)(i % 7) - 2.5f;
    net.train = 1;
    net_forward(&net);
    const float *out = net.layers[1].out;
    int kept = 0, whole = 1, exact = 1;
    for (int b = 0; b < N; b++) {
        const int keeps = out[b * V] != 0.0f;
        kept += keeps;
        for (int j = 0; j < V; j++) {
            const float x = net.input[b * V + j];
            whole &= (out[b * V + j] != 0.0f) == keeps;
            exact &= out[b * V + j] == (keeps ? x * scale : 0.0f);
        }
    }
    CHECK(whole);
    CHECK(exact);
    CHECK_NEAR((double)kept / N, 1.0 - p, 4 * sqrt(p * (1.0 - p) / N));
    net_zero_grads(&net);
    for (int i = 0; i < N * V; i++)
        net.layers[1].delta[i] = 1.0f;
    net_backward(&net);
    int back = 1;
    for (int i = 0; i < N * V; i++)
        back &= net.layers[0].delta[i] == (out[i / V * V] != 0.0f ? scale : 0.0f);
    CHECK(back);
    net.train = 0;
    net_forward(&net);
    check_values(net.layers[1].out, net.input, N * V, 0);
    net_free(&net);

    if (build_test_net(IMAGE_NET(8, 3, 1, 1) "[maxpool]\nsize=1\n[drop_path]\nprobability=0\n",
                       &net))
        return;
    for (int i = 0; i < 8 * V; i++)
        net.input[i] = (float)i;
    net.train = 1;
    net_forward(&net);
    check_values(net.layers[1].out, net.input, 8 * V, 0);
    net_free(&net);
}

static void test_drop_path_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[drop_path]\nprobability=1\n",
                     "t.cfg:7: bad value '1' for key 'probability' in [drop_path]: expected a "
                     "number in [0, 1)");
}

static void test_drop_path_gradients(void)
{
    gradcheck_cfg("drop_path on a residual branch",
                  IMAGE_NET(6, 3, 3, 4) "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                                        "activation=linear\n[convolutional]\nfilters=4\nsize=1\n"
                                        "activation=tanh\n[drop_path]\nprobability=0.5\n"
                                        "[shortcut]\nfrom=0\n");
}

/* ---- [layernorm] channels=1 ---- */

/* Each position's 2 channels (a, b) normalise to (+-d, -+d) / sqrt(d^2 + eps), d = (a - b) / 2,
 * whatever the other positions hold; scales 1 and biases 0 at the start. */
static void test_layernorm_channels_values(void)
{
    Net net;
    if (build_test_net(IMAGE_NET(1, 2, 1, 3) "[maxpool]\nsize=1\n[layernorm]\nchannels=1\n"
                                             "eps=0.25\n",
                       &net))
        return;
    CHECK(net.layers[1].params[0].count == 2);
    const float in[6] = {1, 5, -2, 3, 5, 6}; /* channel 0: 1 5 -2, channel 1: 3 5 6 */
    for (int i = 0; i < 6; i++)
        net.input[i] = in[i];
    net.train = 1;
    net_forward(&net);
    float want[6];
    for (int p = 0; p < 3; p++) {
        const float d = (in[p] - in[3 + p]) / 2.0f;
        want[p] = d / sqrtf(d * d + 0.25f);
        want[3 + p] = -want[p];
    }
    check_values(net.layers[1].out, want, 6, 1e-6);
    net_free(&net);
}

static void test_layernorm_channels_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[layernorm]\nchannels=2\n",
                     "t.cfg:7: bad value '2' for key 'channels' in [layernorm]: expected 0 or 1");
    expect_cfg_error("[net]\nbatch=1\nseq=4\ninputs=3\n[layernorm]\nchannels=1\n",
                     "t.cfg:6: layer 0: [layernorm] channels=1: a sequence net normalises each "
                     "token's features (channels=0)");
}

static void test_layernorm_channels_gradients(void)
{
    gradcheck_cfg("layernorm channels=1 between convolutions",
                  IMAGE_NET(2, 3, 3, 4) "[convolutional]\nfilters=5\nsize=3\npad=1\n"
                                        "activation=linear\n[layernorm]\nchannels=1\n"
                                        "[convolutional]\nfilters=3\nsize=1\nactivation=tanh\n");
}

/* ---- [layer_scale] ---- */

/* scales start at init (ConvNeXt's 1e-6 by default); out[b][k][i] = scales[k] * in[b][k][i], and
 * the backward of all-ones deltas gives in's scales and scales' sums of in. In a sequence net the
 * scales are per feature of a token. */
static void test_layer_scale_values(void)
{
    Net net;
    if (build_test_net(IMAGE_NET(2, 2, 1, 2) "[maxpool]\nsize=1\n[layer_scale]\n", &net))
        return;
    CHECK(net.layers[1].params[0].count == 2 && net.layers[1].params[0].data[0] == 1e-6f);
    set_param(&net.layers[1], "scales", (const float[]){2, -3}, 2);
    for (int i = 0; i < 8; i++)
        net.input[i] = (float)(i + 1);
    net.train = 1;
    net_forward(&net);
    check_values(net.layers[1].out, (const float[]){2, 4, -9, -12, 10, 12, -21, -24}, 8, 0);
    net_zero_grads(&net);
    for (int i = 0; i < 8; i++)
        net.layers[1].delta[i] = 1.0f;
    net_backward(&net);
    check_values(net.layers[0].delta, (const float[]){2, 2, -3, -3, 2, 2, -3, -3}, 8, 0);
    check_values(net.layers[1].params[0].grad, (const float[]){1 + 2 + 5 + 6, 3 + 4 + 7 + 8}, 2, 0);
    net_free(&net);

    if (build_test_net("[net]\nbatch=1\nseq=2\ninputs=3\n[layer_scale]\ninit=0.5\n", &net))
        return;
    CHECK(net.layers[0].params[0].count == 3);
    set_param(&net.layers[0], "scales", (const float[]){1, 2, 3}, 3);
    for (int i = 0; i < 6; i++)
        net.input[i] = 1.0f;
    net_forward(&net);
    check_values(net.layers[0].out, (const float[]){1, 2, 3, 1, 2, 3}, 6, 0);
    net_free(&net);
}

static void test_layer_scale_gradients(void)
{
    gradcheck_cfg("layer_scale after a convolution",
                  IMAGE_NET(2, 3, 3, 4) "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                                        "activation=linear\n[layer_scale]\ninit=0.5\n"
                                        "[convolutional]\nfilters=2\nsize=1\nactivation=tanh\n");
    gradcheck_cfg("layer_scale on tokens", "[net]\nbatch=2\nseq=3\ninputs=4\n[linear]\noutput=5\n"
                                           "[layer_scale]\ninit=0.5\n[linear]\noutput=4\n");
}

/* ---- [batchnorm] activation= ---- */

/* In inference, with the running statistics of the start (mean 0, variance 1), scales 1 and shifts
 * 0, out = act(x / sqrt(1 + eps)): relu zeroes the negative half, leaky scales it by 0.1. */
static void test_batchnorm_activation_values(void)
{
    const float in[6] = {-3, -1, 0, 0.5f, 2, 4}, s = 1.0f / sqrtf(1.0f + 1e-5f);
    for (int leaky = 0; leaky <= 1; leaky++) {
        Net net;
        if (build_test_net(leaky ? IMAGE_NET(1, 1, 2, 3) "[batchnorm]\nactivation=leaky\n"
                                 : IMAGE_NET(1, 1, 2, 3) "[batchnorm]\nactivation=relu\n",
                           &net))
            continue;
        float want[6];
        for (int i = 0; i < 6; i++) {
            net.input[i] = in[i];
            want[i] = in[i] * s * (in[i] < 0 ? (leaky ? 0.1f : 0.0f) : 1.0f);
        }
        net_forward(&net);
        check_values(net.layers[0].out, want, 6, 1e-6);
        net_free(&net);
    }
}

static void test_batchnorm_activation_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[batchnorm]\nactivation=softish\n",
                     "t.cfg:7: bad value 'softish' for key 'activation' in [batchnorm]");
}

/* relu and leaky take the training passes fused into the batch norm's; swish (whose derivative
 * reads its input) and tanh the separate activation step; on the net input and on a route. */
static void test_batchnorm_activation_gradients(void)
{
    gradcheck_cfg("batchnorm relu between convolutions",
                  IMAGE_NET(3, 3, 3, 4) "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                                        "activation=linear\n[batchnorm]\nactivation=relu\n"
                                        "[convolutional]\nfilters=3\nsize=1\nactivation=tanh\n");
    gradcheck_cfg("batchnorm leaky and swish on the net input",
                  IMAGE_NET(3, 2, 3, 3) "[batchnorm]\nactivation=leaky\n[batchnorm]\n"
                                        "activation=swish\n[convolutional]\nfilters=2\nsize=1\n"
                                        "activation=linear\n");
    gradcheck_cfg("batchnorm tanh on a route (DenseNet's concatenation)",
                  IMAGE_NET(2, 2, 3, 3) "[convolutional]\nfilters=3\nsize=3\npad=1\n"
                                        "activation=linear\n[convolutional]\nfilters=2\nsize=1\n"
                                        "activation=linear\n[route]\nlayers=0,1\n"
                                        "[batchnorm]\nactivation=tanh\n");
}

/* ---- [convolutional] bias=0 ---- */

/* A bias-free 1x1 convolution of weight 2 and -1 over 2 channels has only its weights: out =
 * 2*a - b per position; the backward of deltas 1..4 gives the weights the sums of delta*input. */
static void test_conv_bias_free_values(void)
{
    Net net;
    if (build_test_net(IMAGE_NET(1, 2, 1, 2) "[convolutional]\nfilters=1\nsize=1\nbias=0\n"
                                             "activation=linear\n",
                       &net))
        return;
    CHECK(net.layers[0].n_params == 1 && net.n_params == 2);
    set_param(&net.layers[0], "weights", (const float[]){2, -1}, 2);
    for (int i = 0; i < 4; i++)
        net.input[i] = (float)(i + 1); /* channel 0: 1 2, channel 1: 3 4 */
    net.train = 1;
    net_forward(&net);
    check_values(net.layers[0].out, (const float[]){-1, 0}, 2, 0);
    net_zero_grads(&net);
    net.layers[0].delta[0] = 1.0f;
    net.layers[0].delta[1] = 10.0f;
    net_backward(&net);
    check_values(net.layers[0].params[0].grad, (const float[]){21, 43}, 2, 0);
    net_free(&net);
}

static void test_conv_bias_free_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[convolutional]\nbias=2\n",
                     "t.cfg:7: layer 0: [convolutional] bias=2: expected 0 or 1");
}

static void test_conv_bias_free_gradients(void)
{
    gradcheck_cfg("bias-free convolutions, 3x3 tanh and 1x1 linear",
                  IMAGE_NET(2, 3, 4, 5) "[convolutional]\nfilters=4\nsize=3\npad=1\nbias=0\n"
                                        "activation=tanh\n[convolutional]\nfilters=2\nsize=1\n"
                                        "bias=0\nactivation=linear\n");
}

/* ---- [avgpool] size= ---- */

/* A 3x3 average with stride 1 and padding 1 over the 2x3 plane 1..6 divides each clipped window's
 * sum by 9 (torch's count_include_pad): the corner (0, 0) sums 1 2 4 5; the backward of deltas
 * of 9 gives each input the number of windows holding it (4 in a corner column, 6 in the middle
 * one). */
static void test_avgpool_window_values(void)
{
    Net net;
    if (build_test_net(IMAGE_NET(1, 1, 2, 3) "[maxpool]\nsize=1\n[avgpool]\nsize=3\nstride=1\n"
                                             "padding=1\n",
                       &net))
        return;
    CHECK(net.layers[1].out_shape.h == 2 && net.layers[1].out_shape.w == 3);
    for (int i = 0; i < 6; i++)
        net.input[i] = (float)(i + 1);
    net.train = 1;
    net_forward(&net);
    check_values(net.layers[1].out,
                 (const float[]){12 / 9.0f, 21 / 9.0f, 16 / 9.0f, 12 / 9.0f, 21 / 9.0f, 16 / 9.0f},
                 6, 1e-6);
    net_zero_grads(&net);
    for (int i = 0; i < 6; i++)
        net.layers[1].delta[i] = 9.0f;
    net_backward(&net);
    check_values(net.layers[0].delta, (const float[]){4, 6, 4, 4, 6, 4}, 6, 1e-6);
    net_free(&net);

    /* size alone: stride size, torch's default: 2x2 windows of a 2x4 plane */
    if (build_test_net(IMAGE_NET(1, 1, 2, 4) "[avgpool]\nsize=2\n", &net))
        return;
    CHECK(net.layers[0].out_shape.h == 1 && net.layers[0].out_shape.w == 2);
    for (int i = 0; i < 8; i++)
        net.input[i] = (float)(i + 1);
    net_forward(&net);
    check_values(net.layers[0].out, (const float[]){3.5f, 5.5f}, 2, 0);
    net_free(&net);
}

static void test_avgpool_window_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 2, 4, 4) "[avgpool]\nsize=3\npadding=2\n",
                     "t.cfg:8: bad value '2' for key 'padding' in [avgpool]: must be at most "
                     "size/2, as torch's");
    expect_cfg_error(IMAGE_NET(1, 2, 4, 4) "[avgpool]\nstride=2\n",
                     "t.cfg:7: bad value '2' for key 'stride' in [avgpool]: needs a window: give "
                     "size (without it the pooling is global)");
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[avgpool]\nsize=5\npadding=1\n",
                     "t.cfg:6: layer 0 [avgpool]: empty output: the 2x2 input plus padding 1 on "
                     "each side is smaller than the window size 5");
    expect_cfg_error(IMAGE_NET(1, 2, 4, 4) "[avgpool]\nsize=-1\n", "'size' in [avgpool]");
}

static void test_avgpool_window_gradients(void)
{
    gradcheck_cfg("avgpool 3x3 stride 1 padding 1, then 3x3 stride 2 padding 1",
                  IMAGE_NET(2, 3, 5, 6) "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                                        "activation=tanh\n[avgpool]\nsize=3\nstride=1\n"
                                        "padding=1\n[avgpool]\nsize=3\nstride=2\npadding=1\n"
                                        "[connected]\noutput=3\nactivation=tanh\n");
}

/* ---- [tokens] ---- */

/* A 2-channel 1x2 map per sample becomes 1 + 2 tokens of 2 features: the class token, then the
 * positions' channel pairs, each plus its position's embedding. The backward sends each token's
 * delta to its position's channels, the class token the batch's sums of row 0, the embedding the
 * batch's sums of every row. */
static void test_tokens_values(void)
{
    Net net;
    if (build_test_net(IMAGE_NET(2, 2, 1, 2) "[maxpool]\nsize=1\n[tokens]\nclass_token=1\n"
                                             "positional=1\n",
                       &net))
        return;
    const Layer *t = &net.layers[1];
    CHECK(t->out_shape.c == 1 && t->out_shape.h == 3 && t->out_shape.w == 2);
    CHECK(t->params[0].count == 2 && t->params[0].data[0] == 0.0f && t->params[1].count == 6);
    set_param(&net.layers[1], "class_token", (const float[]){10, 20}, 2);
    set_param(&net.layers[1], "positional", (const float[]){1, 2, 3, 4, 5, 6}, 6);
    for (int i = 0; i < 8; i++)
        net.input[i] = (float)(100 * (i + 1)); /* sample 0: channel 0 100 200, channel 1 300 400 */
    net.train = 1;
    net_forward(&net);
    check_values(net.layers[1].out,
                 (const float[]){11, 22, 103, 304, 205, 406, 11, 22, 503, 704, 605, 806}, 12, 0);
    net_zero_grads(&net);
    for (int i = 0; i < 12; i++)
        net.layers[1].delta[i] = (float)i;
    net_backward(&net);
    check_values(net.layers[0].delta, (const float[]){2, 4, 3, 5, 8, 10, 9, 11}, 8, 0);
    check_values(net.layers[1].params[0].grad, (const float[]){0 + 6, 1 + 7}, 2, 0);
    check_values(net.layers[1].params[1].grad, (const float[]){6, 8, 10, 12, 14, 16}, 6, 0);
    net_free(&net);

    if (build_test_net(IMAGE_NET(1, 3, 2, 2) "[tokens]\n", &net))
        return;
    CHECK(net.layers[0].n_params == 0 && net.layers[0].out_shape.h == 4 &&
          net.layers[0].out_shape.w == 3);
    net_free(&net);
}

static void test_tokens_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 2, 2, 2) "[tokens]\nclass_token=2\n",
                     "t.cfg:7: bad value '2' for key 'class_token' in [tokens]: expected 0 or 1");
    expect_cfg_error("[net]\nbatch=1\nseq=4\ninputs=3\n[tokens]\n",
                     "t.cfg:5: layer 0: [tokens] turns an image net's map into tokens; a sequence "
                     "net has them already");
}

static void test_tokens_gradients(void)
{
    gradcheck_cfg("tokens between a patch embedding and a layer norm",
                  IMAGE_NET(2, 3, 4, 6) "[convolutional]\nfilters=5\nsize=2\nstride=2\n"
                                        "activation=linear\n[tokens]\nclass_token=1\n"
                                        "positional=1\n[layernorm]\n[connected]\noutput=3\n"
                                        "activation=tanh\n");
}

/* ---- [select_token] ---- */

/* Row 1 of each sample's 3 tokens of 2 features; the backward adds the delta into that row. */
static void test_select_token_values(void)
{
    Net net;
    if (build_test_net(IMAGE_NET(2, 1, 3, 2) "[maxpool]\nsize=1\n[select_token]\nindex=1\n", &net))
        return;
    CHECK(net.layers[1].out_shape.c == 1 && net.layers[1].out_shape.h == 1 &&
          net.layers[1].out_shape.w == 2);
    for (int i = 0; i < 12; i++)
        net.input[i] = (float)i;
    net.train = 1;
    net_forward(&net);
    check_values(net.layers[1].out, (const float[]){2, 3, 8, 9}, 4, 0);
    net_zero_grads(&net);
    for (int i = 0; i < 4; i++)
        net.layers[1].delta[i] = (float)(10 + i);
    net_backward(&net);
    check_values(net.layers[0].delta, (const float[]){0, 0, 10, 11, 0, 0, 0, 0, 12, 13, 0, 0}, 12,
                 0);
    net_free(&net);
}

static void test_select_token_errors(void)
{
    expect_cfg_error(IMAGE_NET(1, 1, 3, 2) "[select_token]\nindex=3\n",
                     "t.cfg:7: layer 0: [select_token] index=3: expected a token of the input, "
                     "0..T-1");
    expect_cfg_error(IMAGE_NET(1, 2, 3, 2) "[select_token]\n",
                     "t.cfg:6: layer 0: [select_token] needs token rows (one channel of T "
                     "tokens), not 2x3x2 (CxHxW)");
}

static void test_vit_block_gradients(void)
{
    gradcheck_cfg("a vision transformer's block and head on [tokens]",
                  IMAGE_NET(2, 3, 4, 6) "[convolutional]\nfilters=4\nsize=2\nstride=2\n"
                                        "activation=linear\n[tokens]\nclass_token=1\n"
                                        "positional=1\n[layernorm]\n[attention]\nheads=2\n"
                                        "causal=0\n[shortcut]\nfrom=1\n[linear]\noutput=8\n"
                                        "activation=gelu\n[linear]\noutput=4\n[shortcut]\n"
                                        "from=4\n[select_token]\n[connected]\noutput=3\n"
                                        "activation=tanh\n");
}

/* ---- a branch nothing reads (Inception v3's auxiliary classifier) ---- */

/* Layers whose output no later layer reads compute, take no gradient and pass none back: the
 * finite differences of their parameters are 0, and their input's gradient is the other
 * branches' alone (cfg/inception_v3.cfg's AuxLogits). */
static void test_unread_branch_gradients(void)
{
    gradcheck_cfg("an unread branch beside the net",
                  IMAGE_NET(2, 3, 6, 5) "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                                        "activation=tanh\n[avgpool]\nsize=3\nstride=2\n"
                                        "[convolutional]\nfilters=3\nsize=1\n"
                                        "batch_normalize=1\nactivation=relu\n[avgpool]\n"
                                        "[connected]\noutput=5\nactivation=linear\n"
                                        "[route]\nlayers=-5\n[convolutional]\nfilters=2\n"
                                        "size=1,3\npadding=0,1\nactivation=tanh\n"
                                        "[connected]\noutput=3\nactivation=linear\n");
}

/* ---- PyTorch ---- */

/* Inception v3's non-square convolutions against torch on each CPU engine: the reference
 * (im2col + gemm) and oneDNN (where built; engine=dnnl falls back to the reference otherwise). */
static void test_inception_convs_match_pytorch_on_each_engine(void)
{
    static const char *const engines[] = {"net.engine=ref", "net.engine=dnnl"};
    RefFixture f;
    const int loaded = ref_fixture_load("tests/ref/inception_convs.ref", &f) == 0;
    CHECK(loaded);
    if (!loaded)
        return;
    for (int k = 0; k < 2; k++) {
        Net net;
        const int built =
            ref_net_build(&net, &f, "tests/ref/inception_convs.cfg", &engines[k], 1, 2) == 0;
        CHECK(built);
        if (!built)
            continue;
        if (k == 1 && dnnl_conv_built())
            for (int i = 0; i < net.n_layers; i++)
                CHECK(net.layers[i].engine && !strcmp(net.layers[i].engine, "dnnl"));
        ref_expect_sum_loss_grads(&f, &net, "");
        net_free(&net);
    }
    ref_fixture_free(&f);
}

static void test_matches_pytorch(void)
{
    ref_expect_sum_loss_fixture("se_block", 2);
    ref_expect_sum_loss_fixture("shuffle_unit", 2);
    ref_expect_sum_loss_fixture("pad_conv", 2);
    ref_expect_sum_loss_fixture("convnext_block", 2);
    ref_expect_sum_loss_fixture("dense_layer", 2);
    ref_expect_sum_loss_fixture("dense_transition", 2);
    ref_expect_sum_loss_fixture("inception_pools", 2);
    ref_expect_sum_loss_fixture("vit_embed", 2);
    ref_expect_sum_loss_fixture("vit_block", 2);
}

int main(void)
{
    test_unread_branch_gradients();
    test_inception_convs_match_pytorch_on_each_engine();
    test_scale_channels_values();
    test_scale_channels_errors();
    test_scale_channels_gradients();
    test_shuffle_values();
    test_shuffle_errors();
    test_shuffle_gradients();
    test_pad_values();
    test_pad_errors();
    test_pad_gradients();
    test_drop_path_masks();
    test_drop_path_errors();
    test_drop_path_gradients();
    test_layernorm_channels_values();
    test_layernorm_channels_errors();
    test_layernorm_channels_gradients();
    test_layer_scale_values();
    test_layer_scale_gradients();
    test_batchnorm_activation_values();
    test_batchnorm_activation_errors();
    test_batchnorm_activation_gradients();
    test_conv_bias_free_values();
    test_conv_bias_free_errors();
    test_conv_bias_free_gradients();
    test_avgpool_window_values();
    test_avgpool_window_errors();
    test_avgpool_window_gradients();
    test_tokens_values();
    test_tokens_errors();
    test_tokens_gradients();
    test_select_token_values();
    test_select_token_errors();
    test_vit_block_gradients();
    test_matches_pytorch();
    return check_report("test_zoo_layers");
}
