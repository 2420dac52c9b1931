/* A detected box with its scores (darknet's `detection`), and a growable list of them whose
 * class scores live in one allocation. */
#ifndef CDL_DETECTION_H
#define CDL_DETECTION_H

#include "data/box_overlap.h"
#include "util/error.h"

typedef struct Detection {
    Box box;          /* centre and size, relative to the image (0..1 inside it) */
    float objectness; /* the [yolo] objectness of the cell and anchor */
    int index;        /* position at decoding: NMS's sort keeps this order between equal scores */
} Detection;

/* n detections; prob [n][classes] (row i is items[i]'s): objectness times the class
 * probability, 0 where that is not above the decoding threshold (or NMS suppressed it). */
typedef struct DetectionList {
    Detection *items;
    float *prob;
    int n, capacity, classes;
} DetectionList;

/* An empty list of detections over classes classes. */
void detection_list_init(DetectionList *list, int classes);
/* Room for extra more detections (CDL_ERUNTIME when out of memory). */
int detection_list_reserve(DetectionList *list, int extra, Error *e);
void detection_list_free(DetectionList *list);

#endif
