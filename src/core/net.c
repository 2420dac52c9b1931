/* Network construction from a cfg, slab allocation, and the forward/backward passes. */
#include "core/net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/darknet_compat.h"
#include "core/net_channels_last.h"
#include "core/net_memory.h"
#include "core/net_storage.h"
#include "data/boxes.h"
#include "util/cache_lines.h"
#include "util/profiler.h"

/* The names a key takes; a table's index is the enum value it names. */
static const char *const precision_names[] = {"fp32", "bf16", "tf32", "fp16"}; /* GemmPrecision */
#define N_NAMES(table) (int)(sizeof table / sizeof table[0])

/* A sequence net's input is [1][source + seq][inputs] per sample: a width, height or channels that
 * says otherwise is refused (it would size the input apart from the labels, one per token). */
static int check_sequence_shape(const Cfg *cfg, CfgSection *s, const Net *net, int inputs, Error *e)
{
    const char *const keys[] = {"channels", "height", "width"};
    const int expected[] = {1, net->source + net->seq, inputs},
              given[] = {net->in_shape.c, net->in_shape.h, net->in_shape.w};
    const char *seq_key = cfg_find(s, "seq") ? "seq" : "time_steps";
    for (int k = 0; k < 3; k++)
        if (given[k] != expected[k])
            return cfg_bad_value(cfg, s, keys[k], e,
                                 "contradicts %s=%d: a sequence net's input is 1 x %s%s x inputs "
                                 "(here %dx%dx%d, CxHxW); leave width, height and channels out",
                                 seq_key, net->seq, net->source ? "(source + seq)" : "", seq_key, 1,
                                 net->source + net->seq, inputs);
    return CDL_OK;
}

static int parse_net_section(Net *net, Cfg *cfg, CfgSection *s, Error *e)
{
    Hyper *h = &net->hyper;
    int st = CDL_OK;
    st = st ? st : cfg_get_int(cfg, s, "batch", 1, &h->batch, e);
    st = st ? st : cfg_get_int(cfg, s, "subdivisions", 1, &h->subdivisions, e);
    st = st ? st : cfg_get_flag(cfg, s, "split_passes", 1, &h->split_passes, e);
    int inputs = 1;
    st = st ? st : cfg_get_int(cfg, s, "seq", 0, &net->seq, e);
    if (!st && !cfg_find(s, "seq")) /* darknet's name; its recurrent cfgs use 1 */
        st = cfg_get_int(cfg, s, "time_steps", 0, &net->seq, e);
    /* Without a text to size it (cdl train sets it from the data): the byte vocabulary. */
    st = st ? st : cfg_get_int(cfg, s, "vocab", net->seq > 0 ? 256 : 0, &net->vocab, e);
    st = st ? st : cfg_get_int(cfg, s, "inputs", 1, &inputs, e);
    st = st ? st : cfg_require_min(cfg, s, "seq", net->seq, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "time_steps", net->seq, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "vocab", net->vocab, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "inputs", inputs, 1, e);
    st = st ? st : cfg_get_int(cfg, s, "source", 0, &net->source, e);
    st = st ? st : cfg_require_min(cfg, s, "source", net->source, 0, e);
    if (!st && net->source && (net->seq < 1 || inputs != 1))
        st = cfg_bad_value(cfg, s, "source", e,
                           "source tokens come before the target's in a net of token ids: it "
                           "needs seq=T (the target's tokens) and inputs=1");
    if (!st && net->seq > 0) /* a sequence of `inputs` values per token; no image keys */
        net->in_shape = (Shape){1, net->source + net->seq, inputs};
    net->rows_source = net->source;
    net->rows_target = net->seq;
    st = st ? st : cfg_get_int(cfg, s, "width", net->in_shape.w, &net->in_shape.w, e);
    st = st ? st : cfg_get_int(cfg, s, "height", net->in_shape.h, &net->in_shape.h, e);
    st = st ? st : cfg_get_int(cfg, s, "channels", net->in_shape.c, &net->in_shape.c, e);
    if (!st && net->seq > 0)
        st = check_sequence_shape(cfg, s, net, inputs, e);
    st = st ? st : cfg_get_int(cfg, s, "bn_darknet", 0, &h->bn_darknet, e);
    /* darknet's rolling statistics move by 0.01 */
    st =
        st ? st
           : cfg_get_float(cfg, s, "bn_momentum", h->bn_darknet ? 0.01f : 0.1f, &h->bn_momentum, e);
    st = st ? st : cfg_get_float(cfg, s, "bn_eps", 1e-5f, &h->bn_eps, e);
    st = st ? st : cfg_get_int(cfg, s, "sync_bn", 0, &h->sync_bn, e);
    st = st ? st : cfg_get_int(cfg, s, "recompute_every", 0, &net->recompute_every, e);
    st = st ? st : cfg_require_min(cfg, s, "recompute_every", net->recompute_every, 0, e);
    int precision = 0;
    st = st ? st
            : cfg_get_named(cfg, s, "precision", precision_names, N_NAMES(precision_names),
                            &precision, e);
    net->precision = (GemmPrecision)precision;
    st = st ? st : cfg_get_flag(cfg, s, "memory_plan", 1, &net->memory_plan, e);
    st = st ? st : cfg_get_flag(cfg, s, "channels_last", 0, &net->channels_last, e);
    st = st ? st : net_read_foreign_keys(cfg, net->in_shape, e);
    st = st ? st : darknet_check_keys(cfg, s, e);
    st = st ? st : cfg_check_unused(cfg, s, e);
    st = st ? st : cfg_require_min(cfg, s, "batch", h->batch, 1, e);
    st = st ? st : cfg_require_min(cfg, s, "subdivisions", h->subdivisions, 1, e);
    st = st ? st : cfg_require_min(cfg, s, "width", net->in_shape.w, 1, e);
    st = st ? st : cfg_require_min(cfg, s, "height", net->in_shape.h, 1, e);
    st = st ? st : cfg_require_min(cfg, s, "channels", net->in_shape.c, 1, e);
    st = st ? st : cfg_require_min(cfg, s, "bn_eps", h->bn_eps, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "bn_darknet", h->bn_darknet, 0, e);
    st = st ? st : cfg_require_max(cfg, s, "bn_darknet", h->bn_darknet, 1, 1, e);
    if (st)
        return st;
    if ((double)net->in_shape.c * net->in_shape.h * net->in_shape.w > (double)NET_MAX_FLOATS)
        return error_set(
            e, CDL_EUSAGE, "%s:%d: the input %dx%dx%d (CxHxW) is too large: more than %zu values",
            cfg->path, s->line, net->in_shape.c, net->in_shape.h, net->in_shape.w, NET_MAX_FLOATS);
    if (h->batch % h->subdivisions)
        return error_set(e, CDL_EUSAGE, "%s:%d: batch=%d is not divisible by subdivisions=%d",
                         cfg->path, s->line, h->batch, h->subdivisions);
    return CDL_OK;
}

/* Reads the keys every layer takes, whatever its family: freeze=1 and its darknet name
 * stopbackward=1 freeze layer i and all before it (net->train_from); checkpoint=1 (or [net]
 * recompute_every) starts a recomputed segment at layer i (Net.n_segments, Layer.segment). */
