/* Failure counters shared by the CHECK macros, and the fills and errors tests compare with. */
#include "check.h"

int check_failures, check_count;

int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

void check_fill_uniform(float *x, size_t n, float lo, unsigned *state)
{
    for (size_t i = 0; i < n; i++) {
        *state = *state * 1664525u + 1013904223u;
        x[i] = (float)(*state >> 8) / 8388608.0f + lo;
    }
}

void check_fill_normal(float *x, size_t n, Rng *rng)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rng_normal(rng);
}

void check_varies(const char *what, const float *x, size_t n)
{
    size_t i = 1;
    while (i < n && x[i] == x[0])
        i++;
    check_count++;
    if (i >= n) {
        check_failures++;
        fprintf(stderr, "FAIL %s: all %zu values are %g (not written, or replaced after?)\n", what,
                n, n ? (double)x[0] : 0.0);
    }
}

double check_rel_error(const float *got, const float *want, size_t n)
{
    double diff = 0.0, max = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isnan(got[i]) != !isnan(want[i]))
            return INFINITY; /* fmax below would skip the NaN */
        diff = fmax(diff, fabs((double)got[i] - want[i]));
        max = fmax(max, fabs((double)want[i]));
    }
    return max > 0.0 ? diff / max : diff;
}
