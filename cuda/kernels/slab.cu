// The optimizer's and the EMA's elementwise work over a slab on the device (core/backend.h
// SlabKernels, train/optimizer.h's rules), grid-strided, and the gradient's sum of squares in a
// fixed order: per-block partial sums in double, then one thread adding them in block order.
//   w, v, m, g, shadow, a, b, x: (n)
#include "slab.h"

#include "launch.h"

#define SLAB_BLOCKS 1024
#define SLAB_THREADS 256

// values (device, in this order: lr, step_size, bias2_sqrt) replaces the host's lr, step_size and
// bias2_sqrt when not NULL: a captured step (CUDA graph) reads each replay's from there; *skip
// (device, when not NULL) not 0 (unscale_kernel's: fp16's gradients were not finite) leaves w and
// the state.
// The run that holds value p of the runs' values counted in order (runs sorted by first, the
// first at 0): a binary search, the same run for the neighbouring threads of a warp but at a
// tensor's edge.
__device__ __forceinline__ const SlabRun *run_of(const SlabRun *runs, int n_runs, size_t p)
{
    int lo = 0, hi = n_runs - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (runs[mid].first <= p)
            lo = mid;
        else
            hi = mid - 1;
    }
    return &runs[lo];
}

__global__ void sgd_kernel(float *w, float *v, const float *grad, const SlabRun *runs, int n_runs,
                           size_t n, float lr, float momentum, float g_weight, float v_weight,
                           const float *values, const float *skip)
{
    if (skip && *skip != 0.0f)
        return;
    if (values)
        lr = values[0];
    for (size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x; p < n;
         p += (size_t)gridDim.x * blockDim.x) {
        const SlabRun *run = run_of(runs, n_runs, p);
        const size_t j = run->offset + (p - run->first);
        const float g = grad[j] + run->decay * w[j];
        const float vj = momentum * v[j] + g;
        v[j] = vj;
        w[j] -= lr * (g_weight * g + v_weight * vj);
    }
}

// AdamW's shrink 1 - lr decay computed with __fmul_rn/__fadd_rn, so that nvcc contracts it no
// more than the host's compiler does (backend/cpu/slab_kernels.c).
__global__ void adam_kernel(float *w, float *m, float *v, const float *grad, const SlabRun *runs,
                            int n_runs, size_t n, float lr, int decoupled, float b1, float b2,
                            float eps, float step_size, float bias2_sqrt, const float *values,
                            const float *skip)
{
    if (skip && *skip != 0.0f)
        return;
    if (values) {
        lr = values[0];
        step_size = values[1];
        bias2_sqrt = values[2];
    }
    for (size_t p = (size_t)blockIdx.x * blockDim.x + threadIdx.x; p < n;
         p += (size_t)gridDim.x * blockDim.x) {
        const SlabRun *run = run_of(runs, n_runs, p);
        const size_t j = run->offset + (p - run->first);
        const float shrink = decoupled ? __fadd_rn(1.0f, -__fmul_rn(lr, run->decay)) : 1.0f;
        const float l2 = decoupled ? 0.0f : run->decay;
        w[j] *= shrink;
        const float g = grad[j] + l2 * w[j];
        m[j] = b1 * m[j] + (1.0f - b1) * g;
        v[j] = b2 * v[j] + (1.0f - b2) * g * g;
        w[j] -= step_size * m[j] / (sqrtf(v[j]) / bias2_sqrt + eps);
    }
}

// partial[block] = the block's share of sum x^2, in double; the threads' sums meet in shared
// memory in thread order.
__global__ void sum_squares_kernel(double *partial, const float *x, size_t n)
{
    __shared__ double sums[SLAB_THREADS];
    double s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += (double)x[i] * (double)x[i];
    sums[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0;
        for (int t = 0; t < (int)blockDim.x; t++)
            total += sums[t];
        partial[blockIdx.x] = total;
    }
}

__global__ void sum_partials_kernel(double *total, const double *partial, int blocks)
{
    double s = 0;
    for (int b = 0; b < blocks; b++)
        s += partial[b];
    *total = s;
}

__global__ void scale_kernel(float *x, size_t n, float s)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

