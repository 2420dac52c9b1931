/* Batch normalisation kernels on nChw8c activations (nChw16c with AVX-512: DNNL_LANES): one
 * OpenMP task per block of LANES channels, the lanes side by side, sums in double in a fixed
 * order. */
#include "backend/cpu/batchnorm_blocked.h"

#include <math.h>
#include <stddef.h>

#include "backend/cpu/dnnl_conv.h"

enum { LANES = DNNL_LANES };

/* Element i of sample b in block k's lane run: x + block_at(...) [LANES]. */
static size_t block_at(int b, int blocks, int k, size_t sp, size_t i)
{
    return (((size_t)b * blocks + k) * sp + i) * LANES;
}

/* A fused activation's terms for block k's lanes (BnAct): the scale, shift and slope that remake
 * its derivative d, and the mean and inv_std that remake x_hat from what the forward kept (0 and
 * 1 where that is x_hat itself); without one, the terms that make d 1 and x_hat as it is, exactly
 * (x - 0) * 1, so that the same loops serve both. */
typedef struct Lanes {
    float g[LANES], beta[LANES], m[LANES], is[LANES], slope[LANES];
} Lanes;

/* act's Lanes for block k (act NULL: none). */
static void act_lanes(const BnAct *act, const float *scale, const float *inv_std, int k, Lanes *a)
{
    for (int j = 0; j < LANES; j++) {
        const int ch = k * LANES + j;
        a->g[j] = act ? scale[ch] : 0.0f;
        a->beta[j] = act ? act->bias[ch] : 1.0f;
        a->m[j] = act && act->mean ? act->mean[ch] : 0.0f;
        a->is[j] = act && act->mean ? inv_std[ch] : 1.0f;
        a->slope[j] = act ? act->slope : 1.0f;
    }
}

/* Block k's LANES channels' sums of p and of p * q (q NULL: p * p) over the batch; with act's
 * lanes, of dy = p through the activation and of dy * x_hat, x_hat remade from q (as
 * backend/cpu/bn_math.c's). */
static void block_sums(const float *p, const float *q, int batch, int blocks, size_t sp, int k,
                       double *s0, double *s1, const Lanes *act)
{
    double a[LANES] = {0}, c[LANES] = {0};
    float g[LANES], beta[LANES], m[LANES], is[LANES], slope[LANES];
    for (int j = 0; j < LANES; j++)
        g[j] = act->g[j], beta[j] = act->beta[j], m[j] = act->m[j], is[j] = act->is[j],
        slope[j] = act->slope[j];
    for (int b = 0; b < batch; b++)
        for (size_t i = 0; i < sp; i++) {
            const float *v = p + block_at(b, blocks, k, sp, i);
            const float *w = q ? q + block_at(b, blocks, k, sp, i) : v;
#pragma omp simd
            for (int j = 0; j < LANES; j++) {
                const float h = (w[j] - m[j]) * is[j];
                const float d = v[j] * (h * g[j] + beta[j] > 0 ? 1.0f : slope[j]);
                a[j] += d;
                c[j] += (double)d * h;
            }
        }
    for (int j = 0; j < LANES; j++) {
        s0[j] = a[j];
        s1[j] = c[j];
    }
}

/* Block k's channel sums s0, s1 [LANES] into the sums [c][2] BnSync adds over processes. */
static void store_sums(double *sums, int k, const double *s0, const double *s1)
{
    for (int j = 0; j < LANES; j++) {
        sums[2 * (k * LANES + j)] = s0[j];
        sums[2 * (k * LANES + j) + 1] = s1[j];
    }
}

/* Block k's channel sums s0, s1 [LANES] out of the synced sums [c][2] (BnSync's order). */
static void synced_sums(const double *sums, int k, double *s0, double *s1)
{
    for (int j = 0; j < LANES; j++) {
        s0[j] = sums[2 * (k * LANES + j)];
        s1[j] = sums[2 * (k * LANES + j) + 1];
    }
}

/* Normalises block k from the sums (s0 sums, s1 sums of squares) of n values per channel; with
 * act, act->out = f(y) instead of y, x_hat not written where act->mean takes the means. */
