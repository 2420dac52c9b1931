/* image_resize, the separable bilinear resize: equal (within 1e-5) to the direct per-pixel
 * formula it replaced, for upscaling, downscaling, odd sizes, 1x1 edges, boxes and channel
 * conversion; and allocation-free once warm, alone and inside augment_train's random resized
 * crop (malloc/calloc/realloc counted through glibc's __libc_* entry points; those checks are
 * skipped under AddressSanitizer, which owns malloc). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data/augment.h"
#include "data/image.h"
#include "io/cfg.h"

#ifndef __SANITIZE_ADDRESS__
extern void *__libc_malloc(size_t bytes);
extern void *__libc_calloc(size_t count, size_t bytes);
extern void *__libc_realloc(void *p, size_t bytes);

static int counting;
static long allocations;

void *malloc(size_t bytes)
{
    allocations += counting;
    return __libc_malloc(bytes);
}

void *calloc(size_t count, size_t bytes)
{
    allocations += counting;
    return __libc_calloc(count, bytes);
}

void *realloc(void *p, size_t bytes)
{
    allocations += counting;
    return __libc_realloc(p, bytes);
}
#endif

/* ---- the reference: the direct formula, one output pixel at a time, in double ---- */

/* Weight of input index i for output index o along an axis of in_size -> out_size: the
   triangle tri((i + 0.5 - center) / stretch), center = (o + 0.5) * in / out, stretch =
   max(1, in / out), over the inputs i in [round(center - stretch), round(center + stretch))
   clamped to the axis, divided by their sum. */
static double ref_weight(int o, int i, int in_size, int out_size)
{
    double scale = (double)in_size / out_size, stretch = scale > 1 ? scale : 1;
    double center = (o + 0.5) * scale;
    int first = (int)(center - stretch + 0.5), last = (int)(center + stretch + 0.5);
    first = first < 0 ? 0 : first;
    last = last > in_size ? in_size : last;
    double norm = 0, mine = 0;
    for (int k = first; k < last; k++) {
        double d = fabs((k + 0.5 - center) / stretch), t = d < 1 ? 1 - d : 0;
        norm += t;
        mine = k == i ? t : mine;
    }
    return mine / norm;
}

/* out [c][h][w] from box b of img, channels converted as image_resize documents. */
static void ref_resize(const Image *img, CropBox b, int c, int h, int w, double *out)
{
    static const double luma[3] = {0.299, 0.587, 0.114};
    size_t in_plane = (size_t)img->h * img->w;
    for (int k = 0; k < c; k++) {
        for (int oy = 0; oy < h; oy++) {
            for (int ox = 0; ox < w; ox++) {
                double sum = 0;
                for (int y = 0; y < b.h; y++) {
                    for (int x = 0; x < b.w; x++) {
                        double wt = ref_weight(oy, y, b.h, h) * ref_weight(ox, x, b.w, w);
                        size_t at = (size_t)(b.y + y) * img->w + b.x + x;
                        double v;
                        if (c == 1 && img->c >= 3) {
                            v = luma[0] * img->data[at] + luma[1] * img->data[in_plane + at] +
                                luma[2] * img->data[2 * in_plane + at];
                        } else {
                            v = img->data[(k < img->c ? k : img->c - 1) * in_plane + at];
                        }
                        sum += wt * v;
                    }
                }
                out[((size_t)k * h + oy) * w + ox] = sum;
            }
        }
    }
}

/* An c x h x w image of values in [0, 1) from a fixed LCG. */
static Image noise_image(int c, int h, int w, uint32_t seed)
{
    size_t n = (size_t)c * h * w;
    Image img = {c, h, w, malloc(n * sizeof(float))};
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        img.data[i] = (float)(seed >> 8) / (float)(1u << 24);
    }
    return img;
}

/* image_resize of box (NULL: the whole image) of a fresh noise image against ref_resize; prints
   the case and the worst difference when it exceeds 1e-5. */
static void check_against_reference(int img_c, int img_h, int img_w, const CropBox *box, int c,
                                    int h, int w)
{
    Image img = noise_image(img_c, img_h, img_w, (uint32_t)(img_h * 131 + img_w));
    CropBox b = box ? *box : (CropBox){0, 0, img_w, img_h};
    size_t n = (size_t)c * h * w;
    float *out = malloc(n * sizeof *out);
    double *want = malloc(n * sizeof *want);
    ImageScratch s = {0};
    CHECK(image_resize(&img, box, c, h, w, &s, out) == CDL_OK);
    ref_resize(&img, b, c, h, w, want);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(out[i] - want[i]);
        worst = d > worst || d != d ? d : worst;
    }
    CHECK(worst <= 1e-5);
    if (!(worst <= 1e-5)) {
        fprintf(stderr, "  %dx%dx%d box %d,%d %dx%d -> %dx%dx%d: off by %g\n", img_c, img_h, img_w,
                b.x, b.y, b.w, b.h, c, h, w, worst);
    }
    image_scratch_free(&s);
    free(img.data);
    free(out);
    free(want);
}

static void test_upscaling_matches_direct_formula(void)
{
    check_against_reference(1, 5, 7, NULL, 1, 13, 11);
    check_against_reference(3, 2, 3, NULL, 3, 9, 17);
}

static void test_downscaling_matches_direct_formula(void)
{
    check_against_reference(1, 37, 29, NULL, 1, 8, 5);
    check_against_reference(3, 64, 51, NULL, 3, 7, 13);
}

