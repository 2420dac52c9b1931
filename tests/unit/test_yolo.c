/* [yolo] against scripts/ref/make_yolo.py (darknet's delta and cost written from its definitions
 * in float64): twelve [yolo] layers (mse; giou with iou_thresh, scale_x_y and max_delta; diou with
 * truth_thresh; ciou with iou_thresh of kind giou; focal_loss; label_smooth_eps;
 * objectness_smooth; new_coords with scale_x_y 2, and with ciou; counters_per_class with mse and
 * with giou and objectness_smooth; map=, whose deltas the script checked against central
 * differences of the losses they are the gradients of where they are) on the same input and truth
 * boxes, then the gradient their backward passes into the input; and the cfg checks.
 *
 * Tolerance: REF_TOLERANCE (1e-4 relative, ref_fixture.h's measure). cdl computes in float32:
 * logistic and exp lose ~1e-7 relative, and the IoU gradients divide differences of box sides
 * (~0.1) by squared areas (~0.01), which can take that to ~1e-5; every threshold the fixture's
 * choices depend on is further than that from its value, so the choices are the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "layers/yolo.h"
#include "ref_fixture.h"
#include "ref_net.h"

static const char *const cases[] = {
    "mse",       "giou",      "diou",           "ciou",     "focal",           "smooth",
    "objsmooth", "newcoords", "newcoords_ciou", "counters", "counters_smooth", "map"};
#define N_CASES 12

/* The fixture and its net (layer 2k + 1 the [yolo] of cases[k]); -1 after a message. */
static int load_yolo_net(RefFixture *f, Net *net)
{
    if (ref_fixture_load("tests/ref/yolo.ref", f))
        return -1;
    if (ref_net_build(net, f, "tests/ref/yolo.cfg", NULL, 0, 2)) {
        ref_fixture_free(f);
        return -1;
    }
    return 0;
}

static void test_yolo_matches_darknet_reference(void)
{
    RefFixture f;
    Net net;
    if (load_yolo_net(&f, &net))
        return;
    const RefTensor *truth = ref_fixture_get(&f, "truth");
    CHECK(truth && truth->ndim == 3 && truth->dims[2] == TRUTH_FLOATS);
    if (!truth)
        return;
    net.truth = truth->data;
    net.truth_boxes = truth->dims[1];
    net.train = 1;
    net_forward(&net);
    const size_t n = (size_t)net.batch * shape_size(net.layers[1].out_shape);
    float cost_sum = 0;
    for (int k = 0; k < N_CASES; k++) {
        const Layer *l = &net.layers[1 + 2 * k];
        char name[64];
        snprintf(name, sizeof name, "%s.out", cases[k]);
        ref_expect_close(&f, name, l->out, n);
        snprintf(name, sizeof name, "%s.delta", cases[k]);
        ref_expect_close(&f, name, ((const Yolo *)l->priv)->delta, n);
        snprintf(name, sizeof name, "%s.cost", cases[k]);
        const RefTensor *cost = ref_fixture_get(&f, name);
        cost_sum += cost ? cost->data[0] : 0;
    }
    /* The net's loss is darknet's cost per image, summed over the layers. */
    const float want_loss = cost_sum / (float)net.batch;
    CHECK_NEAR(net.loss, want_loss, 1e-4 * want_loss);

    /* The input's gradient: minus every layer's delta over the batch (an identity and routes
     * pass it on); for mse, the script checked -delta against autograd of its loss. */
    net_zero_grads(&net);
    net_backward(&net);
    float *want = calloc(n, sizeof *want);
    CHECK(want != NULL);
    for (int k = 0; want && k < N_CASES; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s.delta", cases[k]);
        const RefTensor *delta = ref_fixture_get(&f, name);
        for (size_t i = 0; delta && i < n; i++)
            want[i] -= delta->data[i] / (float)net.batch;
    }
    if (want)
        CHECK(ref_max_rel_error(net.input_delta, want, n) < REF_TOLERANCE);
    free(want);
    net_free(&net);
    ref_fixture_free(&f);
}

/* Without truth boxes the layer only computes its outputs: no loss, no gradient. */
static void test_yolo_without_truth_adds_no_loss(void)
{
    RefFixture f;
    Net net;
    if (load_yolo_net(&f, &net))
        return;
    net.train = 1;
    net_forward(&net);
    CHECK(net.loss == 0);
    ref_expect_close(&f, "ciou.out", net.layers[7].out,
                     (size_t)net.batch * shape_size(net.layers[7].out_shape));
    net_zero_grads(&net);
    net_backward(&net);
    const size_t n = (size_t)net.batch * shape_size(net.in_shape);
    for (size_t i = 0; i < n; i++)
        CHECK(net.input_delta[i] == 0);
    net_free(&net);
    ref_fixture_free(&f);
}

