/* Training passes smaller than the cfg's mini-batch (Net.split): a sequence net whose layers all
 * work sample by sample runs each mini-batch as several passes, so that a layer's output and
 * gradient stay in the core's cache for the next layer, forward and backward. The gradients are
 * the mini-batch's (every sample draws what it would in one pass: train/trainer.c), summed in
 * another order. */
#ifndef CDL_NET_SPLIT_H
#define CDL_NET_SPLIT_H

#include "core/net.h"

/* The split for training net on `threads` threads: passes of the fewest samples, a divisor of
 * hyper.batch / subdivisions, at least as many as fit each thread's NET_SPLIT_PASS_BYTES with
 * the net's largest layer output and gradient, times threads (a pass's samples are split over
 * the threads); 1 unless the net is a sequence net whose layers all have
 * LayerType.splits_batch, and [net] split_passes=0 asks for none. */
int net_training_split(const Net *net, int threads);

/* Samples in each of those passes: hyper.batch / subdivisions / net_training_split. */
int net_training_pass(const Net *net, int threads);

/* Sizes net for training in `split` passes of each mini-batch (Net.split, then net_resize for
 * hyper.batch / subdivisions / split samples). */
int net_resize_split(Net *net, int split, Error *e);

#endif
