/* Mosaic augmentation (data/mosaic.h): each placed box lies exactly on the pasted square it
 * belongs to, in plain-resize and jitter framings, each piece flipped or not; half the samples
 * are mosaics; the pieces flip and jitter their colour independently; the same seed gives the
 * same mosaic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data/mosaic.h"

enum { SIDE = 40, SQUARE = 14, OUT = 32, SAMPLES = 4, MAX_BOXES = 8 };

/* Sample k's square: its colour (one signature per sample) and top-left corner. */
static const float signature[SAMPLES][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 0}};
static int square_x(int k)
{
    return 6 + 5 * k;
}
static int square_y(int k)
{
    return 18 - 4 * k;
}

/* Sample k: a SIDE x SIDE black RGB image with its coloured SQUARE x SQUARE square. */
static int read_square(const SampleSource *s, int k, Image *img, int *label, Error *e)
{
    (void)s, (void)e;
    *img = (Image){3, SIDE, SIDE, calloc((size_t)3 * SIDE * SIDE, sizeof(float))};
    for (int c = 0; c < 3; c++)
        for (int y = square_y(k); y < square_y(k) + SQUARE; y++)
            for (int x = square_x(k); x < square_x(k) + SQUARE; x++)
                img->data[((size_t)c * SIDE + y) * SIDE + x] = signature[k][c];
    *label = 0;
    return img->data ? CDL_OK : CDL_ERUNTIME;
}

/* Sample k's truth: its square's box, class k. */
static int read_square_box(const SampleSource *s, int k, float *truth, int max_boxes, Error *e)
{
    (void)s, (void)e;
    memset(truth, 0, (size_t)max_boxes * TRUTH_FLOATS * sizeof *truth);
    truth[TRUTH_X] = (square_x(k) + SQUARE / 2.0f) / SIDE;
    truth[TRUTH_Y] = (square_y(k) + SQUARE / 2.0f) / SIDE;
    truth[TRUTH_W] = truth[TRUTH_H] = (float)SQUARE / SIDE;
    truth[TRUTH_CLASS] = (float)k;
    return CDL_OK;
}

static const SampleSource squares = {
    .n = SAMPLES, .classes = SAMPLES, .read = read_square, .read_boxes = read_square_box};

/* 1 when pixel (x, y) of out [3][OUT][OUT] shows sample k's square (its blurred edge included,
 * down to half its colour). */
static int shows(const float *out, int x, int y, int k)
{
    if (x < 0 || y < 0 || x >= OUT || y >= OUT)
        return 0;
    for (int c = 0; c < 3; c++) {
        const float v = out[((size_t)c * OUT + y) * OUT + x];
        if (signature[k][c] ? v < 0.5f : v > 0.05f)
            return 0;
    }
    return 1;
}

/* Checks that the box b lies on its square in out: every pixel inside it a pixel in from its
 * edges shows the square, and along the rows and columns through its centre the square ends
 * within a pixel of the box's edges. Returns 1 when all hold. */
static int box_on_square(const float *out, const float *b)
{
    const int k = (int)b[TRUTH_CLASS];
    const float x0 = (b[TRUTH_X] - b[TRUTH_W] / 2) * OUT, x1 = (b[TRUTH_X] + b[TRUTH_W] / 2) * OUT;
    const float y0 = (b[TRUTH_Y] - b[TRUTH_H] / 2) * OUT, y1 = (b[TRUTH_Y] + b[TRUTH_H] / 2) * OUT;
    int ok = 1;
    for (int y = 0; y < OUT; y++)
        for (int x = 0; x < OUT; x++)
            if (x + 0.5f > x0 + 1 && x + 0.5f < x1 - 1 && y + 0.5f > y0 + 1 && y + 0.5f < y1 - 1)
                ok &= shows(out, x, y, k);
    const int cx = (int)(b[TRUTH_X] * OUT), cy = (int)(b[TRUTH_Y] * OUT);
    int left = cx, right = cx, top = cy, bottom = cy;
    while (shows(out, left - 1, cy, k))
        left--;
    while (shows(out, right + 1, cy, k))
        right++;
    while (shows(out, cx, top - 1, k))
        top--;
    while (shows(out, cx, bottom + 1, k))
        bottom++;
    ok &= fabsf((float)left - x0) <= 1 && fabsf((float)(right + 1) - x1) <= 1;
    ok &= fabsf((float)top - y0) <= 1 && fabsf((float)(bottom + 1) - y1) <= 1;
    return ok;
}

/* Runs 24 samples of a mosaic=1 config a: each placed box lies on its square; some samples are
 * mosaics (boxes of two samples or more), some single images. */
