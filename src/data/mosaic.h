/* AlexeyAB's mosaic augmentation for detection ([net] mosaic=1): a training sample made of four
 * images placed around a random centre, each cut to its quadrant, their truth boxes moved with
 * them, clipped to the quadrant and dropped when left thinner than 0.001, as the single-image
 * placement does (data/boxes.h). */
#ifndef CDL_MOSAIC_H
#define CDL_MOSAIC_H

#include "data/augment.h"
#include "data/source.h"

/* augment_train of first (a sample of src, its boxes in truth [max_boxes][TRUTH_FLOATS], or truth
 * NULL and max_boxes 0 for none); with a->mosaic, half the samples (a coin drawn first) become a
 * mosaic instead, as AlexeyAB's darknet, which tosses its coin once per loading thread's batch:
 *
 * - three more samples of src, drawn uniformly (rng_below(src->n) each), are read with their
 *   boxes (a read failure is this sample's, naming the file);
 * - the centre (cut_x, cut_y) is drawn in [0.2, 0.8] of the net's width, then height (whole
 *   pixels, darknet's min_offset);
 * - in the order top-left, top-right, bottom-left, bottom-right, first then the three, each image
 *   is framed as augment_frame_train frames one (the detection jitter placement, or the eval
 *   framing) and the piece of that frame of the quadrant's size next to the image's edge that
 *   faces the centre (pushed inside the frame where the image is smaller than the quadrant:
 *   AlexeyAB's left/right/top/bot shifts) is pasted into the quadrant; with flip=1 each frame is
 *   first mirrored left-right on a coin of its own (p = 0.5), the piece then taken from the
 *   mirrored frame, as AlexeyAB's; a frame of other channels than first's is converted to
 *   first's; then each frame gets a colour jitter of its own (hue, saturation, exposure:
 *   augment_jitter_hsv, drawn after its flip coin), as AlexeyAB's draws one per image;
 * - then the steps after framing but the flip and the HSV jitter (brightness, contrast, ...)
 *   apply to the whole mosaic.
 *
 * truth receives the mosaic's boxes, quadrant by quadrant, up to max_boxes, placed in the
 * mosaic (each piece's flip included); *placed is box_placement_identity's, as augment_train's
 * placed. Fails with CDL_ERUNTIME (out of memory) or a read's error. */
int augment_train_mosaic(const AugmentConfig *a, const SampleSource *src, const Image *first,
                         float *truth, int max_boxes, Rng *rng, AugmentScratch *s, float *out,
                         BoxPlacement *placed, Error *e);

#endif
