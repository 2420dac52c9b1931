/* [net] engine=dnnl against engine=ref beyond what tests/unit/test_backend_ops.c compares (which
 * runs every convolution configuration of the cfgs in cfg/, single layers and chains, on both
 * engines): a residual block's input gradient added onto the shortcut's, the layouts oneDNN's
 * inference and training chains pass in nChw8c and the residual sums fused into convolutions,
 * bit-identical reruns, bf16 chains plain against blocked, a backward that writes its input's
 * delta whole, primitives remade at another batch size, and an inference net's weights folded and
 * reordered once until they change; all within 1e-5 of the reference
 * tensor's largest magnitude. In a build without oneDNN (make DNNL=0) it checks that engine=dnnl
 * falls back to the reference; where oneDNN's blocks are not the build's (dnnl_conv_lanes_native:
 * the sanitizer build, without -march, on an AVX-512 CPU) that every layer stays plain. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/conv.h"
#include "backend/cpu/dnnl_conv.h"
#include "check.h"
#include "core/net.h"

#define TOL 1e-5

typedef struct ConvCase {
    int c, h, w; /* input */
    int filters, size, stride, pad, padding, groups, bn;
    const char *activation;
    const char *from; /* the cfgs that use it */
} ConvCase;

/* resnet's 3x3 body, before the shortcut (test_resize_keeps_results) */
static const ConvCase body_case = {8, 9, 7, 8, 3, 1, 1, 0, 1, 1, "linear", "resnet*: 3x3 body"};

static void cfg_text(const ConvCase *k, const char *engine, char *out, size_t size)
{
    snprintf(out, size,
             "[net]\nbatch=3\nwidth=%d\nheight=%d\nchannels=%d\nengine=%s\n"
             "[convolutional]\nfilters=%d\nsize=%d\nstride=%d\npad=%d\npadding=%d\ngroups=%d\n"
             "batch_normalize=%d\nactivation=%s\n",
             k->w, k->h, k->c, engine, k->filters, k->size, k->stride, k->pad, k->padding,
             k->groups, k->bn, k->activation);
}

/* max |got - want| <= TOL * max |want| (and want not all zero). */
static void check_close(const char *label, const char *what, const float *got, const float *want,
                        size_t n)
{
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)got[i] - want[i]));
        scale = fmax(scale, fabs((double)want[i]));
    }
    check_count++;
    if (!(diff <= TOL * scale) || scale == 0) {
        check_failures++;
        fprintf(stderr, "FAIL %s: %s differs by %.3g (largest value %.3g)\n", label, what, diff,
                scale);
    }
}

/* Builds the net of cfg text (a training net when grads), runs a forward (and backward) on the
 * same random input and last layer's output gradient, onto gradients that start at 0.5 (the
 * backward adds into them). */
static int run_text(const char *text, const char *label, int grads, Net *net)
{
    Error e = {0};
    if (net_build_from_text(net, text, "t.cfg", grads, 5, &e) ||
        net_resize(net, net->hyper.batch, grads, &e)) {
        fprintf(stderr, "FAIL %s: %s\n", label, e.msg);
        check_failures++;
        return 1;
    }
    Rng rng;
    rng_seed(&rng, 77, 1);
    const size_t in_n = (size_t)net->batch * shape_size(net->in_shape);
    for (size_t i = 0; i < in_n; i++)
        net->input[i] = rng_normal(&rng);
    /* Batch norm's running statistics away from 0 and 1, for the inference forward. */
    for (int j = 0; j < net->n_layers; j++) {
        Layer *l = &net->layers[j];
        for (int p = 0; p < l->n_params; p++)
            if (!l->params[p].trainable)
                for (size_t i = 0; i < l->params[p].count; i++)
                    l->params[p].data[i] = 0.5f + 0.25f * (float)(i % 5);
    }
    net->train = grads;
    net_forward(net);
    if (!grads)
        return 0;
    Layer *last = &net->layers[net->n_layers - 1];
    const size_t out_n = (size_t)net->batch * shape_size(last->out_shape);
    for (size_t i = 0; i < out_n; i++)
        last->delta[i] = rng_normal(&rng);
    for (int j = 0; j < net->n_layers; j++)
        for (int p = 0; p < net->layers[j].n_params; p++)
            if (net->layers[j].params[p].grad)
                for (size_t i = 0; i < net->layers[j].params[p].count; i++)
                    net->layers[j].params[p].grad[i] = 0.5f;
    net_backward(net);
    return 0;
}

