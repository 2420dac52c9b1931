/* Training sessions of the public API (cdl.h): a net from a cfg or a resumed checkpoint, its
 * dataset, and the training loop with its checkpoints, TensorBoard scalars and step traces. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdl.h"
#include "cdl_eval.h"
#include "cdl_model.h"
#include "core/net_split.h"
#include "data/boxes.h"
#include "data/data_config.h"
#include "data/loader.h"
#include "data/source_files.h"
#include "data/text_data.h"
#include "io/checkpoint_file.h"
#include "io/tfevents.h"
#include "model/model_io.h"
#include "train/dist.h"
#include "train/resume.h"
#include "train/step_trace.h"
#include "train/trainer.h"
#include "util/file_kind.h"
#include "util/hash_table.h"

_Static_assert(CDL_DEFAULT_WORKERS == LOADER_DEFAULT_WORKERS, "one default for loader threads");

struct cdl_session {
    Net net; /* built once the data are attached (or loaded from the checkpoint resumed) */
    int built;
    Optimizer opt;
    ModelMeta meta;
    int resumed; /* meta's names and vocabulary are its own (the checkpoint's); else borrowed */
    Cfg cfg;     /* a new run's cfg, with the overrides, until the net is built */
    int have_cfg;
    char cfg_path[PATH_MAX], weights_path[PATH_MAX], resume_path[PATH_MAX];
    int new_head;       /* the initial weights' head is not loaded (cdl_session_options) */
    NetPlacement where; /* where the net trains (cdl_session_options.on_gpu) */
    char data_path[PATH_MAX], out_path[PATH_MAX];
    DataConfig dc;
    TextData text; /* a sequence net's token streams (vocab.n = 0 otherwise) */
    SampleSource train, valid;
    TextBatches text_batches;
    ValidSet valid_set;
    long samples; /* the training set's (windows of a text) */
    int default_epochs;
    cdl_data_options data;
    void (*on_message)(void *ctx, const char *line);
    void *message_ctx;
};

/* Hands one formatted line to the session's message callback. */
static void note(const cdl_session *s, const char *fmt, ...)
{
    if (!s->on_message)
        return;
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    s->on_message(s->message_ctx, line);
}

/* Each line of a cfg's warnings (may be NULL) as a message. */
static void note_lines(const cdl_session *s, const char *text)
{
    while (text && *text) {
        const char *end = strchr(text, '\n');
        const int len = end ? (int)(end - text) : (int)strlen(text);
        note(s, "%.*s", len, text);
        text = end ? end + 1 : NULL;
    }
}

void api_default_data_path(const char *cfg_path, char *out, size_t size)
{
    snprintf(out, size, "%s", cfg_path);
    char *dot = strrchr(out, '.');
    char *slash = strrchr(out, '/');
    if (dot && (!slash || dot > slash))
        *dot = '\0';
    strncat(out, ".data", size - strlen(out) - 1);
}

/* "cfg/x.cfg" -> "weights/x.cdl" */
static void default_out_path(const char *cfg_path, char *out, size_t size)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", cfg_path);
    char *base = basename(copy);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = '\0';
    snprintf(out, size, "weights/%s.cdl", base);
}

static int create(cdl_session *s, const cdl_session_options *o, Error *e)
{
    s->where = (NetPlacement){o->on_gpu ? CDL_BACKEND_GPU : CDL_BACKEND_CPU, o->gpu_device};
    s->on_message = o->on_message;
    s->message_ctx = o->message_ctx;
    if (o->resume_path) {
        snprintf(s->resume_path, sizeof s->resume_path, "%s", o->resume_path);
        snprintf(s->out_path, sizeof s->out_path, "%s", o->out_path ? o->out_path : o->resume_path);
        int st = model_load_on(o->resume_path, s->where, &s->net, 1, &s->opt, &s->meta, e);
        s->built = 1; /* model_load frees what it built when it fails */
        s->resumed = 1;
        if (!st)
            note_lines(s, s->net.cfg.warnings);
        return st;
    }
    if (!o->cfg_path)
        return error_set(e, CDL_EUSAGE, "a training session needs a cfg or a checkpoint to resume");
    snprintf(s->cfg_path, sizeof s->cfg_path, "%s", o->cfg_path);
    snprintf(s->weights_path, sizeof s->weights_path, "%s", o->weights_path ? o->weights_path : "");
    s->new_head = o->new_head;
    if (o->out_path)
        snprintf(s->out_path, sizeof s->out_path, "%s", o->out_path);
    else
        default_out_path(o->cfg_path, s->out_path, sizeof s->out_path);
    s->meta.seed = o->seed;
    s->meta.valid_accuracy = s->meta.valid_loss = -1;
    int st = cfg_load(o->cfg_path, &s->cfg, e);
    if (st)
        return st;
    s->have_cfg = 1;
    for (int i = 0; i < o->n_overrides && !st; i++)
        st = cfg_apply_override(&s->cfg, o->overrides[i], e);
    return st;
}

