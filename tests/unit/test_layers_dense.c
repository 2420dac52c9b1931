/* Dense layers ([convolutional], [connected], [batchnorm]) and their kernels (im2col,
 * col2im, batch norm): gradient checks, hand-derived values, shapes and cfg errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "backend/cpu/im2col.h"
#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "gradcheck.h"
#include "layer_test.h"

/* ---- gradient checks ---- */

#define NET(batch, c, h, w)                                                                        \
    "[net]\nbatch=" #batch "\nwidth=" #w "\nheight=" #h "\nchannels=" #c "\n"

static void test_gradcheck_convolutions(void)
{
    gradcheck_cfg("conv 3x3 pad 1",
                  NET(2, 3, 5, 5) "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=linear\n");
    gradcheck_cfg("conv 3x3 pad 1 + bn", NET(2, 3, 5, 5) "[convolutional]\nfilters=4\nsize=3\n"
                                                         "pad=1\nbatch_normalize=1\n"
                                                         "activation=linear\n");
    gradcheck_cfg("conv stride 2", NET(2, 2, 7, 6) "[convolutional]\nfilters=3\nsize=3\n"
                                                   "stride=2\npad=1\nactivation=linear\n");
    gradcheck_cfg("conv groups=2", NET(2, 4, 5, 5) "[convolutional]\nfilters=6\nsize=3\n"
                                                   "pad=1\ngroups=2\nactivation=linear\n");
    gradcheck_cfg("conv depthwise", NET(2, 3, 5, 5) "[convolutional]\nfilters=3\nsize=3\n"
                                                    "pad=1\ngroups=3\nbatch_normalize=1\n"
                                                    "activation=linear\n");
    gradcheck_cfg("conv 1x1 direct", NET(2, 3, 4, 5) "[convolutional]\nfilters=5\nsize=1\n"
                                                     "activation=linear\n");
    gradcheck_cfg("conv 1x1 direct groups + bn",
                  NET(2, 4, 3, 3) "[convolutional]\nfilters=2\nsize=1\ngroups=2\n"
                                  "batch_normalize=1\nactivation=linear\n");
    gradcheck_cfg("conv 1x1 stride 2", NET(2, 3, 5, 5) "[convolutional]\nfilters=2\nsize=1\n"
                                                       "stride=2\nactivation=linear\n");
    gradcheck_cfg("conv 5x5 padding=0", NET(2, 2, 7, 8) "[convolutional]\nfilters=3\nsize=5\n"
                                                        "padding=0\nactivation=linear\n");
    gradcheck_cfg("conv 3x3 padding=2 stride 3",
                  NET(2, 2, 7, 7) "[convolutional]\nfilters=2\nsize=3\npadding=2\nstride=3\n"
                                  "activation=linear\n");
    gradcheck_cfg("conv batch 6", NET(6, 2, 4, 4) "[convolutional]\nfilters=3\nsize=3\n"
                                                  "pad=1\nactivation=linear\n");
    gradcheck_cfg("depthwise x2 stride 2",
                  NET(2, 2, 6, 5) "[convolutional]\nfilters=4\nsize=3\nstride=2\npad=1\n"
                                  "groups=2\nactivation=linear\n");
    gradcheck_cfg("conv stack", NET(2, 2, 6, 6) "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                                                "batch_normalize=1\nactivation=leaky\n"
                                                "[convolutional]\nfilters=3\nsize=3\nstride=2\n"
                                                "pad=1\nactivation=tanh\n");
    /* non-square kernels: size, stride and padding per axis (height,width) */
    gradcheck_cfg("conv 1x7 padding 0,3", NET(2, 3, 5, 8) "[convolutional]\nfilters=4\n"
                                                          "size=1,7\npadding=0,3\n"
                                                          "activation=linear\n");
    gradcheck_cfg("conv 7x1 padding 3,0 + bn", NET(2, 3, 8, 5) "[convolutional]\nfilters=4\n"
                                                               "size=7,1\npadding=3,0\n"
                                                               "batch_normalize=1\n"
                                                               "activation=linear\n");
    gradcheck_cfg("conv 1x3 pad=1 stride 2,1", NET(2, 2, 7, 6) "[convolutional]\nfilters=3\n"
                                                               "size=1,3\npad=1\nstride=2,1\n"
                                                               "activation=linear\n");
    gradcheck_cfg("conv 3x1 stride 1,3 padding 2,1", NET(2, 2, 6, 8) "[convolutional]\n"
                                                                     "filters=3\nsize=3,1\n"
                                                                     "stride=1,3\npadding=2,1\n"
                                                                     "activation=linear\n");
    gradcheck_cfg("conv 1x3 groups=2", NET(2, 4, 5, 5) "[convolutional]\nfilters=6\nsize=1,3\n"
                                                       "padding=0,1\ngroups=2\n"
                                                       "activation=linear\n");
    /* [net] winograd=1 (the default) takes 3x3 same convolutions of 16 or more channels and
     * filters on maps of 4 or more pixels a side (odd maps: test_winograd), in training from
     * winograd_min_tiles output tiles a pass (0 here: any); larger nets are compared with
     * winograd=0 below (central differences in float32 miss by more there). */
    gradcheck_cfg("conv winograd 8x4", NET(3, 16, 8, 4) "winograd_min_tiles=0\n"
                                                        "[convolutional]\nfilters=16\nsize=3\n"
                                                        "pad=1\nactivation=linear\n");
}

