/* Batch normalisation kernels: one OpenMP task per channel, sums in double. Each channel's
 * reductions run in a fixed order, so results do not depend on the thread count. */
#include "ops/batchnorm.h"

#include <math.h>
#include <stddef.h>

void batchnorm_forward_train(const float *x, float *y, float *x_hat, float *inv_std,
                             const float *scale, const float *bias, float *running_mean,
                             float *running_var, int batch, int c, int spatial, float momentum,
                             float eps)
{
    const double n = (double)batch * spatial;
    const size_t sp = (size_t)spatial;

#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < c; ch++) {
        /* One pass of sum and sum of squares: in double the cancellation in
         * E[x^2] - mean^2 stays far below float resolution for activations. */
        double sum = 0.0, sum_sq = 0.0;
        for (int b = 0; b < batch; b++) {
            const float *xs = x + ((size_t)b * c + ch) * sp;
#pragma omp simd reduction(+ : sum, sum_sq)
            for (size_t i = 0; i < sp; i++) {
                double v = xs[i];
                sum += v;
                sum_sq += v * v;
            }
        }
        const double mean = sum / n;
        double var = sum_sq / n - mean * mean;
        if (var < 0.0)
            var = 0.0;
        const double inv = 1.0 / sqrt(var + (double)eps);
        inv_std[ch] = (float)inv;

        const float m = (float)mean, is = (float)inv, g = scale[ch], beta = bias[ch];
        for (int b = 0; b < batch; b++) {
            const size_t base = ((size_t)b * c + ch) * sp;
            const float *xs = x + base;
            float *xh = x_hat + base, *ys = y + base;
#pragma omp simd
            for (size_t i = 0; i < sp; i++) {
                float h = (xs[i] - m) * is;
                xh[i] = h;
                ys[i] = h * g + beta;
            }
        }

        const double unbiased = n > 1.0 ? var * n / (n - 1.0) : var;
        running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * (float)mean;
        running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * (float)unbiased;
    }
}

void batchnorm_forward_eval(const float *x, float *y, const float *scale, const float *bias,
                            const float *running_mean, const float *running_var, int batch, int c,
                            int spatial, float eps, int darknet)
{
    const size_t sp = (size_t)spatial;

#pragma omp parallel for schedule(static) if ((size_t)batch * c * sp >= 16384)
    for (int bc = 0; bc < batch * c; bc++) {
        const int ch = bc % c;
        const float std =
            darknet ? sqrtf(running_var[ch]) + 0.000001f : sqrtf(running_var[ch] + eps);
        const float a = scale[ch] / std;
        const float b = bias[ch] - running_mean[ch] * a;
        const float *xs = x + (size_t)bc * sp;
        float *ys = y + (size_t)bc * sp;
#pragma omp simd
        for (size_t i = 0; i < sp; i++)
            ys[i] = xs[i] * a + b;
    }
}

void batchnorm_backward(const float *dy, const float *x_hat, const float *inv_std,
                        const float *scale, float *dscale, float *dbias, float *dx, int batch,
                        int c, int spatial)
{
    const double n = (double)batch * spatial;
    const size_t sp = (size_t)spatial;

#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < c; ch++) {
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int b = 0; b < batch; b++) {
            const size_t base = ((size_t)b * c + ch) * sp;
            const float *d = dy + base, *xh = x_hat + base;
#pragma omp simd reduction(+ : sum_dy, sum_dy_xhat)
            for (size_t i = 0; i < sp; i++) {
                sum_dy += d[i];
                sum_dy_xhat += (double)d[i] * xh[i];
            }
        }
        dbias[ch] += (float)sum_dy;
        dscale[ch] += (float)sum_dy_xhat;

        /* dx = scale*inv_std * (dy - mean(dy) - x_hat * mean(dy*x_hat)) */
        const float k = scale[ch] * inv_std[ch];
        const float mean_dy = (float)(sum_dy / n), mean_dy_xhat = (float)(sum_dy_xhat / n);
        for (int b = 0; b < batch; b++) {
            const size_t base = ((size_t)b * c + ch) * sp;
            const float *d = dy + base, *xh = x_hat + base;
            float *o = dx + base;
#pragma omp simd
            for (size_t i = 0; i < sp; i++)
                o[i] = k * (d[i] - mean_dy - xh[i] * mean_dy_xhat);
        }
    }
}
