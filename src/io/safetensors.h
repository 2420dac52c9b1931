/* safetensors files (the format PyTorch, Hugging Face and timm distribute weights in): named
 * tensors, read and written without knowing anything about networks.
 *
 * Layout (integers and tensor bytes little-endian):
 *
 *   offset  size  field
 *   0       8     uint64 N, the header's length
 *   8       N     header: a JSON object {"NAME": {"dtype": "F32", "shape": [64, 3, 7, 7],
 *                 "data_offsets": [BEGIN, END]}, ..., "__metadata__": {"KEY": "VALUE"}}
 *                 (optional __metadata__, strings only), padded with spaces
 *   8+N     ...   the tensors' bytes: tensor NAME is bytes [8+N+BEGIN, 8+N+END), row-major,
 *                 END-BEGIN = product(shape) x the dtype's size (a shape [] is one element)
 *
 * The reader checks every length, offset and shape against the file before anything is read:
 * a header that is not such an object, a shape or offset past the data, a byte count that is
 * not the shape's, an unknown dtype or a repeated name is refused with "PATH: ..." naming the
 * tensor. F32, F16 and BF16 tensors are read as float32. cdl writes F32 tensors (and I64 ones
 * for torch's num_batches_tracked) in the order given, the header compact JSON (__metadata__
 * first, then the tensors in that order) padded with spaces to a multiple of 8 bytes, as the
 * `safetensors` package pads it: the same tensors always give the same bytes. */
#ifndef CDL_IO_SAFETENSORS_H
#define CDL_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/error.h"
#include "util/hash_table.h"

#define SAFETENSORS_MAX_DIMS 8
/* Headers longer than this are refused (the safetensors package's own limit). */
#define SAFETENSORS_MAX_HEADER_BYTES 100000000ULL

typedef struct SafetensorsTensor {
    char *name;
    char dtype[8]; /* "F32", "F16", "BF16", "I64", ... */
    int n_dims;
    int64_t dims[SAFETENSORS_MAX_DIMS];
    uint64_t count;      /* elements: the product of dims (1 for a scalar) */
    uint64_t begin, end; /* byte offsets in the data section */
    const void *data;    /* writing only: count elements of dtype, little-endian */
} SafetensorsTensor;

typedef struct Safetensors {
    char *path;
    FILE *file;
    uint64_t data_start; /* 8 + N */
    SafetensorsTensor *tensors;
    int n_tensors;
    ByteSet names; /* tensor k's name is index k: duplicates found and names looked up hashed */
} Safetensors;

/* 1 when path ends in ".safetensors". */
int safetensors_is_path(const char *path);

/* Opens path and checks its header against the file's size (see the layout). Close even after
 * a failure. */
int safetensors_open(Safetensors *st, const char *path, Error *e);
void safetensors_close(Safetensors *st);

/* The tensor named name, or NULL. */
const SafetensorsTensor *safetensors_find(const Safetensors *st, const char *name);

/* 1 when the tensor's dtype is one safetensors_read_f32 converts (F32, F16, BF16). */
int safetensors_is_float(const SafetensorsTensor *t);

/* out [t->count] = the tensor's values as float32 (F32, F16 or BF16). */
int safetensors_read_f32(const Safetensors *st, const SafetensorsTensor *t, float *out, Error *e);

/* Writes the tensors (name, dtype "F32" or "I64", n_dims, dims, data; the offsets are laid out
 * here, in order) and the metadata pairs (keys[k], values[k]) to path, atomically. */
int safetensors_write(const char *path, const SafetensorsTensor *tensors, int n_tensors,
                      const char *const *metadata_keys, const char *const *metadata_values,
                      int n_metadata, Error *e);

#endif
