/* A net's tensors as .npy files (see npy_export.h). */
#include "model/npy_export.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "io/npy.h"

int npy_export_net(const Net *net, const char *dir, Error *e)
{
    struct stat st_dir;
    if (mkdir(dir, 0777) && errno != EEXIST)
        return error_set(e, CDL_ERUNTIME, "%s: cannot create directory: %s", dir, strerror(errno));
    if (stat(dir, &st_dir) || !S_ISDIR(st_dir.st_mode))
        return error_set(e, CDL_ERUNTIME, "%s: not a directory", dir);
    int st = CDL_OK;
    for (int i = 0; !st && i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        for (int k = 0; !st && k < l->n_params; k++) {
            const Param *p = &l->params[k];
            char path[4096];
            snprintf(path, sizeof path, "%s/layer%d.%s.npy", dir, i, p->name);
            st = npy_write(path, p->data, p->n_dims, p->dims, e);
        }
    }
    return st;
}
