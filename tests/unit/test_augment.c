/* Data augmentation: exact geometry of crops, pads, flips and rotations; colour formulas;
 * normalisation and erasing; seeding and determinism; the [net] keys, darknet's included. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "data/augment.h"
#include "train/net_keys.h"

/* A [c][h][w] image with distinct values in [0,1] (caller frees data). */
static Image pattern_image(int c, int h, int w)
{
    Image img = {c, h, w, malloc((size_t)c * h * w * sizeof(float))};
    for (int i = 0; i < c * h * w; i++)
        img.data[i] = (float)((i * 37) % 101) / 100.0f;
    return img;
}

/* The augmentation of a one-layer net whose [net] section holds keys (width, height,
 * channels included); fails the test when the cfg does not build. */
static AugmentConfig config_from(const char *keys)
{
    char text[1024];
    snprintf(text, sizeof text, "[net]\n%s\n[softmax]\n", keys);
    Net net;
    Error e = {0};
    AugmentConfig a;
    memset(&a, 0, sizeof a);
    int st = net_build_from_text(&net, text, "t.cfg", 0, 1, &e);
    CHECK(st == CDL_OK);
    if (st) {
        fprintf(stderr, "  %s\n", e.msg);
        return a;
    }
    CHECK(net_augment(&net, &a, &e) == CDL_OK);
    net_free(&net);
    return a;
}

static int max_abs_diff(const float *a, const float *b, size_t n, float tol)
{
    for (size_t i = 0; i < n; i++)
        if (fabsf(a[i] - b[i]) > tol)
            return 1;
    return 0;
}

static void test_flip_twice_is_identity_and_once_mirrors(void)
{
    Image img = pattern_image(2, 3, 5);
    float *orig = malloc(30 * sizeof *orig);
    memcpy(orig, img.data, 30 * sizeof *orig);
    augment_flip(img.data, 2, 3, 5, 0);
    CHECK(img.data[1 * 15 + 2 * 5 + 0] == orig[1 * 15 + 2 * 5 + 4]);
    CHECK(img.data[0 * 15 + 0 * 5 + 1] == orig[0 * 15 + 0 * 5 + 3]);
    CHECK(img.data[2] == orig[2]); /* the middle column stays */
    augment_flip(img.data, 2, 3, 5, 0);
    CHECK(!memcmp(img.data, orig, 30 * sizeof *orig));
    augment_flip(img.data, 2, 3, 5, 1);
    CHECK(img.data[1 * 15 + 0 * 5 + 3] == orig[1 * 15 + 2 * 5 + 3]);
    augment_flip(img.data, 2, 3, 5, 1);
    CHECK(!memcmp(img.data, orig, 30 * sizeof *orig));
    free(orig);
    image_free(&img);
}

static void test_resized_crop_box_follows_its_draws(void)
{
    const float scale[2] = {0.25f, 0.5f}, ratio[2] = {0.5f, 2.0f};
    const int w = 120, h = 80;
    for (int seed = 0; seed < 20; seed++) {
        Rng r, replay;
        rng_seed(&r, (uint64_t)seed, 7);
        replay = r;
        CropBox box;
        augment_resized_crop_box(w, h, scale, ratio, &r, &box);
        /* torchvision's recipe replayed: two uniforms per try, then top row and left column. */
        CropBox want = {0, 0, 0, 0};
        for (int attempt = 0; attempt < 10 && !want.w; attempt++) {
            float area = (float)(w * h) * (0.25f + 0.25f * rng_uniform(&replay));
            float aspect = expf(logf(0.5f) + (logf(2.0f) - logf(0.5f)) * rng_uniform(&replay));
            int bw = (int)rintf(sqrtf(area * aspect)), bh = (int)rintf(sqrtf(area / aspect));
            if (bw >= 1 && bw <= w && bh >= 1 && bh <= h) {
                want.h = bh;
                want.w = bw;
                want.y = (int)rng_below(&replay, (uint32_t)(h - bh + 1));
                want.x = (int)rng_below(&replay, (uint32_t)(w - bw + 1));
            }
        }
        CHECK(want.w > 0);
        CHECK(box.x == want.x && box.y == want.y && box.w == want.w && box.h == want.h);
        CHECK(box.x >= 0 && box.y >= 0 && box.x + box.w <= w && box.y + box.h <= h);
        /* The area and ratio are within range up to the rounding of each side. */
        CHECK((box.w + 0.5) * (box.h + 0.5) >= 0.25 * w * h);
        CHECK((box.w - 0.5) * (box.h - 0.5) <= 0.5 * w * h);
        CHECK((box.w + 0.5) / (box.h - 0.5) >= 0.5 && (box.w - 0.5) / (box.h + 0.5) <= 2.0);
        CHECK(r.state == replay.state); /* nothing else was drawn */
    }
}

