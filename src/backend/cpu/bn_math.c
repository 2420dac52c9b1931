/* Batch normalisation kernels: each thread takes a block of channels and runs over the batch
 * image by image, sums in double. Each channel's reductions run in a fixed order, so results do
 * not depend on the thread count. */
#include "backend/cpu/bn_math.h"

#include <math.h>
#include <omp.h>
#include <stddef.h>

/* This thread's channels [*c0, *c1) of c inside a parallel region, in the blocks of OpenMP's
 * static schedule. The passes run image by image over the thread's channels, so that each thread
 * reads the tensor in long contiguous runs, and add each channel's planes in image order, so that
 * the sums do not depend on the thread count. */
static void thread_channels(int c, int *c0, int *c1)
{
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    *c0 = (int)((long)c * t / n);
    *c1 = (int)((long)c * (t + 1) / n);
}

#ifdef __AVX512F__
#include <immintrin.h>

/* The low and high 8 floats of v in double. */
static inline __m512d low_pd(__m512 v)
{
    return _mm512_cvtps_pd(_mm512_castps512_ps256(v));
}
static inline __m512d high_pd(__m512 v)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

/* plane_sums runs 32 floats an iteration into four independent double accumulators per sum (of 8
 * lanes each): the one accumulator that `omp simd` makes waits on its add's latency every 4 or 8
 * values (1.3x slower here). The accumulators are added in a fixed order at the end. */
typedef struct PlaneAcc {
    __m512d a[4], b[4];
} PlaneAcc;

static inline __m512 load_part(const float *p, size_t i, size_t sp)
{
    const size_t n = sp - i;
    return n >= 16 ? _mm512_loadu_ps(p + i)
                   : _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p + i);
}

/* Folds two accumulators of 16 floats' worth (u's halves into a[k], a[k + 1] and u * v's into
 * b[k], b[k + 1]). */
static inline void acc_add(PlaneAcc *s, int k, __m512 u, __m512 v)
{
    const __m512d u0 = low_pd(u), u1 = high_pd(u);
    s->a[k] = _mm512_add_pd(s->a[k], u0);
    s->a[k + 1] = _mm512_add_pd(s->a[k + 1], u1);
    s->b[k] = _mm512_fmadd_pd(u0, low_pd(v), s->b[k]);
    s->b[k + 1] = _mm512_fmadd_pd(u1, high_pd(v), s->b[k + 1]);
}

static inline double lanes_sum(const __m512d *a)
{
    return _mm512_reduce_add_pd(
        _mm512_add_pd(_mm512_add_pd(a[0], a[1]), _mm512_add_pd(a[2], a[3])));
}

/* sums[0] += the sum of plane xs [sp] and sums[1] += its sum of squares, in double: the
 * cancellation in E[x^2] - mean^2 then stays far below float resolution for activations. */
static void plane_sums(const float *xs, size_t sp, double *sums)
{
    PlaneAcc s;
    for (int k = 0; k < 4; k++)
        s.a[k] = s.b[k] = _mm512_setzero_pd();
    size_t i = 0;
    for (; i + 32 <= sp; i += 32) {
        const __m512 u = _mm512_loadu_ps(xs + i), v = _mm512_loadu_ps(xs + i + 16);
        acc_add(&s, 0, u, u);
        acc_add(&s, 2, v, v);
    }
    for (; i < sp; i += 16) {
        const __m512 u = load_part(xs, i, sp);
        acc_add(&s, 0, u, u);
    }
    sums[0] += lanes_sum(s.a);
    sums[1] += lanes_sum(s.b);
}
#else
/* sums[0] += the sum of plane xs [sp] and sums[1] += its sum of squares, in double: the
 * cancellation in E[x^2] - mean^2 then stays far below float resolution for activations. */