int cdl_session_create(const cdl_session_options *options, cdl_session **session, char *err,
                       size_t err_size)
{
    Error e = {0};
    *session = NULL;
    cdl_session *s = calloc(1, sizeof *s);
    if (!s)
        return error_set(&e, CDL_ERUNTIME, "out of memory"), api_report(&e, err, err_size);
    if (create(s, options, &e)) {
        cdl_session_free(s);
        return api_report(&e, err, err_size);
    }
    *session = s;
    return CDL_OK;
}

void cdl_session_free(cdl_session *s)
{
    if (!s)
        return;
    if (s->have_cfg)
        cfg_free(&s->cfg);
    if (s->built)
        net_free(&s->net);
    optimizer_free(&s->opt);
    if (s->resumed)
        model_meta_free(&s->meta);
    source_free(&s->train);
    source_free(&s->valid);
    text_data_free(&s->text);
    data_config_free(&s->dc);
    free(s);
}

/* Reads the .data file, and the text when it is type=text; the vocabulary is the resumed
 * model's (vocab), else built from the text. */
static int load_data(cdl_session *s, const TextVocab *vocab, Error *e)
{
    int st = data_config_load(s->data_path, &s->dc, e);
    s->dc.split_seed = s->meta.seed; /* a resumed run's too: the same validation images */
    if (st || s->dc.train_kind != DATA_TEXT)
        return st;
    if ((st = text_data_load(&s->dc, vocab, &s->text, e)) || vocab || !s->dc.tokens_bpe)
        return st;
    const TextData *t = &s->text;
    const size_t pair_tokens =
        text_pairs_tokens(&t->pairs.train) + (s->dc.valid ? 0 : text_pairs_tokens(&t->pairs.valid));
    const size_t tokens = s->dc.pairs ? pair_tokens /* every side of train='s pairs */
                                      : t->train.n + (s->dc.valid ? 0 : t->valid.n); /* train= */
    note(s,
         "%s: learned %d BPE merges in %.2f s: %d tokens, %zu tokens for %zu bytes (%.4f tokens "
         "per byte)",
         s->dc.train, t->vocab.n - 256, t->learn_s, t->vocab.n, tokens, t->train_bytes,
         t->train_bytes ? (double)tokens / (double)t->train_bytes : 0.0);
    if (t->vocab.n < s->dc.vocab_size)
        note(s,
             "warning: %s: the text has no more pairs to merge (every piece is one token): the "
             "vocabulary has %d tokens, not vocab_size=%d",
             s->dc.train, t->vocab.n, s->dc.vocab_size);
    return CDL_OK;
}

int api_check_text_net(const Net *net, const char *data_path, const DataConfig *dc, int v, Error *e)
{
    if (net->seq <= 0)
        return CDL_OK;
    if (dc->train_kind != DATA_TEXT)
        return error_set(e, CDL_EUSAGE,
                         "%s: a sequence net ([net] seq=%d) trains on text: the .data file needs "
                         "type=text",
                         data_path, net->seq);
    if (dc->pairs != (net->source > 0))
        return error_set(e, CDL_EUSAGE,
                         dc->pairs ? "%s: paired text (type=pairs) is for a sequence-to-sequence "
                                     "net ([net] source=S)"
                                   : "%s: a sequence-to-sequence net ([net] source=S) trains on "
                                     "paired text: the .data file needs type=pairs",
                         data_path);
    if (net->vocab != v || net->classes != v)
        return error_set(e, CDL_EUSAGE,
                         "%s: the text has %d distinct tokens but the net has vocab=%d and %d "
                         "outputs per token",
                         data_path, v, net->vocab, net->classes);
    if (net->in_shape.w != 1 && net->in_shape.w != v)
        return error_set(e, CDL_EUSAGE,
                         "%s: [net] inputs=%d: a text net takes token ids (inputs=1) or one-hot "
                         "tokens (inputs=%d, the vocabulary)",
                         data_path, net->in_shape.w, v);
    return CDL_OK;
}

