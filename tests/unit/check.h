/* Assertion macros for unit tests: print file, line and the failed expression, count
 * failures; a test binary's main returns check_report(). */
#ifndef CDL_TEST_CHECK_H
#define CDL_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/rng.h"

extern int check_failures, check_count;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double check_a_ = (a), check_b_ = (b);                                                     \
        check_count++;                                                                             \
        if (!(fabs(check_a_ - check_b_) <= (tol))) {                                               \
            check_failures++;                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s = %.9g, expected %s = %.9g (tol %g)\n", __FILE__,      \
                    __LINE__, #a, check_a_, #b, check_b_, (double)(tol));                          \
        }                                                                                          \
    } while (0)

#define CHECK_CONTAINS(haystack, needle)                                                           \
    do {                                                                                           \
        const char *check_h_ = (haystack);                                                         \
        check_count++;                                                                             \
        if (!strstr(check_h_, (needle))) {                                                         \
            check_failures++;                                                                      \
            fprintf(stderr, "FAIL %s:%d: '%s' does not contain '%s'\n", __FILE__, __LINE__,        \
                    check_h_, (needle));                                                           \
        }                                                                                          \
    } while (0)

/* x[0..n) uniform in [lo, lo + 2) from a fixed linear congruential sequence (*state). */
void check_fill_uniform(float *x, size_t n, float lo, unsigned *state);

/* x[0..n) standard normal from *rng. */
void check_fill_normal(float *x, size_t n, Rng *rng);

/* A check that x[0..n) holds more than one value: a guard for an input a comparison depends on
 * (a net's input left zero, e.g. written before a net_resize that gives the net a new buffer,
 * makes two engines agree whatever they compute). what names it in the failure. */
void check_varies(const char *what, const float *x, size_t n);

/* max |got - want| / max |want| over n values (the absolute difference when want is all 0);
 * infinity where one of got and want is NaN and the other is not. */
double check_rel_error(const float *got, const float *want, size_t n);

/* Prints "NAME: N checks, N failed" and returns the exit status for main. */
int check_report(const char *name);

#endif
