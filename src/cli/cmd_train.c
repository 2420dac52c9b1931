/* cdl train: builds a net from a cfg (or resumes a checkpoint), trains it on a dataset
 * and writes a checkpoint after every epoch, through a training session (cdl.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdl.h"
#include "cli/cli.h"
#include "cli/progress.h"

static const OptSpec train_opts[] = {
    {"--data", 1, 0,
     "dataset: a .data file, a text file (text models) or an image folder DIR/ (default: the "
     "cfg's name with .data)"},
    {"--weights", 1, 0,
     "initialise the layers that match from this checkpoint (fine-tuning), all from "
     "FILE.safetensors (torchvision names; a changed head keeps its initial values) or from "
     "darknet .weights for the cfg"},
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
    {"--dist-timeout", 1, 0,
     "under mpirun: seconds a rank waits for the others before the run stops (default 300)"},
    {"--help", 0, 0, "show this help"},
};
#define N_TRAIN_OPTS (int)(sizeof train_opts / sizeof train_opts[0])

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

/* Creates the session of a new run (CFG) or of --resume CKPT, and attaches its data. */
static int open_session(const Args *a, Progress *progress, cdl_session **s, Error *e)
{
    const char *resume = args_get(a, "--resume");
    cdl_session_options o = {.overrides = a->repeats,
                             .n_overrides = a->n_repeats,
                             .resume_path = resume,
                             .out_path = args_get(a, "--out"),
                             .on_message = cdl_dist_rank() == 0 ? progress_on_message : NULL,
                             .message_ctx = progress};
    if (resume &&
        (a->n_positional > 1 || a->n_repeats || args_get(a, "--weights") || args_get(a, "--seed")))
        return error_set(e, CDL_EUSAGE,
                         "--resume continues a run as it was: it takes no CFG, --set, --weights "
                         "or --seed");
    if (!resume && a->n_positional != 1)
        return error_set(e, CDL_EUSAGE, "train needs one CFG file (or --resume CKPT); see --help");
    long seed;
    int st = args_get_int(a, "--seed", 1, 0, LONG_MAX, &seed, e);
    if (st)
        return st;
    if (!resume) {
        o.cfg_path = a->positional[0];
        o.seed = (uint64_t)seed;
        o.weights_path = args_get(a, "--weights");
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

static int run_training(cdl_session *s, const Args *a, Progress *progress, Error *e)
{
    long threads, log_every, time_limit, epochs, dist_timeout;
    int st = args_get_int(a, "--threads", 0, 0, 1024, &threads, e);
    st = st ? st : args_get_int(a, "--dist-timeout", 300, 1, 1000000, &dist_timeout, e);
    st = st ? st : args_get_int(a, "--log-every", 0, 0, LONG_MAX, &log_every, e);
    st = st ? st : args_get_int(a, "--time-limit", 0, 0, LONG_MAX, &time_limit, e);
    if (st)
        return st;
    if (args_get(a, "--gpu"))
        return error_set(e, CDL_EUSAGE,
                         "--gpu: this cdl was built without GPU support (make GPU=1)");
    cli_set_threads((int)threads);
    cdl_session_info info;
    cdl_session_get_info(s, &info);
    if ((st = args_get_int(a, "--epochs", info.default_epochs, 1, 1000000, &epochs, e)))
        return st;
    const char *log_path = args_get(a, "--log");
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
                               .trace_path = args_get(a, "--trace"),
                               .dist_timeout_s = (double)dist_timeout};
    const cdl_callbacks cb = {progress_on_step, progress_on_epoch, progress};
    if ((e->code = cdl_session_run(s, &o, &cb, e->msg, sizeof e->msg)))
        return e->code;
    /* Nothing trained means nothing written: --out may not exist to link to. */
    const uint64_t steps = (uint64_t)epochs * (uint64_t)info.steps_per_epoch;
    return info.done_steps >= steps || cdl_dist_rank() != 0
               ? CDL_OK
               : update_latest_link(info.checkpoint_path, e);
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
    st = st ? st : run_training(s, &a, &progress, &e);
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
    return st ? (e.code ? e.code : CDL_ERUNTIME) : 0;
}