static void normalize_block(const float *x, float *y, float *x_hat, float *inv_std,
                            const float *scale, const float *bias, float *running_mean,
                            float *running_var, int batch, int blocks, size_t sp, int k,
                            const double *s0, const double *s1, double n, float momentum, float eps,
                            int darknet, const BnAct *act)
{
    float m[LANES], is[LANES], g[LANES], beta[LANES];
    for (int j = 0; j < LANES; j++) {
        const int ch = k * LANES + j;
        const double mean = s0[j] / n;
        double var = s1[j] / n - mean * mean;
        if (var < 0.0)
            var = 0.0;
        const double inv = batchnorm_train_inv_std(var, n, eps, darknet);
        inv_std[ch] = is[j] = (float)inv;
        m[j] = (float)mean;
        g[j] = scale[ch];
        beta[j] = bias[ch];
        if (act && act->mean)
            act->mean[ch] = m[j];
        if (running_mean) {
            const double unbiased = n > 1.0 ? var * n / (n - 1.0) : var;
            running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * (float)mean;
            running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * (float)unbiased;
        }
    }
    const int keep_hat = !act || !act->mean;
    const float slope = act ? act->slope : 0.0f;
    float *out = act ? act->out : y;
    for (int b = 0; b < batch; b++)
        for (size_t i = 0; i < sp; i++) {
            const size_t at = block_at(b, blocks, k, sp, i);
#pragma omp simd
            for (int j = 0; j < LANES; j++) {
                const float h = (x[at + j] - m[j]) * is[j], v = h * g[j] + beta[j];
                if (keep_hat)
                    x_hat[at + j] = h;
                out[at + j] = !act || v > 0 ? v : slope * v;
            }
        }
}

void batchnorm_blocked_forward_train(const float *x, float *y, float *x_hat, float *inv_std,
                                     const float *scale, const float *bias, float *running_mean,
                                     float *running_var, int batch, int c, int spatial,
                                     float momentum, float eps, int darknet, const BnSync *sync,
                                     const BnAct *act)
{
    const int blocks = c / LANES;
    const size_t sp = (size_t)spatial;
    const double n = (double)batch * spatial;
    if (!sync) {
#pragma omp parallel for schedule(static)
        for (int k = 0; k < blocks; k++) {
            double s0[LANES], s1[LANES];
            Lanes none;
            act_lanes(NULL, NULL, NULL, k, &none);
            block_sums(x, NULL, batch, blocks, sp, k, s0, s1, &none);
            normalize_block(x, y, x_hat, inv_std, scale, bias, running_mean, running_var, batch,
                            blocks, sp, k, s0, s1, n, momentum, eps, darknet, act);
        }
        return;
    }
    /* sync->buf as batchnorm_forward_train's: channel ch's sum, sum of squares at 2ch, 2ch+1 */
    double *sums = sync->buf;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < blocks; k++) {
        double s0[LANES], s1[LANES];
        Lanes none;
        act_lanes(NULL, NULL, NULL, k, &none);
        block_sums(x, NULL, batch, blocks, sp, k, s0, s1, &none);
        store_sums(sums, k, s0, s1);
    }
    sums[2 * c] = n;
    sync->sum(sync->ctx, sums, 2 * (size_t)c + 1);
#pragma omp parallel for schedule(static)
    for (int k = 0; k < blocks; k++) {
        double s0[LANES], s1[LANES];
        synced_sums(sums, k, s0, s1);
        normalize_block(x, y, x_hat, inv_std, scale, bias, running_mean, running_var, batch, blocks,
                        sp, k, s0, s1, sums[2 * c], momentum, eps, darknet, act);
    }
}

