/* The public API (cdl.h) over the internal net, checkpoint and trainer modules. */
#include "cdl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdl_model.h"
#include "data/image.h"
#include "io/npy.h"
#include "layers/families.h"
#include "model/darknet_weights.h"
#include "train/generate.h"
#include "train/trainer.h"
#include "util/file_kind.h"

struct cdl_trainer {
    Net net;
    Optimizer opt;
    uint64_t seed;
};

int api_report(const Error *e, char *err, size_t err_size)
{
    if (err && err_size)
        snprintf(err, err_size, "%s", e->msg);
    return e->code;
}

int api_model_reserve(cdl_model *model, int n, Error *e)
{
    if (n <= model->capacity)
        return CDL_OK;
    model->capacity = 0;
    if (net_resize(&model->net, n, 0, e))
        return e->code;
    model->capacity = n;
    return CDL_OK;
}

int cdl_is_checkpoint(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char magic[8] = {0};
    size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return got == sizeof magic && !memcmp(magic, "CDLCKPT", 8);
}

/* CDL_OPEN_ANY of a file that is neither a checkpoint nor a cfg: refused saying what it is. */
static int refuse_other_kind(const char *path, Error *e)
{
    int err_no = 0;
    const FileKind kind = file_kind(path, &err_no);
    if (kind == FILE_KIND_MISSING)
        return error_set(e, CDL_ERUNTIME, "%s: cannot open model or config: %s", path,
                         strerror(err_no));
    if (kind == FILE_KIND_CHECKPOINT || kind == FILE_KIND_CFG || file_kind_is_text(kind) ||
        kind == FILE_KIND_EMPTY)
        return CDL_OK; /* text is parsed as a cfg, which names what is wrong in it */
    char why[600];
    if (file_kind_not_checkpoint(kind, path, why, sizeof why) == CDL_ERUNTIME)
        snprintf(why, sizeof why, "%s, neither a cdl checkpoint nor a cfg", file_kind_name(kind));
    return error_set(e, CDL_EUSAGE, "%s: %s", path, why);
}

int cdl_is_model_file(const char *path)
{
    switch (file_kind(path, NULL)) {
    case FILE_KIND_CHECKPOINT:
    case FILE_KIND_CFG:
    case FILE_KIND_ONNX:
    case FILE_KIND_SAFETENSORS:
    case FILE_KIND_WEIGHTS:
        return 1;
    default:
        return 0;
    }
}

/* Builds m's net from path as o says (m zeroed). */
static int open_into(cdl_model *m, const char *path, const cdl_open_options *o, Error *e)
{
    if (o->kind == CDL_OPEN_ANY && refuse_other_kind(path, e))
        return e->code;
    const int checkpoint =
        o->kind == CDL_OPEN_CHECKPOINT || (o->kind == CDL_OPEN_ANY && cdl_is_checkpoint(path));
    Optimizer *opt = o->for_training ? &m->opt : NULL;
    int st;
    if (!checkpoint) {
        st = net_build_from_file(&m->net, path, o->overrides, o->n_overrides, o->for_training,
                                 o->seed, e);
        if (!st && opt && (st = optimizer_init(opt, &m->net, e)))
            net_free(&m->net);
    } else if (o->n_overrides) {
        return error_set(e, CDL_EUSAGE, "--set applies to cfg files, not checkpoints");
    } else {
        st = model_load(path, &m->net, o->for_training, opt, &m->meta, e);
    }
    return st ? st : api_model_reserve(m, o->batch, e);
}

int cdl_model_open(const char *cfg_or_checkpoint, const cdl_open_options *options,
                   cdl_model **model, char *err, size_t err_size)
{
    static const cdl_open_options defaults = {.seed = 1, .batch = 1};
    Error e = {0};
    cdl_model *m = calloc(1, sizeof *m);
    *model = NULL;
    if (!m)
        return error_set(&e, CDL_ERUNTIME, "out of memory"), api_report(&e, err, err_size);
    snprintf(m->origin, sizeof m->origin, "%s", cfg_or_checkpoint);
    if (open_into(m, cfg_or_checkpoint, options ? options : &defaults, &e)) {
        cdl_model_free(m);
        return api_report(&e, err, err_size);
    }
    *model = m;
    return CDL_OK;
}

