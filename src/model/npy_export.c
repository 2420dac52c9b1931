/* A net's tensors as .npy files (see npy_export.h). */
#include "model/npy_export.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/onnx_graph.h"
#include "io/npy.h"

int npy_export_net(const Net *net, const char *dir, Error *e)
{
    struct stat st_dir;
    if (mkdir(dir, 0777) && errno != EEXIST)
        return error_set(e, CDL_ERUNTIME, "%s: cannot create directory: %s", dir, strerror(errno));
    if (stat(dir, &st_dir) || !S_ISDIR(st_dir.st_mode))
        return error_set(e, CDL_ERUNTIME, "%s: not a directory", dir);
    /* The layers declare their parameters' natural shapes while exporting to ONNX; a layer
     * that cannot export (or refuses) leaves its shapes undeclared, hence 1-D here. */
    OnnxGraph g;
    int st = onnx_graph_init(&g, net, e);
    for (int i = 0; !st && i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        Error ignored;
        if (l->type->export_onnx)
            (void)l->type->export_onnx(l, net, &g, &ignored);
    }
    for (int i = 0; !st && i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        const OnnxLayer *rec = &g.layers[i];
        for (int k = 0; !st && k < l->n_params; k++) {
            const int64_t flat[] = {(int64_t)l->params[k].count};
            char path[4096];
            snprintf(path, sizeof path, "%s/layer%d.%s.npy", dir, i, l->params[k].name);
            st = rec->n_dims[k]
                     ? npy_write(path, l->params[k].data, rec->n_dims[k], rec->dims[k], e)
                     : npy_write(path, l->params[k].data, 1, flat, e);
        }
    }
    onnx_graph_free(&g);
    return st;
}
