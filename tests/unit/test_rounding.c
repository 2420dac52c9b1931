/* precision=fp16 and tf32 (backend/cpu/round.h): fp16_round against torch's float16 conversion
 * (tests/ref/rounding.ref, scripts/ref/make_rounding.py), tf32_round through it (a tf32 value is
 * a half wherever a half is normal, and rounding commutes with scaling by powers of two), and
 * gemm_operand's copies in both precisions value by value. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/round.h"
#include "check.h"
#include "ref_fixture.h"

static uint32_t bits_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

/* got and want are the same float (any NaN for a NaN). */
static int same_value(float got, float want)
{
    return isnan(want) ? isnan(got) : bits_of(got) == bits_of(want);
}

/* fp16_round gives torch's x.half().float() on every edge case and random value. */
static void test_fp16_matches_torch(const RefTensor *in, const RefTensor *out)
{
    int mismatches = 0;
    for (size_t i = 0; i < in->count; i++) {
        const float got = fp16_round(in->data[i]), want = out->data[i];
        if (!same_value(got, want) && mismatches++ < 5)
            fprintf(stderr, "FAIL fp16_round(0x%08x) = 0x%08x, torch 0x%08x\n",
                    bits_of(in->data[i]), bits_of(got), bits_of(want));
    }
    CHECK(mismatches == 0);
}

/* tf32_round(x 2^k) = torch's half of x, times 2^k, for every x whose half is normal (from 2^-14
 * to 65504), at scales across float32's normal range; infinities and NaNs stay, the largest
 * float32 rounds to an infinity. */
static void test_tf32_is_a_scaled_half(const RefTensor *in, const RefTensor *out)
{
    static const int scales[] = {-100, -50, 0, 50, 100};
    int mismatches = 0, compared = 0;
    for (size_t i = 0; i < in->count; i++) {
        const float x = in->data[i], half = out->data[i];
        if (!(fabsf(half) >= 0x1p-14f && fabsf(half) <= 65504.0f && fabsf(x) >= 0x1p-14f))
            continue;
        for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
            const float got = tf32_round(ldexpf(x, scales[s])), want = ldexpf(half, scales[s]);
            compared++;
            if (!same_value(got, want) && mismatches++ < 5)
                fprintf(stderr, "FAIL tf32_round(0x%08x) = 0x%08x, want 0x%08x\n",
                        bits_of(ldexpf(x, scales[s])), bits_of(got), bits_of(want));
        }
    }
    CHECK(mismatches == 0);
    CHECK(compared > 500);
    CHECK(tf32_round(INFINITY) == INFINITY && tf32_round(-INFINITY) == -INFINITY);
    CHECK(isnan(tf32_round(NAN)));
    CHECK(tf32_round(0x1.fffffep127f) == INFINITY);
}

/* gemm_operand's copies in GEMM_TF32 and GEMM_FP16 hold tf32_round's and fp16_round's values;
 * GEMM_FP32 returns x itself. */
static void test_gemm_operand_rounds_each_value(const RefTensor *in)
{
    float *copy = malloc(in->count * sizeof *copy);
    int mismatches = 0;
    gemm_operand(GEMM_TF32, in->data, in->count, copy);
    for (size_t i = 0; i < in->count; i++)
        mismatches += !same_value(copy[i], tf32_round(in->data[i]));
    gemm_operand(GEMM_FP16, in->data, in->count, copy);
    for (size_t i = 0; i < in->count; i++)
        mismatches += !same_value(copy[i], fp16_round(in->data[i]));
    CHECK(mismatches == 0);
    CHECK(gemm_operand(GEMM_FP32, in->data, in->count, copy) == in->data);
    free(copy);
}

int main(void)
{
    RefFixture f;
    if (ref_fixture_load("tests/ref/rounding.ref", &f))
        return 1;
    const RefTensor *in = ref_fixture_get(&f, "fp16.in"), *out = ref_fixture_get(&f, "fp16.out");
    CHECK(in && out && in->count == out->count);
    if (in && out && in->count == out->count) {
        test_fp16_matches_torch(in, out);
        test_tf32_is_a_scaled_half(in, out);
        test_gemm_operand_rounds_each_value(in);
    }
    ref_fixture_free(&f);
    return check_report("test_rounding");
}
