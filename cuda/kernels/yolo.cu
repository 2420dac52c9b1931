// [yolo] on the device, grid-strided: its outputs (the logistic of x, y, objectness and classes,
// none with new_coords, layers/yolo.c), its loss and delta given truth boxes in device memory (the
// rules of layers/yolo_loss_rules.h, which the CPU's loop calls too: a thread per cell for what a
// cell decides alone, a thread per sample for its truths in order, which overwrite one another),
// the cost summed on the device in the CPU's order, and the delta into the input's gradient. The
// input and its gradient are float, bf16 or fp16 (template X), the rest float.
//   in, out, delta, in_delta: (n) = [batch][n_mask][entries][plane]
//   truth [batch][truth_boxes][TRUTH_FLOATS]   sample_loss [batch]
//   plane_squares [batch][n_mask][entries]
#include "yolo.h"

#include "kernels/dtype.cuh"
#include "kernels/grid.cuh"
#include "kernels/loss_squares.h"
#include "launch.h"
#include "layers/yolo_loss_rules.h"

template <typename X>
__global__ void yolo_forward_kernel(float *out, const X *in, size_t n, int entries, size_t plane,
                                    float scale_x_y, int new_coords)
{
    GRID_STRIDE_LOOP(i, n)
    {
        const int entry = (int)(i / plane % (size_t)entries);
        const float x = to_float(in[i]);
        if (entry == 2 || entry == 3 || (entry >= 4 && new_coords)) {
            out[i] = x;
            continue;
        }
        const float y = new_coords ? x : 1.0f / (1.0f + expf(-x));
        out[i] = entry < 2 && scale_x_y != 1.0f ? y * scale_x_y - 0.5f * (scale_x_y - 1) : y;
    }
}

// One thread per anchor and cell: its entries zeroed, then its predictions' rule.
__global__ void yolo_predictions_kernel(Yolo yo, const float *out, float *delta, const float *truth,
                                        int truth_boxes, int n_truth, int batch, int w, int h)
{
    const size_t plane = (size_t)w * h, entries = (size_t)(yo.classes + 5) * plane;
    const size_t sample = (size_t)yo.n_mask * entries;
    GRID_STRIDE_LOOP(c, (size_t)batch * yo.n_mask * plane)
    {
        const size_t b = c / ((size_t)yo.n_mask * plane), p = c % plane;
        const int n = (int)(c / plane % (size_t)yo.n_mask);
        float *d = delta + b * sample + n * entries + p;
        for (int k = 0; k < yo.classes + 5; k++)
            d[k * plane] = 0;
        yolo_cell_predictions(&yo, out, delta, truth + b * truth_boxes * TRUTH_FLOATS, n_truth,
                              b * sample, w, h, n, (int)(p / w), (int)(p % w));
    }
}

// One thread per sample: its truths in order, and its IoU sums.
__global__ void yolo_truths_kernel(Yolo yo, const float *out, float *delta, const float *truth,
                                   int truth_boxes, int n_truth, int batch, int w, int h,
                                   YoloSampleLoss *sample_loss)
{
    const size_t sample = (size_t)yo.n_mask * (yo.classes + 5) * w * h;
    GRID_STRIDE_LOOP(b, (size_t)batch)
    yolo_sample_truths(&yo, out, delta, truth + b * truth_boxes * TRUTH_FLOATS, n_truth, b * sample,
                       w, h, &sample_loss[b]);
}

// One thread per anchor and cell (iou_thresh < 1): its box deltas averaged.
__global__ void yolo_average_kernel(Yolo yo, float *delta, int batch, size_t plane)
{
    const size_t entries = (size_t)(yo.classes + 5) * plane;
    GRID_STRIDE_LOOP(c, (size_t)batch * yo.n_mask * plane)
    yolo_cell_average(&yo, delta + c / plane * entries + c % plane, plane);
}

