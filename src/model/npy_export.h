/* A net's parameters and running statistics as a directory of NumPy .npy files
 * (`cdl export npy`), written with io/npy.h. */
#ifndef CDL_NPY_EXPORT_H
#define CDL_NPY_EXPORT_H

#include "core/net.h"

/* Creates dir (when missing) and writes dir/layer<i>.<param name>.npy for every parameter
 * and state tensor of net, shaped as its Param (convolution weights
 * [filters][c/groups][size][size], connected [output][inputs], ...). */
int npy_export_net(const Net *net, const char *dir, Error *e);

#endif
