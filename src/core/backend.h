/* A backend: where a net's buffers live and which kernels compute each layer family there. The
 * net reaches a backend only through its BackendOps (backend_find): it allocates its slabs with
 * it, picks each layer's LayerKernels from it once at build, and hands the kernels its
 * ExecContext in every pass. The CPU's is backend/cpu/cpu_backend.c. */
#ifndef CDL_BACKEND_H
#define CDL_BACKEND_H

#include <stddef.h>

#include "util/error.h"

struct LayerType;
struct LayerKernels;

/* The backends a net may run on. */
typedef enum Backend {
    CDL_BACKEND_CPU,
    CDL_BACKEND_GPU,
    CDL_BACKEND_COUNT,
} Backend;

/* Where a backend's kernels run, for the passes of one net (StepContext.exec): owned by the net,
 * its memory on the backend's device. */
typedef struct ExecContext {
    /* Shared workspace of the layers' passes, at least Layer.scratch_per_sample * batch floats
     * for every layer (im2col columns and the like). */
    float *workspace;
    size_t workspace_floats;
    /* The backend's queue of work and its libraries' handles (a cudaStream_t, cuBLAS and cuDNN
     * handles on a GPU); NULL on the CPU, whose kernels run when called. */
    void *stream;
    void *handles;
} ExecContext;

typedef struct BackendOps {
    Backend kind;
    const char *name; /* "CPU", "GPU" */
    /* 1: the host may read and write the backend's memory directly (the CPU); 0: only through
     * upload and download. */
    int host_visible;
    /* Starts a net's execution context (its stream and library handles; not the workspace, which
     * net_resize sizes), or fails with a message (no device, no driver); close ends it. */
    int (*open)(ExecContext *exec, Error *e);
    void (*close)(ExecContext *exec);
    /* The kernels of family t on this backend; NULL when it has none (the net refuses it). */
    const struct LayerKernels *(*kernels)(const struct LayerType *t);
    /* count * size bytes of zeroed memory on the backend's device, starting on a cache line (64
     * bytes) or better; NULL when there is not enough or the product overflows. free takes NULL. */
    void *(*alloc)(size_t count, size_t size);
    void (*free)(void *p);
    /* Zeroes bytes at p (device memory), in the order of the passes' work. */
    void (*zero)(void *p, size_t bytes, const ExecContext *exec);
    /* Copies between host memory and the device's, returning when the copy is done. */
    void (*upload)(void *device, const void *host, size_t bytes);
    void (*download)(void *host, const void *device, size_t bytes);
    /* Returns once every pass queued on exec has finished, with the first failure of those passes
     * (CDL_ERUNTIME, "GPU: ... failed: ..."), which a pass itself cannot return. */
    int (*sync)(const ExecContext *exec, Error *e);
} BackendOps;

/* The backend b of this build; NULL when it was not built in (the GPU without GPU=1). Defined in
 * backend/backends.c, above core: core finds it by linking, as it finds layer families
 * (layer_type_find). */
const BackendOps *backend_find(Backend b);
/* "CPU" or "GPU". */
const char *backend_name(Backend b);

#endif