static void test_resized_crop_box_falls_back_to_a_centered_box(void)
{
    /* A 100x10 image cannot hold a square of 90% of its area: the fallback is the widest
     * centered box of ratio 1, i.e. 10x10 at x = 45. */
    const float scale[2] = {0.9f, 1.0f}, ratio[2] = {1.0f, 1.0f};
    Rng r;
    rng_seed(&r, 3, 0);
    CropBox box;
    augment_resized_crop_box(100, 10, scale, ratio, &r, &box);
    CHECK(box.x == 45 && box.y == 0 && box.w == 10 && box.h == 10);
}

static void test_darknet_crop_follows_its_draws(void)
{
    /* 64x32 (WxH) image, 16x16 output, short side scaled to 32 (scale 1), no aspect or angle:
     * the output is an unscaled window shifted by dx in [-24, 24], dy in [-8, 8]. */
    for (int seed = 0; seed < 10; seed++) {
        Rng r, replay;
        rng_seed(&r, (uint64_t)seed, 11);
        replay = r;
        Affine m = augment_darknet_crop(64, 32, 16, 16, 32, 32, 1.0f, 0.0f, &r);
        for (int k = 0; k < 4; k++) /* aspect value and coin, size, angle */
            rng_u32(&replay);
        float dx = -24.0f + 48.0f * rng_uniform(&replay);
        float dy = -8.0f + 16.0f * rng_uniform(&replay);
        CHECK(r.state == replay.state);
        CHECK_NEAR(m.xx, 1, 1e-6);
        CHECK_NEAR(m.yy, 1, 1e-6);
        CHECK_NEAR(m.xy, 0, 1e-6);
        CHECK_NEAR(m.yx, 0, 1e-6);
        /* Output column 0 sits 8 pixels left of the shifted center 32 + dx. */
        CHECK_NEAR(m.x0, 24 + dx, 1e-4);
        CHECK_NEAR(m.y0, 8 + dy, 1e-4);
    }
}

static void test_darknet_crop_scales_the_short_side(void)
{
    /* A 40x20 image whose short side goes to 10: a half-size image, so each output pixel
     * steps 2 input pixels. */
    Rng r;
    rng_seed(&r, 5, 0);
    Affine m = augment_darknet_crop(40, 20, 8, 8, 10, 10, 1.0f, 0.0f, &r);
    CHECK_NEAR(m.xx, 2, 1e-6);
    CHECK_NEAR(m.yy, 2, 1e-6);
}

static void test_pad_crop_at_pad_offset_is_identity(void)
{
    Image img = pattern_image(3, 4, 6);
    float out[72];
    augment_pad_crop(img.data, 3, 4, 6, 2, 2, 2, out);
    CHECK(!memcmp(out, img.data, sizeof out));
    /* Offset (0, 0) shows the padded top-left corner: out(x, y) = in(x - 2, y - 2) or 0. */
    augment_pad_crop(img.data, 3, 4, 6, 2, 0, 0, out);
    CHECK(out[0] == 0 && out[1 * 6 + 1] == 0 && out[24 + 2 * 6 + 0] == 0);
    CHECK(out[24 + 2 * 6 + 2] == img.data[24 + 0]);
    CHECK(out[48 + 3 * 6 + 5] == img.data[48 + 1 * 6 + 3]);
    /* Offset (4, 4): out(x, y) = in(x + 2, y + 2), zeros past the right and bottom. */
    augment_pad_crop(img.data, 3, 4, 6, 2, 4, 4, out);
    CHECK(out[0] == img.data[2 * 6 + 2]);
    CHECK(out[1 * 6 + 3] == img.data[3 * 6 + 5]);
    CHECK(out[1 * 6 + 4] == 0 && out[2 * 6 + 0] == 0);
    image_free(&img);
}

