/* cdl train: builds a net from a cfg (or resumes a checkpoint), trains it on a dataset and
 * writes a checkpoint after every epoch and when a signal stops it (latest.cdl beside it
 * following), through a training session (cdl.h). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/cdl.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "util/atomic_file.h"

static const OptSpec train_opts[] = {
    {"--data", 1, 0,
     "dataset: a .data file, a text file (text models) or an image folder DIR/ (default: the "
     "cfg's name with .data)"},
    {"--weights", 1, 0,
     "initialise the layers that match from this checkpoint (fine-tuning), all from "
     "FILE.safetensors (torchvision names; a changed head keeps its initial values) or from "
     "darknet .weights for the cfg"},
    {"--new-head", 0, 0,
     "with --weights: the head (the last layer with tensors) keeps its initial values and the "
     "run takes the dataset's classes (fine-tuning to other classes)"},
    {"--resume", 1, 0, "continue the run saved in this checkpoint"},
    {"--out", 1, 0, "checkpoint path (default weights/CFGNAME.cdl)"},
    {"--epochs", 1, 0, "train until this many epochs are done"},
    {"--time-limit", 1, 0,
     "stop after the step during which this many seconds of training passed, then evaluate "
     "and save"},
    {"--threads", 1, 0,
     "CPU threads (default: OMP_NUM_THREADS, else the cores no other process is running on)"},
    CLI_PRECISION_OPT,
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
    {"--gpu", 1, 0,
     "train on GPU N (needs a GPU=1 build); under mpirun A,B,... gives each rank on a machine its "
     "own: the machine's first rank A, the next B, ..."},
    {"--cuda-graph", 0, 0,
     "with --gpu: capture the training step once as CUDA graphs and replay them (the same "
     "losses; refused for what it cannot capture yet: a detection layer's loss)"},
    {"--channels-last", 0, 0,
     "keep activations NHWC where the GPU's kernels take them (net.channels_last=1; the same "
     "numbers, on the CPU the same computation)"},
    {"--no-memory-check", 0, 0,
     "train even when a step needs more memory than the process may use (cgroup limit, "
     "MemAvailable, ulimit -v), which is otherwise refused before training"},
    {"--dist-timeout", 1, 0,
     "under mpirun: seconds a rank waits for the others before the run stops (default 300)"},
    {"--help", 0, 0, "show this help"},
};
#define N_TRAIN_OPTS (int)(sizeof train_opts / sizeof train_opts[0])

/* What cmd_train follows of a run besides its progress: the last checkpoint written. */
typedef struct TrainWatch {
    Progress *progress;
    uint64_t saved_step; /* the last checkpoint's step (0: none written) */
    int interrupted;     /* the last checkpoint was written because a rank was signalled */
    int link_warned;
} TrainWatch;

/* Points latest.cdl beside checkpoint at it (DIR/latest.cdl -> BASE), as darknet keeps
 * backup/NAME_last.weights and PyTorch Lightning last.ckpt beside the other checkpoints. A
 * failure only warns (once): the checkpoint itself is saved. */
static void update_latest_link(TrainWatch *w, const char *checkpoint)
{
    const char *slash = strrchr(checkpoint, '/');
    const char *base = slash ? slash + 1 : checkpoint;
    if (!strcmp(base, "latest.cdl"))
        return;
    char link[PATH_MAX];
    snprintf(link, sizeof link, "%.*slatest.cdl", slash ? (int)(base - checkpoint) : 0, checkpoint);
    Error e = {0};
    if (atomic_symlink(base, link, &e) && !w->link_warned) {
        char line[sizeof e.msg + 64];
        snprintf(line, sizeof line, "warning: %s (the checkpoint is saved)", e.msg);
        progress_on_message(w->progress, line);
        w->link_warned = 1;
    }
}

static void watch_step(void *ctx, const cdl_step_report *r)
{
    const TrainWatch *w = ctx;
    progress_on_step(w->progress, r);
}

/* Links the checkpoint first: a reader of the log finds latest.cdl current. */
static void watch_epoch(void *ctx, const cdl_epoch_report *r)
{
    TrainWatch *w = ctx;
    update_latest_link(w, r->checkpoint);
    progress_on_epoch(w->progress, r);
    w->saved_step = r->step;
    w->interrupted = r->interrupted;
}

/* The line of a run that a signal stopped, and its exit status: 128 + the signal (0 on a rank
 * that stopped because another rank was signalled). */
