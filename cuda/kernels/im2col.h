/* A convolution's column matrices on the device (im2col.cu): C entry points, x, dx, nchw, the
 * columns and rows each float32 or 16-bit (core/precision.h ElemType; col2im's columns float32).
 * The images of
 * a chunk sit side by side in every row, so that one gemm per group takes them all:
 *
 *   x, dx [images][channels][h][w]   cols [channels * size_h * size_w][images * out_h * out_w]
 *   rows [channels][images * spatial]   nchw [images][channels][spatial]
 *
 * Row r = (channel, ki, kj) of cols, column (image, oy, ox): group g's rows are the block
 * [g * kdim, (g + 1) * kdim) with kdim = channels / groups * size_h * size_w, as its channels are.
 */
#ifndef CDL_CUDA_IM2COL_H
#define CDL_CUDA_IM2COL_H

#include <cuda_runtime_api.h>

#include "core/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The shape of the convolution the column matrices are made for: a kernel of size_h x size_w, its
 * stride and padding per axis, its channels in groups. x_nhwc: x and dx are
 * [images][h][w][channels] (channels-last, core/net_channels_last.h). pixel_rows: cols is the
 * transpose, a row per output pixel, [images * out_h * out_w][groups][size_h * size_w * cg] with
 * cg = channels / groups: group g's block of a row, its columns (ki, kj, channel of the group),
 * in the order of the group's KRSC weights [filters / groups][size_h][size_w][cg]. Column
 * matrices of rows per channel (pixel_rows 0) take groups as blocks of rows whatever groups is. */
typedef struct CudaConvShape {
    int images, channels, h, w, out_h, out_w;
    int size_h, size_w, stride_h, stride_w, pad_h, pad_w;
    int groups, x_nhwc, pixel_rows;
} CudaConvShape;

/* cols = im2col of x: the tap of input pixel (oy * stride_h - pad_h + ki, ox * stride_w - pad_w +
 * kj) of channel and image, 0 where it falls outside the image. */
cudaError_t cuda_im2col(void *cols, ElemType cols_type, const void *x, ElemType x_type,
                        CudaConvShape s, cudaStream_t stream);
/* dx = beta * dx + col2im of cols: each input pixel the sum of the column entries of the taps
 * that read it, in a fixed order (ki, then kj); beta 0 writes dx whole (its old values unread). */
cudaError_t cuda_col2im(void *dx, ElemType dx_type, float beta, const float *cols, CudaConvShape s,
                        cudaStream_t stream);
/* rows [channels][images * spatial] = nchw [images][channels][spatial] (to_rows 1), or the
 * reverse (to_rows 0). */
cudaError_t cuda_image_rows(void *rows, ElemType rows_type, void *nchw, ElemType nchw_type,
                            int images, int channels, int spatial, int to_rows,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
