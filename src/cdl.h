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
/* Warnings about the model's cfg (darknet keys cdl ignores), "FILE:LINE: warning: ..." one per
 * line, or NULL. */
const char *cdl_model_warnings(const cdl_model *model);

/* Per-image input shape: channels, height, width. */
void cdl_model_input_shape(const cdl_model *model, int *c, int *h, int *w);
int cdl_model_classes(const cdl_model *model);
/* The class name stored in the checkpoint, or NULL when it has none for index. */
const char *cdl_model_class_name(const cdl_model *model, int index);

/* probs [classes] = the model's output for one input [c][h][w], preprocessed as
 * cdl_model_load_image does (the model needs activations: opened with batch >= 1). */
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

/* Text models (sequence nets trained on text; their vocabulary is in the checkpoint). */
int cdl_model_is_text(const cdl_model *model);

typedef struct cdl_generate_options {
    int tokens;        /* how many tokens to produce */
    float temperature; /* 0: greedy and deterministic */
    int top_k;         /* > 0: sample among the k most probable tokens */
    uint64_t seed;     /* the same seed, prompt and options give the same text */
    int no_cache;      /* 1: recompute the whole context for every token (no key/value cache) */
} cdl_generate_options;

/* 1 when every layer of a text model has a cached step, so generation without no_cache
 * computes one position per token (else it recomputes the context, cached or not). */
int cdl_model_has_cache(const cdl_model *model);
/* Continues prompt (UTF-8) with generated tokens, handing each token's text to on_text as it
 * is produced. A prompt character outside the model's vocabulary is a usage error naming it. */
int cdl_model_generate(cdl_model *model, const char *prompt, const cdl_generate_options *options,
                       void (*on_text)(void *ctx, const char *text, size_t len), void *ctx,
                       char *err, size_t err_size);

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
} cdl_layer_info;

void cdl_model_get_summary(const cdl_model *model, cdl_model_summary *summary);
/* info = layer index's description (0 <= index < n_layers). */
void cdl_model_layer_info(const cdl_model *model, int index, cdl_layer_info *info);
/* The k-th key=value line of layer index's cfg section (0 <= k < n_settings), as written. */
void cdl_model_layer_setting(const cdl_model *model, int index, int k, const char **key,
                             const char **value);

/* ---- Exporting a model (src/cdl_export.c) ---- */

#define CDL_ONNX_OPSET_MIN 13
#define CDL_ONNX_OPSET_MAX 17
#define CDL_ONNX_OPSET_DEFAULT 13

/* The ONNX IR version that goes with opset. */
int cdl_onnx_ir_version(int opset);
/* Writes the inference graph named graph_name as an ONNX model (batch norm with its running
 * statistics, dropout as identity); batch 0 leaves the batch dimension dynamic. */
int cdl_model_export_onnx(const cdl_model *model, const char *graph_name, const char *path,
                          int batch, int opset, char *err, size_t err_size);
/* Writes darknet .weights (version 0.2.0) for the model's cfg; `seen` = the images a
 * checkpoint trained on (steps x batch). */
int cdl_model_export_darknet(const cdl_model *model, const char *path, char *err, size_t err_size);
/* Writes each parameter and running statistic as DIR/layerN.NAME.npy (float32). */
int cdl_model_export_npy(const cdl_model *model, const char *dir, char *err, size_t err_size);

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

#endif
