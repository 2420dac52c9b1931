/* Column sums over rows (ops/sum_rows.h): threads split the columns, so no two threads add into
 * the same sum and every column is summed in row order. */
#include "ops/sum_rows.h"

/* Columns per task: one double accumulator each, on the stack. */
#define SUM_ROWS_BLOCK 64
/* Below this many values a parallel region costs more than it saves. */
#define SUM_ROWS_PARALLEL_MIN 32768

void sum_rows_add(float *sum, const float *x, size_t rows, size_t cols)
{
    const long blocks = (long)((cols + SUM_ROWS_BLOCK - 1) / SUM_ROWS_BLOCK);
#pragma omp parallel for schedule(static) if (rows * cols > SUM_ROWS_PARALLEL_MIN)
    for (long blk = 0; blk < blocks; blk++) {
        const size_t first = (size_t)blk * SUM_ROWS_BLOCK;
        const size_t width = cols - first < SUM_ROWS_BLOCK ? cols - first : SUM_ROWS_BLOCK;
        double acc[SUM_ROWS_BLOCK] = {0};
        for (size_t r = 0; r < rows; r++) {
            const float *row = x + r * cols + first;
#pragma omp simd
            for (size_t j = 0; j < width; j++)
                acc[j] += row[j];
        }
        for (size_t j = 0; j < width; j++)
            sum[first + j] += (float)acc[j];
    }
}
