/* [route]'s configuration (layers/route.c parses it; backend/cpu/route.c computes with it). */
#ifndef CDL_ROUTE_H
#define CDL_ROUTE_H

#include "core/layer.h"

typedef struct Route {
    size_t sizes[LAYER_MAX_INPUTS]; /* c_k * h * w: values per sample of input k */
} Route;

#endif
