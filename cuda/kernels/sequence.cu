// The per-token work of the sequence layers on the device: [embedding]'s lookup and its
// gradient, a row vector added to strided rows ([positional], the biases of [linear] and
// [attention], also on the single rows of forward_at), and column sums for the parameter
// gradients, each templated over its activations' element types (out, delta, x, y: float, bf16 or
// fp16; tables, gradients and sums float). Every sum runs in an order fixed by the shape (no
// atomics): the same bits on every run.
//   ids: (rows) in runs of run consecutive ids, run k's first at k * run_stride (a sample's rows of
//        a net input row that holds more than the layer reads, or one row per sample)
//   table, grad: (vocab, C)   out: (rows, C) at stride out_stride
//   x, y: (rows, n) at stride stride   v: (n)   sum: (n)
#include "sequence.h"

#include "kernels/dtype.cuh"
#include "launch.h"

static int grid_for(size_t n)
{
    const size_t blocks = (n + 255) / 256;
    return blocks > 4096 ? 4096 : blocks < 1 ? 1 : (int)blocks;
}

// The table's row of an id, or -1 when the id is outside [0, vocab) or NaN (as
// backend/cpu/embedding.c's row_of).
__device__ __forceinline__ int embedding_row(float id, int vocab)
{
    return id >= 0 && id < (float)vocab ? (int)id : -1;
}

// The id of row r: ids in runs of run, run k's first at k * run_stride.
__device__ __forceinline__ float id_of_row(const float *ids, size_t r, int run, size_t run_stride)
{
    return ids[r / run * run_stride + r % run];
}

template <typename Y>
__global__ void embedding_lookup_kernel(Y *out, size_t out_stride, const float *ids, int run,
                                        size_t run_stride, const float *table, int vocab, int C,
                                        size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / C, j = i % C;
        const int id = embedding_row(id_of_row(ids, r, run, run_stride), vocab);
        out[r * out_stride + j] = from_float<Y>(id < 0 ? 0.0f : table[(size_t)id * C + j]);
    }
}

// A thread per column j: grad[id][j] += delta[r][j] for the rows in order, as the CPU's threads
// do over their columns, so tokens of the same id never race and each sum has the CPU's order.
template <typename D>
__global__ void embedding_grad_kernel(float *grad, const D *delta, const float *ids, int run,
                                      size_t run_stride, int vocab, int C, int rows)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= C)
        return;
    for (int r = 0; r < rows; r++) {
        const int id = embedding_row(id_of_row(ids, (size_t)r, run, run_stride), vocab);
        if (id >= 0)
            grad[(size_t)id * C + j] += to_float(delta[(size_t)r * C + j]);
    }
}

template <typename X, typename Y>
__global__ void add_row_vector_kernel(Y *y, const X *x, const float *v, int n, size_t stride,
                                      size_t total)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t at = i / n * stride + i % n;
        y[at] = from_float<Y>(to_float(x[at]) + v[i % n]);
    }
}

__global__ void accumulate_kernel(float *y, const float *x, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] += x[i];
}

#define SUM_COLUMNS 32
#define SUM_LANES 8

// A block of 32 columns x 8 lanes: lane y sums rows y, y + 8, ... of its column, then lane 0 adds
// the 8 partial sums in lane order.
template <typename X>
__global__ void column_sums_add_kernel(float *sum, const X *x, int rows, int n, size_t stride)
{
    __shared__ float partial[SUM_LANES][SUM_COLUMNS];
    const int col = threadIdx.x % SUM_COLUMNS, lane = threadIdx.x / SUM_COLUMNS;
    const int j = blockIdx.x * SUM_COLUMNS + col;
    float s = 0.0f;
    for (int r = lane; j < n && r < rows; r += SUM_LANES)
        s += to_float(x[(size_t)r * stride + j]);
    partial[lane][col] = s;
    __syncthreads();
    if (lane == 0 && j < n) {
        float total = 0.0f;
        for (int k = 0; k < SUM_LANES; k++)
            total += partial[k][col];
        sum[j] += total;
    }
}

