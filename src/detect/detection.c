/* The growable list of detections. */
#include "detect/detection.h"

#include <stdlib.h>

void detection_list_init(DetectionList *list, int classes)
{
    *list = (DetectionList){.classes = classes};
}

int detection_list_reserve(DetectionList *list, int extra, Error *e)
{
    if (list->n + extra <= list->capacity)
        return CDL_OK;
    const int capacity =
        list->n + extra > 2 * list->capacity ? list->n + extra : 2 * list->capacity;
    Detection *items = realloc(list->items, (size_t)capacity * sizeof *items);
    if (items)
        list->items = items;
    float *prob =
        items ? realloc(list->prob, (size_t)capacity * list->classes * sizeof *prob) : NULL;
    if (!prob)
        return error_set(e, CDL_ERUNTIME, "out of memory holding %d detections", capacity);
    list->prob = prob;
    list->capacity = capacity;
    return CDL_OK;
}

void detection_list_free(DetectionList *list)
{
    free(list->items);
    free(list->prob);
    *list = (DetectionList){0};
}