static void plane_sums(const float *xs, size_t sp, double *sums)
{
    double sum = sums[0], sum_sq = sums[1];
#pragma omp simd reduction(+ : sum, sum_sq)
    for (size_t i = 0; i < sp; i++) {
        double v = xs[i];
        sum += v;
        sum_sq += v * v;
    }
    sums[0] = sum;
    sums[1] = sum_sq;
}
#endif

/* Inside a parallel region, with sync: once every thread's sums [2c + 1] are in, adds every
 * process's in place (on the master thread, as MPI's funneled threading needs), and the team
 * waits for it. */
static void sync_sums(const BnSync *sync, double *sums, int c)
{
    if (!sync)
        return;
#pragma omp barrier
#pragma omp master
    sync->sum(sync->ctx, sums, 2 * (size_t)c + 1);
#pragma omp barrier
}

double batchnorm_train_inv_std(double var, double n, float eps, int darknet)
{
    if (!darknet)
        return 1.0 / sqrt(var + (double)eps);
    const double unbiased = n > 1.0 ? var * n / (n - 1.0) : var;
    return 1.0 / (sqrt(unbiased) + 0.000001);
}

float batchnorm_xhat_gain(float inv_std, double n, int darknet)
{
    if (!darknet)
        return 1.0f;
    const double s = 1.0 / (double)inv_std, std = s - 0.000001;
    return n > 1.0 && std > 0.0 ? (float)(n * s / ((n - 1.0) * std)) : 0.0f;
}

/* Channel ch's inv_std (and act->mean) from the sums of n values, and its running statistics
 * moved; *m and *is: the mean and inv_std in float, as the normalisation uses them. */
static void channel_stats(float *inv_std, float *running_mean, float *running_var, int ch,
                          const double *sums, double n, float momentum, float eps, int darknet,
                          const BnAct *act, float *m, float *is)
{
    const double mean = sums[0] / n;
    double var = sums[1] / n - mean * mean;
    if (var < 0.0)
        var = 0.0;
    const double inv = batchnorm_train_inv_std(var, n, eps, darknet);
    inv_std[ch] = (float)inv;
    *m = (float)mean;
    *is = (float)inv;
    if (act && act->mean)
        act->mean[ch] = *m;
    if (!running_mean)
        return;
    const double unbiased = n > 1.0 ? var * n / (n - 1.0) : var;
    running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * (float)mean;
    running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * (float)unbiased;
}

/* Normalises the plane at base [sp] with mean m, inv_std is, scale g and shift beta. */
static void normalize_plane(const float *x, float *y, float *x_hat, size_t base, size_t sp, float m,
                            float is, float g, float beta, const BnAct *act)
{
    const float *xs = x + base;
    if (act && act->mean) {
        float *out = act->out + base;
        const float slope = act->slope;
#pragma omp simd
        for (size_t i = 0; i < sp; i++) {
            float h = (xs[i] - m) * is, v = h * g + beta;
            out[i] = v > 0 ? v : slope * v;
        }
        return;
    }
    float *xh = x_hat + base;
    if (act) {
        float *out = act->out + base;
        const float slope = act->slope;
#pragma omp simd
        for (size_t i = 0; i < sp; i++) {
            float h = (xs[i] - m) * is, v = h * g + beta;
            xh[i] = h;
            out[i] = v > 0 ? v : slope * v;
        }
        return;
    }
    float *ys = y + base;
#pragma omp simd
    for (size_t i = 0; i < sp; i++) {
        float h = (xs[i] - m) * is;
        xh[i] = h;
        ys[i] = h * g + beta;
    }
}

