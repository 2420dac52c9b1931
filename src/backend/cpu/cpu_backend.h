/* The CPU backend: host memory on cache lines, every family's CPU kernels. */
#ifndef CDL_CPU_BACKEND_H
#define CDL_CPU_BACKEND_H

#include "core/backend.h"

extern const BackendOps cpu_backend;

#endif
