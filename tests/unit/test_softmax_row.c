/* backend/cpu/softmax_row.c against the scalar libm softmax it replaced (expf, float sums) and the
 * log-sum-exp in double: within 1e-5 relative for row lengths around the vector widths, in place
 * and out of place, and deterministic; softmax_row_probs against softmax_row_scaled. */
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/softmax_row.h"
#include "check.h"
#include "util/rng.h"

/* The softmax layer's and attention's row before backend/cpu/softmax_row.c, unchanged. */
static void reference_row(const float *x, float *y, size_t n)
{
    float max = x[0];
    for (size_t i = 1; i < n; i++)
        max = x[i] > max ? x[i] : max;
    float sum = 0;
    for (size_t i = 0; i < n; i++) {
        y[i] = expf(x[i] - max);
        sum += y[i];
    }
    float inv = 1.0f / sum;
    for (size_t i = 0; i < n; i++)
        y[i] *= inv;
}

/* The softmax layer's log-sum-exp before, in double. */
static double reference_lse(const float *x, size_t n)
{
    double max = x[0], sum = 0;
    for (size_t i = 1; i < n; i++)
        max = x[i] > max ? x[i] : max;
    for (size_t i = 0; i < n; i++)
        sum += exp(x[i] - max);
    return max + log(sum);
}

/* softmax_row_probs is softmax_row_scaled without the log-sum-exp: the same bits, in place too. */
static void check_probs(const float *x, size_t n)
{
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    softmax_row_scaled(x, want, n, 0.17677669f);
    softmax_row_probs(x, got, n, 0.17677669f);
    CHECK(!memcmp(want, got, n * sizeof *got));
    memcpy(want, x, n * sizeof *want);
    softmax_row_probs(want, want, n, 0.17677669f);
    CHECK(!memcmp(want, got, n * sizeof *got));
    free(want), free(got);
}

static void check_length(Rng *rng, size_t n, float spread)
{
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *ref = malloc(n * sizeof *ref);
    float *again = malloc(n * sizeof *again);
    for (size_t i = 0; i < n; i++)
        x[i] = spread * (2.0f * rng_uniform(rng) - 1.0f);
    reference_row(x, ref, n);
    const double lse = softmax_row(x, y, n);
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < n; i++) {
        max_diff = fmax(max_diff, fabs((double)y[i] - ref[i]));
        max_ref = fmax(max_ref, fabs((double)ref[i]));
    }
    CHECK(max_diff <= 1e-5 * max_ref);
    const double want = reference_lse(x, n);
    CHECK_NEAR(lse, want, 1e-5 * fmax(1.0, fabs(want)));
    /* in place, and the same bits twice */
    for (size_t i = 0; i < n; i++)
        again[i] = x[i];
    CHECK(softmax_row(again, again, n) == lse);
    CHECK(!memcmp(again, y, n * sizeof *y));
    /* softmax_row_scaled(x / 4, 4) is softmax_row(x) */
    for (size_t i = 0; i < n; i++)
        again[i] = x[i] * 0.25f;
    const double scaled_lse = softmax_row_scaled(again, again, n, 4.0f);
    CHECK_NEAR(scaled_lse, lse, 1e-6 * fmax(1.0, fabs(lse)));
    CHECK(check_rel_error(again, y, n) <= 1e-6);
    check_probs(x, n);
    free(x), free(y), free(ref), free(again);
}

/* softmax_row_probs gives exact zeros where scale * (x - max) < -87 (softmax_row_scaled's
 * floor), in the whole vectors and in the lanes past them. */
static void check_probs_underflow(void)
{
    float x[13];
    for (size_t i = 0; i < 13; i++)
        x[i] = i % 3 ? -1000.0f : (float)i;
    check_probs(x, 13);
    float y[13];
    softmax_row_probs(x, y, 13, 1.0f);
    int zeros = 1;
    for (size_t i = 0; i < 13; i++)
        zeros &= i % 3 ? y[i] == 0.0f : y[i] > 0.0f;
    CHECK(zeros);
}

/* A NaN anywhere in the row (a whole vector's lane or one past them) makes every probability
 * NaN, as torch.softmax: none comes out as a number that hides it. */
static void check_probs_nan(void)
{
    for (size_t at = 0; at < 21; at += 4) {
        float x[21], y[21];
        for (size_t i = 0; i < 21; i++)
            x[i] = (float)i * 0.1f;
        x[at] = NAN;
        softmax_row_probs(x, y, 21, 1.0f);
        int all_nan = 1;
        for (size_t i = 0; i < 21; i++)
            all_nan &= isnan(y[i]);
        CHECK(all_nan);
    }
}

int main(void)
{
    Rng rng;
    rng_seed(&rng, 11, 0);
    const size_t lengths[] = {1,  2,  3,  4,  5,  6,  7,   8,   9,   15,
                              16, 17, 31, 63, 64, 65, 127, 128, 256, 1000};
    const float spreads[] = {0.5f, 5.0f, 40.0f};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
        for (size_t s = 0; s < sizeof spreads / sizeof spreads[0]; s++)
            check_length(&rng, lengths[i], spreads[s]);
    check_probs_underflow();
    check_probs_nan();
    return check_report("test_softmax_row");
}
