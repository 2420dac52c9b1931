/* A dense layer's products in blocks of rows against a packed operand (backend/cpu/gemm_packed),
 * with its element-wise passes fused in: the forward adds the biases and applies the activation to
 * each block while it is still in cache, the backward takes the activation's derivative of a
 * block of delta just before the block's input-gradient product reads it. */
#ifndef CDL_GEMM_ROWS_H
#define CDL_GEMM_ROWS_H

#include <stddef.h>

#include "backend/cpu/activation.h"

/* pre[m][n] = A[m][k] op(B) + bias, then out = act(pre) (out unused for CDL_ACT_LINEAR, else
 * it may be pre); op(B) as gemm_pack packed it, A row-major with row stride lda, bias [n] or
 * NULL. Each element sums its k products in order, then adds its bias: the result does not
 * depend on the thread count (the blocks split over the OpenMP threads). */
void gemm_bias_act(int m, int n, int k, const float *a, int lda, const float *packed,
                   const float *bias, ActivationKind act, float *pre, float *out);

/* delta[m][k] *= act'(pre) (activation_backward, pre and out as gemm_bias_act wrote them), then
 * c[m][n] = delta op(B) + beta c, beta 0 (c's old contents ignored) or 1, with op(B) [k][n] as
 * gemm_pack packed it; c NULL: no product.
 * bias_grad [k] (or NULL) += delta's column sums: each block of rows summed in row order (in
 * double) into sums [gemm_act_backward_sums_floats(m, k)], then those in block order. As
 * gemm_bias_act, independent of the thread count. */
void gemm_act_backward(int m, int n, int k, float *delta, const float *pre, const float *out,
                       ActivationKind act, const float *packed, float beta, float *c,
                       float *bias_grad, float *sums);

/* Floats of gemm_act_backward's sums for m rows of k values. */
size_t gemm_act_backward_sums_floats(int m, int k);

#endif
