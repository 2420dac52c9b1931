/* Column sums over rows and channel sums over planes (backend/cpu/sum_rows.h). Column sums: threads
 * split the columns, so no two threads add into the same sum and every column is summed in row
 * order. Each task streams its rows in memory order into double accumulators on the stack (a block
 * of columns per pass over the rows would read the matrix strided, one or two cache lines per row:
 * latency bound), but for whole chunks of SUM_ROWS_CHUNK columns, whose accumulators fit in
 * registers (four or eight cache lines per row). */
#include "backend/cpu/sum_rows.h"

#include <omp.h>

/* Columns per task at most: its double accumulators, 8 KiB on the stack. */
#define SUM_ROWS_TASK_MAX 1024
/* Below this many values a parallel region costs more than it saves. */
#define SUM_ROWS_PARALLEL_MIN 32768

/* Columns per pass of sum_chunk over the rows: their double accumulators in 16 vector registers
 * (16 zmm; without AVX-512 the 16 ymm there are: twice as many spill to the stack and run at
 * half the speed). */
#if defined(__AVX512F__)
#define SUM_ROWS_CHUNK 128
#else
#define SUM_ROWS_CHUNK 64
#endif

/* sum[0..SUM_ROWS_CHUNK) += the column sums of x [rows][cols]: a constant width, so that the
 * compiler keeps the accumulators in registers instead of loading and storing them every row (a
 * row's chunk is 512 contiguous bytes). */
static void sum_chunk(float *sum, const float *x, size_t rows, size_t cols)
{
    double acc[SUM_ROWS_CHUNK] = {0};
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * cols;
#pragma omp simd
        for (size_t j = 0; j < SUM_ROWS_CHUNK; j++)
            acc[j] += row[j];
    }
    for (size_t j = 0; j < SUM_ROWS_CHUNK; j++)
        sum[j] += (float)acc[j];
}

/* sum[0..width) += the column sums of x [rows][cols] (x at the task's first column): whole chunks
 * by sum_chunk, the rest with its accumulators on the stack. */
static void sum_task(float *sum, const float *x, size_t rows, size_t cols, size_t width)
{
    size_t j0 = 0;
    for (; j0 + SUM_ROWS_CHUNK <= width; j0 += SUM_ROWS_CHUNK)
        sum_chunk(sum + j0, x + j0, rows, cols);
    if (j0 == width)
        return;
    double acc[SUM_ROWS_TASK_MAX];
    for (size_t j = j0; j < width; j++)
        acc[j] = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * cols;
#pragma omp simd
        for (size_t j = j0; j < width; j++)
            acc[j] += row[j];
    }
    for (size_t j = j0; j < width; j++)
        sum[j] += (float)acc[j];
}

void sum_rows_add(float *sum, const float *x, size_t rows, size_t cols)
{
    const int parallel = rows * cols > SUM_ROWS_PARALLEL_MIN && !omp_in_parallel();
    /* One task per thread (in whole 8-float vectors) unless that is wider than the stack's. */
    const size_t threads = parallel ? (size_t)omp_get_max_threads() : 1;
    size_t width = ((cols + threads - 1) / threads + 7) / 8 * 8;
    width = width < SUM_ROWS_TASK_MAX ? width : SUM_ROWS_TASK_MAX;
    const long tasks = (long)((cols + width - 1) / width);
#pragma omp parallel for schedule(static) if (parallel && tasks > 1)
    for (long task = 0; task < tasks; task++) {
        const size_t first = (size_t)task * width;
        sum_task(sum + first, x + first, rows, cols, cols - first < width ? cols - first : width);
    }
}

void channel_sums_add(float *sum, const float *x, const float *y, size_t outer, size_t channels,
                      size_t inner)
{
#pragma omp parallel for schedule(static) if (outer * channels * inner >= SUM_ROWS_PARALLEL_MIN)
    for (size_t k = 0; k < channels; k++) {
        double acc = 0.0;
        for (size_t o = 0; o < outer; o++) {
            const size_t at = (o * channels + k) * inner;
            if (y) {
#pragma omp simd reduction(+ : acc)
                for (size_t i = 0; i < inner; i++)
                    acc += (double)x[at + i] * y[at + i];
            } else {
#pragma omp simd reduction(+ : acc)
                for (size_t i = 0; i < inner; i++)
                    acc += x[at + i];
            }
        }
        sum[k] += (float)acc;
    }
}
