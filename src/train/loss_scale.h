/* fp16's dynamic loss scaling, as torch.cuda.amp.GradScaler: in precision=fp16 training the loss
 * layers' input gradients are multiplied by the scale (Net.grad_scale, StepContext.grad_scale), so
 * that the gradients the products take as fp16 operands stay above fp16's smallest values; after
 * the backward passes the gradients are checked and divided by it before the update. A step whose
 * gradients are not finite updates nothing and halves the scale; LOSS_SCALE_GROWTH_INTERVAL
 * finite steps in a row double it. Its state is the optimizer's (Optimizer.loss_scale), saved in
 * checkpoints, so a resumed run goes on with the same scale. */
#ifndef CDL_LOSS_SCALE_H
#define CDL_LOSS_SCALE_H

#include <stdint.h>

#include "core/net.h"

#define LOSS_SCALE_INIT 65536.0f /* torch's init_scale, 2^16 */
#define LOSS_SCALE_GROWTH_INTERVAL 2000

typedef struct LossScale {
    int enabled;      /* 1 in precision=fp16 training */
    float scale;      /* the factor of the loss's gradients; 1 when not enabled */
    int good_steps;   /* finite steps since the scale last changed */
    uint64_t skipped; /* steps whose update was skipped, over the whole run (resumes included) */
} LossScale;

/* The scaling of a run in precision p: enabled at LOSS_SCALE_INIT in GEMM_FP16, off otherwise. */
LossScale loss_scale_start(GemmPrecision p);

/* After the backward passes of a step (gradients summed over the ranks): when net's gradients are
 * finite, divides them by the scale, counts the step, doubles the scale after
 * LOSS_SCALE_GROWTH_INTERVAL of them, and returns 1 (update); otherwise zeroes them, halves the
 * scale, counts the step skipped and returns 0 (no update). Not enabled: returns 1 at once. -1:
 * the backend decides on the device without waiting (SlabKernels.unscale), where the update
 * reads the outcome; the bookkeeping then waits for the step's outcome (loss_scale_record). */
int loss_scale_unscale(LossScale *s, Net *net);
/* loss_scale_unscale's bookkeeping of a step whose gradients were finite or not, for a step whose
 * unscaling decided on a device (the outcome known with the step's losses). */
void loss_scale_record(LossScale *s, int finite);

#endif
