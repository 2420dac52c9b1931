/* The CFG|MODEL argument that inspection and timing commands take: a checkpoint, or a cfg
 * file built with the command's --set overrides. */
#include <stdio.h>
#include <string.h>

#include "cdl.h"
#include "cli/cli.h"
#include "model/model_io.h"

int cli_load_model(const Args *a, const char *path, int want_grads, Net *net, Optimizer *opt,
                   Error *e)
{
    if (opt)
        memset(opt, 0, sizeof *opt);
    if (!cdl_is_checkpoint(path)) {
        int st = net_build_from_file(net, path, a->repeats, a->n_repeats, want_grads, 1, e);
        if (!st)
            cli_print_warnings(net->cfg.warnings);
        if (!st && opt && (st = optimizer_init(opt, net, e)))
            net_free(net);
        return st;
    }
    if (a->n_repeats)
        return error_set(e, CDL_EUSAGE, "--set applies to cfg files, not checkpoints");
    ModelMeta meta;
    int st = model_load(path, net, want_grads, opt, &meta, e);
    if (!st)
        model_meta_free(&meta);
    return st;
}

int cli_open_model(const Args *a, const char *path, cdl_model **model, Error *e)
{
    const cdl_open_options how = {.overrides = a->repeats, .n_overrides = a->n_repeats, .seed = 1};
    int st = cdl_model_open(path, &how, model, e->msg, sizeof e->msg);
    if (st)
        return e->code = st;
    if (!cdl_is_checkpoint(path))
        cli_print_warnings(cdl_model_warnings(*model));
    return CDL_OK;
}
