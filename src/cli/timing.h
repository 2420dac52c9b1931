/* What the timing commands (bench, profile) share: a training net built for a chosen
 * batch, one batch of random images and labels (random tokens for a sequence net; no dataset
 * needed), and the training step on it. Weights and data come from a fixed seed, so every run times
 * the same work. */
#ifndef CDL_TIMING_H
#define CDL_TIMING_H

#include "cli/cli.h"
#include "core/net.h"
#include "data/dataset.h"
#include "train/optimizer.h"
#include "train/trainer.h"

typedef struct TimingRun {
    Net net;       /* built with gradients, in training mode, activations sized */
    Optimizer opt; /* the cfg's optimizer state */
    Dataset data;  /* [net.hyper.batch] random images and labels: one optimizer batch */
    int *order;    /* [data.n] the identity sample order */
    /* Sequence nets instead: random token ids below the vocabulary, drawn as training windows. */
    TokenStream tokens;
    TextBatches text;
    TrainSource text_source; /* their windows as the trainer draws them */
} TimingRun;

/* Builds the net of the cfg (with a's --set overrides) or the checkpoint at path. batch > 0
 * makes every step `batch` images in one mini-batch; 0 keeps the model's batch and
 * subdivisions. t is zeroed first; free it with timing_run_free even on failure. */
int timing_run_setup(TimingRun *t, const char *path, const Args *a, long batch, Error *e);
/* One training step (forward, backward, optimizer update at the schedule's rate) on the random
 * batch, as trainer_step; returns the loss. Allocates nothing. */
float timing_run_step(TimingRun *t);
void timing_run_free(TimingRun *t);

#endif
