/* Multi-scale training's sizes (train/multi_scale.h): which rule a cfg's random= and resize= pick
 * (or, with random=0, resize= as the training crop's rescale), the sizes each rule draws (darknet's
 * ranges, one size per 10 steps, the largest where darknet takes it), that they depend on the seed
 * and the step alone, and the loader's mini-batches mapped to their steps. */
#include <stdio.h>

#include "check.h"
#include "core/net.h"
#include "train/multi_scale.h"
#include "train/net_keys.h"

/* A 416x416 net with a [yolo] whose keys are yolo_keys: its multi-scale sizes and augmentation. */
static int build(Net *net, const char *yolo_keys, MultiScale *ms, AugmentConfig *a)
{
    char text[1024];
    snprintf(text, sizeof text,
             "[net]\nbatch=1\nwidth=416\nheight=416\nchannels=3\n"
             "[convolutional]\nfilters=18\nsize=1\nstride=32\nactivation=linear\n"
             "[yolo]\nmask=0,1,2\nanchors=10,14, 23,27, 37,58\nclasses=1\nnum=3\n%s",
             yolo_keys);
    Error e = {0};
    if (net_build_from_text(net, text, "t.cfg", 0, 1, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return 0;
    }
    multi_scale_init(ms, net, 5);
    const int st = net_augment(net, a, &e);
    CHECK(st == CDL_OK);
    net_free(net);
    return st == CDL_OK;
}

static void test_rules_from_keys(void)
{
    Net net;
    MultiScale ms;
    AugmentConfig a;
    if (build(&net, "", &ms, &a))
        CHECK(ms.rule == MULTI_SCALE_OFF && ms.max_w == 416 && ms.max_h == 416);
    if (build(&net, "random=1\n", &ms, &a))
        CHECK(ms.rule == MULTI_SCALE_PJREDDIE && ms.max_w == 608 && ms.max_h == 608);
    /* AlexeyAB: round(F 416 / 32 + 1) x 32 at most */
    if (build(&net, "random=1\nresize=1.5\n", &ms, &a))
        CHECK(ms.rule == MULTI_SCALE_ALEXEYAB && ms.factor == 1.5f && ms.max_w == 672);
    if (build(&net, "random=1.2\n", &ms, &a))
        CHECK(ms.rule == MULTI_SCALE_ALEXEYAB && ms.factor == 1.2f && ms.max_w == 544);
    if (build(&net, "random=1\nresize=1\n", &ms, &a))
        CHECK(ms.rule == MULTI_SCALE_ALEXEYAB && ms.factor == 1.4f && ms.max_w == 608);
}

/* resize= with random=0 (yolov4-tiny's) is AlexeyAB's rescale of the training crop
 * (AugmentConfig.box_resize) and multi-scale training stays off; with random on it is the size
 * factor alone; resize=1 rescales nothing. */
static void test_resize_without_random_rescales_the_crop(void)
{
    Net net;
    MultiScale ms;
    AugmentConfig a;
    if (build(&net, "random=0\nresize=1.5\n", &ms, &a))
        CHECK(ms.rule == MULTI_SCALE_OFF && a.box_resize == 1.5f && a.box_jitter == 0.2f);
    if (build(&net, "random=1\nresize=1.5\n", &ms, &a))
        CHECK(ms.rule == MULTI_SCALE_ALEXEYAB && a.box_resize == 0);
    if (build(&net, "resize=1\n", &ms, &a))
        CHECK(ms.rule == MULTI_SCALE_OFF && a.box_resize == 0);
}

/* Sizes of a 416x416 net over 1000 steps: constant over each 10, within the rule's range (320 to
 * 608 for both at factor 1.4), the largest where darknet takes it, several otherwise. */
static void test_sizes_drawn(MultiScaleRule rule, float factor)
{
    MultiScale ms = {.rule = rule,
                     .factor = factor,
                     .base_w = 416,
                     .base_h = 416,
                     .max_w = 608,
                     .max_h = 608,
                     .seed = 9,
                     .total_steps = 1000};
    int seen[20] = {0};
    for (uint64_t step = 0; step < 1000; step++) {
        int w, h, w0, h0;
        multi_scale_size(&ms, step, &w, &h);
        multi_scale_size(&ms, step / 10 * 10, &w0, &h0);
        CHECK(w == w0 && h == h0 && w == h && w % 32 == 0 && w <= ms.max_w);
        CHECK(w >= 320); /* AlexeyAB's smallest: round(416 / 1.4 / 32 + 1) x 32 */
        /* darknet decides at a period's first step: pjreddie's "+ 200 > max_batches", AlexeyAB's
         * "> max_batches - 100" */
        if (rule == MULTI_SCALE_PJREDDIE && step >= 810)
            CHECK(w == 608);
        if (rule == MULTI_SCALE_ALEXEYAB && (step < 10 || step >= 910))
            CHECK(w == 608);
        seen[w / 32 % 20] = 1;
    }
    int sizes = 0;
    for (int i = 0; i < 20; i++)
        sizes += seen[i];
    CHECK(sizes >= (rule == MULTI_SCALE_PJREDDIE ? 8 : 3));
}

/* Another seed draws other sizes; the same seed and step the same. */
static void test_sizes_follow_seed_and_step(void)
{
    MultiScale a = {.rule = MULTI_SCALE_PJREDDIE, .seed = 1, .total_steps = 1000};
    MultiScale b = a;
    b.seed = 2;
    int differ = 0;
    for (uint64_t step = 0; step < 500; step += 10) {
        int wa, ha, wa2, ha2, wb, hb;
        multi_scale_size(&a, step, &wa, &ha);
        multi_scale_size(&a, step, &wa2, &ha2);
        multi_scale_size(&b, step, &wb, &hb);
        CHECK(wa == wa2 && ha == ha2);
        differ += wa != wb;
    }
    CHECK(differ > 10);
}

/* The loader's mini-batch k of epoch e is pass k % passes of step e * steps_per_epoch +
 * k / passes. */
static void test_batches_map_to_steps(void)
{
    MultiScale ms = {.rule = MULTI_SCALE_PJREDDIE,
                     .seed = 3,
                     .total_steps = 1000,
                     .steps_per_epoch = 7,
                     .passes_per_step = 4};
    for (int epoch = 0; epoch < 5; epoch++)
        for (int k = 0; k < 28; k++) {
            int w, h, sw, sh;
            multi_scale_batch_size(&ms, epoch, k, &w, &h);
            multi_scale_size(&ms, (uint64_t)epoch * 7 + (uint64_t)(k / 4), &sw, &sh);
            CHECK(w == sw && h == sh);
        }
}

int main(void)
{
    test_rules_from_keys();
    test_resize_without_random_rescales_the_crop();
    test_sizes_drawn(MULTI_SCALE_PJREDDIE, 0);
    test_sizes_drawn(MULTI_SCALE_ALEXEYAB, 1.4f);
    test_sizes_follow_seed_and_step();
    test_batches_map_to_steps();
    return check_report("multi_scale");
}
