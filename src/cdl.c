/* The public API (cdl.h) over the internal net, checkpoint and trainer modules. */
#include "cdl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/image.h"
#include "io/model_io.h"
#include "train/trainer.h"

struct cdl_model {
    Net net;
    ModelMeta meta;
};

struct cdl_trainer {
    Net net;
    float *velocity;
    uint64_t seed;
};

static int report(const Error *e, char *err, size_t err_size)
{
    if (err && err_size)
        snprintf(err, err_size, "%s", e->msg);
    return e->code;
}

int cdl_model_load(const char *path, cdl_model **model, char *err, size_t err_size)
{
    Error e = {0};
    cdl_model *m = calloc(1, sizeof *m);
    *model = NULL;
    if (!m)
        return error_set(&e, CDL_ERUNTIME, "out of memory"), report(&e, err, err_size);
    if (model_load(path, &m->net, 0, NULL, &m->meta, &e) || net_resize(&m->net, 1, 0, &e)) {
        cdl_model_free(m);
        return report(&e, err, err_size);
    }
    *model = m;
    return CDL_OK;
}

void cdl_model_free(cdl_model *model)
{
    if (!model)
        return;
    model_meta_free(&model->meta);
    net_free(&model->net);
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

void cdl_model_predict(cdl_model *model, const float *input, float *probs)
{
    Net *net = &model->net;
    memcpy(net->input, input, shape_size(net->in_shape) * sizeof *input);
    net_forward(net);
    memcpy(probs, net_output(net), (size_t)net->classes * sizeof *probs);
}

int cdl_model_predict_file(cdl_model *model, const char *image_path, float *probs, char *err,
                           size_t err_size)
{
    Error e = {0};
    Image img;
    if (image_load(image_path, &img, &e))
        return report(&e, err, err_size);
    Net *net = &model->net;
    image_to_input(&img, net->in_shape.c, net->in_shape.h, net->in_shape.w, net->input);
    image_free(&img);
    net_forward(net);
    memcpy(probs, net_output(net), (size_t)net->classes * sizeof *probs);
    return CDL_OK;
}

int cdl_trainer_from_cfg(const char *cfg_path, uint64_t seed, cdl_trainer **trainer, char *err,
                         size_t err_size)
{
    Error e = {0};
    *trainer = NULL;
    cdl_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return error_set(&e, CDL_ERUNTIME, "out of memory"), report(&e, err, err_size);
    int st = net_build_from_file(&t->net, cfg_path, NULL, 0, 1, seed, &e);
    st = st ? st : net_resize(&t->net, t->net.hyper.batch / t->net.hyper.subdivisions, 0, &e);
    if (!st && !(t->velocity = calloc(t->net.n_params + 1, sizeof *t->velocity)))
        st = error_set(&e, CDL_ERUNTIME, "out of memory");
    if (st) {
        cdl_trainer_free(t);
        return report(&e, err, err_size);
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
    free(trainer->velocity);
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
static void fill_from_arrays(Net *net, int sub, void *ctx)
{
    const ArrayBatches *b = ctx;
    const size_t per_image = shape_size(net->in_shape), first = (size_t)sub * (size_t)net->batch;
    memcpy(net->input, b->images + first * per_image,
           (size_t)net->batch * per_image * sizeof *net->input);
    memcpy(net->labels, b->labels + first, (size_t)net->batch * sizeof *net->labels);
}

float cdl_trainer_step(cdl_trainer *trainer, const float *images, const int *labels)
{
    Net *net = &trainer->net;
    ArrayBatches batches = {images, labels};
    return trainer_step_with(net, trainer->velocity, fill_from_arrays, &batches,
                             net_learning_rate(&net->hyper, net->step));
}

int cdl_trainer_save(const cdl_trainer *trainer, const char *path, char *err, size_t err_size)
{
    Error e = {0};
    ModelMeta meta = {
        .seed = trainer->seed, .step = trainer->net.step, .valid_accuracy = -1, .valid_loss = -1};
    if (model_save(path, &trainer->net, trainer->velocity, &meta, &e))
        return report(&e, err, err_size);
    return CDL_OK;
}