static void test_gradcheck_activations_through_conv(void)
{
    static const char *const names[] = {"linear", "relu", "leaky",     "logistic",
                                        "tanh",   "elu",  "relu6",     "gelu",
                                        "swish",  "mish", "hardswish", "hardsigmoid"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char text[512], label[64];
        snprintf(text, sizeof text,
                 NET(2, 2, 4, 4) "[convolutional]\nfilters=3\nsize=3\npad=1\nactivation=%s\n",
                 names[i]);
        snprintf(label, sizeof label, "conv activation=%s", names[i]);
        gradcheck_cfg(label, text);
        snprintf(text, sizeof text,
                 NET(3, 2, 3, 3) "[convolutional]\nfilters=2\nsize=3\npad=1\n"
                                 "batch_normalize=1\nactivation=%s\n",
                 names[i]);
        snprintf(label, sizeof label, "conv+bn activation=%s", names[i]);
        gradcheck_cfg(label, text);
    }
}

static void test_gradcheck_connected_and_batchnorm(void)
{
    gradcheck_cfg("connected", NET(3, 2, 3, 3) "[connected]\noutput=5\nactivation=linear\n");
    gradcheck_cfg("connected logistic", NET(3, 2, 2, 2) "[connected]\noutput=4\n");
    gradcheck_cfg("connected + bn", NET(4, 3, 2, 2) "[connected]\noutput=5\nbatch_normalize=1\n"
                                                    "activation=linear\n");
    gradcheck_cfg("connected after conv",
                  NET(2, 2, 4, 4) "[convolutional]\nfilters=3\nsize=3\nstride=2\npad=1\n"
                                  "activation=leaky\n[connected]\noutput=4\nactivation=tanh\n");
    gradcheck_cfg("batchnorm", NET(3, 3, 4, 5) "[batchnorm]\n");
    gradcheck_cfg("conv + batchnorm", NET(2, 2, 4, 4) "[convolutional]\nfilters=3\nsize=3\n"
                                                      "pad=1\nactivation=linear\n[batchnorm]\n");
}

/* Runs forward and backward of text at `threads` OpenMP threads with a fixed input and
 * output gradient; returns the weight gradients followed by dL/d(input) (malloc'd). */
static float *grads_at_threads(const char *text, int threads, size_t *n)
{
    Net net;
    Error e = {0};
    *n = 0;
    omp_set_num_threads(threads); /* before net_resize, which sizes per-thread buffers */
    if (net_build_from_text(&net, text, "t.cfg", 1, 3, &e)) {
        fprintf(stderr, "cannot build: %s\n", e.msg);
        return NULL;
    }
    if (net_resize(&net, net.hyper.batch, 1, &e)) {
        fprintf(stderr, "cannot resize: %s\n", e.msg);
        net_free(&net);
        return NULL;
    }
    const size_t in_n = (size_t)net.batch * shape_size(net.in_shape);
    Layer *last = &net.layers[net.n_layers - 1];
    const size_t out_n = (size_t)net.batch * shape_size(last->out_shape);
    Rng rng;
    rng_seed(&rng, 9, 0);
    for (size_t i = 0; i < in_n; i++)
        net.input[i] = rng_normal(&rng);
    net.train = 1;
    net_zero_grads(&net);
    net_forward(&net);
    for (size_t i = 0; i < out_n; i++)
        last->delta[i] = rng_normal(&rng);
    net_backward(&net);
    float *all = malloc((net.n_params + in_n + out_n) * sizeof *all);
    memcpy(all, net.grads, net.n_params * sizeof *all);
    memcpy(all + net.n_params, net.input_delta, in_n * sizeof *all);
    memcpy(all + net.n_params + in_n, last->out, out_n * sizeof *all);
    *n = net.n_params + in_n + out_n;
    net_free(&net);
    return all;
}

/* The image-parallel paths (per-thread weight gradients, one scratch slice per image) and
 * the image-by-image path agree to float round-off. */
static void test_conv_results_do_not_depend_on_thread_count(void)
{
    static const char *const cfgs[] = {
        NET(6, 3, 7, 7) "[convolutional]\nfilters=6\nsize=3\npad=1\nbatch_normalize=1\n"
                        "activation=leaky\n[convolutional]\nfilters=4\nsize=3\nstride=2\n"
                        "groups=2\nactivation=linear\n",
        NET(8, 4, 5, 5) "[convolutional]\nfilters=4\nsize=1\nactivation=linear\n"
                        "[convolutional]\nfilters=4\nsize=3\npad=1\ngroups=4\n"
                        "activation=linear\n",
    };
    const int saved = omp_get_max_threads();
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        size_t n1, n;
        float *ref = grads_at_threads(cfgs[c], 1, &n1);
        CHECK(ref != NULL);
        for (int threads = 2; ref && threads <= 4; threads++) {
            float *got = grads_at_threads(cfgs[c], threads, &n);
            CHECK(got != NULL && n == n1);
            double worst = 0;
            for (size_t i = 0; got && i < n; i++)
                worst = fmax(worst, fabs(got[i] - ref[i]) / (1 + fabs(ref[i])));
            CHECK_NEAR(worst, 0, 1e-5);
            free(got);
        }
        free(ref);
    }
    omp_set_num_threads(saved);
}

/* [net] winograd=1 and winograd=0 (im2col) agree within 1e-5 of the largest value on the
 * outputs, the weight and batch norm gradients and the input gradient: a stack through two
 * winograd layers' input gradients. */