/* A residual block (conv, conv, shortcut to the first): the second convolution's input gradient
 * is added to what the shortcut gave the first's output; blocked layouts (16 channels) at both. */
static void test_residual_adds(void)
{
    char text[2][1024];
    const char *engines[2] = {"ref", "dnnl"};
    Net nets[2];
    for (int k = 0; k < 2; k++) {
        snprintf(text[k], sizeof text[k],
                 "[net]\nbatch=2\nwidth=6\nheight=5\nchannels=3\nengine=%s\n"
                 "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=relu\n"
                 "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
                 "activation=linear\n[shortcut]\nfrom=-2\nactivation=linear\n",
                 engines[k]);
        if (run_text(text[k], "residual", 1, &nets[k])) {
            if (k)
                net_free(&nets[0]);
            return;
        }
    }
    check_close("residual", "input gradient", nets[1].input_delta, nets[0].input_delta,
                (size_t)nets[0].batch * shape_size(nets[0].in_shape));
    for (int j = 0; j < 2; j++) {
        const Layer *lr = &nets[0].layers[j], *ld = &nets[1].layers[j];
        CHECK(ld->engine && (strcmp(ld->engine, "dnnl") == 0) == dnnl_conv_built());
        for (int p = 0; p < lr->n_params; p++)
            if (lr->params[p].trainable)
                check_close("residual", lr->params[p].name, ld->params[p].grad, lr->params[p].grad,
                            lr->params[p].count);
    }
    net_free(&nets[0]);
    net_free(&nets[1]);
}

/* 1 when layer l gives its output in nChw8c (Layer.blocked). */
static int blocked_out(const Layer *l)
{
    return l->blocked >> LAYER_OUT_BIT & 1;
}

/* An inference net of body (layers after a [net] of batch 3, 3 channels, w x h) on both engines:
 * every output but the net's passed on in nChw8c on oneDNN where its blocks are the build's
 * (none on the reference, none elsewhere), and sums shortcuts computed by the convolution before
 * them (Layer.sum_from: on the reference, only by a Winograd layer's output transform, in plain
 * NCHW); the outputs within 1e-5, and those of the same
 * net's training-mode forward (batch statistics, the reference's path and plain layouts); a
 * second forward (oneDNN's Winograd twins) within 1e-5 too, and a third that gives its bytes. */
static void check_chain(const char *label, int w, int h, int sums, const char *body)
{
    const char *engines[2] = {"ref", "dnnl"};
    Net nets[2];
    for (int k = 0; k < 2; k++) {
        char text[4096];
        snprintf(text, sizeof text,
                 "[net]\nbatch=3\nwidth=%d\nheight=%d\nchannels=3\nengine=%s\n%s", w, h, engines[k],
                 body);
        if (run_text(text, label, 0, &nets[k])) {
            if (k)
                net_free(&nets[0]);
            return;
        }
    }
    /* An inference net's memory plan lends the earlier layers' outputs to later ones: the last
     * output checks the whole chain. */
    const int last = nets[0].n_layers - 1;
    for (int j = 0; j <= last; j++) {
        const Layer *l = &nets[1].layers[j];
        if (l->engine)
            CHECK((strcmp(l->engine, "dnnl") == 0) == dnnl_conv_built()); /* else ref or wino */
        if (blocked_out(l) != (dnnl_conv_lanes_native() && j < last)) {
            fprintf(stderr, "FAIL %s: layer %d's output is %s\n", label, j,
                    blocked_out(l) ? "blocked" : "plain");
            check_failures++;
        }
        const Layer *ref_from = nets[0].layers[j].sum_from;
        CHECK(!nets[0].layers[j].blocked && (!ref_from || !strcmp(ref_from->engine, "wino")));
        if (l->sum_from) {
            CHECK(l->sum_from->sum_into == l && l->sum_from->index == l->inputs[0]);
            sums--;
        }
    }
    if (sums != 0 && dnnl_conv_lanes_native()) {
        fprintf(stderr, "FAIL %s: %d fused residual sums more than found\n", label, sums);
        check_failures++;
    }
    const Layer *lr = &nets[0].layers[last], *ld = &nets[1].layers[last];
    const size_t out_n = (size_t)nets[0].batch * shape_size(lr->out_shape);
    check_close(label, "output", ld->out, lr->out, out_n);
    /* The second forward of the same weights runs the Winograd twins (ConvDnnl.wino) where
     * there are any: within 1e-5 again; from there on every rerun gives the same bytes. */
    net_forward(&nets[1]);
    char what[160];
    snprintf(what, sizeof what, "%s, second forward", label);
    check_close(what, "output", ld->out, lr->out, out_n);
    float *second = malloc(out_n * sizeof *second);
    memcpy(second, ld->out, out_n * sizeof *second);
    net_forward(&nets[1]);
    CHECK(!memcmp(second, ld->out, out_n * sizeof *second));
    free(second);
    for (int k = 0; k < 2; k++) {
        nets[k].train = 1;
        net_forward(&nets[k]);
    }
    snprintf(what, sizeof what, "%s, training forward", label);
    check_close(what, "output", ld->out, lr->out, out_n);
    net_free(&nets[0]);
    net_free(&nets[1]);
}