static int check_text_net(const cdl_session *s, Error *e)
{
    return api_check_text_net(&s->net, s->data_path, &s->dc, s->text.vocab.n, e);
}

/* Loads the initial weights (api_load_weights: a checkpoint's matching layers, safetensors, or
 * darknet .weights) and says what it loaded and skipped. */
static int load_initial_weights(cdl_session *s, const char *path, Error *e)
{
    char line[1200];
    ModelMeta head = {0};
    int st = api_load_weights(&s->net, path, s->new_head, line, sizeof line, &head, e);
    if (!st)
        note(s, "--weights %s", line);
    /* A head loaded as it was must tell the same classes apart, in the same order. */
    if (!st && s->dc.train_kind != DATA_TEXT)
        st = api_check_head_names(&head, s->dc.names, s->dc.n_names, path, s->data_path, e);
    model_meta_free(&head);
    return st;
}

/* Builds a new run's net from its cfg (consumed): with text data, [net] vocab= is the text's
 * vocabulary size; then the initial weights and the optimizer. */
static int build_fresh(cdl_session *s, Error *e)
{
    int st = CDL_OK;
    if (s->text.vocab.n) {
        char vocab[48];
        snprintf(vocab, sizeof vocab, "net.vocab=%d", s->text.vocab.n);
        st = cfg_apply_override(&s->cfg, vocab, e);
    }
    s->have_cfg = 0;
    if (st || (st = net_build(&s->net, &s->cfg, 1, s->meta.seed, e))) {
        cfg_free(&s->cfg);
        return st;
    }
    s->built = 1;
    if ((st = check_text_net(s, e)))
        return st;
    note_lines(s, s->net.cfg.warnings);
    s->meta.vocab = s->text.vocab; /* borrowed */
    if (s->weights_path[0] && (st = load_initial_weights(s, s->weights_path, e)))
        return st;
    /* Built and given its initial weights on the host, then moved where it trains. */
    if ((st = net_move_to(&s->net, s->where, e)))
        return st;
    /* After the initial weights: the EMA starts from the weights training starts from. */
    return optimizer_init(&s->opt, &s->net, e);
}

/* darknet matches class names as substrings of image paths: say when that was ambiguous. */
static void warn_ambiguous_labels(const cdl_session *s, const SampleSource *src, const char *which)
{
    const char *first = NULL;
    int n = source_ambiguous_labels(src, &first);
    if (n)
        note(s,
             "warning: %d %s image paths contain more than one class name (first: %s); the name "
             "ending last was used",
             n, which, first ? first : "?");
}

/* A sequence-to-sequence net's pairs: those that do not fit its rows are dropped (and counted). */
static int open_pairs(cdl_session *s, Error *e)
{
    TextPairs *tp = &s->text.pairs;
    const size_t dropped = text_pairs_fit(tp, s->net.source, s->net.seq);
    if (dropped)
        note(s,
             "%s: %zu pairs are longer than the net's source=%d tokens or its seq=%d target rows "
             "(the target and its end mark): left out",
             s->data_path, dropped, s->net.source, s->net.seq);
    if (!tp->train.n)
        return error_set(e, CDL_EUSAGE, "%s: no training pair fits source=%d and seq=%d",
                         s->data_path, s->net.source, s->net.seq);
    text_pairs_bucket(tp, s->dc.bucket);
    s->text_batches = (TextBatches){NULL, s->meta.seed, tp};
    s->samples = (long)tp->train.n;
    s->valid_set.pairs = tp->valid.n ? tp : NULL;
    return CDL_OK;
}