static int parse_common_keys(Net *net, const Cfg *cfg, CfgSection *s, int i, Error *e)
{
    static const char *const keys[] = {"freeze", "stopbackward"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        int on;
        int st = cfg_get_flag(cfg, s, keys[k], 0, &on, e);
        if (st)
            return st;
        if (on)
            net->train_from = i + 1;
    }
    int checkpoint;
    int st = cfg_get_flag(cfg, s, "checkpoint", 0, &checkpoint, e);
    if (st)
        return st;
    if (checkpoint || (net->recompute_every > 0 && i % net->recompute_every == 0))
        net->n_segments++;
    net->layers[i].segment = net->n_segments - 1;
    return CDL_OK;
}

/* Sets every layer's last reader (Layer.last_reader). A net without gradients recomputes
 * nothing: its segments are dropped. */
static void plan_segments(Net *net, int want_grads)
{
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        if (!want_grads)
            l->segment = -1;
        l->last_reader = -1;
        for (int k = 0; k < l->n_inputs; k++)
            if (l->inputs[k] >= 0)
                net->layers[l->inputs[k]].last_reader = i;
    }
    if (!want_grads)
        net->n_segments = 0;
}

/* Fails on the first section after [net] that names no layer family, before anything is
 * parsed, so a darknet detector or recurrent net is refused for its layers, not its [net]. */
static int check_sections(const Cfg *cfg, Error *e)
{
    for (int i = 1; i < cfg->n_sections; i++) {
        const CfgSection *s = &cfg->sections[i];
        if (layer_type_find(s->name))
            continue;
        int st = darknet_check_section(cfg, s, e);
        return st ? st
                  : error_set(e, CDL_EUSAGE, "%s:%d: unknown section [%s] (valid: net, %s)",
                              cfg->path, s->line, s->name, layer_type_names());
    }
    return CDL_OK;
}

/* The engine the backend expects to run l on, for `cdl info` and profiles (LayerKernels.engine);
 * NULL where the family has one. */
static const char *expected_engine(const Layer *l, const ExecContext *exec)
{
    return l->kernels->engine ? l->kernels->engine(l, exec) : NULL;
}

/* n rounded up to LAYER_STATE_ALIGN (which suits every type a priv or a state holds). */
static size_t aligned(size_t n)
{
    return (n + LAYER_STATE_ALIGN - 1) / LAYER_STATE_ALIGN * LAYER_STATE_ALIGN;
}

static int parse_layers(Net *net, Cfg *cfg, Error *e)
{
    net->n_layers = cfg->n_sections - 1;
    if (net->n_layers < 1)
        return error_set(e, CDL_EUSAGE, "%s:%d: the cfg defines no layers after [%s]", cfg->path,
                         cfg->sections[0].line, cfg->sections[0].name);
    /* One allocation: the layers, then each one's priv (LayerType.priv_size). */
    size_t bytes = aligned((size_t)net->n_layers * sizeof *net->layers);
    for (int i = 0; i < net->n_layers; i++)
        bytes += aligned(layer_type_find(cfg->sections[i + 1].name)->priv_size);
    net->layers = calloc(1, bytes);
    if (!net->layers)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    unsigned char *priv =
        (unsigned char *)net->layers + aligned((size_t)net->n_layers * sizeof *net->layers);
    Shape prev = net->in_shape;
    double param_values = 0;
    for (int i = 0; i < net->n_layers; i++) {
        CfgSection *s = &cfg->sections[i + 1];
        Layer *l = &net->layers[i];
        l->index = i;
        l->line = s->line;
        l->type = layer_type_find(s->name); /* known: check_sections */
        l->kernels = net->backend->kernels(l->type);
        if (!l->kernels)
            return error_set(e, CDL_EUSAGE, "%s:%d: layer %d [%s] has no %s implementation",
                             cfg->path, s->line, i, s->name, net->backend->name);
        l->in_shape = prev;
        l->inputs[0] = i - 1;
        l->n_inputs = 1;
        l->activation = CDL_ACT_LINEAR;
        l->precision = net->precision;
        l->priv = l->type->priv_size ? priv : NULL;
        priv += aligned(l->type->priv_size);
        /* darknet's features cdl refuses before the keys of the rest (yolo9000's tree softmax
         * before its class map); the family's keys then lead the valid-key list of an unknown
         * key. */
        int st = darknet_check_keys(cfg, s, e);
        st = st ? st : l->type->parse(l, cfg, s, net, e);
        st = st ? st : parse_common_keys(net, cfg, s, i, e);
        if (st)
            return st;
        l->engine = expected_engine(l, &net->exec);
        st = cfg_check_unused(cfg, s, e);
        if (st)
            return st;
        if (l->out_shape.c < 1 || l->out_shape.h < 1 || l->out_shape.w < 1)
            return error_set(e, CDL_EUSAGE, "%s:%d: layer %d [%s] has an empty output", cfg->path,
                             s->line, i, s->name);
        if ((double)l->out_shape.c * l->out_shape.h * l->out_shape.w > (double)NET_MAX_FLOATS)
            return error_set(e, CDL_EUSAGE,
                             "%s:%d: layer %d [%s] is too large: its output %dx%dx%d (CxHxW) is "
                             "more than %zu values",
                             cfg->path, s->line, i, s->name, l->out_shape.c, l->out_shape.h,
                             l->out_shape.w, NET_MAX_FLOATS);
        for (int p = 0; p < l->n_params; p++)
            param_values += (double)l->params[p].count;
        if (param_values > (double)NET_MAX_FLOATS)
            return error_set(e, CDL_EUSAGE,
                             "%s:%d: layer %d [%s]: the net would have more than %zu parameters",
                             cfg->path, s->line, i, s->name, NET_MAX_FLOATS);
        if (l->type->is_loss && i != net->n_layers - 1 &&
            !(i == net->n_layers - 2 && layer_type_find(cfg->sections[i + 2].name)->follows_loss))
            return error_set(e, CDL_EUSAGE,
                             "%s:%d: layer %d: [%s] is the loss and must be the last layer "
                             "(or be followed by darknet's [cost] alone)",
                             cfg->path, s->line, i, s->name);
        prev = l->out_shape;
    }
    return CDL_OK;
}

/* Points every Param at its place in the slabs params, grads (NULL: no gradients) and state, laid
 * out in the order of the layers and their parameters. */
static void point_params(Net *net, float *params, float *grads, float *state)
{
    size_t param_at = 0, state_at = 0;
    for (int i = 0; i < net->n_layers; i++)
        for (int p = 0; p < net->layers[i].n_params; p++) {
            Param *pa = &net->layers[i].params[p];
            if (pa->trainable) {
                pa->data = params + param_at;
                pa->grad = grads ? grads + param_at : NULL;
                param_at += pa->count;
            } else {
                pa->data = state + state_at;
                state_at += pa->count;
            }
        }
}

/* Allocates the parameter, gradient and state slabs on the net's backend (zeroed) and assigns
 * every Param its place in them. */
