/* Saving and loading whole models as checkpoints. */
#include "model/model_io.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/net_quant.h"
#include "io/checkpoint_file.h"
#include "train/ema.h"

static cJSON *tensor_table(const Net *net)
{
    cJSON *table = cJSON_CreateArray();
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_params; k++) {
            cJSON *t = cJSON_CreateObject();
            cJSON_AddNumberToObject(t, "layer", i);
            cJSON_AddStringToObject(t, "type", l->type->name);
            cJSON_AddStringToObject(t, "name", l->params[k].name);
            cJSON_AddNumberToObject(t, "count", (double)l->params[k].count);
            cJSON_AddBoolToObject(t, "trainable", l->params[k].trainable);
            if (l->quant && l->quant->param == k)
                cJSON_AddStringToObject(t, "dtype", "int8");
            cJSON_AddItemToArray(table, t);
        }
    }
    return table;
}

/* The header's "optimizer" record of o. */
static cJSON *optimizer_record(const Optimizer *o)
{
    cJSON *r = cJSON_CreateObject();
    char steps[32];
    snprintf(steps, sizeof steps, "%llu", (unsigned long long)o->steps);
    cJSON_AddStringToObject(r, "kind", train_optimizer_name(o->kind));
    cJSON_AddNumberToObject(r, "floats", (double)o->slab_floats);
    cJSON_AddStringToObject(r, "steps", steps);
    if (o->loss_scale.enabled) { /* fp16's loss scaling (train/loss_scale.h) */
        char skipped[32];
        snprintf(skipped, sizeof skipped, "%llu", (unsigned long long)o->loss_scale.skipped);
        cJSON_AddNumberToObject(r, "loss_scale", o->loss_scale.scale);
        cJSON_AddNumberToObject(r, "loss_scale_good_steps", o->loss_scale.good_steps);
        cJSON_AddStringToObject(r, "skipped_steps", skipped);
    }
    return r;
}

/* The header's "quantized" record: per quantized layer its index and input grid. */
static cJSON *quantized_record(const Net *net)
{
    cJSON *r = cJSON_CreateArray();
    for (int i = 0; i < net->n_layers; i++) {
        const LayerQuant *q = net->layers[i].quant;
        if (!q)
            continue;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "layer", i);
        cJSON_AddStringToObject(t, "input", q->static_input ? "static" : "dynamic");
        if (q->static_input) {
            cJSON_AddNumberToObject(t, "input_scale", q->input.scale);
            cJSON_AddNumberToObject(t, "input_zero_point", q->input.zero_point);
        }
        cJSON_AddItemToArray(r, t);
    }
    return r;
}

/* The pieces of a quantized net's parameter data, in parameter-slab order: each trainable
 * tensor's floats, or a quantized one's int8 values then its float scales. *n pieces; NULL when
 * out of memory. */
/* {"train": "N", "valid": "N", "fingerprint": "N"}: uint64 values as strings. */
static cJSON *data_print_record(const DataPrint *d)
{
    cJSON *r = cJSON_CreateObject();
    const uint64_t values[] = {d->train, d->valid, d->fingerprint};
    const char *const keys[] = {"train", "valid", "fingerprint"};
    for (int i = 0; i < 3; i++) {
        char number[32];
        snprintf(number, sizeof number, "%llu", (unsigned long long)values[i]);
        cJSON_AddStringToObject(r, keys[i], number);
    }
    return r;
}

static CheckpointSlab *quantized_params(const Net *net, int *n)
{
    int count = 0;
    for (int i = 0; i < net->n_layers; i++)
        count += 2 * net->layers[i].n_params;
    CheckpointSlab *slabs = calloc((size_t)count + 1, sizeof *slabs);
    *n = 0;
    for (int i = 0; slabs && i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_params; k++) {
            const Param *p = &l->params[k];
            if (!p->trainable)
                continue;
            if (l->quant && l->quant->param == k) {
                slabs[(*n)++] = (CheckpointSlab){l->quant->values, p->count};
                slabs[(*n)++] =
                    (CheckpointSlab){l->quant->scales, (size_t)l->quant->channels * sizeof(float)};
            } else {
                slabs[(*n)++] = (CheckpointSlab){p->data, p->count * sizeof(float)};
            }
        }
    }
    return slabs;
}

