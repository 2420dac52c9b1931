/* cdl train: builds a net from a cfg (or resumes a checkpoint), trains it on a dataset
 * and writes a checkpoint after every epoch. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/step_trace.h"
#include "data/data_config.h"
#include "data/loader.h"
#include "data/source_files.h"
#include "data/text_data.h"
#include "model/darknet_weights.h"
#include "model/finetune.h"
#include "model/model_io.h"
#include "train/trainer.h"

static const OptSpec train_opts[] = {
    {"--data", 1, 0, "dataset .data file (default: the cfg's name with .data)"},
    {"--weights", 1, 0,
     "initialise the layers that match from this checkpoint (fine-tuning), or all from darknet "
     ".weights for the cfg"},
    {"--resume", 1, 0, "continue the run saved in this checkpoint"},
    {"--out", 1, 0, "checkpoint path (default weights/CFGNAME.cdl)"},
    {"--epochs", 1, 0, "train until this many epochs are done"},
    {"--time-limit", 1, 0,
     "stop after the step during which this many seconds of training passed, then evaluate "
     "and save"},
    {"--threads", 1, 0, "CPU threads (default: all cores)"},
    {"--seed", 1, 0, "random seed for init, order and dropout (default 1)"},
    {"--set", 1, 1, "override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--log", 1, 0, "append JSON Lines records (steps, epochs) to this file"},
    {"--log-every", 1, 0, "steps between plain progress lines and log records"},
    {"--workers", 1, 0, "data loader threads (default 2; 0: load in the training thread)"},
    {"--skip-bad", 0, 0, "replace unreadable images by the next readable one (counted per epoch)"},
    {"--tensorboard", 1, 0, "write TensorBoard scalars (loss, lr, accuracy) into this directory"},
    {"--profile-steps", 1, 0, "write a Chrome trace of these steps: A-B or A,B,... (1-based)"},
    {"--trace", 1, 0, "trace file of --profile-steps (default: the checkpoint's, .trace.json)"},
    {"--cpu", 0, 0, "train on the CPU (the only device in this build)"},
    {"--gpu", 1, 0, "train on GPU N (needs a GPU=1 build)"},
    {"--help", 0, 0, "show this help"},
};
#define N_TRAIN_OPTS (int)(sizeof train_opts / sizeof train_opts[0])

/* "cfg/x.cfg" -> "cfg/x.data" */
static void default_data_path(const char *cfg_path, char *out, size_t size)
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

/* Creates the checkpoint's directory and checks that the checkpoint can be written there,
 * so that a bad --out fails before training rather than after the first epoch. */
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
    return CDL_OK;
}

/* darknet matches class names as substrings of image paths: say when that was ambiguous. */
static void warn_ambiguous_labels(const SampleSource *s, const char *which)
{
    const char *first = NULL;
    int n = source_ambiguous_labels(s, &first);
    if (n)
        fprintf(stderr,
                "cdl: warning: %d %s image paths contain more than one class name (first: %s); "
                "the name ending last was used\n",
                n, which, first ? first : "?");
}

/* Points weights/latest.cdl at checkpoint (atomically, via a renamed symlink). */
static int update_latest_link(const char *checkpoint, Error *e)
{
    char target[PATH_MAX];
    if (!strncmp(checkpoint, "weights/", 8) && !strchr(checkpoint + 8, '/'))
        snprintf(target, sizeof target, "%.4000s", checkpoint + 8);
    else if (!realpath(checkpoint, target))
        return error_set(e, CDL_ERUNTIME, "%s: %s", checkpoint, strerror(errno));
    if (!strcmp(target, "latest.cdl"))
        return CDL_OK;
    if (mkdir("weights", 0777) && errno != EEXIST)
        return error_set(e, CDL_ERUNTIME, "weights: cannot create directory: %s", strerror(errno));
    const char *tmp = CDL_DEFAULT_MODEL ".tmp";
    unlink(tmp);
    if (symlink(target, tmp) || rename(tmp, CDL_DEFAULT_MODEL))
        return error_set(e, CDL_ERUNTIME, "%s: cannot update link: %s", CDL_DEFAULT_MODEL,
                         strerror(errno));
    return CDL_OK;
}

/* Loads the layers of the model at path that match net (model/finetune.h) and says which
 * layers it skipped; a file that is not a checkpoint is read as darknet .weights for the cfg. */