static int allocate_params(Net *net, int want_grads, Error *e)
{
    for (int i = 0; i < net->n_layers; i++)
        for (int p = 0; p < net->layers[i].n_params; p++) {
            Param *pa = &net->layers[i].params[p];
            *(pa->trainable ? &net->n_params : &net->n_state) += pa->count;
        }
    const BackendOps *be = net->backend;
    net->params = be->alloc(net->n_params + 1, sizeof *net->params);
    net->state = be->alloc(net->n_state + 1, sizeof *net->state);
    net->grads = want_grads ? be->alloc(net->n_params + 1, sizeof *net->grads) : NULL;
    if (!net->params || !net->state || (want_grads && !net->grads))
        return error_set(e, CDL_ERUNTIME, "out of memory for %zu parameters", net->n_params);
    point_params(net, net->params, net->grads, net->state);
    return CDL_OK;
}

/* Initialises every parameter and running statistic (LayerType.init, host code) from seed: in the
 * slabs on a host-visible backend, else in host copies then uploaded. */
static int init_params(Net *net, uint64_t seed, Error *e)
{
    Rng rng;
    rng_seed(&rng, seed, 0x1417);
    const BackendOps *be = net->backend;
    float *params = net->params, *state = net->state;
    if (!be->host_visible) {
        params = calloc(net->n_params + 1, sizeof *params);
        state = calloc(net->n_state + 1, sizeof *state);
        if (!params || !state) {
            free(params);
            free(state);
            return error_set(e, CDL_ERUNTIME, "out of memory for %zu parameters", net->n_params);
        }
        point_params(net, params, NULL, state);
    }
    for (int i = 0; i < net->n_layers; i++)
        if (net->layers[i].type->init)
            net->layers[i].type->init(&net->layers[i], &rng);
    if (!be->host_visible) {
        be->upload(net->params, params, net->n_params * sizeof *params);
        be->upload(net->state, state, net->n_state * sizeof *state);
        point_params(net, net->params, net->grads, net->state);
        free(params);
        free(state);
    }
    return CDL_OK;
}

/* net_build on backend; init 0 skips the layers' initialisation (the slabs stay zero). */
static int build(Net *net, Cfg *cfg, int want_grads, uint64_t seed, int init, NetPlacement where,
                 Error *e)
{
    memset(net, 0, sizeof *net);
    net->backend = backend_find(where.backend);
    if (!net->backend)
        return error_set(e, CDL_EUSAGE, "this cdl was built without a %s backend%s",
                         backend_name(where.backend),
                         where.backend == CDL_BACKEND_GPU ? " (make GPU=1)" : "");
    net->device = where.device;
    net->seed = seed;
    net->split = 1;
    net->want_grads = want_grads;
    const char *first = cfg->sections[0].name;
    int st = CDL_OK;
    if (strcmp(first, "net") && strcmp(first, "network"))
        st = error_set(e, CDL_EUSAGE, "%s:%d: the first section must be [net], found [%s]",
                       cfg->path, cfg->sections[0].line, first);
    st = st ? st : check_sections(cfg, e);
    st = st ? st : parse_net_section(net, cfg, &cfg->sections[0], e);
    /* After the [net] keys are checked (the backend's among them): its own warnings once. */
    st = st ? st : net->backend->open(&net->exec, cfg, where.device, e);
    st = st ? st : parse_layers(net, cfg, e);
    st = st ? st : allocate_params(net, want_grads, e);
    if (st) {
        net_free(net);
        return st;
    }
    plan_segments(net, want_grads);
    st = init ? init_params(net, seed, e) : CDL_OK;
    if (st) {
        net_free(net);
        return st;
    }
    const Shape out = net->layers[net->n_layers - 1].out_shape;
    net->classes = (int)(shape_size(out) / (size_t)net_labels_per_sample(net));
    net->loss_divisor = (float)net->hyper.batch * (float)net_labels_per_sample(net);
    net->grad_scale = 1.0f;
    net->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    return CDL_OK;
}

/* The CPU, where every net_build* without a placement builds. */
static const NetPlacement on_cpu = {CDL_BACKEND_CPU, 0};

int net_build(Net *net, Cfg *cfg, int want_grads, uint64_t seed, Error *e)
{
    return build(net, cfg, want_grads, seed, 1, on_cpu, e);
}

int net_build_on(Net *net, Cfg *cfg, int want_grads, uint64_t seed, NetPlacement where, Error *e)
{
    return build(net, cfg, want_grads, seed, 1, where, e);
}

/* Builds from a parsed cfg, freeing it when the build fails (build owns it otherwise). */
static int build_owning(Net *net, Cfg *cfg, int want_grads, uint64_t seed, int init_params,
                        NetPlacement where, Error *e)
{
    int st = build(net, cfg, want_grads, seed, init_params, where, e);
    if (st)
        cfg_free(cfg);
    return st;
}

int net_build_from_text(Net *net, const char *text, const char *path, int want_grads, uint64_t seed,
                        Error *e)
{
    Cfg cfg;
    int st = cfg_parse_text(text, path, &cfg, e);
    return st ? st : build_owning(net, &cfg, want_grads, seed, 1, on_cpu, e);
}

int net_build_from_text_on(Net *net, const char *text, const char *path, int want_grads,
                           uint64_t seed, NetPlacement where, Error *e)
{
    Cfg cfg;
    int st = cfg_parse_text(text, path, &cfg, e);
    return st ? st : build_owning(net, &cfg, want_grads, seed, 1, where, e);
}

int net_move_to(Net *net, NetPlacement where, Error *e)
{
    if (net->backend->kind == where.backend && net->device == where.device)
        return CDL_OK;
    char *text = cfg_to_text(&net->cfg);
    if (!text)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    Net moved;
    int st =
        net_build_from_text_on(&moved, text, net->cfg.path, net->want_grads, net->seed, where, e);
    free(text);
    st = st ? st : net_copy_weights(&moved, net, e);
    if (st) {
        if (moved.backend)
            net_free(&moved);
        return st;
    }
    moved.step = net->step;
    net_set_precision(&moved, net->precision);
    net_free(net);
    *net = moved;
    return CDL_OK;
}

int net_copy_weights(Net *to, const Net *from, Error *e)
{
    if (to->n_params != from->n_params || to->n_state != from->n_state)
        return error_set(e, CDL_EUSAGE, "the nets' weights differ in size (%zu+%zu, %zu+%zu)",
                         to->n_params, to->n_state, from->n_params, from->n_state);
    int st = net_sync((Net *)from, e);
    if (st)
        return st;
    const size_t bytes[] = {from->n_params * sizeof(float), from->n_state * sizeof(float)};
    float *dst[] = {to->params, to->state};
    const float *src[] = {from->params, from->state};
    for (int k = 0; k < 2; k++) {
        if (from->backend->host_visible)
            to->backend->upload(dst[k], src[k], bytes[k]);
        else if (to->backend->host_visible)
            from->backend->download(dst[k], src[k], bytes[k]);
        else
            return error_set(e, CDL_EUSAGE, "weights copy between two devices: not supported");
    }
    return CDL_OK;
}

int net_build_from_text_uninitialised(Net *net, const char *text, const char *path, int want_grads,
                                      uint64_t seed, Error *e)
{
    Cfg cfg;
    int st = cfg_parse_text(text, path, &cfg, e);
    return st ? st : build_owning(net, &cfg, want_grads, seed, 0, on_cpu, e);
}

int net_build_from_file(Net *net, const char *path, const char *const *overrides, int n_overrides,
                        int want_grads, uint64_t seed, Error *e)
{
    Cfg cfg;
    int st = cfg_load(path, &cfg, e);
    if (st)
        return st;
    for (int i = 0; i < n_overrides && !st; i++)
        st = cfg_apply_override(&cfg, overrides[i], e);
    if (st) {
        cfg_free(&cfg);
        return st;
    }
    return build_owning(net, &cfg, want_grads, seed, 1, on_cpu, e);
}

