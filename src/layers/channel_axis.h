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

/* a as a tensor in layout channels_last lays it out: along the channels of a channels-last (NHWC)
 * image [batch][h*w][c] a group per pixel, its n channels adjacent (inner 1); per-group values
 * ([batch * groups][inner]) keep their order. Any other a as it is. */
static inline ChannelAxis channel_axis_in_layout(ChannelAxis a, int channels_last)
{
    return channels_last && a.channels ? (ChannelAxis){a.n, 1, a.groups * a.inner, 1} : a;
}

/* A per-channel family's use of channels-last (core/layer.h): along an image's channels, any one
 * layout of its input and output (the axis in that layout); along the last axis, NCHW only. */
static inline ChannelsLastUse channel_axis_takes_channels_last(ChannelAxis a)
{
    return a.channels ? CHANNELS_LAST_SAME : CHANNELS_LAST_NEVER;
}

#endif