static void test_winograd_matches_im2col(void)
{
#define WINO_STACK(flag)                                                                           \
    NET(3, 16, 8, 12)                                                                              \
    "winograd_min_tiles=0\nwinograd=" flag "\n[convolutional]\nfilters=24\nsize=3\npad=1\n"        \
    "batch_normalize=1\nactivation=leaky\n[convolutional]\nfilters=32\n"                           \
    "size=3\npad=1\nactivation=relu\n[convolutional]\nfilters=16\nsize=3\n"                        \
    "pad=1\nactivation=linear\n"
    const int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        size_t n_ref, n;
        float *ref = grads_at_threads(WINO_STACK("0"), threads, &n_ref);
        float *got = grads_at_threads(WINO_STACK("1"), threads, &n);
        CHECK(ref && got && n == n_ref);
        double diff = 0, max = 0;
        for (size_t i = 0; ref && got && i < n; i++) {
            diff = fmax(diff, fabs(got[i] - ref[i]));
            max = fmax(max, fabs(ref[i]));
        }
        CHECK(max > 0);
        CHECK_NEAR(diff / max, 0, 1e-5);
        free(ref);
        free(got);
    }
    omp_set_num_threads(saved);
#undef WINO_STACK
}

/* A net of one 16 -> 16 3x3 convolution on 14x14 maps (49 output tiles an image) at batch, built
 * with or without gradients, on the reference engine (an inference net's default is oneDNN's),
 * with more [net] keys, and sized for batch; 1 when it cannot be. */
static int build_wino_net(Net *net, int batch, int want_grads, const char *keys)
{
    char text[256];
    snprintf(text, sizeof text,
             "[net]\nbatch=%d\nwidth=14\nheight=14\nchannels=16\nengine=ref\n%s\n"
             "[convolutional]\nfilters=16\nsize=3\npad=1\n",
             batch, keys);
    Error e = {0};
    if (net_build_from_text(net, text, "t.cfg", want_grads, 3, &e))
        return 1;
    if (net_resize(net, batch, 0, &e)) {
        net_free(net);
        return 1;
    }
    return 0;
}

/* The engine of build_wino_net's layer, "(none)" when it cannot be built. */
static const char *engine_at(int batch, int want_grads, const char *keys)
{
    static char engine[16];
    Net net;
    snprintf(engine, sizeof engine, "(none)");
    if (!build_wino_net(&net, batch, want_grads, keys)) {
        snprintf(engine, sizeof engine, "%s", net.layers[0].engine);
        net_free(&net);
    }
    return engine;
}

/* The output of build_wino_net's layer at batch 1 for input rng_normal(9), of a net with or
 * without gradients, in inference mode; NULL when it cannot be built. */
static float *inference_output(int want_grads)
{
    Net net;
    if (build_wino_net(&net, 1, want_grads, ""))
        return NULL;
    Rng rng;
    rng_seed(&rng, 9, 0);
    const size_t in_n = shape_size(net.in_shape), out_n = shape_size(net.layers[0].out_shape);
    for (size_t i = 0; i < in_n; i++)
        net.input[i] = rng_normal(&rng);
    net.train = 0;
    net_forward(&net);
    float *out = malloc(out_n * sizeof *out);
    if (out)
        memcpy(out, net.layers[0].out, out_n * sizeof *out);
    net_free(&net);
    return out;
}

/* A training net whose mini-batch has fewer than winograd_min_tiles output tiles (default 256)
 * trains a 3x3 layer on im2col, as the weights' transforms then cost more than they save, and
 * runs its inference-mode passes (training's validation) on Winograd as an inference net does,
 * to the same bits; inference takes Winograd at any batch; the key moves the threshold, and a
 * negative one is a config error. */
static void test_winograd_training_tiles(void)
{
    float *training = inference_output(1), *inference = inference_output(0);
    CHECK(training && inference);
    if (training && inference)
        CHECK(!memcmp(training, inference, 16 * 14 * 14 * sizeof *training));
    free(training);
    free(inference);
    CHECK(!strcmp(engine_at(1, 1, ""), "ref"));  /* 49 tiles */
    CHECK(!strcmp(engine_at(5, 1, ""), "ref"));  /* 245 */
    CHECK(!strcmp(engine_at(6, 1, ""), "wino")); /* 294 */
    CHECK(!strcmp(engine_at(1, 0, ""), "wino")); /* inference */
    CHECK(!strcmp(engine_at(1, 1, "winograd_min_tiles=0"), "wino"));
    CHECK(!strcmp(engine_at(6, 1, "winograd_min_tiles=300"), "ref"));
    CHECK(!strcmp(engine_at(6, 1, "winograd_min_tiles=0\nwinograd=0"), "ref"));
    CHECK(!strcmp(engine_at(1, 1, "winograd_min_tiles=-1"), "(none)"));
}

/* The outputs of an inference net (no gradients) built from text at batch on threads, seed 3,
 * input rng_normal(9): after its first forward, a second one (must be the same bits), then after
 * new weights in its first layer and net_weights_changed (backend/cpu/winograd.h's kept
 * transformed weights must follow), then at batch + 1 after a resize; [4][batch + 1][outputs],
 * NULL on failure. */