static void free_activations(Net *net)
{
    if (!net->backend)
        return;
    net->backend->free(net->activations);
    net->backend->free(net->input);
    net->backend->free(net->input_delta);
    net->backend->free(net->labels);
    net->backend->free(net->device_truth);
    net->device_truth = NULL;
    net->backend->free(net->exec.workspace);
    for (int k = 0; k < 2; k++) {
        if (net->staged_input[k]) /* a copy may still read it */
            net->backend->wait_staged(k, &net->exec);
        if (net->backend->free_host) {
            net->backend->free_host(net->staged_input[k]);
            net->backend->free_host(net->staged_labels[k]);
            net->backend->free_host(net->staged_truth[k]);
        }
        net->staged_input[k] = NULL;
        net->staged_labels[k] = NULL;
        net->staged_truth[k] = NULL;
    }
    free(net->host_output);
    net->host_input = net->host_output = NULL;
    net->host_labels = NULL;
    net->host_slot = net->host_slot_ready = 0;
    net->activations = net->input = net->input_delta = net->exec.workspace = NULL;
    net->exec.workspace_floats = 0;
    net->labels = NULL;
    net->batch = 0;
    net->activation_bytes = 0;
}

void net_free(Net *net)
{
    free_activations(net);
    for (int i = 0; i < net->n_layers; i++)
        if (net->layers[i].kernels && net->layers[i].kernels->release)
            net->layers[i].kernels->release(&net->layers[i]);
    free(net->layers);
    if (net->backend) {
        net->backend->free(net->params);
        net->backend->free(net->grads);
        net->backend->free(net->state);
        net->backend->close(&net->exec);
    }
    free(net->quant_slab);
    cfg_free(&net->cfg);
    memset(net, 0, sizeof *net);
}

/* Binds l->in[] and l->in_delta[] to the buffers of l's inputs. */
static void bind_inputs(Net *net, Layer *l)
{
    for (int k = 0; k < l->n_inputs; k++) {
        l->in[k] = net_layer_input(net, l, k);
        l->in_delta[k] = net_layer_input_delta(net, l, k);
    }
}

/* Whether the output of layer `from` (-1: the net input) takes a gradient in a net with
 * gradients: a trained layer's, or the net input's when want_input_delta and no layer is frozen. */
static int takes_delta(const Net *net, int from, int want_input_delta)
{
    return from >= net->train_from || (from < 0 && !net->train_from && want_input_delta);
}

/* Whether l's backward will write a gradient of one of its inputs (net_layer_input_delta not
 * NULL) in a net with gradients (want_grads), the net input's only when want_input_delta. */
static int writes_input_grads(const Net *net, const Layer *l, int want_grads, int want_input_delta)
{
    for (int k = 0; want_grads && k < l->n_inputs; k++)
        if (takes_delta(net, l->inputs[k], want_input_delta))
            return 1;
    return 0;
}

/* What layer l's resize is given before any memory: the net's context and batch-norm settings,
 * and whether its backward writes an input's gradient. */
static LayerState layer_state(const Net *net, const Layer *l, int want_grads, int want_input_delta)
{
    return (LayerState){.exec = &net->exec,
                        .input_grads = writes_input_grads(net, l, want_grads, want_input_delta),
                        .bn_eps = net->hyper.bn_eps,
                        .bn_darknet = net->hyper.bn_darknet};
}

/* Measures every layer's private state for batch into l->state_floats, state_bytes, work_floats
 * and kept_floats (LayerState); the totals of state and kept floats go to *floats, of bytes to
 * *bytes. */
static int measure_state(Net *net, int batch, int want_grads, int want_input_delta, size_t *floats,
                         size_t *bytes, Error *e)
{
    *floats = *bytes = 0;
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        LayerState st = layer_state(net, l, want_grads, want_input_delta);
        int rc = l->kernels->resize ? l->kernels->resize(l, batch, &st, e) : CDL_OK;
        if (rc)
            return rc;
        l->state_floats = st.n_floats;
        l->state_bytes = st.n_bytes;
        l->work_floats = st.n_work;
        l->kept_floats = st.n_kept;
        *floats += st.n_floats + st.n_kept;
        *bytes += st.n_bytes;
    }
    return CDL_OK;
}

/* Points every layer's out, delta and pre into net->activations where buffers (the memory
 * plan, core/net_memory.h) place them, binds its inputs and carves its private state
 * (LayerKernels.resize). */
static int lay_out_slab(Net *net, int batch, const LiveBuffer *buffers, Error *e)
{
    unsigned char *slab = (unsigned char *)net->activations;
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        const LiveBuffer *b = buffers + (size_t)i * NET_BUFFERS;
        l->out = (float *)(slab + b[NET_BUF_OUT].offset);
        l->delta = b[NET_BUF_DELTA].bytes ? (float *)(slab + b[NET_BUF_DELTA].offset) : NULL;
        l->pre = l->activation == CDL_ACT_LINEAR ? NULL
                 : net_pre_in_place(net, l)      ? l->out
                                                 : (float *)(slab + b[NET_BUF_PRE].offset);
        bind_inputs(net, l);
        LayerState carve = layer_state(net, l, net->want_grads, net->input_delta != NULL);
        carve.floats = (float *)(slab + b[NET_BUF_STATE_FLOATS].offset);
        carve.bytes = slab + b[NET_BUF_STATE_BYTES].offset;
        carve.work = (float *)(slab + b[NET_BUF_WORK].offset);
        carve.kept = (float *)(slab + b[NET_BUF_KEPT].offset);
        l->state_at = carve.floats;
        l->state_bytes_at = carve.bytes;
        l->work_at = carve.work;
        l->kept_at = carve.kept;
        int st = l->kernels->resize ? l->kernels->resize(l, batch, &carve, e) : CDL_OK;
        if (st)
            return st;
    }
    return CDL_OK;
}

/* How layer l takes input k (or gives its output, k -1) in nChw8c (LayerKernels.layout). */
static int layout_of(const Layer *l, int k)
{
    return l->kernels->layout ? l->kernels->layout(l, k) : LAYOUT_PLAIN;
}

static int out_blocked(const Net *net, int i)
{
    return i >= 0 && net->layers[i].blocked >> LAYER_OUT_BIT & 1;
}

/* Clears the blocked outputs that a tied layer's other tensors rule out; 1 when one was. */
static int untie(Net *net, const Layer *l)
{
    int all = layout_of(l, -1) != LAYOUT_TIED || out_blocked(net, l->index);
    for (int k = 0; k < l->n_inputs; k++)
        all = all && (layout_of(l, k) != LAYOUT_TIED || out_blocked(net, l->inputs[k]));
    if (all)
        return 0;
    int changed = 0;
    for (int k = -1; k < l->n_inputs; k++) {
        const int i = k < 0 ? l->index : l->inputs[k];
        if (layout_of(l, k) == LAYOUT_TIED && out_blocked(net, i)) {
            net->layers[i].blocked &= ~(1u << LAYER_OUT_BIT);
            changed = 1;
        }
    }
    return changed;
}