// x *= max_norm / (sqrt(*sum) + 1e-6) when that is below 1: clip_gradients' coefficient
// (train/optimizer.c), in double as there, read from the device so that no one waits for it.
__global__ void clip_kernel(float *x, size_t n, const double *sum, float max_norm)
{
    const double coef = max_norm / (sqrt(*sum) + 1e-6);
    if (coef >= 1)
        return;
    const float s = (float)coef;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

__global__ void average_kernel(float *shadow, const float *w, size_t n, float keep, float take,
                               const float *skip)
{
    if (skip && *skip != 0.0f)
        return;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        shadow[i] = keep * shadow[i] + take * w[i];
}

// x *= s when *sum (of x^2) is finite, else x = 0; *skip (when not NULL) = 0 or 1 accordingly.
__global__ void unscale_kernel(float *x, size_t n, const double *sum, float s, float *skip)
{
    const int finite = isfinite(*sum);
    if (skip && blockIdx.x == 0 && threadIdx.x == 0)
        *skip = finite ? 0.0f : 1.0f;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = finite ? x[i] * s : 0.0f;
}

__global__ void swap_kernel(float *a, float *b, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

static int grid_for(size_t n)
{
    const size_t blocks = (n + SLAB_THREADS - 1) / SLAB_THREADS;
    return blocks > SLAB_BLOCKS ? SLAB_BLOCKS : blocks < 1 ? 1 : (int)blocks;
}

extern "C" cudaError_t cuda_sgd(float *w, float *v, const float *g, const SlabRun *runs, int n_runs,
                                size_t n, float lr, float momentum, int nesterov,
                                const float *values, const float *skip, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(sgd_kernel, grid_for(n), SLAB_THREADS, 0, stream, w, v, g, runs, n_runs, n, lr,
                momentum, nesterov ? 1.0f : 0.0f, nesterov ? momentum : 1.0f, values, skip);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_adam(float *w, float *m, float *v, const float *g, const SlabRun *runs,
                                 int n_runs, size_t n, float lr, float b1, float b2, float eps,
                                 float step_size, float bias2_sqrt, int decoupled,
                                 const float *values, const float *skip, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(adam_kernel, grid_for(n), SLAB_THREADS, 0, stream, w, m, v, g, runs, n_runs, n, lr,
                decoupled, b1, b2, eps, step_size, bias2_sqrt, values, skip);
    return cuda_launch_error();
}

extern "C" size_t cuda_sum_squares_work(void)
{
    return (SLAB_BLOCKS + 1) * sizeof(double);
}

extern "C" cudaError_t cuda_sum_squares(double *total, double *work, const float *x, size_t n,
                                        cudaStream_t stream)
{
    const int blocks = grid_for(n);
    CUDA_LAUNCH(sum_squares_kernel, blocks, SLAB_THREADS, 0, stream, work, x, n);
    CUDA_LAUNCH(sum_partials_kernel, 1, 1, 0, stream, total, work, blocks);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_scale(float *x, size_t n, float s, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(scale_kernel, grid_for(n), SLAB_THREADS, 0, stream, x, n, s);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_clip_norm(float *x, size_t n, float max_norm, double *work,
                                      cudaStream_t stream)
{
    double *total = work + SLAB_BLOCKS;
    const cudaError_t err = cuda_sum_squares(total, work, x, n, stream);
    if (err != cudaSuccess)
        return err;
    CUDA_LAUNCH(clip_kernel, grid_for(n), SLAB_THREADS, 0, stream, x, n, total, max_norm);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_unscale(float *x, size_t n, float s, float *skip, double *work,
                                    cudaStream_t stream)
{
    double *total = work + SLAB_BLOCKS;
    const cudaError_t err = cuda_sum_squares(total, work, x, n, stream);
    if (err != cudaSuccess)
        return err;
    CUDA_LAUNCH(unscale_kernel, grid_for(n), SLAB_THREADS, 0, stream, x, n, total, s, skip);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_average(float *shadow, const float *w, size_t n, float decay,
                                    const float *skip, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(average_kernel, grid_for(n), SLAB_THREADS, 0, stream, shadow, w, n, decay,
                1.0f - decay, skip);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_swap(float *a, float *b, size_t n, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(swap_kernel, grid_for(n), SLAB_THREADS, 0, stream, a, b, n);
    return cuda_launch_error();
}
