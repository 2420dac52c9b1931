/* Freeing a ModelMeta (see model_meta.h). */
#include "train/model_meta.h"

#include <stdlib.h>

void model_meta_free(ModelMeta *meta)
{
    for (int i = 0; i < meta->n_names; i++)
        free(meta->names[i]);
    free(meta->names);
    meta->names = NULL;
    meta->n_names = 0;
    text_vocab_free(&meta->vocab);
}