static void check_boxes_follow_the_pieces(const AugmentConfig *a)
{
    float out[3 * OUT * OUT];
    AugmentScratch scratch = {0};
    int mosaics = 0, singles = 0, boxes = 0;
    for (int sample = 0; sample < 24; sample++) {
        const int k = sample % SAMPLES;
        Image first;
        int label;
        float truth[MAX_BOXES][TRUTH_FLOATS];
        Error e = {0};
        CHECK(read_square(&squares, k, &first, &label, &e) == CDL_OK);
        read_square_box(&squares, k, &truth[0][0], MAX_BOXES, &e);
        Rng rng;
        augment_seed(&rng, 11, 0, sample);
        BoxPlacement placed;
        CHECK(augment_train_mosaic(a, &squares, &first, &truth[0][0], MAX_BOXES, &rng, &scratch,
                                   out, &placed, &e) == CDL_OK);
        image_free(&first);
        boxes_place(&truth[0][0], MAX_BOXES, &placed);
        int classes_seen = 0;
        for (int i = 0; i < MAX_BOXES && truth[i][TRUTH_X] != 0; i++) {
            classes_seen |= 1 << (int)truth[i][TRUTH_CLASS];
            if (truth[i][TRUTH_W] * OUT < 3 || truth[i][TRUTH_H] * OUT < 3)
                continue; /* a sliver: its pixels blur below the threshold */
            boxes++;
            CHECK(box_on_square(out, truth[i]));
        }
        mosaics += classes_seen != 0 && (classes_seen & (classes_seen - 1)) != 0;
        singles += classes_seen == 1 << k;
    }
    CHECK(mosaics >= 4 && singles >= 4 && boxes >= 24);
    augment_scratch_free(&scratch);
}

static AugmentConfig mosaic_config(void)
{
    return (AugmentConfig){.out_c = 3,
                           .out_h = OUT,
                           .out_w = OUT,
                           .saturation = 1,
                           .exposure = 1,
                           .std = {1, 1, 1},
                           .mosaic = 1};
}

/* Plain-resize framing: each piece is the corner of its image facing the centre. */
static void test_mosaic_boxes_follow_resized_pieces(void)
{
    AugmentConfig a = mosaic_config();
    check_boxes_follow_the_pieces(&a);
    a.flip = 1;
    check_boxes_follow_the_pieces(&a);
}

/* darknet's jitter placement: images smaller or larger than the frame, on grey. */
static void test_mosaic_boxes_follow_jittered_pieces(void)
{
    AugmentConfig a = mosaic_config();
    a.box_jitter = 0.3f;
    a.flip = 1;
    check_boxes_follow_the_pieces(&a);
}

/* AlexeyAB's crop placement (resize=): pieces cropped from images rescaled by 1/1.5 to 1.5. */
static void test_mosaic_boxes_follow_cropped_pieces(void)
{
    AugmentConfig a = mosaic_config();
    a.box_jitter = 0.3f;
    a.box_resize = 1.5f;
    a.flip = 1;
    check_boxes_follow_the_pieces(&a);
}

/* Sample k of ramps: channel 0 rises left to right, channel 1 top to bottom, channel 2 is k / 4;
 * no boxes. */
static int read_ramp(const SampleSource *s, int k, Image *img, int *label, Error *e)
{
    (void)s, (void)e;
    *img = (Image){3, SIDE, SIDE, malloc((size_t)3 * SIDE * SIDE * sizeof(float))};
    for (int y = 0; img->data && y < SIDE; y++)
        for (int x = 0; x < SIDE; x++) {
            float *px = img->data + (size_t)y * SIDE + x;
            px[0] = (x + 0.5f) / SIDE;
            px[SIDE * SIDE] = (y + 0.5f) / SIDE;
            px[2 * SIDE * SIDE] = k / 4.0f;
        }
    *label = 0;
    return img->data ? CDL_OK : CDL_ERUNTIME;
}

static int read_no_box(const SampleSource *s, int k, float *truth, int max_boxes, Error *e)
{
    (void)s, (void)k, (void)e;
    memset(truth, 0, (size_t)max_boxes * TRUTH_FLOATS * sizeof *truth);
    return CDL_OK;
}

static const SampleSource ramps = {.n = SAMPLES, .read = read_ramp, .read_boxes = read_no_box};

/* Mosaics of ramps with flip=1: at each corner of the picture (inside its quadrant, since the
 * centre is at least 0.2 of the side from every edge) channel 0 falls left to right where that
 * piece was flipped, and channel 1 always rises (no vertical flip). Pieces flip each on its own
 * coin: some pictures mix flipped and unflipped pieces (a whole-picture flip never would), and
 * with flip=0 none is flipped. */
static void test_mosaic_pieces_flip_independently(void)
{
    for (int flip = 0; flip <= 1; flip++) {
        AugmentConfig a = mosaic_config();
        a.flip = flip;
        AugmentScratch scratch = {0};
        int mixed = 0, flipped = 0;
        for (int sample = 0; sample < 32; sample++) {
            Image first;
            int label;
            Error e = {0};
            float out[3 * OUT * OUT];
            CHECK(read_ramp(&ramps, sample % SAMPLES, &first, &label, &e) == CDL_OK);
            Rng rng;
            augment_seed(&rng, 5, 0, sample);
            BoxPlacement placed;
            CHECK(augment_train_mosaic(&a, &ramps, &first, NULL, 0, &rng, &scratch, out, &placed,
                                       &e) == CDL_OK);
            image_free(&first);
            int falling = 0;
            for (int q = 0; q < 4; q++) {
                const int x = q & 1 ? OUT - 2 : 0, y = q >> 1 ? OUT - 2 : 0;
                const float *at = out + (size_t)y * OUT + x;
                falling += at[1] < at[0];
                CHECK(at[OUT * OUT + OUT] > at[OUT * OUT]);
            }
            flipped += falling;
            mixed += falling != 0 && falling != 4;
        }
        CHECK(flip ? mixed >= 4 : flipped == 0);
        augment_scratch_free(&scratch);
    }
}

