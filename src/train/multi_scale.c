/* The input sizes of multi-scale training (train/multi_scale.h). */
#include "train/multi_scale.h"

#include <math.h>

#include "util/rng.h"

/* The side AlexeyAB's darknet gives a cfg side at scale s: round(s side / 32 + 1) x 32. */
static int scaled_side(float s, int side)
{
    return (int)lround((double)s * side / MULTI_SCALE_STEP_PX + 1) * MULTI_SCALE_STEP_PX;
}

static int at_least(int a, int b)
{
    return a > b ? a : b;
}

void multi_scale_init(MultiScale *ms, const Net *net, uint64_t seed)
{
    *ms = (MultiScale){.rule = MULTI_SCALE_OFF,
                       .base_w = net->in_shape.w,
                       .base_h = net->in_shape.h,
                       .max_w = net->in_shape.w,
                       .max_h = net->in_shape.h,
                       .seed = seed};
    float random = 0, resize = 0;
    for (int i = 0; i < net->n_layers; i++) /* the last detection layer's, as darknet reads */
        if (net->layers[i].type->multi_scale)
            net->layers[i].type->multi_scale(&net->layers[i], &random, &resize);
    if (random == 0)
        return;
    if (random == 1 && resize == 0) {
        ms->rule = MULTI_SCALE_PJREDDIE;
        ms->max_w = at_least(608, ms->base_w);
        ms->max_h = at_least(608, ms->base_h);
        return;
    }
    ms->rule = MULTI_SCALE_ALEXEYAB;
    ms->factor = resize > 1 ? resize : random > 1 ? random : 1.4f;
    ms->max_w = at_least(scaled_side(ms->factor, ms->base_w), ms->base_w);
    ms->max_h = at_least(scaled_side(ms->factor, ms->base_h), ms->base_h);
}

void multi_scale_size(const MultiScale *ms, uint64_t step, int *w, int *h)
{
    const uint64_t period = step / MULTI_SCALE_EVERY, first = period * MULTI_SCALE_EVERY;
    Rng rng;
    rng_seed(&rng, ms->seed, 0x5ca1e000u + period);
    *w = ms->base_w;
    *h = ms->base_h;
    if (ms->rule == MULTI_SCALE_PJREDDIE) {
        const int side = first + 200 > ms->total_steps
                             ? 608
                             : (int)(rng_below(&rng, 10) + 10) * MULTI_SCALE_STEP_PX;
        *w = *h = side;
    } else if (ms->rule == MULTI_SCALE_ALEXEYAB) {
        if (period == 0 || first + 100 > ms->total_steps) {
            *w = ms->max_w;
            *h = ms->max_h;
            return;
        }
        float s = 1 + rng_uniform(&rng) * (ms->factor - 1);
        if (rng_below(&rng, 2))
            s = 1 / s;
        *w = at_least(scaled_side(s, ms->base_w), MULTI_SCALE_STEP_PX);
        *h = at_least(scaled_side(s, ms->base_h), MULTI_SCALE_STEP_PX);
        if (s < 1 && (*w > ms->base_w || *h > ms->base_h)) {
            *w = ms->base_w;
            *h = ms->base_h;
        }
    }
}

void multi_scale_batch_size(const void *ctx, int epoch, int k, int *w, int *h)
{
    const MultiScale *ms = ctx;
    const uint64_t step =
        (uint64_t)epoch * (uint64_t)ms->steps_per_epoch + (uint64_t)(k / ms->passes_per_step);
    multi_scale_size(ms, step, w, h);
}