/* Sets every layer's Layer.blocked (LayerKernels.layout): an output is blocked where its writer
 * and every reader can take it so, the tied layers' tensors all or none, the net's output
 * plain; in a net with gradients only where the backend keeps them in training
 * (BackendOps.train_layouts, the CPU's dnnl_train_blocked=1), else all plain. */
static void plan_layouts(Net *net)
{
    const int n = net->n_layers;
    /* A net with gradients plans for its training passes too (LayerKernels.layout sees the bit). */
    const unsigned train = net->want_grads ? 1u << LAYER_TRAIN_BIT : 0;
    for (int i = 0; i < n; i++)
        net->layers[i].blocked = train;
    if (net->want_grads &&
        !(net->backend->train_layouts && net->backend->train_layouts(&net->exec)))
        return; /* all plain */
    for (int i = 0; i < n; i++) {
        Layer *l = &net->layers[i];
        int ok = i < n - 1 && layout_of(l, -1) != LAYOUT_PLAIN;
        for (int j = i + 1; ok && j < n; j++)
            for (int k = 0; k < net->layers[j].n_inputs; k++)
                if (net->layers[j].inputs[k] == i && layout_of(&net->layers[j], k) == LAYOUT_PLAIN)
                    ok = 0;
        l->blocked = train | (ok ? 1u << LAYER_OUT_BIT : 0);
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < n; i++)
            changed |= untie(net, &net->layers[i]);
    }
    for (int i = 0; i < n; i++) {
        Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_inputs; k++)
            l->blocked |= (unsigned)out_blocked(net, l->inputs[k]) << k;
    }
}

/* How many inputs of later layers read layer i's output. */
static int readers_of(const Net *net, int i)
{
    int n = 0;
    for (int j = i + 1; j < net->n_layers; j++)
        for (int k = 0; k < net->layers[j].n_inputs; k++)
            n += net->layers[j].inputs[k] == i;
    return n;
}

/* The residual sums fused into their input 0's writer (LayerKernels.fuse_sum): a plain_sum layer s
 * whose input 0, written after its input 1, only s reads, its tensors all in nChw8c or all plain
 * (s ties them, LAYOUT_TIED: the writer answers for its output's layout, Layer.blocked). Returns 1
 * when the fusions differ from the last ones (Layer.sum_into, sum_from). */
static int plan_sums(Net *net)
{
    int changed = 0;
    for (int i = 0; i < net->n_layers; i++) {
        Layer *s = &net->layers[i], *w = s->n_inputs == 2 && s->inputs[0] > s->inputs[1]
                                             ? &net->layers[s->inputs[0]]
                                             : NULL;
        const Layer *was = s->sum_from;
        s->sum_from = NULL;
        if (w && readers_of(net, w->index) == 1 && w->kernels->fuse_sum && s->kernels->plain_sum &&
            s->kernels->plain_sum(s) && out_blocked(net, i) == out_blocked(net, w->index) &&
            out_blocked(net, i) == out_blocked(net, s->inputs[1]) &&
            w->kernels->fuse_sum(w, s->activation))
            s->sum_from = w;
        changed |= was != s->sum_from;
    }
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        l->sum_into = NULL;
        if (l->kernels->fuse_sum &&
            !(l->last_reader >= 0 && net->layers[l->last_reader].sum_from == l))
            l->kernels->fuse_sum(l, -1);
    }
    for (int i = 0; i < net->n_layers; i++)
        if (net->layers[i].sum_from)
            ((Layer *)net->layers[i].sum_from)->sum_into = &net->layers[i];
    return changed;
}

/* The one layer that reads layer i's output, as its one input, or NULL. */
static Layer *sole_reader(Net *net, int i)
{
    const int r = net->layers[i].last_reader;
    return r >= 0 && readers_of(net, i) == 1 && net->layers[r].n_inputs == 1 ? &net->layers[r]
                                                                             : NULL;
}

/* The one layer that reads layer i's output, as its input 0 (its only input or not), or NULL. */
static Layer *sole_reader_first(Net *net, int i)
{
    const int r = net->layers[i].last_reader;
    return r >= 0 && readers_of(net, i) == 1 && net->layers[r].inputs[0] == i ? &net->layers[r]
                                                                              : NULL;
}

/* The nhwc hand-offs of an inference net (LayerKernels.gives_nhwc, takes_nhwc): a layer in no
 * int8 chain whose sole reader, reading it as its input 0, takes float32 nhwc there, which it
 * gives. Returns 1 when they differ from the last ones (Layer.nhwc_to, nhwc_from). */
static int plan_nhwc(Net *net)
{
    int changed = 0;
    for (int i = 0; i < net->n_layers; i++)
        net->layers[i].nhwc_from = NULL;
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i], *r = sole_reader_first(net, i);
        Layer *to = !net->want_grads && r && !l->codes_to && !l->sum_into && !r->codes_from &&
                            l->kernels->gives_nhwc && r->kernels->takes_nhwc &&
                            l->kernels->gives_nhwc(l) && r->kernels->takes_nhwc(r)
                        ? r
                        : NULL;
        changed |= to != l->nhwc_to;
        l->nhwc_to = to;
        if (to)
            to->nhwc_from = l;
    }
    return changed;
}

/* The int8 chains (LayerKernels.pass_codes) of an inference net: a layer whose output a layer of
 * its family alone reads, as its one input, directly or through layers that pass codes on
 * (LayerKernels.passes_codes; each alone reading the last), writes that layer's codes where both
 * can. Returns 1 when the chains differ from the last ones (Layer.codes_to, codes_from). */
static int plan_codes(Net *net)
{
    int changed = 0;
    for (int i = 0; i < net->n_layers; i++)
        net->layers[i].codes_to = NULL;
    for (int i = 0; i < net->n_layers && !net->want_grads; i++) {
        Layer *l = &net->layers[i], *r = sole_reader(net, i);
        if (!l->kernels->pass_codes || l->sum_into || l->codes_to)
            continue;
        while (r && r->kernels != l->kernels && r->kernels->passes_codes &&
               r->kernels->passes_codes(r))
            r = sole_reader(net, r->index);
        if (!r || r->kernels != l->kernels || !l->kernels->pass_codes(l, r))
            continue;
        for (Layer *w = l; w != r; w = sole_reader(net, w->index))
            w->codes_to = sole_reader(net, w->index);
    }
    /* the last plan's pairs are still in codes_from: a pair in one plan and not the other */
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        changed |= (l->codes_to && l->codes_to->codes_from != l) ||
                   (l->codes_from && l->codes_from->codes_to != l);
    }
    for (int i = 0; i < net->n_layers; i++)
        net->layers[i].codes_from = NULL;
    for (int i = 0; i < net->n_layers; i++)
        if (net->layers[i].codes_to)
            net->layers[i].codes_to->codes_from = &net->layers[i];
    return changed | plan_nhwc(net);
}

/* What net_resize allocates for a mini-batch of batch samples (with delta buffers when
 * want_grads): the slab the memory plan lays out, the scratch and input floats; with
 * check_limits, fails as net_resize does when a mini-batch that large is refused. Measures the
 * layers' state. buffers, when not NULL, receives the plan (the caller frees it). */
typedef struct BatchSizes {
    size_t slab;           /* bytes */
    size_t scratch, input; /* floats */
} BatchSizes;

