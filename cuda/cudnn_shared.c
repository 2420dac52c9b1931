/* What cdl's cuDNN engines share (cudnn_shared.h). Compiled only in a GPU=1 build. */
#ifndef CDL_GPU_SIM
#include "cudnn_shared.h"

#include <stdio.h>

#include "gpu.h"

cudnnDataType_t cudnn_data_type(ElemType t)
{
    return t == ELEM_BF16   ? CUDNN_DATA_BFLOAT16
           : t == ELEM_FP16 ? CUDNN_DATA_HALF
                            : CUDNN_DATA_FLOAT;
}

int cudnn_layer_check(cudnnStatus_t st, const Layer *l, const char *what, Error *e)
{
    if (st == CUDNN_STATUS_SUCCESS)
        return CDL_OK;
    return error_set(e, CDL_ERUNTIME, "layer %d [%s] on cuDNN: %s: %s", l->index, l->type->name,
                     what, cudnnGetErrorString(st));
}

void cudnn_note(const StepContext *ctx, cudnnStatus_t st, const char *what)
{
    if (st == CUDNN_STATUS_SUCCESS)
        return;
    char text[96];
    snprintf(text, sizeof text, "%s (%s)", what, cudnnGetErrorString(st));
    gpu_note(ctx, cudaErrorUnknown, text);
}
#endif
