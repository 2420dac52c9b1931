/* The [net] keys of training rather than of the net: the optimizer, the learning-rate schedule and
 * the run's length (defaults in docs/config.md). The net keeps its cfg (Net.cfg); whoever trains
 * reads these from it (train_settings_read), and net_build checks them with the net's own keys
 * (net_read_foreign_keys, defined in train/net_keys.c). */
#ifndef CDL_TRAIN_SETTINGS_H
#define CDL_TRAIN_SETTINGS_H

#include <stdint.h>

#include "io/cfg.h"
#include "util/error.h"

typedef enum LrPolicy {
    CDL_LR_CONSTANT,
    CDL_LR_STEP,
    CDL_LR_STEPS,
    CDL_LR_EXP,
    CDL_LR_POLY,
    CDL_LR_COSINE,
} LrPolicy;

/* The [net] optimizer= values; train/optimizer.h implements them. */
typedef enum OptimizerKind {
    CDL_OPT_SGD,
    CDL_OPT_ADAM,
    CDL_OPT_ADAMW,
} OptimizerKind;

#define TRAIN_MAX_STEPS 32

typedef struct TrainSettings {
    float learning_rate, momentum, decay;
    LrPolicy policy;
    int step;    /* policy=step: multiply by scale every `step` batches */
    float scale; /* policy=step */
    float gamma; /* policy=exp: lr * gamma^t */
    float power; /* policy=poly: lr * (1 - t/max_batches)^power */
    int steps[TRAIN_MAX_STEPS];
    float scales[TRAIN_MAX_STEPS];
    int n_steps;
    int burn_in;  /* lr * (t/burn_in)^4 for t < burn_in, as darknet */
    int warmup;   /* lr * (t+1)/warmup for t < warmup, on top of the policy */
    float lr_min; /* policy=cosine: the rate reached at the last step */
    int max_batches;
    int epochs; /* default run length for `cdl train` (0: from max_batches, else 1) */
    OptimizerKind optimizer;
    int nesterov;            /* SGD: Nesterov momentum */
    float beta1, beta2, eps; /* Adam, AdamW */
    int decay_bn_bias;       /* 1: weight decay on every trainable tensor, not only weights */
    float clip_grad_norm;    /* clip the gradient's global L2 norm to this (0: off) */
    float ema;               /* decay of the weights' exponential moving average (0: off) */
} TrainSettings;

/* Reads the training keys of cfg's [net] section (its first) into *t, checking each with
 * "FILE:LINE: ..." (CDL_EUSAGE); marks them read. */
int train_settings_read(const Cfg *cfg, TrainSettings *t, Error *e);
/* Learning rate at optimizer step t (0-based) under the policy. total_steps is the run's length,
 * the span of policy=cosine when max_batches is 0 (callers that do not know it pass 0: cosine then
 * holds learning_rate). */
float train_learning_rate(const TrainSettings *h, uint64_t t, uint64_t total_steps);
/* "sgd", "adam" or "adamw". */
const char *train_optimizer_name(OptimizerKind kind);

#endif
