/* [region]'s CPU kernels (layers/region.c has its meaning, layers/region_loss.c its loss): the
 * logistic and softmax outputs, the loss on them, and the gradient into the input.
 *
 *   in, out, Region.delta [batch][num][classes + 5][h][w] */
#include "layers/region.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/activation.h"
#include "layers/region_loss.h"

/* darknet's softmax of n values stride apart (exp in double, as its softmax()). */
static void softmax_strided(float *x, int n, size_t stride)
{
    float largest = -FLT_MAX, sum = 0;
    for (int k = 0; k < n; k++)
        largest = x[k * stride] > largest ? x[k * stride] : largest;
    for (int k = 0; k < n; k++) {
        const float e = (float)exp(x[k * stride] - largest);
        sum += e;
        x[k * stride] = e;
    }
    for (int k = 0; k < n; k++)
        x[k * stride] /= sum;
}

static void region_forward(Layer *l, const StepContext *ctx)
{
    Region *r = l->priv;
    const int w = l->out_shape.w, h = l->out_shape.h;
    const size_t stride = (size_t)w * h, entries = (size_t)(r->classes + 5) * stride;
    const size_t sample = shape_size(l->out_shape);
    memcpy(l->out, l->in[0], (size_t)ctx->batch * sample * sizeof *l->out);
    for (int b = 0; b < ctx->batch; b++)
        for (int n = 0; n < r->num; n++) {
            float *x = l->out + b * sample + n * entries;
            activation_forward(x, x, 2 * stride, CDL_ACT_LOGISTIC);
            if (!r->background)
                activation_forward(x + 4 * stride, x + 4 * stride, stride, CDL_ACT_LOGISTIC);
            if (!r->softmax)
                activation_forward(x + 5 * stride, x + 5 * stride, entries - 5 * stride,
                                   CDL_ACT_LOGISTIC);
            else /* over the classes, and the background score before them with background=1 */
                for (size_t p = 0; p < stride; p++)
                    softmax_strided(x + (5 - r->background) * stride + p,
                                    r->classes + r->background, stride);
        }
    if (ctx->truth)
        *ctx->loss += (float)(region_loss(r, l->out, r->delta, ctx->truth, ctx->truth_boxes,
                                          ctx->batch, w, h, ctx->images_seen) /
                              ctx->loss_divisor);
}

/* dL/d(in) = -delta / loss_divisor, through the logistic's derivative on x, y and objectness (as
 * darknet's GPU backward; w, h, the classes' and background=1's entry 4 deltas are already with
 * respect to the input). */
static void region_backward(Layer *l, const StepContext *ctx)
{
    const Region *r = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta || !ctx->truth)
        return;
    const float k = -ctx->grad_scale / ctx->loss_divisor;
    const size_t stride = (size_t)l->out_shape.w * l->out_shape.h;
    const size_t entries = (size_t)(r->classes + 5) * stride;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    for (size_t i = 0; i < n; i++) {
        const size_t entry = i % entries / stride;
        const float y = l->out[i];
        const float logistic = entry < 2 || (entry == 4 && !r->background) ? y * (1 - y) : 1;
        in_delta[i] += k * r->delta[i] * logistic;
    }
}

static int region_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Region *r = l->priv;
    r->delta = layer_state_floats(st, (size_t)batch * shape_size(l->out_shape));
    return CDL_OK;
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_region_kernels = {
    .resize = region_resize,
    .forward = region_forward,
    .backward = region_backward,
};
