/* Reader for the reference fixtures tests/ref/NAME.ref (written from PyTorch by the scripts
 * in scripts/ref) and the error measure the unit tests compare against them with.
 *
 * .ref format, version 1:
 *   the ASCII line "CDLREF 1\n", then for each tensor, until end of file:
 *     an ASCII line "NAME NDIM D0 D1 ... D{NDIM-1}\n" (fields separated by single spaces;
 *     NAME has no whitespace and is shorter than 64 bytes; 1 <= NDIM <= 8; each D >= 1),
 *     then D0*D1*...*D{NDIM-1} values as float32 little-endian (4 bytes each), in C
 *     (row-major) order; NCHW for activations, [out][in][k][k] for convolution weights.
 *   Names are unique within a file.
 */
#ifndef CDL_TESTS_REF_FIXTURE_H
#define CDL_TESTS_REF_FIXTURE_H

#include <stddef.h>

typedef struct RefTensor {
    char name[64];
    int ndim;
    int dims[8];
    size_t count; /* product of dims */
    float *data;  /* count values, host byte order */
} RefTensor;

typedef struct RefFixture {
    RefTensor *tensors;
    int n;
} RefFixture;

/* Loads every tensor of the .ref file at path into f (which need not be initialised).
 * Returns 0 on success; on failure prints a message naming the file to stderr, leaves f
 * empty ({NULL, 0}) and returns -1. */
int ref_fixture_load(const char *path, RefFixture *f);

/* The tensor called name, or NULL when the fixture has none. */
const RefTensor *ref_fixture_get(const RefFixture *f, const char *name);

/* Frees everything ref_fixture_load allocated and resets f to {NULL, 0}; safe to call twice. */
void ref_fixture_free(RefFixture *f);

/* Floor of the denominator in ref_max_rel_error, as a fraction of the arrays' largest value. */
#define REF_REL_FLOOR 1e-2

/* Relative error of a against b (symmetric), computed in double:
 *
 *   scale = max over j of max(|a[j]|, |b[j]|)
 *   err   = max over i of |a[i] - b[i]| / max(|a[i]|, |b[i]|, REF_REL_FLOOR * scale)
 *
 * i.e. elementwise relative error, except that elements much smaller than the largest one
 * are measured against 1% of it (so float32 rounding in sums that nearly cancel does not
 * count as an error). Returns 0 when n == 0 or when both arrays are all zeros, and
 * INFINITY when any value is NaN or infinite. Tests accept err <= 1e-4. */
double ref_max_rel_error(const float *a, const float *b, size_t n);

#endif
