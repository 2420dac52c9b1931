/* backend/cpu/bn_math.h with a fused activation (BnAct) against the unfused reference: the training
 * forward followed by activation_forward, and activation_backward followed by the backward, for
 * leaky and relu, with and without a BnSync, within 1e-5 relative (max abs difference / max abs
 * value) on every output: the activated values, x_hat, inv_std, the running statistics, dx and
 * the parameter gradients; likewise the fused passes that keep x instead of x_hat (BnAct.mean,
 * the backward remaking x_hat from x); the running statistics against plain double sums. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/activation.h"
#include "backend/cpu/bn_math.h"
#include "check.h"

#define REL_TOL 1e-5

/* A sync that leaves the sums as they are: one process. */
static void sum_none(void *ctx, double *buf, size_t n)
{
    (void)ctx, (void)buf, (void)n;
}

/* The buffers of one side: [0] the reference, [1] fused, [2] fused keeping x instead of x_hat
 * (BnAct.mean). */
typedef struct Side {
    float *y, *x_hat, *inv_std, *mean, *var, *dscale, *dbias, *delta;
} Side;

/* The running statistics after one step from zero with momentum 0.1 against the mean and
 * unbiased variance summed plainly in double, within 1e-6 relative: the kernels' own sums (vector
 * lanes, accumulators, tails) checked against an independent order. */
static void check_running_stats(const float *x, int batch, int c, int spatial, const float *mean,
                                const float *var)
{
    float *want_mean = malloc(c * sizeof *want_mean), *want_var = malloc(c * sizeof *want_var);
    const double n = (double)batch * spatial;
    for (int ch = 0; ch < c; ch++) {
        double sum = 0.0, sq = 0.0;
        for (int b = 0; b < batch; b++)
            for (int i = 0; i < spatial; i++) {
                const double v = x[((size_t)b * c + ch) * spatial + i];
                sum += v;
                sq += v * v;
            }
        const double m = sum / n, v = sq / n - m * m;
        want_mean[ch] = 0.1f * (float)m;
        want_var[ch] = 0.1f * (float)(n > 1.0 ? v * n / (n - 1.0) : v);
    }
    CHECK(check_rel_error(mean, want_mean, c) <= 1e-6);
    CHECK(check_rel_error(var, want_var, c) <= 1e-6);
    free(want_mean), free(want_var);
}

static void check_case(int batch, int c, int spatial, ActivationKind kind, int sync)
{
    const size_t n = (size_t)batch * c * spatial;
    float *x = malloc(n * sizeof *x), *dy = malloc(n * sizeof *dy);
    float *scale = malloc(c * sizeof *scale), *bias = malloc(c * sizeof *bias);
    double *sums = malloc((2 * (size_t)c + 1) * sizeof *sums);
    unsigned state = 7u + (unsigned)(batch * 100 + c * 10 + kind);
    check_fill_uniform(x, n, -0.7f, &state);
    check_fill_uniform(dy, n, -1.0f, &state);
    check_fill_uniform(scale, c, 0.0f, &state);
    check_fill_uniform(bias, c, -1.0f, &state);
    Side s[3];
    for (int k = 0; k < 3; k++) {
        s[k].y = malloc(n * sizeof(float));
        s[k].x_hat = malloc(n * sizeof(float));
        s[k].delta = malloc(n * sizeof(float));
        s[k].inv_std = calloc(c, sizeof(float));
        s[k].mean = calloc(c, sizeof(float));
        s[k].var = calloc(c, sizeof(float));
        s[k].dscale = calloc(c, sizeof(float));
        s[k].dbias = calloc(c, sizeof(float));
        memcpy(s[k].delta, dy, n * sizeof *dy);
    }
    const BnSync bs = {sum_none, NULL, sums}, *bsp = sync ? &bs : NULL;
    const float slope = kind == CDL_ACT_LEAKY ? 0.1f : 0.0f;
    float *batch_mean = malloc(c * sizeof *batch_mean);
    const BnAct act = {s[1].y, slope, bias, NULL}, kept = {s[2].y, slope, bias, batch_mean};

    float *pre = malloc(n * sizeof *pre);
    batchnorm_forward_train(x, pre, s[0].x_hat, s[0].inv_std, scale, bias, s[0].mean, s[0].var,
                            batch, c, spatial, 0.1f, 1e-5f, 0, bsp, NULL);
    activation_forward(pre, s[0].y, n, kind);
    batchnorm_forward_train(x, NULL, s[1].x_hat, s[1].inv_std, scale, bias, s[1].mean, s[1].var,
                            batch, c, spatial, 0.1f, 1e-5f, 0, bsp, &act);
    activation_backward(pre, s[0].y, s[0].delta, n, kind);
    batchnorm_backward(s[0].delta, s[0].x_hat, s[0].inv_std, scale, s[0].dscale, s[0].dbias,
                       s[0].delta, batch, c, spatial, 0, bsp, NULL);
    batchnorm_backward(s[1].delta, s[1].x_hat, s[1].inv_std, scale, s[1].dscale, s[1].dbias,
                       s[1].delta, batch, c, spatial, 0, bsp, &act);
    batchnorm_forward_train(x, NULL, NULL, s[2].inv_std, scale, bias, s[2].mean, s[2].var, batch, c,
                            spatial, 0.1f, 1e-5f, 0, bsp, &kept);
    batchnorm_backward(s[2].delta, x, s[2].inv_std, scale, s[2].dscale, s[2].dbias, s[2].delta,
                       batch, c, spatial, 0, bsp, &kept);

    CHECK(check_rel_error(s[1].x_hat, s[0].x_hat, n) <= REL_TOL);
    check_running_stats(x, batch, c, spatial, s[0].mean, s[0].var);
    for (int k = 1; k < 3; k++) {
        CHECK(check_rel_error(s[k].y, s[0].y, n) <= REL_TOL);
        CHECK(check_rel_error(s[k].inv_std, s[0].inv_std, c) <= REL_TOL);
        CHECK(check_rel_error(s[k].mean, s[0].mean, c) <= REL_TOL);
        CHECK(check_rel_error(s[k].var, s[0].var, c) <= REL_TOL);
        CHECK(check_rel_error(s[k].delta, s[0].delta, n) <= REL_TOL);
        CHECK(check_rel_error(s[k].dscale, s[0].dscale, c) <= REL_TOL);
        CHECK(check_rel_error(s[k].dbias, s[0].dbias, c) <= REL_TOL);
    }

    for (int k = 0; k < 3; k++) {
        free(s[k].y), free(s[k].x_hat), free(s[k].delta), free(s[k].inv_std);
        free(s[k].mean), free(s[k].var), free(s[k].dscale), free(s[k].dbias);
    }
    free(x), free(dy), free(scale), free(bias), free(sums), free(pre), free(batch_mean);
}

int main(void)
{
    check_case(4, 32, 28 * 28, CDL_ACT_LEAKY, 0); /* fashion's first layer, a smaller batch */
    check_case(3, 5, 7, CDL_ACT_LEAKY, 1);
    check_case(2, 64, 49, CDL_ACT_RELU, 0);
    check_case(5, 3, 1, CDL_ACT_RELU, 1);
    check_case(2, 4, 32 * 32 + 47, CDL_ACT_LEAKY, 0); /* whole iterations, a vector and a part */
    return check_report("test_bn_act");
}
