/* Detection decoding and NMS against scripts/ref/make_detect.py (darknet's get_yolo_detections,
 * correct_yolo_boxes, do_nms_sort and diounms_sort written from their definitions in float64):
 * two [yolo] layers (one with scale_x_y) on the same input, boxes mapped onto letterboxed and
 * resized images, then NMS of each kind; the same with new_coords=1 (decoding only); NMS's order
 * among equal scores; and a net without [yolo] refused.
 *
 * Tolerance: REF_TOLERANCE (1e-4 relative) on boxes and scores, computed in float32 from logistic
 * and exp (~1e-7 relative); the script checked that no score or overlap is within 1e-4 of a
 * threshold, so every keep-or-drop decision is the same. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/net.h"
#include "detect/net_detections.h"
#include "detect/nms.h"
#include "ref_fixture.h"
#include "ref_net.h"

/* One case: the fixture's prefix, the keys set on the [yolo] layers (the NMS kind on the last),
 * NMS's threshold, and the fixture's input tensor for it when not "input". */
typedef struct Case {
    const char *name;
    const char *overrides[2];
    int n_overrides;
    float nms;
    const char *input;
} Case;

static const Case cases[] = {
    {"none", {NULL}, 0, 0, NULL},
    {"default", {NULL}, 0, 0.45f, NULL},
    {"greedynms", {"3.nms_kind=greedynms"}, 1, 0.45f, NULL},
    {"diounms", {"3.nms_kind=diounms", "3.beta_nms=0.35"}, 2, 0.45f, NULL},
    {"newcoords", {"1.new_coords=1", "3.new_coords=1"}, 2, 0, "newcoords_input"},
};

/* The detections of frame f (sample min(f, 1)) match the fixture's C.f.* tensors. */
static void expect_frame(const RefFixture *f, const Net *net, const Case *c, int frame)
{
    const RefTensor *frames = ref_fixture_get(f, "frames");
    const float *fr = frames->data + 3 * frame;
    const DetectFrame how = {(int)fr[0], (int)fr[1], (int)fr[2]};
    DetectionList list;
    detection_list_init(&list, 2);
    Error e = {0};
    CHECK(net_detections(net, frame < 1 ? 0 : 1, &how, 0.25f, c->nms, &list, &e) == CDL_OK);
    char name[64];
    snprintf(name, sizeof name, "%s.%d.objectness", c->name, frame);
    const RefTensor *obj = ref_fixture_get(f, name);
    CHECK(obj && (int)obj->count == list.n);
    if (obj && (int)obj->count == list.n) {
        float boxes[4 * 64], objectness[64];
        for (int i = 0; i < list.n && i < 64; i++) {
            memcpy(boxes + 4 * i, &list.items[i].box, 4 * sizeof *boxes);
            objectness[i] = list.items[i].objectness;
        }
        ref_expect_close(f, name, objectness, list.n);
        snprintf(name, sizeof name, "%s.%d.box", c->name, frame);
        ref_expect_close(f, name, boxes, 4 * (size_t)list.n);
        snprintf(name, sizeof name, "%s.%d.prob", c->name, frame);
        ref_expect_close(f, name, list.prob, 2 * (size_t)list.n);
        /* what was suppressed is exactly 0 on both sides */
        const RefTensor *prob = ref_fixture_get(f, name);
        for (int i = 0; prob && i < 2 * list.n; i++)
            CHECK((prob->data[i] == 0) == (list.prob[i] == 0));
    }
    detection_list_free(&list);
}

static void test_detections_match_darknet_reference(void)
{
    RefFixture f;
    if (ref_fixture_load("tests/ref/detect.ref", &f))
        return;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Net net;
        if (ref_net_build(&net, &f, "tests/ref/detect.cfg", cases[k].overrides,
                          cases[k].n_overrides, 2)) {
            CHECK(!"the fixture's net builds");
            continue;
        }
        const RefTensor *input = cases[k].input ? ref_fixture_get(&f, cases[k].input) : NULL;
        CHECK(!cases[k].input ||
              (input && input->count == (size_t)net.batch * shape_size(net.in_shape)));
        if (input)
            memcpy(net.input, input->data, input->count * sizeof *net.input);
        net_forward(&net);
        for (int frame = 0; frame < 3; frame++)
            expect_frame(&f, &net, &cases[k], frame);
        net_free(&net);
    }
    ref_fixture_free(&f);
}

/* Of equal scores the box found first is kept; a detection of objectness 0 suppresses nothing
 * (darknet moves those out of the sort), even with the highest score. */
static void test_nms_ties_and_objectness_zero(void)
{
    DetectionList list;
    Error e = {0};
    detection_list_init(&list, 1);
    CHECK(detection_list_reserve(&list, 4, &e) == CDL_OK);
    const Box same = {0.5f, 0.5f, 0.2f, 0.2f};
    const float objectness[4] = {0.7f, 0.7f, 0, 0.7f}, prob[4] = {0.6f, 0.6f, 0.9f, 0.6f};
    for (int i = 0; i < 4; i++) {
        list.items[i] = (Detection){same, objectness[i], 3 - i}; /* found in reverse order */
        list.prob[i] = prob[i];
    }
    list.n = 4;
    CHECK(nms_sort(&list, 0.45f, NMS_DEFAULT, 0.6f, &e) == CDL_OK);
    /* index 0 (found first) is item 3 */
    CHECK(list.prob[3] == 0.6f && list.prob[0] == 0 && list.prob[1] == 0);
    CHECK(list.prob[2] == 0.9f); /* objectness 0: untouched, and suppressed nothing */
    detection_list_free(&list);
}

static void test_a_net_without_yolo_is_not_a_detector(void)
{
    Net net;
    Error e = {0};
    CHECK(net_build_from_text(&net, "[net]\nwidth=4\nheight=4\nchannels=1\n\n[maxpool]\nsize=1\n",
                              "plain.cfg", 0, 1, &e) == CDL_OK);
    CHECK(net_last_detector(&net) == NULL);
    DetectionList list;
    detection_list_init(&list, 1);
    const DetectFrame how = {4, 4, 0};
    CHECK(net_detections(&net, 0, &how, 0.25f, 0.45f, &list, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "not a detector");
    detection_list_free(&list);
    net_free(&net);
}

int main(void)
{
    test_detections_match_darknet_reference();
    test_nms_ties_and_objectness_zero();
    test_a_net_without_yolo_is_not_a_detector();
    return check_report("test_detect");
}
