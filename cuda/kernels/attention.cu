// [attention]'s own kernels on the device, between the cuBLAS products of cuda/attention.c, each
// over the element type E of the layer's tensors inside (float32, or 16-bit under bf16 and fp16:
// core/precision.h ElemType) with float32 arithmetic: the masked softmax of float32 score rows into
// P of type E of the score rows, the dropout mask drawn as the CPU draws
// it, the softmax's backward (masked keys, of weight 0, get no gradient through it), and
// forward_at's row of one (sample, head) pair from the key/value cache. One block per row (per pair
// in forward_at); sums and maxima through block reductions (fixed order).
//   scores, p, ds, mask, weights: (pairs, T, T), row i of a pair over the keys j <= i (causal) or
//   all T scores, ds, mask float32; p, weights, qkv, heads E qkv: (batch, T, 3C)   heads: (batch,
//   T, C)   H heads of D = C / H columns
#include "attention.h"

#include <float.h>

#include "kernels/dtype.cuh"
#include "kernels/grid.cuh"
#include "kernels/reduce.cuh"
#include "launch.h"

// out[0..n) = softmax(row[0..n)), out[n..width) = 0, the exponentials kept in row (float32
// scores: the sums in float32); n >= 1; a row whose scores are all -inf (every key masked) becomes
// 0. out may be row itself (E float). Ends with a barrier.
template <typename E> static __device__ void softmax_row(float *row, E *out, int n, int width)
{
    float m = -FLT_MAX;
    for (int j = threadIdx.x; j < n; j += blockDim.x)
        m = fmaxf(m, row[j]);
    m = block_max(m);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const float e = expf(row[j] - m);
        row[j] = e;
        sum += e;
    }
    const float total = block_sum(sum), inv = total > 0.0f ? 1.0f / total : 0.0f;
    for (int j = threadIdx.x; j < width; j += blockDim.x)
        out[j] = from_float<E>(j < n ? row[j] * inv : 0.0f);
    __syncthreads();
}

template <typename E>
__global__ void attention_softmax_kernel(E *p, float *scores, int T, int causal)
{
    const int i = blockIdx.x % T;
    const size_t row = (size_t)blockIdx.x * T;
    softmax_row(scores + row, p + row, causal ? i + 1 : T, T);
}

// Row blockIdx.x = (b H + h) T + i of S scores: the keys j > i (causal) and those whose id
// ids[b ids_stride + j] is negative (key padding) get -inf, then the softmax (all masked: 0).
template <typename E>
__global__ void attention_softmax_padded_kernel(E *p, float *scores, int T, int S, int H,
                                                int causal, const float *ids, int ids_stride)
{
    const int i = blockIdx.x % T, b = blockIdx.x / (H * T);
    const float *key_ids = ids + (size_t)b * ids_stride;
    float *row = scores + (size_t)blockIdx.x * S;
    for (int j = threadIdx.x; j < S; j += blockDim.x)
        if ((causal && j > i) || key_ids[j] < 0.0f)
            row[j] = -INFINITY;
    __syncthreads();
    softmax_row(row, p + (size_t)blockIdx.x * S, S, S);
}

template <typename E>
__global__ void attention_mask_kernel(E *weights, const E *p, const float *mask, size_t n)
{
    GRID_STRIDE_LOOP(e, n)
    weights[e] = from_float<E>(to_float(p[e]) * mask[e]);
}

// dS = P (dP m - sum_j P_j (dP m)_j) over the row's keys, 0 past them; dP (in ds) in place.
template <typename E>
__global__ void attention_softmax_backward_kernel(float *ds, const E *p, const float *mask, int T,
                                                  int causal)
{
    const int i = blockIdx.x % T, n = causal ? i + 1 : T;
    const size_t row = (size_t)blockIdx.x * T;
    float dot = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const float dp = mask ? ds[row + j] * mask[row + j] : ds[row + j];
        dot += to_float(p[row + j]) * dp;
    }
    dot = block_sum(dot);
    for (int j = threadIdx.x; j < T; j += blockDim.x) {
        const float dp = mask ? ds[row + j] * mask[row + j] : ds[row + j];
        ds[row + j] = j < n ? to_float(p[row + j]) * (dp - dot) : 0.0f;
    }
}

