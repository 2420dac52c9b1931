/* [route]'s configuration (layers/route.c parses it; backend/cpu/route.c computes with it). */
#ifndef CDL_ROUTE_H
#define CDL_ROUTE_H

#include "core/layer.h"

typedef struct Route {
    size_t sizes[LAYER_MAX_INPUTS]; /* c_k * h * w: values per sample of input k */
    int groups, group_id;           /* each input contributes its channel group group_id */
} Route;

/* Values per sample that input k contributes: its group group_id of sizes[k] / groups. */
static inline size_t route_part(const Route *ro, int k)
{
    return ro->sizes[k] / (size_t)ro->groups;
}

#endif
