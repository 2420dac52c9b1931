/* Truth boxes of detection data: darknet's label files (one `class cx cy w h` line per box,
 * normalised to the image), where the label file of an image lies, and how a box follows its
 * image through the loader's framing and flips. Boxes are laid out as darknet's net.truth, what
 * the detection losses read (StepContext.truth). */
#ifndef CDL_BOXES_H
#define CDL_BOXES_H

#include "util/error.h"

/* One truth box: centre x, y and width, height relative to the image (0..1), then the class id
 * as a float. A sample's boxes come first, then unused slots of zeros: a box with x = 0 ends the
 * sample's list, as in darknet. */
enum { TRUTH_X, TRUTH_Y, TRUTH_W, TRUTH_H, TRUTH_CLASS, TRUTH_FLOATS };

/* Where an image's normalised coordinates land in the framed output: x' = x scale_x + offset_x,
 * w' = w scale_x (and so for y, h); then, with flip, x' = 1 - x' (a left-right mirror). */
typedef struct BoxPlacement {
    float scale_x, scale_y, offset_x, offset_y;
    int flip;
} BoxPlacement;

/* The placement of an output that is the image itself, or the image resized to any size. */
BoxPlacement box_placement_identity(void);

/* The label file of an image, darknet's rule: the image path with its last `/images/` or
 * `/JPEGImages/` replaced by `/labels/` and its extension by `.txt` when that file exists, else
 * the `.txt` beside the image (malloc'd; NULL when out of memory). *found tells whether the
 * returned file exists. */
char *boxes_label_path(const char *image_path, int *found);

/* Reads a label file into truth [max_boxes][TRUTH_FLOATS]: its boxes in file order, then zeros;
 * a file of more than max_boxes boxes gives its first max_boxes (darknet's max=), *n the count
 * given. Blank lines are skipped; an empty file is an image without objects. Every other line
 * must be `class cx cy w h` (white-space separated): class an integer in [0, classes), the centre
 * strictly inside the image (0 < cx, cy < 1: darknet refuses 0 as a wrong annotation, and a flip
 * would move a centre at 1 to 0, which ends the list) and 0 < w, h <= 1; anything else, NaN
 * included, is CDL_EUSAGE naming FILE:LINE and the field. An unreadable file is CDL_ERUNTIME. */
int boxes_read(const char *label_path, int classes, float *truth, int max_boxes, int *n, Error *e);

/* Moves the boxes of truth [max_boxes][TRUTH_FLOATS] (up to the first with x = 0) as p says,
 * then, as darknet's correct_boxes and fill_truth_detection, clips their sides into the image and
 * drops those left narrower or lower than 0.001 (the others move up, zeros after them). */
void boxes_place(float *truth, int max_boxes, const BoxPlacement *p);

/* A rectangle of the frame in normalised coordinates (0..1). */
typedef struct BoxClip {
    float left, top, right, bottom;
} BoxClip;
/* boxes_place clipping to clip instead of the whole frame (a mosaic's quadrant). */
void boxes_place_within(float *truth, int max_boxes, const BoxPlacement *p, const BoxClip *clip);

#endif
