/* Which layer outputs a net keeps channels-last (core/net_channels_last.h): with [net]
 * channels_last=1 on the GPU where the family and every reader take NHWC, a CHANNELS_LAST_SAME
 * family only where its inputs are NHWC too, never the net's output nor the net's input, never on
 * the CPU; each layer's in_channels_last its inputs' writers'; the memory plan the same as NCHW's.
 * The values those tensors hold are test_backend_ops's "gpu nhwc" rows'. */
#include "check.h"
#include "core/net.h"

#include <stdio.h>
#include <string.h>

#define CONV(filters, stride, groups)                                                              \
    "[convolutional]\nfilters=" #filters "\nsize=3\nstride=" #stride "\npad=1\ngroups=" #groups    \
    "\nbatch_normalize=1\nactivation=relu\n"

/* tests/cli/gpu_channels_last.bats' residual net: blocks of resnet18_cifar, the first one's
 * shortcut read by a [route] (the projection's input), the second's by a global [avgpool]. */
static const char *const residual = "[net]\nbatch=2\nwidth=8\nheight=8\nchannels=1\n" CONV(8, 1, 1)
    CONV(8, 1, 1) CONV(8, 1, 1) "[shortcut]\nfrom=-3\n" CONV(16, 2, 1) CONV(
        16, 1,
        1) "[route]\nlayers=-3\n"
           "[convolutional]\nfilters=16\nsize=1\nstride=2\nactivation=linear\n[shortcut]\nfrom=-3\n"
           "[avgpool]\n[connected]\noutput=10\nactivation=linear\n[softmax]\n";

/* A [layernorm] along the rows (declines NHWC) after a convolution, a grouped convolution, a max
 * pool, a convolution, another row [layernorm] and a convolution that is the net's output. */
static const char *const declining =
    "[net]\nbatch=2\nwidth=8\nheight=8\nchannels=4\n" CONV(8, 1, 1) "[layernorm]\n" CONV(
        8, 1, 2) "[maxpool]\nsize=2\nstride=2\n" CONV(8, 1, 1) "[layernorm]\n" CONV(4, 1, 1);

/* A [shortcut] (CHANNELS_LAST_SAME) one of whose inputs, 0, is read by a row [layernorm] (no
 * NHWC kernels): 0 stays NCHW, so the shortcut does, and so does its other input 2, though a
 * convolution; the convolution after it is NHWC, read by the last one (the net's output). */
static const char *const broken_chain = "[net]\nbatch=2\nwidth=6\nheight=6\nchannels=2\n" CONV(
    4, 1, 1) "[layernorm]\n" CONV(4, 1, 1) "[shortcut]\nfrom=0\n" CONV(4, 1, 1) CONV(3, 1, 1);

/* The families that take NHWC besides the convolution and the pools of the residual net: a
 * depthwise (two filters a channel) and a grouped convolution, a windowed [avgpool], [upsample],
 * [shuffle], [layernorm] channels=1, [layer_scale], a squeeze-excitation's [scale_channels], then
 * the net's output. */
static const char *const taking = "[net]\nbatch=2\nwidth=6\nheight=6\nchannels=4\n" CONV(8, 1, 4)
    CONV(8, 1, 2) "[avgpool]\nsize=3\nstride=1\npadding=1\n[upsample]\nstride=2\n[shuffle]\n"
                  "groups=2\n[layernorm]\nchannels=1\n[layer_scale]\n[avgpool]\n[convolutional]"
                  "\nfilters=8\n"
                  "size=1\nactivation=logistic\n[scale_channels]\nfrom=-3\n" CONV(4, 1, 1);

/* Builds "[net]\n" extra text on backend b, resized for training; 0 when built. */
static int build(Net *net, const char *text, const char *extra, Backend b)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg, "[net]\n%s%s", extra, text + strlen("[net]\n"));
    Error e = {0};
    if (net_build_from_text_on(net, cfg, "nhwc.cfg", 1, 1, (NetPlacement){b, 0}, &e) ||
        net_resize(net, net->hyper.batch, 1, &e)) {
        fprintf(stderr, "FAIL: cannot build: %s\n", e.msg);
        check_failures++;
        return 1;
    }
    return 0;
}

