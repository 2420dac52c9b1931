/* darknet's multi-scale training (random=1 on the net's last [yolo] or [region]): every 10 steps
 * the net trains at another input size, drawn from the run's seed and the step alone, so that a
 * resumed run draws the sizes an uninterrupted one draws. Two rules, as the two darknets draw:
 *
 *   pjreddie's (random=1, no resize=): a square side (10..19) x 32, 320 to 608 pixels, whatever the
 *     cfg's size; 608 for the 10 steps from a step past total_steps - 200.
 *   AlexeyAB's (resize=F, or random=F with F > 1; F 1.4 when random=1 comes with resize=1): a
 *     scale s uniform in [1, F], inverted half the time, and each side round(s side / 32 + 1) x 32
 *     (the cfg's size where s < 1 would give more); the largest, round(F side / 32 + 1) x 32, for
 *     the run's first 10 steps and the 10 from a step past total_steps - 100.
 * darknet decides at the first of the 10 steps, as here, but draws with rand() and counts the 10
 * from its own start, so a resumed darknet run draws anew.
 *
 * The memory is planned for the largest size (MultiScale.max_w, max_h; core/net.h net_set_size);
 * evaluation, checkpoints and inference keep the cfg's size. */
#ifndef CDL_MULTI_SCALE_H
#define CDL_MULTI_SCALE_H

#include <stdint.h>

#include "core/net.h"

typedef enum { MULTI_SCALE_OFF, MULTI_SCALE_PJREDDIE, MULTI_SCALE_ALEXEYAB } MultiScaleRule;

enum { MULTI_SCALE_EVERY = 10, MULTI_SCALE_STEP_PX = 32 };

typedef struct MultiScale {
    MultiScaleRule rule;
    float factor;         /* AlexeyAB's F */
    int base_w, base_h;   /* the cfg's size */
    int max_w, max_h;     /* the largest size the run takes (the cfg's included) */
    uint64_t seed;        /* the run's */
    uint64_t total_steps; /* [net] max_batches, else the run's steps: the last ones take the
                             largest size */
    int steps_per_epoch;  /* the loader's mini-batch k of an epoch belongs to step */
    int passes_per_step;  /* epoch * steps_per_epoch + k / passes_per_step */
} MultiScale;

/* Reads the rule from the net's last detection layer (LayerType.multi_scale) at the net's size
 * (the cfg's: call it before any net_set_size). MULTI_SCALE_OFF where no layer asks for it. */
void multi_scale_init(MultiScale *ms, const Net *net, uint64_t seed);
/* The size, width *w and height *h, of step (0-based) of the run. */
void multi_scale_size(const MultiScale *ms, uint64_t step, int *w, int *h);
/* The size of the loader's mini-batch k of epoch (LoaderOptions.batch_size; ctx a MultiScale). */
void multi_scale_batch_size(const void *ctx, int epoch, int k, int *w, int *h);

#endif
