/* What a checkpoint records besides the tensors: the run's seed and progress, the class names,
 * the last evaluation and a text model's vocabulary. The trainer updates it; model/model_io.h
 * writes and reads it. */
#ifndef CDL_MODEL_META_H
#define CDL_MODEL_META_H

#include <stddef.h>
#include <stdint.h>

#include "data/text_vocab.h"
#include "util/error.h"

/* The training data a checkpoint was written with, which a resumed run compares with its own. */
typedef struct DataPrint {
    uint64_t train, valid; /* samples of each set (a text's: tokens) */
    uint64_t fingerprint;  /* source_fingerprint or text_data_fingerprint; 0: not recorded */
} DataPrint;

typedef struct ModelMeta {
    uint64_t seed;
    uint64_t step;   /* optimizer steps taken (in steps of the run that wrote it) */
    int epochs_done; /* whole epochs finished */
    int steps_per_epoch;
    /* Progress in samples, which means the same at any rank count or batch (train/resume.h):
     * samples taken by all ranks together since the run began, and of them in the epoch under
     * way (0 at an epoch's end); global_batch is the samples of one step (batch x ranks), 0 in
     * checkpoints written before cdl recorded these. */
    uint64_t samples_seen, samples_in_epoch;
    int global_batch;
    DataPrint data;
    int epochs_planned; /* total epochs of the run that wrote it (for --resume) */
    char **names;       /* class names (may be NULL) */
    int n_names;
    double valid_accuracy, valid_loss; /* last evaluation (-1 when none) */
    char data_path[4096];              /* the .data file the run trained on ("" when unknown) */
    TextVocab vocab; /* a text model's tokens (header "vocab": text_vocab_to_string); n = 0 else */
} ModelMeta;

/* CDL_OK when names [n] (a dataset's classes, in label order) are the classes the model was
 * trained on (meta's, the same strings in the same order), or when meta records none (a
 * checkpoint written without a dataset). Otherwise CDL_EUSAGE: "DATA: its N classes (a, b, ...)
 * are not the M classes MODEL was trained on (x, y, ...): the first difference is class K ('b'
 * here, 'y' there)", each list cut to its first and last few names when long; callers append
 * what to do. */
int model_meta_check_names(const ModelMeta *meta, char *const *names, int n, const char *model,
                           const char *data, Error *e);

/* The dataset path to open for a checkpoint at checkpoint_path whose meta records data_path:
 * the recorded path (absolute since cdl writes it so), or, when a relative one (an older
 * checkpoint's, as typed) does not exist from the current directory, that path taken from the
 * checkpoint's directory if it exists there. */
void model_meta_find_data(const ModelMeta *meta, const char *checkpoint_path, char *out,
                          size_t size);

/* Frees meta->names and meta->vocab and leaves both empty. */
void model_meta_free(ModelMeta *meta);

#endif
