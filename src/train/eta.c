/* The estimated time left of a run: a bias-corrected moving average of the step time. */
#include "train/eta.h"

void eta_init(Eta *t)
{
    *t = (Eta){0, 0, 0, 0};
}

void eta_add(Eta *t, double step_s)
{
    if (t->seen++ < ETA_WARMUP_STEPS) {
        t->warmup_s += step_s;
        return;
    }
    t->ema_s = ETA_DECAY * t->ema_s + (1 - ETA_DECAY) * step_s;
    t->weight = ETA_DECAY * t->weight + (1 - ETA_DECAY);
}

double eta_step_s(const Eta *t)
{
    if (t->weight > 0)
        return t->ema_s / t->weight;
    return t->seen ? t->warmup_s / (double)t->seen : 0;
}

double eta_left_s(const Eta *t, uint64_t steps_left)
{
    return eta_step_s(t) * (double)steps_left;
}