static float *inference_outputs(const char *text, int batch, int threads, size_t *n)
{
    Net net;
    Error e = {0};
    *n = 0;
    omp_set_num_threads(threads);
    if (net_build_from_text(&net, text, "t.cfg", 0, 3, &e) || net_resize(&net, batch, 0, &e)) {
        fprintf(stderr, "cannot build: %s\n", e.msg);
        return NULL;
    }
    const Layer *last = &net.layers[net.n_layers - 1];
    const size_t out_n = shape_size(last->out_shape), in_n = shape_size(net.in_shape);
    const size_t stride = (size_t)(batch + 1) * out_n;
    float *all = calloc(4 * stride, sizeof *all);
    Rng rng;
    rng_seed(&rng, 9, 0);
    for (int pass = 0; pass < 4; pass++) {
        if (pass == 2) { /* new weights, as a load writes them (and says so) */
            Param *w = layer_param(&net.layers[0], "weights");
            for (size_t i = 0; i < w->count; i++)
                w->data[i] = rng_normal(&rng);
            net_weights_changed(&net);
        }
        const int b = pass == 3 ? batch + 1 : batch;
        if (pass == 3 && net_resize(&net, b, 0, &e)) {
            fprintf(stderr, "cannot resize: %s\n", e.msg);
            break;
        }
        rng_seed(&rng, 9, 1);
        for (size_t i = 0; i < (size_t)b * in_n; i++)
            net.input[i] = rng_normal(&rng);
        net.train = 0;
        net_forward(&net);
        memcpy(all + pass * stride, net.layers[net.n_layers - 1].out,
               (size_t)b * out_n * sizeof *all);
    }
    *n = 4 * stride;
    net_free(&net);
    return all;
}

/* An inference net's winograd layers (engine=ref) keep their transformed weights from one
 * forward to the next (transformed again when the weights change) and split the filters over the
 * threads at a small batch: at batch 1 and 2 on 1 and 2 threads they agree with winograd=0 (im2col)
 * within 1e-5 of the largest value, before and after new weights and a resize, and a repeated
 * forward gives the same bits. */
static void test_winograd_inference_matches_im2col(void)
{
#define WINO_INFER(flag)                                                                           \
    NET(1, 16, 8, 12)                                                                              \
    "engine=ref\nwinograd=" flag "\n[convolutional]\nfilters=24\nsize=3\npad=1\n"                  \
    "batch_normalize=1\nactivation=leaky\n[convolutional]\nfilters=36\nsize=3\npad=1\n"            \
    "activation=linear\n"
    const int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++)
        for (int batch = 1; batch <= 2; batch++) {
            size_t n_ref, n;
            float *ref = inference_outputs(WINO_INFER("0"), batch, threads, &n_ref);
            float *got = inference_outputs(WINO_INFER("1"), batch, threads, &n);
            CHECK(ref && got && n == n_ref);
            double diff = 0, max = 0;
            for (size_t i = 0; ref && got && i < n; i++) {
                diff = fmax(diff, fabs(got[i] - ref[i]));
                max = fmax(max, fabs(ref[i]));
            }
            CHECK(max > 0);
            CHECK_NEAR(diff / max, 0, 1e-5);
            CHECK(got && !memcmp(got, got + n / 4, n / 4 * sizeof *got));
            CHECK(got && memcmp(got + n / 4, got + n / 2, n / 4 * sizeof *got));
            free(ref);
            free(got);
        }
    omp_set_num_threads(saved);
#undef WINO_INFER
}

/* ---- exact values ---- */

static void test_conv_1x1_is_a_weighted_channel_sum(void)
{
    Net net;
    if (build_test_net(NET(2, 2, 1, 3) "[convolutional]\nfilters=2\nsize=1\nactivation=linear\n",
                       &net))
        return;
    Layer *l = &net.layers[0];
    const float w[] = {1, 2, -1, 0.5f}, b[] = {0.25f, -3};
    set_param(l, "weights", w, 4);
    set_param(l, "biases", b, 2);
    /* sample 0: channel 0 = {1, 2, 3}, channel 1 = {4, 5, 6}; sample 1: {-1, 0, 1}, {2, 2, 2} */
    const float x[] = {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2};
    memcpy(net.input, x, sizeof x);
    net.train = 0;
    net_forward(&net);
    /* filter 0: x0 + 2*x1 + 0.25; filter 1: -x0 + 0.5*x1 - 3 */
    const float want[] = {9.25f, 12.25f, 15.25f, -2, -2.5f, -3, 3.25f, 4.25f, 5.25f, -1, -2, -3};
    check_values(l->out, want, 12, 1e-6);
    net_free(&net);
}

/* X = [[1,2,3],[4,5,6],[7,8,9]], kernel taps: 1 at top-left, 10 at the centre, 100 at
 * bottom-right, so out[i][j] = X[i-1][j-1] + 10*X[i][j] + 100*X[i+1][j+1] (0 outside);
 * each digit of the result tells which taps landed. */
