/* The backends built into this cdl (core/backend.h backend_find): the CPU always, the GPU with
 * GPU=1. */
#include "backend/cpu/cpu_backend.h"

const BackendOps *backend_find(Backend b)
{
    return b == CDL_BACKEND_CPU ? &cpu_backend : NULL;
}
