/* `cdl check` in the public API (cdl.h): everything `cdl train` would refuse about a cfg, its
 * .data file and its initial weights, found before it trains and listed all at once, and the
 * memory a step holds. */
#include "cdl.h"

#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdl_model.h"
#include "core/net_split.h"
#include "data/dataset.h"
#include "data/text_data.h"
#include "detect/net_detections.h"
#include "train/optimizer.h"

/* A check in progress: the result it fills, and whether a line could not be kept. */
typedef struct Check {
    cdl_check_result *r;
    int out_of_memory;
} Check;

/* Appends one line to *list (counted in *n). */
static void add_line(Check *c, char **list, int *n, const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    const size_t have = strlen(*list), add = strlen(line);
    char *grown = realloc(*list, have + add + 2);
    if (!grown) {
        c->out_of_memory = 1;
        return;
    }
    memcpy(grown + have, line, add);
    memcpy(grown + have + add, "\n", 2);
    *list = grown;
    (*n)++;
}

static void problem(Check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(Check *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_line(c, &c->r->errors, &c->r->n_errors, fmt, ap);
    va_end(ap);
}

static void warning(Check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warning(Check *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_line(c, &c->r->warnings, &c->r->n_warnings, fmt, ap);
    va_end(ap);
}

/* Each line of text (a cfg's problems or warnings; may be NULL) as an error or a warning. */
static void add_lines(Check *c, const char *text, int as_error)
{
    while (text && *text) {
        const char *end = strchr(text, '\n');
        const int len = end ? (int)(end - text) : (int)strlen(text);
        if (as_error)
            problem(c, "%.*s", len, text);
        else
            warning(c, "%.*s", len, text);
        text = end ? end + 1 : NULL;
    }
}

static const char *kind_name(DataKind kind)
{
    switch (kind) {
    case DATA_ARRAYS:
        return "idx or digits csv";
    case DATA_CIFAR10:
        return "cifar10";
    case DATA_CIFAR100:
        return "cifar100";
    case DATA_FOLDER:
        return "image folder";
    case DATA_LIST:
        return "darknet list";
    case DATA_CSV:
        return "csv";
    case DATA_TEXT:
        return "text";
    case DATA_COCO:
        return "coco json";
    }
    return "?";
}

/* Every file the .data names (each part of a comma-separated list) must be readable. */
static void check_files(Check *c, const DataConfig *dc)
{
    const char *const keys[] = {"train",        "train_labels", "valid",
                                "valid_labels", "train_target", "valid_target"};
    const char *const paths[] = {dc->train,        dc->train_labels, dc->valid,
                                 dc->valid_labels, dc->train_target, dc->valid_target};
    for (int k = 0; k < 6; k++)
        for (const char *p = paths[k]; p && *p;) {
            const size_t n = strcspn(p, ",");
            char part[PATH_MAX];
            snprintf(part, sizeof part, "%.*s", (int)n, p);
            if (access(part, R_OK))
                problem(c, "%s: %s=%s: cannot read: %s", dc->path, keys[k], part, strerror(errno));
            p += n + (p[n] == ',');
        }
}

/* Reads the .data file (and a text's characters, which size a sequence net); what its kind
 * says of the samples' shape goes to the result. Returns 1 when dc (and a text's td) loaded. */
static int read_data(Check *c, const char *path, DataConfig *dc, TextData *td)
{
    Error e = {0};
    cdl_check_result *r = c->r;
    Error names_problem;
    if (data_config_load_listing(path, dc, &names_problem, &e)) {
        problem(c, "%s", e.msg);
        return 0;
    }
    if (names_problem.code)
        problem(c, "%s", names_problem.msg);
    r->data_read = 1;
    r->data_kind = dc->pairs ? "paired text" : kind_name(dc->train_kind);
    r->data_classes = dc->classes;
    check_files(c, dc);
    if (dc->train_kind == DATA_TEXT) {
        if (text_data_load(dc, NULL, td, &e)) {
            problem(c, "%s", e.msg);
            return 0;
        }
        r->data_classes = td->vocab.n;
    } else if (dc->train_kind == DATA_CIFAR10 || dc->train_kind == DATA_CIFAR100) {
        r->data_c = 3, r->data_h = r->data_w = 32;
    } else if (dc->train_kind == DATA_ARRAYS) {
        dataset_peek_idx_shape(dc->train, &r->data_c, &r->data_h, &r->data_w);
    }
    return 1;
}

/* The net against its data, as a run's set-up compares them. */
static void check_net_data(Check *c, const Net *net, const DataConfig *dc, const TextData *td)
{
    Error e = {0};
    const cdl_check_result *r = c->r;
    if (net->seq > 0) {
        if (api_check_text_net(net, dc->path, dc, td->vocab.n, &e))
            problem(c, "%s", e.msg);
        return;
    }
    if (data_config_check_image_sets(dc, &e)) {
        problem(c, "%s", e.msg);
        return;
    }
    /* a detector's classes are its [yolo]/[region] layers', not the width of its output */
    const Layer *detector = net_last_detector(net);
    const int classes = detector ? detector_classes(detector) : net->classes;
    if (dc->classes > classes)
        problem(c, "%s: the data has %d classes but the net %s %d", dc->path, dc->classes,
                detector ? "detects" : "outputs", classes);
    else if (dc->classes < classes)
        warning(c,
                "%s: warning: the data has %d classes and the net %s %d: %s %d..%d are never "
                "a label",
                dc->path, dc->classes, detector ? "detects" : "outputs", classes,
                detector ? "classes" : "outputs", dc->classes, classes - 1);
    const Shape in = net->in_shape;
    if (r->data_c && r->data_c != in.c)
        warning(c,
                "%s: warning: the samples have %d channel%s and the net reads %d: each is "
                "converted",
                dc->path, r->data_c, r->data_c == 1 ? "" : "s", in.c);
    if (r->data_h && (r->data_h != in.h || r->data_w != in.w))
        warning(c,
                "%s: warning: the samples are %dx%d (HxW) and the net reads %dx%d: each is "
                "resized",
                dc->path, r->data_h, r->data_w, in.h, in.w);
}

/* The bytes a training step holds, as train allocates them: a sequence net's activations for a
 * pass of the mini-batch as train splits it at the default thread count (core/net_split.h); and
 * what the process may use, which a larger step is a problem against. With o->on_gpu, the step
 * of a copy of net built on that device (its plan, its layers' state there). */
static void check_memory(Check *c, Net *net, const cdl_check_options *o)
{
    Error e = {0};
    cdl_check_result *r = c->r;
    ApiStepMemory m;
    Net on_gpu;
    if (o->on_gpu &&
        api_net_copy_on(net, (NetPlacement){CDL_BACKEND_GPU, o->gpu_device}, 1, &on_gpu, &e)) {
        problem(c, "%s", e.msg);
        return;
    }
    Net *measured = o->on_gpu ? &on_gpu : net;
    r->train_pass = net_training_pass(measured, omp_get_max_threads());
    const int st = api_step_memory(measured, r->train_pass, &m, &e);
    if (o->on_gpu)
        net_free(&on_gpu);
    if (st) {
        problem(c, "%s", e.msg);
        return;
    }
    r->param_bytes = m.params;
    r->grad_bytes = m.grads;
    r->optimizer_bytes = m.optimizer;
    r->activation_bytes = m.activations;
    r->scratch_bytes = m.scratch;
    r->total_bytes = m.total;
    MemLimit limit;
    mem_limit_of_process(&limit);
    r->memory_left_bytes = limit.left_bytes;
    if (limit.what[0]) {
        char text[400];
        api_memory_limit_text(&limit, text, sizeof text);
        if (!(r->memory_limit = strdup(text)))
            c->out_of_memory = 1;
    }
    if (api_check_step_fits(&m, &limit, net->cfg.path ? net->cfg.path : "the cfg", &e))
        problem(c, "%s", e.msg);
}

static void describe_net(cdl_check_result *r, const Net *net)
{
    r->built = 1;
    r->c = net->in_shape.c, r->h = net->in_shape.h, r->w = net->in_shape.w;
    r->outputs = net->classes;
    r->seq = net->seq > 0 ? net->seq : 0;
    r->vocab = net->seq > 0 ? net->vocab : 0;
    r->batch = net->hyper.batch, r->subdivisions = net->hyper.subdivisions;
    r->params = net->n_params, r->state = net->n_state;
    TrainSettings t; /* read and checked when the net was built */
    Error e = {0};
    train_settings_read(&net->cfg, &t, &e);
    r->optimizer = train_optimizer_name(t.optimizer);
}

/* Loads the cfg leniently (its duplicate keys listed now, its unknown keys by the build) and
 * applies the overrides; 1 when cfg holds a parsed config. */
static int read_cfg(Check *c, const cdl_check_options *o, Cfg *cfg)
{
    Error e = {0};
    if (cfg_load_lenient(o->cfg_path, cfg, &e)) {
        problem(c, "%s", e.msg);
        return 0;
    }
    add_lines(c, cfg->problems, 1);
    free(cfg->problems);
    cfg->problems = NULL;
    for (int i = 0; i < o->n_overrides; i++)
        if (cfg_apply_override(cfg, o->overrides[i], &e))
            problem(c, "%s", e.msg);
    return 1;
}

/* Loads the initial weights into the net as train --weights does, and checks a loaded head's
 * classes against the data's (dc NULL: not read). */
static void check_weights(Check *c, Net *net, const cdl_check_options *o, const DataConfig *dc)
{
    Error e = {0};
    char line[1200];
    ModelMeta head = {0};
    if (api_load_weights(net, o->weights_path, o->new_head, line, sizeof line, &head, &e)) {
        problem(c, "%s", e.msg);
        return;
    }
    if (!(c->r->weights_note = strdup(line)))
        c->out_of_memory = 1;
    if (dc && dc->train_kind != DATA_TEXT &&
        api_check_head_names(&head, dc->names, dc->n_names, o->weights_path, dc->path, &e))
        problem(c, "%s", e.msg);
    model_meta_free(&head);
}

/* Values of a cfg that check lists before it stops building. */
#define CHECK_MAX_BAD_VALUES 32

/* Removes the entry of cfg at the line that msg ("CFG:LINE: ...", a build's refusal) names;
 * 0 when msg names none. */
static int drop_refused_entry(Cfg *cfg, const char *msg)
{
    const size_t n = cfg->path ? strlen(cfg->path) : 0;
    if (!n || strncmp(msg, cfg->path, n) || msg[n] != ':')
        return 0;
    const int line = atoi(msg + n + 1);
    for (int i = 0; i < cfg->n_sections; i++) {
        CfgSection *sec = &cfg->sections[i];
        for (int k = 0; k < sec->n_entries; k++)
            if (sec->entries[k].line == line && !sec->entries[k].set) {
                free(sec->entries[k].key);
                free(sec->entries[k].value);
                memmove(&sec->entries[k], &sec->entries[k + 1],
                        (size_t)(sec->n_entries - k - 1) * sizeof *sec->entries);
                sec->n_entries--;
                return 1;
            }
    }
    return 0;
}

/* Builds the net from cfg (consumed) as a new run would, with a text's vocabulary and gradients
 * (a net without them has no recomputed segments, which the step's memory depends on), then checks
 * it against the data and the initial weights, and measures a step. */
static void check_net(Check *c, Cfg *cfg, const cdl_check_options *o, const DataConfig *dc,
                      const TextData *td)
{
    Error e = {0};
    char vocab[48];
    snprintf(vocab, sizeof vocab, "net.vocab=%d", td->vocab.n);
    if (td->vocab.n && cfg_apply_override(cfg, vocab, &e))
        problem(c, "%s", e.msg);
    Net net;
    int st = net_build(&net, cfg, 1, 1, &e); /* with gradients, as train measures */
    /* A value the build refuses is listed and left out (its default taken) to find the next. */
    for (int tries = 0; st && tries < CHECK_MAX_BAD_VALUES && drop_refused_entry(cfg, e.msg);
         tries++) {
        problem(c, "%s", e.msg);
        st = net_build(&net, cfg, 1, 1, &e);
    }
    const Cfg *built = st ? cfg : &net.cfg;
    add_lines(c, built->problems, 1);
    add_lines(c, built->warnings, 0);
    if (st) {
        problem(c, "%s", e.msg);
        cfg_free(cfg);
        return;
    }
    describe_net(c->r, &net);
    if (dc)
        check_net_data(c, &net, dc, td);
    if (o->weights_path)
        check_weights(c, &net, o, dc);
    check_memory(c, &net, o);
    net_free(&net);
}

int cdl_check(const cdl_check_options *options, cdl_check_result *result, char *err,
              size_t err_size)
{
    Error e = {0};
    memset(result, 0, sizeof *result);
    Check c = {result, 0};
    char data_path[PATH_MAX];
    if (options->data_path)
        snprintf(data_path, sizeof data_path, "%s", options->data_path);
    else
        api_default_data_path(options->cfg_path, data_path, sizeof data_path);
    result->errors = strdup("");
    result->warnings = strdup("");
    result->data_path = strdup(data_path);
    if (!result->errors || !result->warnings || !result->data_path)
        return error_set(&e, CDL_ERUNTIME, "out of memory"), api_report(&e, err, err_size);
    Cfg cfg;
    DataConfig dc = {0};
    TextData td = {0};
    const int have_cfg = read_cfg(&c, options, &cfg);
    const int have_data = read_data(&c, data_path, &dc, &td);
    if (have_cfg)
        check_net(&c, &cfg, options, have_data ? &dc : NULL, &td);
    text_data_free(&td);
    data_config_free(&dc);
    if (c.out_of_memory)
        return error_set(&e, CDL_ERUNTIME, "out of memory listing the problems"),
               api_report(&e, err, err_size);
    return result->n_errors ? CDL_EUSAGE : CDL_OK;
}

void cdl_check_result_free(cdl_check_result *result)
{
    free(result->errors);
    free(result->warnings);
    free(result->data_path);
    free(result->weights_note);
    free(result->memory_limit);
    memset(result, 0, sizeof *result);
}
