/* The CPU backend: host memory on cache lines, every family's CPU kernels. */
#ifndef CDL_CPU_BACKEND_H
#define CDL_CPU_BACKEND_H

#include "core/backend.h"

extern const BackendOps cpu_backend;
/* Its optimizer and EMA loops (backend/cpu/slab_kernels.c). */
extern const SlabKernels cpu_slab_kernels;

#endif
