/* Fine-tuning: starting a net from another model's tensors wherever its layers match, so that a
 * changed head (or any changed layer) keeps its fresh initialisation while the rest is loaded. */
#ifndef CDL_FINETUNE_H
#define CDL_FINETUNE_H

#include "core/net.h"

/* What a partial load did. */
typedef struct WeightsMatch {
    int loaded;  /* layers whose tensors were copied */
    int skipped; /* layers with tensors that kept their initial values */
    /* malloc'd, "" when none: "7 [connected] (shape 5x96 vs 10x96), 8 [convolutional] (not in
     * the base: it has 8 layers)"; shapes read cfg vs base. */
    char *skipped_list;
    int head_loaded; /* the last layer with tensors (the head) was loaded */
    /* finetune_load_weights: the base checkpoint's class names when its head was loaded
     * (malloc'd, NULL and 0 else): the classes the loaded head tells apart */
    char **names;
    int n_names;
} WeightsMatch;

/* Copies from src into dst the tensors (parameters and running statistics) of every layer
 * whose index and type are the same in both and whose tensors have the same names and shapes
 * (the shapes `cdl export npy` writes); dst's other layers keep their values. Layers without
 * tensors count neither as loaded nor as skipped. m is overwritten; free with
 * weights_match_free, even after a failure (only out of memory). */
int finetune_copy_matching(Net *dst, const Net *src, WeightsMatch *m, Error *e);

/* finetune_copy_matching from the cdl checkpoint at path. Fails with CDL_EUSAGE "PATH: its
 * architecture differs from the cfg: no layer matches (skipped layers ...)" when nothing could
 * be loaded. (darknet .weights hold no shapes to match layers by: model/darknet_weights.h loads
 * them into the whole net.) */
int finetune_load_weights(Net *net, const char *path, WeightsMatch *m, Error *e);

void weights_match_free(WeightsMatch *m);

/* The tensors of a net's head (its last layer with tensors: the layer whose outputs are the
 * classes), set aside while weights are loaded so that a new head keeps its initialisation. */
typedef struct HeadValues {
    int layer;   /* the head's index */
    float *data; /* [count] its tensors, one after the other */
    size_t count;
} HeadValues;

/* Copies the head's tensors into h. CDL_EUSAGE when no layer has tensors. */
int finetune_head_save(const Net *net, HeadValues *h, Error *e);
/* Copies h back into the head, and frees h. */
void finetune_head_restore(Net *net, HeadValues *h);

/* "5x96": dims[0..n_dims) as the skipped lists write shapes ("" for a scalar). */
void weights_shape_text(const int64_t *dims, int n_dims, char *out, size_t size);

#endif