static int load_initial_weights(Net *net, const char *path, Error *e)
{
    if (!cli_is_checkpoint(path)) {
        DarknetHeader h;
        int st = darknet_weights_load(net, path, &h, e);
        if (!st)
            fprintf(stderr, "cdl: --weights %s: darknet %d.%d.%d weights (seen %llu images)\n",
                    path, h.major, h.minor, h.revision, (unsigned long long)h.seen);
        return st;
    }
    WeightsMatch m;
    int st = finetune_load_weights(net, path, &m, e);
    if (!st)
        fprintf(stderr, "cdl: --weights %s: loaded %d layer%s%s%s\n", path, m.loaded,
                m.loaded == 1 ? "" : "s", m.skipped ? ", skipped layers " : "", m.skipped_list);
    weights_match_free(&m);
    return st;
}

typedef struct TrainSetup {
    Net net;
    Optimizer opt;
    ModelMeta meta;
    int meta_owns_names; /* meta's names and vocabulary are its own (a resumed checkpoint's) */
    char data_path[PATH_MAX], out_path[PATH_MAX];
    long epochs;
    DataConfig dc;
    TextData text; /* a sequence net's token streams (vocab.n = 0 otherwise) */
} TrainSetup;

/* Reads the .data file, and the text when it is type=text: a sequence net must train on text, an
 * image net on images (data_config_open_sources says so); the vocabulary is the resumed model's
 * (vocab), else built from the text. */
static int load_data(TrainSetup *t, const TextVocab *vocab, Error *e)
{
    int st = data_config_load(t->data_path, &t->dc, e);
    if (st || t->dc.train_kind != DATA_TEXT)
        return st;
    return text_data_load(&t->dc, vocab, &t->text, e);
}

/* A sequence net's vocab, outputs and inputs must agree with its text. */
static int check_text_net(const TrainSetup *t, Error *e)
{
    const Net *net = &t->net;
    const int v = t->text.vocab.n;
    if (net->seq <= 0)
        return CDL_OK;
    if (t->dc.train_kind != DATA_TEXT)
        return error_set(e, CDL_EUSAGE,
                         "%s: a sequence net ([net] seq=%d) trains on text: the .data file needs "
                         "type=text",
                         t->data_path, net->seq);
    if (net->vocab != v || net->classes != v)
        return error_set(e, CDL_EUSAGE,
                         "%s: the text has %d distinct tokens but the net has vocab=%d and %d "
                         "outputs per token",
                         t->data_path, v, net->vocab, net->classes);
    if (net->in_shape.w != 1 && net->in_shape.w != v)
        return error_set(e, CDL_EUSAGE,
                         "%s: [net] inputs=%d: a text net takes token ids (inputs=1) or one-hot "
                         "tokens (inputs=%d, the vocabulary)",
                         t->data_path, net->in_shape.w, v);
    return CDL_OK;
}

/* Builds the net of cfg (consumed) with the command line's overrides; with text data, [net]
 * vocab= is the text's vocabulary size. */
static int build_fresh(TrainSetup *t, Cfg *cfg, uint64_t seed, Error *e)
{
    int st = CDL_OK;
    if (t->text.vocab.n) {
        char vocab[48];
        snprintf(vocab, sizeof vocab, "net.vocab=%d", t->text.vocab.n);
        st = cfg_apply_override(cfg, vocab, e);
    }
    st = st ? st : net_build(&t->net, cfg, 1, seed, e);
    if (st)
        cfg_free(cfg);
    return st;
}

static int setup_fresh(TrainSetup *t, const Args *a, Error *e)
{
    if (a->n_positional != 1)
        return error_set(e, CDL_EUSAGE, "train needs one CFG file (or --resume CKPT); see --help");
    const char *cfg_path = a->positional[0];
    long seed;
    int st = args_get_int(a, "--seed", 1, 0, LONG_MAX, &seed, e);
    if (st)
        return st;
    const char *data = args_get(a, "--data");
    if (data)
        snprintf(t->data_path, sizeof t->data_path, "%s", data);
    else
        default_data_path(cfg_path, t->data_path, sizeof t->data_path);
    Cfg cfg; /* read first, so a missing or malformed cfg is reported before the data */
    if ((st = cfg_load(cfg_path, &cfg, e)))
        return st;
    for (int i = 0; i < a->n_repeats && !st; i++)
        st = cfg_apply_override(&cfg, a->repeats[i], e);
    st = st ? st : load_data(t, NULL, e);
    if (st) {
        cfg_free(&cfg);
        return st;
    }
    st = build_fresh(t, &cfg, (uint64_t)seed, e);
    st = st ? st : check_text_net(t, e);
    if (st)
        return st;
    cli_print_warnings(t->net.cfg.warnings);
    t->meta.seed = (uint64_t)seed;
    t->meta.valid_accuracy = t->meta.valid_loss = -1;
    t->meta.vocab = t->text.vocab; /* borrowed: run_training hands it back */
    const char *init = args_get(a, "--weights");
    if (init && (st = load_initial_weights(&t->net, init, e)))
        return st;
    /* After --weights: the EMA starts from the weights training starts from. */
    if ((st = optimizer_init(&t->opt, &t->net, e)))
        return st;
    const char *out = args_get(a, "--out");
    if (out)
        snprintf(t->out_path, sizeof t->out_path, "%s", out);
    else
        default_out_path(cfg_path, t->out_path, sizeof t->out_path);
    return CDL_OK;
}