/* Convolutions (conv-BN-relu, conv-BN-leaky, conv-BN-linear, conv-relu with bias, conv-BN-logistic
 * stride 2, conv-BN-relu6, conv 3 channels: batch norm folded into the weights and bias, relu,
 * leaky and relu6 fused)
 * and a shortcut to the first with relu, which the third computes (sum and relu post-ops). */
static void test_inference_chain(void)
{
    check_chain("inference chain", 7, 6, 1,
                "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
                "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
                "activation=leaky\n"
                "[convolutional]\nfilters=16\nsize=1\nbatch_normalize=1\nactivation=linear\n"
                "[shortcut]\nfrom=-3\nactivation=relu\n"
                "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=relu\n"
                "[convolutional]\nfilters=16\nsize=3\nstride=2\npad=1\nbatch_normalize=1\n"
                "activation=logistic\n"
                "[convolutional]\nfilters=32\nsize=1\nbatch_normalize=1\nactivation=relu6\n"
                "[convolutional]\nfilters=3\nsize=1\nbatch_normalize=1\nactivation=linear\n");
}

/* resnet's stem and blocks: a 3x3/2 max pooling with darknet's padding (windows clipped at the
 * borders), a block with its shortcut, a downsampling block with [route] back to its input and
 * the 1x1/2 projection, a [route] of two inputs (concatenated channel blocks) and a 2x2/1 max
 * pooling (uneven windows), a global average pooling at the end (a blocked input, the net's
 * plain output); both shortcuts fused into the convolution before them. */
static void test_chain_through_pool_route(void)
{
    check_chain("chain through pooling and route", 11, 13, 2,
                "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
                "[maxpool]\nsize=3\nstride=2\npadding=2\n"
                "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
                "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
                "activation=linear\n"
                "[shortcut]\nfrom=-3\nactivation=relu\n"
                "[convolutional]\nfilters=32\nsize=3\nstride=2\npad=1\nbatch_normalize=1\n"
                "activation=relu\n"
                "[convolutional]\nfilters=32\nsize=3\npad=1\nbatch_normalize=1\n"
                "activation=linear\n"
                "[route]\nlayers=-3\n"
                "[convolutional]\nfilters=32\nsize=1\nstride=2\nbatch_normalize=1\n"
                "activation=linear\n"
                "[shortcut]\nfrom=-3\nactivation=relu\n"
                "[route]\nlayers=-1,-5\n"
                "[maxpool]\nsize=2\nstride=1\n"
                "[convolutional]\nfilters=16\nsize=1\nactivation=linear\n"
                "[avgpool]\n");
}

/* Whether nets[1]'s layer outputs are blocked as want says ('b' blocked, '.' plain, one a layer;
 * all plain where oneDNN's blocks are not the build's), the reference's all plain. */
static void check_plan(const char *label, const Net nets[2], const char *want)
{
    for (int j = 0; j < nets[1].n_layers; j++) {
        const int blocked = dnnl_conv_lanes_native() && want[j] == 'b';
        if (blocked_out(&nets[1].layers[j]) != blocked) {
            fprintf(stderr, "FAIL %s: layer %d's output is %s\n", label, j,
                    blocked ? "plain" : "blocked");
            check_failures++;
        }
        CHECK(!blocked_out(&nets[0].layers[j]));
    }
}