/* Opens the image sources (and class names) or wraps the loaded text. */
static int open_sets(cdl_session *s, Error *e)
{
    if (s->net.source > 0)
        return open_pairs(s, e);
    if (s->net.seq > 0) {
        s->text_batches = (TextBatches){&s->text.train, s->meta.seed, NULL};
        s->samples = (long)text_windows(&s->text.train, s->net.seq);
        s->valid_set.tokens = s->text.valid.n ? &s->text.valid : NULL;
        return CDL_OK;
    }
    const int detection = net_truth_boxes(&s->net) > 0;
    s->dc.boxes = detection;
    int st = data_config_open_sources(&s->dc, &s->train, &s->valid, e);
    if (st)
        return st;
    warn_ambiguous_labels(s, &s->train, "training");
    warn_ambiguous_labels(s, &s->valid, "validation");
    if (s->resumed && (st = model_meta_check_names(&s->meta, s->dc.names, s->dc.n_names,
                                                   s->resume_path, s->data_path, e)))
        return error_append(e, st,
                            "; resume on the dataset it was trained on (--data), or start a new "
                            "run from it (--weights)");
    if (s->train.classes > s->net.classes)
        return error_set(e, CDL_EUSAGE,
                         "%s: the training labels go up to %d but the net outputs %d classes",
                         s->data_path, s->train.classes - 1, s->net.classes);
    if (!s->resumed) {
        s->meta.names = s->dc.names; /* borrowed */
        s->meta.n_names = s->dc.n_names;
    }
    s->samples = s->train.n;
    s->valid_set.images = s->valid.n && !detection ? &s->valid : NULL;
    if (s->valid.n && detection)
        note(s,
             "%s: the %d validation images are not evaluated during training: `cdl eval` of "
             "the checkpoint gives a detector's mAP",
             s->data_path, s->valid.n);
    return CDL_OK;
}

/* A new run whose data could not be read: an error of its cfg (which the data do not size, as
 * they size a sequence net's vocabulary) is the one to report, the data's after it. Builds the
 * net to find it (the cfg is consumed: the session is failing). */
static int cfg_error_first(cdl_session *s, Error *e)
{
    if (!s->have_cfg || !s->cfg.n_sections || cfg_get_str(&s->cfg.sections[0], "seq", NULL))
        return e->code;
    Net net;
    Error cfg_e = {0};
    s->have_cfg = 0;
    if (!net_build(&net, &s->cfg, 0, s->meta.seed, &cfg_e)) {
        net_free(&net);
        return e->code;
    }
    cfg_free(&s->cfg);
    const Error data_e = *e;
    *e = cfg_e;
    return error_append(e, cfg_e.code, " (and %s)", data_e.msg);
}

/* The training data's sizes and fingerprint, as the checkpoint records them. */
static DataPrint data_print(const cdl_session *s)
{
    if (s->net.source > 0)
        return (DataPrint){s->text.pairs.train.n, s->text.pairs.valid.n,
                           text_data_fingerprint(&s->text)};
    if (s->net.seq > 0)
        return (DataPrint){s->text.train.n, s->text.valid.n, text_data_fingerprint(&s->text)};
    const uint64_t prints[2] = {source_fingerprint(&s->train), source_fingerprint(&s->valid)};
    return (DataPrint){(uint64_t)s->train.n, (uint64_t)s->valid.n,
                       fnv1a_add(FNV1A_START, prints, sizeof prints)};
}

/* Puts a resumed run at the checkpoint's progress in its own steps (train/resume.h), and says
 * what changed in the data since the checkpoint and what resuming does about it. */
static int place_resumed(cdl_session *s, const DataPrint *now, Error *e)
{
    const int global_batch = s->net.hyper.batch * dist_size();
    const int steps_per_epoch = (int)(s->samples / global_batch);
    if (steps_per_epoch < 1) /* run() refuses it */
        return CDL_OK;
    char changes[256];
    data_print_changes(&s->meta.data, now, s->net.seq > 0 ? "tokens" : "samples", changes,
                       sizeof changes);
    ResumePoint p;
    int st = resume_point(&s->meta, s->resume_path, steps_per_epoch, global_batch,
                          changes[0] != '\0', &p, e);
    if (st)
        return st;
    if (changes[0])
        note(s,
             "warning: %s changed since %s was written: %s; resuming continues after epoch %d "
             "with %d steps an epoch%s%s",
             s->data_path, s->resume_path, changes, p.epochs_done, steps_per_epoch,
             p.epoch_restarts ? " (the epoch it had begun starts over)" : "",
             !s->dc.valid && s->dc.valid_split > 0 ? ", and the validation split is drawn anew"
                                                   : "");
    s->meta.step = p.step;
    return CDL_OK;
}

