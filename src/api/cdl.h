/* cdl's public C API (libcdl.a): load a model and classify images, or build a network
 * from a cfg and train it step by step. Handles are opaque, so this header does not
 * change with build flags. Functions that can fail return 0 on success, 1 for a runtime
 * failure or 2 for a usage/config error, and write a one-line message into err. */
#ifndef CDL_H
#define CDL_H

#include <stddef.h>
#include <stdint.h>

typedef struct cdl_model cdl_model;

/* ---- Opening a model (the one loading path: every command and wrapper goes through it) ---- */

/* What cdl_model_open's path is. */
enum { CDL_OPEN_ANY = 0, CDL_OPEN_CHECKPOINT = 1, CDL_OPEN_CFG = 2 };

typedef struct cdl_open_options {
    /* cfg overrides, "net.KEY=VALUE" or "LAYER.KEY=VALUE" as `--set` takes them; a cfg only
     * (a checkpoint with overrides is a usage error) */
    const char *const *overrides;
    int n_overrides;
    uint64_t seed; /* a cfg's parameter initialisation (the commands use 1) */
    /* CDL_OPEN_ANY: a checkpoint when the file starts with the checkpoint magic, else a cfg
     * (a missing file is then reported as a cfg); or force either */
    int kind;
    int batch;        /* samples the activations hold (0: none, for inspection and export) */
    int for_training; /* gradient memory and optimizer state (the checkpoint's, or fresh) */
} cdl_open_options;

/* Opens a checkpoint written by `cdl train` or builds a model from a cfg (no class names), as
 * options say; NULL options: CDL_OPEN_ANY, seed 1, batch 1, inference only. Warnings about a
 * cfg are in cdl_model_warnings. */
int cdl_model_open(const char *cfg_or_checkpoint, const cdl_open_options *options,
                   cdl_model **model, char *err, size_t err_size);
/* 1 when path names a file that starts with the checkpoint magic. */
int cdl_is_checkpoint(const char *path);
/* 1 when path names a model or weights file, by its content (its name where content cannot
 * tell): a cdl checkpoint, a cfg, an ONNX model, safetensors or darknet .weights; 0 for an
 * image, other files, and a path that does not exist. */
int cdl_is_model_file(const char *path);
/* cdl_model_open of a checkpoint, batch 1, inference only. */
int cdl_model_load(const char *path, cdl_model **model, char *err, size_t err_size);
/* cdl_model_open of a cfg with parameters initialised from seed, batch 1: for testing an
 * architecture. */
int cdl_model_from_cfg(const char *cfg_path, uint64_t seed, cdl_model **model, char *err,
                       size_t err_size);
void cdl_model_free(cdl_model *model);
/* Loads darknet .weights into a model opened from the cfg they belong to
 * (sizes are checked; batch norm then normalises as darknet's, bn_darknet=1). */
int cdl_model_load_darknet_weights(cdl_model *model, const char *weights_path, char *err,
                                   size_t err_size);

/* ---- Initial weights from a file, and safetensors (src/cdl_weights.c) ---- */

/* Loads weights into a model opened from a cfg, by file:
 *   a cdl checkpoint       the layers whose type and tensor shapes match (fine-tuning);
 *   FILE.safetensors       every tensor under torchvision's state-dict names (conv1.weight,
 *                          bn1.running_var, layer1.0.conv2.weight, features.0.0.weight, fc.bias,
 *                          ...) for the zoo's resnet, vgg and mobilenetv2 cfgs; F32, F16 and BF16
 *                          are converted to float32, num_batches_tracked is ignored. Shapes,
 *                          names and dtypes are all checked first: what does not fit is listed
 *                          and nothing is loaded (CDL_EUSAGE), except a head change (only the
 *                          last layer with parameters differs in shape: it keeps its initial
 *                          values and note says so);
 *   anything else          darknet .weights for the cfg (sizes checked; bn_darknet=1).
 * note (may be NULL when note_size is 0) receives one line saying what was loaded and
 * skipped. When a checkpoint's head (its last layer with tensors) is loaded, the model takes
 * its class names too (cdl_model_class_name; `eval` then checks them against the dataset). */
int cdl_model_load_weights(cdl_model *model, const char *path, char *note, size_t note_size,
                           char *err, size_t err_size);
/* Writes the model's tensors as a safetensors file under torchvision's names (F32, in torch's
 * state-dict order, num_batches_tracked as I64 0, __metadata__ {"format": "pt"}): what
 * `torch.nn.Module.load_state_dict(safetensors.torch.load_file(path))` takes. The same tensors
 * always give the same bytes. */
int cdl_model_export_safetensors(const cdl_model *model, const char *path, char *err,
                                 size_t err_size);

/* ---- Running a model on a GPU (src/cdl_gpu.c) ---- */

/* Moves an opened model onto CUDA device `device`: its weights, and for a model opened
 * for_training its optimizer's state; its precision stays. Every later call (predict, generate,
 * evaluate, bench, profile, save) then runs there, reading the device only by explicit copies.
 * Refused with CDL_EUSAGE: a build without the GPU backend ("this cdl was built without a GPU
 * backend (make GPU=1)"), an int8 model ("int8 runs on the CPU only"), a device number the
 * machine does not have, a layer the GPU has no kernels for (named); CDL_ERUNTIME: no driver
 * or no device. When the net cannot be built there, the model is left as it was. */
int cdl_model_use_gpu(cdl_model *model, int device, char *err, size_t err_size);
/* 1 when the model runs on a GPU (cdl_model_use_gpu). */
int cdl_model_on_gpu(const cdl_model *model);

/* Warnings about the model's cfg (darknet keys cdl ignores), "FILE:LINE: warning: ..." one per
 * line, or NULL. */
const char *cdl_model_warnings(const cdl_model *model);

/* Per-image input shape: channels, height, width. */
void cdl_model_input_shape(const cdl_model *model, int *c, int *h, int *w);
int cdl_model_classes(const cdl_model *model);
/* The class name stored in the checkpoint, or NULL when it has none for index. */
const char *cdl_model_class_name(const cdl_model *model, int index);

/* probs [classes] = the model's output for one input [c][h][w], preprocessed as
 * cdl_model_load_image does: cdl_model_predict_batch's of a batch of one, NaN where that fails
 * (its error is cdl_model_predict_batch's to report). */
void cdl_model_predict(cdl_model *model, const float *input, float *probs);
/* Decodes a PNG or JPEG file into input [c][h][w] with the model's eval-time preprocessing:
 * channel conversion, resize (center crop or letterbox when its cfg says so) and
 * normalisation, as `cdl eval` feeds images to it. */
int cdl_model_load_image(cdl_model *model, const char *image_path, float *input, char *err,
                         size_t err_size);
/* Makes cdl_model_load_image resize straight to the net's size, without the cfg's center
 * crop or letterbox (normalisation still applies): for images already framed as the net's
 * input, e.g. to compare with an ONNX export, whose graph starts after that framing. */
