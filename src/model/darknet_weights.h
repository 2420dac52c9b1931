/* darknet's .weights files, read into and written from a net built from the matching cfg.
 *
 * Layout (native byte order, float32 tensors, no checksum and no sizes):
 *   int32 major, minor, revision (each 0..DARKNET_VERSION_MAX, else the file is refused: darknet
 *         writes 0.1.0 and 0.2.0, converters mark transposed weights with parts > 1000)
 *   seen: uint64 when major*10 + minor >= 2 (and both < 1000), else int32 (images trained on)
 *   then, for every layer in order:
 *     [convolutional]  biases [n]; with batch_normalize: scales, rolling_mean,
 *                      rolling_variance [n]; weights [n][c/groups][size][size]
 *     [connected]      biases [out]; weights [out][in] ([in][out] when major or minor > 1000);
 *                      with batch_normalize: scales, rolling_mean, rolling_variance [out]
 *     [batchnorm]      scales, rolling_mean, rolling_variance [c] (no shift: darknet keeps
 *                      a [batchnorm]'s biases at 0)
 *     other layers     nothing
 * cdl writes version 0.2.0 with a uint64 `seen`, as darknet does. */
#ifndef CDL_DARKNET_WEIGHTS_H
#define CDL_DARKNET_WEIGHTS_H

#include <stdint.h>

#include "core/net.h"

#define DARKNET_VERSION_MAX 65535

/* A .weights file's header, and the [net] keys that loading it set. */
typedef struct DarknetHeader {
    int32_t major, minor, revision;
    uint64_t seen;
    int set_bn_darknet, set_letterbox; /* 1: the cfg left the key out, and loading set it to 1 */
} DarknetHeader;

/* Loads the tensors of the .weights file at path into net (built from the cfg the weights
 * belong to) and makes the net compute as darknet does, unless its cfg chose otherwise (the key
 * is in its [net], or given with --set): bn_darknet=1 (batch norm divides by sqrt(var) + 1e-6,
 * in training of the unbiased batch variance, its running statistics moving by bn_momentum's
 * default then, 0.01) unless the cfg sets bn_darknet, and letterbox=1 (darknet predict's framing:
 * fit inside, fill 0.5, darknet's resize) unless it sets letterbox or center_crop. Both are
 * recorded in the net's cfg, so its checkpoints keep them. The file's size is checked against the
 * net's layers before anything is read: a file that ends inside a layer, or goes on after the last
 * one, is refused (CDL_EUSAGE) naming the file, the cfg and the layer; so is a non-finite value or
 * a negative variance (the mark of a mismatched layout). header (may be NULL) receives the file's
 * header. On failure the net's tensors are unspecified. */
int darknet_weights_load(Net *net, const char *path, DarknetHeader *header, Error *e);

/* Writes net's tensors as a darknet .weights file (atomically), with `seen` images. A layer
 * whose tensors darknet cannot hold (a family darknet lacks, or a [batchnorm] with a non-zero
 * shift) is refused (CDL_EUSAGE) naming it. */
int darknet_weights_save(const Net *net, const char *path, uint64_t seen, Error *e);

#endif
