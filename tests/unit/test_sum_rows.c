/* backend/cpu/sum_rows.c against the column sums it replaced (each column in row order in double,
 * one 32-column block per pass): the same bits for every shape and thread count. */
#include <omp.h>
#include <stdlib.h>

#include "backend/cpu/sum_rows.h"
#include "check.h"
#include "util/rng.h"

static void reference_sum(float *sum, const float *x, size_t rows, size_t cols)
{
    for (size_t j = 0; j < cols; j++) {
        double acc = 0;
        for (size_t r = 0; r < rows; r++)
            acc += x[r * cols + j];
        sum[j] += (float)acc;
    }
}

static void check_shape(Rng *rng, size_t rows, size_t cols)
{
    float *x = malloc(rows * cols * sizeof *x);
    float *got = malloc(cols * sizeof *got), *want = malloc(cols * sizeof *want);
    for (size_t i = 0; i < rows * cols; i++)
        x[i] = 2.0f * rng_uniform(rng) - 1.0f;
    for (size_t j = 0; j < cols; j++)
        got[j] = want[j] = (float)j; /* sums add into what is there */
    reference_sum(want, x, rows, cols);
    for (int threads = 1; threads <= 3; threads++) {
        omp_set_num_threads(threads);
        float *again = malloc(cols * sizeof *again);
        for (size_t j = 0; j < cols; j++)
            again[j] = (float)j;
        sum_rows_add(again, x, rows, cols);
        CHECK(!memcmp(again, want, cols * sizeof *want));
        free(again);
    }
    sum_rows_add(got, x, rows, cols);
    CHECK(!memcmp(got, want, cols * sizeof *want));
    free(x), free(got), free(want);
}

int main(void)
{
    Rng rng;
    rng_seed(&rng, 5, 0);
    const size_t shapes[][2] = {{1, 1},     {3, 7},     {4096, 128}, {4096, 512}, {300, 33},
                                {64, 1000}, {40, 1025}, {17, 2500},  {4096, 256}, {1, 4096}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(&rng, shapes[i][0], shapes[i][1]);
    return check_report("test_sum_rows");
}