static const float sample_image[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const float sample_kernel[9] = {1, 0, 0, 0, 10, 0, 0, 0, 100};

static void test_conv_3x3_pad_1_matches_hand_computation(void)
{
    Net net;
    if (build_test_net(
            NET(1, 1, 3, 3) "[convolutional]\nfilters=1\nsize=3\npad=1\nactivation=linear\n", &net))
        return;
    Layer *l = &net.layers[0];
    const float bias = 1;
    set_param(l, "weights", sample_kernel, 9);
    set_param(l, "biases", &bias, 1);
    memcpy(net.input, sample_image, sizeof sample_image);
    net.train = 0;
    net_forward(&net);
    const float want[] = {511, 621, 31, 841, 952, 63, 71, 85, 96};
    check_values(l->out, want, 9, 1e-4);
    net_free(&net);
}

static void test_conv_stride_2_keeps_every_other_position(void)
{
    Net net;
    if (build_test_net(NET(1, 1, 3, 3) "[convolutional]\nfilters=1\nsize=3\npad=1\nstride=2\n"
                                       "activation=relu\n",
                       &net))
        return;
    Layer *l = &net.layers[0];
    const float bias = -40;
    set_param(l, "weights", sample_kernel, 9);
    set_param(l, "biases", &bias, 1);
    memcpy(net.input, sample_image, sizeof sample_image);
    net.train = 0;
    net_forward(&net);
    CHECK(l->out_shape.h == 2 && l->out_shape.w == 2);
    /* positions (0,0), (0,2), (2,0), (2,2) of the stride-1 result 510, 30, 70, 95, minus
     * 40, through relu */
    const float want[] = {470, 0, 30, 55};
    check_values(l->out, want, 4, 1e-4);
    net_free(&net);
}

static void test_conv_groups_see_only_their_channels(void)
{
    Net net;
    if (build_test_net(NET(1, 4, 1, 1) "[convolutional]\nfilters=2\nsize=1\ngroups=2\n"
                                       "activation=linear\n",
                       &net))
        return;
    Layer *l = &net.layers[0];
    CHECK(layer_param(l, "weights")->count == 4);
    const float w[] = {1, 10, 100, 1000};
    set_param(l, "weights", w, 4);
    const float x[] = {1, 2, 3, 4};
    memcpy(net.input, x, sizeof x);
    net.train = 0;
    net_forward(&net);
    /* filter 0 reads channels 0-1, filter 1 channels 2-3 */
    const float want[] = {1 + 20, 300 + 4000};
    check_values(l->out, want, 2, 1e-4);
    net_free(&net);
}

static void test_connected_is_a_matrix_product(void)
{
    Net net;
    if (build_test_net(NET(2, 1, 1, 3) "[connected]\noutput=2\nactivation=linear\n", &net))
        return;
    Layer *l = &net.layers[0];
    CHECK(l->out_shape.c == 2 && l->out_shape.h == 1 && l->out_shape.w == 1);
    const float w[] = {1, 2, 3, -1, 0, 1}, b[] = {0.5f, -0.5f};
    set_param(l, "weights", w, 6);
    set_param(l, "biases", b, 2);
    const float x[] = {1, 1, 1, 2, 0, -1};
    memcpy(net.input, x, sizeof x);
    net.train = 0;
    net_forward(&net);
    const float want[] = {6.5f, -0.5f, -0.5f, -3.5f};
    check_values(l->out, want, 4, 1e-6);
    net_free(&net);
}

/* Eval mode uses the running statistics: y = (x - mean) / sqrt(var + eps) * scale + bias.
 * With var = 3 and eps = 1 the divisor is exactly 2. */
static void test_batchnorm_eval_uses_running_stats(void)
{
    Net net;
    if (build_test_net("[net]\nbatch=1\nwidth=2\nheight=1\nchannels=2\nbn_eps=1\n[batchnorm]\n"
                       "[convolutional]\nfilters=2\nsize=1\nbatch_normalize=1\nactivation=linear\n",
                       &net))
        return;
    Layer *bn = &net.layers[0], *conv = &net.layers[1];
    const float scales[] = {2, -1}, biases[] = {0.5f, 1}, mean[] = {1, -2}, var[] = {3, 15};
    set_param(bn, "scales", scales, 2);
    set_param(bn, "biases", biases, 2);
    set_param(bn, "rolling_mean", mean, 2);
    set_param(bn, "rolling_variance", var, 2);
    const float eye[] = {1, 0, 0, 1};
    set_param(conv, "weights", eye, 4);
    set_param(conv, "scales", scales, 2);
    set_param(conv, "biases", biases, 2);
    set_param(conv, "rolling_mean", mean, 2);
    set_param(conv, "rolling_variance", var, 2);
    const float x[] = {3, -1, 2, 6};
    memcpy(net.input, x, sizeof x);
    net.train = 0;
    net_forward(&net);
    /* channel 0: (x - 1) / 2 * 2 + 0.5; channel 1: (x + 2) / 4 * -1 + 1 */
    const float want_bn[] = {2.5f, -1.5f, 0, -1};
    check_values(bn->out, want_bn, 4, 1e-6);
    /* the conv is the identity, so its BN sees want_bn */
    const float want_conv[] = {(2.5f - 1) + 0.5f, (-1.5f - 1) + 0.5f, -(0 + 2) / 4.0f + 1,
                               -(-1 + 2) / 4.0f + 1};
    check_values(conv->out, want_conv, 4, 1e-6);
    /* eval mode leaves the running statistics alone */
    CHECK(layer_param(bn, "rolling_mean")->data[0] == 1);
    CHECK(layer_param(bn, "rolling_variance")->data[1] == 15);
    net_free(&net);
}

/* Training mode, channel 0 over two samples of 1x2: {1, 3} and {5, 7}. Batch mean 4,
 * biased variance (9+1+1+9)/4 = 5 normalises, unbiased 20/3 feeds the running variance:
 * mean 0.9*0 + 0.1*4 = 0.4, var 0.9*1 + 0.1*20/3. Channel 1 is constant 2: variance 0, so
 * y = 0 * scale + bias. */
static void test_batchnorm_train_uses_batch_stats_and_moves_running_stats(void)
{
    Net net;
    if (build_test_net("[net]\nbatch=2\nwidth=2\nheight=1\nchannels=2\nbn_eps=0.001\n"
                       "bn_momentum=0.1\n[batchnorm]\n",
                       &net))
        return;
    Layer *bn = &net.layers[0];
    const float biases[] = {0, 0.75f};
    set_param(bn, "biases", biases, 2);
    const float x[] = {1, 3, 2, 2, 5, 7, 2, 2};
    memcpy(net.input, x, sizeof x);
    net.train = 1;
    net_forward(&net);
    const double s = sqrt(5.001);
    const float want[] = {(float)(-3 / s), (float)(-1 / s), 0.75f, 0.75f,
                          (float)(1 / s),  (float)(3 / s),  0.75f, 0.75f};
    check_values(bn->out, want, 8, 1e-6);
    CHECK_NEAR(layer_param(bn, "rolling_mean")->data[0], 0.4, 1e-6);
    CHECK_NEAR(layer_param(bn, "rolling_mean")->data[1], 0.2, 1e-6);
    CHECK_NEAR(layer_param(bn, "rolling_variance")->data[0], 0.9 + 0.1 * 20.0 / 3.0, 1e-6);
    CHECK_NEAR(layer_param(bn, "rolling_variance")->data[1], 0.9, 1e-6);
    net_free(&net);
}

/* ---- parameters, shapes, flops ---- */

static void test_conv_params_and_init(void)
{
    Net net;
    if (build_test_net(NET(1, 8, 6, 6) "[convolutional]\nfilters=64\nsize=3\npad=1\n"
                                       "[convolutional]\nfilters=4\nsize=3\npad=1\ngroups=2\n"
                                       "batch_normalize=1\n",
                       &net))
        return;
    Layer *a = &net.layers[0], *b = &net.layers[1];
    CHECK(a->n_params == 2 && b->n_params == 5);
    CHECK(a->activation == CDL_ACT_LOGISTIC);
    Param *w = layer_param(a, "weights");
    CHECK(w->count == 64 * 8 * 9 && w->trainable && w->decay);
    CHECK(layer_param(a, "biases")->count == 64 && !layer_param(a, "biases")->decay);
    CHECK(layer_param(a, "scales") == NULL);
    /* He init: sample std of 4608 N(0, 2/72) draws within a few percent of sqrt(2/72) */
    double sum = 0, sum_sq = 0;
    for (size_t i = 0; i < w->count; i++) {
        sum += w->data[i];
        sum_sq += (double)w->data[i] * w->data[i];
    }
    double mean = sum / w->count, sd = sqrt(sum_sq / w->count - mean * mean);
    CHECK_NEAR(sd, sqrt(2.0 / 72.0), 0.06 * sqrt(2.0 / 72.0));
    CHECK_NEAR(mean, 0, 0.01);
    CHECK(layer_param(a, "biases")->data[0] == 0);

    CHECK(layer_param(b, "weights")->count == 4 * 32 * 9);
    Param *sc = layer_param(b, "scales"), *rm = layer_param(b, "rolling_mean"),
          *rv = layer_param(b, "rolling_variance");
    CHECK(sc && sc->trainable && !sc->decay && sc->data[3] == 1);
    CHECK(rm && !rm->trainable && rm->data[0] == 0);
    CHECK(rv && !rv->trainable && rv->data[2] == 1);
    CHECK(layer_param(b, "biases")->trainable && layer_param(b, "biases")->data[1] == 0);
    net_free(&net);
}

static void test_shapes_and_flops(void)
{
    Net net;
    /* On the reference, whose im2col scratch is checked (oneDNN's is sized at resize). */
    if (build_test_net(
            NET(1, 3, 9, 7) "engine=ref\n"
                            "[convolutional]\nfilters=4\nsize=5\n"                   /* 4x5x3 */
                            "[convolutional]\nfilters=6\nsize=3\nstride=2\npad=1\n"  /* 6x3x2 */
                            "[convolutional]\nfilters=2\nsize=3\npad=1\npadding=2\n" /* 2x3x2 */
                            "[batchnorm]\n"
                            "[connected]\noutput=7\nbatch_normalize=1\n",
            &net))
        return;
    const Shape want[] = {{4, 5, 3}, {6, 3, 2}, {2, 3, 2}, {2, 3, 2}, {7, 1, 1}};
    for (int i = 0; i < 5; i++)
        CHECK(net.layers[i].out_shape.c == want[i].c && net.layers[i].out_shape.h == want[i].h &&
              net.layers[i].out_shape.w == want[i].w);
    CHECK_NEAR(net.layers[0].flops, 2.0 * 15 * 4 * 3 * 25, 0);
    CHECK_NEAR(net.layers[1].flops, 2.0 * 6 * 6 * 4 * 9, 0);
    CHECK_NEAR(net.layers[4].flops, 2.0 * 12 * 7, 0);
    CHECK(layer_param(&net.layers[4], "weights")->count == 7 * 12);
    CHECK(layer_param(&net.layers[3], "scales")->count == 2);
    CHECK(net.layers[3].n_params == 4);
    CHECK(net.layers[0].scratch_per_sample == 3 * 25 * 15);
    net_free(&net);

    /* A 1x7 window with strides 2,1 and padding 0,3 on 9x7: 4 filters of [3][1][7], out 4x5x7,
     * its scratch the im2col columns [3*7][5*7] */
    if (build_test_net(NET(1, 3, 9, 7) "engine=ref\n[convolutional]\nfilters=4\nsize=1,7\n"
                                       "stride=2,1\npadding=0,3\n",
                       &net) == CDL_OK) {
        const Param *w = layer_param(&net.layers[0], "weights");
        CHECK(w->dims[0] == 4 && w->dims[1] == 3 && w->dims[2] == 1 && w->dims[3] == 7);
        CHECK(net.layers[0].out_shape.c == 4 && net.layers[0].out_shape.h == 5 &&
              net.layers[0].out_shape.w == 7);
        CHECK_NEAR(net.layers[0].flops, 2.0 * 35 * 4 * 3 * 7, 0);
        CHECK(net.layers[0].scratch_per_sample == 3 * 7 * 35);
        net_free(&net);
    }

    /* A 1x1 stride-1 convolution reads its input directly: no scratch. */
    if (build_test_net(NET(1, 3, 4, 4) "engine=ref\n[convolutional]\nfilters=2\nsize=1\n", &net) ==
        CDL_OK) {
        CHECK(net.layers[0].scratch_per_sample == 0);
        net_free(&net);
    }
}

static void test_cfg_errors_name_file_and_line(void)
{
    expect_cfg_error(NET(1, 3, 8, 8) "[convolutional]\nfilters=4\ngroups=2\n",
                     "t.cfg:8: layer 0: [convolutional] groups=2 must divide both the input "
                     "channels (3) and filters (4)");
    expect_cfg_error(NET(1, 4, 8, 8) "[convolutional]\nfilters=3\ngroups=2\n",
                     "t.cfg:8: layer 0: [convolutional] groups=2 must divide");
    expect_cfg_error(NET(1, 4, 8, 8) "[convolutional]\nfilters=4\ngroups=0\n", "t.cfg:8: layer 0:");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\nfilters=1\nsize=3\n"
                                     "[convolutional]\nfilters=1\nsize=3\n",
                     "t.cfg:9: layer 1: [convolutional] output would be empty");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\nsize=5\nstride=2\n",
                     "t.cfg:6: layer 0: [convolutional] output would be empty");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\nsize=1,7\n",
                     "t.cfg:6: layer 0: [convolutional] output would be empty: input 4x4, "
                     "size=1,7, stride=1,1, padding=0,0");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\nsize=1,2,3\n",
                     "t.cfg:7: bad value '1,2,3' for key 'size' in [convolutional]: expected an "
                     "integer in -16777216..16777216, or two as height,width");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\nsize=3\nstride=1,0\n",
                     "t.cfg:8: layer 0: [convolutional] stride=0");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\nfilters=0\n",
                     "t.cfg:7: layer 0: [convolutional] filters=0");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\nsize=0\n",
                     "t.cfg:7: layer 0: [convolutional] size=0");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\nstride=0\n",
                     "t.cfg:7: layer 0: [convolutional] stride=0");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\npadding=-1\n",
                     "t.cfg:7: layer 0: [convolutional] padding=-1");
    expect_cfg_error(NET(1, 1, 4, 4) "[convolutional]\nactivation=sigmund\n",
                     "t.cfg:7: bad value 'sigmund' for key 'activation' in [convolutional]");
    expect_cfg_error(NET(1, 1, 4, 4) "[connected]\noutput=0\n",
                     "t.cfg:7: layer 0: [connected] output=0");
    expect_cfg_error(NET(1, 1, 4, 4) "[batchnorm]\nactivation=sigmund\n",
                     "t.cfg:7: bad value 'sigmund' for key 'activation' in [batchnorm]");
}

