/* AlexeyAB's mosaic: four framed images cut to the quadrants around a random centre, with their
 * truth boxes. */
#include "data/mosaic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int clamp_int(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Frames in (augment_frame_train), mirrors the frame left-right with a->flip and a coin (p = 0.5,
 * drawn after the framing), converts it to c channels, jitters its colour (augment_jitter_hsv,
 * drawn after the coin), and pastes the piece of quadrant q (0
 * top-left, 1 top-right, 2 bottom-left, 3 bottom-right of the centre cut_x, cut_y) into dst
 * [c][out_h][out_w]; moves in's boxes truth [max_boxes][TRUTH_FLOATS] (may be NULL) with the
 * piece and clips them to the quadrant. Scratch buffers 2 and 3 hold the frame. */
static int paste_quadrant(const AugmentConfig *a, const Image *in, int q, int cut_x, int cut_y,
                          int c, Rng *rng, AugmentScratch *s, float *dst, float *truth,
                          int max_boxes)
{
    const int w = a->out_w, h = a->out_h;
    const size_t plane = (size_t)h * w;
    float *frame = augment_scratch_reserve(s, 2, (size_t)in->c * plane);
    BoxPlacement p = box_placement_identity();
    if (!frame || augment_frame_train(a, in, rng, s, frame, &p))
        return CDL_ERUNTIME;
    /* The image's extent in its frame, in whole pixels. */
    int left = (int)lrintf(p.offset_x * (float)w);
    int end_x = (int)lrintf((p.offset_x + p.scale_x) * (float)w);
    const int top = (int)lrintf(p.offset_y * (float)h);
    const int end_y = (int)lrintf((p.offset_y + p.scale_y) * (float)h);
    if (a->flip && rng_uniform(rng) < 0.5f) { /* as AlexeyAB's, which swaps pleft and pright */
        augment_flip(frame, in->c, h, w, 0);
        p.flip = 1;
        const int mirrored_left = w - end_x;
        end_x = w - left;
        left = mirrored_left;
    }
    if (in->c != c) {
        float *converted = augment_scratch_reserve(s, 3, (size_t)c * plane);
        const Image framed = {in->c, h, w, frame};
        if (!converted || image_resize(&framed, NULL, c, h, w, &s->image, converted))
            return CDL_ERUNTIME;
        frame = converted;
    }
    augment_jitter_hsv(a, frame, c, plane, rng); /* each image its own colour, as AlexeyAB's */
    const int right = q & 1, bottom = q >> 1;
    const int qx0 = right ? cut_x : 0, qx1 = right ? w : cut_x;
    const int qy0 = bottom ? cut_y : 0, qy1 = bottom ? h : cut_y;
    /* The piece's top-left corner in the frame: its side facing the centre on the image's edge,
     * the piece kept inside the frame. */
    const int sx = right ? clamp_int(left, 0, cut_x) : clamp_int(end_x, cut_x, w) - cut_x;
    const int sy = bottom ? clamp_int(top, 0, cut_y) : clamp_int(end_y, cut_y, h) - cut_y;
    for (int ch = 0; ch < c; ch++)
        for (int y = qy0; y < qy1; y++)
            memcpy(dst + ch * plane + (size_t)y * w + qx0,
                   frame + ch * plane + (size_t)(y - qy0 + sy) * w + sx,
                   (size_t)(qx1 - qx0) * sizeof *dst);
    if (truth) {
        /* the flip mirrors x before the shift: 1 - (x scale + offset) + shift */
        p.offset_x += (float)(p.flip ? sx - qx0 : qx0 - sx) / (float)w;
        p.offset_y += (float)(qy0 - sy) / (float)h;
        const BoxClip quadrant = {(float)qx0 / (float)w, (float)qy0 / (float)h,
                                  (float)qx1 / (float)w, (float)qy1 / (float)h};
        boxes_place_within(truth, max_boxes, &p, &quadrant);
    }
    return CDL_OK;
}

