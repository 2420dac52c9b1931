/* A small yolov4-tiny-shaped net (route groups, CSP blocks, two [yolo] heads with CIoU and
 * scale_x_y) against scripts/ref/make_yolov4_tiny.py: every layer's output of a training forward,
 * darknet's loss, and the gradients of the input and of every parameter; and
 * cfg/yolov4_tiny.cfg's size.
 *
 * Tolerance: outputs and loss REF_TOLERANCE (ref_net.h), as test_yolo: float32 against float64,
 * the heads' choices (best anchor, ignore_thresh) far from their thresholds. Gradients: batch
 * norm's backward subtracts channel means that nearly cancel, so float32 itself lands ~1e-4 from
 * the float64 values; the script stores how far PyTorch's own float32 run lands
 * (grad_f32_spread), and cdl, whose sums run in other orders, is held to 4 times that (each of
 * the two float32 results is within the spread's order of the truth, so they differ by up to twice
 * it, doubled again for the float32 heads PyTorch's run did not have), or REF_TOLERANCE when
 * larger. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "core/net.h"
#include "data/boxes.h"
#include "ref_fixture.h"
#include "ref_net.h"

/* One check per gradient (the input's, then each trainable parameter's) against the fixture's
 * grad.input and grad.layerI.NAME, within the tolerance above. */
static void expect_gradients(const RefFixture *f, const Net *net)
{
    const RefTensor *spread = ref_fixture_get(f, "grad_f32_spread");
    CHECK(spread != NULL);
    const double tolerance =
        spread && 4 * spread->data[0] > REF_TOLERANCE ? 4 * spread->data[0] : REF_TOLERANCE;
    const RefTensor *want = ref_fixture_get(f, "grad.input");
    const size_t n = (size_t)net->batch * shape_size(net->in_shape);
    CHECK(want && want->count == n &&
          ref_max_rel_error(net->input_delta, want->data, n) < tolerance);
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_params; k++) {
            const Param *p = &l->params[k];
            if (!p->grad)
                continue;
            char name[96];
            snprintf(name, sizeof name, "grad.layer%d.%s", i, p->name);
            want = ref_fixture_get(f, name);
            const double err = want && want->count == p->count
                                   ? ref_max_rel_error(p->grad, want->data, p->count)
                                   : INFINITY;
            if (!(err < tolerance))
                fprintf(stderr, "%s: relative error %g >= %g\n", name, err, tolerance);
            CHECK(err < tolerance);
        }
    }
}

static void test_yolov4_tiny_shape_matches_reference(void)
{
    RefFixture f;
    Net net;
    CHECK(ref_fixture_load("tests/ref/yolov4_tiny.ref", &f) == 0);
    if (ref_net_build(&net, &f, "tests/ref/yolov4_tiny.cfg", NULL, 0, 2)) {
        CHECK(0);
        ref_fixture_free(&f);
        return;
    }
    const RefTensor *truth = ref_fixture_get(&f, "truth");
    const RefTensor *loss = ref_fixture_get(&f, "loss");
    CHECK(truth && truth->ndim == 3 && truth->dims[2] == TRUTH_FLOATS && loss);
    if (truth && loss) {
        net.truth = truth->data;
        net.truth_boxes = truth->dims[1];
        net.train = 1;
        net_forward(&net);
        ref_expect_outputs(&f, &net);
        CHECK_NEAR(net.loss, loss->data[0], 1e-4 * loss->data[0]);
        net_zero_grads(&net);
        net_backward(&net);
        expect_gradients(&f, &net);
    }
    net_free(&net);
    ref_fixture_free(&f);
}

int main(void)
{
    test_yolov4_tiny_shape_matches_reference();
    return check_report("test_yolov4_tiny");
}