/* ---- kernels ---- */

/* col2im is the adjoint of im2col: <im2col(x), y> = <x, col2im(y)>. */
static void check_im2col_adjoint(int c, int h, int w, Window2d win)
{
    const int oh = window_out_extent(h, win.size_h, win.stride_h, win.pad_h);
    const int ow = window_out_extent(w, win.size_w, win.stride_w, win.pad_w);
    const size_t n_im = (size_t)c * h * w, n_col = (size_t)c * window2d_taps(win) * oh * ow;
    float *x = malloc(n_im * sizeof *x), *back = calloc(n_im, sizeof *back);
    float *col = malloc(n_col * sizeof *col), *y = malloc(n_col * sizeof *y);
    Rng rng;
    rng_seed(&rng, 5, 0);
    for (size_t i = 0; i < n_im; i++)
        x[i] = rng_normal(&rng);
    for (size_t i = 0; i < n_col; i++)
        y[i] = rng_normal(&rng);
    im2col(x, c, h, w, win, col, (size_t)oh * ow);
    col2im(y, c, h, w, win, (size_t)oh * ow, back);
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < n_col; i++)
        lhs += (double)col[i] * y[i];
    for (size_t i = 0; i < n_im; i++)
        rhs += (double)x[i] * back[i];
    CHECK_NEAR(lhs, rhs, 1e-4 * (1 + fabs(lhs)));
    free(x);
    free(back);
    free(col);
    free(y);
}

