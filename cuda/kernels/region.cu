// [region] on the device, grid-strided: its outputs (logistic x, y and objectness, logistic or
// softmax classes, layers/region.c), its loss and delta given truth boxes in device memory (the
// rules of layers/region_loss_rules.h, which the CPU's loop calls too: a thread per cell for what
// a cell decides alone, a thread per sample for its truths in order, which overwrite one
// another), the cost summed on the device in the CPU's order, and the gradient into the input. The
// input and its gradient are float, bf16 or fp16 (template X), the rest float.
//   in, out, delta, in_delta: (n) = [batch][num][entries][plane]
//   truth [batch][truth_boxes][TRUTH_FLOATS]   plane_squares [batch][num][entries]
#include "region.h"

#include "kernels/dtype.cuh"
#include "kernels/grid.cuh"
#include "kernels/loss_squares.h"
#include "launch.h"
#include "layers/region_loss_rules.h"

// Every value but the classes when softmax (those: region_softmax_kernel); entry 4 as it is with
// background.
template <typename X>
__global__ void region_forward_kernel(float *out, const X *in, size_t n, int entries, size_t plane,
                                      int softmax, int background)
{
    GRID_STRIDE_LOOP(i, n)
    {
        const int entry = (int)(i / plane % (size_t)entries);
        const float x = to_float(in[i]);
        if (entry == 2 || entry == 3 || (entry >= 5 && softmax) || (entry == 4 && background))
            out[i] = x;
        else
            out[i] = 1.0f / (1.0f + expf(-x));
    }
}

// One thread per anchor and cell (groups = n / entries): the softmax of its entries from first
// on (its classes, after the background score with background), in place.
__global__ void region_softmax_kernel(float *out, size_t groups, int entries, size_t plane,
                                      int first)
{
    GRID_STRIDE_LOOP(g, groups)
    {
        float *x = out + (g / plane * entries + first) * plane + g % plane;
        float largest = x[0], sum = 0;
        for (int k = 1; k < entries - first; k++)
            largest = fmaxf(largest, x[k * plane]);
        for (int k = 0; k < entries - first; k++) {
            x[k * plane] = expf(x[k * plane] - largest);
            sum += x[k * plane];
        }
        for (int k = 0; k < entries - first; k++)
            x[k * plane] /= sum;
    }
}

// One thread per anchor and cell: its entries zeroed, then its predictions' rule; the anchor prior
// while fewer than REGION_PRIOR_IMAGES images were seen (*seen, device memory, when not NULL:
// a captured step's; else seen_host).
__global__ void region_predictions_kernel(Region r, const float *out, float *delta,
                                          const float *truth, int truth_boxes, int batch, int w,
                                          int h, const uint64_t *seen, uint64_t seen_host)
{
    const size_t plane = (size_t)w * h, entries = (size_t)(r.classes + 5) * plane;
    const size_t sample = (size_t)r.num * entries;
    const int prior = (seen ? *seen : seen_host) < REGION_PRIOR_IMAGES;
    GRID_STRIDE_LOOP(c, (size_t)batch * r.num * plane)
    {
        const size_t b = c / ((size_t)r.num * plane), p = c % plane;
        const int n = (int)(c / plane % (size_t)r.num);
        float *d = delta + b * sample + n * entries + p;
        for (int k = 0; k < r.classes + 5; k++)
            d[k * plane] = 0;
        region_cell_predictions(&r, out + b * sample, delta + b * sample,
                                truth + b * truth_boxes * TRUTH_FLOATS, truth_boxes, w, h, prior, n,
                                (int)(p / w), (int)(p % w));
    }
}

// One thread per sample: its truths in order.
__global__ void region_truths_kernel(Region r, const float *out, float *delta, const float *truth,
                                     int truth_boxes, int batch, int w, int h)
{
    const size_t sample = (size_t)r.num * (r.classes + 5) * w * h;
    GRID_STRIDE_LOOP(b, (size_t)batch)
    region_sample_truths(&r, out + b * sample, delta + b * sample,
                         truth + b * truth_boxes * TRUTH_FLOATS, truth_boxes, w, h);
}

// One thread: each sample's planes' squared deltas added in order, then the samples in order, as
// the CPU adds them; the cost into *cost.
__global__ void region_cost_kernel(const double *plane_squares, int planes, int batch, double *cost)
{
    double c = 0;
    for (int b = 0; b < batch; b++) {
        double squares = 0;
        for (int k = 0; k < planes; k++)
            squares += plane_squares[b * planes + k];
        c += squares;
    }
    *cost = c;
}

template <typename X>
__global__ void region_backward_kernel(X *in_delta, const float *delta, const float *out, size_t n,
                                       int entries, size_t plane, int background, float k)
{
    GRID_STRIDE_LOOP(i, n)
    {
        const int entry = (int)(i / plane % (size_t)entries);
        const float y = out[i];
        const int logistic = entry < 2 || (entry == 4 && !background);
        in_delta[i] =
            from_float<X>(to_float(in_delta[i]) + k * delta[i] * (logistic ? y * (1 - y) : 1.0f));
    }
}

extern "C" cudaError_t cuda_region_forward(float *out, const void *in, ElemType in_type, size_t n,
                                           int entries, size_t plane, int softmax, int background,
                                           cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    const cudaError_t err = with_elem_type(in_type, [&](auto xt) {
        using X = typename decltype(xt)::type;
        CUDA_LAUNCH((region_forward_kernel<X>), grid_for(n), GRID_BLOCK, 0, stream, out,
                    (const X *)in, n, entries, plane, softmax, background);
        return cuda_launch_error();
    });
    if (err != cudaSuccess)
        return err;
    if (softmax) {
        const size_t groups = n / (size_t)entries;
        CUDA_LAUNCH(region_softmax_kernel, grid_for(groups), GRID_BLOCK, 0, stream, out, groups,
                    entries, plane, 5 - background);
    }
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_region_loss(const Region *r, const float *out, float *delta,
                                        const float *truth, int truth_boxes, int batch, int w,
                                        int h, const uint64_t *seen, uint64_t seen_host,
                                        double *plane_squares, double *cost, cudaStream_t stream)
{
    if (batch == 0)
        return cudaSuccess;
    const size_t cells = (size_t)batch * r->num * w * h;
    CUDA_LAUNCH(region_predictions_kernel, grid_for(cells), GRID_BLOCK, 0, stream, *r, out, delta,
                truth, truth_boxes, batch, w, h, seen, seen_host);
    CUDA_LAUNCH(region_truths_kernel, grid_for((size_t)batch), GRID_BLOCK, 0, stream, *r, out,
                delta, truth, truth_boxes, batch, w, h);
    const int planes = r->num * (r->classes + 5);
    const cudaError_t err =
        cuda_plane_squares(plane_squares, delta, (size_t)batch * planes, (size_t)w * h, stream);
    if (err != cudaSuccess)
        return err;
    CUDA_LAUNCH(region_cost_kernel, 1, 1, 0, stream, plane_squares, planes, batch, cost);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_region_backward(void *in_delta, ElemType in_type, const float *delta,
                                            const float *out, size_t n, int entries, size_t plane,
                                            int background, float k, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return with_elem_type(in_type, [&](auto xt) {
        using X = typename decltype(xt)::type;
        CUDA_LAUNCH((region_backward_kernel<X>), grid_for(n), GRID_BLOCK, 0, stream, (X *)in_delta,
                    delta, out, n, entries, plane, background, k);
        return cuda_launch_error();
    });
}