static int report_interrupted(const TrainWatch *w, const cdl_session_info *info, int epochs)
{
    const int sig = cli_stop_signal();
    const char *name = sig == SIGINT    ? "SIGINT"
                       : sig == SIGTERM ? "SIGTERM"
                       : sig == SIGHUP  ? "SIGHUP"
                                        : "a signal on another rank";
    if (cdl_dist_rank() == 0 && !w->saved_step) {
        fprintf(stderr, "%scdl: interrupted by %s; nothing to save\n",
                w->progress->tty ? "\r\033[K" : "", name);
    } else if (cdl_dist_rank() == 0) {
        const uint64_t spe = info->steps_per_epoch > 0 ? (uint64_t)info->steps_per_epoch : 1;
        fprintf(stderr,
                "%scdl: interrupted by %s at epoch %d/%d step %d/%d; saved %s, resume with "
                "--resume %s\n",
                w->progress->tty ? "\r\033[K" : "", name, (int)((w->saved_step - 1) / spe) + 1,
                epochs, (int)((w->saved_step - 1) % spe) + 1, (int)spe, info->checkpoint_path,
                info->checkpoint_path);
    }
    return sig ? 128 + sig : 0;
}

/* Creates the session of a new run (CFG) or of --resume CKPT, and attaches its data. --precision
 * P is the override net.precision=P after the --set ones, --channels-last net.channels_last=1 (so
 * the checkpoint's cfg keeps them). */
static int open_session(const Args *a, Progress *progress, cdl_session **s, Error *e)
{
    const char *resume = args_get(a, "--resume");
    char precision_set[CLI_PRECISION_SET_SIZE];
    const char *overrides[ARGS_MAX + 2];
    int n_overrides;
    if (cli_precision_overrides(a, overrides, precision_set, &n_overrides, e))
        return e->code;
    if (resume && args_get(a, "--precision"))
        return error_set(e, CDL_EUSAGE,
                         "--resume continues a run in its precision: it takes no --precision");
    const int channels_last = args_get(a, "--channels-last") != NULL;
    if (resume && channels_last)
        return error_set(e, CDL_EUSAGE,
                         "--resume continues a run in its layout: it takes no --channels-last");
    if (channels_last)
        overrides[n_overrides++] = "net.channels_last=1";
    cdl_session_options o = {.overrides = overrides,
                             .n_overrides = n_overrides,
                             .resume_path = resume,
                             .out_path = args_get(a, "--out"),
                             .on_message = cdl_dist_rank() == 0 ? progress_on_message : NULL,
                             .message_ctx = progress};
    const int new_head = args_get(a, "--new-head") != NULL;
    if (resume && (a->n_positional > 1 || a->n_repeats || args_get(a, "--weights") ||
                   args_get(a, "--seed") || new_head))
        return error_set(e, CDL_EUSAGE,
                         "--resume continues a run as it was: it takes no CFG, --set, --weights, "
                         "--new-head or --seed");
    if (new_head && !args_get(a, "--weights"))
        return error_set(e, CDL_EUSAGE,
                         "--new-head goes with --weights: it starts a new run from a checkpoint "
                         "with a new head");
    if (!resume && a->n_positional != 1)
        return error_set(e, CDL_EUSAGE, "train needs one CFG file (or --resume CKPT); see --help");
    long seed;
    int gpu;
    int st = args_get_int(a, "--seed", 1, 0, LONG_MAX, &seed, e);
    st = st ? st : cli_get_gpu(a, &gpu, e);
    if (st)
        return st;
    if (args_get(a, "--cuda-graph") && gpu < 0)
        return error_set(e, CDL_EUSAGE,
                         "--cuda-graph captures a GPU's training step: it needs --gpu N");
    o.on_gpu = gpu >= 0;
    o.gpu_device = gpu >= 0 ? gpu : 0;
    if (!resume) {
        o.cfg_path = a->positional[0];
        o.seed = (uint64_t)seed;
        o.weights_path = args_get(a, "--weights");
        o.new_head = new_head;
    }
    if ((e->code = cdl_session_create(&o, s, e->msg, sizeof e->msg)))
        return e->code;
    long workers;
    if ((st = args_get_int(a, "--workers", CDL_DEFAULT_WORKERS, 0, 256, &workers, e)))
        return st;
    const cdl_data_options d = {(int)workers, args_get(a, "--skip-bad") != NULL};
    e->code = cdl_session_attach_data(*s, args_get(a, "--data"), &d, e->msg, sizeof e->msg);
    return e->code;
}