static int setup_resume(TrainSetup *t, const Args *a, const char *resume, Error *e)
{
    if (a->n_positional > 1 || a->n_repeats || args_get(a, "--weights") || args_get(a, "--seed"))
        return error_set(e, CDL_EUSAGE,
                         "--resume continues a run as it was: it takes no CFG, --set, --weights "
                         "or --seed");
    int st = model_load(resume, &t->net, 1, &t->opt, &t->meta, e);
    if (st)
        return st;
    t->meta_owns_names = 1;
    const char *data = args_get(a, "--data");
    snprintf(t->data_path, sizeof t->data_path, "%s", data ? data : t->meta.data_path);
    if (!t->data_path[0])
        return error_set(e, CDL_EUSAGE, "%s: the checkpoint names no dataset; pass --data", resume);
    const char *out = args_get(a, "--out");
    snprintf(t->out_path, sizeof t->out_path, "%s", out ? out : resume);
    if (t->net.seq > 0 && !t->meta.vocab.n)
        return error_set(e, CDL_EUSAGE, "%s: a sequence net's checkpoint without a vocabulary",
                         resume);
    st = load_data(t, t->net.seq > 0 ? &t->meta.vocab : NULL, e);
    return st ? st : check_text_net(t, e);
}

/* Opens the training loader (--workers, --skip-bad); validation reads its set alike. */
static int open_train_loader(const TrainSetup *t, const Args *a, const SampleSource *train,
                             Loader **loader, EvalOptions *valid_opt, Error *e)
{
    long workers;
    int st = args_get_int(a, "--workers", LOADER_DEFAULT_WORKERS, 0, 256, &workers, e);
    if (st)
        return st;
    valid_opt->workers = (int)workers;
    const LoaderOptions opt = {.batch = t->net.batch,
                               .workers = (int)workers,
                               .prefetch = LOADER_PREFETCH_PER_WORKER * (int)workers,
                               .seed = t->meta.seed,
                               .train = 1,
                               .drop_last = 1,
                               .skip_bad = valid_opt->skip_bad};
    return loader_open(loader, train, &t->net.augment, &opt, e);
}

/* What one run reads: images through a Loader, or a sequence net's text. */
typedef struct RunData {
    SampleSource train, valid;
    Loader *loader;
    TextBatches text;
    TrainSource source;
    ValidSet valid_set;
} RunData;

/* Opens the image sources (and class names) or wraps the loaded text; *samples is the
 * training set's size in samples (windows of a text). */
static int open_run_data(TrainSetup *t, RunData *d, long *samples, Error *e)
{
    if (t->net.seq > 0) {
        d->text = (TextBatches){&t->text.train, t->meta.seed};
        *samples = (long)text_windows(&t->text.train, t->net.seq);
        d->valid_set.tokens = t->text.valid.n ? &t->text.valid : NULL;
        return CDL_OK;
    }
    int st = data_config_open_sources(&t->dc, &d->train, &d->valid, e);
    if (st)
        return st;
    warn_ambiguous_labels(&d->train, "training");
    warn_ambiguous_labels(&d->valid, "validation");
    if (d->train.classes > t->net.classes)
        return error_set(e, CDL_EUSAGE,
                         "%s: the training labels go up to %d but the net outputs %d classes",
                         t->data_path, d->train.classes - 1, t->net.classes);
    if (!t->meta_owns_names) {
        t->meta.names = t->dc.names;
        t->meta.n_names = t->dc.n_names;
    }
    *samples = d->train.n;
    d->valid_set.images = d->valid.n ? &d->valid : NULL;
    return CDL_OK;
}

