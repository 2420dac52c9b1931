/* A net's parameters and running statistics as a directory of NumPy .npy files
 * (`cdl export npy`), written with io/npy.h. */
#ifndef CDL_NPY_EXPORT_H
#define CDL_NPY_EXPORT_H

#include "core/net.h"

/* Creates dir (when missing) and writes dir/layer<i>.<param name>.npy for every parameter
 * and state tensor of net, shaped as the layer declares it for ONNX (convolution weights
 * [filters][c/groups][size][size], connected [output][inputs], the rest [n]); tensors of a
 * layer without ONNX export are written 1-D. */
int npy_export_net(const Net *net, const char *dir, Error *e);

#endif
