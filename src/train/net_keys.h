/* What the [net] keys that are not the net's own say (train/net_keys.c): the data's augmentation,
 * read from a built net's cfg where a loader, eval or predict needs it. */
#ifndef CDL_NET_KEYS_H
#define CDL_NET_KEYS_H

#include "core/net.h"
#include "data/augment.h"

/* *a = the augmentation of net's [net] keys (its input's shape, normalisation, the training
 * draws), with a detector's placement from its last [yolo]'s jitter= (box_jitter) and, with
 * random=0, resize= (box_resize); fails only on
 * a key changed since the net was built (cfg_apply_override). */
int net_augment(const Net *net, AugmentConfig *a, Error *e);

#endif