// One thread per sample: its planes' squared deltas added in order, as the CPU adds them.
__global__ void yolo_squares_kernel(Yolo yo, const double *plane_squares, int batch,
                                    YoloSampleLoss *sample_loss)
{
    const int planes = yo.n_mask * (yo.classes + 5);
    GRID_STRIDE_LOOP(b, (size_t)batch)
    for (int k = 0; k < planes; k++)
        yolo_add_plane(&yo, k, plane_squares[b * planes + k], &sample_loss[b]);
}

// One thread: the samples' sums in sample order, the cost into *cost.
__global__ void yolo_cost_kernel(Yolo yo, const YoloSampleLoss *sample_loss, int batch,
                                 double *cost)
{
    YoloSampleLoss total = {0, 0, 0, 0, 0};
    for (int b = 0; b < batch; b++)
        yolo_loss_add(&total, &sample_loss[b]);
    *cost = yolo_cost(&yo, &total);
}

template <typename X>
__global__ void yolo_backward_kernel(X *in_delta, const float *delta, size_t n, float k)
{
    GRID_STRIDE_LOOP(i, n)
    in_delta[i] = from_float<X>(to_float(in_delta[i]) + k * delta[i]);
}

extern "C" cudaError_t cuda_yolo_forward(float *out, const void *in, ElemType in_type, size_t n,
                                         int entries, size_t plane, float scale_x_y, int new_coords,
                                         cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_elem_type(in_type, [&](auto xt) {
        using X = typename decltype(xt)::type;
        CUDA_LAUNCH((yolo_forward_kernel<X>), grid_for(n), GRID_BLOCK, 0, stream, out,
                    (const X *)in, n, entries, plane, scale_x_y, new_coords);
        return cuda_launch_error();
    });
}

extern "C" cudaError_t cuda_yolo_loss(const Yolo *yo, const float *out, float *delta,
                                      const float *truth, int truth_boxes, int batch, int w, int h,
                                      YoloSampleLoss *sample_loss, double *plane_squares,
                                      double *cost, cudaStream_t stream)
{
    if (batch == 0)
        return cudaSuccess;
    const size_t plane = (size_t)w * h, cells = (size_t)batch * yo->n_mask * plane;
    const int n_truth = truth_boxes < yo->max_boxes ? truth_boxes : yo->max_boxes;
    CUDA_LAUNCH(yolo_predictions_kernel, grid_for(cells), GRID_BLOCK, 0, stream, *yo, out, delta,
                truth, truth_boxes, n_truth, batch, w, h);
    CUDA_LAUNCH(yolo_truths_kernel, grid_for((size_t)batch), GRID_BLOCK, 0, stream, *yo, out, delta,
                truth, truth_boxes, n_truth, batch, w, h, sample_loss);
    if (yo->iou_thresh < 1.0f)
        CUDA_LAUNCH(yolo_average_kernel, grid_for(cells), GRID_BLOCK, 0, stream, *yo, delta, batch,
                    plane);
    const cudaError_t err =
        cuda_plane_squares(plane_squares, delta, cells / plane * (yo->classes + 5), plane, stream);
    if (err != cudaSuccess)
        return err;
    CUDA_LAUNCH(yolo_squares_kernel, grid_for((size_t)batch), GRID_BLOCK, 0, stream, *yo,
                plane_squares, batch, sample_loss);
    CUDA_LAUNCH(yolo_cost_kernel, 1, 1, 0, stream, *yo, sample_loss, batch, cost);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_yolo_backward(void *in_delta, ElemType in_type, const float *delta,
                                          size_t n, float k, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_elem_type(in_type, [&](auto xt) {
        using X = typename decltype(xt)::type;
        CUDA_LAUNCH((yolo_backward_kernel<X>), grid_for(n), GRID_BLOCK, 0, stream, (X *)in_delta,
                    delta, n, k);
        return cuda_launch_error();
    });
}
