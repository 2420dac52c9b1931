/* An image net at a runtime spatial size (core/net.h net_set_size, darknet's random=1): a
 * training pass of a net sized for 64x64 and set to a smaller size, going down and up again,
 * gives the outputs, darknet's loss and every gradient a net built at that size gives (1e-5), on
 * the CPU's reference and oneDNN engines (oneDNN's blocked training layouts too) and on the GPU
 * (the simulator's in GPU=sim builds); sizes a layer cannot take, or larger than the plan, are
 * refused and leave the net as it was; families that cannot change size say so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl_conv.h"
#include "check.h"
#include "core/net.h"
#include "data/boxes.h"

/* A yolov3-tiny-shaped net with every family set_size serves in such nets: convolutions with
 * batch norm, strided and stride-1 maxpools, a [shortcut], a [route] of one and of two layers,
 * [upsample], [dropout] (probability 0), a [batchnorm] and two [yolo] heads of 2 classes.
 * %s: the [net] keys of the engine, %d %d: width and height. */
static const char *const NET_CFG =
    "[net]\nbatch=2\nchannels=3\nwidth=%d\nheight=%d\n%s"
    "[convolutional]\nfilters=8\nsize=3\npad=1\nbatch_normalize=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=leaky\n"
    "[shortcut]\nfrom=-2\nactivation=linear\n"
    "[maxpool]\nsize=2\nstride=1\n"
    "[convolutional]\nfilters=21\nsize=1\nactivation=linear\n"
    "[yolo]\nmask=3,4,5\nanchors=6,8, 10,14, 16,12, 20,24, 30,22, 40,40\nclasses=2\nnum=6\n"
    "[route]\nlayers=-3\n"
    "[convolutional]\nfilters=8\nsize=1\nbatch_normalize=1\nactivation=leaky\n"
    "[dropout]\nprobability=0\n"
    "[upsample]\nstride=2\n"
    "[route]\nlayers=-1,2\n"
    "[batchnorm]\n"
    "[convolutional]\nfilters=21\nsize=1\nactivation=linear\n"
    "[yolo]\nmask=0,1,2\nanchors=6,8, 10,14, 16,12, 20,24, 30,22, 40,40\nclasses=2\nnum=6\n";

enum { BATCH = 2, PLANNED = 64, YOLO_FIRST = 8 };

/* Two boxes in sample 0, one in sample 1 (relative coordinates, any size). */
static const float BOXES[BATCH][2][TRUTH_FLOATS] = {
    {{0.3f, 0.4f, 0.2f, 0.3f, 1}, {0.7f, 0.6f, 0.5f, 0.4f, 0}},
    {{0.5f, 0.5f, 0.3f, 0.2f, 1}, {0}},
};

typedef struct Setup {
    const char *name;
    Backend backend;
    const char *keys; /* [net] keys */
    int (*runs)(void);
} Setup;

static int always(void)
{
    return 1;
}

static int build(Net *net, const Setup *s, int w, int h, float *truth, Error *e)
{
    char text[4096];
    snprintf(text, sizeof text, NET_CFG, w, h, s->keys);
    int st = net_build_from_text_on(net, text, "t.cfg", 1, 7, (NetPlacement){s->backend, 0}, e);
    if (st)
        return st;
    const int slots = net_truth_boxes(net);
    memset(truth, 0, (size_t)BATCH * slots * TRUTH_FLOATS * sizeof *truth);
    for (int b = 0; b < BATCH; b++)
        memcpy(truth + (size_t)b * slots * TRUTH_FLOATS, BOXES[b], sizeof BOXES[b]);
    net_set_truth(net, truth);
    net->train = 1;
    return CDL_OK;
}

/* What a training pass leaves: the loss, the first head's output and every gradient. */
typedef struct Pass {
    float loss;
    float *head, *grads;
    size_t n_head;
} Pass;

/* One training pass on an input drawn from the same sequence at the net's current size. */
static void train_pass(Net *net, Pass *p)
{
    const size_t n_in = (size_t)BATCH * shape_size(net->in_shape);
    unsigned state = 11;
    check_fill_uniform(net_host_input(net), n_in, -1.0f, &state);
    net_commit_batch(net);
    net_zero_grads(net);
    net_forward(net);
    Error e = {0};
    CHECK(net_sync(net, &e) == CDL_OK);
    p->loss = net->loss;
    const Layer *head = &net->layers[YOLO_FIRST];
    p->n_head = (size_t)BATCH * shape_size(head->out_shape);
    p->head = malloc(p->n_head * sizeof *p->head);
    net->backend->download(p->head, head->out, p->n_head * sizeof *p->head);
    net_backward(net);
    CHECK(net_sync(net, &e) == CDL_OK);
    p->grads = malloc(net->n_params * sizeof *p->grads);
    net->backend->download(p->grads, net->grads, net->n_params * sizeof *p->grads);
}

static void pass_free(Pass *p)
{
    free(p->head);
    free(p->grads);
}

