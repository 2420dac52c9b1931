/* The per-token work of the sequence layers on the device (sequence.cu): C entry points, float32
 * but where an ElemType names a tensor's type (float32 or 16-bit, summed in float). Row r of a
 * strided tensor starts at r * stride. */
#ifndef CDL_CUDA_SEQUENCE_H
#define CDL_CUDA_SEQUENCE_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ids of rows rows come in runs of run consecutive ids, run k's first at ids + k * run_stride
 * (run = rows: one contiguous run; run 1: a row per sample at the sample's stride). */

/* out[r][0..C) = table[id] for the id of each of rows rows, or zeros where the id is outside
 * [0, vocab) ([embedding]'s rule); out's rows (of out_type) at out_stride. */
cudaError_t cuda_embedding_lookup(void *out, ElemType out_type, size_t out_stride, const float *ids,
                                  int run, size_t run_stride, const float *table, int vocab, int C,
                                  int rows, cudaStream_t stream);
/* grad[id] += delta[r] for each row r of delta (rows, C; of delta_type) whose id is in [0, vocab),
 * the rows in order for every column (deterministic, the CPU's order). */
cudaError_t cuda_embedding_grad(float *grad, const void *delta, ElemType delta_type,
                                const float *ids, int run, size_t run_stride, int vocab, int C,
                                int rows, cudaStream_t stream);
/* y[r][j] = x[r][j] + v[j] for rows rows of n values at stride stride, y of y_type and x of
 * x_type (y may be x, of the same type). */
cudaError_t cuda_add_row_vector_typed(void *y, ElemType y_type, const void *x, ElemType x_type,
                                      const float *v, int rows, int n, size_t stride,
                                      cudaStream_t stream);
/* y[i] += x[i] for n values. */
cudaError_t cuda_accumulate(float *y, const float *x, size_t n, cudaStream_t stream);
/* sum[j] += the sum over the rows of x (rows, n) of column j, in an order fixed by the shape. */
cudaError_t cuda_column_sums_add(float *sum, const float *x, int rows, int n, cudaStream_t stream);
/* The same over rows at stride stride (>= n): the first n values of each; with x of x_type. */
cudaError_t cuda_column_sums_add_typed(float *sum, const void *x, ElemType x_type, int rows, int n,
                                       size_t stride, cudaStream_t stream);
/* [tokens] (layers/tokens.h): out [batch][first + p][c] (of out_type) from in [batch][c][p] (of
 * in_type), row j < first the class token token [c] (first 0 or 1), row first + i position i's
 * channels, plus pos [first + p][c] when not NULL (the position embedding), rounded once. */
cudaError_t cuda_tokens_forward(void *out, ElemType out_type, const void *in, ElemType in_type,
                                const float *token, const float *pos, int batch, int c, int p,
                                int first, cudaStream_t stream);
/* dx [batch][c][p] (of dx_type) += the token rows of dy [batch][first + p][c] (of dy_type),
 * transposed back. */
cudaError_t cuda_tokens_backward(void *dx, ElemType dx_type, const void *dy, ElemType dy_type,
                                 int batch, int c, int p, int first, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