static int attach(cdl_session *s, const char *data_path, Error *e)
{
    if (s->data_path[0])
        return error_set(e, CDL_EUSAGE, "the session has its data already");
    if (s->resumed && !data_path && !s->meta.data_path[0])
        return error_set(e, CDL_EUSAGE, "%s: the checkpoint names no dataset; pass --data",
                         s->resume_path);
    if (data_path)
        snprintf(s->data_path, sizeof s->data_path, "%s", data_path);
    else if (s->resumed)
        model_meta_find_data(&s->meta, s->resume_path, s->data_path, sizeof s->data_path);
    else
        api_default_data_path(s->cfg_path, s->data_path, sizeof s->data_path);
    int st;
    if (s->resumed) {
        if (s->net.seq > 0 && !s->meta.vocab.n)
            return error_set(e, CDL_EUSAGE, "%s: a sequence net's checkpoint without a vocabulary",
                             s->resume_path);
        st = load_data(s, s->net.seq > 0 ? &s->meta.vocab : NULL, e);
        if (st && !data_path)
            error_append(e, st, " (the dataset %s records; --data names another)", s->resume_path);
        st = st ? st : check_text_net(s, e);
    } else {
        st = load_data(s, NULL, e);
        st = st ? cfg_error_first(s, e) : build_fresh(s, e);
    }
    st = st ? st : open_sets(s, e);
    const DataPrint now = st ? (DataPrint){0} : data_print(s);
    st = st || !s->resumed ? st : place_resumed(s, &now, e);
    if (st)
        return st;
    s->meta.data = now;
    /* Recorded absolute, so that --resume and eval work from any directory. */
    char absolute[PATH_MAX];
    snprintf(s->meta.data_path, sizeof s->meta.data_path, "%s",
             realpath(s->data_path, absolute) ? absolute : s->data_path);
    const TrainSettings *t = &s->opt.settings;
    const long steps_per_epoch = s->samples / ((long)s->net.hyper.batch * dist_size());
    s->default_epochs = s->resumed && s->meta.epochs_planned > 0 ? s->meta.epochs_planned
                        : t->epochs > 0                          ? t->epochs
                        : t->max_batches > 0 && steps_per_epoch > 0
                            ? (int)((t->max_batches + steps_per_epoch - 1) / steps_per_epoch)
                            : 1;
    return CDL_OK;
}

int cdl_session_attach_data(cdl_session *session, const char *data_path,
                            const cdl_data_options *options, char *err, size_t err_size)
{
    Error e = {0};
    session->data = *options;
    return attach(session, data_path, &e) ? api_report(&e, err, err_size) : CDL_OK;
}

void cdl_session_get_info(const cdl_session *s, cdl_session_info *info)
{
    const int batch = s->built ? s->net.hyper.batch : 0;
    *info = (cdl_session_info){.data_path = s->data_path,
                               .checkpoint_path = s->out_path,
                               .batch = batch,
                               .seq = s->built && s->net.seq > 0 ? s->net.seq : 0,
                               .samples = s->samples,
                               .steps_per_epoch =
                                   batch ? (int)(s->samples / ((long)batch * dist_size())) : 0,
                               .default_epochs = s->default_epochs,
                               .done_steps = s->meta.step,
                               .done_epochs = s->meta.epochs_done};
}

/* Creates the checkpoint's directory and checks that the checkpoint can be written there and
 * replaces no file of another kind (a cfg given as --out), so that a bad out path fails before
 * training rather than after the first epoch. */
static int prepare_output(const char *path, Error *e)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    struct stat st;
    if (!path[0] || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
        return error_set(e, CDL_EUSAGE, "%s: --out must name a checkpoint file, not a directory",
                         path);
    if (mkdir(dir, 0777) && errno != EEXIST)
        return error_set(e, CDL_ERUNTIME, "%s: cannot create directory: %s", dir, strerror(errno));
    if (access(dir, W_OK))
        return error_set(e, CDL_ERUNTIME, "%s: cannot write checkpoints there: %s", dir,
                         strerror(errno));
    return file_check_output(path, FILE_KIND_CHECKPOINT, NULL, 0, e);
}

/* A run in progress: the trainer's reports turned into the public ones, with TensorBoard
 * scalars written for them. */
