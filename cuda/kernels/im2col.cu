// A convolution's column matrices (im2col) and their transpose (col2im), and the move of a chunk
// of images between NCHW and rows of images side by side, elementwise and grid-strided. col2im
// gathers: each input pixel sums the entries of the taps that read it, in a fixed order, so no
// two threads write one value (deterministic, no atomics). Templated over the element types (float,
// bf16 or fp16) of x, dx and nchw (T) and of the column matrices and rows a product takes as its
// operands (C: 16-bit where the product multiplies 16-bit operands); col2im reads float columns.
//   x, dx: (images, channels, h, w)   cols: (channels * size_h * size_w, images * out_h * out_w)
//   rows: (channels, images * spatial)   nchw: (images, channels, spatial)
// or, as CudaConvShape says, x and dx (images, h, w, channels) and the pixel rows
//   cols: (images * out_h * out_w, groups * size_h * size_w * channels / groups)
#include "im2col.h"

#include "kernels/dtype.cuh"
#include "kernels/layout.cuh"
#include "launch.h"

template <typename T, typename C>
__global__ void im2col_kernel(C *cols, const T *x, CudaConvShape s, size_t n)
{
    const int kk = s.size_h * s.size_w, out_hw = s.out_h * s.out_w;
    const size_t columns = (size_t)s.images * out_hw, kdim = (size_t)kk * s.channels;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        // cols[row][column] with row (channel, tap), or cols[column][(tap, channel)]
        const size_t row = s.pixel_rows ? i % kdim : i / columns;
        const size_t column = s.pixel_rows ? i / kdim : i % columns;
        // a pixel row's entries (group, tap, channel of the group), KRSC per group
        const int cg = s.channels / s.groups, group_kdim = kk * cg;
        const int within = (int)(row % group_kdim);
        const int c = (int)(s.pixel_rows ? row / group_kdim * cg + within % cg : row / kk);
        const int tap = (int)(s.pixel_rows ? within / cg : row % kk);
        const int b = (int)(column / out_hw), p = (int)(column % out_hw);
        const int iy = p / s.out_w * s.stride_h - s.pad_h + tap / s.size_w;
        const int ix = p % s.out_w * s.stride_w - s.pad_w + tap % s.size_w;
        cols[i] = from_float<C>(
            iy >= 0 && iy < s.h && ix >= 0 && ix < s.w
                ? to_float(x[index_of(b, c, iy * s.w + ix, s.channels, s.h * s.w, s.x_nhwc)])
                : 0.0f);
    }
}

template <typename T>
__global__ void col2im_kernel(T *dx, float beta, const float *cols, CudaConvShape s, size_t n)
{
    const int kk = s.size_h * s.size_w, out_hw = s.out_h * s.out_w, hw = s.h * s.w;
    const size_t columns = (size_t)s.images * out_hw, kdim = (size_t)kk * s.channels;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int c = channel_of(i, s.channels, hw, s.x_nhwc);
        const int b = (int)(i / ((size_t)hw * s.channels));
        const int pixel = (int)(s.x_nhwc ? i / s.channels % hw : i % hw);
        const int ix = pixel % s.w, iy = pixel / s.w;
        // the entry of tap 0 at output pixel 0 of this image and channel, and the steps to the
        // next tap and output pixel
        const int cg = s.channels / s.groups;
        const size_t first = s.pixel_rows
                                 ? (size_t)b * out_hw * kdim + (size_t)(c / cg) * kk * cg + c % cg
                                 : (size_t)c * kk * columns + (size_t)b * out_hw;
        const size_t tap_step = s.pixel_rows ? (size_t)cg : columns;
        const size_t pixel_step = s.pixel_rows ? kdim : 1;
        float sum = 0.0f;
        for (int ki = 0; ki < s.size_h; ki++) {
            const int ty = iy + s.pad_h - ki;
            if (ty < 0 || ty % s.stride_h || ty / s.stride_h >= s.out_h)
                continue;
            for (int kj = 0; kj < s.size_w; kj++) {
                const int tx = ix + s.pad_w - kj;
                if (tx < 0 || tx % s.stride_w || tx / s.stride_w >= s.out_w)
                    continue;
                const size_t out_pixel = (size_t)(ty / s.stride_h) * s.out_w + tx / s.stride_w;
                sum +=
                    cols[first + (size_t)(ki * s.size_w + kj) * tap_step + out_pixel * pixel_step];
            }
        }
        dx[i] = from_float<T>(beta != 0.0f ? beta * to_float(dx[i]) + sum : sum);
    }
}

template <typename T, typename C>
__global__ void image_rows_kernel(C *rows, T *nchw, int images, int channels, int spatial,
                                  int to_rows, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t s = i % spatial, plane = i / spatial;
        const size_t c = plane % channels, b = plane / channels;
        const size_t r = (c * images + b) * spatial + s;
        if (to_rows)
            rows[r] = from_float<C>(to_float(nchw[i]));
        else
            nchw[i] = from_float<T>(to_float(rows[r]));
    }
}

static int grid_for(size_t n)
{
    const size_t blocks = (n + 255) / 256;
    return blocks > 65536 ? 65536 : blocks < 1 ? 1 : (int)blocks;
}

extern "C" cudaError_t cuda_im2col(void *cols, ElemType cols_type, const void *x, ElemType x_type,
                                   CudaConvShape s, cudaStream_t stream)
{
    const size_t n = (size_t)s.channels * s.size_h * s.size_w * s.images * s.out_h * s.out_w;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(x_type, cols_type, [&](auto tt, auto ct) {
        using T = typename decltype(tt)::type;
        using C = typename decltype(ct)::type;
        CUDA_LAUNCH((im2col_kernel<T, C>), grid_for(n), 256, 0, stream, (C *)cols, (const T *)x, s,
                    n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_col2im(void *dx, ElemType dx_type, float beta, const float *cols,
                                   CudaConvShape s, cudaStream_t stream)
{
    const size_t n = (size_t)s.images * s.channels * s.h * s.w;
    if (n == 0)
        return cudaSuccess;
    return with_elem_type(dx_type, [&](auto tt) {
        using T = typename decltype(tt)::type;
        CUDA_LAUNCH(col2im_kernel<T>, grid_for(n), 256, 0, stream, (T *)dx, beta, cols, s, n);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_image_rows(void *rows, ElemType rows_type, void *nchw,
                                       ElemType nchw_type, int images, int channels, int spatial,
                                       int to_rows, cudaStream_t stream)
{
    const size_t n = (size_t)images * channels * spatial;
    if (n == 0)
        return cudaSuccess;
    return with_elem_types(nchw_type, rows_type, [&](auto tt, auto ct) {
        using T = typename decltype(tt)::type;
        using C = typename decltype(ct)::type;
        CUDA_LAUNCH((image_rows_kernel<T, C>), grid_for(n), 256, 0, stream, (C *)rows, (T *)nchw,
                    images, channels, spatial, to_rows, n);
        return cuda_launch_error();
    });
}