static void test_col2im_is_the_adjoint_of_im2col(void)
{
    check_im2col_adjoint(3, 7, 6, window2d_square(3, 1, 1));
    check_im2col_adjoint(2, 9, 8, window2d_square(3, 2, 1));
    check_im2col_adjoint(2, 8, 9, window2d_square(5, 3, 2));
    check_im2col_adjoint(1, 5, 5, window2d_square(4, 2, 0));
    check_im2col_adjoint(64, 20, 20, window2d_square(3, 1, 1));   /* large enough to run threaded */
    check_im2col_adjoint(3, 9, 8, (Window2d){1, 7, 1, 1, 0, 3});  /* 1x7, same shape */
    check_im2col_adjoint(3, 9, 8, (Window2d){7, 1, 1, 1, 3, 0});  /* 7x1, same shape */
    check_im2col_adjoint(2, 11, 9, (Window2d){3, 1, 2, 1, 1, 0}); /* 3x1, strides 2 and 1 */
    check_im2col_adjoint(2, 9, 11, (Window2d){1, 3, 1, 2, 0, 2}); /* 1x3, strides 1 and 2 */
}

/* im2col equals the definition, tap by tap, on odd sizes, every stride path (1, "same", 2, 3),
 * 1x1 windows and a column stride ldcol wider than the output. */
