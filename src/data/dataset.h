/* In-memory labelled image dataset (IDX or digits-style CSV), stored as uint8 NCHW pixels. */
#ifndef CDL_DATASET_H
#define CDL_DATASET_H

#include <stdint.h>

#include "util/error.h"

typedef struct Dataset {
    int n, c, h, w;  /* samples and per-sample shape (NCHW) */
    uint8_t *pixels; /* [n][c][h][w] */
    /* float value = pixel / max_value (255 for IDX, 16 for sklearn digits): a division, as
       torchvision's ToTensor and cdl's PNG and JPEG decoding (a multiply by 1/255 differs in
       the last bit for some values, and a run from IDX then drifts from one from PNG files) */
    float max_value;
    int *labels; /* [n], 0 <= label < classes */
    int classes; /* 1 + max label seen */
} Dataset;

/* Largest label a dataset file may hold (labels are stored as bytes in IDX). */
enum { DATASET_MAX_LABEL = 255 };

/* Frees the buffers and zeroes d; safe on a zeroed or already freed Dataset. */
void dataset_free(Dataset *d);

/* Loads a dataset by content, .gz or raw alike:
   - IDX images (magic 0x00000803: n, h, w; c = 1; max_value 255) with labels from labels_path
     (IDX 0x00000801, one byte per image; required);
   - otherwise CSV lines of side*side pixel values then the label (scikit-learn digits layout:
     64 values 0..16 then the label, h = w = 8, c = 1). Pixels must be integers in 0..255;
     max_value is 16 when no pixel exceeds 16 (digits), else 255. labels_path must be NULL.
   On failure d is left zeroed and e names the file (and FILE:LINE for CSV). */
int dataset_load(const char *images_path, const char *labels_path, Dataset *d, Error *e);

/* Reads the first 16 bytes of path (.gz or raw) only: 1 and the per-sample shape [1][h][w] when
   they are an IDX image header, else 0 (another kind, or an unreadable file). */
int dataset_peek_idx_shape(const char *path, int *c, int *h, int *w);

/* Moves the last round(n * fraction) samples of d into held_out (both keep their order and
   d's classes). fraction must be in (0, 1) and leave at least one sample on each side. */
int dataset_split_tail(Dataset *d, float fraction, Dataset *held_out, Error *e);

/* Writes samples idx[0..n) as floats into x [n][c][h][w] (pixel / max_value) and their labels into
   y [n] (y may be NULL). No allocation. */
void dataset_fill_batch(const Dataset *d, const int *idx, int n, float *x, int *y);

#endif