int cdl_model_load(const char *path, cdl_model **model, char *err, size_t err_size)
{
    const cdl_open_options o = {.kind = CDL_OPEN_CHECKPOINT, .batch = 1};
    return cdl_model_open(path, &o, model, err, err_size);
}

int cdl_model_from_cfg(const char *cfg_path, uint64_t seed, cdl_model **model, char *err,
                       size_t err_size)
{
    const cdl_open_options o = {.seed = seed, .kind = CDL_OPEN_CFG, .batch = 1};
    return cdl_model_open(cfg_path, &o, model, err, err_size);
}

int cdl_model_load_darknet_weights(cdl_model *model, const char *weights_path, char *err,
                                   size_t err_size)
{
    Error e = {0};
    int st = darknet_weights_load(&model->net, weights_path, NULL, &e);
    net_weights_changed(&model->net);
    return st ? api_report(&e, err, err_size) : CDL_OK;
}

const char *cdl_model_warnings(const cdl_model *model)
{
    return model->net.cfg.warnings;
}

void cdl_model_free(cdl_model *model)
{
    if (!model)
        return;
    model_meta_free(&model->meta);
    optimizer_free(&model->opt);
    net_free(&model->net);
    augment_scratch_free(&model->scratch);
    free(model);
}

void cdl_model_input_shape(const cdl_model *model, int *c, int *h, int *w)
{
    *c = model->net.in_shape.c;
    *h = model->net.in_shape.h;
    *w = model->net.in_shape.w;
}

int cdl_model_classes(const cdl_model *model)
{
    return model->net.classes;
}

const char *cdl_model_class_name(const cdl_model *model, int index)
{
    return index >= 0 && index < model->meta.n_names ? model->meta.names[index] : NULL;
}

/* A batch of one: its pass waits for the device once (net_forward_to_host). */
void cdl_model_predict(cdl_model *model, const float *input, float *probs)
{
    if (cdl_model_predict_batch(model, input, 1, probs, NULL, 0))
        for (int k = 0; k < model->net.classes; k++)
            probs[k] = NAN;
}

void cdl_model_skip_crop(cdl_model *model)
{
    model->skip_crop = 1;
}

int cdl_model_load_image(cdl_model *model, const char *image_path, float *input, char *err,
                         size_t err_size)
{
    Error e = {0};
    AugmentConfig aug;
    if (net_augment(&model->net, &aug, &e))
        return api_report(&e, err, err_size);
    if (model->skip_crop)
        aug.center_crop = aug.letterbox = 0;
    Image img;
    if (image_load(image_path, &img, &e))
        return api_report(&e, err, err_size);
    int st = augment_eval(&aug, &img, &model->scratch, input, NULL);
    image_free(&img);
    if (st)
        return error_set(&e, st, "%s: out of memory preprocessing the image", image_path),
               api_report(&e, err, err_size);
    return CDL_OK;
}

int cdl_is_npy_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char magic[6] = {0};
    const size_t got = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return got == sizeof magic && !memcmp(magic, "\x93NUMPY", 6);
}

/* "(3, 8, 8)" */
static const char *shape_text(const int64_t *dims, int n, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "(");
    for (int k = 0; k < n && used < size; k++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%lld", k ? ", " : "", (long long)dims[k]);
    if (used < size)
        snprintf(buf + used, size - used, "%s)", n == 1 ? "," : "");
    return buf;
}