void cdl_model_skip_crop(cdl_model *model);
/* cdl_model_load_image, then predict. */
int cdl_model_predict_file(cdl_model *model, const char *image_path, float *probs, char *err,
                           size_t err_size);
/* probs [n][classes] = the model's outputs for n inputs [n][c][h][w] in one forward pass (the
 * first call with a larger n than before allocates). */
int cdl_model_predict_batch(cdl_model *model, const float *inputs, int n, float *probs, char *err,
                            size_t err_size);

/* 1 when path names a NumPy .npy file (it starts with the magic "\x93NUMPY"). */
int cdl_is_npy_file(const char *path);
/* Reads a .npy file of model inputs: float32 (float64 is rounded to float32, float16 converted
 * exactly), C order, shaped as one input (c, h, w) or a batch of them (n, c, h, w), holding
 * what the net receives before its cfg's mean/std normalisation (an exported ONNX graph's
 * input: no decoding, resizing or cropping is done). *inputs [*n][c][h][w] (malloc'd; free()
 * it) holds them normalised, as cdl_model_load_image leaves an image. Another shape, dtype or
 * layout is a usage error naming the file, its shape and the shape expected. */
int cdl_model_load_npy(cdl_model *model, const char *npy_path, float **inputs, int *n, char *err,
                       size_t err_size);
/* cdl_model_load_npy, then cdl_model_predict_batch of all its inputs: *probs [*n][classes]
 * (malloc'd; free() it). */
int cdl_model_predict_npy(cdl_model *model, const char *npy_path, float **probs, int *n, char *err,
                          size_t err_size);
/* 1 when the model's outputs are probabilities (its last layer is [softmax], or darknet's
 * [cost] after one); 0 when they are its last layer's raw values (a classifier's logits). */
int cdl_model_outputs_probabilities(const cdl_model *model);

/* ---- Object detection (src/cdl_detect.c) ---- */

/* One detected object: a box and one of its classes. */
typedef struct cdl_detection {
    int class_id;
    float score;      /* objectness times the class's probability */
    float x, y, w, h; /* the box in pixels of the image: left, top, width, height (may reach
                         past the image's sides) */
} cdl_detection;

typedef struct cdl_detect_options {
    float thresh; /* report a box's class when its score is above this (darknet: 0.25) */
    float nms;    /* non-maximum suppression's threshold ([yolo] nms_kind= says which; darknet:
                     0.45); 0: none */
} cdl_detect_options;

/* 1 when the model is a detector (it has a [yolo] or [region] layer). */
int cdl_model_is_detector(const cdl_model *model);
/* Detects objects in a PNG or JPEG file: the image framed as eval frames it (letterbox=1 as
 * darknet's detector), the boxes of every [yolo] or [region] layer (darknet's
 * get_network_boxes), then per-class NMS as the last [yolo] layer's nms_kind= and beta_nms= say
 * (IoU after a [region]). *dets (malloc'd; free()
 * it) receives *n detections, one per box and class above options->thresh, highest score
 * first; *image_w, *image_h the image's size. A model that is not a detector is CDL_EUSAGE. */
int cdl_model_detect_file(cdl_model *model, const char *image_path,
                          const cdl_detect_options *options, cdl_detection **dets, int *n,
                          int *image_w, int *image_h, char *err, size_t err_size);
/* Decodes a PNG or JPEG file as it is: *pixels [*channels][*height][*width] in [0,1] (malloc'd;
 * free() it), 1 channel for gray images, 3 for colour. */
int cdl_read_image(const char *path, float **pixels, int *channels, int *height, int *width,
                   char *err, size_t err_size);

/* Text models (sequence nets trained on text; their vocabulary is in the checkpoint). */
int cdl_model_is_text(const cdl_model *model);

typedef struct cdl_generate_options {
    int tokens;        /* how many tokens to produce */
    float temperature; /* 0: greedy and deterministic */
    int top_k;         /* > 0: sample among the k most probable tokens */
    float top_p;       /* in (0, 1): among the fewest most probable whose weights reach top_p */
    uint64_t seed;     /* the same seed, prompt and options give the same text */
    int no_cache;      /* 1: recompute the whole context for every token (no key/value cache) */
} cdl_generate_options;

/* 1 when every layer of a text model has a cached step, so generation without no_cache
 * computes one position per token (else it recomputes the context, cached or not). */
int cdl_model_has_cache(const cdl_model *model);
/* 0 when model is a text model and every character of prompt is in its vocabulary; else a
 * usage error naming the first that is not (or saying the model is not a text model): what
 * cdl_model_generate checks first, for callers that echo the prompt. */
int cdl_model_check_prompt(const cdl_model *model, const char *prompt, char *err, size_t err_size);
/* Continues prompt (UTF-8) with generated tokens, handing each token's text to on_text as it
 * is produced. A prompt character outside the model's vocabulary is a usage error naming it. */
int cdl_model_generate(cdl_model *model, const char *prompt, const cdl_generate_options *options,
                       void (*on_text)(void *ctx, const char *text, size_t len), void *ctx,
                       char *err, size_t err_size);

/* 1 when model is a sequence-to-sequence model ([net] source=S, trained on paired text). */
int cdl_model_is_seq2seq(const cdl_model *model);
/* The greedy target of source (UTF-8) with a sequence-to-sequence model: the encoder runs once,
 * then the decoder once per token, each the most probable, until the end mark or the net's target
 * rows are full. *target (malloc'd, NUL-terminated; free it) gets its text, *tokens its token
 * count. A character outside the vocabulary, a source longer than the net's source rows, or a
 * model of another kind is a usage error. */
int cdl_model_decode(cdl_model *model, const char *source, char **target, int *tokens, char *err,
                     size_t err_size);

/* How cdl_model_decode_batch chooses each target (train/decode.h). */
typedef struct cdl_decode_options {
    /* > 1: beam search of beam hypotheses, one source at a time: the target of the best sum of
     * log-probabilities over its length (tokens, the end mark included) to the power
     * length_penalty (1: the mean; 0: the sum), searched until no live hypothesis can beat it;
     * 1: one target (greedy or drawn); below 1 is a usage error */
    int beam;
    float length_penalty;
    /* beam 1: each token drawn as cdl_generate_options' are (temperature 0: the most probable),
     * the draws from (seed, the source, the target row): the same source gives the same target
     * wherever it comes. Beam search refuses a temperature, top_k and top_p. */
    float temperature;
    int top_k;
    float top_p;
    uint64_t seed;
    int no_cache; /* 1: the decoder over all target rows per token (no key/value cache) */
} cdl_decode_options;

/* One decoded target. */
typedef struct cdl_target {
    char *text;   /* malloc'd, NUL-terminated (cdl_targets_free) */
    int32_t *ids; /* [tokens] its token ids, malloc'd (cdl_targets_free) */
    int tokens;   /* its token count, the end mark not counted */
    /* [source_tokens] the source's token ids, malloc'd (cdl_targets_free): the encoder's input
     * row before its -1 padding */
    int32_t *source_ids;
    int source_tokens;
    double log_prob; /* the sum of the natural logs of its tokens' probabilities, the end mark's
                      * included where it came */
    /* log_prob over its length (tokens, plus the end mark where it came) to the power
     * length_penalty: what beam search ranks by */
    double score;
} cdl_target;

