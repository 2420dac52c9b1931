/* [region] against scripts/ref/make_region.py (pjreddie's darknet's outputs, delta and cost
 * written from its definitions in float64): five [region] layers (logistic classes with rescore
 * and the predicted shapes choosing the anchor; softmax classes with bias_match and the scales;
 * background=1 with softmax over the background score and the classes, and with logistic classes;
 * map=) on the same input and truth boxes, with the anchor prior (few images seen) and without
 * it; the gradient the backward passes into the input against autograd's of the loss darknet's
 * delta comes from (softmax) and against the script's -delta through the logistic's derivative
 * (background); and the cfg checks.
 *
 * Tolerance: REF_TOLERANCE (1e-4 relative, ref_fixture.h's measure). cdl computes in float32
 * (logistic, softmax and exp lose ~1e-7 relative); the script checks that every IoU it compares
 * with a threshold, and every choice of anchor, is more than 1e-4 from deciding otherwise. */
#include <stdio.h>
#include <stdlib.h>

#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "layers/region.h"
#include "ref_fixture.h"
#include "ref_net.h"

static const char *const cases[] = {"logistic", "softmax", "background", "background_logistic",
                                    "map"};
#define N_CASES 5

/* The fixture and its net (layer 1 + 2k the [region] of cases[k]); -1 after a message. */
static int load_region_net(RefFixture *f, Net *net)
{
    if (ref_fixture_load("tests/ref/region.ref", f))
        return -1;
    if (ref_net_build(net, f, "tests/ref/region.cfg", NULL, 0, 2)) {
        ref_fixture_free(f);
        return -1;
    }
    const RefTensor *truth = ref_fixture_get(f, "truth");
    CHECK(truth && truth->ndim == 3 && truth->dims[2] == TRUTH_FLOATS);
    if (truth) {
        net->truth = truth->data;
        net->truth_boxes = truth->dims[1];
    }
    net->train = 1;
    return 0;
}

/* A training forward after images_seen images, checked against the fixture's outputs, deltas
 * (suffix "" or "_late") and the loss, darknet's cost per image summed over the layers. */
static void check_forward(const RefFixture *f, Net *net, uint64_t images_seen, const char *suffix)
{
    net->images_seen = images_seen;
    net_forward(net);
    const size_t n = (size_t)net->batch * shape_size(net->layers[1].out_shape);
    float cost_sum = 0;
    for (int k = 0; k < N_CASES; k++) {
        const Layer *l = &net->layers[1 + 2 * k];
        char name[64];
        snprintf(name, sizeof name, "%s.out", cases[k]);
        ref_expect_close(f, name, l->out, n);
        snprintf(name, sizeof name, "%s.delta%s", cases[k], suffix);
        ref_expect_close(f, name, ((const Region *)l->priv)->delta, n);
        snprintf(name, sizeof name, "%s.cost%s", cases[k], suffix);
        const RefTensor *cost = ref_fixture_get(f, name);
        CHECK(cost != NULL);
        cost_sum += cost ? cost->data[0] : 0;
    }
    const float want_loss = cost_sum / (float)net->batch;
    CHECK_NEAR(net->loss, want_loss, 1e-4 * want_loss);
}

static void test_region_matches_darknet_reference(void)
{
    RefFixture f;
    Net net;
    if (load_region_net(&f, &net))
        return;
    check_forward(&f, &net, 0, "");
    check_forward(&f, &net, REGION_PRIOR_IMAGES, "_late");
    net_free(&net);
    ref_fixture_free(&f);
}

/* What the layer of cases[k] passes into the input (through the [route] and the identity), the
 * other layers' deltas zeroed after the forward so that they add nothing: the fixture's
 * CASE.grad. */
static void check_backward(int k)
{
    RefFixture f;
    Net net;
    if (load_region_net(&f, &net))
        return;
    net.images_seen = 0;
    net_forward(&net);
    const size_t n = (size_t)net.batch * shape_size(net.in_shape);
    for (int other = 0; other < N_CASES; other++) {
        float *delta = ((Region *)net.layers[1 + 2 * other].priv)->delta;
        for (size_t i = 0; other != k && i < n; i++)
            delta[i] = 0;
    }
    net_zero_grads(&net);
    net_backward(&net);
    char name[64];
    snprintf(name, sizeof name, "%s.grad", cases[k]);
    ref_expect_close(&f, name, net.input_delta, n);
    net_free(&net);
    ref_fixture_free(&f);
}

/* The softmax case's gradient is that of the loss whose negative gradient darknet's delta is (its
 * targets fixed): the script took it by autograd and checked it by central differences. */
static void test_region_backward_is_the_gradient_of_its_loss(void)
{
    check_backward(1);
}

/* background=1 passes its entry 4's delta to the input as it is (no logistic's derivative): a
 * surrogate, not the gradient of a loss of the softmax it is in. */
static void test_region_background_backward_passes_its_delta(void)
{
    check_backward(2);
}

/* Without truth boxes the layer only computes its outputs: no loss, no gradient. */
static void test_region_without_truth_adds_no_loss(void)
{
    RefFixture f;
    Net net;
    if (load_region_net(&f, &net))
        return;
    net.truth = NULL;
    net_forward(&net);
    CHECK(net.loss == 0);
    ref_expect_close(&f, "softmax.out", net.layers[3].out,
                     (size_t)net.batch * shape_size(net.layers[3].out_shape));
    net_zero_grads(&net);
    net_backward(&net);
    const size_t n = (size_t)net.batch * shape_size(net.in_shape);
    for (size_t i = 0; i < n; i++)
        CHECK(net.input_delta[i] == 0);
    net_free(&net);
    ref_fixture_free(&f);
}

#define REGION_HEAD "[net]\nwidth=8\nheight=8\nchannels=3\n[convolutional]\nfilters=14\nsize=1\n"

static void test_region_cfg_errors(void)
{
    expect_cfg_error(REGION_HEAD "[region]\nclasses=2\nnum=3\n",
                     "t.cfg:8: layer 1 [region]: layer 0 [convolutional] at line 5 gives 14 "
                     "channels; classes=2 and num=3 need (classes + 5) x 3 = 21 (set filters=21 "
                     "there)");
    expect_cfg_error(REGION_HEAD "[region]\nclasses=2\nnum=2\nanchors=1,2,3\n",
                     "t.cfg:11: bad value '1,2,3' for key 'anchors' in [region]: expected 4 "
                     "values");
    expect_cfg_error(REGION_HEAD "[region]\nclasses=2\nnum=2\ncoords=8\n",
                     "t.cfg:11: bad value '8' for key 'coords' in [region]: only 4");
    expect_cfg_error(REGION_HEAD "[region]\nclasses=2\nnum=2\nbackground=2\n",
                     "t.cfg:11: bad value '2' for key 'background' in [region]: expected 0 or 1");
    expect_cfg_error(REGION_HEAD "[region]\nclasses=2\nnum=2\ntree=9k.tree\n",
                     "t.cfg:11: unsupported value '9k.tree' for key 'tree' in [region]");
}

int main(void)
{
    test_region_matches_darknet_reference();
    test_region_backward_is_the_gradient_of_its_loss();
    test_region_background_backward_passes_its_delta();
    test_region_without_truth_adds_no_loss();
    test_region_cfg_errors();
    return check_report("test_region");
}
