/* [route]'s CPU kernels (layers/route.c has its meaning): concatenation along channels, in plain
 * NCHW or, with inputs of whole channel blocks, oneDNN's blocked nChw8c.
 *
 *   inputs k [batch][c_k][h][w]   all with the same h and w
 *   out      [batch][sum c_k / groups][h][w]   input k's channel group group_id
 */
#include "layers/route.h"

#include <string.h>

#include "backend/cpu/dnnl_conv.h"

/* Below this many values a parallel region costs more than it saves. */
#define ROUTE_PARALLEL_MIN 65536

static void route_forward(Layer *l, const StepContext *ctx)
{
    const Route *ro = l->priv;
    size_t out_sample = shape_size(l->out_shape);
    int batch = ctx->batch;
#pragma omp parallel for schedule(static) if (batch * out_sample > ROUTE_PARALLEL_MIN)
    for (int b = 0; b < batch; b++) {
        float *dst = l->out + b * out_sample;
        for (int k = 0; k < l->n_inputs; k++) {
            const size_t n = route_part(ro, k);
            memcpy(dst, l->in[k] + b * ro->sizes[k] + ro->group_id * n, n * sizeof *dst);
            dst += n;
        }
    }
}

static void route_backward(Layer *l, const StepContext *ctx)
{
    const Route *ro = l->priv;
    size_t out_sample = shape_size(l->out_shape);
    int batch = ctx->batch;
    size_t offset = 0;
    for (int k = 0; k < l->n_inputs; k++) {
        const size_t n = route_part(ro, k);
        float *in_delta = l->in_delta[k];
        if (in_delta) {
            /* Two listed entries may name the same layer: the inputs go one at a time. */
#pragma omp parallel for schedule(static) if (batch * out_sample > ROUTE_PARALLEL_MIN)
            for (int b = 0; b < batch; b++) {
                float *dst = in_delta + b * ro->sizes[k] + ro->group_id * n;
                const float *src = l->delta + b * out_sample + offset;
                for (size_t i = 0; i < n; i++)
                    dst[i] += src[i];
            }
        }
        offset += n;
    }
}

/* In nChw8c a sample's channel blocks follow each other as its channels do in NCHW: inputs of
 * whole blocks concatenate in it as they are, all with the output (LayerKernels.layout); so do
 * channel groups of whole blocks. */
static int route_layout(const Layer *l, int k)
{
    (void)k;
    for (int i = 0; i < l->n_inputs; i++)
        if (route_part(l->priv, i) / ((size_t)l->out_shape.h * l->out_shape.w) % DNNL_LANES)
            return LAYOUT_PLAIN;
    return LAYOUT_TIED;
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_route_kernels = {
    .layout = route_layout,
    .forward = route_forward,
    .backward = route_backward,
};