/* A quantized net's blob: its parameter pieces (quantized_params) and the state slab. */
static int save_quantized(const char *path, const Net *net, const cJSON *h, Error *e)
{
    int n;
    CheckpointSlab *slabs = quantized_params(net, &n);
    if (!slabs)
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    slabs[n++] = (CheckpointSlab){net->state, net->n_state * sizeof(float)};
    int st = checkpoint_file_write_slabs(path, h, slabs, n, e);
    free(slabs);
    return st;
}

/* model_save of a net whose slabs the host can read. */
static int save_host(const char *path, const Net *net, const Optimizer *opt, const ModelMeta *meta,
                     Error *e)
{
    if (opt && net_is_quantized(net))
        return error_set(e, CDL_EUSAGE, "%s: an int8 model has no optimizer state to save", path);
    char *cfg_text = cfg_to_text(&net->cfg);
    cJSON *h = cJSON_CreateObject();
    const size_t opt_floats = opt ? opt->slab_floats : 0;
    const size_t shadow_floats = opt && opt->ema ? ema_floats(net) : 0;
    if (!cfg_text || !h) {
        free(cfg_text);
        cJSON_Delete(h);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    }
    cJSON_AddStringToObject(h, "format", "cdl-model");
    cJSON_AddStringToObject(h, "cfg", cfg_text);
    cJSON_AddItemToObject(h, "tensors", tensor_table(net));
    cJSON_AddNumberToObject(h, "n_params", (double)net->n_params);
    cJSON_AddNumberToObject(h, "n_state", (double)net->n_state);
    if (opt)
        cJSON_AddItemToObject(h, "optimizer", optimizer_record(opt));
    cJSON_AddNumberToObject(h, "ema_floats", (double)shadow_floats);
    /* uint64 values as strings: JSON numbers are doubles. */
    char number[32];
    snprintf(number, sizeof number, "%llu", (unsigned long long)meta->seed);
    cJSON_AddStringToObject(h, "seed", number);
    snprintf(number, sizeof number, "%llu", (unsigned long long)meta->step);
    cJSON_AddStringToObject(h, "step", number);
    cJSON_AddNumberToObject(h, "epochs_done", meta->epochs_done);
    cJSON_AddNumberToObject(h, "steps_per_epoch", meta->steps_per_epoch);
    cJSON_AddNumberToObject(h, "epochs_planned", meta->epochs_planned);
    snprintf(number, sizeof number, "%llu", (unsigned long long)meta->samples_seen);
    cJSON_AddStringToObject(h, "samples_seen", number);
    snprintf(number, sizeof number, "%llu", (unsigned long long)meta->samples_in_epoch);
    cJSON_AddStringToObject(h, "samples_in_epoch", number);
    cJSON_AddNumberToObject(h, "global_batch", meta->global_batch);
    if (meta->data.fingerprint)
        cJSON_AddItemToObject(h, "dataset", data_print_record(&meta->data));
    cJSON_AddNumberToObject(h, "valid_accuracy", meta->valid_accuracy);
    cJSON_AddNumberToObject(h, "valid_loss", meta->valid_loss);
    cJSON_AddStringToObject(h, "data", meta->data_path);
    cJSON *names = cJSON_AddArrayToObject(h, "names");
    for (int i = 0; i < meta->n_names; i++)
        cJSON_AddItemToArray(names, cJSON_CreateString(meta->names[i]));
    if (meta->vocab.n) {
        char *vocab = text_vocab_to_string(&meta->vocab);
        if (!vocab) {
            free(cfg_text);
            cJSON_Delete(h);
            return error_set(e, CDL_ERUNTIME, "out of memory");
        }
        cJSON_AddStringToObject(h, "vocab", vocab);
        free(vocab);
    }
    if (net_is_quantized(net)) {
        cJSON_AddItemToObject(h, "quantized", quantized_record(net));
        int st = save_quantized(path, net, h, e);
        free(cfg_text);
        cJSON_Delete(h);
        return st;
    }
    /* The blob: weights, running statistics, optimizer state, EMA weights. */
    const CheckpointSlab slabs[] = {
        {net->params, net->n_params * sizeof(float)},
        {net->state, net->n_state * sizeof(float)},
        {opt_floats ? opt->slab : NULL, opt_floats * sizeof(float)},
        {shadow_floats ? opt->ema : NULL, shadow_floats * sizeof(float)},
    };
    int st = checkpoint_file_write_slabs(path, h, slabs, 4, e);
    free(cfg_text);
    cJSON_Delete(h);
    return st;
}