typedef struct Run {
    const cdl_session *s;
    cdl_callbacks user;
    int log_every;
    double time_limit_s;
    TfEvents *tensorboard; /* NULL: none, or stopped after a failed write */
} Run;

/* Writes n scalars at step to the TensorBoard file; on failure warns once and stops. */
static void write_scalars(Run *r, uint64_t step, const char *const *tags, const double *values,
                          int n)
{
    if (!r->tensorboard)
        return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const double wall_time = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
    Error e = {0};
    int st = CDL_OK;
    for (int i = 0; i < n && !st; i++)
        st = tfevents_add_scalar(r->tensorboard, tags[i], (int64_t)step, (float)values[i],
                                 wall_time, &e);
    st = st ? st : tfevents_flush(r->tensorboard, &e);
    if (st) {
        note(r->s, "warning: %s; TensorBoard logging stopped", e.msg);
        r->tensorboard = NULL;
    }
}

static void on_step(void *ctx, const StepReport *t)
{
    Run *r = ctx;
    const double left_s = r->time_limit_s - t->elapsed_s;
    const cdl_step_report p = {
        .step = t->step,
        .total_steps = t->total_steps,
        .epoch = t->epoch,
        .step_in_epoch = t->step_in_epoch,
        .steps_per_epoch = t->steps_per_epoch,
        .loss = t->loss,
        .lr = t->lr,
        .avg_loss = t->avg_loss,
        .images = t->images,
        .images_per_s = t->images_per_s,
        .eta_s = r->time_limit_s > 0 && left_s < t->eta_s ? left_s : t->eta_s,
        .elapsed_s = t->elapsed_s,
        .loss_scale = t->loss_scale,
        .skipped_steps = t->skipped_steps,
        .width = t->width,
        .height = t->height,
        .resized = t->resized,
        .logged = t->step % (uint64_t)r->log_every == 0 || t->step == t->total_steps};
    if (p.logged) {
        const char *const tags[] = {"train/loss", "train/lr", "train/images_per_s"};
        const double values[] = {t->loss, t->lr, t->images_per_s};
        write_scalars(r, t->step, tags, values, 3);
    }
    if (r->user.on_step)
        r->user.on_step(r->user.ctx, &p);
}

static void on_epoch(void *ctx, const EpochReport *t)
{
    Run *r = ctx;
    const EvalResult *v = t->valid;
    const cdl_epoch_report p = {.epoch = t->epoch,
                                .step = t->step,
                                .train_loss = t->train_loss,
                                .skipped = t->skipped,
                                .validated = v != NULL,
                                .per_token = v && v->per_token,
                                .valid_loss = v ? v->loss : 0,
                                .valid_top1 = v ? v->top1 : 0,
                                .valid_top5 = v ? v->top5 : 0,
                                .valid_bits_per_byte = v ? v->bits_per_byte : 0,
                                .valid_skipped = v ? v->skipped : 0,
                                .images_per_s = t->images_per_s,
                                .elapsed_s = t->elapsed_s,
                                .checkpoint = t->checkpoint,
                                .stopped = t->stopped,
                                .interrupted = t->interrupted,
                                .ranks = t->ranks,
                                .allreduce_wait_s = t->allreduce_wait_s,
                                .allreduce_hidden_s = t->allreduce_hidden_s};
    if (r->user.on_epoch)
        r->user.on_epoch(r->user.ctx, &p);
    if (v) {
        const char *const tags[] = {"valid/loss", "valid/accuracy", "valid/top5"};
        const double values[] = {v->loss, v->top1, v->top5};
        write_scalars(r, t->step, tags, values, 3);
    }
}

/* The one call of the training loop: from the session's progress to plan->epochs. A detection
 * net's truth boxes go through a buffer of a mini-batch's, [batch][net_truth_boxes][TRUTH_FLOATS],
 * which the loader fills. */
