/* darknet's greedy per-class NMS over a list of detections. */
#include "detect/nms.h"

#include <stdlib.h>

/* What the per-class sort compares: class k's scores, ties by decoding order. */
typedef struct SortKey {
    const DetectionList *list;
    int k;
} SortKey;

/* 1 when detection i goes before j: a higher score for the class, or an equal one found first. */
static int ranks_before(SortKey s, int i, int j)
{
    const float pi = s.list->prob[(size_t)i * s.list->classes + s.k];
    const float pj = s.list->prob[(size_t)j * s.list->classes + s.k];
    return pi > pj || (pi == pj && s.list->items[i].index < s.list->items[j].index);
}

/* Sorts order [n] (detection numbers) by s, with tmp [n] as room (a merge sort: the key is a
 * total order, so any correct sort gives the same result). */
static void sort_order(SortKey s, int *order, int *tmp, int n)
{
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            const int mid = lo + width < n ? lo + width : n;
            const int hi = lo + 2 * width < n ? lo + 2 * width : n;
            int a = lo, b = mid, t = lo;
            while (a < mid || b < hi)
                tmp[t++] = b >= hi || (a < mid && !ranks_before(s, order[b], order[a]))
                               ? order[a++]
                               : order[b++];
        }
        for (int i = 0; i < n; i++)
            order[i] = tmp[i];
    }
}

static int suppresses(Box a, Box b, float thresh, NmsKind kind, float beta_nms)
{
    switch (kind) {
    case NMS_GREEDY:
        return box_diou(a, b, 0.6f) > thresh;
    case NMS_DIOU:
        return box_diou(a, b, beta_nms) > thresh;
    default:
        return box_iou(a, b) > thresh;
    }
}

int nms_sort(DetectionList *list, float thresh, NmsKind kind, float beta_nms, Error *e)
{
    int *order = malloc(2 * (size_t)(list->n ? list->n : 1) * sizeof *order);
    if (!order)
        return error_set(e, CDL_ERUNTIME, "out of memory sorting %d detections", list->n);
    int total = 0;
    for (int i = 0; i < list->n; i++)
        if (list->items[i].objectness != 0)
            order[total++] = i;
    for (int k = 0; k < list->classes; k++) {
        const SortKey s = {list, k};
        sort_order(s, order, order + list->n, total);
        for (int i = 0; i < total; i++) {
            const Detection *a = &list->items[order[i]];
            if (list->prob[(size_t)order[i] * list->classes + k] == 0)
                continue;
            for (int j = i + 1; j < total; j++)
                if (suppresses(a->box, list->items[order[j]].box, thresh, kind, beta_nms))
                    list->prob[(size_t)order[j] * list->classes + k] = 0;
        }
    }
    free(order);
    return CDL_OK;
}