/* An inference net of body (after a [net] of batch images, 3 channels, 13x11) on both engines:
 * the outputs within 1e-5, and those of a training-mode forward (plain layouts); with want (a
 * char a layer: 'n' its output handed to its reader in nhwc, '.' not, '?' either), the hand-offs
 * (Layer.nhwc_to) as want says in a build for AVX-512 where oneDNN's blocks are the build's
 * (oneDNN 2.6 runs channel counts that are not whole blocks of 16 on nhwc there), none on the
 * reference; with want_blocked, the blocked outputs as it says (check_plan). */
static void check_nhwc_chain(const char *label, int batch, const char *want,
                             const char *want_blocked, const char *body)
{
    const char *engines[2] = {"ref", "dnnl"};
    Net nets[2];
    for (int k = 0; k < 2; k++) {
        char text[4096];
        snprintf(text, sizeof text,
                 "[net]\nbatch=%d\nwidth=13\nheight=11\nchannels=3\nengine=%s\n%s", batch,
                 engines[k], body);
        if (run_text(text, label, 0, &nets[k])) {
            if (k)
                net_free(&nets[0]);
            return;
        }
    }
#if defined(__AVX512F__)
    const int planned = want && dnnl_conv_lanes_native();
#else
    const int planned = 0;
#endif
    for (int j = 0; j < nets[1].n_layers; j++) {
        const Layer *l = &nets[1].layers[j];
        CHECK(!nets[0].layers[j].nhwc_to);
        CHECK(!l->nhwc_to || l->nhwc_to->nhwc_from == l);
        if (planned && want[j] != '?' && (l->nhwc_to != NULL) != (want[j] == 'n')) {
            fprintf(stderr, "FAIL %s: layer %d's output is %s\n", label, j,
                    l->nhwc_to ? "handed on in nhwc" : "not handed on in nhwc");
            check_failures++;
        }
    }
    if (want_blocked)
        check_plan(label, nets, want_blocked);
    const Layer *lr = &nets[0].layers[nets[0].n_layers - 1];
    const Layer *ld = &nets[1].layers[nets[1].n_layers - 1];
    const size_t out_n = (size_t)nets[0].batch * shape_size(lr->out_shape);
    check_close(label, "output", ld->out, lr->out, out_n);
    for (int k = 0; k < 2; k++) {
        nets[k].train = 1;
        net_forward(&nets[k]);
    }
    char what[160];
    snprintf(what, sizeof what, "%s, training forward", label);
    check_close(what, "output", ld->out, lr->out, out_n);
    net_free(&nets[0]);
    net_free(&nets[1]);
}

/* The mobile nets' blocks in channel counts that are not whole blocks of 16 (mobilenet_v3's
 * 24/72/40/120, efficientnet's swish, shufflenet's linear 3x3/2 depthwise): a 3x3/2 stem with
 * hardswish; 1x1 expansions, 3x3 and 5x5 depthwise convolutions at stride 1 and 2, linear 1x1
 * projections, with relu, hardswish and swish; squeeze-excitations with relu and hardsigmoid
 * (mobilenet_v3) or swish and logistic (efficientnet) on 1x1 maps; [shortcut]s; a 1x1 with a bias
 * (no batch norm); a global average pooling. Every activation fused into oneDNN's forward. A
 * convolution read only by the next hands it nhwc, into a [shortcut] too (24 and 40 channels: a
 * last tile of 8), not into [scale_channels], at batch 3 and 1 (primitives remade); on 1x1 maps
 * either ('?': nhwc is NCHW there). */
