/* The CFG|MODEL argument that inspection and timing commands take: a checkpoint, or a cfg
 * file built with the command's --set overrides, opened through cdl.h. */
#include "cdl.h"
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
    return CDL_OK;
}