static int measure_batch(Net *net, int batch, int want_grads, int want_input_delta,
                         int check_limits, BatchSizes *b, LiveBuffer **buffers, Error *e)
{
    memset(b, 0, sizeof *b);
    size_t activations = 0; /* every layer's out, delta and pre, unshared: the limit's measure */
    for (int i = 0; i < net->n_layers && activations <= NET_MAX_BATCH_FLOATS; i++) {
        Layer *l = &net->layers[i];
        size_t n = (size_t)batch * shape_size(l->out_shape);
        activations += n * (1 + (want_grads ? 1 : 0) + (l->activation != CDL_ACT_LINEAR));
    }
    b->input = (size_t)batch * shape_size(net->in_shape);
    if (check_limits && (activations > NET_MAX_BATCH_FLOATS || b->input > NET_MAX_BATCH_FLOATS))
        return error_set(e, CDL_EUSAGE,
                         "%s: a mini-batch of %d images needs more than %zu activation values; "
                         "lower batch or raise subdivisions",
                         net->cfg.path ? net->cfg.path : "net", batch, NET_MAX_BATCH_FLOATS);
    size_t state_floats, state_bytes;
    net_plan_storage(net); /* the layers' resize sees their element types and layouts */
    net_plan_channels_last(net);
    int st =
        measure_state(net, batch, want_grads, want_input_delta, &state_floats, &state_bytes, e);
    /* The layouts, fused sums and int8 chains the layers' primitives allow, which those then
     * follow. */
    if (!st) {
        plan_layouts(net);
        if (plan_sums(net) | plan_codes(net)) {
            st = measure_state(net, batch, want_grads, want_input_delta, &state_floats,
                               &state_bytes, e);
            plan_layouts(net);
        }
    }
    if (st)
        return st;
    /* After the layers' resize, which may raise their scratch (Layer.scratch_per_sample). */
    for (int i = 0; i < net->n_layers; i++) {
        size_t need = net->layers[i].scratch_per_sample * (size_t)batch;
        b->scratch = need > b->scratch ? need : b->scratch;
    }
    if (check_limits && b->scratch > NET_MAX_BATCH_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "%s: a mini-batch of %d images needs more than %zu scratch values; "
                         "lower batch or raise subdivisions",
                         net->cfg.path ? net->cfg.path : "net", batch, NET_MAX_BATCH_FLOATS);
    if (check_limits &&
        (state_floats > NET_MAX_BATCH_FLOATS || state_bytes / sizeof(float) > NET_MAX_BATCH_FLOATS))
        return error_set(e, CDL_EUSAGE,
                         "%s: a mini-batch of %d images needs more than %zu values of layer "
                         "state; lower batch or raise subdivisions",
                         net->cfg.path ? net->cfg.path : "net", batch, NET_MAX_BATCH_FLOATS);
    Net view = *net; /* planned as if built with or without gradients */
    view.want_grads = want_grads;
    LiveBuffer *plan = calloc((size_t)net->n_layers * NET_BUFFERS, sizeof *plan);
    st = plan ? net_memory_plan(&view, batch, plan, &b->slab, e)
              : error_set(e, CDL_ERUNTIME, "out of memory planning the activations");
    if (!st && buffers)
        *buffers = plan;
    else
        free(plan);
    return st;
}

int net_activation_bytes(Net *net, int batch, size_t *bytes, Error *e)
{
    BatchSizes b;
    int st = measure_batch(net, batch, net->want_grads, 0, 0, &b, NULL, e);
    *bytes = st ? 0 : b.slab;
    return st;
}

int net_batch_bytes(Net *net, int batch, int want_grads, size_t *bytes, size_t *scratch_bytes,
                    Error *e)
{
    BatchSizes b;
    int st = measure_batch(net, batch, want_grads, 0, 1, &b, NULL, e);
    *bytes = st ? 0
                : b.slab + (b.scratch + b.input) * sizeof(float) +
                      (size_t)batch * (size_t)net_labels_per_sample(net) * sizeof(int);
    *scratch_bytes = st ? 0 : b.scratch * sizeof(float);
    return st;
}

int net_resize(Net *net, int batch, int want_input_delta, Error *e)
{
    free_activations(net);
    net->weights_kept = 0; /* the layers' kept memory is laid out anew */
    BatchSizes b;
    LiveBuffer *plan = NULL;
    int st = measure_batch(net, batch, net->want_grads, want_input_delta, 1, &b, &plan, e);
    if (st)
        return st;
    const size_t scratch = b.scratch, in_n = b.input;
    net->activation_bytes = b.slab;
    const BackendOps *be = net->backend;
    net->activations = be->alloc(1, net->activation_bytes + sizeof(float));
    net->input = be->alloc(in_n, sizeof *net->input);
    net->input_delta = want_input_delta ? be->alloc(in_n, sizeof *net->input_delta) : NULL;
    net->labels =
        be->alloc((size_t)batch * (size_t)net_labels_per_sample(net), sizeof *net->labels);
    net->exec.workspace = be->alloc(scratch + 1, sizeof *net->exec.workspace);
    net->exec.workspace_floats = scratch;
    const size_t n_labels = (size_t)batch * (size_t)net_labels_per_sample(net);
    const size_t n_out = (size_t)batch * shape_size(net->layers[net->n_layers - 1].out_shape);
    const size_t n_truth = (size_t)batch * (size_t)net_truth_boxes(net) * TRUTH_FLOATS;
    int host_ok = 1;
    if (!be->host_visible) {
        for (int k = 0; k < 2; k++) {
            net->staged_input[k] = be->alloc_host(in_n + 1, sizeof(float));
            net->staged_labels[k] = be->alloc_host(n_labels + 1, sizeof(int));
            host_ok = host_ok && net->staged_input[k] && net->staged_labels[k];
            if (n_truth) {
                net->staged_truth[k] = be->alloc_host(n_truth, sizeof(float));
                host_ok = host_ok && net->staged_truth[k];
            }
        }
        if (n_truth) {
            net->device_truth = be->alloc(n_truth, sizeof(float));
            host_ok = host_ok && net->device_truth;
        }
        net->host_input = net->staged_input[0];
        net->host_labels = net->staged_labels[0];
        net->host_output = calloc(n_out + 1, sizeof *net->host_output);
        host_ok = host_ok && net->host_output;
    }
    if (!net->activations || !net->input || (want_input_delta && !net->input_delta) ||
        !net->labels || !net->exec.workspace || !host_ok) {
        free(plan);
        free_activations(net);
        return error_set(e, CDL_ERUNTIME, "out of memory for activations of batch %d", batch);
    }
    net->batch = batch;
    net->sized_in = net->in_shape;
    st = lay_out_slab(net, batch, plan, e);
    free(plan);
    return st;
}

/* Measures layer l's state at its shapes as they are now against what net_resize planned for it
 * (Layer.state_floats, ...; the shared scratch): CDL_ERUNTIME when it needs more. */
static int measure_within_plan(Net *net, Layer *l, Error *e)
{
    LayerState st = layer_state(net, l, net->want_grads, net->input_delta != NULL);
    int rc = l->kernels->resize ? l->kernels->resize(l, net->batch, &st, e) : CDL_OK;
    if (!rc && (st.n_floats > l->state_floats || st.n_bytes > l->state_bytes ||
                st.n_work > l->work_floats || st.n_kept > l->kept_floats ||
                l->scratch_per_sample * (size_t)net->batch > net->exec.workspace_floats))
        rc = error_set(e, CDL_ERUNTIME,
                       "layer %d [%s]: its state at %dx%d needs more memory than was planned",
                       l->index, l->type->name, l->in_shape.h, l->in_shape.w);
    return rc;
}

