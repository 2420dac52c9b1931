/* What a cdl_model handle holds, shared by the files that implement src/cdl.h (internal: not
 * part of the public API, and not for src/cli). */
#ifndef CDL_MODEL_H
#define CDL_MODEL_H

#include "cdl.h"
#include "data/augment.h"
#include "data/data_config.h"
#include "model/model_io.h"
#include "train/net_keys.h"
#include "train/optimizer.h"
#include "util/error.h"
#include "util/mem_limit.h"

struct cdl_model {
    Net net;
    ModelMeta meta; /* a checkpoint's class names, vocabulary and progress; zero for a cfg */
    Optimizer opt;  /* opened for_training: the checkpoint's state, or a fresh one */
    int capacity;   /* samples the activations hold (0: none allocated) */
    AugmentScratch scratch; /* preprocessing workspace */
    int skip_crop;          /* cdl_model_skip_crop: eval's preprocessing without its crop */
    /* the checkpoint it was opened from, or the one whose head (and class names) --weights
     * loaded into a cfg: for messages */
    char origin[4096];
};

/* Copies e's message into err (when err_size > 0) and returns e's code. */
int api_report(const Error *e, char *err, size_t err_size);
/* *id = the token id of the mark (TEXT_PAIR_BOS or _EOS) in the model's vocabulary. */
int api_mark_id(const cdl_model *model, const char *mark, int *id, Error *e);
/* Loads a cfg's net from the weights at path (src/cdl_weights.c: a cdl checkpoint's matching
 * layers, safetensors under torchvision's names, else darknet .weights); note receives the
 * line saying what was loaded and skipped. head_names (may be NULL) receives, in names and
 * n_names, the class names of a checkpoint whose head (last layer with tensors) was loaded:
 * the classes the net now tells apart (none else); free with model_meta_free. new_head: the
 * head (the last layer with tensors) keeps the values it had before (its initialisation),
 * whatever the file holds, and no names are returned; note says so. */
int api_load_weights(Net *net, const char *path, int new_head, char *note, size_t note_size,
                     ModelMeta *head_names, Error *e);
/* The class names of a head api_load_weights loaded (head) against the dataset's (names of
 * data_path, n): CDL_EUSAGE naming both lists and the ways out (a new head, other data) when
 * they differ; CDL_OK when they agree or no head was loaded. */
int api_check_head_names(const ModelMeta *head, char *const *names, int n, const char *path,
                         const char *data_path, Error *e);
/* CDL_OK for a detector (a net with [yolo] or [region] layers), else CDL_EUSAGE "MODEL: not a
 * detector (it has no [yolo] or [region] layer)" (src/cdl_detect.c). */
int api_require_detector(const cdl_model *model, Error *e);
/* Sizes the model's activations for at least n samples (allocates when n > capacity). */
int api_model_reserve(cdl_model *model, int n, Error *e);
/* Readies a model opened for inference (CDL_EUSAGE otherwise) for timing forwards of batch
 * samples (0: the cfg's mini-batch): activations sized, inference mode, random inputs in [0, 1)
 * (token ids for a sequence net) from a fixed seed in its input (src/cdl_quantize.c). */
int api_inference_setup(cdl_model *model, int batch, Error *e);
/* The .data file a run of cfg_path trains on by default: "cfg/x.cfg" -> "cfg/x.data"
 * (src/cdl_session.c). */
void api_default_data_path(const char *cfg_path, char *out, size_t size);
/* A sequence net must train on text (dc type=text), and its vocab, outputs and inputs agree with
 * the text's vocab_n tokens; CDL_OK for an image net. Errors start with data_path
 * (src/cdl_session.c). */
int api_check_text_net(const Net *net, const char *data_path, const DataConfig *dc, int vocab_n,
                       Error *e);

/* *copy = net built again from its cfg (with its vocabulary) at where, with gradients when
 * want_grads and each layer in net's layer's precision, not resized: the net whose plan a step
 * there allocates (the GPU's keeps 16-bit slots under bf16 and fp16, core/net_storage.h). */
int api_net_copy_on(const Net *net, NetPlacement where, int want_grads, Net *copy, Error *e);

/* What a training step holds, in bytes, as train allocates it (cdl_check_result's figures). */
typedef struct ApiStepMemory {
    size_t params, grads, optimizer, activations, total;
    size_t scratch; /* of activations, the layers' shared workspace */
    const char *optimizer_name;
} ApiStepMemory;
/* The step of a net not yet resized for training, in passes of pass samples (src/cdl_memory.c). */
int api_step_memory(Net *net, int pass, ApiStepMemory *m, Error *e);
/* "the cgroup's memory.max (PATH) is 1.5 GiB and 1.2 GiB of it is in use" into out. */
void api_memory_limit_text(const MemLimit *limit, char *out, size_t size);
/* CDL_ERUNTIME "WHERE: a training step needs X (...), Y of it still to take, but only Z is left:
 * LIMIT; ..." when what m has not allocated yet (all but the parameters) is more than limit
 * leaves. */
int api_check_step_fits(const ApiStepMemory *m, const MemLimit *limit, const char *where, Error *e);

#endif
