/* The bias or batch-norm stage shared by [convolutional], [connected] and [batchnorm]: its
 * parameters and ONNX form (backend/cpu/bias_norm.c computes it). */
#include "layers/bias_norm.h"

static Param *param(const BiasNorm *bn, Layer *l, int which)
{
    return bias_norm_param(bn, l, which);
}

void bias_norm_declare(BiasNorm *bn, Layer *l, int batch_normalize, int bias, int channels,
                       int spatial)
{
    bn->batch_normalize = batch_normalize;
    bn->has_bias = batch_normalize || bias;
    bn->channels = channels;
    bn->spatial = spatial;
    bn->first_param = l->n_params;
    const int64_t dims[] = {channels};
    if (!bn->has_bias)
        return;
    layer_add_param(l, "biases", 1, 0, 1, dims);
    if (batch_normalize) {
        layer_add_param(l, "scales", 1, 0, 1, dims);
        layer_add_param(l, "rolling_mean", 0, 0, 1, dims);
        layer_add_param(l, "rolling_variance", 0, 0, 1, dims);
    }
}

void bias_norm_init(const BiasNorm *bn, Layer *l)
{
    for (int i = 0; i < bn->channels && bn->has_bias; i++) {
        param(bn, l, BN_BIASES)->data[i] = 0.0f;
        if (bn->batch_normalize) {
            param(bn, l, BN_SCALES)->data[i] = 1.0f;
            param(bn, l, BN_ROLLING_MEAN)->data[i] = 0.0f;
            param(bn, l, BN_ROLLING_VARIANCE)->data[i] = 1.0f;
        }
    }
}

void bias_norm_onnx_biases(const BiasNorm *bn, const Layer *l, OnnxGraph *g,
                           char name[ONNX_NAME_MAX])
{
    onnx_param(g, l, bn->first_param + BN_BIASES, name);
}

void bias_norm_onnx_batchnorm(const BiasNorm *bn, const Layer *l, const Net *net, OnnxGraph *g,
                              const char *x, const char *y)
{
    char scale[ONNX_NAME_MAX], bias[ONNX_NAME_MAX], mean[ONNX_NAME_MAX], var[ONNX_NAME_MAX];
    onnx_param(g, l, bn->first_param + BN_SCALES, scale);
    onnx_param(g, l, bn->first_param + BN_BIASES, bias);
    onnx_param(g, l, bn->first_param + BN_ROLLING_MEAN, mean);
    onnx_param(g, l, bn->first_param + BN_ROLLING_VARIANCE, var);
    const char *in[] = {x, scale, bias, mean, var};
    /* bn_darknet's sqrt(var) + 1e-6 is within 1e-6/sqrt(var) (relative) of epsilon 0. */
    const OnnxAttr eps =
        onnx_attr_float("epsilon", net->hyper.bn_darknet ? 0.0f : net->hyper.bn_eps);
    onnx_node(g, "BatchNormalization", 5, in, y, 1, &eps);
}