int net_resize_state(Net *net, Error *e)
{
    net->weights_kept = 0;
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        if (l->kernels->release)
            l->kernels->release(l); /* primitives bound to the old shapes */
        int st = measure_within_plan(net, l, e);
        if (st)
            return st;
    }
    plan_layouts(net);
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        LayerState carve = layer_state(net, l, net->want_grads, net->input_delta != NULL);
        carve.floats = l->state_at;
        carve.bytes = l->state_bytes_at;
        carve.work = l->work_at;
        carve.kept = l->kept_at;
        int st = l->kernels->resize ? l->kernels->resize(l, net->batch, &carve, e) : CDL_OK;
        if (st)
            return st;
    }
    return CDL_OK;
}

void net_name_engines(Net *net)
{
    for (int i = 0; i < net->n_layers; i++)
        net->layers[i].engine = expected_engine(&net->layers[i], &net->exec);
}

void net_set_precision(Net *net, GemmPrecision precision)
{
    net->precision = precision;
    for (int i = 0; i < net->n_layers; i++)
        net->layers[i].precision = precision;
}

int net_precision_from_name(const char *name, GemmPrecision *precision)
{
    for (int i = 0; i < N_NAMES(precision_names); i++)
        if (!strcmp(name, precision_names[i])) {
            *precision = (GemmPrecision)i;
            return CDL_OK;
        }
    return CDL_EUSAGE;
}

const char *net_precision_names(void)
{
    return "fp32, bf16, tf32, fp16";
}

int net_sync(Net *net, Error *e)
{
    return net->backend->sync(&net->exec, e);
}

/* Waits, once per turn of the slot, until the device has copied the slot's last batch: host code
 * is about to write it. */
static void host_slot_wait(Net *net)
{
    if (net->host_slot_ready)
        return;
    net->backend->wait_staged(net->host_slot, &net->exec);
    net->host_slot_ready = 1;
}

float *net_host_input(Net *net)
{
    if (!net->host_input)
        return net->input;
    host_slot_wait(net);
    return net->host_input;
}

int *net_host_labels(Net *net)
{
    if (!net->host_labels)
        return net->labels;
    host_slot_wait(net);
    return net->host_labels;
}

int net_truth_boxes(const Net *net)
{
    int boxes = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (l->type->reads_truth && l->type->truth_boxes(l) > boxes)
            boxes = l->type->truth_boxes(l);
    }
    return boxes;
}

void net_set_truth(Net *net, float *truth)
{
    net->truth = truth;
    net->truth_boxes = truth ? net_truth_boxes(net) : 0;
}

const int *net_batch_labels(const Net *net)
{
    return net->host_labels ? net->staged_labels[net->host_slot ^ 1] : net->labels;
}

void net_commit_batch(Net *net)
{
    if (!net->host_input)
        return;
    const size_t n_labels = (size_t)net->batch * (size_t)net_labels_per_sample(net);
    const size_t truth_bytes =
        (size_t)net->batch * (size_t)net->truth_boxes * TRUTH_FLOATS * sizeof(float);
    StagedCopy copies[3] = {
        {net->input, net->host_input,
         (size_t)net->batch * shape_size(net->in_shape) * sizeof(float)},
        {net->labels, net->host_labels, n_labels * sizeof(int)},
        {net->device_truth, net->staged_truth[net->host_slot], truth_bytes},
    };
    /* labels NULL while a caller runs forwards without a loss (generation) */
    int n = net->labels ? 2 : 1;
    if (net->truth && net->device_truth) { /* the caller's truth into the slot, then up */
        host_slot_wait(net);
        memcpy(net->staged_truth[net->host_slot], net->truth, truth_bytes);
        copies[n++] = copies[2];
    }
    net->backend->upload_staged(copies, n, net->host_slot, &net->exec);
    net->host_slot ^= 1;
    net->host_slot_ready = 0;
    net->host_input = net->staged_input[net->host_slot];
    net->host_labels = net->staged_labels[net->host_slot];
}

/* The last layer's output into host_output, once the passes have finished. */
static const float *download_output(Net *net)
{
    net->backend->download(
        net->host_output, net_output(net),
        (size_t)net->batch * shape_size(net->layers[net->n_layers - 1].out_shape) * sizeof(float));
    return net->host_output;
}

const float *net_host_output(Net *net)
{
    if (!net->host_output)
        return net_output(net);
    Error e = {0}; /* a failure of the passes is the caller's net_sync's to report */
    net_sync(net, &e);
    return download_output(net);
}

const float *net_forward_to_host(Net *net, Error *e)
{
    const BackendOps *be = net->backend;
    if (!be->keep_loss) {
        net_forward(net);
        return net_host_output(net);
    }
    if (be->keep_loss(&net->exec, 0, 1, e))
        return NULL;
    net_forward(net);
    float loss;
    if (be->step_outcome(&net->exec, &loss, NULL, e))
        return NULL;
    net->loss = loss;
    return download_output(net);
}

uint64_t net_pass_images_seen(const Net *net)
{
    return net->images_seen +
           (uint64_t)net->batch * (net->draw_id % (uint64_t)net->hyper.subdivisions + 1);
}

/* The context of a pass over the current mini-batch (train: the net's mode). */
static StepContext step_context(Net *net, int train)
{
    return (StepContext){
        .batch = net->batch,
        .train = train,
        .exec = &net->exec,
        .labels = net->labels,
        .truth = net->truth && net->device_truth ? net->device_truth : net->truth,
        .truth_boxes = net->truth_boxes,
        .images_seen = net_pass_images_seen(net),
        .loss = &net->loss,
        .loss_divisor = net->loss_divisor,
        .grad_scale = net->grad_scale,
        .seed = net->seed,
        .draw_id = net->draw_id,
        .bn_momentum = net->hyper.bn_momentum,
        .bn_eps = net->hyper.bn_eps,
        .bn_darknet = net->hyper.bn_darknet,
        .sample_offset = net->sample_offset,
        .sync_bn = net->hyper.sync_bn ? net->collective : NULL,
        .same_weights = net->later_pass || net->weights_kept,
    };
}

/* Layer i's forward in the pass ctx describes (frozen layers run as in inference). */
static void forward_layer(Net *net, StepContext *ctx, int i)
{
    ctx->train = net->train && i >= net->train_from;
    net->layers[i].kernels->forward(&net->layers[i], ctx);
}

/* The context of a forward that repeats the last one (gradient checkpointing): no loss. */
static StepContext replay_context(Net *net)
{
    StepContext ctx = step_context(net, net->train);
    ctx.replay = 1;
    ctx.labels = NULL;
    ctx.truth = NULL;
    return ctx;
}

void net_forward(Net *net)
{
    StepContext ctx = step_context(net, net->train);
    net->loss = 0;
    net->backward_ran = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const double start_s = net->profiler ? profiler_now_s(net->profiler) : 0;
        forward_layer(net, &ctx, i);
        if (net->profiler)
            profiler_layer(net->profiler, net->step, i, PROFILE_FORWARD, start_s,
                           profiler_now_s(net->profiler));
    }
    net->weights_kept = !net->want_grads && !net->train;
}

