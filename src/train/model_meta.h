/* What a checkpoint records besides the tensors: the run's seed and progress, the class names,
 * the last evaluation and a text model's vocabulary. The trainer updates it; model/model_io.h
 * writes and reads it. */
#ifndef CDL_MODEL_META_H
#define CDL_MODEL_META_H

#include <stdint.h>

#include "data/text_vocab.h"

typedef struct ModelMeta {
    uint64_t seed;
    uint64_t step;   /* optimizer steps taken */
    int epochs_done; /* whole epochs finished (informational) */
    int steps_per_epoch;
    int epochs_planned; /* total epochs of the run that wrote it (for --resume) */
    char **names;       /* class names (may be NULL) */
    int n_names;
    double valid_accuracy, valid_loss; /* last evaluation (-1 when none) */
    char data_path[4096];              /* the .data file the run trained on ("" when unknown) */
    TextVocab vocab; /* a text model's tokens (header "vocab": text_vocab_to_string); n = 0 else */
} ModelMeta;

/* Frees meta->names and meta->vocab and leaves both empty. */
void model_meta_free(ModelMeta *meta);

#endif