static void check_im2col_naive(int c, int h, int w, Window2d win, int extra)
{
    const int oh = window_out_extent(h, win.size_h, win.stride_h, win.pad_h);
    const int ow = window_out_extent(w, win.size_w, win.stride_w, win.pad_w);
    const int taps = window2d_taps(win);
    const size_t ld = (size_t)oh * ow + extra, n_col = (size_t)c * taps * ld;
    float *x = malloc((size_t)c * h * w * sizeof *x), *col = malloc(n_col * sizeof *col);
    for (int i = 0; i < c * h * w; i++)
        x[i] = (float)(i + 1);
    for (size_t i = 0; i < n_col; i++)
        col[i] = -1.0f;
    im2col(x, c, h, w, win, col, ld);
    int bad = 0;
    for (int r = 0; r < c * taps; r++) {
        const int ch = r / taps, ki = r % taps / win.size_w, kj = r % win.size_w;
        for (int p = 0; p < oh * ow; p++) {
            const int iy = p / ow * win.stride_h - win.pad_h + ki;
            const int ix = p % ow * win.stride_w - win.pad_w + kj;
            const float want =
                iy < 0 || iy >= h || ix < 0 || ix >= w ? 0.0f : x[((size_t)ch * h + iy) * w + ix];
            bad += col[(size_t)r * ld + p] != want;
        }
        for (int p = oh * ow; p < (int)ld; p++) /* past the output: untouched */
            bad += col[(size_t)r * ld + p] != -1.0f;
    }
    CHECK(bad == 0);
    free(x);
    free(col);
}

static void test_im2col_matches_the_definition(void)
{
    check_im2col_naive(3, 7, 6, window2d_square(3, 1, 1), 0);     /* same shape */
    check_im2col_naive(2, 9, 8, window2d_square(3, 1, 0), 5);     /* stride 1, no pad */
    check_im2col_naive(2, 9, 8, window2d_square(3, 2, 1), 3);     /* stride 2 */
    check_im2col_naive(2, 11, 7, window2d_square(1, 2, 0), 0);    /* 1x1 stride 2 (a shortcut) */
    check_im2col_naive(1, 13, 10, window2d_square(5, 3, 2), 1);   /* stride 3 */
    check_im2col_naive(2, 5, 5, window2d_square(4, 2, 3), 0);     /* pad larger than a stride */
    check_im2col_naive(64, 17, 15, window2d_square(3, 2, 1), 0);  /* large enough to run threaded */
    check_im2col_naive(2, 9, 8, (Window2d){1, 7, 1, 1, 0, 3}, 2); /* 1x7, same shape */
    check_im2col_naive(2, 9, 8, (Window2d){7, 1, 1, 1, 3, 0}, 0); /* 7x1, same shape */
    check_im2col_naive(2, 10, 9, (Window2d){1, 3, 2, 1, 0, 1}, 1); /* 1x3, strides 2 and 1 */
    check_im2col_naive(2, 9, 10, (Window2d){3, 1, 1, 3, 1, 2}, 0); /* 3x1, strides 1 and 3 */
}

static void test_im2col_rows_are_shifted_images(void)
{
    /* 3x3 image, 3x3 kernel, pad 1: row (ki=0, kj=0) is the image shifted down-right */
    float col[81];
    im2col(sample_image, 1, 3, 3, window2d_square(3, 1, 1), col, 9);
    const float top_left[] = {0, 0, 0, 0, 1, 2, 0, 4, 5};
    const float centre[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    const float right[] = {2, 3, 0, 5, 6, 0, 8, 9, 0};
    check_values(col, top_left, 9, 0);
    check_values(col + 4 * 9, centre, 9, 0);
    check_values(col + 5 * 9, right, 9, 0);
    /* col2im adds into the image rather than overwriting it */
    float im[9];
    for (int i = 0; i < 9; i++)
        im[i] = 100;
    float ones[81];
    for (int i = 0; i < 81; i++)
        ones[i] = 1;
    col2im(ones, 1, 3, 3, window2d_square(3, 1, 1), 9, im);
    /* each pixel receives one count per window covering it: 4 in corners, 6 on edges, 9 in
     * the middle */
    const float counts[] = {104, 106, 104, 106, 109, 106, 104, 106, 104};
    check_values(im, counts, 9, 0);
}

int main(void)
{
    test_im2col_rows_are_shifted_images();
    test_col2im_is_the_adjoint_of_im2col();
    test_im2col_matches_the_definition();
    test_conv_1x1_is_a_weighted_channel_sum();
    test_conv_3x3_pad_1_matches_hand_computation();
    test_conv_stride_2_keeps_every_other_position();
    test_conv_groups_see_only_their_channels();
    test_connected_is_a_matrix_product();
    test_batchnorm_eval_uses_running_stats();
    test_batchnorm_train_uses_batch_stats_and_moves_running_stats();
    test_conv_params_and_init();
    test_shapes_and_flops();
    test_cfg_errors_name_file_and_line();
    test_conv_results_do_not_depend_on_thread_count();
    test_winograd_matches_im2col();
    test_winograd_training_tiles();
    test_winograd_inference_matches_im2col();
    test_gradcheck_convolutions();
    test_gradcheck_activations_through_conv();
    test_gradcheck_connected_and_batchnorm();
    return check_report("test_layers_dense");
}