static void test_nhwc_chain(void)
{
    const char *body =
        "[convolutional]\nfilters=24\nsize=3\nstride=2\npad=1\nbatch_normalize=1\n"
        "activation=hardswish\n"
        "[convolutional]\nfilters=72\nsize=1\nbatch_normalize=1\nactivation=relu\n"
        "[convolutional]\nfilters=72\nsize=3\npad=1\ngroups=72\nbatch_normalize=1\n"
        "activation=relu\n"
        "[convolutional]\nfilters=24\nsize=1\nbatch_normalize=1\nactivation=linear\n"
        "[shortcut]\nfrom=-4\nactivation=linear\n"
        "[convolutional]\nfilters=72\nsize=1\nbatch_normalize=1\nactivation=hardswish\n"
        "[convolutional]\nfilters=72\nsize=5\nstride=2\npad=1\ngroups=72\nbatch_normalize=1\n"
        "activation=hardswish\n"
        "[avgpool]\n"
        "[convolutional]\nfilters=24\nsize=1\nactivation=relu\n"
        "[convolutional]\nfilters=72\nsize=1\nactivation=hardsigmoid\n"
        "[scale_channels]\nfrom=-4\n"
        "[convolutional]\nfilters=40\nsize=1\nbatch_normalize=1\nactivation=linear\n"
        "[convolutional]\nfilters=120\nsize=1\nbatch_normalize=1\nactivation=swish\n"
        "[convolutional]\nfilters=120\nsize=5\npad=1\ngroups=120\nbatch_normalize=1\n"
        "activation=swish\n"
        "[avgpool]\n"
        "[convolutional]\nfilters=32\nsize=1\nactivation=swish\n"
        "[convolutional]\nfilters=120\nsize=1\nactivation=logistic\n"
        "[scale_channels]\nfrom=-4\n"
        "[convolutional]\nfilters=40\nsize=1\nbatch_normalize=1\nactivation=linear\n"
        "[shortcut]\nfrom=-8\nactivation=linear\n"
        "[convolutional]\nfilters=40\nsize=3\nstride=2\npad=1\ngroups=40\nbatch_normalize=1\n"
        "activation=linear\n"
        "[convolutional]\nfilters=20\nsize=1\nactivation=relu\n"
        "[avgpool]\n";
    check_nhwc_chain("nhwc chain", 3, ".nnn.n..?...n..?..n.n..", NULL, body);
    check_nhwc_chain("nhwc chain, batch 1", 1, NULL, NULL, body);
}

/* A squeeze-excitation of whole channel blocks (mobilenet_v3's 480/672/960, efficientnet's
 * 144-1152): the depthwise convolution's output blocked into both its readers, the [avgpool] and
 * [scale_channels], whose output stays blocked into the projection; the excitation's 1x1
 * convolutions on 1x1 maps, the squeeze's 24 channels blocked into the second where they are
 * whole blocks (8 lanes, AVX2), plain where they are not (16 lanes, AVX-512). */
static void test_squeeze_excite_blocked(void)
{
    check_nhwc_chain("squeeze-excitation blocked", 3, "....?....",
                     24 % DNNL_LANES == 0 ? "bbb.b.bb." : "bbb...bb.",
                     "[convolutional]\nfilters=32\nsize=3\nstride=2\npad=1\nbatch_normalize=1\n"
                     "activation=hardswish\n"
                     "[convolutional]\nfilters=96\nsize=1\nbatch_normalize=1\n"
                     "activation=hardswish\n"
                     "[convolutional]\nfilters=96\nsize=5\npad=1\ngroups=96\n"
                     "batch_normalize=1\nactivation=hardswish\n"
                     "[avgpool]\n"
                     "[convolutional]\nfilters=24\nsize=1\nactivation=relu\n"
                     "[convolutional]\nfilters=96\nsize=1\nactivation=hardsigmoid\n"
                     "[scale_channels]\nfrom=-4\n"
                     "[convolutional]\nfilters=16\nsize=1\nbatch_normalize=1\n"
                     "activation=linear\n"
                     "[avgpool]\n");
}

/* A training net of body (after a [net] of batch 3, 3 channels, w x h) on engines[0] (plain
 * layouts) and engines[1]: the layouts as want (check_plan), the last output, the input gradient
 * and every parameter's gradient within 1e-5, then those of an inference forward; the second
 * net's training step run again on a new net (engines[2], the same) gives the same bytes. */