/* As cdl_model_decode for n sources, the greedy ones in one forward pass of n samples per token,
 * as options say (NULL: greedy, cached): targets[k] for source k. A source that cannot be
 * decoded fails them all, naming why (targets are then empty); cdl_model_check_source tells them
 * apart first. */
int cdl_model_decode_batch(cdl_model *model, const char *const *sources, int n,
                           const cdl_decode_options *options, cdl_target *targets, char *err,
                           size_t err_size);
/* Frees the text, ids and source ids of targets [n]. */
void cdl_targets_free(cdl_target *targets, int n);
/* 0 when model decodes source (cdl_model_decode's usage errors otherwise, without running it). */
int cdl_model_check_source(const cdl_model *model, const char *source, char *err, size_t err_size);

/* probs [cdl_model_classes] = a text model's distribution of the token that follows prompt (its
 * last seq tokens): the one cdl_model_generate draws its first token from. ids, when not NULL,
 * receives the prompt's token ids (room for strlen(prompt)) and *n_ids their count. */
int cdl_model_next_token_probs(cdl_model *model, const char *prompt, float *probs, int32_t *ids,
                               size_t *n_ids, char *err, size_t err_size);

/* A network being trained with the optimizer and schedule of its cfg's [net] settings (a cosine
 * schedule spans max_batches; without it the rate stays at learning_rate). */
typedef struct cdl_trainer cdl_trainer;

int cdl_trainer_from_cfg(const char *cfg_path, uint64_t seed, cdl_trainer **trainer, char *err,
                         size_t err_size);
void cdl_trainer_free(cdl_trainer *trainer);
/* Images per optimizer step (the cfg's batch). */
int cdl_trainer_batch(const cdl_trainer *trainer);
/* One optimizer step on images [batch][c][h][w] with labels [batch]; returns the mean loss. */
float cdl_trainer_step(cdl_trainer *trainer, const float *images, const int *labels);
/* Writes a checkpoint that cdl_model_load (and every cdl command) reads. */
int cdl_trainer_save(const cdl_trainer *trainer, const char *path, char *err, size_t err_size);

/* ---- Training sessions (src/cdl_session.c): a whole run as `cdl train` does it ---- */

/* Loader threads when none are chosen (cdl_data_options.workers). */
#define CDL_DEFAULT_WORKERS 2

/* A run being trained: a net from a cfg (or a checkpoint resumed), its optimizer, its dataset,
 * and the checkpoint it writes after every epoch. */
typedef struct cdl_session cdl_session;

typedef struct cdl_session_options {
    const char *cfg_path; /* a new run of this cfg (NULL when resume_path is set) */
    /* cfg overrides, "net.KEY=VALUE" or "LAYER.KEY=VALUE" as `--set` takes them */
    const char *const *overrides;
    int n_overrides;
    uint64_t seed; /* parameter initialisation, sample order, augmentation and dropout */
    /* NULL, or the weights a new run starts from, as cdl_model_load_weights reads them: the
     * layers that match of a cdl checkpoint (fine-tuning), a FILE.safetensors under
     * torchvision's names, or every layer from darknet .weights for the cfg */
    const char *weights_path;
    /* 1: the head (the last layer with tensors, whose outputs are the classes) keeps its fresh
     * initialisation whatever weights_path holds for it, and the run takes the dataset's class
     * names (fine-tuning to other classes); 0: a head loaded must have the dataset's classes */
    int new_head;
    /* continue the run saved in this checkpoint, as it was (cfg_path, overrides, seed and
     * weights_path are then unused) */
    const char *resume_path;
    const char *out_path; /* the checkpoint; NULL: weights/CFGNAME.cdl, or resume_path */
    /* 1: the run's net, its gradients and the optimizer's state live on CUDA device gpu_device
     * (a GPU build; otherwise the session is refused); 0: the CPU */
    int on_gpu;
    int gpu_device;
    /* Notes and warnings ("warning: ..."), one line without a newline each; NULL: dropped. */
    void (*on_message)(void *ctx, const char *line);
    void *message_ctx;
} cdl_session_options;

/* Reads the cfg and applies the overrides, or loads the checkpoint to resume. The net of a new
 * run is built when its data are attached (a text's vocabulary sizes it). */
int cdl_session_create(const cdl_session_options *options, cdl_session **session, char *err,
                       size_t err_size);
void cdl_session_free(cdl_session *session);

typedef struct cdl_data_options {
    int workers;  /* loader threads (0: load in the training thread; CDL_DEFAULT_WORKERS) */
    int skip_bad; /* 1: replace unreadable images by the next readable ones (counted) */
} cdl_data_options;

/* Attaches the dataset of a .data file (NULL: the cfg's name with .data, or the resumed
 * checkpoint's dataset): reads it (and the text of a type=text one), builds a new run's net,
 * loads its initial weights, and opens the training and validation sets. */
int cdl_session_attach_data(cdl_session *session, const char *data_path,
                            const cdl_data_options *options, char *err, size_t err_size);

typedef struct cdl_session_info {
    const char *data_path;       /* "" before cdl_session_attach_data */
    const char *checkpoint_path; /* where the run's checkpoints go */
    int batch;                   /* samples per optimizer step */
    int seq;                     /* tokens per sample of a sequence net (rates in tokens), or 0 */
    long samples;                /* the training set's (windows of a text); 0 before data */
    int steps_per_epoch;
    int default_epochs; /* a resumed run's plan, else the cfg's epochs (or max_batches) */
    uint64_t done_steps;
    int done_epochs;
} cdl_session_info;

void cdl_session_get_info(const cdl_session *session, cdl_session_info *info);

typedef struct cdl_run_options {
    int epochs;          /* train until this many epochs are done (0: default_epochs) */
    uint64_t steps;      /* > 0: stop after this many more steps (inside an epoch: evaluate and
                            save as at the time limit); the schedule keeps its planned length */
    double time_limit_s; /* > 0: stop after the step during which this much training time
                            passed, then evaluate and save (the schedule keeps its length) */
    int log_every;       /* steps between logged step reports (0: a tenth of an epoch) */
    /* NULL, or a directory to write TensorBoard scalars into: logged steps' train/loss,
     * train/lr, train/images_per_s, epochs' valid/loss, valid/accuracy, valid/top5 */
    const char *tensorboard_dir;
    /* NULL, or steps to write a Chrome trace of: "A-B", "N" or a comma-separated list of
     * them, 1-based; to trace_path (NULL: the checkpoint's name with .trace.json) */
    const char *profile_steps;
    const char *trace_path;
    /* A data-parallel run (mpirun, cdl_dist_init): the longest any rank waits for the others
     * in one collective before the run stops with an error naming the ranks behind (0: 300 s;
     * rank 0's evaluation between epochs must fit in it). */
    double dist_timeout_s;
    /* NULL, or asked after every step and every checkpoint (cheaply: a SIGINT handler's flag):
     * non-zero stops the run there after saving its checkpoint, without the evaluation inside
     * an epoch; --resume then continues to the checkpoint the uninterrupted run would have
     * written. Under mpirun every rank stops when one rank's says so. */
    int (*stop_requested)(void *ctx);
    void *stop_ctx;
    /* 1: every step after the first runs as CUDA graphs, captured at the second and replayed
     * (a GPU session): the same losses as without, under mpirun too; profile_steps traces each
     * replay as one event. What it cannot capture yet (a detection layer's loss, computed on the
     * host) is refused with CDL_EUSAGE. */
    int cuda_graph;
    /* 1: train even when a step's memory (cdl_check_result.total_bytes, less the parameters
     * already there) is more than the process may still take; 0: such a run is refused before
     * it allocates (CDL_ERUNTIME naming both figures and the limit: the cgroup's, MemAvailable
     * or RLIMIT_AS), where it would otherwise be killed without a word. CPU sessions only. */
    int skip_memory_check;
} cdl_run_options;