/* A host twin of net (built from its cfg, without gradients) holding its weights, and of opt
 * (NULL: none) holding its state, EMA and step count: what a device's net and optimizer save and
 * load through. */
static int host_twin(const Net *net, const Optimizer *opt, Net *twin, Optimizer *twin_opt, Error *e)
{
    memset(twin_opt, 0, sizeof *twin_opt);
    char *text = cfg_to_text(&net->cfg);
    if (!text)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    int st =
        net_build_from_text_uninitialised(twin, text, net->cfg.path, opt != NULL, net->seed, e);
    free(text);
    if (st)
        return st;
    st = net_copy_weights(twin, net, e);
    if (!st && opt)
        st = optimizer_alloc(twin_opt, twin, e);
    if (!st && opt) {
        opt->backend->download(twin_opt->slab, opt->slab, opt->slab_floats * sizeof(float));
        if (opt->ema && twin_opt->ema)
            opt->backend->download(twin_opt->ema, opt->ema, ema_floats(net) * sizeof(float));
        twin_opt->steps = opt->steps;
        twin_opt->loss_scale = opt->loss_scale;
    }
    if (st) {
        optimizer_free(twin_opt);
        net_free(twin);
    }
    return st;
}

int model_save(const char *path, const Net *net, const Optimizer *opt, const ModelMeta *meta,
               Error *e)
{
    if (net->backend->host_visible)
        return save_host(path, net, opt, meta, e);
    Net twin;
    Optimizer twin_opt;
    int st = host_twin(net, opt, &twin, &twin_opt, e);
    if (st)
        return st;
    st = save_host(path, &twin, opt ? &twin_opt : NULL, meta, e);
    optimizer_free(&twin_opt);
    net_free(&twin);
    return st;
}

int model_load_on(const char *path, NetPlacement where, Net *net, int want_grads, Optimizer *opt,
                  ModelMeta *meta, Error *e)
{
    if (where.backend == CDL_BACKEND_CPU)
        return model_load(path, net, want_grads, opt, meta, e);
    Net host;
    Optimizer host_opt;
    memset(net, 0, sizeof *net);
    if (opt)
        memset(opt, 0, sizeof *opt);
    int st = model_load(path, &host, want_grads, opt ? &host_opt : NULL, meta, e);
    char *text = st ? NULL : cfg_to_text(&host.cfg);
    if (!st && !text)
        st = error_set(e, CDL_ERUNTIME, "out of memory");
    st =
        st ? st : net_build_from_text_on(net, text, host.cfg.path, want_grads, host.seed, where, e);
    st = st ? st : net_copy_weights(net, &host, e);
    if (!st) {
        net->step = host.step;
        free(net->cfg.warnings); /* the checkpoint's, not those of its cfg written out again */
        net->cfg.warnings = host.cfg.warnings;
        host.cfg.warnings = NULL;
    }
    if (!st && opt)
        st = optimizer_alloc(opt, net, e);
    if (!st && opt) {
        opt->backend->upload(opt->slab, host_opt.slab, host_opt.slab_floats * sizeof(float));
        if (opt->ema && host_opt.ema)
            opt->backend->upload(opt->ema, host_opt.ema, ema_floats(&host) * sizeof(float));
        opt->steps = host_opt.steps;
        opt->loss_scale = host_opt.loss_scale;
    }
    free(text);
    if (opt)
        optimizer_free(&host_opt);
    net_free(&host);
    return st;
}

