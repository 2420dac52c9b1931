/* The per-channel stage that follows a convolution or connected product: a bias, or (with
 * batch_normalize=1) batch normalisation whose shift is that bias. It is also the whole
 * [batchnorm] layer. Tensors are [batch][channels][spatial]. Its parameters and ONNX form here;
 * its CPU kernels in backend/cpu/bias_norm.h. */
#ifndef CDL_BIAS_NORM_H
#define CDL_BIAS_NORM_H

#include "core/layer.h"
#include "core/net.h"
#include "core/onnx_graph.h"

typedef struct BiasNorm {
    int batch_normalize;
    int has_bias;          /* 0: neither batch norm nor a bias (a bias-free convolution): the
                              stage passes its input on and declares no parameters */
    int first_param;       /* index of "biases" in l->params; with batch norm "scales",
                              "rolling_mean" and "rolling_variance" follow it */
    int channels, spatial; /* per sample */
    float *x_hat;          /* [batch][channels][spatial], batch norm only (net's slab); on
                              cuDNN the stage's input x itself, in its type (cuda/bn_cudnn.h) */
    float *inv_std;        /* [channels], batch norm only (net's slab) */
    double *sync_sums;     /* [2 * channels + 1], batch norm only: sync_bn's BnSync.buf */
    float *mean;           /* [channels], batch norm only: the batch mean, with keeps_input */
    int keeps_input;       /* this step's fused forward normalised x_hat's own floats (the
                              product's output, bias_norm_product_output) and kept them there */
    /* The GPU's cuDNN state of the batch norm (cuda/bn_cudnn.h: its descriptors), made by the
     * GPU's resize of a family that runs it on cuDNN, freed by its release; NULL before and
     * elsewhere (the stage then runs on the backend's own kernels). */
    struct BnCudnn *cudnn;
} BiasNorm;

/* Offsets from BiasNorm.first_param of the stage's parameters (the last three with batch norm). */
enum { BN_BIASES, BN_SCALES, BN_ROLLING_MEAN, BN_ROLLING_VARIANCE };

static inline Param *bias_norm_param(const BiasNorm *bn, Layer *l, int which)
{
    return &l->params[bn->first_param + which];
}

/* The biases (the batch norm's shift with batch norm), NULL in a stage without them. */
static inline Param *bias_norm_biases(const BiasNorm *bn, Layer *l)
{
    return bn->has_bias ? bias_norm_param(bn, l, BN_BIASES) : NULL;
}

/* Declares the parameters on l: with batch norm the biases (its shift), scales and the running
 * statistics; without, the biases when bias is 1, else none. */
void bias_norm_declare(BiasNorm *bn, Layer *l, int batch_normalize, int bias, int channels,
                       int spatial);
/* biases 0, scales 1, running mean 0, running variance 1. */
void bias_norm_init(const BiasNorm *bn, Layer *l);
/* ONNX: without batch norm, adds the biases [channels] as an initializer for the caller's
 * Conv B or Gemm C input (name receives it); with batch norm, y = BatchNormalization(x) in
 * inference mode (running statistics, epsilon bn_eps; 0 with bn_darknet). */
void bias_norm_onnx_biases(const BiasNorm *bn, const Layer *l, OnnxGraph *g,
                           char name[ONNX_NAME_MAX]);
void bias_norm_onnx_batchnorm(const BiasNorm *bn, const Layer *l, const Net *net, OnnxGraph *g,
                              const char *x, const char *y);

#endif