typedef struct cdl_step_report {
    uint64_t step, total_steps;         /* the step just finished (1-based), the run's total */
    int epoch;                          /* 0-based epoch the step belongs to */
    int step_in_epoch, steps_per_epoch; /* 1-based position */
    float loss, lr;
    float avg_loss;      /* darknet's running average: the first loss, then 0.9 avg + 0.1 loss */
    uint64_t images;     /* samples trained on so far (all ranks, resumed runs included) */
    double images_per_s; /* over the training time since the run (or resume) started */
    double eta_s;        /* seconds until the last step (or the time limit, when sooner), from the
                          * moving average of the step time, the first warm-up steps left out */
    double elapsed_s;    /* training time so far */
    int logged;          /* 1 every log_every steps and at the last step */
    float loss_scale;    /* precision fp16: the loss scale after the step; 0 in other precisions */
    uint64_t skipped_steps; /* precision fp16: steps skipped for non-finite gradients so far */
    int width, height;      /* random= (multi-scale training): the input size the step trained
                               at, which changes every 10 steps; 0 without */
    int resized;            /* 1: the step is the first at that size */
} cdl_step_report;

typedef struct cdl_epoch_report {
    int epoch; /* 1-based number of epochs now done */
    uint64_t step;
    double train_loss; /* mean over the epoch's steps */
    int skipped;       /* unreadable training samples replaced this epoch */
    int validated;     /* 1: the valid_ fields hold the validation set's figures */
    int per_token;     /* 1: a sequence net's next-token figures (loss in nats per token) */
    double valid_loss, valid_top1, valid_top5;
    double valid_bits_per_byte; /* per_token: validation bits per byte of text (0: unknown) */
    int valid_skipped;
    double images_per_s, elapsed_s;
    const char *checkpoint; /* the path just written */
    int stopped;     /* 1: the run stopped inside this epoch (time limit, steps or asked to) */
    int interrupted; /* 1: it stopped because cdl_run_options.stop_requested asked */
    int ranks;       /* processes of a data-parallel run (1: one); images_per_s is all's */
    /* Rank 0's gradient allreduce over the epoch: seconds blocked after backward, and seconds
     * the buckets were in flight while backward still ran (hidden by it). 0 with one rank. */
    double allreduce_wait_s, allreduce_hidden_s;
} cdl_epoch_report;

typedef struct cdl_callbacks {
    void (*on_step)(void *ctx, const cdl_step_report *report);
    void (*on_epoch)(void *ctx, const cdl_epoch_report *report);
    void *ctx;
} cdl_callbacks;

/* Data-parallel training (src/cdl_dist.c): a cdl built with `make MPI=1` and started by
 * mpirun runs as one rank of several; otherwise (or without MPI) it is rank 0 of 1.
 * cdl_dist_init joins the ranks (call it first, before threads; 0 or CDL_ERUNTIME);
 * cdl_session_run then trains each rank on its shard of every epoch, summing gradients. */
int cdl_dist_init(int *argc, char ***argv);
int cdl_dist_rank(void);
int cdl_dist_size(void);
/* The rank's position among the ranks on its machine, *local_size their number (0 of 1 without
 * mpirun): which of the machine's GPUs it takes when each rank has its own. */
int cdl_dist_local_rank(int *local_size);
/* Every rank passes its status; returns the highest of all, and *report is 1 on the one rank
 * that should print its error (the lowest that failed), so a failure is reported once. */
int cdl_dist_agree(int status, int *report);
/* Leaves the run: status != 0 with several ranks stops every rank (MPI_Abort, exit 1). */
void cdl_dist_finalize(int status);

/* Trains until options->epochs are done (nothing when the run already has them: a note says
 * so), writing the checkpoint after every epoch. A non-finite loss stops the run with an error
 * that names the first layer whose output went non-finite; the last checkpoint is kept. */
int cdl_session_run(cdl_session *session, const cdl_run_options *options,
                    const cdl_callbacks *callbacks, char *err, size_t err_size);
/* Evaluates the run's net (the EMA of its weights when the optimizer keeps one) on the
 * attached validation set. */
typedef struct cdl_eval_result cdl_eval_result;
int cdl_session_evaluate(cdl_session *session, cdl_eval_result *result, char *err, size_t err_size);
/* Writes a checkpoint of the run as it stands now (path NULL: its checkpoint path). */
int cdl_session_save(cdl_session *session, const char *path, char *err, size_t err_size);

/* ---- Evaluation (src/cdl_eval.c) ---- */

struct cdl_eval_result {
    int samples;   /* evaluated samples (predicted tokens when per_token) */
    int classes;   /* rows and columns of confusion */
    int per_token; /* 1: a text model's next-token figures (no confusion matrix) */
    double loss;   /* mean cross-entropy (nats per token when per_token) */
    /* per_token: the cross-entropy in bits per byte of the predicted text, comparable across
     * vocabularies (0: unknown) */
    double bits_per_byte;
    double top1, top5;
    int *confusion; /* [classes][classes]: row = true class, column = predicted; NULL when
                       per_token */
    int skipped;    /* unreadable samples replaced (skip_bad) */
    /* a sequence-to-sequence model's: the validation pairs decoded greedily, and the fraction
     * whose target came out exactly (0 and 0 for other models) */
    int decoded;
    double exact_match;
    double bleu, chrf; /* their text's corpus BLEU and chrF as sacreBLEU's defaults, 0 to 100 */
};

/* The fraction of class c's samples predicted as c (0 when it has none). */
double cdl_eval_class_accuracy(const cdl_eval_result *result, int c);
void cdl_eval_result_free(cdl_eval_result *result);

/* Evaluates a checkpoint's model on the validation set of a .data file (NULL: the dataset it
 * trained on); a text model on the validation text of a type=text one. */
int cdl_model_evaluate(cdl_model *model, const char *data_path, const cdl_data_options *options,
                       cdl_eval_result *result, char *err, size_t err_size);
