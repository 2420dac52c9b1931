// Strided row copies and sums, elementwise and grid-strided: a concatenation's blocks ([route]:
// each input's sample into its place in the output's), its gradients back, identities; templated
// over the element types of src (S) and dst (D), float, bf16 or fp16, added in float.
//   dst: (rows, dst_stride)   src: (rows, src_stride), the first n values of each row moved
// and the transpose of matrices: NCHW to NHWC and back, a convolution's weights OIHW to KRSC and
// their gradient back (core/net_channels_last.h).
//   src: (outer, rows, columns)   dst: (outer, columns, rows)
#include "copy.h"

#include "kernels/dtype.cuh"
#include "kernels/grid.cuh"
#include "launch.h"

template <typename S, typename D>
__global__ void copy_rows_kernel(D *dst, size_t dst_stride, const S *src, size_t src_stride,
                                 size_t row, size_t n, int accumulate)
{
    GRID_STRIDE_LOOP(t, n)
    {
        const size_t r = t / row, i = t % row;
        const float v = to_float(src[r * src_stride + i]);
        D *d = dst + r * dst_stride + i;
        *d = from_float<D>(accumulate ? to_float(*d) + v : v);
    }
}

extern "C" cudaError_t cuda_convert_rows(void *dst, ElemType dst_type, size_t dst_stride,
                                         const void *src, ElemType src_type, size_t src_stride,
                                         int rows, size_t n, int accumulate, cudaStream_t stream)
{
    const size_t total = (size_t)rows * n;
    if (total == 0)
        return cudaSuccess;
    return with_elem_types(src_type, dst_type, [&](auto st, auto dt) {
        using S = typename decltype(st)::type;
        using D = typename decltype(dt)::type;
        CUDA_LAUNCH((copy_rows_kernel<S, D>), grid_for(total), GRID_BLOCK, 0, stream, (D *)dst,
                    dst_stride, (const S *)src, src_stride, n, total, accumulate);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_copy_rows(float *dst, size_t dst_stride, const float *src,
                                      size_t src_stride, int rows, size_t n, int accumulate,
                                      cudaStream_t stream)
{
    return cuda_convert_rows(dst, ELEM_F32, dst_stride, src, ELEM_F32, src_stride, rows, n,
                             accumulate, stream);
}

template <typename S, typename D>
__global__ void transpose_kernel(D *dst, const S *src, int rows, int columns, size_t n,
                                 int accumulate)
{
    GRID_STRIDE_LOOP(t, n)
    {
        // t indexes dst: (o, c, r)
        const size_t matrix = (size_t)rows * columns, o = t / matrix, in = t % matrix;
        const size_t c = in / rows, r = in % rows;
        const float v = to_float(src[o * matrix + r * columns + c]);
        dst[t] = from_float<D>(accumulate ? to_float(dst[t]) + v : v);
    }
}

extern "C" cudaError_t cuda_transpose(void *dst, ElemType dst_type, const void *src,
                                      ElemType src_type, int outer, int rows, int columns,
                                      int accumulate, cudaStream_t stream)
{
    const size_t total = (size_t)outer * rows * columns;
    if (total == 0)
        return cudaSuccess;
    return with_elem_types(src_type, dst_type, [&](auto st, auto dt) {
        using S = typename decltype(st)::type;
        using D = typename decltype(dt)::type;
        CUDA_LAUNCH((transpose_kernel<S, D>), grid_for(total), GRID_BLOCK, 0, stream, (D *)dst,
                    (const S *)src, rows, columns, total, accumulate);
        return cuda_launch_error();
    });
}