int model_save_checkpoint(void *ctx, const char *path, const Net *net, const Optimizer *opt,
                          const ModelMeta *meta, Error *e)
{
    (void)ctx;
    return model_save(path, net, opt, meta, e);
}

static uint64_t json_u64(const cJSON *h, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, key);
    return cJSON_IsString(v) ? strtoull(v->valuestring, NULL, 10) : 0;
}

static double json_number(const cJSON *h, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

/* A JSON number as an int in 0..INT_MAX (casting an out-of-range double is undefined). */
static int json_count(const cJSON *h, const char *key)
{
    double v = json_number(h, key, 0);
    return v >= 0 && v <= INT_MAX ? (int)v : 0;
}

/* The header's metadata; a class list names at most as many classes as net has outputs. */
static int read_meta(const char *path, const cJSON *h, const Net *net, ModelMeta *meta, Error *e)
{
    memset(meta, 0, sizeof *meta);
    meta->seed = json_u64(h, "seed");
    meta->step = json_u64(h, "step");
    meta->epochs_done = json_count(h, "epochs_done");
    meta->steps_per_epoch = json_count(h, "steps_per_epoch");
    meta->epochs_planned = json_count(h, "epochs_planned");
    meta->samples_seen = json_u64(h, "samples_seen");
    meta->samples_in_epoch = json_u64(h, "samples_in_epoch");
    meta->global_batch = json_count(h, "global_batch");
    const cJSON *dataset = cJSON_GetObjectItemCaseSensitive(h, "dataset");
    meta->data = (DataPrint){json_u64(dataset, "train"), json_u64(dataset, "valid"),
                             json_u64(dataset, "fingerprint")};
    meta->valid_accuracy = json_number(h, "valid_accuracy", -1);
    meta->valid_loss = json_number(h, "valid_loss", -1);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(h, "data");
    if (cJSON_IsString(data))
        snprintf(meta->data_path, sizeof meta->data_path, "%s", data->valuestring);
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(h, "names");
    int n = cJSON_IsArray(names) ? cJSON_GetArraySize(names) : 0;
    if (n > net->classes) /* fewer is a dataset with fewer classes than the net has outputs */
        return error_set(e, CDL_ERUNTIME,
                         "%s: the header names %d classes but the model has only %d outputs (a "
                         "damaged or edited checkpoint)",
                         path, n, net->classes);
    if (n > 0) {
        meta->names = calloc((size_t)n, sizeof *meta->names);
        if (!meta->names)
            return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
        const cJSON *name;
        cJSON_ArrayForEach(name, names)
        {
            meta->names[meta->n_names] = strdup(cJSON_IsString(name) ? name->valuestring : "?");
            if (!meta->names[meta->n_names++])
                return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
        }
    }
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(h, "vocab");
    if (cJSON_IsString(vocab))
        return text_vocab_from_string(&meta->vocab, vocab->valuestring, path, e);
    return CDL_OK;
}

/* Checks that the checkpoint's tensor table matches the net rebuilt from its cfg. */
static int check_tensor_table(const char *path, const cJSON *h, const Net *net, Error *e)
{
    const cJSON *table = cJSON_GetObjectItemCaseSensitive(h, "tensors");
    const cJSON *t = cJSON_IsArray(table) ? table->child : NULL;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_params; k++, t = t ? t->next : NULL) {
            const cJSON *name = t ? cJSON_GetObjectItemCaseSensitive(t, "name") : NULL;
            if (!t || json_number(t, "layer", -1) != i || !cJSON_IsString(name) ||
                strcmp(name->valuestring, l->params[k].name) ||
                json_number(t, "count", -1) != (double)l->params[k].count)
                return error_set(e, CDL_ERUNTIME,
                                 "%s: tensor table does not match its cfg at layer %d (%s)", path,
                                 i, l->params[k].name);
        }
    }
    if (t)
        return error_set(e, CDL_ERUNTIME, "%s: tensor table has more tensors than its cfg", path);
    return CDL_OK;
}

