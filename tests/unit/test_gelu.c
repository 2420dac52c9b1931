/* GELU (backend/cpu/activation.c, fmaf Horner steps and backend/cpu/exp_vec.h) on a dense sweep
 * against the exact forms in double: x Phi(x) and Phi(x) + x phi(x) (its backward takes Phi as y /
 * x from the forward), within 1e-6 relative (max abs diff over max abs value) over [-20, 20], where
 * float's tails underflow, and 1e-5 relative per point where the tail is not tiny; and the same
 * bits for an element wherever it falls in the vector loops (AVX-512 and AVX2: the last vector
 * masked). */
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/activation.h"
#include "check.h"

static double phi_cdf(double x)
{
    return 0.5 * erfc(-x / sqrt(2.0));
}

int main(void)
{
    const size_t n = 40001; /* odd: a vector body and a remainder */
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) {
        x[i] = -20.0f + 40.0f * (float)i / (float)(n - 1);
        d[i] = 1.0f;
    }
    activation_forward(x, y, n, CDL_ACT_GELU);
    activation_backward(x, y, d, n, CDL_ACT_GELU);
    double max_y = 0, diff_y = 0, max_d = 0, diff_d = 0;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double v = x[i], want_y = v * phi_cdf(v);
        const double want_d = phi_cdf(v) + v * exp(-0.5 * v * v) / sqrt(2.0 * M_PI);
        max_y = fmax(max_y, fabs(want_y)), diff_y = fmax(diff_y, fabs(y[i] - want_y));
        max_d = fmax(max_d, fabs(want_d)), diff_d = fmax(diff_d, fabs(d[i] - want_d));
        /* the relative error, where x^2 (the condition number) leaves float 1e-5 of it */
        if (v > -7.0 && fabs(want_y) > 1e-30)
            bad += fabs(y[i] - want_y) > 1e-5 * fabs(want_y) + 1e-12;
    }
    CHECK(diff_y <= 1e-6 * max_y);
    CHECK(diff_d <= 1e-6 * max_d);
    CHECK(bad == 0);
    /* An element's value does not depend on where it falls (vector body or the last, partial
     * vector): each element alone, a remainder by itself, gives the sweep's bits. */
    int moved = 0;
    for (size_t i = 0; i < n; i++) {
        float y1, d1 = 1.0f;
        activation_forward(x + i, &y1, 1, CDL_ACT_GELU);
        activation_backward(x + i, &y1, &d1, 1, CDL_ACT_GELU);
        moved += y1 != y[i] || d1 != d[i];
    }
    CHECK(moved == 0);
    free(x), free(y), free(d);
    return check_report("test_gelu");
}