static int train(cdl_session *s, TrainPlan *plan, const TrainCallbacks *cb, double dist_timeout_s,
                 Error *e)
{
    Loader *loader = NULL;
    TrainSource source;
    const int truth_boxes = net_truth_boxes(&s->net);
    float *truth = truth_boxes ? calloc((size_t)s->net.batch * (size_t)truth_boxes * TRUTH_FLOATS,
                                        sizeof *truth)
                               : NULL;
    int st = truth_boxes && !truth ? error_set(e, CDL_ERUNTIME, "out of memory for truth boxes")
                                   : CDL_OK;
    net_set_truth(&s->net, truth);
    st = st || dist_size() <= 1 ? st : dist_open(&plan->dist, &s->net, dist_timeout_s, e);
    if (st) {
        free(truth);
        return st;
    }
    if (s->net.seq > 0) {
        source = train_source_text(&s->text_batches, &s->net);
    } else {
        const LoaderOptions opt = {.batch = s->net.batch,
                                   .workers = s->data.workers,
                                   .prefetch = LOADER_PREFETCH_PER_WORKER * s->data.workers,
                                   .seed = s->meta.seed,
                                   .train = 1,
                                   .drop_last = 1,
                                   .skip_bad = s->data.skip_bad,
                                   .rank = dist_rank(),
                                   .ranks = dist_size(),
                                   .truth_boxes = truth_boxes};
        LoaderOptions with = opt;
        AugmentConfig aug;
        st = net_augment(&s->net, &aug, e);
        const MultiScale *ms = plan->multi_scale;
        if (ms && ms->rule != MULTI_SCALE_OFF) { /* the ring holds the largest mini-batches */
            aug.out_w = ms->max_w;
            aug.out_h = ms->max_h;
            with.batch_size = multi_scale_batch_size;
            with.batch_size_ctx = ms;
        }
        st = st ? st : loader_open(&loader, &s->train, &aug, &with, e);
        source = st ? (TrainSource){0} : train_source_loader(loader);
    }
    st = st ? st : train_run(&s->net, &s->opt, &source, &s->valid_set, plan, &s->meta, cb, e);
    loader_close(loader);
    dist_close(plan->dist, &s->net);
    plan->dist = NULL;
    net_set_truth(&s->net, NULL);
    free(truth);
    return st;
}

/* Refuses a CPU run whose step needs more memory than the process may use, before the step's
 * buffers are allocated (a GPU's are on the device). */
static int check_step_fits(cdl_session *s, int pass, Error *e)
{
    if (s->where.backend != CDL_BACKEND_CPU)
        return CDL_OK;
    ApiStepMemory m;
    MemLimit limit;
    int st = api_step_memory(&s->net, pass, &m, e);
    mem_limit_of_process(&limit);
    return st ? st : api_check_step_fits(&m, &limit, s->resumed ? s->resume_path : s->cfg_path, e);
}

/* Sets the net to the largest size ms draws, before net_resize plans its memory; CDL_EUSAGE
 * naming the cfg and the layer when a layer cannot change size. */
static int plan_multi_scale(cdl_session *s, const MultiScale *ms, Error *e)
{
    const char *path = s->resumed ? s->resume_path : s->cfg_path;
    int st = net_can_set_size(&s->net, e) ? CDL_OK : CDL_EUSAGE;
    st = st ? st : net_set_size(&s->net, ms->max_w, ms->max_h, e);
    if (st)
        error_prefix(e, st, "%s: random= (multi-scale training): ", path);
    return st;
}