/* What the blob holds after the weights, as the header describes it. */
typedef struct SavedTraining {
    int has_optimizer;
    OptimizerKind kind;
    uint64_t steps;
    size_t optimizer_floats, shadow_floats;
    int has_loss_scale; /* loss_scale holds the saved fp16 loss scaling */
    LossScale loss_scale;
} SavedTraining;

/* Reads the "optimizer" record (or the "has_velocity" flag of older checkpoints) and
 * "ema_floats", and checks their sizes against net. */
static int read_saved_training(const char *path, const cJSON *h, const Net *net, SavedTraining *s,
                               Error *e)
{
    memset(s, 0, sizeof *s);
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(h, "optimizer");
    if (r) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(r, "kind");
        const char *name = cJSON_IsString(kind) ? kind->valuestring : "";
        int k = CDL_OPT_SGD;
        while (k <= CDL_OPT_ADAMW && strcmp(name, train_optimizer_name((OptimizerKind)k)))
            k++;
        if (k > CDL_OPT_ADAMW)
            return error_set(e, CDL_ERUNTIME, "%s: unknown optimizer '%s' in the header", path,
                             name);
        s->has_optimizer = 1;
        s->kind = (OptimizerKind)k;
        s->steps = json_u64(r, "steps");
        const cJSON *scale = cJSON_GetObjectItemCaseSensitive(r, "loss_scale");
        s->has_loss_scale =
            cJSON_IsNumber(scale) && scale->valuedouble >= 1 && scale->valuedouble <= 0x1p24;
        if (s->has_loss_scale)
            s->loss_scale = (LossScale){.enabled = 1,
                                        .scale = (float)scale->valuedouble,
                                        .good_steps = json_count(r, "loss_scale_good_steps") %
                                                      LOSS_SCALE_GROWTH_INTERVAL,
                                        .skipped = json_u64(r, "skipped_steps")};
        s->optimizer_floats = (size_t)json_count(r, "floats");
        const size_t need = optimizer_state_floats(s->kind, net->n_params);
        if (s->optimizer_floats != need)
            return error_set(e, CDL_ERUNTIME,
                             "%s: the %s state holds %zu values, the model needs %zu", path, name,
                             s->optimizer_floats, need);
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "has_velocity"))) {
        /* Written before the optimizer record: SGD velocity, as many updates as steps. */
        s->has_optimizer = 1;
        s->kind = CDL_OPT_SGD;
        s->steps = json_u64(h, "step");
        s->optimizer_floats = net->n_params;
    }
    s->shadow_floats = (size_t)json_count(h, "ema_floats");
    if (s->shadow_floats && s->shadow_floats != ema_floats(net))
        return error_set(e, CDL_ERUNTIME, "%s: the EMA holds %zu values, the model needs %zu", path,
                         s->shadow_floats, ema_floats(net));
    return CDL_OK;
}

/* Reads the blob straight into net's weights (the EMA's for inference, when there is one) and,
 * for training, sets up *opt from the saved state. */
