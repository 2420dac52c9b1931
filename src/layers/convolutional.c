/* [convolutional]: 2-D convolution with groups, optional batch norm and an activation: its
 * meaning (parse, initialisation, ONNX form, int8 weights); its configuration is
 * layers/convolutional.h, its CPU kernels backend/cpu/conv.c (one file per engine beside it).
 *
 *   in  [batch][c][h][w]
 *   out [batch][filters][out_h][out_w], out_h = (h + 2*padding - size)/stride + 1
 *   weights [filters][c/groups][size][size]; biases [filters] (none with bias=0)
 *   with batch_normalize: scales, biases (the BN shift; no conv bias), rolling_mean,
 *   rolling_variance [filters]
 *
 * precision=bf16 (Layer.precision) rounds the products' operands, as torch.autocast("cpu",
 * torch.bfloat16) takes a convolution's; the bias or batch norm and the activation stay float32.
 * The [net] keys engine=, winograd= and winograd_min_tiles= choose the CPU's kernels
 * (backend/cpu/cpu_options.h), not the numbers' meaning. */
#include <math.h>

#include "layers/convolutional.h"

/* Output extent along one axis, < 1 when empty (a floor even when the window is larger than the
 * padded input), as the kernels' conv_out_size (backend/cpu/im2col.h) computes it. */
static int out_extent(int in, int size, int stride, int padding)
{
    const int span = in + 2 * padding - size;
    return span < 0 ? 0 : span / stride + 1;
}

static int conv_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int filters, size, stride, pad, padding, groups, bn, bias;
    int rc = cfg_get_int(cfg, s, "filters", 1, &filters, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "size", 1, &size, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "stride", 1, &stride, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "pad", 0, &pad, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "padding", 0, &padding, e);
    if (!rc && pad) /* as darknet: pad=1 means size/2 whatever padding= says */
        padding = size / 2;
    if (!rc)
        rc = cfg_get_int(cfg, s, "groups", 1, &groups, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "batch_normalize", 0, &bn, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "bias", 1, &bias, e);
    if (!rc)
        rc = layer_parse_activation(l, cfg, s, CDL_ACT_LOGISTIC, e);
    if (rc)
        return rc;

    const char *path = cfg->path;
    const Shape in = l->in_shape;
    if (filters < 1)
        return layer_bad_key(l, cfg, s, "filters", filters, "expected at least 1", e);
    if (size < 1)
        return layer_bad_key(l, cfg, s, "size", size, "expected at least 1", e);
    if (stride < 1)
        return layer_bad_key(l, cfg, s, "stride", stride, "expected at least 1", e);
    if (padding < 0)
        return layer_bad_key(l, cfg, s, "padding", padding, "expected 0 or more", e);
    if (bias != 0 && bias != 1)
        return layer_bad_key(l, cfg, s, "bias", bias, "expected 0 or 1", e);
    if (groups < 1 || in.c % groups || filters % groups)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d: [%s] groups=%d must divide both the input channels "
                         "(%d) and filters (%d)",
                         cfg_where(cfg, s, cfg_find(s, "groups")).text, l->index, s->name, groups,
                         in.c, filters);
    const int out_h = out_extent(in.h, size, stride, padding);
    const int out_w = out_extent(in.w, size, stride, padding);
    if (out_h < 1 || out_w < 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] output would be empty: input %dx%d, size=%d, "
                         "stride=%d, padding=%d",
                         path, s->line, l->index, s->name, in.h, in.w, size, stride, padding);
    const double kdim_values = (double)(in.c / groups) * size * size;
    if (kdim_values * filters > (double)NET_MAX_FLOATS ||
        kdim_values * out_h * out_w > (double)NET_MAX_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] is too large: %.0f weights and %.0f im2col values "
                         "per image (at most %zu each)",
                         path, s->line, l->index, s->name, kdim_values * filters,
                         kdim_values * out_h * out_w, NET_MAX_FLOATS);

    Conv *cv = l->priv;
    cv->filters = filters;
    cv->size = size;
    cv->stride = stride;
    cv->padding = padding;
    cv->groups = groups;
    cv->train_batch = net->hyper.batch / net->hyper.subdivisions;

    l->out_shape = (Shape){filters, out_h, out_w};
    const size_t out_hw = (size_t)out_h * out_w;
    const size_t kdim = (size_t)(in.c / groups) * size * size;
    layer_add_param(l, "weights", 1, 1, 4, (int64_t[]){filters, in.c / groups, size, size});
    bias_norm_declare(&cv->stage, l, bn != 0, bias, filters, (int)out_hw);
    l->flops = 2.0 * (double)out_hw * filters * (double)kdim;
    return CDL_OK;
}

static void conv_init(Layer *l, Rng *rng)
{
    const Conv *cv = l->priv;
    Param *w = &l->params[CONV_WEIGHTS];
    const int fan_in = (l->in_shape.c / cv->groups) * cv->size * cv->size;
    const float std = sqrtf(2.0f / (float)fan_in);
    for (size_t i = 0; i < w->count; i++)
        w->data[i] = std * rng_normal(rng);
    bias_norm_init(&cv->stage, l);
}

/* A grouped convolution's gemms take row blocks of the weights that int8 panels do not split. */
static int conv_quant_weights(const Layer *l)
{
    const Conv *cv = l->priv;
    return cv->groups == 1 ? CONV_WEIGHTS : -1;
}

/* Conv (bias as its B input, or no B: bias=0, or BatchNormalization), then the activation. */
static int conv_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)e;
    const Conv *cv = l->priv;
    char x[ONNX_NAME_MAX], w[ONNX_NAME_MAX], b[ONNX_NAME_MAX], conv[ONNX_NAME_MAX];
    char pre[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    onnx_param(g, l, CONV_WEIGHTS, w);
    const char *out = onnx_output(g, l, 0);
    onnx_activation_input(pre, l->activation, out);
    const int64_t kernel[] = {cv->size, cv->size}, strides[] = {cv->stride, cv->stride};
    const int64_t pads[] = {cv->padding, cv->padding, cv->padding, cv->padding};
    const OnnxAttr attrs[] = {
        onnx_attr_ints("kernel_shape", kernel, 2),
        onnx_attr_ints("strides", strides, 2),
        onnx_attr_ints("pads", pads, 4),
        onnx_attr_int("group", cv->groups),
    };
    if (cv->stage.batch_normalize) {
        onnx_name(conv, l, "conv");
        onnx_node(g, "Conv", 2, (const char *[]){x, w}, conv, 4, attrs);
        bias_norm_onnx_batchnorm(&cv->stage, l, net, g, conv, pre);
    } else if (cv->stage.has_bias) {
        bias_norm_onnx_biases(&cv->stage, l, g, b);
        onnx_node(g, "Conv", 3, (const char *[]){x, w, b}, pre, 4, attrs);
    } else {
        onnx_node(g, "Conv", 2, (const char *[]){x, w}, pre, 4, attrs);
    }
    onnx_activation(g, l->activation, pre, out);
    return CDL_OK;
}

const LayerType convolutional_layer = {
    .name = "convolutional",
    .priv_size = sizeof(Conv),
    .parse = conv_parse,
    .init = conv_init,
    .export_onnx = conv_export_onnx,
    .quant_weights = conv_quant_weights,
    .quant_calibrated = 1,
    .gemm_bound = 1,
    .darknet_weights = DARKNET_CONVOLUTIONAL,
    .backward_ignores_output = 1,
    .writes_input_delta = 1,
};