static int run(cdl_session *s, const cdl_run_options *o, const cdl_callbacks *cb, Error *e)
{
    if (!s->data_path[0])
        return error_set(e, CDL_EUSAGE, "a training session runs once its data are attached");
    const Hyper *h = &s->net.hyper;
    const int ranks = dist_size();
    const int steps_per_epoch = (int)(s->samples / ((long)h->batch * ranks));
    const int epochs = o->epochs > 0 ? o->epochs : s->default_epochs;
    if (steps_per_epoch < 1) /* before net_resize allocates for the whole batch */
        return error_set(e, CDL_EUSAGE,
                         "%s: the training set has %ld %s, fewer than batch=%d x %d ranks",
                         s->data_path, s->samples,
                         s->net.source > 0 ? "pairs"
                         : s->net.seq > 0  ? "windows of seq+1 tokens"
                                           : "samples",
                         h->batch, ranks);
    const int split = ranks == 1 ? net_training_split(&s->net, omp_get_max_threads()) : 1;
    /* Multi-scale training: the memory planned (and checked) for the largest size. */
    MultiScale ms;
    multi_scale_init(&ms, &s->net, s->meta.seed);
    const int multi_scale = ms.rule != MULTI_SCALE_OFF;
    int st = multi_scale ? plan_multi_scale(s, &ms, e) : CDL_OK;
    st =
        st || o->skip_memory_check ? st : check_step_fits(s, h->batch / h->subdivisions / split, e);
    st = st ? st : prepare_output(s->out_path, e);
    st = st ? st : net_resize_split(&s->net, split, e);
    st = st || !multi_scale ? st : net_set_size(&s->net, ms.base_w, ms.base_h, e);
    Run r = {s, cb ? *cb : (cdl_callbacks){0}, o->log_every, o->time_limit_s, NULL};
    if (r.log_every <= 0)
        r.log_every = steps_per_epoch >= 10 ? steps_per_epoch / 10 : 1;
    if (!st && o->tensorboard_dir && dist_rank() == 0) /* rank 0 writes for the run */
        st = tfevents_open(o->tensorboard_dir, &r.tensorboard, e);
    TfEvents *tensorboard = r.tensorboard; /* write_scalars may stop using it */
    TrainCallbacks tcb = {on_step, on_epoch, &r};
    StepTrace trace = {0};
    const uint64_t total_steps = (uint64_t)epochs * (uint64_t)steps_per_epoch;
    const int lead = dist_rank() == 0; /* rank 0 traces for the run */
    st = st ? st
            : step_trace_begin(&trace, lead ? o->profile_steps : NULL, lead ? o->trace_path : NULL,
                               s->out_path, &s->net, s->meta.step, total_steps, &tcb, e);
    if (!st && s->meta.step >= total_steps)
        note(s, "%s already has %d epochs; nothing to do (raise --epochs)",
             s->resumed ? s->resume_path : s->out_path, s->meta.epochs_done);
    TrainPlan plan = {.epochs = epochs,
                      .out_path = s->out_path,
                      .valid = {s->data.workers, s->data.skip_bad},
                      .time_limit_s = o->time_limit_s,
                      .save_checkpoint = model_save_checkpoint,
                      .stop_step = o->steps ? s->meta.step + o->steps : 0,
                      .stop_requested = o->stop_requested,
                      .stop_ctx = o->stop_ctx,
                      .cuda_graph = o->cuda_graph,
                      .multi_scale = &ms};
    st = st ? st : train(s, &plan, &tcb, o->dist_timeout_s > 0 ? o->dist_timeout_s : 300, e);
    size_t events;
    st = step_trace_end(&trace, st, &events, e);
    if (events)
        note(s, "wrote %s (%zu events)", trace.path, events);
    const int tb_st = tfevents_close(tensorboard, st ? NULL : e);
    return st ? st : tb_st;
}

int cdl_session_run(cdl_session *session, const cdl_run_options *options,
                    const cdl_callbacks *callbacks, char *err, size_t err_size)
{
    Error e = {0};
    return run(session, options, callbacks, &e) ? api_report(&e, err, err_size) : CDL_OK;
}

int cdl_session_evaluate(cdl_session *session, cdl_eval_result *result, char *err, size_t err_size)
{
    Error e = {0};
    EvalResult r = {0};
    cdl_session *s = session;
    const Hyper *h = &s->net.hyper;
    memset(result, 0, sizeof *result);
    int st = CDL_OK;
    if (!s->valid_set.images && !s->valid_set.tokens && !s->valid_set.pairs)
        st = error_set(&e, CDL_EUSAGE, "%s: no validation set (set valid= or valid_split=)",
                       s->data_path[0] ? s->data_path : "the session");
    st = st ? st : net_resize(&s->net, h->batch / h->subdivisions, 0, &e);
    const EvalOptions opt = {s->data.workers, s->data.skip_bad};
    st = st ? st : train_evaluate(&s->net, &s->opt, &s->valid_set, &opt, &r, &e);
    if (st) {
        eval_result_free(&r);
        return api_report(&e, err, err_size);
    }
    api_eval_result_take(&r, result);
    return CDL_OK;
}

int cdl_session_save(cdl_session *session, const char *path, char *err, size_t err_size)
{
    Error e = {0};
    cdl_session *s = session;
    int st = s->built ? CDL_OK
                      : error_set(&e, CDL_EUSAGE, "a new run's session has no net before its data");
    s->meta.step = s->net.step;
    st = st ? st : model_save(path ? path : s->out_path, &s->net, &s->opt, &s->meta, &e);
    return st ? api_report(&e, err, err_size) : CDL_OK;
}