static int restore_tensors(const char *path, CheckpointReader *r, const SavedTraining *saved,
                           Net *net, Optimizer *opt, Error *e)
{
    const size_t weight_bytes = net->n_params * sizeof(float),
                 state_bytes = net->n_state * sizeof(float);
    if (!opt) {
        /* Inference with an EMA: skip to the EMA weights (the blob's EMA holds params then
         * state, as the net's slabs). */
        const int skip = saved->shadow_floats > 0;
        const size_t skipped =
            skip ? weight_bytes + state_bytes + saved->optimizer_floats * sizeof(float) : 0;
        int st = checkpoint_file_read_into(r, NULL, skipped, e);
        st = st ? st : checkpoint_file_read_into(r, net->params, weight_bytes, e);
        st = st ? st : checkpoint_file_read_into(r, net->state, state_bytes, e);
        if (!st && !skip)
            st = checkpoint_file_read_into(r, NULL, saved->optimizer_floats * sizeof(float), e);
        return st ? st : checkpoint_file_finish(r, e);
    }
    int st = checkpoint_file_read_into(r, net->params, weight_bytes, e);
    st = st ? st : checkpoint_file_read_into(r, net->state, state_bytes, e);
    if (st)
        return st;
    st = optimizer_alloc(opt, net, e);
    if (st)
        return st;
    if (saved->has_optimizer && saved->kind != opt->kind)
        return error_set(e, CDL_EUSAGE,
                         "%s: its optimizer state is %s's but its cfg says optimizer=%s; resume "
                         "with the optimizer it was trained with, or start a new run from it "
                         "with --weights",
                         path, train_optimizer_name(saved->kind), train_optimizer_name(opt->kind));
    if (opt->ema && !saved->shadow_floats) /* no saved EMA: it starts from the weights */
        ema_start(opt->ema, net);
    st = checkpoint_file_read_into(r, saved->has_optimizer ? opt->slab : NULL,
                                   saved->optimizer_floats * sizeof(float), e);
    opt->steps = saved->has_optimizer ? saved->steps : opt->steps;
    if (saved->has_loss_scale && opt->loss_scale.enabled)
        opt->loss_scale = saved->loss_scale;
    if (!st)
        st = checkpoint_file_read_into(r, opt->ema, saved->shadow_floats * sizeof(float), e);
    return st ? st : checkpoint_file_finish(r, e);
}

/* Reads the "quantized" record into net: its LayerQuants (net_quant_alloc) with their input
 * grids. */
static int read_quantized(const char *path, const cJSON *record, Net *net, Error *e)
{
    unsigned char *which = calloc((size_t)net->n_layers, 1);
    if (!which)
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    int st = cJSON_IsArray(record)
                 ? CDL_OK
                 : error_set(e, CDL_ERUNTIME, "%s: bad \"quantized\" record", path);
    const cJSON *t;
    cJSON_ArrayForEach(t, record)
    {
        const double i = json_number(t, "layer", -1);
        if (st || i < 0 || i >= net->n_layers || i != (int)i || which[(int)i] ||
            net_layer_quantizable(&net->layers[(int)i]) < 0) {
            st = st ? st
                    : error_set(e, CDL_ERUNTIME,
                                "%s: the \"quantized\" record names layer %g, which cannot hold "
                                "int8 weights",
                                path, i);
            break;
        }
        which[(int)i] = 1;
    }
    st = st ? st : net_quant_alloc(net, which, e);
    free(which);
    cJSON_ArrayForEach(t, record)
    {
        if (st)
            break;
        LayerQuant *q = net->layers[(int)json_number(t, "layer", -1)].quant;
        const cJSON *input = cJSON_GetObjectItemCaseSensitive(t, "input");
        q->static_input = cJSON_IsString(input) && !strcmp(input->valuestring, "static");
        if (!q->static_input)
            continue;
        q->input.scale = (float)json_number(t, "input_scale", -1);
        const double zp = json_number(t, "input_zero_point", -1);
        q->input.zero_point = zp >= 0 && zp <= 255 ? (int)zp : -1;
        if (!(q->input.scale > 0) || q->input.zero_point < 0 || zp != q->input.zero_point)
            st = error_set(e, CDL_ERUNTIME, "%s: layer %g's input grid is not valid", path,
                           json_number(t, "layer", -1));
    }
    if (!st)
        net_name_engines(net); /* int8 layers with calibrated grids may run on another engine */
    return st;
}

/* The blob of a quantized checkpoint, read into net's int8 tensors, floats and state. */
static int restore_quantized(const char *path, CheckpointReader *r, Net *net, Error *e)
{
    int n;
    CheckpointSlab *slabs = quantized_params(net, &n);
    if (!slabs)
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    size_t bytes = net->n_state * sizeof(float);
    for (int i = 0; i < n; i++)
        bytes += slabs[i].bytes;
    int st = r->raw_bytes == bytes ? CDL_OK
                                   : error_set(e, CDL_ERUNTIME,
                                               "%s: tensor data holds %zu bytes, the int8 model "
                                               "needs %zu",
                                               path, (size_t)r->raw_bytes, bytes);
    for (int i = 0; !st && i < n; i++)
        st = checkpoint_file_read_into(r, (void *)slabs[i].data, slabs[i].bytes, e);
    free(slabs);
    st = st ? st : checkpoint_file_read_into(r, net->state, net->n_state * sizeof(float), e);
    st = st ? st : checkpoint_file_finish(r, e);
    if (!st)
        net_quant_prepare(net);
    return st;
}

