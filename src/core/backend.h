/* A backend: where a net's buffers live and which kernels compute each layer family there. The
 * net reaches a backend only through its BackendOps (backend_find): it allocates its slabs with
 * it, picks each layer's LayerKernels from it once at build, and hands the kernels its
 * ExecContext in every pass. The CPU's is backend/cpu/cpu_backend.c. */
#ifndef CDL_BACKEND_H
#define CDL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/slab_run.h"
#include "io/cfg.h"
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

/* One update of a parameter tensor under train/optimizer.h's rules: what does not depend on the
 * values. */
typedef struct UpdateRule {
    float lr;
    float momentum;
    int nesterov;                /* sgd */
    float beta1, beta2, eps;     /* adam, adamw */
    float step_size, bias2_sqrt; /* lr / (1 - beta1^t), sqrt(1 - beta2^t) */
    int decoupled;               /* adamw */
} UpdateRule;

/* What the optimizer and the weights' EMA compute over n float32 values of the backend's memory
 * (train/optimizer.h and train/ema.h say what each rule is). */
typedef struct SlabKernels {
    /* The update of the values of runs [n_runs] (the backend's memory; values of them in all)
     * in the slabs w, g and the optimizer's state, which share the parameter slab's layout, each
     * run with its decay: one pass (one launch on a device) however many tensors the net has.
     * sgd: w -= lr * step, with g += decay w; v = momentum v + g; step = nesterov ? g +
     * momentum v : v. */
    void (*sgd)(float *w, float *v, const float *g, const SlabRun *runs, int n_runs, size_t values,
                const UpdateRule *r, const ExecContext *exec);
    /* adam and adamw (r->decoupled), m and v the moments. */
    void (*adam)(float *w, float *m, float *v, const float *g, const SlabRun *runs, int n_runs,
                 size_t values, const UpdateRule *r, const ExecContext *exec);
    /* The sum of x[i]^2 in double, in an order fixed for n (not by the threads). */
    double (*sum_squares)(const float *x, size_t n, const ExecContext *exec);
    /* x *= s */
    void (*scale)(float *x, size_t n, float s, const ExecContext *exec);
    /* fp16's unscaling of the gradients g [n] (train/loss_scale.h): g *= s when every value is
     * finite, else g = 0; returns 1 when they were finite, 0 when not. A device also keeps the
     * outcome where a captured step's update reads it (sgd, adam and average then leave
     * everything as it was when they were not), and in a step that reads its losses at its end
     * (captured, which cannot wait, or begun by keep_loss) returns -1 without waiting for it:
     * the update then runs and reads it there, and step_outcome's *updated gives it. */
    int (*unscale)(float *g, size_t n, float s, const ExecContext *exec);
    /* x *= max_norm / (sqrt(sum_squares(x)) + 1e-6) when that is below 1, the coefficient in
     * double, computed where x is (a device does not wait for it); NULL: the optimizer computes
     * it on the host from sum_squares and applies it with scale. */
    void (*clip_norm)(float *x, size_t n, float max_norm, const ExecContext *exec);
    /* shadow = decay shadow + (1 - decay) w */
    void (*average)(float *shadow, const float *w, size_t n, float decay, const ExecContext *exec);
    /* Exchanges a [n] and b [n]. */
    void (*swap)(float *a, float *b, size_t n, const ExecContext *exec);
    /* to [n] = from [n], both the backend's. */
    void (*copy)(float *to, const float *from, size_t n, const ExecContext *exec);
} SlabKernels;

/* One host-to-device copy of a mini-batch (BackendOps.upload_staged). */
typedef struct StagedCopy {
    void *device;
    const void *host;
    size_t bytes;
} StagedCopy;

