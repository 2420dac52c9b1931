/* Where a resumed run continues. A checkpoint's step counts steps of the run that wrote it, whose
 * global batch (batch x ranks) and dataset may differ from the resuming run's; its epochs done and
 * samples taken into the next epoch mean the same in both, so the resuming run continues from
 * them, in its own steps. */
#ifndef CDL_RESUME_H
#define CDL_RESUME_H

#include <stdint.h>

#include "train/model_meta.h"
#include "util/error.h"

typedef struct ResumePoint {
    uint64_t step;             /* the resuming run's steps already done */
    int epochs_done;           /* whole epochs done */
    uint64_t samples_in_epoch; /* samples the checkpoint took of the epoch after them */
    int epoch_restarts;        /* that epoch starts over: the data changed inside it */
} ResumePoint;

/* The point of meta (a checkpoint at path) in a run of steps_per_epoch steps of global_batch
 * samples; data_changed: the training data are not those it was written with. A checkpoint
 * written before cdl recorded samples (global_batch 0) is taken as written at this global batch.
 * A step that its epochs and samples do not account for (a damaged or edited header) is
 * CDL_EUSAGE naming both. */
int resume_point(const ModelMeta *meta, const char *path, int steps_per_epoch, int global_batch,
                 int data_changed, ResumePoint *p, Error *e);

/* What changed between then (the checkpoint's data) and now: "" when nothing did, else e.g.
 * "719 training samples (1438 then), 180 validation samples (360 then)" or "as many samples
 * as then, but not the same"; unit: "samples" or "tokens". */
void data_print_changes(const DataPrint *then, const DataPrint *now, const char *unit, char *out,
                        size_t size);

#endif