/* The net sized for PLANNED and set to each size in turn against a net built at that size. */
static void test_runtime_size_matches_built(const Setup *s)
{
    if (!s->runs())
        return;
    Net net;
    Error e = {0};
    float truth_sized[BATCH * 256 * TRUTH_FLOATS], truth_built[BATCH * 256 * TRUTH_FLOATS];
    if (build(&net, s, PLANNED, PLANNED, truth_sized, &e) || net_resize(&net, BATCH, 0, &e)) {
        fprintf(stderr, "FAIL %s: build: %s\n", s->name, e.msg);
        check_failures++;
        return;
    }
    CHECK(net_can_set_size(&net, &e));
    const int sizes[][2] = {{32, 32}, {64, 32}, {48, 64}, {64, 64}, {32, 48}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        const int w = sizes[k][0], h = sizes[k][1];
        Net ref;
        if (net_set_size(&net, w, h, &e) || build(&ref, s, w, h, truth_built, &e) ||
            net_resize(&ref, BATCH, 0, &e)) {
            fprintf(stderr, "FAIL %s at %dx%d: %s\n", s->name, w, h, e.msg);
            check_failures++;
            continue;
        }
        CHECK(net.layers[YOLO_FIRST].out_shape.w == w / 4 &&
              net.layers[YOLO_FIRST].out_shape.h == h / 4);
        CHECK(net.layers[net.n_layers - 1].out_shape.w == w / 2);
        if (strstr(s->keys, "dnnl")) /* the convolutions run on oneDNN at the new size */
            CHECK(net.layers[0].engine && !strcmp(net.layers[0].engine, "dnnl"));
        Pass got, want;
        net.draw_id = ref.draw_id = k;
        train_pass(&net, &got);
        train_pass(&ref, &want);
        CHECK(want.loss > 0);
        CHECK_NEAR(got.loss, want.loss, 1e-5 * fabs(want.loss));
        CHECK(got.n_head == want.n_head);
        const double head_err = check_rel_error(got.head, want.head, want.n_head);
        const double grad_err = check_rel_error(got.grads, want.grads, net.n_params);
        if (!(head_err < 1e-5 && grad_err < 1e-5)) {
            fprintf(stderr, "FAIL %s at %dx%d: head %g, gradients %g from the built net's\n",
                    s->name, w, h, head_err, grad_err);
            check_failures++;
        }
        check_count++;
        pass_free(&got);
        pass_free(&want);
        net_free(&ref);
    }
    net_free(&net);
}

/* A net whose kernels were already measured at its built size (what they derive from the shapes
 * made there, as a memory estimate does), set to a smaller size before its net_resize, computes as
 * a net built at that size. */
static void test_size_set_before_resize(void)
{
    const Setup s = {"ref", CDL_BACKEND_CPU, "engine=ref\n", always};
    Net net, ref;
    Error e = {0};
    size_t bytes;
    float truth[BATCH * 256 * TRUTH_FLOATS], truth_ref[BATCH * 256 * TRUTH_FLOATS];
    if (build(&net, &s, PLANNED, PLANNED, truth, &e) ||
        net_activation_bytes(&net, BATCH, &bytes, &e) || net_set_size(&net, 32, 32, &e) ||
        net_resize(&net, BATCH, 0, &e) || build(&ref, &s, 32, 32, truth_ref, &e) ||
        net_resize(&ref, BATCH, 0, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return;
    }
    Pass got, want;
    train_pass(&net, &got);
    train_pass(&ref, &want);
    CHECK_NEAR(got.loss, want.loss, 1e-5 * fabs(want.loss));
    CHECK(check_rel_error(got.grads, want.grads, net.n_params) < 1e-5);
    pass_free(&got);
    pass_free(&want);
    net_free(&ref);
    net_free(&net);
}

/* A size whose route inputs disagree (34: 17 rows pool to 9, which upsample to 18) and one past
 * the plan are refused; the net keeps its size and still trains. */
static void test_bad_sizes_refused(void)
{
    const Setup s = {"ref", CDL_BACKEND_CPU, "engine=ref\n", always};
    Net net;
    Error e = {0};
    float truth[BATCH * 256 * TRUTH_FLOATS];
    if (build(&net, &s, PLANNED, PLANNED, truth, &e) || net_resize(&net, BATCH, 0, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return;
    }
    CHECK(net_set_size(&net, 32, 32, &e) == CDL_OK);
    CHECK(net_set_size(&net, 34, 34, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "[route]: inputs must have the same height and width");
    CHECK(net_set_size(&net, 96, 64, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "sized for 64x64");
    CHECK(net.in_shape.w == 32 && net.layers[YOLO_FIRST].out_shape.w == 8);
    Pass p;
    train_pass(&net, &p);
    CHECK(isfinite(p.loss) && p.loss > 0);
    pass_free(&p);
    net_free(&net);
}

/* A [connected] layer takes a fixed number of inputs. */
static void test_fixed_size_family_named(void)
{
    Net net;
    Error e = {0};
    if (net_build_from_text(&net,
                            "[net]\nbatch=1\nchannels=1\nwidth=4\nheight=4\n"
                            "[convolutional]\nfilters=2\nsize=3\npad=1\n[connected]\noutput=3\n",
                            "t.cfg", 1, 1, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return;
    }
    CHECK(!net_can_set_size(&net, &e));
    CHECK_CONTAINS(e.msg, "layer 1 [connected] cannot change its input size");
    net_free(&net);
}

static int gpu_runs(void)
{
    return backend_find(CDL_BACKEND_GPU) != NULL;
}

int main(void)
{
    const Setup setups[] = {
        {"ref", CDL_BACKEND_CPU, "engine=ref\n", always},
        {"dnnl", CDL_BACKEND_CPU, "engine=dnnl\ndnnl_train_blocked=0\n", dnnl_conv_built},
        {"dnnl blocked", CDL_BACKEND_CPU, "engine=dnnl\ndnnl_train_blocked=1\n", dnnl_conv_built},
        {"gpu", CDL_BACKEND_GPU, "", gpu_runs},
    };
    for (size_t k = 0; k < sizeof setups / sizeof setups[0]; k++)
        test_runtime_size_matches_built(&setups[k]);
    test_size_set_before_resize();
    test_bad_sizes_refused();
    test_fixed_size_family_named();
    return check_report("net_size");
}