/* Every sample of flats: one orange colour, no boxes. */
static const float flat_colour[3] = {0.6f, 0.4f, 0.2f};
static int read_flat(const SampleSource *s, int k, Image *img, int *label, Error *e)
{
    (void)s, (void)k, (void)e;
    *img = (Image){3, SIDE, SIDE, malloc((size_t)3 * SIDE * SIDE * sizeof(float))};
    for (int c = 0; img->data && c < 3; c++)
        for (int i = 0; i < SIDE * SIDE; i++)
            img->data[(size_t)c * SIDE * SIDE + i] = flat_colour[c];
    *label = 0;
    return img->data ? CDL_OK : CDL_ERUNTIME;
}

static const SampleSource flats = {.n = SAMPLES, .read = read_flat, .read_boxes = read_no_box};

/* Mosaics of flats with hue, saturation and exposure jitter: each piece has a colour of its own
 * (AlexeyAB's draw per image), so the four corners of a mosaic differ (one draw for the whole
 * picture would give them one colour); with the keys at their neutral values every pixel keeps
 * the flat colour. */
static void test_mosaic_pieces_jitter_colour_independently(void)
{
    for (int jitter = 0; jitter <= 1; jitter++) {
        AugmentConfig a = mosaic_config();
        if (jitter) {
            a.hue = 0.1f;
            a.saturation = 1.5f;
            a.exposure = 1.5f;
        }
        AugmentScratch scratch = {0};
        int four_colours = 0, changed = 0;
        for (int sample = 0; sample < 32; sample++) {
            Image first;
            int label;
            Error e = {0};
            float out[3 * OUT * OUT];
            CHECK(read_flat(&flats, 0, &first, &label, &e) == CDL_OK);
            Rng rng;
            augment_seed(&rng, 9, 0, sample);
            BoxPlacement placed;
            CHECK(augment_train_mosaic(&a, &flats, &first, NULL, 0, &rng, &scratch, out, &placed,
                                       &e) == CDL_OK);
            image_free(&first);
            float corner[4][3];
            for (int q = 0; q < 4; q++)
                for (int c = 0; c < 3; c++)
                    corner[q][c] = out[((size_t)c * OUT + (q >> 1 ? OUT - 1 : 0)) * OUT +
                                       (q & 1 ? OUT - 1 : 0)];
            int distinct = 1;
            for (int q = 0; q < 4; q++)
                for (int r = q + 1; r < 4; r++)
                    distinct &= memcmp(corner[q], corner[r], sizeof corner[q]) != 0;
            four_colours += distinct;
            for (size_t i = 0; i < (size_t)3 * OUT * OUT; i++)
                changed += fabsf(out[i] - flat_colour[i / (OUT * OUT)]) > 1e-6f;
        }
        CHECK(jitter ? four_colours >= 8 : changed == 0);
        augment_scratch_free(&scratch);
    }
}

/* The same seed, epoch and sample give the same picture and boxes, the colour jitter included. */
static void test_mosaic_is_reproducible(void)
{
    AugmentConfig a = mosaic_config();
    a.box_jitter = 0.3f;
    a.hue = 0.1f;
    a.saturation = a.exposure = 1.5f;
    float out[2][3 * OUT * OUT], truth[2][MAX_BOXES][TRUTH_FLOATS];
    AugmentScratch scratch = {0};
    for (int run = 0; run < 2; run++) {
        Image first;
        int label;
        Error e = {0};
        read_square(&squares, 2, &first, &label, &e);
        read_square_box(&squares, 2, &truth[run][0][0], MAX_BOXES, &e);
        Rng rng;
        augment_seed(&rng, 7, 3, 2);
        BoxPlacement placed;
        CHECK(augment_train_mosaic(&a, &squares, &first, &truth[run][0][0], MAX_BOXES, &rng,
                                   &scratch, out[run], &placed, &e) == CDL_OK);
        image_free(&first);
    }
    CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0);
    CHECK(memcmp(truth[0], truth[1], sizeof truth[0]) == 0);
    augment_scratch_free(&scratch);
}

int main(void)
{
    test_mosaic_boxes_follow_resized_pieces();
    test_mosaic_boxes_follow_jittered_pieces();
    test_mosaic_boxes_follow_cropped_pieces();
    test_mosaic_pieces_flip_independently();
    test_mosaic_pieces_jitter_colour_independently();
    test_mosaic_is_reproducible();
    return check_report("test_mosaic");
}