void net_weights_changed(Net *net)
{
    net->weights_kept = 0;
}

void net_forward_from(Net *net, int first)
{
    StepContext ctx = step_context(net, net->train);
    net->loss = 0;
    for (int i = first; i < net->n_layers; i++)
        forward_layer(net, &ctx, i);
}

int net_can_forward_at(const Net *net)
{
    for (int i = 0; i < net->n_layers; i++)
        if (!net->layers[i].kernels->forward_at)
            return 0;
    return net->n_layers > 0 && net->n_segments == 0;
}

void net_forward_at(Net *net, int first, int t)
{
    const StepContext ctx = step_context(net, 0);
    for (int i = first; i < net->n_layers; i++)
        net->layers[i].kernels->forward_at(&net->layers[i], &ctx, t);
}

int net_can_gather_samples(const Net *net, int first)
{
    for (int i = first; i < net->n_layers; i++)
        if (net->layers[i].kernels->keeps_rows && !net->layers[i].kernels->gather_samples)
            return 0;
    return 1;
}

size_t net_gather_samples(Net *net, int first, const int *from, int n, float *scratch)
{
    size_t most = 0;
    for (int i = first; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        const size_t floats =
            l->kernels->gather_samples
                ? l->kernels->gather_samples(l, &net->exec, net->batch, from, n, scratch)
                : 0;
        most = floats > most ? floats : most;
    }
    return most;
}

static void zero_delta(Net *net, Layer *l)
{
    net->backend->zero(l->delta,
                       (size_t)net->batch * shape_size(l->out_shape) * elem_bytes(l->storage),
                       &net->exec);
}

/* Zeroes the deltas layer i's backward is the first to add into (Layer.last_reader): its
 * inputs' (or marks them Layer.in_delta_fresh for a family that writes them whole), and its own
 * when nothing reads it; until then the memory plan may lend them to other
 * buffers. The last layer's delta is the caller's seed (the softmax loss ignores it); frozen
 * layers have none. */
static void zero_deltas_before_backward(Net *net, int i)
{
    Layer *l = &net->layers[i];
    for (int k = 0; k < l->n_inputs; k++) {
        Layer *from = l->inputs[k] >= net->train_from ? &net->layers[l->inputs[k]] : NULL;
        const int first = from && from->last_reader == i;
        l->in_delta_fresh[k] = first && l->type->writes_input_delta;
        if (first && !l->in_delta_fresh[k])
            zero_delta(net, from);
    }
    if (l->last_reader < 0 && i < net->n_layers - 1)
        zero_delta(net, l);
}

/* Runs the forward of layers [first, last] again, as net_forward ran it (replay_context). */
static void replay_forward(Net *net, int first, int last)
{
    StepContext ctx = replay_context(net);
    for (int i = first; i <= last; i++)
        forward_layer(net, &ctx, i);
}

/* Replays the forward of layers [first, last] of a segment before their backward, as
 * net_forward ran it (same draw id, so dropout draws the same masks; batch norm leaves its
 * running statistics), unless this is the last segment, whose activations are still there. */
static void prepare_segment(Net *net, int first, int last)
{
    if (net->layers[last].segment < net->n_segments - 1)
        replay_forward(net, first, last);
}

/* 1 when outputs may lose their memory to other buffers once read (net_first_nonfinite_output,
 * a second net_backward). */
static int outputs_are_lent(const Net *net)
{
    return net->memory_plan || net->n_segments > 0;
}

void net_backward(Net *net)
{
    if (net->backward_ran && outputs_are_lent(net))
        replay_forward(net, 0, net->n_layers - 1);
    net->backward_ran = 1;
    if (net->input_delta)
        net->backend->zero(
            net->input_delta,
            (size_t)net->batch * shape_size(net->in_shape) * sizeof *net->input_delta, &net->exec);
    const StepContext ctx = step_context(net, net->train);
    /* Segment by segment (a run of layers with the same Layer.segment), last first. */
    for (int last = net->n_layers - 1; last >= net->train_from;) {
        int first = last;
        while (first > 0 && net->layers[first - 1].segment == net->layers[last].segment)
            first--;
        if (net->layers[last].segment >= 0)
            prepare_segment(net, first, last);
        for (int i = last; i >= first && i >= net->train_from; i--) {
            zero_deltas_before_backward(net, i);
            const double start_s = net->profiler ? profiler_now_s(net->profiler) : 0;
            net->layers[i].kernels->backward(&net->layers[i], &ctx);
            if (net->profiler)
                profiler_layer(net->profiler, net->step, i, PROFILE_BACKWARD, start_s,
                               profiler_now_s(net->profiler));
            if (net->reduce_grads && net->collective)
                net->collective->grads_ready(net->collective->ctx, i);
        }
        last = first - 1;
    }
}

void net_zero_grads(Net *net)
{
    if (net->grads)
        net->backend->zero(net->grads, net->n_params * sizeof *net->grads, &net->exec);
}

const float *net_layer_input(const Net *net, const Layer *l, int k)
{
    int from = l->inputs[k];
    return from < 0 ? net->input : net->layers[from].out;
}

float *net_layer_input_delta(Net *net, const Layer *l, int k)
{
    const int from = l->inputs[k];
    if (!takes_delta(net, from, net->input_delta != NULL))
        return NULL;
    return from >= 0 ? net->layers[from].delta : net->input_delta;
}

const float *net_output(const Net *net)
{
    return net->layers[net->n_layers - 1].out;
}

/* 1 when the n values of type t at x (the backend's memory) are all finite. */
static int values_finite_as(Net *net, const void *x, size_t n, ElemType t)
{
    const void *v = x;
    void *copy = NULL;
    const size_t bytes = n * (t == ELEM_F32 ? sizeof(float) : sizeof(uint16_t));
    if (!net->backend->host_visible) {
        Error e = {0}; /* a failed pass shows as values that are not finite, or not at all */
        net_sync(net, &e);
        if (!(copy = malloc(bytes ? bytes : 1)))
            return 1;
        net->backend->download(copy, x, bytes);
        v = copy;
    }
    /* a 16-bit value is not finite when its exponent bits are all ones */
    const uint16_t inf_bits = t == ELEM_BF16 ? 0x7f80 : 0x7c00;
    size_t i = 0;
    if (t == ELEM_F32)
        while (i < n && isfinite(((const float *)v)[i]))
            i++;
    else
        while (i < n && (((const uint16_t *)v)[i] & inf_bits) != inf_bits)
            i++;
    free(copy);
    return i == n;
}

int net_values_finite(Net *net, const float *x, size_t n)
{
    return values_finite_as(net, x, n, ELEM_F32);
}

int net_first_nonfinite_output(Net *net)
{
    const size_t batch = (size_t)net->batch;
    if (!net_values_finite(net, net->input, batch * shape_size(net->in_shape)))
        return -1;
    StepContext ctx = replay_context(net);
    int i = 0;
    for (; i < net->n_layers; i++) {
        if (outputs_are_lent(net))
            forward_layer(net, &ctx, i);
        if (!values_finite_as(net, net->layers[i].out, batch * shape_size(net->layers[i].out_shape),
                              net->layers[i].storage))
            break;
    }
    return i;
}