typedef struct BackendOps {
    Backend kind;
    const char *name; /* "CPU", "GPU" */
    /* 1: the host may read and write the backend's memory directly (the CPU); 0: only through
     * upload and download. */
    int host_visible;
    /* Starts the execution context of a net of cfg on device (0 on the CPU): its stream and
     * library handles, and the backend's options read from cfg's [net] keys; not the workspace,
     * which net_resize sizes. Fails with a message (a bad key, no device, no driver); close ends
     * it. */
    int (*open)(ExecContext *exec, Cfg *cfg, int device, Error *e);
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
    /* The staging of mini-batches on a backend that is not host-visible (NULL on the CPU, whose
     * net's host code writes the net's own buffers). alloc_host: count * size bytes of zeroed
     * host memory that the device copies from directly (pinned: cudaMallocHost); NULL when there
     * is not enough. free_host takes NULL. */
    void *(*alloc_host)(size_t count, size_t size);
    void (*free_host)(void *p);
    /* Queues the n copies of one mini-batch from host buffers of staging slot `slot` (0 or 1) and
     * returns at once: on a copy stream of its own, after the passes queued on exec so far (which
     * may still read the device buffers), and the passes queued on exec next wait for them. The
     * host must not write the slot's buffers again before wait_staged(slot). */
    void (*upload_staged)(const StagedCopy *copies, int n, int slot, const ExecContext *exec);
    /* Returns once the copies slot's last upload_staged queued have read their host buffers
     * (at once when there were none). */
    void (*wait_staged)(int slot, const ExecContext *exec);
    /* 1 when a net with gradients keeps the layouts LayerKernels.layout offers in its training
     * passes too, as inference always does (the CPU's dnnl_train_blocked); NULL: plain. */
    int (*train_layouts)(const ExecContext *exec);
    /* The optimizer's and the EMA's work on the backend's slabs. */
    const SlabKernels *slab;
    /* Returns once every pass queued on exec has finished, with the first failure of those passes
     * (CDL_ERUNTIME, "GPU: ... failed: ..."), which a pass itself cannot return. */
    int (*sync)(const ExecContext *exec, Error *e);
    /* The time, in seconds on time_now_s()'s scale, at which the work queued on exec so far
     * finishes, waiting for it: the clock profiling times layers with on a device (CUDA events
     * on the stream); NULL (the CPU): time_now_s(). */
    double (*clock_s)(const ExecContext *exec);
    /* A training step whose losses the host reads once, at its end (NULL on a host-visible
     * backend, whose loss layers add theirs to *StepContext.loss at once): called before pass
     * `part` (0 to parts - 1) of an eager step, it makes the pass's loss layers add their losses
     * to a slot of the device's instead of downloading each (a wait for the device per loss layer
     * and pass); step_outcome then returns the passes' losses with the step's one wait. */
    int (*keep_loss)(const ExecContext *exec, int part, int parts, Error *e);
    /* A training step captured once and replayed as CUDA graphs (train --cuda-graph), one graph
     * per pass of the step (`part` 0 to parts - 1; the last also holds the update), each replayed
     * after its pass's batch was committed; NULL on a backend without graphs (the CPU).
     * capture_begin records the work queued on exec from then on instead of running it, the
     * kernels reading what changes from step to step from device memory: the optimizer's lr,
     * step_size and bias2_sqrt, the pass's draw id (StepContext.draw_id) and whether fp16's
     * unscaling found the gradients finite (SlabKernels.unscale); the pass's loss is kept on
     * the device as keep_loss keeps it (a capture cannot wait). capture_end makes the recording
     * graph `part` of exec, replacing the last (failing, naming what could not be captured).
     * replay uploads step's lr, step_size and bias2_sqrt, draw_id and images_seen
     * (StepContext.images_seen: [region]'s anchor prior) and queues graph `part`, without
     * waiting. step_outcome ends a step begun by keep_loss or replay: it waits for it as sync
     * does, sets *loss to the step's loss (its passes' losses, each as its loss layers add it
     * into StepContext.loss, summed in pass order in float32, as an eager step on the host sums
     * them) and, when updated is not NULL, *updated to 0 when fp16's unscaling skipped the
     * update, else 1; from then on the loss layers download their losses again. */
    int (*capture_begin)(const ExecContext *exec, int part, int parts, Error *e);
    int (*capture_end)(const ExecContext *exec, int part, Error *e);
    int (*replay)(const ExecContext *exec, int part, const UpdateRule *step, uint64_t draw_id,
                  uint64_t images_seen, Error *e);
    int (*step_outcome)(const ExecContext *exec, float *loss, int *updated, Error *e);
} BackendOps;

/* The backend b of this build; NULL when it was not built in (the GPU without GPU=1). Defined in
 * backend/backends.c, above core: core finds it by linking, as it finds layer families
 * (layer_type_find). */
const BackendOps *backend_find(Backend b);
/* "CPU" or "GPU". */
const char *backend_name(Backend b);

#endif
