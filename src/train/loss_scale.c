/* fp16's dynamic loss scaling (loss_scale.h). */
#include "train/loss_scale.h"

#include <math.h>

LossScale loss_scale_start(GemmPrecision p)
{
    return p == GEMM_FP16 ? (LossScale){.enabled = 1, .scale = LOSS_SCALE_INIT}
                          : (LossScale){.scale = 1.0f};
}

int loss_scale_unscale(LossScale *s, Net *net)
{
    if (!s->enabled)
        return 1;
    const int finite =
        net->backend->slab->unscale(net->grads, net->n_params, 1.0f / s->scale, &net->exec);
    if (finite >= 0)
        loss_scale_record(s, finite);
    return finite;
}

void loss_scale_record(LossScale *s, int finite)
{
    if (!finite) {
        s->scale = fmaxf(s->scale * 0.5f, 1.0f);
        s->good_steps = 0;
        s->skipped++;
    } else if (++s->good_steps == LOSS_SCALE_GROWTH_INTERVAL) {
        s->scale = fminf(s->scale * 2.0f, 0x1p24f);
        s->good_steps = 0;
    }
}
