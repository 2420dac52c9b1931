/* Shared pieces of the command-line client: option parsing, thread settings and the
 * subcommands' entry points (each returns the process exit code). */
#ifndef CDL_CLI_H
#define CDL_CLI_H

#include "api/cdl.h"
#include "util/error.h"
#include "util/file_kind.h"

#define ARGS_MAX 256

/* One option a subcommand accepts: "--name VALUE" (or "--name=VALUE") when takes_value,
 * else a flag. repeat options (--set) collect every occurrence. */
typedef struct OptSpec {
    const char *name;
    int takes_value;
    int repeat;
    const char *help;
} OptSpec;

typedef struct Args {
    const OptSpec *specs;
    int n_specs;
    const char *values[64]; /* per spec: last value, or "1" for a present flag */
    const char *repeats[ARGS_MAX];
    int n_repeats;
    const char *positional[ARGS_MAX];
    int n_positional;
} Args;

/* Parses argv[1..argc); unknown options are a usage error naming them. */
int args_parse(int argc, char **argv, const OptSpec *specs, int n_specs, Args *a, Error *e);
const char *args_get(const Args *a, const char *name);
/* Integer option with default; a malformed value is a usage error. */
int args_get_int(const Args *a, const char *name, long def, long min, long max, long *out,
                 Error *e);
/* Number option with default; a malformed value or one outside [min, max] (NaN included) is a
 * usage error. */
int args_get_float(const Args *a, const char *name, double def, double min, double max, double *out,
                   Error *e);
/* Prints "usage: cdl CMD SYNOPSIS" and the options table to stdout. */
void args_print_help(const char *cmd, const char *synopsis, const char *about, const OptSpec *specs,
                     int n_specs);

/* Refuses (CDL_EUSAGE naming path) to write a file of kind at path when that would replace an
 * input of the command (a positional argument or the value of an option that does not name an
 * output: -o, --out, --log, --trace, --tensorboard) or a file of another kind
 * (file_check_output). Every command that writes a file checks its output with it up front. */
int cli_check_output(const Args *a, const char *path, FileKind kind, Error *e);
/* Prints "cdl: MESSAGE" to stderr, escaped into one printable line (utf8_escape_line): the
 * names from files that messages quote may hold any byte. */
void cli_print_message(const char *msg);
/* cli_print_message(e->msg); returns e->code. */
int cli_fail(const Error *e);
/* Prints each line of warnings (a cfg's, may be NULL) as cli_print_message does. */
void cli_print_warnings(const char *warnings);
struct cJSON;
/* The JSON text of o (malloc'd; NULL when out of memory) for --json and --log output
 * (src/cli/json_text.c): every string in o made valid UTF-8 first. */
char *cli_json_text(struct cJSON *o);
/* The --precision option of the commands that run a model (train, eval, predict, bench,
 * profile) or measure one (info, check). */
#define CLI_PRECISION_OPT                                                                          \
    {                                                                                              \
        "--precision", 1, 0,                                                                       \
            "fp32, bf16, tf32 or fp16: the last three round the operands of convolutions and "     \
            "matrix products to that format and sum in float32, as torch.autocast; fp16 "          \
            "training scales the loss (default: the cfg's [net] precision, fp32)"                  \
    }
/* *name = --precision's value, NULL when absent; a usage error naming the option when it is no
 * precision cdl has. */
int cli_get_precision(const Args *a, const char **name, Error *e);
/* overrides = a's --set ones, then for --precision P the override net.precision=P (written into
 * text), as train and check build a cfg; *n their count. A usage error as cli_get_precision's. */
#define CLI_PRECISION_SET_SIZE 64
int cli_precision_overrides(const Args *a, const char *overrides[ARGS_MAX + 1],
                            char text[CLI_PRECISION_SET_SIZE], int *n, Error *e);
/* Runs an opened model in --precision's precision when given (checked by cli_get_precision). */
int cli_apply_precision(const Args *a, cdl_model *model, Error *e);
/* The --gpu option of the commands that run a model (train, eval, predict, bench, profile) or
 * measure one (info, check). */
#define CLI_GPU_OPT                                                                                \
    {                                                                                              \
        "--gpu", 1, 0, "run on CUDA device N (needs a GPU=1 build; int8 models run on the CPU)"    \
    }
/* *device = --gpu's device, -1 when absent: N, or of a list A,B,... under mpirun the one at the
 * rank's position among its machine's ranks (cdl_dist_local_rank); a usage error when it is not
 * a device number or list, or a list without mpirun or shorter than the machine's ranks. */
int cli_get_gpu(const Args *a, int *device, Error *e);
/* Moves an opened model to --gpu's device when given (cdl_model_use_gpu). */
int cli_apply_gpu(const Args *a, cdl_model *model, Error *e);
/* Opens a CFG|MODEL argument through cdl_model_open (src/cli/model_arg.c): a checkpoint (a's
 * --set options are refused), or a cfg with a's --set overrides and parameters from seed 1,
 * whose warnings it prints; for_training adds gradients and the optimizer state (no activations
 * either way); then applies --precision and --gpu. */
int cli_open_model(const Args *a, const char *path, int for_training, cdl_model **model, Error *e);
/* Loads a's --weights (when given) into model, opened from path, which must then be a cfg
 * (cdl_model_load_weights: darknet .weights, safetensors, a checkpoint's matching layers), and
 * prints what was loaded; a usage error when path is a checkpoint. */
int cli_load_weights(const Args *a, const char *path, cdl_model *model, Error *e);

/* Signals (src/cli/signals.c). cli_signals_init, first in main: SIGXFSZ is ignored, so that a
 * write past `ulimit -f` fails with EFBIG and is reported naming its file. After
 * cli_catch_stop_signals the first SIGINT, SIGTERM or SIGHUP only asks to stop:
 * cli_stop_signal() returns it from then on, and cli_stop_requested (ctx unused) is the query
 * for cdl_run_options.stop_requested; a second one exits at once with 128 + its number. */
void cli_signals_init(void);
void cli_catch_stop_signals(void);
int cli_stop_signal(void);
int cli_stop_requested(void *ctx);

#define CDL_DEFAULT_MODEL "weights/latest.cdl"

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_detect(int argc, char **argv);
/* cdl predict's --source and --sources (cli/predict_decode.c), its options parsed into a. */
int predict_decode(const Args *a, Error *e);
int cmd_info(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_loader(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_augment(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_check(int argc, char **argv);

#endif