/* *exit_code: 0, or the exit status of a run that a signal stopped (once saved). */
static int run_training(cdl_session *s, const Args *a, Progress *progress, int *exit_code, Error *e)
{
    long threads, log_every, time_limit, epochs, dist_timeout;
    int st = args_get_int(a, "--threads", 0, 0, 1024, &threads, e);
    st = st ? st : args_get_int(a, "--dist-timeout", 300, 1, 1000000, &dist_timeout, e);
    st = st ? st : args_get_int(a, "--log-every", 0, 0, LONG_MAX, &log_every, e);
    st = st ? st : args_get_int(a, "--time-limit", 0, 0, LONG_MAX, &time_limit, e);
    if (st)
        return st;
    cdl_set_threads((int)threads);
    cdl_session_info info;
    cdl_session_get_info(s, &info);
    if ((st = args_get_int(a, "--epochs", info.default_epochs, 1, 1000000, &epochs, e)))
        return st;
    const char *log_path = args_get(a, "--log"), *trace_path = args_get(a, "--trace");
    if (trace_path && (st = cli_check_output(a, trace_path, FILE_KIND_JSON, e)))
        return st; /* the log is appended to (a device or pipe too): it replaces nothing */
    if (log_path && cdl_dist_rank() == 0 && !(progress->jsonl = fopen(log_path, "a")))
        return error_set(e, CDL_ERUNTIME, "%s: cannot open log: %s", log_path, strerror(errno));
    progress->log_path = log_path;
    progress->epochs = (int)epochs;
    progress->tokens_per_sample = info.seq;
    const cdl_run_options o = {.epochs = (int)epochs,
                               .time_limit_s = (double)time_limit,
                               .log_every = (int)log_every,
                               .tensorboard_dir = args_get(a, "--tensorboard"),
                               .profile_steps = args_get(a, "--profile-steps"),
                               .trace_path = trace_path,
                               .dist_timeout_s = (double)dist_timeout,
                               .stop_requested = cli_stop_requested,
                               .cuda_graph = args_get(a, "--cuda-graph") != NULL,
                               .skip_memory_check = args_get(a, "--no-memory-check") != NULL};
    TrainWatch watch = {.progress = progress};
    const cdl_callbacks cb = {watch_step, watch_epoch, &watch};
    /* Until now a signal ends the process at once: there is nothing to save. */
    cli_catch_stop_signals();
    if ((e->code = cdl_session_run(s, &o, &cb, e->msg, sizeof e->msg)))
        return e->code;
    if (cli_stop_signal() || watch.interrupted) {
        cdl_session_get_info(s, &info);
        *exit_code = report_interrupted(&watch, &info, (int)epochs);
    }
    return CDL_OK;
}

int cmd_train(int argc, char **argv)
{
    Args a;
    Error e = {0};
    /* Under mpirun: one rank of a data-parallel run; rank 0 prints for all. */
    if (cdl_dist_init(&argc, &argv)) {
        fprintf(stderr, "cdl: MPI could not start\n");
        return CDL_ERUNTIME;
    }
    const int lead = cdl_dist_rank() == 0;
    if (args_parse(argc, argv, train_opts, N_TRAIN_OPTS, &a, &e) || args_get(&a, "--help")) {
        if (lead && e.code)
            cli_fail(&e);
        else if (lead)
            args_print_help("train", "CFG [options]  |  cdl train --resume CKPT [options]",
                            "Trains the network a cfg file defines on the dataset a .data file "
                            "names.",
                            train_opts, N_TRAIN_OPTS);
        cdl_dist_finalize(0);
        return e.code;
    }
    Progress progress = {.tty = isatty(2) && lead};
    cdl_session *s = NULL;
    int report;
    /* A bad cfg or missing data fails on every rank alike (or on one): reported once. */
    int st = cdl_dist_agree(open_session(&a, &progress, &s, &e), &report);
    if (st && !report)
        e.code = st, e.msg[0] = 0;
    const int setup_failed = st != 0;
    int exit_code = 0;
    st = st ? st : run_training(s, &a, &progress, &exit_code, &e);
    if (progress.jsonl && fclose(progress.jsonl) && !progress.log_errno)
        progress.log_errno = errno ? errno : EIO;
    /* A log that could not be written whole fails the run, which otherwise completed. */
    if (!st && progress.log_errno)
        st = error_set(&e, CDL_ERUNTIME,
                       "%s: the log could not be written (%s) and is incomplete from step %llu "
                       "on; training itself completed and saved its checkpoint",
                       progress.log_path, strerror(progress.log_errno),
                       (unsigned long long)progress.log_failed_step);
    cdl_session_free(s);
    if (st && e.msg[0])
        cli_fail(&e);
    /* A rank failing alone in training must stop the others (they would wait for it). */
    cdl_dist_finalize(st && !setup_failed);
    return st ? (e.code ? e.code : CDL_ERUNTIME) : exit_code;
}
