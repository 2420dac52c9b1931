/* Per-channel batch normalisation over [batch][c][spatial] with PyTorch's semantics:
 * y = (x - mean) / sqrt(var + eps) * scale + bias, normalising with the biased batch
 * variance and tracking the unbiased one in the running statistics. */
#ifndef CDL_BATCHNORM_H
#define CDL_BATCHNORM_H

/* Training mode. Normalises with the batch statistics, saves x_hat [batch][c][spatial]
 * and inv_std [c] = 1/sqrt(var + eps) for the backward pass, and moves the running
 * statistics: mean = (1-momentum)*mean + momentum*batch_mean, likewise var with the
 * unbiased batch variance. y may equal x. */
void batchnorm_forward_train(const float *x, float *y, float *x_hat, float *inv_std,
                             const float *scale, const float *bias, float *running_mean,
                             float *running_var, int batch, int c, int spatial, float momentum,
                             float eps);

/* Inference mode: normalises with the running statistics, dividing by sqrt(var + eps), or with
 * darknet set by darknet's sqrt(var) + 1e-6 (eps unused). y may equal x. */
void batchnorm_forward_eval(const float *x, float *y, const float *scale, const float *bias,
                            const float *running_mean, const float *running_var, int batch, int c,
                            int spatial, float eps, int darknet);

/* Backward of batchnorm_forward_train given dy = dL/dy: ADDS dL/dscale and dL/dbias into
 * dscale and dbias [c], and WRITES dL/dx into dx. dx may equal dy. */
void batchnorm_backward(const float *dy, const float *x_hat, const float *inv_std,
                        const float *scale, float *dscale, float *dbias, float *dx, int batch,
                        int c, int spatial);

#endif