static int run_training(TrainSetup *t, const Args *a, Error *e)
{
    long threads, log_every, time_limit;
    int st = args_get_int(a, "--threads", 0, 0, 1024, &threads, e);
    st = st ? st : args_get_int(a, "--log-every", 0, 0, LONG_MAX, &log_every, e);
    st = st ? st : args_get_int(a, "--time-limit", 0, 0, LONG_MAX, &time_limit, e);
    if (st)
        return st;
    if (args_get(a, "--gpu"))
        return error_set(e, CDL_EUSAGE,
                         "--gpu: this cdl was built without GPU support (make GPU=1)");
    cli_set_threads((int)threads);
    RunData d = {0};
    FILE *log = NULL;
    StepTrace trace = {0};
    TfEvents *tb = NULL;
    long samples = 0;
    st = open_run_data(t, &d, &samples, e);
    if (st)
        goto done;
    snprintf(t->meta.data_path, sizeof t->meta.data_path, "%s", t->data_path);
    const Hyper *h = &t->net.hyper;
    const int steps_per_epoch = (int)(samples / h->batch);
    long def_epochs = t->meta_owns_names && t->meta.epochs_planned > 0 ? t->meta.epochs_planned
                      : h->epochs > 0                                  ? h->epochs
                      : h->max_batches > 0 && steps_per_epoch > 0
                          ? (h->max_batches + steps_per_epoch - 1) / steps_per_epoch
                          : 1;
    st = args_get_int(a, "--epochs", def_epochs, 1, 1000000, &t->epochs, e);
    if (!st && steps_per_epoch < 1) /* before net_resize allocates for the whole batch */
        st = error_set(e, CDL_EUSAGE, "%s: the training set has %ld %s, fewer than batch=%d",
                       t->data_path, samples,
                       t->net.seq > 0 ? "windows of seq+1 tokens" : "samples", h->batch);
    st = st ? st : prepare_output(t->out_path, e);
    st = st ? st : net_resize(&t->net, h->batch / h->subdivisions, 0, e);
    TrainPlan plan = {
        (int)t->epochs,     t->out_path,           {0, args_get(a, "--skip-bad") != NULL},
        (double)time_limit, model_save_checkpoint, NULL};
    if (!st && t->net.seq > 0)
        d.source = train_source_text(&d.text, &t->net);
    else if (!st && !(st = open_train_loader(t, a, &d.train, &d.loader, &plan.valid, e)))
        d.source = train_source_loader(d.loader);
    if (st)
        goto done;
    const char *log_path = args_get(a, "--log");
    if (log_path && !(log = fopen(log_path, "a"))) {
        st = error_set(e, CDL_ERUNTIME, "%s: cannot open log: %s", log_path, strerror(errno));
        goto done;
    }
    const char *tb_dir = args_get(a, "--tensorboard");
    if (tb_dir && (st = tfevents_open(tb_dir, &tb, e)))
        goto done;
    Progress progress = {isatty(2), (int)log_every, (int)t->epochs,    log, t->meta.names, -1,
                         tb,        t->net.seq,     (double)time_limit};
    if (progress.log_every <= 0)
        progress.log_every = steps_per_epoch >= 10 ? steps_per_epoch / 10 : 1;
    TrainCallbacks cb = {progress_on_step, progress_on_epoch, &progress};
    st = step_trace_begin(&trace, args_get(a, "--profile-steps"), args_get(a, "--trace"),
                          t->out_path, &t->net, t->meta.step,
                          (uint64_t)t->epochs * (uint64_t)steps_per_epoch, &cb, e);
    if (st)
        goto done;
    const int done_already =
        t->meta.step >= (uint64_t)t->epochs * (uint64_t)(steps_per_epoch ? steps_per_epoch : 1);
    if (done_already)
        fprintf(stderr, "cdl: %s already has %d epochs; nothing to do (raise --epochs)\n",
                t->out_path, t->meta.epochs_done);
    st = train_run(&t->net, &t->opt, &d.source, &d.valid_set, &plan, &t->meta, &cb, e);
    /* Nothing trained means nothing written: --out may not exist to link to. */
    st = st || done_already ? st : update_latest_link(t->out_path, e);
done:
    st = step_trace_end(&trace, st, e);
    if (log)
        fclose(log);
    const int tb_st = tfevents_close(tb, st ? NULL : e);
    st = st ? st : tb_st;
    if (!t->meta_owns_names) {
        t->meta.names = NULL;
        t->meta.n_names = 0;
        memset(&t->meta.vocab, 0, sizeof t->meta.vocab);
    }
    loader_close(d.loader);
    source_free(&d.train);
    source_free(&d.valid);
    return st;
}

int cmd_train(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, train_opts, N_TRAIN_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("train", "CFG [options]  |  cdl train --resume CKPT [options]",
                        "Trains the network a cfg file defines on the dataset a .data file names.",
                        train_opts, N_TRAIN_OPTS);
        return 0;
    }
    TrainSetup t;
    memset(&t, 0, sizeof t);
    const char *resume = args_get(&a, "--resume");
    int st = resume ? setup_resume(&t, &a, resume, &e) : setup_fresh(&t, &a, &e);
    st = st ? st : run_training(&t, &a, &e);
    net_free(&t.net);
    optimizer_free(&t.opt);
    if (t.meta_owns_names)
        model_meta_free(&t.meta);
    text_data_free(&t.text);
    data_config_free(&t.dc);
    return st ? cli_fail(&e) : 0;
}
