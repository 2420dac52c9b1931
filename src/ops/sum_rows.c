/* Column sums over rows (ops/sum_rows.h): threads split the columns, so no two threads add into
 * the same sum and every column is summed in row order. */
#include "ops/sum_rows.h"

/* Columns per task: one double accumulator each, 8 AVX registers' worth. */
#define SUM_ROWS_BLOCK 32
/* Below this many values a parallel region costs more than it saves. */
#define SUM_ROWS_PARALLEL_MIN 32768

/* sum[0..width) += the column sums of x [rows][cols], in row order; width is a constant at the
 * call for whole blocks, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void sum_block(float *sum, const float *x, size_t rows,
                                                            size_t cols, size_t width)
{
    double acc[SUM_ROWS_BLOCK] = {0};
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * cols;
#pragma omp simd
        for (size_t j = 0; j < width; j++)
            acc[j] += row[j];
    }
    for (size_t j = 0; j < width; j++)
        sum[j] += (float)acc[j];
}

void sum_rows_add(float *sum, const float *x, size_t rows, size_t cols)
{
    const long blocks = (long)((cols + SUM_ROWS_BLOCK - 1) / SUM_ROWS_BLOCK);
#pragma omp parallel for schedule(static) if (rows * cols > SUM_ROWS_PARALLEL_MIN)
    for (long blk = 0; blk < blocks; blk++) {
        const size_t first = (size_t)blk * SUM_ROWS_BLOCK;
        if (cols - first >= SUM_ROWS_BLOCK)
            sum_block(sum + first, x + first, rows, cols, SUM_ROWS_BLOCK);
        else
            sum_block(sum + first, x + first, rows, cols, cols - first);
    }
}