/* A detector's figures on a dataset with truth boxes (cdl_model_evaluate_detection). */
typedef struct cdl_detection_class_result {
    int truths;
    double ap50, ap50_95; /* -1 when the class has no truths */
    int tp, fp;           /* detections above the threshold, at IoU 0.5 */
    double avg_iou;       /* the true positives' IoU summed, over tp + fp (0 when none) */
} cdl_detection_class_result;

typedef struct cdl_detection_eval_result {
    int images, classes;
    int points;   /* how AP was computed: 101 (COCO), 11 (VOC 2007), 0 (area under the curve) */
    float thresh; /* the score threshold of the figures below */
    double map50, map50_95; /* the mean AP over the classes with truths */
    int truths, tp, fp, fn;
    double precision, recall, f1, avg_iou;
    cdl_detection_class_result *per_class; /* [classes] */
    struct cdl_label_suspect *suspects;    /* [n_suspects], most suspect first (audit) */
    int n_suspects;
} cdl_detection_eval_result;

/* A label that looks wrong (src/detect/det_audit.h has the rules). */
typedef enum {
    CDL_SUSPECT_CLASS,  /* a confident detection of another class matches the truth */
    CDL_SUSPECT_BOX,    /* the truth's class is found confidently, but beside the box */
    CDL_SUSPECT_MISSING /* a confident detection matches no truth */
} cdl_suspect_kind;

typedef struct cdl_label_suspect {
    cdl_suspect_kind kind;
    float suspicion;       /* the rank key, in [0, 1] */
    char image_path[4096]; /* the image, as the list names it */
    char label_path[4096]; /* its label file */
    int label_line;        /* the truth's line in it (1-based); 0 for a missing label */
    int label_class;       /* the truth's class; -1 for a missing label */
    int found_class;       /* the detection's */
    float score, iou;      /* the detection's score; its IoU with the truth (missing: best) */
    float truth_box[4];    /* centre x, y, width, height as fractions of the image (0 missing) */
    float found_box[4];    /* the detection's */
} cdl_label_suspect;

typedef struct cdl_detection_eval_options {
    float thresh; /* score threshold of TP, FP, precision, recall, F1, average IoU (0.25); the
                     score a detection needs to accuse a label in an audit */
    float nms;    /* as cdl_detect_options (0.45) */
    int points;   /* 0, 11 or 101 */
    int audit;    /* keep the audit's most suspect labels, at most this many (0: no audit) */
} cdl_detection_eval_options;

/* Evaluates a detector on the validation set of a .data file (NULL: the dataset it trained on),
 * whose images have darknet label files: each image detected as cdl_model_detect_file does,
 * keeping scores above 0.005 (darknet's detector map), then matched to its truths as
 * pycocotools' COCOeval matches (bbox, area all, 100 detections per image and class): per
 * class AP at IoU 0.5 and averaged over 0.5:0.05:0.95 (101-point AP equals COCOeval's), and at
 * options->thresh darknet's TP, FP, precision, recall, F1 and average IoU. With options->audit,
 * result->suspects lists the labels most likely wrong, at most options->audit of them. */
int cdl_model_evaluate_detection(cdl_model *model, const char *data_path,
                                 const cdl_detection_eval_options *options,
                                 cdl_detection_eval_result *result, char *err, size_t err_size);
void cdl_detection_eval_result_free(cdl_detection_eval_result *result);
/* The dataset the model's checkpoint trained on ("" when it names none). */
const char *cdl_model_data_path(const cdl_model *model);

/* ---- Timing (src/cdl_bench.c): training steps of a model on random data ---- */

/* The model of these must be opened for_training; its batch is resized as options say. The
 * weights come from the model, the random images and labels (tokens for a sequence net) from a
 * fixed seed, so every run times the same work. */
typedef struct cdl_timing_options {
    int batch;  /* > 0: every step is this many samples in one pass (subdivisions=1); 0: the
                   model's batch and subdivisions */
    int steps;  /* timed training steps */
    int warmup; /* untimed steps before them (cdl_model_profile: after one more untimed step) */
    const char *trace_path; /* cdl_model_profile: NULL, or a Chrome trace of the timed steps */
    /* 1: every step after the first warm-up step runs as CUDA graphs, captured at the second
     * (cdl_run_options.cuda_graph; a GPU model, CDL_EUSAGE otherwise): with warmup >= 2 only
     * replays are timed. cdl_model_profile then times each replay as one event. */
    int cuda_graph;
} cdl_timing_options;

typedef struct cdl_bench_result {
    int batch; /* samples per step */
    int seq;   /* tokens per sample of a sequence net, or 0 */
    double images_per_s, ms_per_step;
    float loss; /* the last step's: when not finite, the timings may not be representative */
    size_t activation_bytes; /* the activation slab of a pass (see
                                cdl_model_training_activation_bytes) */
} cdl_bench_result;

/* Times whole training steps (forward, backward, optimizer update). */
int cdl_model_bench(cdl_model *model, const cdl_timing_options *options, cdl_bench_result *result,
                    char *err, size_t err_size);

/* Durations over the timed steps, in milliseconds. */
typedef struct cdl_time_stat {
    double mean_ms, std_ms, min_ms, max_ms;
} cdl_time_stat;

/* What one layer costs in a step. */
typedef struct cdl_layer_profile {
    const char *type;                /* the layer's cfg section name */
    int out_c, out_h, out_w;         /* per-sample output shape */
    cdl_time_stat forward, backward; /* per pass (a step is passes_per_step passes) */
    double step_ms;                  /* forward + backward, summed over the step's passes */
    double share;                    /* step_ms / the step's mean time */
    double flops; /* forward + backward per step: 3x the forward for convolutional and
                     connected layers (2x when no input gradient is needed), else 2x */
    double gflops_per_s;
    size_t params;           /* trainable parameters */
    size_t activation_bytes; /* output, gradient and pre-activation buffers of a pass */
    const char *engine;      /* as cdl_layer_info's */
} cdl_layer_profile;

typedef struct cdl_profile_result {
    int batch;           /* samples per step */
    int passes_per_step; /* subdivisions */
    int pass_batch;      /* samples per pass */
    int n_layers;
    cdl_layer_profile *layers; /* [n_layers] */
    cdl_time_stat step;        /* whole steps */
    double images_per_s;
    double layers_ms, layers_share; /* the layers' sum, and its share of the step */
    size_t trace_events;            /* written to trace_path (0: no trace) */
    float loss;                     /* the last step's, as cdl_bench_result's */
} cdl_profile_result;

/* Times each layer's forward and backward over training steps, as `caffe time` does; a model
 * opened for inference (not for_training): each layer's forward over inference forwards of
 * options->batch samples (backward times 0, flops the forward's, one pass a step). */
int cdl_model_profile(cdl_model *model, const cdl_timing_options *options,
                      cdl_profile_result *result, char *err, size_t err_size);
void cdl_profile_result_free(cdl_profile_result *result);

/* The data loader alone: decoding and the cfg's training augmentation of a dataset's training
 * set, mini-batch after mini-batch (the model gives the augmentation and the input shape). */
