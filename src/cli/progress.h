/* Training output: a progress bar on a terminal, plain lines otherwise, and an
 * optional JSON Lines log; plugs into the trainer's callbacks. */
#ifndef CDL_PROGRESS_H
#define CDL_PROGRESS_H

#include <stdio.h>

#include "train/trainer.h"

typedef struct Progress {
    int tty;       /* draw a bar (stderr is a terminal) */
    int log_every; /* plain line / JSONL record every N steps */
    int epochs;    /* total, for display */
    FILE *jsonl;   /* NULL: no log */
    char **names;  /* class names for per-epoch output (may be NULL) */
    double last_draw_s;
} Progress;

void progress_on_step(void *ctx, const StepReport *r);
void progress_on_epoch(void *ctx, const EpochReport *r);

#endif
