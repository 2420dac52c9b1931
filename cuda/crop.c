/* [crop]'s GPU kernels (layers/crop.c has its meaning): a window of the input, the centre in
 * inference and in training a random one per sample, drawn on the device as the CPU draws it
 * (PCG32 seeded with the layer's key and the sample's position: kernels/rng.cuh), kept in the
 * layer's state for the backward; scaled and shifted.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][crop_height][crop_width]
 */
#include "layers/crop.h"
#include "gpu.h"
#include "spatial_maps.h"

/* The windows as the CPU's resize takes them ([batch][3] ints, device memory here). */
static int crop_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Crop *cr = l->priv;
    cr->windows = layer_state_bytes(st, (size_t)batch * 3 * sizeof *cr->windows);
    return CDL_OK;
}

static CropDims dims_of(const Layer *l, const StepContext *ctx)
{
    return (CropDims){.batch = ctx->batch,
                      .c = l->in_shape.c,
                      .ih = l->in_shape.h,
                      .iw = l->in_shape.w,
                      .oh = l->out_shape.h,
                      .ow = l->out_shape.w};
}

static void crop_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Crop *cr = l->priv;
    const CropDims d = dims_of(l, ctx);
    const uint64_t key = rng_key(ctx->seed, layer_draw_stream(ctx, l));
    /* a captured step keys on the draw id each replay uploads */
    const GpuHandles *h = gpu_handles(ctx);
    gpu_note(ctx,
             cuda_crop_windows(cr->windows, ctx->batch, d.ih - d.oh, d.iw - d.ow, cr->flip,
                               ctx->train, key, h->capturing ? &h->step->draw_id : NULL, ctx->seed,
                               l->index, (uint64_t)ctx->sample_offset, gpu_stream(ctx)),
             "crop windows");
    gpu_note(
        ctx,
        cuda_crop_forward(forward_map(l), cr->windows, d, cr->scale, cr->shift, gpu_stream(ctx)),
        "crop forward");
}

static void crop_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Crop *cr = l->priv;
    if (!l->in_delta[0])
        return;
    gpu_note(ctx,
             cuda_crop_backward(backward_map(l), cr->windows, dims_of(l, ctx), cr->scale,
                                gpu_stream(ctx)),
             "crop backward");
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_crop_kernels = {
    .resize = crop_resize_gpu,
    .forward = crop_forward_gpu,
    .backward = crop_backward_gpu,
    .stores_16bit = 1,
};
