/* Which layer outputs a net keeps in 16 bits (Layer.storage, core/precision.h ElemType): the one
 * place that decides it, when net_resize sizes the net. */
#ifndef CDL_NET_STORAGE_H
#define CDL_NET_STORAGE_H

#include "core/net.h"

/* Sets every layer's storage and in_storage. Under precision bf16 or fp16 (precision_storage) a
 * layer's output, and its gradient, is 16-bit where its kernels and those of every layer that
 * reads it take 16-bit tensors (LayerKernels.stores_16bit; a reader may instead only read them,
 * LayerKernels.reads_16bit), all in that precision, and it is not
 * the net's output (which the host reads as float32); every other tensor, the net input among them,
 * is float32. A producer and a consumer thus always agree, and no tensor is converted between
 * layers: a 16-bit family reads and writes either type, and writes float32 where any reader needs
 * it. */
void net_plan_storage(Net *net);

#endif