void batchnorm_forward_train(const float *x, float *y, float *x_hat, float *inv_std,
                             const float *scale, const float *bias, float *running_mean,
                             float *running_var, int batch, int c, int spatial, float momentum,
                             float eps, int darknet, const BnSync *sync, const BnAct *act)
{
    const size_t sp = (size_t)spatial;
    double local[sync ? 1 : 2 * c + 1];
    double *sums = sync ? sync->buf : local;
    sums[2 * c] = (double)batch * spatial;
#pragma omp parallel
    {
        int c0, c1;
        thread_channels(c, &c0, &c1);
        for (int ch = c0; ch < c1; ch++)
            sums[2 * ch] = sums[2 * ch + 1] = 0.0;
        for (int b = 0; b < batch; b++)
            for (int ch = c0; ch < c1; ch++)
                plane_sums(x + ((size_t)b * c + ch) * sp, sp, sums + 2 * ch);
        sync_sums(sync, sums, c);
        float m[c1 - c0 + 1], is[c1 - c0 + 1];
        for (int ch = c0; ch < c1; ch++)
            channel_stats(inv_std, running_mean, running_var, ch, sums + 2 * ch, sums[2 * c],
                          momentum, eps, darknet, act, &m[ch - c0], &is[ch - c0]);
        for (int b = 0; b < batch; b++)
            for (int ch = c0; ch < c1; ch++)
                normalize_plane(x, y, x_hat, ((size_t)b * c + ch) * sp, sp, m[ch - c0], is[ch - c0],
                                scale[ch], bias[ch], act);
    }
}

/* Inference mode's y = x * a + b of channel ch. */
static void eval_coefficients(const float *scale, const float *bias, const float *running_mean,
                              const float *running_var, int ch, float eps, int darknet, float *a,
                              float *b)
{
    const float std = darknet ? sqrtf(running_var[ch]) + 0.000001f : sqrtf(running_var[ch] + eps);
    *a = scale[ch] / std;
    *b = bias[ch] - running_mean[ch] * *a;
}

void batchnorm_forward_eval(const float *x, float *y, const float *scale, const float *bias,
                            const float *running_mean, const float *running_var, int batch, int c,
                            int spatial, float eps, int darknet)
{
    const size_t sp = (size_t)spatial;

#pragma omp parallel for schedule(static) if ((size_t)batch * c * sp >= 16384)
    for (int bc = 0; bc < batch * c; bc++) {
        const int ch = bc % c;
        float a, b;
        eval_coefficients(scale, bias, running_mean, running_var, ch, eps, darknet, &a, &b);
        const float *xs = x + (size_t)bc * sp;
        float *ys = y + (size_t)bc * sp;
#pragma omp simd
        for (size_t i = 0; i < sp; i++)
            ys[i] = xs[i] * a + b;
    }
}

void batchnorm_fold(const float *w, size_t per_channel, const float *scale, const float *bias,
                    const float *running_mean, const float *running_var, int c, float eps,
                    int darknet, float *w_out, float *b_out)
{
#pragma omp parallel for schedule(static) if ((size_t)c * per_channel >= 65536)
    for (int ch = 0; ch < c; ch++) {
        float a;
        eval_coefficients(scale, bias, running_mean, running_var, ch, eps, darknet, &a, &b_out[ch]);
        const float *restrict wc = w + (size_t)ch * per_channel;
        float *restrict oc = w_out + (size_t)ch * per_channel;
#pragma omp simd
        for (size_t i = 0; i < per_channel; i++)
            oc[i] = wc[i] * a;
    }
}

/* sums[0] += the sum of dy and sums[1] += that of dy * x_hat over the plane at base [sp] of
 * channel ch (dy through act first; x_hat: the forward's x with act->mean). */