static void check_train_chain_on(const char *label, const char *const engines[3], int w, int h,
                                 const char *want, const char *body)
{
    Net nets[3];
    for (int k = 0; k < 3; k++) {
        char text[4096];
        snprintf(text, sizeof text,
                 "[net]\nbatch=3\nwidth=%d\nheight=%d\nchannels=3\nengine=%s\n%s", w, h, engines[k],
                 body);
        if (run_text(text, label, 1, &nets[k])) {
            for (int i = 0; i < k; i++)
                net_free(&nets[i]);
            return;
        }
    }
    check_plan(label, nets, want);
    const int last = nets[0].n_layers - 1;
    const size_t out_n = (size_t)nets[0].batch * shape_size(nets[0].layers[last].out_shape);
    const size_t in_n = (size_t)nets[0].batch * shape_size(nets[0].in_shape);
    check_close(label, "output", nets[1].layers[last].out, nets[0].layers[last].out, out_n);
    check_close(label, "input gradient", nets[1].input_delta, nets[0].input_delta, in_n);
    CHECK(!memcmp(nets[1].layers[last].out, nets[2].layers[last].out, out_n * sizeof(float)));
    CHECK(!memcmp(nets[1].input_delta, nets[2].input_delta, in_n * sizeof(float)));
    for (int j = 0; j <= last; j++) {
        const Layer *lr = &nets[0].layers[j], *ld = &nets[1].layers[j];
        for (int p = 0; p < lr->n_params; p++) {
            char what[96];
            snprintf(what, sizeof what, "layer %d's %s%s", j, lr->params[p].name,
                     lr->params[p].trainable ? " gradient" : "");
            const float *got = lr->params[p].trainable ? ld->params[p].grad : ld->params[p].data;
            const float *want_p = lr->params[p].trainable ? lr->params[p].grad : lr->params[p].data;
            check_close(label, what, got, want_p, lr->params[p].count);
            const float *again = lr->params[p].trainable ? nets[2].layers[j].params[p].grad
                                                         : nets[2].layers[j].params[p].data;
            CHECK(!memcmp(got, again, lr->params[p].count * sizeof *got));
        }
    }
    /* The training net's inference forward (evaluation: running statistics, in nChw8c too). */
    for (int k = 0; k < 2; k++) {
        nets[k].train = 0;
        net_forward(&nets[k]);
    }
    char what[160];
    snprintf(what, sizeof what, "%s, inference forward", label);
    check_close(what, "output", nets[1].layers[last].out, nets[0].layers[last].out, out_n);
    for (int k = 0; k < 3; k++)
        net_free(&nets[k]);
}

/* check_train_chain_on the reference and on oneDNN in nChw8c. */
static void check_train_chain(const char *label, int w, int h, const char *want, const char *body)
{
    const char *const engines[3] = {"ref", "dnnl\ndnnl_train_blocked=1",
                                    "dnnl\ndnnl_train_blocked=1"};
    check_train_chain_on(label, engines, w, h, want, body);
}

/* resnet's blocks in training: conv-BN-relu, conv-BN-leaky (both batch norms with the activation
 * in their passes), conv-leaky with a bias, conv-BN-linear, a
 * shortcut with relu, a downsampling block with [route] back to its input and the 1x1/2
 * projection, a [route] of two inputs, a global average pooling (a blocked input and delta);
 * every output between them in nChw8c on oneDNN. */
static const char *train_chain =
    "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
    "activation=relu\n"
    "[convolutional]\nfilters=16\nsize=1\nbatch_normalize=1\nactivation=leaky\n"
    "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=leaky\n"
    "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
    "activation=linear\n"
    "[shortcut]\nfrom=-3\nactivation=relu\n"
    "[convolutional]\nfilters=32\nsize=3\nstride=2\npad=1\nbatch_normalize=1\n"
    "activation=relu\n"
    "[convolutional]\nfilters=32\nsize=3\npad=1\nbatch_normalize=1\n"
    "activation=linear\n"
    "[route]\nlayers=-3\n"
    "[convolutional]\nfilters=32\nsize=1\nstride=2\nbatch_normalize=1\n"
    "activation=linear\n"
    "[shortcut]\nfrom=-3\nactivation=relu\n"
    "[route]\nlayers=-1,-5\n"
    "[avgpool]\n";

static void test_train_chain(void)
{
    check_train_chain("training chain", 9, 10, "bbbbbbbbbbb.", train_chain);
}

/* train_chain in precision=bf16 on oneDNN's bf16 kernels, plain and in nChw8c (float32 between
 * the layers, rounded into bf16 nChw8c by each convolution's reorders): the same bf16 operands
 * (the rounding is elementwise either way) and float32 sums; all plain where the CPU has no
 * bf16 instructions (the reference runs them). */
