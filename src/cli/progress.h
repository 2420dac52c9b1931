/* Training output: a progress bar on a terminal, plain lines otherwise, an optional JSON
 * Lines log and optional TensorBoard scalars; plugs into the trainer's callbacks. */
#ifndef CDL_PROGRESS_H
#define CDL_PROGRESS_H

#include <stdio.h>

#include "io/tfevents.h"
#include "train/trainer.h"

typedef struct Progress {
    int tty;       /* draw a bar (stderr is a terminal) */
    int log_every; /* plain line / JSONL record every N steps */
    int epochs;    /* total, for display */
    FILE *jsonl;   /* NULL: no log */
    char **names;  /* class names for per-epoch output (may be NULL) */
    double last_draw_s;
    /* NULL: no TensorBoard events. Logged steps get train/loss, train/lr and
     * train/images_per_s; epochs get valid/loss, valid/accuracy and valid/top5. After a
     * failed write a warning is printed and this is set to NULL (the owner closes it). */
    TfEvents *tensorboard;
    int tokens_per_sample; /* sequence nets: seq, and rates are shown in tokens/s; 0: images */
    double time_limit_s;   /* > 0: the run stops then (the ETA says so) */
} Progress;

void progress_on_step(void *ctx, const StepReport *r);
void progress_on_epoch(void *ctx, const EpochReport *r);

#endif
