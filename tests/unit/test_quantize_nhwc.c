/* quantize_nhwc (an int8 convolution's float32 NCHW input into oneDNN's nhwc uint8 codes) against
 * its definition written out per value: round-half-even of clamp(x * inv_scale + zero_point, 0,
 * 255), NaN 0, at [b][s][c] from x's [b][c][s]; partial tiles of 16 (AVX-512) or 8 (AVX2) positions
 * and blocks of 256, values beyond the grid both ways, infinities, NaN and exact ties. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend/cpu/quantize.h"
#include "backend/cpu/quantize_nhwc.h"
#include "check.h"

/* The code of x by the definition, in the order quantize_code computes it. */
static uint8_t reference_code(float x, float inv_scale, int zero_point)
{
    float v = x * inv_scale;
    v += (float)zero_point;
    v = v > 0.0f ? v : 0.0f;
    v = v < (float)QUANT_CODE_MAX ? v : (float)QUANT_CODE_MAX;
    return (uint8_t)rintf(v);
}

/* Every code of a batch x c x spatial tensor of values drawn around the grid's range [-zp/inv,
 * (QUANT_CODE_MAX-zp)/inv], one in 7 an exact tie (an odd multiple of half a step) and a few
 * special. */
static void test_shape(int batch, int c, size_t spatial, uint64_t seed)
{
    const float inv_scale = 2.0f, scale = 1.0f / inv_scale;
    const int zero_point = 37;
    const size_t n = (size_t)batch * (size_t)c * spatial;
    float *x = malloc(n * sizeof *x);
    uint8_t *codes = malloc(n);
    Rng rng;
    rng_seed(&rng, seed, 0);
    for (size_t i = 0; i < n; i++) {
        const float drawn = (rng_uniform(&rng) * 200.0f - 40.0f) * scale;
        x[i] = i % 7 == 3 ? (float)((int)(i % 150) - 30) * scale + 0.25f : drawn;
    }
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[n - 1] = 1e30f, x[n / 2] = -1e30f;
    quantize_nhwc(x, codes, batch, c, spatial, inv_scale, zero_point);
    int wrong = 0;
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++)
            for (size_t s = 0; s < spatial; s++) {
                const float v = x[((size_t)b * c + k) * spatial + s];
                wrong += codes[((size_t)b * spatial + s) * c + k] !=
                         reference_code(v, inv_scale, zero_point);
            }
    CHECK(wrong == 0);
    printf("batch %d, %3d channels, %3zu positions: %d of %zu codes wrong\n", batch, c, spatial,
           wrong, n);
    free(x);
    free(codes);
}

int main(void)
{
    test_shape(1, 16, 16, 1);   /* one tile */
    test_shape(2, 32, 49, 2);   /* resnet's 7x7 maps: partial tiles */
    test_shape(3, 48, 300, 3);  /* past a block of 256 positions */
    test_shape(2, 64, 3136, 4); /* resnet50's 56x56 */
    test_shape(1, 8, 5, 5);     /* one partial tile of 8 */
    test_shape(2, 24, 3136, 6); /* mobilenetv2's 24 channels at 56x56 */
    test_shape(1, 40, 260, 7);  /* 2.5 tiles of 16, 5 of 8; a block and a partial tile */
    test_shape(2, 3, 300, 8);   /* the 3 channels of a first layer: no whole tile */
    test_shape(1, 20, 49, 9);   /* digits' 20: a tile of 16 or two of 8, and the rest */
    test_shape(1, 1, 17, 10);   /* fashion's one channel */
    return check_report("test_quantize_nhwc");
}
