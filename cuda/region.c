/* [region]'s GPU kernels (layers/region.c has its meaning): the outputs on the device; with truth
 * boxes, the output goes to the host, where the loss and its delta are computed as on the CPU
 * (layers/region_loss.c, as darknet's own GPU build does), and the delta comes back: a download
 * and a wait per training pass, as [yolo]'s (cuda/yolo.c).
 *
 *   in, out, Region.delta (device) [batch][num][classes + 5][h][w]
 */
#include "layers/region.h"

#include <stdlib.h>

#include "gpu.h"
#include "kernels/region.h"
#include "layers/region_loss.h"

static int region_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    Region *r = l->priv;
    const size_t n = (size_t)batch * shape_size(l->out_shape);
    r->delta = layer_state_floats(st, n);
    if (!r->delta) /* measuring */
        return CDL_OK;
    free(r->host);
    r->host = malloc(2 * n * sizeof *r->host);
    return r->host ? CDL_OK : error_set(e, CDL_ERUNTIME, "out of memory");
}

static void region_release_gpu(Layer *l)
{
    Region *r = l->priv;
    free(r->host);
    r->host = NULL;
}

static void region_forward_gpu(Layer *l, const StepContext *ctx)
{
    Region *r = l->priv;
    const int w = l->out_shape.w, h = l->out_shape.h;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    cudaStream_t stream = gpu_stream(ctx);
    gpu_note(ctx,
             cuda_region_forward(l->out, l->in[0], n, r->classes + 5, (size_t)w * (size_t)h,
                                 r->softmax, stream),
             "region forward");
    if (!ctx->truth)
        return;
    float *out = r->host, *delta = r->host + n;
    gpu_note(ctx, cudaMemcpyAsync(out, l->out, n * sizeof *out, cudaMemcpyDeviceToHost, stream),
             "region output download");
    gpu_note(ctx, cudaStreamSynchronize(stream), "region output download");
    const double cost = region_loss(r, out, delta, ctx->truth, ctx->truth_boxes, ctx->batch, w, h,
                                    ctx->images_seen);
    gpu_note(ctx,
             cudaMemcpyAsync(r->delta, delta, n * sizeof *delta, cudaMemcpyHostToDevice, stream),
             "region delta upload");
    *ctx->loss += (float)(cost / ctx->loss_divisor);
}

/* dL/d(in) as on the CPU (backend/cpu/region.c). */
static void region_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Region *r = l->priv;
    if (!l->in_delta[0] || !ctx->truth)
        return;
    gpu_note(ctx,
             cuda_region_backward(l->in_delta[0], r->delta, l->out,
                                  (size_t)ctx->batch * shape_size(l->out_shape), r->classes + 5,
                                  (size_t)l->out_shape.w * (size_t)l->out_shape.h,
                                  -ctx->grad_scale / ctx->loss_divisor, gpu_stream(ctx)),
             "region backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_region_kernels = {
    .resize = region_resize_gpu,
    .release = region_release_gpu,
    .forward = region_forward_gpu,
    .backward = region_backward_gpu,
};