extern "C" cudaError_t cuda_embedding_lookup(void *out, ElemType out_type, size_t out_stride,
                                             const float *ids, int run, size_t run_stride,
                                             const float *table, int vocab, int C, int rows,
                                             cudaStream_t stream)
{
    const size_t n = (size_t)rows * C;
    if (n == 0)
        return cudaSuccess;
    return with_elem_type(out_type, [&](auto yt) {
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH(embedding_lookup_kernel<Y>, grid_for(n), 256, 0, stream, (Y *)out, out_stride,
                    ids, run, run_stride, table, vocab, C, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_embedding_grad(float *grad, const void *delta, ElemType delta_type,
                                           const float *ids, int run, size_t run_stride, int vocab,
                                           int C, int rows, cudaStream_t stream)
{
    if (C == 0 || rows == 0)
        return cudaSuccess;
    return with_elem_type(delta_type, [&](auto dt) {
        using D = typename decltype(dt)::type;
        CUDA_LAUNCH(embedding_grad_kernel<D>, (C + 127) / 128, 128, 0, stream, grad,
                    (const D *)delta, ids, run, run_stride, vocab, C, rows);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_add_row_vector_typed(void *y, ElemType y_type, const void *x,
                                                 ElemType x_type, const float *v, int rows, int n,
                                                 size_t stride, cudaStream_t stream)
{
    const size_t total = (size_t)rows * n;
    if (total == 0)
        return cudaSuccess;
    return with_elem_types(x_type, y_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((add_row_vector_kernel<X, Y>), grid_for(total), 256, 0, stream, (Y *)y,
                    (const X *)x, v, n, stride, total);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_accumulate(float *y, const float *x, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(accumulate_kernel, grid_for(n), 256, 0, stream, y, x, n);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_column_sums_add_typed(float *sum, const void *x, ElemType x_type,
                                                  int rows, int n, size_t stride,
                                                  cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_elem_type(x_type, [&](auto xt) {
        using X = typename decltype(xt)::type;
        CUDA_LAUNCH(column_sums_add_kernel<X>, (n + SUM_COLUMNS - 1) / SUM_COLUMNS,
                    SUM_COLUMNS * SUM_LANES, 0, stream, sum, (const X *)x, rows, n, stride);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_column_sums_add(float *sum, const float *x, int rows, int n,
                                            cudaStream_t stream)
{
    return cuda_column_sums_add_typed(sum, x, ELEM_F32, rows, n, (size_t)n, stream);
}

// One output value per thread: token row j of sample b, channel k, plus the position embedding's
// value there (pos NULL: none), rounded once to Y.
template <typename X, typename Y>
__global__ void tokens_forward_kernel(Y *out, const X *in, const float *token, const float *pos,
                                      int c, int p, int first, size_t total)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t rows = (size_t)(first + p), b = i / (rows * c), j = i / c % rows;
        const int k = (int)(i % c);
        float v = (int)j < first ? token[k] : to_float(in[(b * c + k) * p + (j - first)]);
        if (pos)
            v += pos[i % (rows * c)];
        out[i] = from_float<Y>(v);
    }
}

// One input value per thread: channel k of position q of sample b.
template <typename X, typename Y>
__global__ void tokens_backward_kernel(X *dx, const Y *dy, int c, int p, int first, size_t total)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t b = i / ((size_t)c * p), k = i / p % c, q = i % p;
        dx[i] =
            from_float<X>(to_float(dx[i]) + to_float(dy[(b * (first + p) + first + q) * c + k]));
    }
}

extern "C" cudaError_t cuda_tokens_forward(void *out, ElemType out_type, const void *in,
                                           ElemType in_type, const float *token, const float *pos,
                                           int batch, int c, int p, int first, cudaStream_t stream)
{
    const size_t total = (size_t)batch * (first + p) * c;
    if (total == 0)
        return cudaSuccess;
    return with_elem_types(in_type, out_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((tokens_forward_kernel<X, Y>), grid_for(total), 256, 0, stream, (Y *)out,
                    (const X *)in, token, pos, c, p, first, total);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_tokens_backward(void *dx, ElemType dx_type, const void *dy,
                                            ElemType dy_type, int batch, int c, int p, int first,
                                            cudaStream_t stream)
{
    const size_t total = (size_t)batch * c * p;
    if (total == 0)
        return cudaSuccess;
    return with_elem_types(dx_type, dy_type, [&](auto xt, auto yt) {
        using X = typename decltype(xt)::type;
        using Y = typename decltype(yt)::type;
        CUDA_LAUNCH((tokens_backward_kernel<X, Y>), grid_for(total), 256, 0, stream, (X *)dx,
                    (const Y *)dy, c, p, first, total);
        return cuda_launch_error();
    });
}