static void test_train_chain_bf16(void)
{
    const char *const engines[3] = {"dnnl\nprecision=bf16\ndnnl_train_blocked=0",
                                    "dnnl\nprecision=bf16\ndnnl_train_blocked=1",
                                    "dnnl\nprecision=bf16\ndnnl_train_blocked=1"};
    check_train_chain_on("bf16 training chain", engines, 9, 10,
                         dnnl_conv_bf16_runs() ? "bbbbbbbbbbb." : "............", train_chain);
}

/* A convolution's backward writes its input's delta whole where the net leaves it unzeroed
 * (Layer.in_delta_fresh: the only reader of the layer before): on oneDNN straight from the
 * primitive in nChw8c, after zeroing where plain, and on the reference: the same bits over old
 * NaNs as over zeros, in float32 and bf16. */
static void test_fresh_input_delta(void)
{
    const char *engines[] = {"ref", "dnnl", "dnnl\nprecision=bf16",
                             "dnnl\nprecision=bf16\ndnnl_train_blocked=0"};
    for (size_t k = 0; k < sizeof engines / sizeof engines[0]; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "[net]\nbatch=2\nwidth=7\nheight=6\nchannels=3\nengine=%s\n"
                 "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
                 "activation=relu\n"
                 "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
                 "activation=linear\n"
                 "[convolutional]\nfilters=16\nsize=1\nactivation=relu\n",
                 engines[k]);
        Net net;
        if (run_text(text, "fresh input delta", 1, &net))
            continue;
        Layer *l0 = &net.layers[0], *l1 = &net.layers[1], *l2 = &net.layers[2];
        CHECK(l1->in_delta_fresh[0] && l2->in_delta_fresh[0]);
        const size_t n0 = (size_t)net.batch * shape_size(l0->out_shape);
        const size_t n2 = (size_t)net.batch * shape_size(l2->out_shape);
        const size_t nw = layer_param(l0, "weights")->count;
        float *seed = malloc(n2 * sizeof *seed), *dw[2], *dx[2];
        const size_t in_n = (size_t)net.batch * shape_size(net.in_shape);
        for (size_t i = 0; i < n2; i++)
            seed[i] = (float)(i % 7) - 3.0f;
        for (int r = 0; r < 2; r++) {
            /* each backward after its own forward, as in a step */
            net_forward(&net);
            const float old = r ? NAN : 0.0f;
            for (size_t i = 0; i < n0; i++)
                l0->delta[i] = l1->delta[i] = old;
            memcpy(l2->delta, seed, n2 * sizeof *seed);
            net_zero_grads(&net);
            net_backward(&net);
            dw[r] = malloc(nw * sizeof *dw[r]);
            dx[r] = malloc(in_n * sizeof *dx[r]);
            memcpy(dw[r], layer_param(l0, "weights")->grad, nw * sizeof *dw[r]);
            memcpy(dx[r], net.input_delta, in_n * sizeof *dx[r]);
        }
        CHECK(!memcmp(dw[0], dw[1], nw * sizeof *dw[0]));
        CHECK(!memcmp(dx[0], dx[1], in_n * sizeof *dx[0]));
        for (int r = 0; r < 2; r++)
            free(dw[r]), free(dx[r]);
        free(seed);
        net_free(&net);
    }
}

/* With dnnl_train_blocked=0 (the default without AVX-512) a training net on oneDNN keeps every
 * layer plain. */
static void test_train_plain_by_default(void)
{
    Net net;
    Error e = {0};
    char text[4096];
    snprintf(
        text, sizeof text,
        "[net]\nbatch=3\nwidth=9\nheight=10\nchannels=3\nengine=dnnl\ndnnl_train_blocked=0\n%s",
        train_chain);
    CHECK(!net_build_from_text(&net, text, "t.cfg", 1, 5, &e) && !net_resize(&net, 3, 1, &e));
    for (int j = 0; j < net.n_layers; j++)
        CHECK(!blocked_out(&net.layers[j]));
    net_free(&net);
}

/* resnet's stem in training: a 3x3/2 max pooling with darknet's padding (windows clipped at the
 * borders), a block with its shortcut, a 2x2/1 max pooling (uneven windows), a 1x1 convolution
 * with a bias and the global average pooling; the argmax and the gradients in nChw8c. */