static void test_rotation_by_zero_is_identity(void)
{
    Image img = pattern_image(2, 5, 7);
    float out[70];
    Image dst = {2, 5, 7, out};
    Affine m = augment_rotation(7, 5, 0.0f);
    augment_warp(&img, &m, 0, 0.0f, &dst);
    CHECK(!memcmp(out, img.data, sizeof out));
    image_free(&img);
}

static void test_rotation_by_90_degrees_turns_counter_clockwise(void)
{
    /* Counter-clockwise as displayed (y down): out(x, y) = in(w - 1 - y, x). */
    Image img = pattern_image(1, 4, 4);
    float out[16];
    Image dst = {1, 4, 4, out};
    Affine m = augment_rotation(4, 4, 90.0f);
    augment_warp(&img, &m, 0, 0.0f, &dst);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++)
            CHECK_NEAR(out[y * 4 + x], img.data[x * 4 + (3 - y)], 1e-5);
    image_free(&img);
}

static void test_rotation_fills_outside_corners(void)
{
    /* 45 degrees on a constant 9x9 image: the center stays 1, the corners come from outside. */
    float ones[81], out[81];
    for (int i = 0; i < 81; i++)
        ones[i] = 1.0f;
    Image img = {1, 9, 9, ones}, dst = {1, 9, 9, out};
    Affine m = augment_rotation(9, 9, 45.0f);
    augment_warp(&img, &m, 0, 0.0f, &dst);
    CHECK_NEAR(out[4 * 9 + 4], 1, 1e-6);
    CHECK_NEAR(out[0], 0, 1e-6);
    augment_warp(&img, &m, 1, 0.0f, &dst); /* edges extended: all ones */
    CHECK_NEAR(out[0], 1, 1e-6);
}

static void test_hsv_round_trip_and_known_values(void)
{
    enum { N = 64 };
    float px[3 * N], orig[3 * N];
    Rng r;
    rng_seed(&r, 9, 0);
    for (int i = 0; i < 3 * N; i++)
        px[i] = orig[i] = rng_uniform(&r);
    px[0] = px[N] = px[2 * N] = orig[0] = orig[N] = orig[2 * N] = 0.4f; /* a gray */
    augment_rgb_to_hsv(px, N);
    CHECK(px[0] == 0 && px[N] == 0 && px[2 * N] == 0.4f);
    augment_hsv_to_rgb(px, N);
    CHECK(!max_abs_diff(px, orig, 3 * N, 1e-5f));

    float blue_ish[3] = {0.0f, 0.5f, 1.0f}; /* max is blue: h = (4 + (r - g) / delta) / 6 */
    augment_rgb_to_hsv(blue_ish, 1);
    CHECK_NEAR(blue_ish[0], 3.5 / 6, 1e-6);
    CHECK_NEAR(blue_ish[1], 1, 1e-6);
    CHECK_NEAR(blue_ish[2], 1, 1e-6);
}

static void test_hsv_distortion_identity_and_formulas(void)
{
    enum { N = 32 };
    float px[3 * N], orig[3 * N];
    Rng r;
    rng_seed(&r, 10, 0);
    for (int i = 0; i < 3 * N; i++)
        px[i] = orig[i] = rng_uniform(&r);
    augment_distort_hsv(px, 3, N, 0.0f, 1.0f, 1.0f);
    CHECK(!max_abs_diff(px, orig, 3 * N, 1e-5f));

    float red[3] = {1, 0, 0};
    augment_distort_hsv(red, 3, 1, 1.0f / 3, 1.0f, 1.0f); /* a third of the circle: green */
    CHECK(!max_abs_diff(red, (float[]){0, 1, 0}, 3, 1e-5f));
    float pale[3] = {1, 0, 0};
    augment_distort_hsv(pale, 3, 1, 0.0f, 0.5f, 1.0f); /* half saturation */
    CHECK(!max_abs_diff(pale, (float[]){1, 0.5f, 0.5f}, 3, 1e-6f));
    float dark[3] = {0.8f, 0.4f, 0.2f};
    augment_distort_hsv(dark, 3, 1, 0.0f, 1.0f, 0.5f); /* exposure scales every channel */
    CHECK(!max_abs_diff(dark, (float[]){0.4f, 0.2f, 0.1f}, 3, 1e-6f));
    float bright[3] = {0.8f, 0.4f, 0.2f};
    augment_distort_hsv(bright, 3, 1, 0.0f, 1.0f, 2.0f); /* and clamps */
    CHECK(!max_abs_diff(bright, (float[]){1.0f, 0.8f, 0.4f}, 3, 1e-6f));
    float gray[2] = {0.3f, 0.6f};
    augment_distort_hsv(gray, 1, 2, 0.25f, 3.0f, 1.5f); /* gray: value only */
    CHECK(!max_abs_diff(gray, (float[]){0.45f, 0.9f}, 2, 1e-6f));
}

