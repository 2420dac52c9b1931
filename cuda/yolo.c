/* [yolo]'s GPU kernels (layers/yolo.c has its meaning): the outputs on the device; with truth
 * boxes, the output goes to the host, where the loss and its delta are computed as on the CPU
 * (layers/yolo_loss.c: darknet's rules, sequential over the truths, as darknet's own GPU build
 * does), and the delta comes back: a download and a wait per [yolo] layer and training pass, so
 * a CUDA graph cannot hold it (train --cuda-graph refuses it, naming the layer).
 *
 *   in, out, Yolo.delta (device) [batch][n_mask][classes + 5][h][w]
 */
#include "layers/yolo.h"

#include <stdlib.h>

#include "gpu.h"
#include "kernels/yolo.h"
#include "layers/yolo_loss.h"

static int yolo_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    Yolo *yo = l->priv;
    const size_t n = (size_t)batch * shape_size(l->out_shape);
    yo->delta = layer_state_floats(st, n);
    if (!yo->delta) /* measuring */
        return CDL_OK;
    free(yo->host);
    yo->host = malloc(2 * n * sizeof *yo->host);
    return yo->host ? CDL_OK : error_set(e, CDL_ERUNTIME, "out of memory");
}

static void yolo_release_gpu(Layer *l)
{
    Yolo *yo = l->priv;
    free(yo->host);
    yo->host = NULL;
}

static void yolo_forward_gpu(Layer *l, const StepContext *ctx)
{
    Yolo *yo = l->priv;
    const int w = l->out_shape.w, h = l->out_shape.h;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    cudaStream_t stream = gpu_stream(ctx);
    gpu_note(ctx,
             cuda_yolo_forward(l->out, l->in[0], n, yo->classes + 5, (size_t)w * (size_t)h,
                               yo->scale_x_y, stream),
             "yolo forward");
    if (!ctx->truth)
        return;
    float *out = yo->host, *delta = yo->host + n;
    gpu_note(ctx, cudaMemcpyAsync(out, l->out, n * sizeof *out, cudaMemcpyDeviceToHost, stream),
             "yolo output download");
    gpu_note(ctx, cudaStreamSynchronize(stream), "yolo output download");
    const double cost = yolo_loss(yo, out, delta, ctx->truth, ctx->truth_boxes, ctx->batch, w, h);
    gpu_note(ctx,
             cudaMemcpyAsync(yo->delta, delta, n * sizeof *delta, cudaMemcpyHostToDevice, stream),
             "yolo delta upload");
    *ctx->loss += (float)(cost / ctx->loss_divisor);
}

/* dL/d(in) = -delta / loss_divisor, as on the CPU (backend/cpu/yolo.c). */
static void yolo_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Yolo *yo = l->priv;
    if (!l->in_delta[0] || !ctx->truth)
        return;
    gpu_note(ctx,
             cuda_yolo_backward(l->in_delta[0], yo->delta,
                                (size_t)ctx->batch * shape_size(l->out_shape),
                                -ctx->grad_scale / ctx->loss_divisor, gpu_stream(ctx)),
             "yolo backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_yolo_kernels = {
    .resize = yolo_resize_gpu,
    .release = yolo_release_gpu,
    .forward = yolo_forward_gpu,
    .backward = yolo_backward_gpu,
};