static void test_train_pool_chain(void)
{
    check_train_chain("training chain through pooling", 11, 13, "bbbbbbb.",
                      "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
                      "activation=relu\n"
                      "[maxpool]\nsize=3\nstride=2\npadding=2\n"
                      "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
                      "activation=relu\n"
                      "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\n"
                      "activation=linear\n"
                      "[shortcut]\nfrom=-3\nactivation=relu\n"
                      "[maxpool]\nsize=2\nstride=1\n"
                      "[convolutional]\nfilters=16\nsize=1\nactivation=linear\n"
                      "[avgpool]\n");
}

/* The primitives are made at resize: another batch size gets new ones, the same one keeps them. */
static void test_resize_keeps_results(void)
{
    Net a, b;
    Error e = {0};
    char text[1024];
    cfg_text(&body_case, "dnnl", text, sizeof text);
    if (net_build_from_text(&a, text, "t.cfg", 1, 5, &e) ||
        net_build_from_text(&b, text, "t.cfg", 1, 5, &e)) {
        fprintf(stderr, "FAIL resize: %s\n", e.msg);
        check_failures++;
        return;
    }
    CHECK(!net_resize(&a, 3, 0, &e) && !net_resize(&b, 5, 0, &e) && !net_resize(&b, 3, 0, &e));
    for (size_t i = 0; i < 3 * shape_size(a.in_shape); i++)
        a.input[i] = b.input[i] = (float)(i % 7) - 3.0f;
    a.train = b.train = 1;
    net_forward(&a);
    net_forward(&b);
    check_close("resize", "output", b.layers[0].out, a.layers[0].out,
                3 * shape_size(a.layers[0].out_shape));
    net_free(&a);
    net_free(&b);
}

/* An inference net on oneDNN folds and reorders its weights once (ConvDnnl.w_packed) for the
 * forwards of the same weights: after new weights and running statistics (a load: then
 * net_weights_changed) its forward follows them, within 1e-5 of the reference's; after a
 * training-mode forward (running statistics moved) it folds them anew by itself. */
static void test_packed_weights_follow_changes(void)
{
    const char *engines[2] = {"ref", "dnnl"};
    Net nets[2];
    for (int k = 0; k < 2; k++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "[net]\nbatch=3\nwidth=7\nheight=6\nchannels=3\nengine=%s\n"
                 "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
                 "[convolutional]\nfilters=16\nsize=1\nbatch_normalize=1\nactivation=linear\n"
                 "[shortcut]\nfrom=-2\nactivation=relu\n"
                 "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=leaky\n",
                 engines[k]);
        if (run_text(text, "packed weights", 0, &nets[k])) {
            if (k)
                net_free(&nets[0]);
            return;
        }
    }
    const Layer *lr = &nets[0].layers[nets[0].n_layers - 1];
    const Layer *ld = &nets[1].layers[nets[1].n_layers - 1];
    const size_t out_n = (size_t)nets[0].batch * shape_size(lr->out_shape);
    CHECK(nets[1].weights_kept);
    CHECK(!dnnl_conv_built() || ((Conv *)nets[1].layers[0].priv)->cpu->dnnl.w_packed);
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < nets[k].n_layers; j++) {
            Layer *l = &nets[k].layers[j];
            for (int p = 0; p < l->n_params; p++)
                for (size_t i = 0; i < l->params[p].count; i++)
                    l->params[p].data[i] *= l->params[p].trainable ? -0.5f : 1.5f;
        }
        net_weights_changed(&nets[k]);
        net_forward(&nets[k]);
    }
    check_close("packed weights", "output after new weights", ld->out, lr->out, out_n);
    for (int k = 0; k < 2; k++) {
        nets[k].train = 1; /* moves the running statistics */
        net_forward(&nets[k]);
        CHECK(!nets[k].weights_kept);
        nets[k].train = 0;
        net_forward(&nets[k]);
    }
    check_close("packed weights", "output after a training-mode forward", ld->out, lr->out, out_n);
    net_free(&nets[0]);
    net_free(&nets[1]);
}

int main(void)
{
    test_residual_adds();
    test_inference_chain();
    test_chain_through_pool_route();
    test_nhwc_chain();
    test_squeeze_excite_blocked();
    test_train_chain();
    test_train_chain_bf16();
    test_fresh_input_delta();
    test_train_plain_by_default();
    test_train_pool_chain();
    test_resize_keeps_results();
    test_packed_weights_follow_changes();
    return check_report("test_dnnl_conv");
}