static void test_brightness_and_contrast_formulas(void)
{
    float v[3] = {0.2f, 0.6f, 0.8f};
    augment_brightness(v, 3, 1.5f);
    CHECK(!max_abs_diff(v, (float[]){0.3f, 0.9f, 1.0f}, 3, 1e-6f));

    float gray[2] = {0.2f, 0.6f}; /* mean 0.4; factor 0.5 halves the distance to it */
    augment_contrast(gray, 1, 2, 0.5f);
    CHECK(!max_abs_diff(gray, (float[]){0.3f, 0.5f}, 2, 1e-6f));
    /* RGB: the mean is of the luma 0.299 R + 0.587 G + 0.114 B; two pixels, red and black:
     * mean luma 0.1495, factor 2 gives 2x - 0.1495, clamped. */
    float rgb[6] = {1, 0, 0, 0, 0, 0};
    augment_contrast(rgb, 3, 2, 2.0f);
    CHECK(!max_abs_diff(rgb, (float[]){1, 0, 0, 0, 0, 0}, 6, 1e-6f));
    float soft[6] = {0.5f, 0.1f, 0.2f, 0.2f, 0.3f, 0.3f};
    const float m = (0.299f * 0.5f + 0.587f * 0.2f + 0.114f * 0.3f + 0.299f * 0.1f + 0.587f * 0.2f +
                     0.114f * 0.3f) /
                    2;
    augment_contrast(soft, 3, 2, 1.5f);
    CHECK_NEAR(soft[0], 1.5f * 0.5f - 0.5f * m, 1e-6);
    CHECK_NEAR(soft[5], 1.5f * 0.3f - 0.5f * m, 1e-6);
}

static void test_normalize_per_channel(void)
{
    float v[4] = {0.5f, 1.0f, 0.25f, 0.75f};
    const float mean[2] = {0.5f, 0.25f}, std[2] = {0.5f, 0.25f};
    augment_normalize(v, 2, 2, mean, std);
    CHECK(!max_abs_diff(v, (float[]){0.0f, 1.0f, 0.0f, 2.0f}, 4, 1e-6f));
}

static void test_erasing_region_stays_inside(void)
{
    for (int seed = 0; seed < 200; seed++) {
        Rng r;
        rng_seed(&r, (uint64_t)seed, 3);
        CropBox b;
        if (augment_erasing_box(13, 9, &r, &b)) {
            CHECK(b.x >= 0 && b.y >= 0 && b.x + b.w <= 13 && b.y + b.h <= 9);
            CHECK(b.w < 13 && b.h < 9);
        }
    }
    /* Through the pipeline: erasing=1 zeroes one box of a 1-valued image, all channels alike. */
    AugmentConfig a = config_from("width=16\nheight=12\nchannels=3\nerasing=1");
    float ones[3 * 12 * 16], out[3 * 12 * 16];
    for (int i = 0; i < 3 * 12 * 16; i++)
        ones[i] = 1.0f;
    Image img = {3, 12, 16, ones};
    AugmentScratch s = {0};
    int erased_some = 0;
    for (int seed = 0; seed < 20; seed++) {
        Rng r;
        augment_seed(&r, (uint64_t)seed, 0, 0);
        CHECK(augment_train(&a, &img, &r, &s, out, NULL) == CDL_OK);
        int zeros = 0, mismatched = 0;
        for (int i = 0; i < 12 * 16; i++) {
            zeros += out[i] == 0;
            mismatched += out[i] != out[192 + i] || out[i] != out[384 + i];
        }
        CHECK(mismatched == 0);
        CHECK(zeros < 12 * 16);
        erased_some += zeros > 0;
    }
    CHECK(erased_some > 0);
    augment_scratch_free(&s);
}

