/* [connected]: fully connected layer with optional batch norm and an activation.
 *
 *   in  [batch][inputs], the flattened [c][h][w] of the previous layer
 *   out [batch][output]  (out_shape {output, 1, 1})
 *   weights [output][inputs]; biases [output]
 *   with batch_normalize: scales, biases (the BN shift), rolling_mean, rolling_variance
 *   [output], normalising each output over the batch.
 *
 * precision=bf16 (Layer.precision): the products take the weights, the input and delta rounded
 * to bf16 (gemm_operand); the bias or batch norm and the activation stay float32. Its CPU kernels
 * are in backend/cpu/connected.c. */
#include <math.h>

#include "core/net.h"
#include "layers/connected.h"

static int connected_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int outputs, bn;
    int rc = cfg_get_int(cfg, s, "output", 1, &outputs, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "batch_normalize", 0, &bn, e);
    if (!rc)
        rc = layer_parse_activation(l, cfg, s, CDL_ACT_LOGISTIC, e);
    if (rc)
        return rc;
    if (outputs < 1)
        return layer_bad_key(l, cfg, s, "output", outputs, "expected at least 1", e);

    Connected *fc = l->priv;
    fc->inputs = (int)shape_size(l->in_shape);
    fc->outputs = outputs;

    l->out_shape = (Shape){outputs, 1, 1};
    layer_add_param(l, "weights", 1, 1, 2, (int64_t[]){outputs, (int64_t)fc->inputs});
    bias_norm_declare(&fc->stage, l, bn != 0, 1, outputs, 1);
    l->flops = 2.0 * (double)fc->inputs * outputs;
    return CDL_OK;
}

/* As PyTorch's nn.Linear: weights and biases ~ U(-1/sqrt(inputs), 1/sqrt(inputs)); with
 * batch norm the shift starts at 0 and the scale at 1, as nn.BatchNorm1d. */
static void connected_init(Layer *l, Rng *rng)
{
    const Connected *fc = l->priv;
    const float bound = 1.0f / sqrtf((float)fc->inputs);
    Param *w = &l->params[CONNECTED_WEIGHTS], *b = &l->params[CONNECTED_BIASES];
    for (size_t i = 0; i < w->count; i++)
        w->data[i] = bound * (2.0f * rng_uniform(rng) - 1.0f);
    bias_norm_init(&fc->stage, l);
    if (!fc->stage.batch_normalize)
        for (int i = 0; i < fc->outputs; i++)
            b->data[i] = bound * (2.0f * rng_uniform(rng) - 1.0f);
}

static int connected_quant_weights(const Layer *l)
{
    (void)l;
    return CONNECTED_WEIGHTS;
}

/* Flatten, Gemm with the weights transposed (bias as its C input, or no bias and
 * BatchNormalization), then the activation; the output stays flat [N][output]. */
static int connected_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)e;
    const Connected *fc = l->priv;
    char x[ONNX_NAME_MAX], w[ONNX_NAME_MAX], b[ONNX_NAME_MAX], gemm[ONNX_NAME_MAX];
    char pre[ONNX_NAME_MAX];
    onnx_input_flat(g, l, 0, x);
    onnx_param(g, l, CONNECTED_WEIGHTS, w);
    const char *out = onnx_output(g, l, 1);
    onnx_activation_input(pre, l->activation, out);
    const OnnxAttr trans_b = onnx_attr_int("transB", 1);
    if (fc->stage.batch_normalize) {
        onnx_name(gemm, l, "gemm");
        onnx_node(g, "Gemm", 2, (const char *[]){x, w}, gemm, 1, &trans_b);
        bias_norm_onnx_batchnorm(&fc->stage, l, net, g, gemm, pre);
    } else {
        bias_norm_onnx_biases(&fc->stage, l, g, b);
        onnx_node(g, "Gemm", 3, (const char *[]){x, w, b}, pre, 1, &trans_b);
    }
    onnx_activation(g, l->activation, pre, out);
    return CDL_OK;
}

const LayerType connected_layer = {
    .name = "connected",
    .priv_size = sizeof(Connected),
    .parse = connected_parse,
    .init = connected_init,
    .export_onnx = connected_export_onnx,
    .quant_weights = connected_quant_weights,
    .gemm_bound = 1,
    .darknet_weights = DARKNET_CONNECTED,
    .backward_ignores_output = 1,
    .writes_input_delta = 1,
};