/* CDL_OK when a holds the net's input [c][h][w] or a batch of them, *n the count. */
static int check_npy_shape(const Net *net, const char *path, const NpyArray *a, int *n, Error *e)
{
    const int64_t want[3] = {net->in_shape.c, net->in_shape.h, net->in_shape.w};
    const int batched = a->n_dims == 4;
    int fits =
        (a->n_dims == 3 || batched) && (!batched || (a->dims[0] >= 1 && a->dims[0] <= INT32_MAX));
    for (int k = 0; fits && k < 3; k++)
        fits = a->dims[batched + k] == want[k];
    if (!fits) {
        char got[128], one[64];
        return error_set(e, CDL_EUSAGE,
                         "%s: shape %s: expected the net's input %s, or a batch (N, %lld, %lld, "
                         "%lld), of float32 in C order",
                         path, shape_text(a->dims, a->n_dims, got, sizeof got),
                         shape_text(want, 3, one, sizeof one), (long long)want[0],
                         (long long)want[1], (long long)want[2]);
    }
    *n = batched ? (int)a->dims[0] : 1;
    return CDL_OK;
}

int cdl_model_load_npy(cdl_model *model, const char *npy_path, float **inputs, int *n, char *err,
                       size_t err_size)
{
    Error e = {0};
    AugmentConfig aug;
    NpyArray a = {0};
    *inputs = NULL;
    *n = 0;
    int st = net_augment(&model->net, &aug, &e);
    st = st ? st : npy_read(npy_path, &a, &e);
    st = st ? st : check_npy_shape(&model->net, npy_path, &a, n, &e);
    if (st) {
        npy_array_free(&a);
        *n = 0;
        return api_report(&e, err, err_size);
    }
    const Shape in = model->net.in_shape;
    if (augment_normalises(&aug))
        for (int k = 0; k < *n; k++)
            augment_normalize(a.data + (size_t)k * shape_size(in), in.c, (size_t)in.h * in.w,
                              aug.mean, aug.std);
    *inputs = a.data; /* handed to the caller, who frees it */
    return CDL_OK;
}

int cdl_model_predict_npy(cdl_model *model, const char *npy_path, float **probs, int *n, char *err,
                          size_t err_size)
{
    float *inputs;
    *probs = NULL;
    int st = cdl_model_load_npy(model, npy_path, &inputs, n, err, err_size);
    if (st)
        return st;
    *probs = malloc((size_t)*n * (size_t)model->net.classes * sizeof **probs);
    st = *probs ? cdl_model_predict_batch(model, inputs, *n, *probs, err, err_size)
                : (snprintf(err, err_size, "%s: out of memory", npy_path), CDL_ERUNTIME);
    free(inputs);
    if (st) {
        free(*probs);
        *probs = NULL;
        *n = 0;
    }
    return st;
}

int cdl_model_outputs_probabilities(const cdl_model *model)
{
    const Net *net = &model->net;
    int last = net->n_layers - 1;
    if (last > 0 && net->layers[last].type->follows_loss)
        last--; /* darknet's [cost] passes the softmax's probabilities through */
    return last >= 0 && net->layers[last].type == &softmax_layer;
}

int cdl_write_png(const char *path, const float *pixels, int channels, int height, int width,
                  char *err, size_t err_size)
{
    Error e = {0};
    const Image img = {.c = channels, .h = height, .w = width, .data = (float *)pixels};
    if (image_write_png(path, &img, &e))
        return api_report(&e, err, err_size);
    return CDL_OK;
}

int cdl_model_predict_file(cdl_model *model, const char *image_path, float *probs, char *err,
                           size_t err_size)
{
    Error e = {0};
    Net *net = &model->net;
    if (api_model_reserve(model, 1, &e))
        return api_report(&e, err, err_size);
    int st = cdl_model_load_image(model, image_path, net_host_input(net), err, err_size);
    if (st)
        return st;
    net->batch = 1;
    net_commit_batch(net);
    const float *out = net_forward_to_host(net, &e);
    if (!out)
        return api_report(&e, err, err_size);
    memcpy(probs, out, (size_t)net->classes * sizeof *probs);
    return CDL_OK;
}

