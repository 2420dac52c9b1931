/* Detection data: darknet label files read into the truth layout, every kind of bad line refused
 * naming FILE:LINE, the label file found by darknet's /images/ -> /labels/ rule, boxes moved with
 * their image through letterbox, flips and the jitter and crop placements, and the loader's truth
 * independent of its workers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "data/augment.h"
#include "data/boxes.h"
#include "data/loader.h"
#include "data/source_files.h"

static char dir[64];

/* Writes text to dir/name and returns the path (a static buffer). */
static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

static void test_label_lines_give_boxes_in_truth_layout(void)
{
    const char *path = write_file("two.txt", "1 0.5 0.25 0.2 0.4\n\n  0\t0.1 0.9 1 0.05  \r\n");
    float truth[4][TRUTH_FLOATS];
    memset(truth, 0xff, sizeof truth);
    int n = -1;
    Error e = {0};
    CHECK(boxes_read(path, 2, &truth[0][0], 4, &n, &e) == CDL_OK);
    CHECK(n == 2);
    const float want[4][TRUTH_FLOATS] = {{0.5f, 0.25f, 0.2f, 0.4f, 1}, {0.1f, 0.9f, 1, 0.05f, 0}};
    CHECK(memcmp(truth, want, sizeof want) == 0);
}

static void test_more_boxes_than_max_give_the_first(void)
{
    const char *path = write_file("three.txt", "0 .1 .1 .1 .1\n0 .2 .2 .2 .2\n0 .3 .3 .3 .3\n");
    float truth[2][TRUTH_FLOATS];
    int n;
    Error e = {0};
    CHECK(boxes_read(path, 1, &truth[0][0], 2, &n, &e) == CDL_OK && n == 2);
    CHECK(truth[0][TRUTH_X] == 0.1f && truth[1][TRUTH_X] == 0.2f);
}

static void test_an_empty_file_is_an_image_without_objects(void)
{
    const char *path = write_file("empty.txt", "\n");
    float truth[1][TRUTH_FLOATS] = {{1, 1, 1, 1, 1}};
    int n = -1;
    Error e = {0};
    CHECK(boxes_read(path, 1, &truth[0][0], 1, &n, &e) == CDL_OK && n == 0);
    CHECK(truth[0][TRUTH_X] == 0);
}