/* 1 when the layers' channels_last is want [n_layers] and each in_channels_last its writer's (0
 * for the net input). */
static int layouts_are(const Net *net, const int *want)
{
    int ok = 1;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (l->channels_last != want[i]) {
            fprintf(stderr, "layer %d [%s]: channels_last %d, expected %d\n", i, l->type->name,
                    l->channels_last, want[i]);
            ok = 0;
        }
        for (int k = 0; k < l->n_inputs; k++)
            ok = ok && l->in_channels_last[k] ==
                           (l->inputs[k] >= 0 && net->layers[l->inputs[k]].channels_last);
    }
    return ok;
}

static void test_cpu_and_default_keep_nchw(void)
{
    static const int none[12] = {0};
    Net net;
    if (!build(&net, residual, "channels_last=1\n", CDL_BACKEND_CPU)) {
        CHECK(layouts_are(&net, none));
        net_free(&net);
    }
    if (backend_find(CDL_BACKEND_GPU) && !build(&net, residual, "", CDL_BACKEND_GPU)) {
        CHECK(layouts_are(&net, none));
        net_free(&net);
    }
}

static void test_gpu_residual(void)
{
    /* every layer up to the second shortcut, which the global avgpool reads: its output, the
     * same in both layouts, goes to [connected] (NCHW only) */
    static const int want[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
    Net net;
    if (build(&net, residual, "gpu_engine=ref\nchannels_last=1\n", CDL_BACKEND_GPU))
        return;
    CHECK(layouts_are(&net, want));
    net_free(&net);
}

static void test_gpu_declining_families_end_chains(void)
{
    /* 0 is read by the row layernorm 1 (NCHW only); the grouped 2 and the max pool 3 are read by
     * NHWC readers; 4 by the row layernorm 5; 6 is the net's output */
    static const int want[7] = {0, 0, 1, 1, 0, 0, 0};
    Net net;
    if (build(&net, declining, "gpu_engine=ref\nchannels_last=1\n", CDL_BACKEND_GPU))
        return;
    CHECK(layouts_are(&net, want));
    net_free(&net);
    static const int chain[6] = {0, 0, 0, 0, 1, 0};
    if (build(&net, broken_chain, "gpu_engine=ref\nchannels_last=1\n", CDL_BACKEND_GPU))
        return;
    CHECK(layouts_are(&net, chain));
    net_free(&net);
}

static void test_gpu_families_taking_nhwc(void)
{
    /* every layer but the net's output */
    static const int want[11] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
    Net net;
    if (build(&net, taking, "gpu_engine=ref\nchannels_last=1\n", CDL_BACKEND_GPU))
        return;
    CHECK(layouts_are(&net, want));
    net_free(&net);
}

/* The same elements in either layout: the activation slab does not change, planned or not. */
static void test_gpu_memory_plan_unchanged(void)
{
    static const char *const plans[] = {"memory_plan=0\n", ""};
    for (int p = 0; p < 2; p++) {
        char nchw[64], nhwc[64];
        snprintf(nchw, sizeof nchw, "gpu_engine=ref\n%s", plans[p]);
        snprintf(nhwc, sizeof nhwc, "gpu_engine=ref\nchannels_last=1\n%s", plans[p]);
        Net a, b;
        if (build(&a, residual, nchw, CDL_BACKEND_GPU))
            return;
        if (!build(&b, residual, nhwc, CDL_BACKEND_GPU)) {
            CHECK(a.activation_bytes == b.activation_bytes);
            net_free(&b);
        }
        net_free(&a);
    }
}

int main(void)
{
    test_cpu_and_default_keep_nchw();
    if (backend_find(CDL_BACKEND_GPU)) {
        test_gpu_residual();
        test_gpu_declining_families_end_chains();
        test_gpu_families_taking_nhwc();
        test_gpu_memory_plan_unchanged();
    } else
        printf("test_net_channels_last: no GPU backend in this build: its GPU cases skipped\n");
    return check_report("test_net_channels_last");
}