/* Down along one axis and up along the other, both ways round: the two orders of the passes
   (across first for a wide output of a tall input, down first for the reverse). */
static void test_mixed_scaling_matches_direct_formula(void)
{
    check_against_reference(1, 40, 3, NULL, 1, 3, 40);
    check_against_reference(1, 3, 40, NULL, 1, 40, 3);
    check_against_reference(2, 9, 31, NULL, 2, 20, 7);
}

/* The scales of random crops of photos to a net's input: filters of 3 to 5 taps. */
static void test_moderate_downscaling_matches_direct_formula(void)
{
    check_against_reference(3, 31, 50, NULL, 3, 24, 28);
    check_against_reference(1, 40, 41, NULL, 1, 19, 36);
}

static void test_same_size_matches_direct_formula(void)
{
    check_against_reference(1, 5, 3, NULL, 1, 5, 3);
}

static void test_one_pixel_edges_match_direct_formula(void)
{
    check_against_reference(1, 1, 1, NULL, 1, 1, 1);
    check_against_reference(1, 1, 1, NULL, 1, 6, 5); /* a 1x1 image spread */
    check_against_reference(1, 7, 9, NULL, 1, 1, 1); /* averaged to one pixel */
    check_against_reference(1, 1, 9, NULL, 1, 4, 4); /* one row */
    check_against_reference(1, 9, 1, NULL, 1, 3, 5); /* one column */
}

static void test_box_matches_direct_formula_on_the_box(void)
{
    const CropBox inner = {3, 2, 9, 5}, corner = {10, 8, 5, 7}, pixel = {4, 4, 1, 1};
    check_against_reference(3, 15, 15, &inner, 3, 11, 4);
    check_against_reference(3, 15, 15, &corner, 3, 3, 3);
    check_against_reference(1, 15, 15, &pixel, 1, 2, 3);
}

static void test_channel_conversion_matches_direct_formula(void)
{
    check_against_reference(3, 11, 6, NULL, 1, 4, 9); /* luma */
    check_against_reference(1, 6, 11, NULL, 3, 9, 4); /* replication */
}

static void test_to_input_equals_resize_of_whole_image(void)
{
    Image img = noise_image(3, 10, 14, 7);
    float a[3 * 6 * 5], b[3 * 6 * 5];
    ImageScratch s = {0};
    CHECK(image_to_input(&img, 3, 6, 5, a) == CDL_OK);
    CHECK(image_resize(&img, NULL, 3, 6, 5, &s, b) == CDL_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    image_scratch_free(&s);
    free(img.data);
}

/* ---- allocation ---- */

#ifndef __SANITIZE_ADDRESS__
static void test_resize_allocates_only_the_first_time_per_image_size(void)
{
    Image img = noise_image(3, 40, 50, 3);
    float out[3 * 24 * 24];
    ImageScratch s = {0};
    allocations = 0;
    counting = 1;
    CHECK(image_resize(&img, NULL, 3, 24, 24, &s, out) == CDL_OK);
    CHECK(allocations == 1);
    allocations = 0;
    for (int k = 0; k < 30; k++) { /* boxes of every size and shape, and the whole image */
        CropBox b = {k % 7, k % 5, 1 + (k * 13) % 43, 1 + (k * 29) % 35};
        CHECK(image_resize(&img, k % 2 ? &b : NULL, 3 - 2 * (k % 2), 24, 24, &s, out) == CDL_OK);
    }
    counting = 0;
    CHECK(allocations == 0);
    image_scratch_free(&s);
    free(img.data);
}

static void test_random_resized_crop_allocates_nothing_after_first_sample(void)
{
    static const char *text =
        "[net]\nwidth=24\nheight=20\nchannels=3\nrandom_resized_crop=1\nflip=1\nmean=0.5\n"
        "std=0.25\n";
    Cfg cfg;
    AugmentConfig a;
    Error e = {0};
    int st = cfg_parse_text(text, "t.cfg", &cfg, &e);
    st = st ? st : augment_config_parse(&cfg, &cfg.sections[0], 3, 20, 24, &a, &e);
    CHECK(st == CDL_OK);
    if (st) {
        fprintf(stderr, "  %s\n", e.msg);
        return;
    }
    Image img = noise_image(3, 61, 83, 5);
    float out[3 * 20 * 24];
    AugmentScratch s = {0};
    Rng rng;
    augment_seed(&rng, 1, 0, 0);
    CHECK(augment_train(&a, &img, &rng, &s, out, NULL) == CDL_OK);
    allocations = 0;
    counting = 1;
    for (int i = 1; i < 50; i++) {
        augment_seed(&rng, 1, 0, i);
        CHECK(augment_train(&a, &img, &rng, &s, out, NULL) == CDL_OK);
    }
    counting = 0;
    CHECK(allocations == 0);
    augment_scratch_free(&s);
    free(img.data);
    cfg_free(&cfg);
}
#endif

int main(void)
{
    test_upscaling_matches_direct_formula();
    test_downscaling_matches_direct_formula();
    test_mixed_scaling_matches_direct_formula();
    test_moderate_downscaling_matches_direct_formula();
    test_same_size_matches_direct_formula();
    test_one_pixel_edges_match_direct_formula();
    test_box_matches_direct_formula_on_the_box();
    test_channel_conversion_matches_direct_formula();
    test_to_input_equals_resize_of_whole_image();
#ifndef __SANITIZE_ADDRESS__
    test_resize_allocates_only_the_first_time_per_image_size();
    test_random_resized_crop_allocates_nothing_after_first_sample();
#endif
    return check_report("test_resize");
}
