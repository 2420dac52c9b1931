/* The backends built into this cdl (core/backend.h backend_find): the CPU always, the GPU with
 * GPU=1 or GPU=sim (cuda/gpu_backend.c, linked from cuda/). */
#include "backend/cpu/cpu_backend.h"

#ifdef CDL_GPU
extern const BackendOps gpu_backend;
#endif

const BackendOps *backend_find(Backend b)
{
    if (b == CDL_BACKEND_CPU)
        return &cpu_backend;
#ifdef CDL_GPU
    if (b == CDL_BACKEND_GPU)
        return &gpu_backend;
#endif
    return NULL;
}