static void test_identity_config_copies_exactly(void)
{
    AugmentConfig a = config_from("width=6\nheight=5\nchannels=3");
    CHECK(augment_is_identity(&a, 3, 5, 6));
    CHECK(!augment_is_identity(&a, 3, 5, 7));
    CHECK(!augment_is_identity(&a, 1, 5, 6));
    Image img = pattern_image(3, 5, 6);
    float out[90];
    AugmentScratch s = {0};
    Rng r;
    augment_seed(&r, 1, 0, 0);
    Rng before = r;
    CHECK(augment_train(&a, &img, &r, &s, out, NULL) == CDL_OK);
    CHECK(!memcmp(out, img.data, sizeof out));
    CHECK(r.state == before.state); /* no draws */
    CHECK(augment_eval(&a, &img, &s, out, NULL) == CDL_OK);
    CHECK(!memcmp(out, img.data, sizeof out));
    augment_scratch_free(&s);
    image_free(&img);
}

static void test_shipped_cfgs_have_identity_augmentation(void)
{
    const char *paths[] = {"cfg/digits.cfg", "cfg/fashion.cfg"};
    for (int i = 0; i < 2; i++) {
        Net net;
        Error e = {0};
        CHECK(net_build_from_file(&net, paths[i], NULL, 0, 0, 1, &e) == CDL_OK);
        AugmentConfig a;
        CHECK(net_augment(&net, &a, &e) == CDL_OK);
        CHECK(augment_is_identity(&a, net.in_shape.c, net.in_shape.h, net.in_shape.w));
        net_free(&net);
    }
}

static void test_each_key_breaks_identity(void)
{
    const char *keys[] = {"random_resized_crop=1",
                          "min_crop=8",
                          "pad=1",
                          "flip=1",
                          "flip_vertical=1",
                          "angle=5",
                          "brightness=0.2",
                          "contrast=0.2",
                          "hue=0.1",
                          "saturation=1.5",
                          "exposure=1.5",
                          "mean=0.5",
                          "std=0.5",
                          "erasing=0.5",
                          "center_crop=1"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "width=8\nheight=8\nchannels=1\n%s", keys[i]);
        AugmentConfig a = config_from(text);
        CHECK(!augment_is_identity(&a, 1, 8, 8));
    }
    AugmentConfig letterbox = config_from("width=8\nheight=8\nchannels=1\nletterbox=1");
    CHECK(augment_is_identity(&letterbox, 1, 8, 8)); /* same size: nothing to fit */
}

/* A config exercising every random step. */
static const char *all_keys = "width=20\nheight=16\nchannels=3\nrandom_resized_crop=1\npad=2\n"
                              "flip=1\nflip_vertical=1\nangle=20\nbrightness=0.3\ncontrast=0.3\n"
                              "hue=0.1\nsaturation=1.5\nexposure=1.5\nerasing=0.5\n"
                              "mean=0.5,0.4,0.3\nstd=0.2,0.3,0.4";

static void test_same_seed_same_output_other_sample_other_draws(void)
{
    AugmentConfig a = config_from(all_keys);
    Image img = pattern_image(3, 30, 40);
    enum { N = 3 * 16 * 20 };
    float *first = malloc(N * sizeof *first), *again = malloc(N * sizeof *again);
    AugmentScratch s = {0};
    Rng r;
    augment_seed(&r, 42, 3, 17);
    CHECK(augment_train(&a, &img, &r, &s, first, NULL) == CDL_OK);
    augment_seed(&r, 42, 3, 17);
    CHECK(augment_train(&a, &img, &r, &s, again, NULL) == CDL_OK);
    CHECK(!memcmp(first, again, N * sizeof *first));
    augment_seed(&r, 42, 3, 18);
    CHECK(augment_train(&a, &img, &r, &s, again, NULL) == CDL_OK);
    CHECK(memcmp(first, again, N * sizeof *first));
    augment_seed(&r, 42, 4, 17);
    CHECK(augment_train(&a, &img, &r, &s, again, NULL) == CDL_OK);
    CHECK(memcmp(first, again, N * sizeof *first));

    Rng x, y;
    augment_seed(&x, 42, 0, 1);
    augment_seed(&y, 42, 0, 2);
    CHECK(rng_u32(&x) != rng_u32(&y));
    augment_seed(&x, 42, 1, 0);
    augment_seed(&y, 43, 1, 0);
    CHECK(rng_u32(&x) != rng_u32(&y));
    free(first);
    free(again);
    augment_scratch_free(&s);
    image_free(&img);
}

