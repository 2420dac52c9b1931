/* [yolo]'s CPU kernels (layers/yolo.c has its meaning, layers/yolo_loss.c its loss): the
 * logistic outputs (none with new_coords), the loss on them, and the delta into the input's
 * gradient.
 *
 *   in, out, Yolo.delta [batch][n_mask][classes + 5][h][w] */
#include "layers/yolo.h"

#include <string.h>

#include "backend/cpu/activation.h"
#include "layers/yolo_loss.h"

static void yolo_forward(Layer *l, const StepContext *ctx)
{
    Yolo *yo = l->priv;
    const int w = l->out_shape.w, h = l->out_shape.h;
    const size_t stride = (size_t)w * h, entries = (size_t)(yo->classes + 5) * stride;
    const size_t sample = shape_size(l->out_shape);
    memcpy(l->out, l->in[0], (size_t)ctx->batch * sample * sizeof *l->out);
    for (int b = 0; b < ctx->batch; b++)
        for (int n = 0; n < yo->n_mask; n++) {
            float *x = l->out + b * sample + n * entries;
            if (!yo->new_coords) {
                activation_forward(x, x, 2 * stride, CDL_ACT_LOGISTIC);
                activation_forward(x + 4 * stride, x + 4 * stride, entries - 4 * stride,
                                   CDL_ACT_LOGISTIC);
            }
            for (size_t k = 0; yo->scale_x_y != 1.0f && k < 2 * stride; k++)
                x[k] = x[k] * yo->scale_x_y - 0.5f * (yo->scale_x_y - 1);
        }
    if (ctx->truth)
        *ctx->loss += (float)(yolo_loss(yo, l->out, yo->delta, ctx->truth, ctx->truth_boxes,
                                        ctx->batch, w, h) /
                              ctx->loss_divisor);
}

/* dL/d(in) = -delta / loss_divisor: darknet adds its delta (a negative gradient) to the
 * convolution's; cdl's loss is the mean over the mini-batch. */
static void yolo_backward(Layer *l, const StepContext *ctx)
{
    const Yolo *yo = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta || !ctx->truth)
        return;
    const float k = -ctx->grad_scale / ctx->loss_divisor;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    for (size_t i = 0; i < n; i++)
        in_delta[i] += k * yo->delta[i];
}

static int yolo_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Yolo *yo = l->priv;
    yo->delta = layer_state_floats(st, (size_t)batch * shape_size(l->out_shape));
    return CDL_OK;
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_yolo_kernels = {
    .resize = yolo_resize,
    .forward = yolo_forward,
    .backward = yolo_backward,
};
