/* The axis that a family with one parameter per channel works along ([layer_scale], [layernorm]):
 * a tensor [batch][c][h][w] viewed as [batch * groups][n][inner], the n values of one group inner
 * apart. Along the channels (an image's): n = c, inner = h*w, a group per sample. Along the last
 * axis (a token's features in a sequence net): n = w, inner = 1, c*h groups per sample. */
#ifndef CDL_CHANNEL_AXIS_H
#define CDL_CHANNEL_AXIS_H

#include <stddef.h>

#include "core/layer.h"

typedef struct ChannelAxis {
    int n;        /* values along the axis, one parameter each */
    int inner;    /* distance between them, in values */
    int groups;   /* per sample */
    int channels; /* 1: along the channels, 0: along the last axis */
} ChannelAxis;

/* s's channels (last 0) or its last axis (last 1). */
static inline ChannelAxis channel_axis(Shape s, int last)
{
    return last ? (ChannelAxis){s.w, 1, s.c * s.h, 0} : (ChannelAxis){s.c, s.h * s.w, 1, 1};
}

#endif