static void test_scratch_stops_growing(void)
{
    AugmentConfig a = config_from(all_keys);
    Image img = pattern_image(3, 30, 40);
    float out[3 * 16 * 20];
    AugmentScratch s = {0};
    Rng r;
    augment_seed(&r, 1, 0, 0);
    /* The largest crop box is the whole image: force it once with a full-area crop... */
    AugmentConfig full = a;
    full.crop_scale_min = 1.0f;
    full.crop_ratio_min = 0.1f;
    full.crop_ratio_max = 10.0f;
    CHECK(augment_train(&full, &img, &r, &s, out, NULL) == CDL_OK);
    float *b0 = s.buf[0], *b1 = s.buf[1];
    size_t f0 = s.floats[0], f1 = s.floats[1];
    for (int i = 0; i < 50; i++) {
        augment_seed(&r, 1, 0, i);
        CHECK(augment_train(&a, &img, &r, &s, out, NULL) == CDL_OK);
    }
    CHECK(s.buf[0] == b0 && s.buf[1] == b1 && s.floats[0] == f0 && s.floats[1] == f1);
    augment_scratch_free(&s);
    image_free(&img);
}

static void test_rgb_sample_to_gray_net_is_luma(void)
{
    AugmentConfig a = config_from("width=2\nheight=1\nchannels=1\nsaturation=1");
    float rgb[6] = {1, 0, 0, 1, 0, 0}; /* red, green */
    Image img = {3, 1, 2, rgb};
    float out[2];
    AugmentScratch s = {0};
    Rng r;
    augment_seed(&r, 1, 0, 0);
    CHECK(augment_train(&a, &img, &r, &s, out, NULL) == CDL_OK);
    CHECK_NEAR(out[0], 0.299, 1e-6);
    CHECK_NEAR(out[1], 0.587, 1e-6);
    augment_scratch_free(&s);
}

static void test_normalisation_follows_everything(void)
{
    AugmentConfig a = config_from("width=2\nheight=1\nchannels=3\nmean=0.5,0.25,0\nstd=0.5,0.25,2");
    float rgb[6] = {1, 0, 0.5f, 0.25f, 1, 0};
    Image img = {3, 1, 2, rgb};
    float out[6];
    AugmentScratch s = {0};
    CHECK(augment_eval(&a, &img, &s, out, NULL) == CDL_OK);
    CHECK(!max_abs_diff(out, (float[]){1, -1, 1, 0, 0.5f, 0}, 6, 1e-6f));
    augment_scratch_free(&s);
}

static void test_letterbox_fits_inside_with_gray_bars(void)
{
    /* A 4x2 (WxH) image into a 4x4 net: it keeps its size, centered, rows 0 and 3 are 0.5. */
    AugmentConfig a = config_from("width=4\nheight=4\nchannels=1\nletterbox=1");
    Image img = pattern_image(1, 2, 4);
    float out[16];
    AugmentScratch s = {0};
    CHECK(augment_eval(&a, &img, &s, out, NULL) == CDL_OK);
    for (int x = 0; x < 4; x++) {
        CHECK(out[x] == 0.5f && out[12 + x] == 0.5f);
        CHECK(out[4 + x] == img.data[x] && out[8 + x] == img.data[4 + x]);
    }
    augment_scratch_free(&s);
    image_free(&img);
}

static void test_center_crop_resizes_short_side_then_crops(void)
{
    /* 8x4 (WxH) into a 2x2 net: the short side goes to int(2 / 0.875) = 2, the long side to
     * int(2.2857 * 2) = 4, and the crop keeps columns 1..2 of that 4x2 resize. */
    AugmentConfig a = config_from("width=2\nheight=2\nchannels=1\ncenter_crop=1");
    Image img = pattern_image(1, 4, 8);
    float out[4], resized[8];
    AugmentScratch s = {0};
    CHECK(augment_eval(&a, &img, &s, out, NULL) == CDL_OK);
    image_to_input(&img, 1, 2, 4, resized);
    CHECK(out[0] == resized[1] && out[1] == resized[2]);
    CHECK(out[2] == resized[5] && out[3] == resized[6]);
    augment_scratch_free(&s);
    image_free(&img);
}

