/* backend/cpu/exp_vec.h: the vector forms (exp16 with AVX-512, exp8 with AVX2 + FMA) give exp_vec's
 * bits on a strided sweep of every float bit pattern (every 127th, so every exponent and many
 * mantissas) and on the clamps' edges, NaN in gives NaN out, and exp_vec is within 4 ulp of double
 * exp over
 * [-87, 88]. (Every one of the 2^32 patterns was checked once by hand: 22 s, too long here.) */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend/cpu/exp_vec.h"
#include "check.h"

#if defined(__AVX512F__)
#define LANES 16
static void exp_lanes(const float *x, float *y)
{
    _mm512_storeu_ps(y, exp16(_mm512_loadu_ps(x)));
}
#elif defined(__AVX2__) && defined(__FMA__)
#define LANES 8
static void exp_lanes(const float *x, float *y)
{
    _mm256_storeu_ps(y, exp8(_mm256_loadu_ps(x)));
}
#else
#define LANES 0
#endif

static float float_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Counts the lanes of x[LANES] where the vector form differs from exp_vec (NaN in: not NaN out). */
static int lane_mismatches(const float *x)
{
#if LANES
    float y[LANES];
    exp_lanes(x, y);
    int bad = 0;
    for (int i = 0; i < LANES; i++) {
        const float want = exp_vec(x[i]);
        bad += x[i] != x[i] ? y[i] == y[i] : memcmp(&want, &y[i], sizeof want) != 0;
    }
    return bad;
#else
    (void)x;
    return 0;
#endif
}

int main(void)
{
    int bad = 0, nan_seen = 0;
    float x[16];
    int filled = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += 127) {
        x[filled] = float_of((uint32_t)u);
        nan_seen += x[filled] != x[filled];
        if (++filled == (LANES ? LANES : 1)) {
            bad += lane_mismatches(x);
            filled = 0;
        }
    }
    CHECK(bad == 0);
    CHECK(nan_seen > 0);

    /* the clamps' edges, the infinities, NaN, zeros and tiny arguments */
    const float edges[16] = {-87.0f,
                             nextafterf(-87.0f, 0),
                             -87.5f,
                             88.0f,
                             nextafterf(88.0f, 0),
                             88.5f,
                             INFINITY,
                             -INFINITY,
                             NAN,
                             -NAN,
                             0.0f,
                             -0.0f,
                             -86.9f,
                             1e-30f,
                             -1e-30f,
                             0.5f};
    for (int i = 0; LANES && i < 16; i += LANES)
        CHECK(lane_mismatches(edges + i) == 0);
    CHECK(isnan(exp_vec(NAN)));

    /* accuracy of the shared steps */
    double worst_ulp = 0;
    for (float v = -87.0f; v <= 88.0f; v += 0.0137f) {
        const double want = exp((double)v), got = exp_vec(v);
        const double ulp = (double)nextafterf((float)want, INFINITY) - (double)(float)want;
        worst_ulp = fmax(worst_ulp, fabs(got - want) / ulp);
    }
    CHECK(worst_ulp <= 4.0);
    return check_report("test_exp_vec");
}