int cdl_model_predict_batch(cdl_model *model, const float *inputs, int n, float *probs, char *err,
                            size_t err_size)
{
    Error e = {0};
    Net *net = &model->net;
    if (n < 1)
        return error_set(&e, CDL_EUSAGE, "predict: a batch needs at least one image (got %d)", n),
               api_report(&e, err, err_size);
    if (api_model_reserve(model, n, &e))
        return api_report(&e, err, err_size);
    net->batch = n;
    memcpy(net_host_input(net), inputs, (size_t)n * shape_size(net->in_shape) * sizeof *inputs);
    net_commit_batch(net);
    const float *out = net_forward_to_host(net, &e);
    if (!out)
        return api_report(&e, err, err_size);
    memcpy(probs, out, (size_t)n * (size_t)net->classes * sizeof *probs);
    return CDL_OK;
}

int cdl_trainer_from_cfg(const char *cfg_path, uint64_t seed, cdl_trainer **trainer, char *err,
                         size_t err_size)
{
    Error e = {0};
    *trainer = NULL;
    cdl_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return error_set(&e, CDL_ERUNTIME, "out of memory"), api_report(&e, err, err_size);
    int st = net_build_from_file(&t->net, cfg_path, NULL, 0, 1, seed, &e);
    st = st ? st : net_resize(&t->net, t->net.hyper.batch / t->net.hyper.subdivisions, 0, &e);
    st = st ? st : optimizer_init(&t->opt, &t->net, &e);
    if (st) {
        cdl_trainer_free(t);
        return api_report(&e, err, err_size);
    }
    t->seed = seed;
    t->net.train = 1;
    *trainer = t;
    return CDL_OK;
}

void cdl_trainer_free(cdl_trainer *trainer)
{
    if (!trainer)
        return;
    net_free(&trainer->net);
    optimizer_free(&trainer->opt);
    free(trainer);
}

int cdl_trainer_batch(const cdl_trainer *trainer)
{
    return trainer->net.hyper.batch;
}

typedef struct ArrayBatches {
    const float *images;
    const int *labels;
} ArrayBatches;

/* Copies mini-batch sub of the caller's arrays into the net. */
static int fill_from_arrays(Net *net, int sub, void *ctx, Error *e)
{
    (void)e;
    const ArrayBatches *b = ctx;
    const size_t per_image = shape_size(net->in_shape), first = (size_t)sub * (size_t)net->batch;
    memcpy(net_host_input(net), b->images + first * per_image,
           (size_t)net->batch * per_image * sizeof(float));
    memcpy(net_host_labels(net), b->labels + first, (size_t)net->batch * sizeof(int));
    return CDL_OK;
}

float cdl_trainer_step(cdl_trainer *trainer, const float *images, const int *labels)
{
    Net *net = &trainer->net;
    ArrayBatches batches = {images, labels};
    float loss;
    trainer_step_with(net, &trainer->opt, fill_from_arrays, &batches,
                      train_learning_rate(&trainer->opt.settings, net->step, 0), &loss, NULL);
    return loss;
}

int cdl_trainer_save(const cdl_trainer *trainer, const char *path, char *err, size_t err_size)
{
    Error e = {0};
    ModelMeta meta = {
        .seed = trainer->seed, .step = trainer->net.step, .valid_accuracy = -1, .valid_loss = -1};
    if (model_save(path, &trainer->net, &trainer->opt, &meta, &e))
        return api_report(&e, err, err_size);
    return CDL_OK;
}

int cdl_model_is_text(const cdl_model *model)
{
    return model->net.seq > 0 && model->meta.vocab.n > 0;
}

int cdl_model_has_cache(const cdl_model *model)
{
    return net_can_forward_at(&model->net);
}

typedef struct TextSink {
    const TextVocab *vocab;
    void (*on_text)(void *ctx, const char *text, size_t len);
    void *ctx;
} TextSink;

