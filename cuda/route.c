/* [route]'s GPU kernels (layers/route.c has its meaning): concatenation along channels, plain NCHW
 * only; each input and the output float32 or 16-bit (Layer.in_storage, Layer.storage).
 *
 *   inputs k [batch][c_k][h][w]   all with the same h and w
 *   out      [batch][sum c_k / groups][h][w]   input k's channel group group_id
 */
#include "layers/route.h"
#include "gpu.h"
#include "kernels/copy.h"

static void route_forward_gpu(Layer *l, const StepContext *ctx)
{
    const Route *ro = l->priv;
    const size_t out_sample = shape_size(l->out_shape);
    size_t offset = 0;
    for (int k = 0; k < l->n_inputs; k++) {
        const size_t n = route_part(ro, k);
        gpu_note(ctx,
                 cuda_convert_rows(elem_at(l->out, l->storage, offset), l->storage, out_sample,
                                   elem_at(l->in[k], l->in_storage[k], ro->group_id * n),
                                   l->in_storage[k], ro->sizes[k], ctx->batch, n, 0,
                                   gpu_stream(ctx)),
                 "route forward");
        offset += n;
    }
}

/* Two listed entries may name the same layer: the inputs go one at a time, on one stream. */
static void route_backward_gpu(Layer *l, const StepContext *ctx)
{
    const Route *ro = l->priv;
    const size_t out_sample = shape_size(l->out_shape);
    size_t offset = 0;
    for (int k = 0; k < l->n_inputs; k++) {
        const size_t n = route_part(ro, k);
        if (l->in_delta[k])
            gpu_note(ctx,
                     cuda_convert_rows(elem_at(l->in_delta[k], l->in_storage[k], ro->group_id * n),
                                       l->in_storage[k], ro->sizes[k],
                                       elem_at(l->delta, l->storage, offset), l->storage,
                                       out_sample, ctx->batch, n, 1, gpu_stream(ctx)),
                     "route backward");
        offset += n;
    }
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_route_kernels = {
    .forward = route_forward_gpu,
    .backward = route_backward_gpu,
    .stores_16bit = 1,
};