#define YOLO_HEAD "[net]\nwidth=8\nheight=8\nchannels=3\n[convolutional]\nfilters=14\nsize=1\n"

static void test_yolo_cfg_errors(void)
{
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=2\nnum=3\nmask=0,1,2\n",
                     "t.cfg:8: layer 1 [yolo]: layer 0 [convolutional] at line 5 gives 14 "
                     "channels; classes=2 and 3 anchors in mask= need (classes + 5) x 3 = 21 (set "
                     "filters=21 there)");
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=2\nnum=3\nmask=0,3\n",
                     "t.cfg:11: bad value '0,3' for key 'mask' in [yolo]: anchor 3 is not among "
                     "num=3 anchors");
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=2\nnum=2\nanchors=1,2,3\n",
                     "t.cfg:11: bad value '1,2,3' for key 'anchors' in [yolo]: expected 4 values");
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=2\nnum=2\niou_loss=l1\n",
                     "t.cfg:11: bad value 'l1' for key 'iou_loss' in [yolo]: expected one of mse, "
                     "iou, giou, diou, ciou");
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=2\nnum=2\nnew_coords=2\n",
                     "t.cfg:11: bad value '2' for key 'new_coords' in [yolo]: expected 0 or 1");
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=2\nnum=2\ncounters_per_class=5,6,7\n",
                     "t.cfg:11: bad value '5,6,7' for key 'counters_per_class' in [yolo]: "
                     "expected 2 counts (one for each of classes=2), got 3");
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=2\nnum=2\ncounters_per_class=5,0\n",
                     "t.cfg:11: bad value '5,0' for key 'counters_per_class' in [yolo]: count 0 "
                     "(class 1) must be >= 1");
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=200\nnum=2\ncounters_per_class=1\n",
                     "t.cfg:11: bad value '1' for key 'counters_per_class' in [yolo]: cdl supports "
                     "it for at most 128 classes (classes=200)");
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=2\nnum=2\nmap=tests/ref/no_such.map\n",
                     "t.cfg:11: key 'map' in [yolo]: tests/ref/no_such.map: cannot open class "
                     "map");
    expect_cfg_error(YOLO_HEAD "[yolo]\nclasses=2\nnum=2\nfocal_loss=2\n",
                     "t.cfg:11: bad value '2' for key 'focal_loss' in [yolo]: expected 0 or 1");
    expect_cfg_error(
        YOLO_HEAD "[yolo]\nclasses=2\nnum=2\nlabel_smooth_eps=1.5\n",
        "t.cfg:11: bad value '1.5' for key 'label_smooth_eps' in [yolo]: must be <= 1");
    expect_cfg_error(
        YOLO_HEAD "[yolo]\nclasses=2\nnum=2\nobjectness_smooth=-1\n",
        "t.cfg:11: bad value '-1' for key 'objectness_smooth' in [yolo]: expected 0 or "
        "1");
}

/* map=FILE becomes class_map= of the file's table in the net's cfg (what a checkpoint keeps), and
 * a net built from that text has the same table without reading the file. */
static void test_yolo_map_file_kept_in_cfg(void)
{
    Net from_file, from_text;
    Error e;
    CHECK(net_build_from_text(&from_file,
                              YOLO_HEAD "[yolo]\nclasses=2\nnum=2\nmap=tests/ref/yolo_swap.map\n",
                              "t.cfg", 0, 1, &e) == CDL_OK);
    char *text = cfg_to_text(&from_file.cfg);
    CHECK(text && strstr(text, "\nclass_map=1,0\n") && !strstr(text, "\nmap="));
    CHECK(text && net_build_from_text(&from_text, text, "saved", 0, 1, &e) == CDL_OK);
    const Yolo *a = from_file.layers[1].priv, *b = from_text.layers[1].priv;
    CHECK(a->has_class_map && b->has_class_map);
    CHECK(a->class_map[0] == 1 && a->class_map[1] == 0);
    CHECK(b->class_map[0] == 1 && b->class_map[1] == 0);
    free(text);
    net_free(&from_text);
    net_free(&from_file);
}

int main(void)
{
    test_yolo_matches_darknet_reference();
    test_yolo_without_truth_adds_no_loss();
    test_yolo_cfg_errors();
    test_yolo_map_file_kept_in_cfg();
    return check_report("test_yolo");
}
