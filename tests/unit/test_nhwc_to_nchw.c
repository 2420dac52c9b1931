/* nhwc_to_nchw (an int8 convolution's float32 output from oneDNN's nhwc into NCHW) against its
 * definition, y[b][c][s] = x[b][s][c] bit for bit (NaN, infinities and -0 among the values),
 * over partial tiles of 16 (AVX-512) or 8 (AVX2) positions and blocks of 256. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/nhwc_to_nchw.h"
#include "check.h"

static void test_shape(int batch, int c, size_t spatial, uint64_t seed)
{
    const size_t n = (size_t)batch * (size_t)c * spatial;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    Rng rng;
    rng_seed(&rng, seed, 0);
    for (size_t i = 0; i < n; i++)
        x[i] = rng_uniform(&rng) * 2.0f - 1.0f;
    x[0] = NAN, x[1] = INFINITY, x[2] = -0.0f, x[n - 1] = -INFINITY;
    nhwc_to_nchw(x, y, batch, c, spatial);
    int wrong = 0;
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++)
            for (size_t s = 0; s < spatial; s++)
                wrong += memcmp(&y[((size_t)b * c + k) * spatial + s],
                                &x[((size_t)b * spatial + s) * c + k], sizeof *x) != 0;
    CHECK(wrong == 0);
    printf("batch %d, %3d channels, %3zu positions: %d of %zu values wrong\n", batch, c, spatial,
           wrong, n);
    free(x);
    free(y);
}

int main(void)
{
    if (!nhwc_to_nchw_runs(16)) {
        CHECK(!nhwc_to_nchw_runs(64));
        printf("test_nhwc_to_nchw: no kernel in this build (AVX2 and AVX-512 only); skipped\n");
        return check_report("test_nhwc_to_nchw");
    }
    /* tiles of 16 channels with AVX-512, of 8 with AVX2 only */
    const int tile = nhwc_to_nchw_runs(8) ? 8 : 16;
    CHECK(!nhwc_to_nchw_runs(3) && nhwc_to_nchw_runs(24) == (tile == 8) && nhwc_to_nchw_runs(2048));
    test_shape(1, 16, 16, 1);   /* one tile */
    test_shape(2, 32, 49, 2);   /* resnet's 7x7 maps: partial tiles */
    test_shape(3, 48, 300, 3);  /* past a block of 256 positions */
    test_shape(2, 64, 3136, 4); /* resnet50's 56x56 */
    if (tile == 8) {
        test_shape(1, 8, 5, 5);     /* one partial tile of 8 */
        test_shape(2, 24, 3136, 6); /* mobilenetv2's 24 channels at 56x56 */
        test_shape(1, 40, 260, 7);  /* 5 tiles, a block and a partial tile */
    }
    return check_report("test_nhwc_to_nchw");
}
