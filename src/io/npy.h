/* NumPy .npy files (format 1.0, float32 little-endian, C order), and a net's parameters
 * and running statistics as a directory of them (`cdl export npy`). */
#ifndef CDL_NPY_H
#define CDL_NPY_H

#include <stdint.h>

#include "core/net.h"

/* Writes data, shaped dims[n_dims] (n_dims 0: a scalar), to path atomically. */
int npy_write(const char *path, const float *data, int n_dims, const int64_t *dims, Error *e);

/* Creates dir (when missing) and writes dir/layer<i>.<param name>.npy for every parameter
 * and state tensor of net, shaped as its Param (convolution weights
 * [filters][c/groups][size][size], connected [output][inputs], ...). */
int npy_export_net(const Net *net, const char *dir, Error *e);

#endif