static void grad_plane_sums(const float *dy, const float *x_hat, const float *inv_std,
                            const float *scale, size_t base, size_t sp, int ch, double *sums,
                            const BnAct *act)
{
    double sum_dy = sums[0], sum_dy_xhat = sums[1];
    const float *d = dy + base, *xh = x_hat + base;
    if (act) {
        /* x_hat, or remade from the forward's x: exactly x_hat with m 0 and is 1 */
        const float slope = act->slope, g = scale[ch], beta = act->bias[ch];
        const float m = act->mean ? act->mean[ch] : 0.0f, is = act->mean ? inv_std[ch] : 1.0f;
#pragma omp simd reduction(+ : sum_dy, sum_dy_xhat)
        for (size_t i = 0; i < sp; i++) {
            const float h = (xh[i] - m) * is;
            const float di = d[i] * (h * g + beta > 0 ? 1.0f : slope);
            sum_dy += di;
            sum_dy_xhat += (double)di * h;
        }
    } else {
#pragma omp simd reduction(+ : sum_dy, sum_dy_xhat)
        for (size_t i = 0; i < sp; i++) {
            sum_dy += d[i];
            sum_dy_xhat += (double)d[i] * xh[i];
        }
    }
    sums[0] = sum_dy;
    sums[1] = sum_dy_xhat;
}

/* dx of the plane at base [sp] of channel ch from the gradient sums of n values:
 * dx = scale*inv_std * (dy - mean(dy) - x_hat * mean(dy*x_hat) * gain), gain
 * batchnorm_xhat_gain's. */
static void plane_dx(const float *dy, const float *x_hat, const float *inv_std, const float *scale,
                     float *dx, size_t base, size_t sp, int ch, const double *sums, double n,
                     int darknet, const BnAct *act)
{
    const float k = scale[ch] * inv_std[ch];
    const float mean_dy = (float)(sums[0] / n),
                mean_dy_xhat = (float)(sums[1] / n) * batchnorm_xhat_gain(inv_std[ch], n, darknet);
    const float *d = dy + base, *xh = x_hat + base;
    float *o = dx + base;
    if (act) {
        /* as grad_plane_sums's */
        const float slope = act->slope, g = scale[ch], beta = act->bias[ch];
        const float m = act->mean ? act->mean[ch] : 0.0f, is = act->mean ? inv_std[ch] : 1.0f;
#pragma omp simd
        for (size_t i = 0; i < sp; i++) {
            const float h = (xh[i] - m) * is;
            o[i] = k * (d[i] * (h * g + beta > 0 ? 1.0f : slope) - mean_dy - h * mean_dy_xhat);
        }
        return;
    }
#pragma omp simd
    for (size_t i = 0; i < sp; i++)
        o[i] = k * (d[i] - mean_dy - xh[i] * mean_dy_xhat);
}

void batchnorm_backward(const float *dy, const float *x_hat, const float *inv_std,
                        const float *scale, float *dscale, float *dbias, float *dx, int batch,
                        int c, int spatial, int darknet, const BnSync *sync, const BnAct *act)
{
    const size_t sp = (size_t)spatial;
    double local[sync ? 1 : 2 * c + 1];
    double *sums = sync ? sync->buf : local;
    sums[2 * c] = (double)batch * spatial;
    /* The parameter gradients take this process's sums (the gradient allreduce adds the
     * others'); dx needs the sums over every process's samples. */
#pragma omp parallel
    {
        int c0, c1;
        thread_channels(c, &c0, &c1);
        for (int ch = c0; ch < c1; ch++)
            sums[2 * ch] = sums[2 * ch + 1] = 0.0;
        for (int b = 0; b < batch; b++)
            for (int ch = c0; ch < c1; ch++)
                grad_plane_sums(dy, x_hat, inv_std, scale, ((size_t)b * c + ch) * sp, sp, ch,
                                sums + 2 * ch, act);
        for (int ch = c0; ch < c1; ch++) {
            dbias[ch] += (float)sums[2 * ch];
            dscale[ch] += (float)sums[2 * ch + 1];
        }
        sync_sums(sync, sums, c);
        for (int b = 0; b < batch; b++)
            for (int ch = c0; ch < c1; ch++)
                plane_dx(dy, x_hat, inv_std, scale, dx, ((size_t)b * c + ch) * sp, sp, ch,
                         sums + 2 * ch, sums[2 * c], darknet, act);
    }
}
