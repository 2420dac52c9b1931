/* The optimizer's and the EMA's work over slabs on the GPU (core/backend.h SlabKernels), queued on
 * the net's stream; failures are kept for net_sync. */
#include "gpu.h"
#include "kernels/slab.h"

static cudaStream_t stream_of(const ExecContext *exec)
{
    return (cudaStream_t)exec->stream;
}

/* The device's copy of the step's lr, step_size and bias2_sqrt while a step is captured. */
static const float *step_values_of(const ExecContext *exec)
{
    const GpuHandles *h = exec->handles;
    return h->capturing ? &h->step->lr : NULL;
}

/* The unscaling's outcome on the device while the update decides there whether it runs: in a
 * captured step, and in an eager one that did not wait for it (gpu_unscale). */
static const float *skip_of(const ExecContext *exec)
{
    const GpuHandles *h = exec->handles;
    return h->capturing || h->skip_on_device ? &h->step->skip : NULL;
}

static void gpu_sgd(float *w, float *v, const float *g, const SlabRun *runs, int n_runs,
                    size_t values, const UpdateRule *r, const ExecContext *exec)
{
    gpu_note_exec(exec,
                  cuda_sgd(w, v, g, runs, n_runs, values, r->lr, r->momentum, r->nesterov,
                           step_values_of(exec), skip_of(exec), stream_of(exec)),
                  "sgd");
}

static void gpu_adam(float *w, float *m, float *v, const float *g, const SlabRun *runs, int n_runs,
                     size_t values, const UpdateRule *r, const ExecContext *exec)
{
    gpu_note_exec(exec,
                  cuda_adam(w, m, v, g, runs, n_runs, values, r->lr, r->beta1, r->beta2, r->eps,
                            r->step_size, r->bias2_sqrt, r->decoupled, step_values_of(exec),
                            skip_of(exec), stream_of(exec)),
                  "adam");
}

/* The sum on the device, then the one value back (a wait on the stream: clipping needs it). */
static double gpu_sum_squares(const float *x, size_t n, const ExecContext *exec)
{
    GpuHandles *h = exec->handles;
    double *total = h->reduce_work + cuda_sum_squares_work() / sizeof(double), sum = 0;
    gpu_note_exec(exec, cuda_sum_squares(total, h->reduce_work, x, n, stream_of(exec)),
                  "gradient norm");
    gpu_note_exec(exec,
                  cudaMemcpyAsync(&sum, total, sizeof sum, cudaMemcpyDeviceToHost, stream_of(exec)),
                  "gradient norm download");
    gpu_note_exec(exec, cudaStreamSynchronize(stream_of(exec)), "gradient norm download");
    return sum;
}

static void gpu_scale(float *x, size_t n, float s, const ExecContext *exec)
{
    gpu_note_exec(exec, cuda_scale(x, n, s, stream_of(exec)), "gradient scale");
}

/* The outcome on the device, where the update reads it; downloaded (a wait) only outside a step
 * that reads its losses at its end (captured, or eager with keep_loss), whose step_outcome
 * downloads it with them: -1 then. */
static int gpu_unscale(float *g, size_t n, float s, const ExecContext *exec)
{
    GpuHandles *h = exec->handles;
    gpu_note_exec(exec, cuda_unscale(g, n, s, &h->step->skip, h->reduce_work, stream_of(exec)),
                  "gradient unscaling");
    if (h->capturing)
        return -1;
    if (h->loss_slot) {
        h->skip_on_device = 1;
        return -1;
    }
    float skip = 1;
    gpu_note_exec(exec,
                  cudaMemcpyAsync(&skip, &h->step->skip, sizeof skip, cudaMemcpyDeviceToHost,
                                  stream_of(exec)),
                  "gradient unscaling download");
    gpu_note_exec(exec, cudaStreamSynchronize(stream_of(exec)), "gradient unscaling download");
    return skip == 0.0f;
}

/* No download: the coefficient is computed and applied on the device. */
static void gpu_clip_norm(float *x, size_t n, float max_norm, const ExecContext *exec)
{
    GpuHandles *h = exec->handles;
    gpu_note_exec(exec, cuda_clip_norm(x, n, max_norm, h->reduce_work, stream_of(exec)),
                  "gradient clipping");
}

static void gpu_average(float *shadow, const float *w, size_t n, float decay,
                        const ExecContext *exec)
{
    gpu_note_exec(exec, cuda_average(shadow, w, n, decay, skip_of(exec), stream_of(exec)), "ema");
}

static void gpu_swap(float *a, float *b, size_t n, const ExecContext *exec)
{
    gpu_note_exec(exec, cuda_swap(a, b, n, stream_of(exec)), "ema swap");
}

static void gpu_copy(float *to, const float *from, size_t n, const ExecContext *exec)
{
    gpu_note_exec(
        exec, cudaMemcpyAsync(to, from, n * sizeof *to, cudaMemcpyDeviceToDevice, stream_of(exec)),
        "slab copy");
}

const SlabKernels gpu_slab_kernels = {
    .sgd = gpu_sgd,
    .adam = gpu_adam,
    .sum_squares = gpu_sum_squares,
    .scale = gpu_scale,
    .unscale = gpu_unscale,
    .clip_norm = gpu_clip_norm,
    .average = gpu_average,
    .swap = gpu_swap,
    .copy = gpu_copy,
};