/* Each bad second line fails with CDL_EUSAGE naming FILE:2 and what is wrong. */
static void test_bad_lines_are_refused_with_file_and_line(void)
{
    const struct {
        const char *line, *says;
    } cases[] = {
        {"0 0.5 0.5 0.2", "4 fields, expected 5"},
        {"0 0.5 0.5 0.2 0.2 1", "6 fields, expected 5"},
        {"2 0.5 0.5 0.2 0.2", "class '2' is not a class id (0..1 for classes=2)"},
        {"-1 0.5 0.5 0.2 0.2", "class '-1'"},
        {"0.0 0.5 0.5 0.2 0.2", "class '0.0'"},
        {"0 nan 0.5 0.2 0.2", "x = nan is outside (0, 1)"},
        {"0 0.5 NaN 0.2 0.2", "y = NaN is outside (0, 1)"},
        {"0 1.5 0.5 0.2 0.2", "x = 1.5 is outside (0, 1)"},
        {"0 0 0.5 0.2 0.2", "x = 0 is outside (0, 1)"},
        {"0 0.5 1 0.2 0.2", "y = 1 is outside (0, 1)"},
        {"0 0.5 0.5 0 0.2", "w = 0 is outside (0, 1]"},
        {"0 0.5 0.5 0.2 -0.1", "h = -0.1 is outside (0, 1]"},
        {"0 0.5 0.5 1.01 0.2", "w = 1.01 is outside (0, 1]"},
        {"0 0.5 0.5 0.2 0.2x", "h '0.2x' is not a number"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char text[128], where[300];
        snprintf(text, sizeof text, "1 0.5 0.5 0.2 0.2\n%s\n", cases[k].line);
        const char *path = write_file("bad.txt", text);
        snprintf(where, sizeof where, "%s:2: ", path);
        float truth[2][TRUTH_FLOATS];
        int n = -1;
        Error e = {0};
        CHECK(boxes_read(path, 2, &truth[0][0], 2, &n, &e) == CDL_EUSAGE);
        CHECK_CONTAINS(e.msg, where);
        CHECK_CONTAINS(e.msg, cases[k].says);
        CHECK(n == 0 && truth[0][TRUTH_X] == 0); /* nothing of the file is kept */
    }
}

static void test_a_missing_label_file_is_a_runtime_error(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/none.txt", dir);
    float truth[1][TRUTH_FLOATS];
    int n;
    Error e = {0};
    CHECK(boxes_read(path, 1, &truth[0][0], 1, &n, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "none.txt: cannot open label file");
}

/* 1 when boxes_label_path of dir/image is dir/label with found as want_found. */
static int label_path_is(const char *image, const char *label, int want_found)
{
    char path[256], want[256];
    snprintf(path, sizeof path, "%s/%s", dir, image);
    snprintf(want, sizeof want, "%s/%s", dir, label);
    int found;
    char *got = boxes_label_path(path, &found);
    const int same = got && !strcmp(got, want) && found == want_found;
    if (!same)
        fprintf(stderr, "  %s: label file %s (found %d)\n", image, got ? got : "NULL", found);
    free(got);
    return same;
}

static void test_label_path_follows_darknet_rule(void)
{
    const char *folders[] = {"images",        "images/images", "images/labels",  "labels",
                             "labels/images", "voc",           "voc/JPEGImages", "voc/labels"};
    for (size_t k = 0; k < sizeof folders / sizeof *folders; k++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, folders[k]);
        mkdir(path, 0777);
    }
    /* Only the last /images/ becomes /labels/; a missing file is named where darknet looks. */
    write_file("labels/images/a.txt", "");
    CHECK(label_path_is("images/images/a.png", "images/labels/a.txt", 0));
    write_file("images/labels/a.txt", "");
    CHECK(label_path_is("images/images/a.png", "images/labels/a.txt", 1));
    /* JPEGImages too; else the .txt beside the image. */
    write_file("voc/labels/b.txt", "");
    CHECK(label_path_is("voc/JPEGImages/b.jpg", "voc/labels/b.txt", 1));
    write_file("voc/JPEGImages/c.txt", "");
    CHECK(label_path_is("voc/JPEGImages/c.jpeg", "voc/JPEGImages/c.txt", 1));
    /* No such folder and no extension: .txt appended beside it. */
    CHECK(label_path_is("voc/d", "voc/d.txt", 0));
}

static void test_placement_scales_offsets_then_flips(void)
{
    float truth[3][TRUTH_FLOATS] = {{0.5f, 0.25f, 0.2f, 0.4f, 3}, {0.75f, 0.5f, 0.5f, 1, 0}};
    const BoxPlacement p = {0.5f, 0.75f, 0.25f, 0.125f, 1};
    boxes_place(&truth[0][0], 3, &p);
    /* x' = 1 - (x 0.5 + 0.25), y' = y 0.75 + 0.125, w' = w 0.5, h' = h 0.75 */
    const float want[3][TRUTH_FLOATS] = {{0.5f, 0.3125f, 0.1f, 0.3f, 3},
                                         {0.375f, 0.5f, 0.25f, 0.75f, 0}};
    CHECK(memcmp(truth, want, sizeof want) == 0); /* the end of the list stays zeros */
}

/* A w x h RGB image, dark, with a bright s x s square at (x0, y0). */
static Image square_image(int w, int h, int x0, int y0, int s)
{
    Image img = {3, h, w, calloc((size_t)3 * w * h, sizeof(float))};
    for (int c = 0; c < 3; c++)
        for (int y = y0; y < y0 + s; y++)
            for (int x = x0; x < x0 + s; x++)
                img.data[((size_t)c * h + y) * w + x] = 1.0f;
    return img;
}

/* The centre of the pixels above 0.75 of channel 0 of out [c][h][w], in pixels. */
static void bright_centre(const float *out, int h, int w, float *cx, float *cy)
{
    double sx = 0, sy = 0, n = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (out[(size_t)y * w + x] > 0.75f) {
                sx += x + 0.5;
                sy += y + 0.5;
                n++;
            }
    *cx = n ? (float)(sx / n) : -1;
    *cy = n ? (float)(sy / n) : -1;
}

/* A square's box, placed as augment_train reports, centres on the square the net sees (within a
 * pixel: the resize blurs its edges), letterboxed and flipped or not. */
static void test_letterbox_and_flip_carry_the_box(void)
{
    AugmentConfig a = {.out_c = 3,
                       .out_h = 32,
                       .out_w = 32,
                       .letterbox = 1,
                       .flip = 1,
                       .saturation = 1,
                       .exposure = 1,
                       .std = {1, 1, 1}};
    const int w = 48, h = 36, x0 = 6, y0 = 9, s = 12;
    Image img = square_image(w, h, x0, y0, s);
    float out[3 * 32 * 32];
    AugmentScratch scratch = {0};
    int flips = 0;
    for (int sample = 0; sample < 8; sample++) {
        float box[1][TRUTH_FLOATS] = {
            {(x0 + s / 2.0f) / w, (y0 + s / 2.0f) / h, (float)s / w, (float)s / h, 0}};
        Rng rng;
        augment_seed(&rng, 5, 0, sample);
        BoxPlacement placed;
        CHECK(augment_train(&a, &img, &rng, &scratch, out, &placed) == CDL_OK);
        flips += placed.flip;
        boxes_place(&box[0][0], 1, &placed);
        float cx, cy;
        bright_centre(out, 32, 32, &cx, &cy);
        CHECK_NEAR(box[0][TRUTH_X] * 32, cx, 1.0);
        CHECK_NEAR(box[0][TRUTH_Y] * 32, cy, 1.0);
        /* 48x36 fits as 32x24 between bars of 4 rows: the box keeps its share of the image. */
        CHECK_NEAR(box[0][TRUTH_W], 12.0f / 48 * 32 / 32, 1e-6);
        CHECK_NEAR(box[0][TRUTH_H], 12.0f / 36 * 24 / 32, 1e-6);
    }
    CHECK(flips > 0 && flips < 8);
    augment_scratch_free(&scratch);
    image_free(&img);
}

/* A detection placement (a's box_jitter, box_resize, letterbox) over 24 draws of seed: the placed
 * box, clipped into the frame, centres on the part of the square the net sees, whatever the
 * draw's crop, scale, aspect and position; some draws shrink the image, some enlarge it. */
static void check_placement_carries_the_box(const AugmentConfig *a, uint64_t seed)
{
    const int w = 48, h = 36, x0 = 18, y0 = 12, s = 12;
    Image img = square_image(w, h, x0, y0, s);
    float out[3 * 32 * 32];
    AugmentScratch scratch = {0};
    int larger = 0, smaller = 0, seen = 0;
    for (int sample = 0; sample < 24; sample++) {
        float box[2][TRUTH_FLOATS] = {
            {(x0 + s / 2.0f) / w, (y0 + s / 2.0f) / h, (float)s / w, (float)s / h, 1}};
        Rng rng;
        augment_seed(&rng, seed, 0, sample);
        BoxPlacement placed;
        CHECK(augment_train(a, &img, &rng, &scratch, out, &placed) == CDL_OK);
        larger += placed.scale_x > 1;
        smaller += placed.scale_x < 1;
        boxes_place(&box[0][0], 2, &placed);
        float cx, cy;
        bright_centre(out, 32, 32, &cx, &cy);
        if (box[0][TRUTH_X] == 0 || box[0][TRUTH_W] * 32 < 2 || box[0][TRUTH_H] * 32 < 2)
            continue; /* dropped (the square left the frame), or a sliver whose pixels blur below
                         the threshold */
        seen++;
        CHECK_NEAR(box[0][TRUTH_X] * 32, cx, 1.0);
        CHECK_NEAR(box[0][TRUTH_Y] * 32, cy, 1.0);
        CHECK(box[0][TRUTH_CLASS] == 1 && box[1][TRUTH_X] == 0);
    }
    CHECK(larger > 0 && smaller > 0 && seen >= 12);
    augment_scratch_free(&scratch);
    image_free(&img);
}

/* darknet's jitter placement (AugmentConfig.box_jitter), and AlexeyAB's crop placement
 * (box_resize), stretched or letterboxed. */
static void test_placements_carry_the_box(void)
{
    AugmentConfig a = {.out_c = 3,
                       .out_h = 32,
                       .out_w = 32,
                       .flip = 1,
                       .saturation = 1,
                       .exposure = 1,
                       .std = {1, 1, 1},
                       .box_jitter = 0.3f};
    check_placement_carries_the_box(&a, 3);
    a.box_resize = 1.5f;
    for (a.letterbox = 0; a.letterbox < 2; a.letterbox++)
        check_placement_carries_the_box(&a, 7);
}

/* The crop follows load_data_detection's draws exactly: r_near and r_far for the rescale, then
 * the jitter of left, right, top and bottom; the placement maps the image's corners to the crop's
 * (x' = (x w - left) / crop_w); letterbox heightens the crop of an image wider than the input by
 * (w / aspect - h) / 2 each side. */
static void test_alexeyab_crop_follows_its_draws(void)
{
    const float iw = 48, ih = 36, jitter = 0.3f, resize = 1.5f;
    for (int letterbox = 0; letterbox < 2; letterbox++)
        for (int sample = 0; sample < 16; sample++) {
            AugmentConfig a = {.out_c = 3,
                               .out_h = 16,
                               .out_w = 8, /* aspect 0.5: letterbox heightens 4:3's crop */
                               .saturation = 1,
                               .exposure = 1,
                               .std = {1, 1, 1},
                               .letterbox = letterbox,
                               .box_jitter = jitter,
                               .box_resize = resize};
            Image img = square_image((int)iw, (int)ih, 18, 12, 12);
            float out[3 * 16 * 8];
            AugmentScratch scratch = {0};
            Rng rng;
            augment_seed(&rng, 11, 2, sample);
            BoxPlacement placed;
            CHECK(augment_train(&a, &img, &rng, &scratch, out, &placed) == CDL_OK);
            augment_seed(&rng, 11, 2, sample);
            const double r_near = rng_uniform(&rng), r_far = rng_uniform(&rng);
            double d[4];
            for (int k = 0; k < 4; k++)
                d[k] = (2 * rng_uniform(&rng) - 1) * jitter;
            const double lo = (1 - resize) / 2, hi = (1 - 1 / resize) / 2;
            const double near = lo + (hi - lo) * r_near, far = lo + (hi - lo) * r_far;
            const double grow = letterbox ? (iw / 0.5 - ih) / 2 : 0; /* (96 - 36) / 2 */
            const double left = iw * (d[0] + near), right = iw * (d[1] + far);
            const double top = ih * (d[2] + near) - grow, bottom = ih * (d[3] + far) - grow;
            const double crop_w = iw - left - right, crop_h = ih - top - bottom;
            CHECK_NEAR(placed.scale_x, iw / crop_w, 1e-4);
            CHECK_NEAR(placed.scale_y, ih / crop_h, 1e-4);
            CHECK_NEAR(placed.offset_x, -left / crop_w, 1e-4);
            CHECK_NEAR(placed.offset_y, -top / crop_h, 1e-4);
            augment_scratch_free(&scratch);
            image_free(&img);
        }
}

/* AlexeyAB's crop placement with jitter and resize, into one channel of 8 x 8. */
static AugmentConfig small_crop_config(float jitter, float resize)
{
    return (AugmentConfig){.out_c = 1,
                           .out_h = 8,
                           .out_w = 8,
                           .saturation = 1,
                           .exposure = 1,
                           .std = {1, 1, 1},
                           .box_jitter = jitter,
                           .box_resize = resize};
}

/* One channel of 40 x 30 with an 8 x 8 square at (10, 10). */
static Image grey_square_image(void)
{
    Image img = square_image(40, 30, 10, 10, 8);
    img.c = 1;
    return img;
}

/* Without jitter the crop is the image rescaled, its aspect kept, by a factor that spans
 * [1 / resize, resize] over many draws; the same seed gives the same sample. */
static void test_alexeyab_crop_spans_the_rescale(void)
{
    const AugmentConfig a = small_crop_config(0, 1.5f);
    Image img = grey_square_image();
    float out[8 * 8], again[8 * 8];
    AugmentScratch scratch = {0};
    float least = 10, most = 0;
    for (int sample = 0; sample < 2000; sample++) {
        Rng rng;
        augment_seed(&rng, 1, 0, sample);
        BoxPlacement placed;
        CHECK(augment_train(&a, &img, &rng, &scratch, out, &placed) == CDL_OK);
        CHECK_NEAR(placed.scale_x, placed.scale_y, 1e-5);
        const float crop = 1 / placed.scale_x; /* the crop's side over the image's */
        CHECK(crop >= 1 / 1.5f - 1e-5f && crop <= 1.5f + 1e-5f);
        least = crop < least ? crop : least;
        most = crop > most ? crop : most;
        if (sample < 4) {
            BoxPlacement same;
            augment_seed(&rng, 1, 0, sample);
            CHECK(augment_train(&a, &img, &rng, &scratch, again, &same) == CDL_OK);
            CHECK(!memcmp(out, again, sizeof out) && !memcmp(&placed, &same, sizeof same));
        }
    }
    /* the crop's side is 1.5 - (5/12)(r_near + r_far): within 0.05 of an end when r_near + r_far
     * is within 0.12 of 0 or 2, p = 0.0072 a draw, so 2000 draws miss an end with p < 1e-6 */
    CHECK(least < 1 / 1.5f + 0.05f && most > 1.5f - 0.05f);
    augment_scratch_free(&scratch);
    image_free(&img);
}

/* Where jitter and rescale together would remove more than the image (jitter 0.9, resize 4), the
 * crop keeps at least a pixel: every placement is finite and keeps the image's orientation. */
static void test_alexeyab_crop_is_never_empty(void)
{
    const AugmentConfig a = small_crop_config(0.9f, 4);
    Image img = grey_square_image();
    float out[8 * 8];
    AugmentScratch scratch = {0};
    for (int sample = 0; sample < 200; sample++) {
        Rng rng;
        augment_seed(&rng, 4, 0, sample);
        BoxPlacement p;
        CHECK(augment_train(&a, &img, &rng, &scratch, out, &p) == CDL_OK);
        CHECK(p.scale_x > 0 && p.scale_x <= 40 && p.scale_y > 0 && p.scale_y <= 30);
        CHECK(isfinite(p.offset_x) && isfinite(p.offset_y));
    }
    augment_scratch_free(&scratch);
    image_free(&img);
}

/* A box reaching past the frame is clipped to its visible part; one left thinner than 0.001 is
 * dropped and the boxes after it move up. */
static void test_placement_clips_and_drops(void)
{
    float truth[3][TRUTH_FLOATS] = {
        {0.9f, 0.5f, 0.4f, 0.2f, 1}, {0.2f, 0.5f, 0.1f, 0.1f, 2}, {0.5f, 0.5f, 0.2f, 0.2f, 3}};
    const BoxPlacement p = {2, 1, -0.2f, 0, 0}; /* x' = 2 x - 0.2 */
    boxes_place(&truth[0][0], 3, &p);
    /* box 0: 1.6 +- 0.4 lies past 1: dropped; box 1: 0.2 +- 0.1 -> [0.1, 0.3] kept as it is;
     * box 2: 0.8 +- 0.2 -> [0.6, 1.0] */
    CHECK_NEAR(truth[0][TRUTH_X], 0.2, 1e-6);
    CHECK_NEAR(truth[0][TRUTH_W], 0.2, 1e-6);
    CHECK(truth[0][TRUTH_CLASS] == 2 && truth[1][TRUTH_CLASS] == 3);
    CHECK_NEAR(truth[1][TRUTH_X], 0.8, 1e-6);
    CHECK_NEAR(truth[1][TRUTH_W], 0.4, 1e-6);
    CHECK(truth[2][TRUTH_X] == 0 && truth[2][TRUTH_CLASS] == 0);
}

static void test_transforms_that_do_not_carry_boxes_are_refused(void)
{
    AugmentConfig a = {.out_c = 3, .out_h = 8, .out_w = 8, .letterbox = 1, .flip = 1};
    Error e = {0};
    CHECK(augment_check_boxes(&a, &e) == CDL_OK);
    a.pad = 2;
    CHECK(augment_check_boxes(&a, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "[net] pad: this augmentation does not move truth boxes yet");
    a.pad = 0;
    a.angle = 5;
    CHECK(augment_check_boxes(&a, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "[net] angle:");
}

/* A detection list of 6 PNGs with label files beside them: every sample's truth arrives with it,
 * moved as its image was, and the batches are the same with 0 and 3 workers, mosaics too. */
static void test_loader_truth_is_the_same_with_any_worker_count(void)
{
    char list[8192] = "", name[64], path[256], label[128];
    for (int i = 0; i < 6; i++) {
        Image img = square_image(20 + 4 * i, 16, i, 2, 6);
        snprintf(name, sizeof name, "s%d.png", i);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        Error e = {0};
        CHECK(image_write_png(path, &img, &e) == CDL_OK);
        image_free(&img);
        snprintf(name, sizeof name, "s%d.txt", i);
        snprintf(label, sizeof label, "%d %g 0.3125 %g 0.375\n", i % 2, (i + 3.0) / (20 + 4 * i),
                 6.0 / (20 + 4 * i));
        write_file(name, label);
        strcat(list, path);
        strcat(list, "\n");
    }
    const char *list_path = write_file("det.txt", list);
    SampleSource src;
    Error e = {0};
    CHECK(source_list_open(&src, list_path, NULL, 2, &e) == CDL_OK);
    if (e.code)
        return;
    src.classes = 2;
    AugmentConfig a = {.out_c = 3,
                       .out_h = 16,
                       .out_w = 16,
                       .letterbox = 1,
                       .flip = 1,
                       .saturation = 1,
                       .exposure = 1,
                       .std = {1, 1, 1}};
    enum { BOXES = 3, BATCH = 3 };
    float x[2][BATCH * 3 * 16 * 16], truth[2][BATCH][BOXES][TRUTH_FLOATS];
    int y[BATCH], n;
    for (int run = 0; run < 2; run++) {
        const LoaderOptions o = {.batch = BATCH,
                                 .workers = run ? 3 : 0,
                                 .prefetch = 2,
                                 .seed = 9,
                                 .train = 1,
                                 .drop_last = 1,
                                 .truth_boxes = BOXES};
        Loader *l;
        CHECK(loader_open(&l, &src, &a, &o, &e) == CDL_OK);
        CHECK(loader_start_epoch(l, 1, 1, &e) == CDL_OK);
        CHECK(loader_next(l, x[run], y, &truth[run][0][0][0], &n, &e) == CDL_OK && n == BATCH);
        loader_close(l);
    }
    CHECK(memcmp(x[0], x[1], sizeof x[0]) == 0);
    CHECK(memcmp(truth[0], truth[1], sizeof truth[0]) == 0);
    /* mosaics (data/mosaic.h) draw their other images and pieces from the sample's own seed */
    a.mosaic = 1;
    float mosaic_x[2][BATCH * 3 * 16 * 16], mosaic_truth[2][BATCH][BOXES][TRUTH_FLOATS];
    for (int run = 0; run < 2; run++) {
        const LoaderOptions o = {.batch = BATCH,
                                 .workers = run ? 3 : 0,
                                 .prefetch = 2,
                                 .seed = 9,
                                 .train = 1,
                                 .drop_last = 1,
                                 .truth_boxes = BOXES};
        Loader *l;
        CHECK(loader_open(&l, &src, &a, &o, &e) == CDL_OK);
        CHECK(loader_start_epoch(l, 1, 0, &e) == CDL_OK);
        CHECK(loader_next(l, mosaic_x[run], y, &mosaic_truth[run][0][0][0], &n, &e) == CDL_OK);
        CHECK(loader_next(l, mosaic_x[run], y, &mosaic_truth[run][0][0][0], &n, &e) == CDL_OK);
        loader_close(l);
    }
    CHECK(memcmp(mosaic_x[0], mosaic_x[1], sizeof mosaic_x[0]) == 0);
    CHECK(memcmp(mosaic_truth[0], mosaic_truth[1], sizeof mosaic_truth[0]) == 0);
    a.mosaic = 0;
    for (int i = 0; i < BATCH; i++) {
        float cx, cy;
        bright_centre(x[0] + (size_t)i * 3 * 16 * 16, 16, 16, &cx, &cy);
        CHECK_NEAR(truth[0][i][0][TRUTH_X] * 16, cx, 1.0);
        CHECK_NEAR(truth[0][i][0][TRUTH_Y] * 16, cy, 1.0);
        CHECK(truth[0][i][1][TRUTH_X] == 0); /* one box each, then the end of the list */
    }
    source_free(&src);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/cdl_boxes_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    test_label_lines_give_boxes_in_truth_layout();
    test_more_boxes_than_max_give_the_first();
    test_an_empty_file_is_an_image_without_objects();
    test_bad_lines_are_refused_with_file_and_line();
    test_a_missing_label_file_is_a_runtime_error();
    test_label_path_follows_darknet_rule();
    test_placement_scales_offsets_then_flips();
    test_letterbox_and_flip_carry_the_box();
    test_placements_carry_the_box();
    test_alexeyab_crop_follows_its_draws();
    test_alexeyab_crop_spans_the_rescale();
    test_alexeyab_crop_is_never_empty();
    test_placement_clips_and_drops();
    test_transforms_that_do_not_carry_boxes_are_refused();
    test_loader_truth_is_the_same_with_any_worker_count();
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd))
        fprintf(stderr, "could not remove %s\n", dir);
    return check_report("test_boxes");
}
