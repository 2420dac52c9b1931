/* [attention]'s kernels on the device (attention.cu): C entry points, scores float32, the other
 * tensors float32 or 16-bit (ElemType). Score and weight
 * tensors are (pairs, T, T), a pair being a (sample, head); qkv (batch, T, 3C), heads (batch, T,
 * C). */
#ifndef CDL_CUDA_ATTENTION_H
#define CDL_CUDA_ATTENTION_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Each of rows rows of T float32 scores (row i of a pair is row r % T) into its softmax over the
 * keys j <= i (causal) or all T, written to p of type p_type (the masked keys 0); the scores
 * become the exponentials. p may be scores (float32). */
cudaError_t cuda_attention_softmax(void *p, ElemType p_type, float *scores, int rows, int T,
                                   int causal, cudaStream_t stream);
/* Key padding: each row (b H + h) T + i of the (batch, H, T, S) scores into its softmax over the
 * keys j whose id ids[b ids_stride + j] is not negative (and j <= i when causal), written to p as
 * cuda_attention_softmax's, the masked keys 0; a row with every key masked becomes 0. */
cudaError_t cuda_attention_softmax_padded(void *p, ElemType p_type, float *scores, int batch, int H,
                                          int T, int S, int causal, const float *ids,
                                          int ids_stride, cudaStream_t stream);
/* weights[e] = p[e] mask[e] for n values of type (the backward's dropped weights). */
cudaError_t cuda_attention_apply_mask(void *weights, const void *p, ElemType type,
                                      const float *mask, size_t n, cudaStream_t stream);
/* The softmax's backward of rows rows (as cuda_attention_softmax's): ds (float32) holds dL/dP
 * (dL/d of the weights, taken through mask unless NULL) and becomes dL/dS of the (unscaled)
 * scores; p of type p_type. */
cudaError_t cuda_attention_softmax_backward(float *ds, const void *p, ElemType p_type,
                                            const float *mask, int rows, int T, int causal,
                                            cudaStream_t stream);
/* Row t of heads (batch, T, C) for every (sample, head) pair from the cache: query row t of q
 * (rows q_stride apart, T per sample) against the first keys rows of k (rows kv_stride apart, S
 * per sample; the values at k + C): softmax(q k^T / sqrt(D)) v, a key whose id
 * ids[b ids_stride + j] is negative getting weight 0 (ids NULL: none); heads, q and k of type
 * (the weights rounded to it before they multiply v, as the forward's P). scores holds S floats
 * per pair (batch * H * S). */
cudaError_t cuda_attention_row(void *heads, float *scores, const void *q, int q_stride,
                               const void *k, int kv_stride, ElemType type, int batch, int T, int S,
                               int C, int H, int t, int keys, const float *ids, int ids_stride,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