static void test_resize_size_sets_the_short_side_before_the_crop(void)
{
    /* 8x4 (WxH) into a 2x2 net with resize_size=3: the short side goes to 3, the long side to
     * int(3 * 8 / 4) = 6, and the crop's corner is (round(4 / 2), round(1 / 2)) = (2, 0), Python's
     * round as torchvision's CenterCrop: rows 0..1, columns 2..3 of that 6x3 resize. */
    AugmentConfig a = config_from("width=2\nheight=2\nchannels=1\ncenter_crop=1\nresize_size=3");
    Image img = pattern_image(1, 4, 8);
    float out[4], resized[18];
    AugmentScratch s = {0};
    CHECK(augment_eval(&a, &img, &s, out, NULL) == CDL_OK);
    image_to_input(&img, 1, 3, 6, resized);
    CHECK(out[0] == resized[2] && out[1] == resized[3]);
    CHECK(out[2] == resized[8] && out[3] == resized[9]);
    augment_scratch_free(&s);
    image_free(&img);
}

static void test_keys_are_validated(void)
{
    const char *head = "[net]\nwidth=8\nheight=8\nchannels=1\n";
    const struct {
        const char *keys, *needle;
    } cases[] = {
        {"crop_scale=0.5,1\n", "t.cfg:5: bad value '0.5,1' for key 'crop_scale' in [net]: needs "
                               "random_resized_crop=1"},
        {"random_resized_crop=1\ncrop_scale=0.5\n", "key 'crop_scale' in [net]: expected min,max"},
        {"random_resized_crop=1\ncrop_ratio=2,1\n", "key 'crop_ratio' in [net]: expected min,max"},
        {"hue=0.7\n", "t.cfg:5: bad value '0.7' for key 'hue' in [net]: must be in [0, 0.5]"},
        {"saturation=0\n", "key 'saturation' in [net]: must be > 0"},
        {"mean=0.5,0.5,0.5\n", "key 'mean' in [net]: expected one value, or one per channel"},
        {"std=0\n", "key 'std' in [net]: must be > 0"},
        {"flip=2\n", "key 'flip' in [net]: expected 0 or 1"},
        {"erasing=1.5\n", "key 'erasing' in [net]: must be a probability"},
        {"letterbox=1\ncenter_crop=1\n", "t.cfg:6: bad value '1' for key 'center_crop'"},
        {"interpolation=nearest\n", "t.cfg:5: bad value 'nearest' for key 'interpolation' in "
                                    "[net]: expected bilinear or bicubic"},
        {"resize_size=9\n", "t.cfg:5: bad value '9' for key 'resize_size' in [net]: needs "
                            "center_crop=1"},
        {"center_crop=1\nresize_size=7\n", "t.cfg:6: bad value '7' for key 'resize_size' in "
                                           "[net]: must be at least the net's height and width"},
        {"min_crop=16\nmax_crop=12\n", "key 'min_crop' in [net]: min_crop must not exceed"},
        {"min_crop=8\nrandom_resized_crop=1\n", "choose one crop recipe"},
        {"angle=-1\n", "key 'angle' in [net]: must be >= 0"},
        {"pad=-1\n", "key 'pad' in [net]: must be in 0..4096"},
        {"flipp=1\n", "unknown key 'flipp' in [net] (valid keys: batch"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s[softmax]\n", head, cases[i].keys);
        expect_cfg_error(text, cases[i].needle);
    }
}

static void test_defaults_and_derived_values(void)
{
    AugmentConfig a = config_from("width=8\nheight=6\nchannels=3\nrandom_resized_crop=1");
    CHECK_NEAR(a.crop_scale_min, 0.08, 1e-7);
    CHECK_NEAR(a.crop_scale_max, 1, 0);
    CHECK_NEAR(a.crop_ratio_min, 0.75, 1e-7);
    CHECK_NEAR(a.crop_ratio_max, 4.0 / 3, 1e-6);
    CHECK(a.flip == 0 && a.std[2] == 1 && a.mean[0] == 0);
    AugmentConfig asp = config_from("width=8\nheight=6\nchannels=3\nrandom_resized_crop=1\n"
                                    "aspect=0.5");
    CHECK_NEAR(asp.crop_ratio_min, 0.5, 1e-7);
    CHECK_NEAR(asp.crop_ratio_max, 2, 1e-6);
    AugmentConfig dn = config_from("width=8\nheight=6\nchannels=3\nmax_crop=20");
    CHECK(dn.min_crop == 6 && dn.max_crop == 20); /* darknet: min_crop defaults to height */
    AugmentConfig dn2 = config_from("width=8\nheight=6\nchannels=3\nmin_crop=7");
    CHECK(dn2.min_crop == 7 && dn2.max_crop == 16); /* and max_crop to twice the width */
    AugmentConfig gray = config_from("width=8\nheight=6\nchannels=1\nmean=0.5\nstd=0.25");
    CHECK(gray.mean[0] == 0.5f && gray.std[0] == 0.25f);
}

/* The [net] section of a darknet cfg followed by one [softmax] layer. */
static char *darknet_net_section(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = calloc(1 << 16, 1);
    size_t n = fread(text, 1, (1 << 16) - 16, f);
    fclose(f);
    text[n] = '\0';
    char *second = strstr(text + 1, "\n[");
    if (second)
        second[1] = '\0';
    strcat(text, "\n[softmax]\n");
    return text;
}

static void test_darknet_classifier_net_keys_parse(void)
{
    const char *names[] = {"darknet19", "resnet18", "resnet50",   "tiny",
                           "cifar",     "alexnet",  "extraction", "vgg-16"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "/usr/share/darknet/cfg/%s.cfg", names[i]);
        char *text = darknet_net_section(path);
        CHECK(text != NULL); /* scripts/deps.sh installs the darknet package */
        if (!text)
            continue;
        Net net;
        Error e = {0};
        int st = net_build_from_text(&net, text, path, 0, 1, &e);
        CHECK(st == CDL_OK);
        if (st)
            fprintf(stderr, "  %s\n", e.msg);
        else
            net_free(&net);
        free(text);
    }
    AugmentConfig a = {0};
    Net net;
    Error e = {0};
    char *text = darknet_net_section("/usr/share/darknet/cfg/darknet19.cfg");
    if (text && net_build_from_text(&net, text, "darknet19.cfg", 0, 1, &e) == CDL_OK) {
        CHECK(net_augment(&net, &a, &e) == CDL_OK);
        net_free(&net);
    }
    free(text);
    CHECK(a.min_crop == 128 && a.max_crop == 448);
    CHECK_NEAR(a.angle, 7, 0);
    CHECK_NEAR(a.hue, 0.1, 1e-7);
    CHECK_NEAR(a.saturation, 0.75, 0);
    CHECK_NEAR(a.exposure, 0.75, 0);
    CHECK_NEAR(a.aspect, 0.75, 0);
}

