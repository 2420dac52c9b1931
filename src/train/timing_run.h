/* What the timing runs (cdl_model_bench, cdl_model_profile) share: a training net sized for
 * a chosen batch, one batch of random images and labels (random tokens for a sequence net; no
 * dataset needed), and the training step on it. The data come from a fixed seed, so every run
 * times the same work. */
#ifndef CDL_TIMING_RUN_H
#define CDL_TIMING_RUN_H

#include "core/net.h"
#include "data/dataset.h"
#include "train/optimizer.h"
#include "train/trainer.h"

typedef struct TimingRun {
    Net *net;       /* borrowed: built with gradients, in training mode, activations sized */
    Optimizer *opt; /* borrowed: its optimizer state */
    Dataset data;   /* [net.hyper.batch] random images and labels: one optimizer batch */
    int *order;     /* [data.n] the identity sample order */
    /* Sequence nets instead: random token ids below the vocabulary, drawn as training windows. */
    TokenStream tokens;
    /* A sequence-to-sequence net's: pairs of a whole source and a target filling its rows, over
     * those tokens */
    TextPairs pairs;
    TextBatches text;
    TrainSource text_source; /* their windows as the trainer draws them */
    DatasetBatches images;   /* image nets: data in that order, as the trainer fills it */
    StepRunner runner;       /* eager steps, or CUDA graphs after the first */
    /* The first failure of a step other than a loss that is not finite (which the loss tells):
     * a capture refused, say. CDL_OK: none. */
    int status;
    Error error;
} TimingRun;

/* Sets net (built with gradients) and opt up for timing: batch > 0 makes every step `batch`
 * images in one mini-batch; 0 keeps the model's batch and subdivisions. cuda_graph: the steps
 * after the first run as CUDA graphs (StepRunner; CDL_EUSAGE where the net's cannot). t is zeroed
 * first; free it with timing_run_free even on failure (net and opt stay the caller's). */
int timing_run_setup(TimingRun *t, Net *net, Optimizer *opt, long batch, int cuda_graph, Error *e);
/* One training step (forward, backward, optimizer update at the schedule's rate) on the random
 * batch, as trainer_step; returns the loss (a failure also goes to t->status). Allocates
 * nothing. */
float timing_run_step(TimingRun *t);
void timing_run_free(TimingRun *t);

#endif
