/* The CFG|MODEL argument that inspection and timing commands take: a checkpoint, or a cfg
 * file built with the command's --set overrides, opened through cdl.h, run in --precision, on
 * --gpu's device. */
#include "api/cdl.h"
#include "cli/cli.h"

int cli_open_model(const Args *a, const char *path, int for_training, cdl_model **model, Error *e)
{
    const cdl_open_options how = {.overrides = a->repeats,
                                  .n_overrides = a->n_repeats,
                                  .seed = 1,
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

int cli_get_precision(const Args *a, const char **name, Error *e)
{
    *name = args_get(a, "--precision");
    if (*name && (e->code = cdl_precision_check(*name, e->msg, sizeof e->msg)))
        return error_prefix(e, e->code, "--precision: ");
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

int cli_get_gpu(const Args *a, int *device, Error *e)
{
    long gpu;
    int st = args_get_int(a, "--gpu", -1, 0, 1024, &gpu, e);
    *device = st ? -1 : (int)gpu;
    return st;
}

int cli_apply_gpu(const Args *a, cdl_model *model, Error *e)
{
    int device;
    int st = cli_get_gpu(a, &device, e);
    if (!st && device >= 0)
        st = e->code = cdl_model_use_gpu(model, device, e->msg, sizeof e->msg);
    return st;
}
