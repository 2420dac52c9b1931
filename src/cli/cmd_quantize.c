/* cdl quantize: writes a checkpoint whose convolution, connected and linear weights are int8
 * (per-output-channel scales), for int8 predict, eval and bench --inference. */
#include <limits.h>
#include <stdio.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec quantize_opts[] = {
    {"-o", 1, 0, "the int8 checkpoint to write (required)"},
    {"--calibrate", 1, 0,
     "a .data file: fix the convolutions' input grids on its first training images (default: "
     "every input quantized per batch)"},
    {"--batches", 1, 0, "calibration mini-batches of the cfg's size (default 10)"},
    {"--workers", 1, 0, "calibration loader threads (default 2)"},
    {"--threads", 1, 0,
     "CPU threads (default: OMP_NUM_THREADS, else the cores no other process is running on)"},
    {"--gpu", 1, 0, "refused: int8 runs on the CPU only"},
    {"--help", 0, 0, "show this help"},
};
#define N_QUANTIZE_OPTS (int)(sizeof quantize_opts / sizeof quantize_opts[0])

static int run_quantize(const Args *a, Error *e)
{
    if (a->n_positional != 1)
        return error_set(e, CDL_EUSAGE, "quantize needs one MODEL checkpoint; see --help");
    const char *model_path = a->positional[0], *out = args_get(a, "-o");
    if (!out)
        return error_set(e, CDL_EUSAGE, "quantize needs -o OUT.cdl, the int8 checkpoint to write");
    if (cli_check_output(a, out, FILE_KIND_CHECKPOINT, e))
        return e->code;
    if (args_get(a, "--gpu"))
        return error_set(e, CDL_EUSAGE,
                         "quantize --gpu: int8 runs on the CPU only (quantize and run int8 "
                         "models without --gpu)");
    long batches, workers, threads;
    int st = args_get_int(a, "--batches", 0, 1, INT_MAX, &batches, e);
    st = st ? st : args_get_int(a, "--workers", CDL_DEFAULT_WORKERS, 0, 64, &workers, e);
    st = st ? st : args_get_int(a, "--threads", 0, 0, 1024, &threads, e);
    if (st)
        return st;
    if (!cdl_is_checkpoint(model_path))
        return error_set(e, CDL_EUSAGE,
                         "%s: not a cdl checkpoint (quantize a model trained by cdl train)",
                         model_path);
    cdl_set_threads((int)threads);
    cdl_model *m;
    if ((st = cli_open_model(a, model_path, 0, &m, e)))
        return st;
    const cdl_quantize_options o = {args_get(a, "--calibrate"), (int)batches, (int)workers};
    cdl_quantize_result r;
    st = cdl_model_quantize(m, &o, &r, e->msg, sizeof e->msg);
    if (st)
        error_prefix(e, st, "%s: ", model_path);
    if (!st && (st = cdl_model_save(m, out, e->msg, sizeof e->msg)))
        e->code = st;
    if (!st) {
        printf("%s: %d layers int8 (%zu weights)", out, r.layers, r.int8_weights);
        if (r.calibrated)
            printf(", %d convolution input grids calibrated on %d images", r.calibrated,
                   r.calibration_images);
        printf("\n");
    }
    cdl_model_free(m);
    return st;
}

int cmd_quantize(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, quantize_opts, N_QUANTIZE_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("quantize", "MODEL -o OUT.cdl [options]",
                        "Writes MODEL with int8 convolution, connected and linear weights.",
                        quantize_opts, N_QUANTIZE_OPTS);
        return 0;
    }
    return run_quantize(&a, &e) ? cli_fail(&e) : 0;
}
