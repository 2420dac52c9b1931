/* The time left of a run, from a smoothed step time: an exponential moving average of the
 * seconds per step that ignores the run's first warm-up steps (allocation, page faults and the
 * loader filling its queue make them several times slower than the rest). */
#ifndef CDL_ETA_H
#define CDL_ETA_H

#include <stdint.h>

enum { ETA_WARMUP_STEPS = 3 };

typedef struct Eta {
    uint64_t seen;   /* step times fed so far */
    double warmup_s; /* their sum during the warm-up */
    double ema_s;    /* biased moving average of the later step times */
    double weight;   /* 1 - decay^n: divides ema_s into an unbiased mean (Adam's correction) */
} Eta;

/* decay per step: 0.98 averages over about the last 50 steps. */
#define ETA_DECAY 0.98

void eta_init(Eta *t);
/* One step took step_s seconds. */
void eta_add(Eta *t, double step_s);
/* The smoothed seconds per step (during the warm-up, the mean so far; 0 before any step). */
double eta_step_s(const Eta *t);
/* Seconds for steps_left more steps. */
double eta_left_s(const Eta *t, uint64_t steps_left);

#endif
