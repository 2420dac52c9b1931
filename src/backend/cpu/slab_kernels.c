/* The optimizer's and the EMA's loops over slabs on the CPU (core/backend.h SlabKernels): SGD,
 * Adam and AdamW, the gradient norm and its scaling, fp16's unscaling, the weights' moving
 * average. */
#include "backend/cpu/cpu_backend.h"

#include <math.h>
#include <string.h>

/* Below this many values a parallel region costs more than it saves. */
#define SLAB_PARALLEL_MIN 65536

/* SGD over one run: count values at w, v and grad. */
static void sgd_run(float *w, float *v, const float *grad, size_t count, float decay,
                    const UpdateRule *r)
{
    const float momentum = r->momentum, lr = r->lr;
    /* The step is g_weight*g + v_weight*v: g + momentum*v (nesterov) or v. */
    const float g_weight = r->nesterov ? 1.0f : 0.0f, v_weight = r->nesterov ? momentum : 1.0f;
    const long n = (long)count;
#pragma omp parallel for simd if (parallel : n > SLAB_PARALLEL_MIN) schedule(static)
    for (long j = 0; j < n; j++) {
        const float g = grad[j] + decay * w[j];
        const float vj = momentum * v[j] + g;
        v[j] = vj;
        w[j] -= lr * (g_weight * g + v_weight * vj);
    }
}

/* Adam or AdamW over one run. */
static void adam_run(float *w, float *m, float *v, const float *grad, size_t count, float decay,
                     const UpdateRule *r)
{
    const float b1 = r->beta1, b2 = r->beta2, eps = r->eps;
    const float shrink = r->decoupled ? 1.0f - r->lr * decay : 1.0f;
    const float l2 = r->decoupled ? 0.0f : decay;
    const float step_size = r->step_size, bias2_sqrt = r->bias2_sqrt;
    const long n = (long)count;
#pragma omp parallel for simd if (parallel : n > SLAB_PARALLEL_MIN) schedule(static)
    for (long j = 0; j < n; j++) {
        w[j] *= shrink;
        const float g = grad[j] + l2 * w[j];
        m[j] = b1 * m[j] + (1.0f - b1) * g;
        v[j] = b2 * v[j] + (1.0f - b2) * g * g;
        w[j] -= step_size * m[j] / (sqrtf(v[j]) / bias2_sqrt + eps);
    }
}

static void cpu_sgd(float *w, float *v, const float *g, const SlabRun *runs, int n_runs,
                    size_t values, const UpdateRule *r, const ExecContext *exec)
{
    (void)values, (void)exec;
    for (int i = 0; i < n_runs; i++) {
        const size_t at = runs[i].offset;
        sgd_run(w + at, v + at, g + at, runs[i].count, runs[i].decay, r);
    }
}

static void cpu_adam(float *w, float *m, float *v, const float *g, const SlabRun *runs, int n_runs,
                     size_t values, const UpdateRule *r, const ExecContext *exec)
{
    (void)values, (void)exec;
    for (int i = 0; i < n_runs; i++) {
        const size_t at = runs[i].offset;
        adam_run(w + at, m + at, v + at, g + at, runs[i].count, runs[i].decay, r);
    }
}

static double cpu_sum_squares(const float *x, size_t n, const ExecContext *exec)
{
    (void)exec;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < n; i++)
        sum += (double)x[i] * (double)x[i];
    return sum;
}

static void cpu_scale(float *x, size_t count, float s, const ExecContext *exec)
{
    (void)exec;
    const long n = (long)count;
#pragma omp parallel for simd if (parallel : n > SLAB_PARALLEL_MIN) schedule(static)
    for (long i = 0; i < n; i++)
        x[i] *= s;
}

static int cpu_unscale(float *g, size_t n, float s, const ExecContext *exec)
{
    if (!isfinite(cpu_sum_squares(g, n, exec))) {
        memset(g, 0, n * sizeof *g);
        return 0;
    }
    cpu_scale(g, n, s, exec);
    return 1;
}

static void cpu_average(float *shadow, const float *w, size_t n, float decay,
                        const ExecContext *exec)
{
    (void)exec;
    const float keep = decay, take = 1.0f - decay;
    const long count = (long)n;
#pragma omp parallel for simd if (parallel : count > SLAB_PARALLEL_MIN) schedule(static)
    for (long i = 0; i < count; i++)
        shadow[i] = keep * shadow[i] + take * w[i];
}

static void cpu_swap(float *a, float *b, size_t n, const ExecContext *exec)
{
    (void)exec;
    for (size_t i = 0; i < n; i++) {
        const float t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

static void cpu_copy(float *to, const float *from, size_t n, const ExecContext *exec)
{
    (void)exec;
    memcpy(to, from, n * sizeof *to);
}

const SlabKernels cpu_slab_kernels = {
    .sgd = cpu_sgd,
    .adam = cpu_adam,
    .sum_squares = cpu_sum_squares,
    .scale = cpu_scale,
    .unscale = cpu_unscale,
    .average = cpu_average,
    .swap = cpu_swap,
    .copy = cpu_copy,
};
