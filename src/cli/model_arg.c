/* The CFG|MODEL argument that inspection and timing commands take: a checkpoint, or a cfg
 * file built with the command's --set overrides. */
#include <string.h>

#include "cli/cli.h"
#include "model/model_io.h"

int cli_load_model(const Args *a, const char *path, int want_grads, Net *net, Optimizer *opt,
                   Error *e)
{
    if (opt)
        memset(opt, 0, sizeof *opt);
    if (!cli_is_checkpoint(path)) {
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
