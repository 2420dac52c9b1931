/* CIFAR-10 and CIFAR-100 binary batches (the "binary version" users download) loaded into an
 * in-memory Dataset. A record is the label byte (CIFAR-100: coarse then fine label bytes; the
 * fine one is used) followed by 3072 pixel bytes: the 32x32 red plane, then green, then blue,
 * rows top to bottom, which is already the Dataset's [c][h][w] layout. */
#ifndef CDL_CIFAR_H
#define CDL_CIFAR_H

#include "data/dataset.h"
#include "util/error.h"

enum { CIFAR_SIDE = 32, CIFAR_PIXELS = 3 * 32 * 32 };

/* The variant (10 or 100) of a spec (see cifar_load), or 0 when it cannot tell: a directory by
   the batch files it holds (data_batch_*.bin or test_batch.bin: 10; train.bin or test.bin:
   100), a file by its name (the same names) or else by its size (a whole number of 3073-byte
   records: 10; of 3074-byte records: 100; both or neither: 0). */
int cifar_detect(const char *spec);

/* Loads variant (10 or 100) batches into d (c = 3, h = w = 32, scale 1/255, classes = variant).
   spec is a comma-separated list of batch files, concatenated in the order given, or a directory
   of the downloaded batches: CIFAR-10 data_batch_*.bin (sorted) or, with test set, test_batch.bin;
   CIFAR-100 train.bin or, with test set, test.bin. Errors name the file: missing, not a whole
   number of records, a label beyond the variant's classes. On failure d is left zeroed. */
int cifar_load(const char *spec, int variant, int test, Dataset *d, Error *e);

#endif