// Pair blockIdx.x = b H + h: its row t of heads from the cached query row t and the keys and
// values of its first keys key rows (v = k + C), the keys whose id is negative masked (ids not
// NULL; all masked: zero weights), with the row's weights in scores (S floats of the pair).
template <typename E>
__global__ void attention_row_kernel(E *heads, float *scores_all, const E *q_all, int q_stride,
                                     const E *k_all, int kv_stride, int T, int S, int C, int H,
                                     int t, int keys, const float *ids, int ids_stride, float scale)
{
    const int b = blockIdx.x / H, h = blockIdx.x % H, D = C / H;
    const E *q = q_all + ((size_t)b * T + t) * q_stride + (size_t)h * D;
    const E *k_sample = k_all + (size_t)b * S * kv_stride + (size_t)h * D;
    float *scores = scores_all + (size_t)blockIdx.x * S;
    for (int j = threadIdx.x; j < keys; j += blockDim.x) {
        const E *k = k_sample + (size_t)j * kv_stride;
        float dot = 0.0f;
        for (int i = 0; i < D; i++)
            dot += to_float(q[i]) * to_float(k[i]);
        scores[j] = ids && ids[(size_t)b * ids_stride + j] < 0.0f ? -INFINITY : scale * dot;
    }
    __syncthreads();
    softmax_row(scores, scores, keys, keys);
    E *y = heads + ((size_t)b * T + t) * C + (size_t)h * D;
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        float sum = 0.0f;
        for (int j = 0; j < keys; j++)
            sum += to_float(from_float<E>(scores[j])) *
                   to_float(k_sample[(size_t)j * kv_stride + C + i]);
        y[i] = from_float<E>(sum);
    }
}

#define ROW_BLOCK 128

extern "C" cudaError_t cuda_attention_softmax(void *p, ElemType p_type, float *scores, int rows,
                                              int T, int causal, cudaStream_t stream)
{
    if (rows == 0)
        return cudaSuccess;
    return with_elem_type(p_type, [&](auto pt) {
        using P = typename decltype(pt)::type;
        CUDA_LAUNCH(attention_softmax_kernel<P>, rows, ROW_BLOCK, 0, stream, (P *)p, scores, T,
                    causal);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_attention_softmax_padded(void *p, ElemType p_type, float *scores,
                                                     int batch, int H, int T, int S, int causal,
                                                     const float *ids, int ids_stride,
                                                     cudaStream_t stream)
{
    if (batch == 0)
        return cudaSuccess;
    return with_elem_type(p_type, [&](auto pt) {
        using P = typename decltype(pt)::type;
        CUDA_LAUNCH(attention_softmax_padded_kernel<P>, batch * H * T, ROW_BLOCK, 0, stream, (P *)p,
                    scores, T, S, H, causal, ids, ids_stride);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_attention_apply_mask(void *weights, const void *p, ElemType type,
                                                 const float *mask, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_elem_type(type, [&](auto pt) {
        using P = typename decltype(pt)::type;
        CUDA_LAUNCH(attention_mask_kernel<P>, grid_for(n), GRID_BLOCK, 0, stream, (P *)weights,
                    (const P *)p, mask, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_attention_softmax_backward(float *ds, const void *p, ElemType p_type,
                                                       const float *mask, int rows, int T,
                                                       int causal, cudaStream_t stream)
{
    if (rows == 0)
        return cudaSuccess;
    return with_elem_type(p_type, [&](auto pt) {
        using P = typename decltype(pt)::type;
        CUDA_LAUNCH(attention_softmax_backward_kernel<P>, rows, ROW_BLOCK, 0, stream, ds,
                    (const P *)p, mask, T, causal);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_attention_row(void *heads, float *scores, const void *q, int q_stride,
                                          const void *k, int kv_stride, ElemType type, int batch,
                                          int T, int S, int C, int H, int t, int keys,
                                          const float *ids, int ids_stride, cudaStream_t stream)
{
    if (batch == 0)
        return cudaSuccess;
    return with_elem_type(type, [&](auto et) {
        using E = typename decltype(et)::type;
        CUDA_LAUNCH(attention_row_kernel<E>, batch * H, ROW_BLOCK, 0, stream, (E *)heads, scores,
                    (const E *)q, q_stride, (const E *)k, kv_stride, T, S, C, H, t, keys, ids,
                    ids_stride, 1.0f / sqrtf((float)(C / H)));
        return cuda_launch_error();
    });
}