typedef struct cdl_loader_bench_options {
    int workers;   /* loader threads */
    int batch;     /* images per mini-batch (0: the model's batch/subdivisions) */
    int epochs;    /* passes over the training set */
    uint64_t seed; /* sample order and augmentation */
} cdl_loader_bench_options;

typedef struct cdl_loader_bench_result {
    int batch;        /* images per mini-batch */
    int images;       /* timed: every mini-batch's but the very first one's */
    double elapsed_s; /* from the first mini-batch's arrival to the last one's */
} cdl_loader_bench_result;

int cdl_model_bench_loader(cdl_model *model, const char *data_path,
                           const cdl_loader_bench_options *options, cdl_loader_bench_result *result,
                           char *err, size_t err_size);

/* ---- Inspecting a model: its layers, as `cdl info` and `cdl graph` show them
 * (src/cdl_model_info.c) ---- */

#define CDL_LAYER_MAX_INPUTS 16

typedef struct cdl_model_summary {
    int c, h, w;             /* per-image input shape */
    int batch, subdivisions; /* the cfg's [net] batch and subdivisions */
    int seq, vocab;          /* a sequence net's tokens per sample and vocabulary; 0, 0 else */
    int n_layers;
    size_t params; /* parameters (weights, biases, scales) */
    size_t state;  /* running statistics (batch-norm means and variances) */
    double flops;  /* the layers' FLOPs per sample, summed */
    uint64_t step; /* a checkpoint's optimizer steps; 0 for a cfg */
    /* samples in a training pass at the current thread count: batch / subdivisions, or fewer
     * where training splits each mini-batch into smaller passes (docs/memory.md, "Passes sized to
     * the cache"); last, so that the fields before keep their places */
    int train_pass;
    /* a sequence-to-sequence net's source tokens before its seq target rows; 0 else (last too) */
    int source;
    /* [net] channels_last (docs/gpu.md): 1 where the cfg asks for NHWC activations (last too) */
    int channels_last;
} cdl_model_summary;

typedef struct cdl_layer_info {
    const char *type;       /* the layer family ("convolutional", ...); the model owns it */
    const char *activation; /* "linear", "relu", ... */
    int c, h, w;            /* per-sample output shape */
    size_t params;          /* trainable parameters */
    double flops;           /* forward multiply-adds x2, per sample */
    int n_inputs;
    int inputs[CDL_LAYER_MAX_INPUTS]; /* the layers it reads; -1 is the net's input */
    int n_settings;                   /* its cfg section's key=value lines */
    int int8; /* 0: float weights; 1: int8, input grid per batch; 2: int8, calibrated input */
    /* Convolutions: "dnnl" (through oneDNN, [net] engine=dnnl) or "ref" (cdl's im2col + BLAS);
     * NULL in layers without that choice */
    const char *engine;
    /* 1 where the layer's output is NHWC on the model's device ([net] channels_last=1 on a GPU:
     * docs/gpu.md); 0 NCHW (always on the CPU) */
    int channels_last;
} cdl_layer_info;

void cdl_model_get_summary(const cdl_model *model, cdl_model_summary *summary);
/* info = layer index's description (0 <= index < n_layers). */
void cdl_model_layer_info(const cdl_model *model, int index, cdl_layer_info *info);
/* The k-th key=value line of layer index's cfg section (0 <= k < n_settings), as written. */
void cdl_model_layer_setting(const cdl_model *model, int index, int k, const char **key,
                             const char **value);
/* *bytes = the activation slab (every layer's outputs, gradients, pre-activations and per-batch
 * state, buffers that are never live at once sharing memory as the memory plan lays them out)
 * a training pass of the cfg's mini-batch (batch / subdivisions samples) takes, under the
 * model's gradient checkpointing keys ([net] recompute_every, checkpoint=1) and [net]
 * memory_plan. Measures a training copy of the net: allocates its parameters, no activations. */
int cdl_model_training_activation_bytes(const cdl_model *model, size_t *bytes, char *err,
                                        size_t err_size);
/* The same for an inference pass (eval, predict) of as many samples: no gradients, no state kept
 * for a backward, outputs reused once their readers ran. */
int cdl_model_inference_activation_bytes(const cdl_model *model, size_t *bytes, char *err,
                                         size_t err_size);

/* ---- Exporting a model (src/cdl_export.c) ---- */

/* Every writer of the library (these exports, cdl_import_onnx, cdl_model_save, cdl_write_png,
 * checkpoints) writes atomically and replaces only nothing, an empty file or a file of the kind
 * it writes: anything else at path is refused with CDL_EUSAGE naming it ("PATH: exists and is a
 * text file, not an ONNX model; not overwriting it (choose another path)"). */

#define CDL_ONNX_OPSET_MIN 13
#define CDL_ONNX_OPSET_MAX 17
#define CDL_ONNX_OPSET_DEFAULT 13

/* The ONNX IR version that goes with opset. */
int cdl_onnx_ir_version(int opset);
/* Writes the inference graph named graph_name as an ONNX model (batch norm with its running
 * statistics, dropout as identity); batch 0 leaves the batch dimension dynamic. A detector's
 * outputs are its [yolo]/[region] heads, or with decode_boxes its boxes [N][B][4] (centre x, y,
 * width, height in input pixels) and scores [N][B][classes]. A sequence-to-sequence model is two
 * files instead, its encoder and one step of its decoder with past keys and values:
 * cdl_onnx_part_path(path, "encoder") and (path, "decoder"), the latter naming the start and end
 * marks' ids in its metadata (docs/interop.md). */
int cdl_model_export_onnx(const cdl_model *model, const char *graph_name, const char *path,
                          int batch, int opset, int decode_boxes, char *err, size_t err_size);
/* out = path without a final ".onnx", then ".<part>.onnx": where a sequence-to-sequence model's
 * part ("encoder", "decoder") goes. */
void cdl_onnx_part_path(const char *path, const char *part, char *out, size_t size);
/* Writes darknet .weights (version 0.2.0) for the model's cfg; `seen` = the images a
 * checkpoint trained on (steps x batch). */
int cdl_model_export_darknet(const cdl_model *model, const char *path, char *err, size_t err_size);
/* Writes each parameter and running statistic as DIR/layerN.NAME.npy (float32). */
int cdl_model_export_npy(const cdl_model *model, const char *dir, char *err, size_t err_size);

/* ---- Importing an ONNX model (src/cdl_import.c) ---- */

/* What cdl_import_onnx made. */
typedef struct cdl_import_summary {
    int onnx_nodes; /* nodes in the ONNX graph */
    int layers;     /* layers of the cfg written */
    int opset;      /* the graph's default-domain opset */
} cdl_import_summary;

/* Maps the ONNX model at onnx_path onto cdl layers (see src/model/onnx_import.h for the
 * operators and what folds) and writes the cfg to cfg_path and, unless model_path is NULL, a
 * checkpoint holding the graph's parameters to model_path (both atomically; nothing is written
 * when the import fails). An operator or attribute cdl cannot express is refused with
 * CDL_EUSAGE naming the node, its operator and the attribute; an unreadable, malformed or
 * truncated file fails with CDL_ERUNTIME. summary may be NULL. */
