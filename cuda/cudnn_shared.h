/* What cdl's cuDNN engines (conv_cudnn.c, bn_cudnn.c) share: cuDNN's data type of a tensor type,
 * and cuDNN's statuses as the GPU backend's errors, at resize and in a pass. Not in a GPU=sim
 * build (no cuDNN there): this header declares nothing then. */
#ifndef CDL_CUDA_CUDNN_SHARED_H
#define CDL_CUDA_CUDNN_SHARED_H

#ifndef CDL_GPU_SIM
#include <cudnn.h>

#include "core/layer.h"

/* cuDNN's data type of tensors of type t: CUDNN_DATA_FLOAT, BFLOAT16 or HALF. */
cudnnDataType_t cudnn_data_type(ElemType t);

/* Status st of cuDNN's call what on layer l as the net's error: CDL_OK where it succeeded, else
 * CDL_ERUNTIME naming the layer, its family, the call and cuDNN's status. */
int cudnn_layer_check(cudnnStatus_t st, const Layer *l, const char *what, Error *e);

/* Keeps a failed call's status as the pass's failure (gpu_note), naming the call and status. */
void cudnn_note(const StepContext *ctx, cudnnStatus_t st, const char *what);

#endif
#endif
