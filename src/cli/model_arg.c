/* The CFG|MODEL argument that inspection and timing commands take: a checkpoint, or a cfg
 * file built with the command's --set overrides, opened through cdl.h, run in --precision, on
 * --gpu's device. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cdl.h"
#include "cli/cli.h"

int cli_open_model(const Args *a, const char *path, int for_training, cdl_model **model, Error *e)
{
    /* with --gpu, activations for one sample: the device's plan (cdl info's channels-last
     * layers) is made when the net is sized there */
    const cdl_open_options how = {.overrides = a->repeats,
                                  .n_overrides = a->n_repeats,
                                  .seed = 1,
                                  .batch = args_get(a, "--gpu") ? 1 : 0,
                                  .for_training = for_training};
    int st = cdl_model_open(path, &how, model, e->msg, sizeof e->msg);
    if (st)
        return e->code = st;
    if (!cdl_is_checkpoint(path))
        cli_print_warnings(cdl_model_warnings(*model));
    if ((st = cli_apply_precision(a, *model, e)) || (st = cli_apply_gpu(a, *model, e))) {
        cdl_model_free(*model);
        return st;
    }
    return CDL_OK;
}

int cli_load_weights(const Args *a, const char *path, cdl_model *model, Error *e)
{
    const char *weights = args_get(a, "--weights");
    if (!weights)
        return CDL_OK;
    if (cdl_is_checkpoint(path))
        return error_set(e, CDL_EUSAGE,
                         "--weights goes with a CFG: %s is a checkpoint, which has its weights",
                         path);
    char note[1200];
    const int st = cdl_model_load_weights(model, weights, note, sizeof note, e->msg, sizeof e->msg);
    if (st)
        return e->code = st;
    fprintf(stderr, "cdl: --weights %s\n", note);
    return CDL_OK;
}

int cli_get_precision(const Args *a, const char **name, Error *e)
{
    *name = args_get(a, "--precision");
    if (*name && (e->code = cdl_precision_check(*name, e->msg, sizeof e->msg)))
        return error_prefix(e, e->code, "--precision: ");
    return CDL_OK;
}

int cli_precision_overrides(const Args *a, const char *overrides[ARGS_MAX + 1],
                            char text[CLI_PRECISION_SET_SIZE], int *n, Error *e)
{
    const char *precision;
    if (cli_get_precision(a, &precision, e))
        return e->code;
    memcpy(overrides, a->repeats, (size_t)a->n_repeats * sizeof *overrides);
    *n = a->n_repeats;
    if (precision) {
        snprintf(text, CLI_PRECISION_SET_SIZE, "net.precision=%s", precision);
        overrides[(*n)++] = text;
    }
    return CDL_OK;
}

int cli_apply_precision(const Args *a, cdl_model *model, Error *e)
{
    const char *name;
    int st = cli_get_precision(a, &name, e);
    if (!st && name)
        st = e->code = cdl_model_set_precision(model, name, e->msg, sizeof e->msg);
    return st;
}

/* The most devices --gpu lists. */
#define CLI_MAX_GPUS 64

int cli_get_gpu(const Args *a, int *device, Error *e)
{
    const char *text = args_get(a, "--gpu");
    *device = -1;
    if (!text)
        return CDL_OK;
    int devices[CLI_MAX_GPUS], n = 0;
    for (const char *at = text;; at++) {
        char *end;
        errno = 0;
        const long d = strtol(at, &end, 10);
        if (end == at || errno || d < 0 || d > 1024 || n == CLI_MAX_GPUS || (*end && *end != ','))
            return error_set(e, CDL_EUSAGE,
                             "bad value '%s' for --gpu: expected a device number in 0..1024, or "
                             "up to %d of them separated by commas (one per rank under mpirun)",
                             text, CLI_MAX_GPUS);
        devices[n++] = (int)d;
        at = end;
        if (!*at)
            break;
    }
    if (n == 1) {
        *device = devices[0];
        return CDL_OK;
    }
    int local_size;
    const int local = cdl_dist_local_rank(&local_size);
    if (cdl_dist_size() == 1)
        return error_set(e, CDL_EUSAGE,
                         "--gpu %s names a device for each rank: start the run with mpirun -np %d "
                         "(a make MPI=1 build), or give one device",
                         text, n);
    if (local_size > n)
        return error_set(
            e, CDL_EUSAGE,
            "--gpu %s names %d devices for the %d ranks mpirun started on this machine", text, n,
            local_size);
    *device = devices[local];
    return CDL_OK;
}

int cli_apply_gpu(const Args *a, cdl_model *model, Error *e)
{
    int device;
    int st = cli_get_gpu(a, &device, e);
    if (!st && device >= 0)
        st = e->code = cdl_model_use_gpu(model, device, e->msg, sizeof e->msg);
    return st;
}