static void emit_token(void *ctx, int id)
{
    const TextSink *s = ctx;
    char text[TEXT_TOKEN_MAX_BYTES];
    const int n = text_vocab_decode(s->vocab, id, text);
    s->on_text(s->ctx, text, (size_t)n);
}

/* ids [*n_ids] (allocated) = prompt's tokens; a usage error for a model that is not a text
 * model or a character outside its vocabulary. */
static int encode_prompt(const cdl_model *model, const char *prompt, int32_t **ids, size_t *n_ids,
                         Error *e)
{
    *ids = NULL;
    *n_ids = 0;
    if (model->net.seq <= 0)
        return error_set(e, CDL_EUSAGE,
                         "%s is an image classifier, not a text model: --prompt needs a model "
                         "trained on text; classify images with `cdl predict %s IMAGE...`",
                         model->origin, model->origin);
    if (!cdl_model_is_text(model))
        return error_set(e, CDL_EUSAGE,
                         "%s has no vocabulary: --prompt needs a checkpoint of a sequence net "
                         "trained on text (`cdl train CFG --data TEXT`)",
                         model->origin);
    if (model->net.source > 0)
        return error_set(e, CDL_EUSAGE,
                         "%s is a sequence-to-sequence model: it decodes a source "
                         "(`cdl predict %s --source TEXT`), it does not continue a prompt",
                         model->origin, model->origin);
    const size_t len = strlen(prompt);
    *ids = malloc((len + 1) * sizeof **ids);
    return *ids ? text_vocab_encode(&model->meta.vocab, prompt, len, *ids, n_ids, "--prompt", e)
                : error_set(e, CDL_ERUNTIME, "out of memory");
}

int cdl_model_check_prompt(const cdl_model *model, const char *prompt, char *err, size_t err_size)
{
    Error e = {0};
    int32_t *ids;
    size_t n_ids;
    const int st = encode_prompt(model, prompt, &ids, &n_ids, &e);
    free(ids);
    return st ? api_report(&e, err, err_size) : CDL_OK;
}

/* encode_prompt, with the model sized for one sample. */
static int start_text(cdl_model *model, const char *prompt, int32_t **ids, size_t *n_ids, Error *e)
{
    int st = encode_prompt(model, prompt, ids, n_ids, e);
    if (!st && model->net.batch != 1) {
        model->capacity = 0; /* generation sizes the activations for one sample */
        st = api_model_reserve(model, 1, e);
    }
    return st;
}

int cdl_model_next_token_probs(cdl_model *model, const char *prompt, float *probs, int32_t *ids,
                               size_t *n_ids, char *err, size_t err_size)
{
    Error e = {0};
    int32_t *tokens;
    size_t n = 0;
    int st = start_text(model, prompt, &tokens, &n, &e);
    st = st ? st : generate_next_probs(&model->net, tokens, n, probs, &e);
    if (!st && ids) {
        memcpy(ids, tokens, n * sizeof *ids);
        *n_ids = n;
    }
    free(tokens);
    return st ? api_report(&e, err, err_size) : CDL_OK;
}

int cdl_model_generate(cdl_model *model, const char *prompt, const cdl_generate_options *options,
                       void (*on_text)(void *ctx, const char *text, size_t len), void *ctx,
                       char *err, size_t err_size)
{
    Error e = {0};
    int32_t *ids;
    size_t n_ids;
    int st = start_text(model, prompt, &ids, &n_ids, &e);
    const GenerateOptions o = {options->tokens,
                               {options->temperature, options->top_k, options->top_p},
                               options->seed,
                               !options->no_cache};
    TextSink sink = {&model->meta.vocab, on_text, ctx};
    st = st ? st : generate_tokens(&model->net, ids, n_ids, &o, emit_token, &sink, &e);
    free(ids);
    return st ? api_report(&e, err, err_size) : CDL_OK;
}
