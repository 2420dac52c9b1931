/* NumPy .npy files: writing float32 arrays (format 1.0, little-endian, C order), and reading
 * float arrays of any format version (float32, float64 and float16, as float32). */
#ifndef CDL_NPY_H
#define CDL_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

enum { NPY_MAX_DIMS = 8 };

/* Writes data, shaped dims[n_dims] (n_dims 0: a scalar), to path atomically. */
int npy_write(const char *path, const float *data, int n_dims, const int64_t *dims, Error *e);

/* An array read from a .npy file. */
typedef struct NpyArray {
    int n_dims; /* 0: a scalar */
    int64_t dims[NPY_MAX_DIMS];
    size_t count;  /* product of dims */
    char dtype[8]; /* the file's: "<f4", "<f8" or "<f2" */
    float *data;   /* [count] as float32 (malloc'd; float64 rounded to nearest, float16 exact) */
} NpyArray;

/* Reads path (format 1.0, 2.0 or 3.0) into *a. Refused (CDL_EUSAGE), naming the file: another
 * dtype (integers, big-endian, complex, ...), Fortran order; (CDL_ERUNTIME) a file that is not
 * .npy, a malformed header, more than NPY_MAX_DIMS dims, a data size that is not the shape's.
 * On failure *a is empty (npy_array_free is still safe). */
int npy_read(const char *path, NpyArray *a, Error *e);
void npy_array_free(NpyArray *a);

#endif
