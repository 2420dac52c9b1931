/* [attention]'s kernels on the device (attention.cu): C entry points, float32. Score and weight
 * tensors are (pairs, T, T), a pair being a (sample, head); qkv (batch, T, 3C), heads (batch, T,
 * C). */
#ifndef CDL_CUDA_ATTENTION_H
#define CDL_CUDA_ATTENTION_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Each of rows rows of T scores (row i of a pair is row r % T) into its softmax over the keys
 * j <= i (causal) or all T, in place, the masked keys set to 0. */
cudaError_t cuda_attention_softmax(float *p, int rows, int T, int causal, cudaStream_t stream);
/* mask[e] = 0 with probability dropout, else 1 / (1 - dropout), and weights[e] = p[e] mask[e],
 * for n values; mask[e] comes from draw first + e of key (util/rng.h's rng_uniform_at, as the
 * CPU draws it), or with draw_id not NULL (a step captured as a CUDA graph) of the key of seed,
 * *draw_id and layer computed on the device (kernels/rng.cuh's layer_key_dev). */
cudaError_t cuda_attention_dropout(float *weights, float *mask, const float *p, uint64_t key,
                                   const uint64_t *draw_id, uint64_t seed, int layer,
                                   uint64_t first, float dropout, size_t n, cudaStream_t stream);
/* weights[e] = p[e] mask[e] for n values (the backward's dropped weights). */
cudaError_t cuda_attention_apply_mask(float *weights, const float *p, const float *mask, size_t n,
                                      cudaStream_t stream);
/* The softmax's backward of rows rows (as cuda_attention_softmax's): ds holds dL/dP (dL/d of the
 * weights, taken through mask unless NULL) and becomes dL/dS of the (unscaled) scores. */
cudaError_t cuda_attention_softmax_backward(float *ds, const float *p, const float *mask, int rows,
                                            int T, int causal, cudaStream_t stream);
/* Row t of heads for every (sample, head) pair from the q, k, v rows <= t of qkv (the cache):
 * softmax(q k^T / sqrt(D)) v; scores holds T floats per pair (batch * H * T). */
cudaError_t cuda_attention_row(float *heads, float *scores, const float *qkv, int batch, int T,
                               int C, int H, int t, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