/* A warning on net for each map=FILE in a checkpoint's cfg text: one written before checkpoints
 * kept the class map's table (class_keys.h), whose table is the file's as it is now. */
static void warn_map_files(const char *path, const char *text, const char *label, Net *net)
{
    Cfg old;
    Error ignored;
    if (!strstr(text, "\nmap=") || cfg_parse_text(text, label, &old, &ignored))
        return;
    for (int i = 0; i < old.n_sections; i++) {
        CfgEntry *en = cfg_find(&old.sections[i], "map");
        if (en)
            cfg_warn(&net->cfg,
                     "%s: warning: map=%s is read from the working directory: %s was written "
                     "before checkpoints kept class maps (one saved from it keeps the table)",
                     cfg_where(&old, &old.sections[i], en).text, en->value, path);
    }
    cfg_free(&old);
}

int model_load(const char *path, Net *net, int want_grads, Optimizer *opt, ModelMeta *meta,
               Error *e)
{
    cJSON *h = NULL;
    CheckpointReader r;
    memset(meta, 0, sizeof *meta);
    if (opt)
        memset(opt, 0, sizeof *opt);
    int st = checkpoint_file_open(&r, path, &h, e);
    if (st)
        return st;
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(h, "format");
    const cJSON *cfg_text = cJSON_GetObjectItemCaseSensitive(h, "cfg");
    if (!cJSON_IsString(format) || strcmp(format->valuestring, "cdl-model") ||
        !cJSON_IsString(cfg_text)) {
        st = error_set(e, CDL_ERUNTIME, "%s: checkpoint header lacks the model's cfg", path);
        goto done;
    }
    const cJSON *quantized = cJSON_GetObjectItemCaseSensitive(h, "quantized");
    if (quantized && (want_grads || opt)) {
        st = error_set(e, CDL_EUSAGE,
                       "%s is an int8 model (cdl quantize): it runs predict, eval and bench "
                       "--inference, not training; train from the float checkpoint it was made "
                       "from",
                       path);
        goto done;
    }
    char label[1100];
    snprintf(label, sizeof label, "%s(cfg)", path);
    /* Every tensor comes from the blob: no initialisation to throw away. */
    st = net_build_from_text_uninitialised(net, cfg_text->valuestring, label, want_grads,
                                           json_u64(h, "seed"), e);
    if (st)
        goto done;
    warn_map_files(path, cfg_text->valuestring, label, net);
    SavedTraining saved;
    st = check_tensor_table(path, h, net, e);
    if (!st && quantized) {
        st = read_quantized(path, quantized, net, e);
        st = st ? st : read_meta(path, h, net, meta, e);
        st = st ? st : restore_quantized(path, &r, net, e);
        goto loaded;
    }
    st = st ? st : read_saved_training(path, h, net, &saved, e);
    const size_t floats =
        st ? 0 : net->n_params + net->n_state + saved.optimizer_floats + saved.shadow_floats;
    if (!st && r.raw_bytes != floats * sizeof(float))
        st = error_set(e, CDL_ERUNTIME, "%s: tensor data holds %zu bytes, the model needs %zu",
                       path, (size_t)r.raw_bytes, floats * sizeof(float));
    st = st ? st : read_meta(path, h, net, meta, e);
    st = st ? st : restore_tensors(path, &r, &saved, net, opt, e);
loaded:
    if (st) {
        net_free(net);
        model_meta_free(meta);
        if (opt)
            optimizer_free(opt);
    }
done:
    cJSON_Delete(h);
    checkpoint_file_close(&r);
    return st;
}