int cdl_import_onnx(const char *onnx_path, const char *cfg_path, const char *model_path,
                    cdl_import_summary *summary, char *err, size_t err_size);

/* ---- Previewing augmentation (src/cdl_augment_grid.c) ---- */

typedef struct cdl_augment_grid_options {
    int n;         /* the first n training samples (fewer when the set is smaller) */
    int cols;      /* tiles per row (at most n are used) */
    int zoom;      /* each tile enlarged this many times, nearest neighbour */
    int eval;      /* 1: the eval-time transform instead of the training one */
    int epoch;     /* the 0-based epoch whose random draws to show */
    uint64_t seed; /* the seed given to training */
} cdl_augment_grid_options;

/* Writes the training samples of data_path (a .data file) as the model's [net] augmentation
 * draws them, seeded as training seeds them, into a PNG grid (2-pixel white gaps,
 * normalisation undone for display). Inputs of 1 or 3 channels only. */
int cdl_model_write_augment_grid(const cdl_model *model, const char *data_path,
                                 const cdl_augment_grid_options *options, const char *png_path,
                                 char *err, size_t err_size);

/* ---- The build and its environment (src/cdl_doctor.c): cdl doctor, cdl --version ---- */

/* How this library was built: recorded at compile time (the Makefile's generated header). */
typedef struct cdl_build_info {
    char version[64];   /* "0.1", and the git commit when built from a checkout */
    char compiler[128]; /* "gcc 12.2.0" */
    char cflags[512];   /* the compile flags */
    int gpu, mpi, san;  /* the build options GPU=, MPI=, SAN= (1: on) */
    int dnnl;           /* DNNL= (1: convolutions through oneDNN, the default) */
} cdl_build_info;

/* Fills b with this library's build (no probing: cheap, for a version line). */
void cdl_build(cdl_build_info *b);

enum { CDL_DOCTOR_NOTES = 16, CDL_DOCTOR_NOTE_SIZE = 256, CDL_DOCTOR_DEVICES = 8 };

/* One CUDA device (cudaGetDeviceProperties). */
typedef struct cdl_gpu_device {
    char name[128];
    int major, minor; /* compute capability */
    double memory_gib;
} cdl_gpu_device;

/* The build and the machine it runs on. The layout is the same in every build (GPU=, MPI=);
 * strings are "" when unknown or unset. */
typedef struct cdl_doctor_report {
    cdl_build_info build;
    char blas_library[256]; /* the OpenBLAS shared library loaded (its real path) */
    char blas_config[256];  /* openblas_get_config() */
    char blas_core[64];     /* openblas_get_corename(), and whether cdl chose it (blas_kernels.h) */
    int blas_threads;       /* openblas_get_num_threads() */
    int blas_openmp;        /* 1: OpenBLAS's OpenMP build (its threads are cdl's OpenMP ones) */
    int cores_online;       /* CPUs online */
    int cores_usable;       /* CPUs this process may run on (its affinity mask) */
    int omp_max_threads;    /* omp_get_max_threads(): OpenMP's default (OMP_NUM_THREADS) */
    int omp_procs; /* cdl_threads_default(): the threads cdl's commands use without --threads */
    /* The OpenMP environment, as set */
    char omp_num_threads[32], omp_wait_policy[32], gomp_spincount[32], omp_proc_bind[32],
        omp_places[64];
    char dnnl[128];         /* oneDNN: "2.6.3, ISA avx2, OpenMP threading" (its version, the ISA it
                               dispatches to, its threading), or "not built (make DNNL=0)" */
    char gpu[128];          /* "not built (make GPU=1)", "no driver", "N devices", or the error */
    int cuda_runtime;       /* versions as 1000 * major + 10 * minor; 0: unknown */
    int cuda_driver;        /* the newest CUDA the driver supports; 0: no driver */
    int cudnn, cudnn_built; /* cudnnGetVersion() and the headers' CUDNN_VERSION */
    int n_devices;
    cdl_gpu_device devices[CDL_DOCTOR_DEVICES];
    char mpi[256]; /* MPI_Get_library_version's first line; "not built (make MPI=1)" */
    /* What is missing or mismatched, each a sentence saying why it matters */
    int n_notes;
    char notes[CDL_DOCTOR_NOTES][CDL_DOCTOR_NOTE_SIZE];
    /* GPU builds: cuBLAS's version ("12.4.5", from cublasGetProperty; the simulator's "simulated
     * over OpenBLAS") and NCCL's ("2.21.5", or "not linked" when this build has none); "" in
     * other builds. Last, so that the fields before keep their places. */
    char cublas[64], nccl[64];
} cdl_doctor_report;

/* Fills r: the build, the BLAS library, cores and threads, OpenMP settings, oneDNN, CUDA and
 * its devices (GPU=1 builds; a machine without a driver reports "no driver"), MPI (MPI=1),
 * and notes on what does not fit together (e.g. more OpenMP threads than cores). */
void cdl_doctor(cdl_doctor_report *r);
/* ---- Thread count (src/cdl_threads.c) ---- */

/* The threads cdl uses when the caller names none: OMP_NUM_THREADS when set to a count, else
 * the usable cores (the affinity mask) less the cores other processes hold now: the machine's
 * runnable tasks (/proc/loadavg) sampled 8 times over ~15 ms, this thread not counted; at least
 * 1. Sample before any parallel work (the pool's own spinning threads would count). Threads
 * sharing a core with another busy process wait for it at every OpenMP barrier, and a net's
 * step has hundreds of them: one thread on a free core then beats two. */
int cdl_threads_default(void);
/* The rule above for given numbers: round(online - others_running), within [1, usable]. */
int cdl_threads_from_load(int cores_usable, int cores_online, double others_running);
/* Sets OpenMP's and OpenBLAS's thread count: threads > 0 as given, else cdl_threads_default();
 * returns the count set. Also readies the arithmetic of the calling thread and OpenMP's, as
 * every cdl command has it: OpenBLAS's kernels for this CPU (src/backend/cpu/blas_kernels.h), and
 * subnormal floats flushed to zero (FTZ and DAZ, src/backend/cpu/subnormals.h: on Intel's cores
 * each operation on one costs a microcode assist). */
int cdl_set_threads(int threads);

/* ---- Checking a training run before it starts (src/cdl_check.c): `cdl check` ---- */

typedef struct cdl_check_options {
    const char *cfg_path;
    const char *data_path; /* NULL: the cfg's name with .data, as cdl_session_attach_data */
    /* cfg overrides, "net.KEY=VALUE" or "LAYER.KEY=VALUE" as `--set` takes them */
    const char *const *overrides;
    int n_overrides;
    /* NULL, or the initial weights train --weights would load: they are loaded into the net
     * (shapes, sizes) and a loaded head's classes checked against the data's, as train does */
    const char *weights_path;
    int new_head; /* as cdl_session_options.new_head */
    /* 1: the step's memory as on GPU gpu_device (train --gpu; the net is built there too), whose
     * plan keeps 16-bit slots under bf16 and fp16; 0: on the CPU */
    int on_gpu, gpu_device;
} cdl_check_options;