/* Boxes in truth [max_boxes][TRUTH_FLOATS] before the first with x = 0. */
static int count_boxes(const float *truth, int max_boxes)
{
    int n = 0;
    while (n < max_boxes && truth[(size_t)n * TRUTH_FLOATS + TRUTH_X] != 0)
        n++;
    return n;
}

/* Reads sample i of src and its boxes, frames and pastes it as quadrant q, and appends its boxes
 * to truth [max_boxes][TRUTH_FLOATS] (NULL: none); own [max_boxes][TRUTH_FLOATS] is scratch. */
static int paste_sample(const AugmentConfig *a, const SampleSource *src, int i, int q, int cut_x,
                        int cut_y, int c, Rng *rng, AugmentScratch *s, float *dst, float *truth,
                        float *own, int max_boxes, Error *e)
{
    Image img = {0};
    int label;
    int st = src->read(src, i, &img, &label, e);
    if (!st && truth)
        st = src->read_boxes(src, i, own, max_boxes, e);
    if (!st &&
        paste_quadrant(a, &img, q, cut_x, cut_y, c, rng, s, dst, truth ? own : NULL, max_boxes))
        st = error_set(e, CDL_ERUNTIME, "out of memory for a mosaic");
    image_free(&img);
    if (!st && truth) {
        const int have = count_boxes(truth, max_boxes), add = count_boxes(own, max_boxes);
        const int n = add < max_boxes - have ? add : max_boxes - have;
        memcpy(truth + (size_t)have * TRUTH_FLOATS, own, (size_t)n * TRUTH_FLOATS * sizeof *own);
    }
    return st;
}

int augment_train_mosaic(const AugmentConfig *a, const SampleSource *src, const Image *first,
                         float *truth, int max_boxes, Rng *rng, AugmentScratch *s, float *out,
                         BoxPlacement *placed, Error *e)
{
    if (!a->mosaic || rng_uniform(rng) >= 0.5f)
        return augment_train(a, first, rng, s, out, placed)
                   ? error_set(e, CDL_ERUNTIME, "out of memory augmenting a sample")
                   : CDL_OK;
    int others[3];
    for (int k = 0; k < 3; k++)
        others[k] = (int)rng_below(rng, (uint32_t)src->n);
    const int w = a->out_w, h = a->out_h, c = first->c;
    const int cut_x =
        (int)(0.2f * (float)w) +
        (int)rng_below(rng, (uint32_t)((int)(0.8f * (float)w) - (int)(0.2f * (float)w) + 1));
    const int cut_y =
        (int)(0.2f * (float)h) +
        (int)rng_below(rng, (uint32_t)((int)(0.8f * (float)h) - (int)(0.2f * (float)h) + 1));
    const size_t truth_floats = (size_t)max_boxes * TRUTH_FLOATS;
    if (truth && s->truth_floats < truth_floats) {
        float *grown = realloc(s->truth, truth_floats * sizeof *grown);
        if (!grown)
            return error_set(e, CDL_ERUNTIME, "out of memory for a mosaic");
        s->truth = grown;
        s->truth_floats = truth_floats;
    }
    float *mosaic = augment_framed_buffer(a, c, s, out);
    if (!mosaic || paste_quadrant(a, first, 0, cut_x, cut_y, c, rng, s, mosaic, truth, max_boxes))
        return error_set(e, CDL_ERUNTIME, "out of memory for a mosaic");
    for (int k = 0; k < 3; k++) {
        const int st = paste_sample(a, src, others[k], k + 1, cut_x, cut_y, c, rng, s, mosaic,
                                    truth, s->truth, max_boxes, e);
        if (st)
            return st;
    }
    const BoxPlacement framed_at = box_placement_identity();
    AugmentConfig rest = *a;
    rest.flip = 0; /* each piece had its own flip and colour */
    rest.hue = 0;
    rest.saturation = rest.exposure = 1;
    return augment_train_framed(&rest, c, mosaic, rng, s, out, &framed_at, placed)
               ? error_set(e, CDL_ERUNTIME, "out of memory for a mosaic")
               : CDL_OK;
}
