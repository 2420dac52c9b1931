/* [embedding]'s configuration, shared by its meaning (layers/embedding.c), its kernels
 * (backend/cpu/embedding.c, cuda/embedding.c) and the layers that use its weights ([linear]
 * tie=1). */
#ifndef CDL_EMBEDDING_H
#define CDL_EMBEDDING_H

#include "core/layer.h"

/* Which rows of the net input an [embedding] reads (part=): a sequence-to-sequence net's input
 * row is the source's ids, then the target's ([net] source=). */
typedef enum EmbeddingPart { EMBEDDING_ALL, EMBEDDING_SOURCE, EMBEDDING_TARGET } EmbeddingPart;

typedef struct Embedding {
    /* [vocab][C]: the layer's own weights, or with share= those of the [embedding] it names */
    const Param *weights;
    int first_row;  /* the net input's row that gives output row 0: 0, or S for part=target */
    int input_rows; /* the net input's rows per sample (source + seq) */
} Embedding;

/* The weights [vocab][C] that an [embedding] layer reads. */
static inline const Param *embedding_weights(const Layer *l)
{
    return ((const Embedding *)l->priv)->weights;
}

#endif
