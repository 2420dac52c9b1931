/* The CFG|MODEL argument that inspection and timing commands take: a checkpoint, or a cfg
 * file built with the command's --set overrides. */
#include <stdlib.h>

#include "cli/cli.h"
#include "io/model_io.h"

int cli_load_model(const Args *a, const char *path, int want_grads, Net *net, float **velocity,
                   Error *e)
{
    if (!cli_is_checkpoint(path)) {
        int st = net_build_from_file(net, path, a->repeats, a->n_repeats, want_grads, 1, e);
        if (!st && velocity && !(*velocity = calloc(net->n_params + 1, sizeof **velocity))) {
            net_free(net);
            st = error_set(e, CDL_ERUNTIME, "out of memory");
        }
        return st;
    }
    if (a->n_repeats)
        return error_set(e, CDL_EUSAGE, "--set applies to cfg files, not checkpoints");
    ModelMeta meta;
    int st = model_load(path, net, want_grads, velocity, &meta, e);
    if (!st)
        model_meta_free(&meta);
    return st;
}
