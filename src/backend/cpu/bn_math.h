/* Per-channel batch normalisation over [batch][c][spatial] with PyTorch's semantics:
 * y = (x - mean) / sqrt(var + eps) * scale + bias, normalising with the biased batch
 * variance and tracking the unbiased one in the running statistics; or, where `darknet` is set,
 * with pjreddie's darknet's: y = (x - mean) / (sqrt(var) + 1e-6) * scale + bias with the
 * unbiased batch variance var (src/batchnorm_layer.c, src/blas.c normalize_cpu). */
#ifndef CDL_BATCHNORM_H
#define CDL_BATCHNORM_H

#include <stddef.h>

/* Batch statistics over the samples of every process of a data-parallel run (sync_bn): the
 * kernels put their per-channel sums in buf [2c + 1] (then the local count) and call sum, which
 * adds every process's buf in place. NULL instead of a BnSync: this process's batch alone. */
typedef struct BnSync {
    void (*sum)(void *ctx, double *buf, size_t n);
    void *ctx;
    double *buf;
} BnSync;

/* A leaky or relu activation fused into the batch norm's passes: out = y > 0 ? y : slope * y
 * (slope 0.1 for leaky, 0 for relu, so out > 0 exactly where y > 0). bias: the batch norm's
 * shift [c], the forward's bias; the backward takes the derivative's side from y = x_hat * scale
 * + bias, the forward's own float expression, instead of reading out. NULL instead of a BnAct:
 * none. */
typedef struct BnAct {
    float *out;
    float slope;
    const float *bias;
    /* NULL, or x_hat is not stored: the forward saves the batch mean [c] here (x_hat unused),
     * the caller keeps x, and the backward takes that x as its x_hat argument and remakes
     * x_hat = (x - mean) * inv_std from it, as the forward computed it. */
    float *mean;
} BnAct;

/* Training mode. Normalises with the batch statistics, saves x_hat [batch][c][spatial]
 * and inv_std [c] = 1/sqrt(var + eps) (darknet: 1/(sqrt(unbiased var) + 1e-6), eps unused) for
 * the backward pass, and moves the running
 * statistics: mean = (1-momentum)*mean + momentum*batch_mean, likewise var with the
 * unbiased batch variance (running_mean and running_var NULL: they are left alone, as in a
 * replayed forward). y may equal x. sync: see BnSync. With act, writes act->out = f(y) in the
 * same pass instead of y (y unused; act->out may equal x). */
void batchnorm_forward_train(const float *x, float *y, float *x_hat, float *inv_std,
                             const float *scale, const float *bias, float *running_mean,
                             float *running_var, int batch, int c, int spatial, float momentum,
                             float eps, int darknet, const BnSync *sync, const BnAct *act);

/* Inference mode: normalises with the running statistics, dividing by sqrt(var + eps), or with
 * darknet set by darknet's sqrt(var) + 1e-6 (eps unused). y may equal x. */
void batchnorm_forward_eval(const float *x, float *y, const float *scale, const float *bias,
                            const float *running_mean, const float *running_var, int batch, int c,
                            int spatial, float eps, int darknet);

/* Inference mode folded into the linear map before it (a convolution's or connected layer's
 * weights w [c][per_channel], without a bias of its own): w_out [c][per_channel] = w * a and
 * b_out [c] = b, where batchnorm_forward_eval's y = x * a + b, so that the map with w_out and
 * bias b_out gives the normalised output (within rounding). */
void batchnorm_fold(const float *w, size_t per_channel, const float *scale, const float *bias,
                    const float *running_mean, const float *running_var, int c, float eps,
                    int darknet, float *w_out, float *b_out);

/* The inv_std that batchnorm_forward_train keeps for a channel whose n values have the biased
 * variance var. */
double batchnorm_train_inv_std(double var, double n, float eps, int darknet);

/* The factor on x_hat * mean(dy * x_hat) in the backward's dx (bn_math.c's plane_dx) of a
 * channel normalised over n values with inv_std: 1 for PyTorch's formula; darknet's divides by
 * sqrt(var) + 1e-6 of the unbiased var, whose derivative takes n s / ((n - 1) sqrt(var)), s =
 * 1/inv_std (0 where var is 0: x_hat is 0 there). */
float batchnorm_xhat_gain(float inv_std, double n, int darknet);

/* Backward of batchnorm_forward_train given dy = dL/dy: ADDS dL/dscale and dL/dbias into
 * dscale and dbias [c] (this process's share under sync), and WRITES dL/dx into dx. dx may
 * equal dy. sync: the statistics forward used. With act, dy is the gradient of act->out (the
 * forward's), taken back through the activation on the way: dy * (y > 0 ? 1 : slope). */
void batchnorm_backward(const float *dy, const float *x_hat, const float *inv_std,
                        const float *scale, float *dscale, float *dbias, float *dx, int batch,
                        int c, int spatial, int darknet, const BnSync *sync, const BnAct *act);

#endif