void batchnorm_blocked_forward_eval(const float *x, float *y, const float *scale, const float *bias,
                                    const float *running_mean, const float *running_var, int batch,
                                    int c, int spatial, float eps, int darknet)
{
    const int blocks = c / LANES;
    const size_t sp = (size_t)spatial;
#pragma omp parallel for schedule(static) if ((size_t)batch * c * sp >= 16384)
    for (int bk = 0; bk < batch * blocks; bk++) {
        float a[LANES], b[LANES];
        for (int j = 0; j < LANES; j++) {
            const int ch = bk % blocks * LANES + j;
            const float std =
                darknet ? sqrtf(running_var[ch]) + 0.000001f : sqrtf(running_var[ch] + eps);
            a[j] = scale[ch] / std;
            b[j] = bias[ch] - running_mean[ch] * a[j];
        }
        const float *xs = x + (size_t)bk * sp * LANES;
        float *ys = y + (size_t)bk * sp * LANES;
        for (size_t i = 0; i < sp; i++)
#pragma omp simd
            for (int j = 0; j < LANES; j++)
                ys[i * LANES + j] = xs[i * LANES + j] * a[j] + b[j];
    }
}

/* dx of block k from its gradient sums (s0 of dy, s1 of dy * x_hat) of n values per channel;
 * dy through act's lanes and x_hat remade, as block_sums takes them. */
static void block_dx(const float *dy, const float *x_hat, const float *inv_std, const float *scale,
                     float *dx, int batch, int blocks, size_t sp, int k, const double *s0,
                     const double *s1, double n, int darknet, const Lanes *act)
{
    float kk[LANES], mdy[LANES], mdx[LANES];
    float g[LANES], beta[LANES], m[LANES], is[LANES], slope[LANES];
    for (int j = 0; j < LANES; j++) {
        const int ch = k * LANES + j;
        kk[j] = scale[ch] * inv_std[ch];
        mdy[j] = (float)(s0[j] / n);
        mdx[j] = (float)(s1[j] / n) * batchnorm_xhat_gain(inv_std[ch], n, darknet);
        g[j] = act->g[j], beta[j] = act->beta[j], m[j] = act->m[j], is[j] = act->is[j];
        slope[j] = act->slope[j];
    }
    for (int b = 0; b < batch; b++)
        for (size_t i = 0; i < sp; i++) {
            const size_t at = block_at(b, blocks, k, sp, i);
#pragma omp simd
            for (int j = 0; j < LANES; j++) {
                const float h = (x_hat[at + j] - m[j]) * is[j];
                const float d = dy[at + j] * (h * g[j] + beta[j] > 0 ? 1.0f : slope[j]);
                dx[at + j] = kk[j] * (d - mdy[j] - h * mdx[j]);
            }
        }
}

void batchnorm_blocked_backward(const float *dy, const float *x_hat, const float *inv_std,
                                const float *scale, float *dscale, float *dbias, float *dx,
                                int batch, int c, int spatial, int darknet, const BnSync *sync,
                                const BnAct *act)
{
    const int blocks = c / LANES;
    const size_t sp = (size_t)spatial;
    const double n = (double)batch * spatial;
    double *sums = sync ? sync->buf : NULL;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < blocks; k++) {
        double s0[LANES], s1[LANES];
        Lanes lanes;
        act_lanes(act, scale, inv_std, k, &lanes);
        block_sums(dy, x_hat, batch, blocks, sp, k, s0, s1, &lanes);
        for (int j = 0; j < LANES; j++) {
            dbias[k * LANES + j] += (float)s0[j];
            dscale[k * LANES + j] += (float)s1[j];
        }
        if (!sync) {
            block_dx(dy, x_hat, inv_std, scale, dx, batch, blocks, sp, k, s0, s1, n, darknet,
                     &lanes);
            continue;
        }
        store_sums(sums, k, s0, s1);
    }
    if (!sync)
        return;
    /* dx needs the sums over every process's samples (the parameters take this one's). */
    sums[2 * c] = n;
    sync->sum(sync->ctx, sums, 2 * (size_t)c + 1);
#pragma omp parallel for schedule(static)
    for (int k = 0; k < blocks; k++) {
        double s0[LANES], s1[LANES];
        Lanes lanes;
        synced_sums(sums, k, s0, s1);
        act_lanes(act, scale, inv_std, k, &lanes);
        block_dx(dy, x_hat, inv_std, scale, dx, batch, blocks, sp, k, s0, s1, sums[2 * c], darknet,
                 &lanes);
    }
}