typedef struct cdl_check_result {
    /* Every reason train would refuse the cfg and data ("WHERE: ..." each; "" when none), and
     * what it would only warn about ("WHERE: warning: ..."); one line each, ending in a newline. */
    char *errors, *warnings;
    int n_errors, n_warnings;
    int built;               /* 1: the net was built; the fields below describe it */
    int c, h, w;             /* per-sample input shape */
    int outputs;             /* the net's outputs (per token in a sequence net) */
    int seq, vocab;          /* a sequence net's tokens per sample and vocabulary; 0, 0 else */
    int batch, subdivisions; /* [net] batch, and the mini-batches it is split into */
    size_t params, state;    /* trainable parameters, running statistics */
    const char *optimizer;   /* "sgd", "adam" or "adamw" */
    /* What a training step holds, in bytes (0 when the net was not built or the batch is
     * refused): parameters and running statistics, gradients, optimizer state (and the weights'
     * EMA), and a mini-batch's activations, deltas, layer state and workspace. */
    size_t param_bytes, grad_bytes, optimizer_bytes, activation_bytes, total_bytes;
    int data_read;              /* 1: the .data file was read; the fields below describe it */
    char *data_path;            /* the .data file checked */
    const char *data_kind;      /* "image folder", "darknet list", "csv", "idx or digits csv",
                                   "cifar10", "cifar100" or "text" */
    int data_classes;           /* its classes (a text's distinct tokens) */
    int data_c, data_h, data_w; /* its samples' shape when the kind fixes it (CIFAR), else 0s */
    char *weights_note;         /* what weights_path loaded and skipped (train's note), or NULL */
    /* Samples per training pass, the activations' batch above: the mini-batch, or the smaller
     * passes a sequence net trains it in at the default thread count (cdl_model_summary's) */
    int train_pass;
    /* Of activation_bytes, the layers' shared workspace, which an engine may leave partly
     * untouched: a step's peak resident memory lies between total_bytes less it and
     * total_bytes (past the process's own code and data). */
    size_t scratch_bytes;
    /* What the process may still take (UINT64_MAX: nothing limits it), and what sets that ("the
     * cgroup's memory.max (PATH) is 1.5 GiB and 1.2 GiB of it is in use", "MemAvailable
     * (/proc/meminfo) is 21.4 GiB", "ulimit -v (RLIMIT_AS) is 1.0 GiB and 300.2 MiB of it is
     * in use"; NULL when nothing does); a step that needs more is one of the errors. */
    uint64_t memory_left_bytes;
    char *memory_limit;
} cdl_check_result;

/* Checks everything `cdl train` refuses before it trains, without training or reading the
 * samples (a text's characters are read: they size the net): the cfg (parsed leniently, so that
 * every duplicate and unknown key is listed with FILE:LINE), the overrides (errors name them),
 * the net built from it (its parameters, no gradient, optimizer or activation memory), the .data
 * file and the files it names, the net against the data (a sequence net needs a text, the data's
 * classes must fit the net's outputs), the initial weights when given (loaded as train loads
 * them; a loaded head must have the data's classes), and the memory of a training step (a
 * mini-batch too large is refused as train refuses it). Returns 0 when train would start,
 * CDL_EUSAGE when result lists errors, CDL_ERUNTIME when checking itself failed (out of memory;
 * err says so). Free result with cdl_check_result_free in every case. */
int cdl_check(const cdl_check_options *options, cdl_check_result *result, char *err,
              size_t err_size);
void cdl_check_result_free(cdl_check_result *result);

/* bytes as "12.3 KiB" (B, KiB, MiB or GiB, 1024 each) into text, which it returns. */
const char *cdl_format_bytes(uint64_t bytes, char text[16]);

/* ---- Images ---- */

/* Writes pixels [channels][height][width] (values in [0,1], clamped; 1 channel: gray, 3: RGB)
 * to path as an 8-bit PNG. */
int cdl_write_png(const char *path, const float *pixels, int channels, int height, int width,
                  char *err, size_t err_size);

/* ---- int8 inference (src/cdl_quantize.c) ---- */

typedef struct cdl_quantize_options {
    /* NULL: every layer's input is quantized on its own range at each forward (dynamic); else a
     * .data file whose first training images (in order, eval preprocessing) fix the grids of
     * the convolutions' inputs (static; connected and linear layers stay dynamic) */
    const char *calibrate_data;
    int batches; /* calibration mini-batches of the cfg's size (0: 10) */
    int workers; /* calibration loader threads */
} cdl_quantize_options;

typedef struct cdl_quantize_result {
    int layers;     /* layers given int8 weights */
    int calibrated; /* of which with a calibrated input grid */
    int calibration_images;
    size_t int8_weights; /* weights now held as int8 */
} cdl_quantize_result;

/* Gives every convolution (ungrouped), connected and untied linear layer of a model opened for
 * inference int8 weights with per-output-channel symmetric scales; its predictions then run in
 * int8 (the rest stays float). Refuses a model already quantized, or opened for training. */
int cdl_model_quantize(cdl_model *model, const cdl_quantize_options *options,
                       cdl_quantize_result *result, char *err, size_t err_size);
/* 1 when the model holds int8 weights (a quantized checkpoint, or after cdl_model_quantize). */
int cdl_model_is_quantized(const cdl_model *model);
/* Writes the model (weights, class names, vocabulary, progress; no optimizer state) as a
 * checkpoint; a quantized model's int8 tensors are stored as int8. */
int cdl_model_save(const cdl_model *model, const char *path, char *err, size_t err_size);

/* Times inference forwards (no gradients) of a model opened for inference on random inputs
 * (random tokens for a sequence net): options->batch samples per forward (0: the cfg's
 * mini-batch), steps timed after warmup untimed; result->loss is 0. */
int cdl_model_bench_inference(cdl_model *model, const cdl_timing_options *options,
                              cdl_bench_result *result, char *err, size_t err_size);

/* ---- Numerics of convolutions and matrix products (src/cdl_precision.c) ---- */

/* 0 when name is a precision cdl computes in: "fp32", or "bf16", "tf32" or "fp16" (the operands
 * of convolutions and matrix products rounded to that format, products summed in float32, float32
 * weights and everything else, as torch.autocast does; fp16 training scales the loss); else
 * CDL_EUSAGE with "unknown precision 'NAME' (expected fp32, bf16, tf32, fp16)". A cfg sets it
 * with its [net] precision= key. */
int cdl_precision_check(const char *name, char *err, size_t err_size);
/* Runs the model in precision name from now on, whatever its cfg says (a checkpoint's
 * weights are float32 either way); resizes its activations when it has any. */
int cdl_model_set_precision(cdl_model *model, const char *name, char *err, size_t err_size);

#endif
