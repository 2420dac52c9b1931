/* Which tensors a net keeps channels-last (NHWC, Layer.channels_last): the one place that decides
 * it, when net_resize sizes the net, next to core/net_storage.h. */
#ifndef CDL_NET_CHANNELS_LAST_H
#define CDL_NET_CHANNELS_LAST_H

#include "core/net.h"

/* Sets every layer's channels_last and in_channels_last. With
 * [net] channels_last=1 a layer's output, and its gradient, is NHWC where its kernels take NHWC
 * (LayerKernels.takes_channels_last), every reader's take it as that input, and it is not the
 * net's output (which the host reads NCHW); a CHANNELS_LAST_SAME layer is NHWC only where all
 * its inputs are too. The net input stays NCHW as the host gives it: a convolution reading it
 * (CHANNELS_LAST_EITHER) gathers its NHWC pixel rows from it directly, which is the transpose, in
 * the kernel that makes its columns anyway. A producer and a consumer thus always agree and no
 * tensor is transposed between layers; every other tensor, and every tensor of a net with
 * channels_last=0 or on the CPU, is NCHW. */
void net_plan_channels_last(Net *net);

#endif