int main(void)
{
    test_flip_twice_is_identity_and_once_mirrors();
    test_resized_crop_box_follows_its_draws();
    test_resized_crop_box_falls_back_to_a_centered_box();
    test_darknet_crop_follows_its_draws();
    test_darknet_crop_scales_the_short_side();
    test_pad_crop_at_pad_offset_is_identity();
    test_rotation_by_zero_is_identity();
    test_rotation_by_90_degrees_turns_counter_clockwise();
    test_rotation_fills_outside_corners();
    test_hsv_round_trip_and_known_values();
    test_hsv_distortion_identity_and_formulas();
    test_brightness_and_contrast_formulas();
    test_normalize_per_channel();
    test_erasing_region_stays_inside();
    test_identity_config_copies_exactly();
    test_shipped_cfgs_have_identity_augmentation();
    test_each_key_breaks_identity();
    test_same_seed_same_output_other_sample_other_draws();
    test_scratch_stops_growing();
    test_rgb_sample_to_gray_net_is_luma();
    test_normalisation_follows_everything();
    test_letterbox_fits_inside_with_gray_bars();
    test_center_crop_resizes_short_side_then_crops();
    test_resize_size_sets_the_short_side_before_the_crop();
    test_keys_are_validated();
    test_defaults_and_derived_values();
    test_darknet_classifier_net_keys_parse();
    return check_report("test_augment");
}
