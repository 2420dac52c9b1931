/* Checkpoints of a whole model: the cfg text, the tensor table, class names, training
 * progress and the slabs (parameters, state and, when training, SGD velocity), stored
 * in the checkpoint container (io/checkpoint_file.h). */
#ifndef CDL_MODEL_IO_H
#define CDL_MODEL_IO_H

#include <stdint.h>

#include "core/net.h"

/* What a checkpoint records besides the tensors. */
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
} ModelMeta;

/* Writes atomically. velocity may be NULL (then a resume restarts momentum at 0). */
int model_save(const char *path, const Net *net, const float *velocity, const ModelMeta *meta,
               Error *e);

/* Rebuilds the net from the checkpoint's own cfg and loads its tensors. With want_grads
 * (training) *velocity receives a malloc'd copy of the saved velocity (zeros if none);
 * pass velocity NULL otherwise. meta->names is malloc'd: free with model_meta_free. */
int model_load(const char *path, Net *net, int want_grads, float **velocity, ModelMeta *meta,
               Error *e);

void model_meta_free(ModelMeta *meta);

#endif
