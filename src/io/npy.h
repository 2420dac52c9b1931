/* NumPy .npy files (format 1.0, float32 little-endian, C order). */
#ifndef CDL_NPY_H
#define CDL_NPY_H

#include <stdint.h>

#include "util/error.h"

/* Writes data, shaped dims[n_dims] (n_dims 0: a scalar), to path atomically. */
int npy_write(const char *path, const float *data, int n_dims, const int64_t *dims, Error *e);

#endif
