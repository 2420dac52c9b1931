/* [convolutional]: 2-D convolution with groups, optional batch norm and an activation: its
 * meaning (parse, initialisation, ONNX form, int8 weights); its configuration is
 * layers/convolutional.h, its CPU kernels backend/cpu/conv.c (one file per engine beside it).
 *
 *   in  [batch][c][h][w]
 *   out [batch][filters][out_h][out_w], out_h = (h + 2*pad_h - size_h)/stride_h + 1, out_w
 *       likewise (layers/convolutional.h's Conv.win; size=, stride=, padding= take one value for
 *       both axes or two, height,width: size=1,7 padding=0,3 is torch's kernel_size=(1, 7),
 *       padding=(0, 3))
 *   weights [filters][c/groups][size_h][size_w]; biases [filters] (none with bias=0)
 *   with batch_normalize: scales, biases (the BN shift; no conv bias), rolling_mean,
 *   rolling_variance [filters]
 *
 * precision=bf16 (Layer.precision) rounds the products' operands, as torch.autocast("cpu",
 * torch.bfloat16) takes a convolution's; the bias or batch norm and the activation stay float32.
 * The [net] keys engine=, winograd= and winograd_min_tiles= choose the CPU's kernels
 * (backend/cpu/cpu_options.h), not the numbers' meaning. */
#include <math.h>
#include <stdio.h>

#include "layers/convolutional.h"

/* "size=S, stride=T, padding=P" as the cfg would write win: one value per key for a square
 * window, height,width otherwise. */
static void window_text(Window2d win, char *text, size_t bytes)
{
    if (window2d_is_square(win))
        snprintf(text, bytes, "size=%d, stride=%d, padding=%d", win.size_h, win.stride_h,
                 win.pad_h);
    else
        snprintf(text, bytes, "size=%d,%d, stride=%d,%d, padding=%d,%d", win.size_h, win.size_w,
                 win.stride_h, win.stride_w, win.pad_h, win.pad_w);
}

static int conv_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int filters, size[2], stride[2], pad, padding[2], groups, bn, bias;
    int rc = cfg_get_int(cfg, s, "filters", 1, &filters, e);
    if (!rc)
        rc = cfg_get_int_pair(cfg, s, "size", 1, size, e);
    if (!rc)
        rc = cfg_get_int_pair(cfg, s, "stride", 1, stride, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "pad", 0, &pad, e);
    if (!rc)
        rc = cfg_get_int_pair(cfg, s, "padding", 0, padding, e);
    for (int axis = 0; !rc && pad && axis < 2; axis++) /* as darknet: pad=1 means size/2 */
        padding[axis] = size[axis] / 2;
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
    for (int axis = 0; axis < 2; axis++) {
        if (size[axis] < 1)
            return layer_bad_key(l, cfg, s, "size", size[axis], "expected at least 1", e);
        if (stride[axis] < 1)
            return layer_bad_key(l, cfg, s, "stride", stride[axis], "expected at least 1", e);
        if (padding[axis] < 0)
            return layer_bad_key(l, cfg, s, "padding", padding[axis], "expected 0 or more", e);
    }
    if (bias != 0 && bias != 1)
        return layer_bad_key(l, cfg, s, "bias", bias, "expected 0 or 1", e);
    if (groups < 1 || in.c % groups || filters % groups)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d: [%s] groups=%d must divide both the input channels "
                         "(%d) and filters (%d)",
                         cfg_where(cfg, s, cfg_find(s, "groups")).text, l->index, s->name, groups,
                         in.c, filters);
    const Window2d win = {size[0], size[1], stride[0], stride[1], padding[0], padding[1]};
    const int out_h = window_out_extent(in.h, win.size_h, win.stride_h, win.pad_h);
    const int out_w = window_out_extent(in.w, win.size_w, win.stride_w, win.pad_w);
    if (out_h < 1 || out_w < 1) {
        char text[96];
        window_text(win, text, sizeof text);
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] output would be empty: input %dx%d, %s", path,
                         s->line, l->index, s->name, in.h, in.w, text);
    }
    const double kdim_values = (double)(in.c / groups) * win.size_h * win.size_w;
    if (kdim_values * filters > (double)NET_MAX_FLOATS ||
        kdim_values * out_h * out_w > (double)NET_MAX_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] is too large: %.0f weights and %.0f im2col values "
                         "per image (at most %zu each)",
                         path, s->line, l->index, s->name, kdim_values * filters,
                         kdim_values * out_h * out_w, NET_MAX_FLOATS);

    Conv *cv = l->priv;
    cv->filters = filters;
    cv->win = win;
    cv->groups = groups;
    cv->train_batch = net->hyper.batch / net->hyper.subdivisions;

    l->out_shape = (Shape){filters, out_h, out_w};
    const size_t out_hw = (size_t)out_h * out_w;
    const size_t kdim = (size_t)(in.c / groups) * window2d_taps(win);
    layer_add_param(l, "weights", 1, 1, 4,
                    (int64_t[]){filters, in.c / groups, win.size_h, win.size_w});
    bias_norm_declare(&cv->stage, l, bn != 0, bias, filters, (int)out_hw);
    l->flops = 2.0 * (double)out_hw * filters * (double)kdim;
    return CDL_OK;
}

/* The output of the input's new height and width (net_set_size). */
static int conv_set_size(Layer *l, const Net *net, Error *e)
{
    Conv *cv = l->priv;
    const Shape in = layer_input_shape(l, net, 0);
    const int out_h = window_out_extent(in.h, cv->win.size_h, cv->win.stride_h, cv->win.pad_h);
    const int out_w = window_out_extent(in.w, cv->win.size_w, cv->win.stride_w, cv->win.pad_w);
    if (out_h < 1 || out_w < 1)
        return error_set(e, CDL_EUSAGE, "layer %d [convolutional]: output would be empty at %dx%d",
                         l->index, in.h, in.w);
    l->in_shape = in;
    l->out_shape.h = out_h;
    l->out_shape.w = out_w;
    cv->stage.spatial = out_h * out_w;
    l->flops = 2.0 * (double)out_h * out_w * cv->filters * (double)(in.c / cv->groups) *
               window2d_taps(cv->win);
    return CDL_OK;
}

static void conv_init(Layer *l, Rng *rng)
{
    const Conv *cv = l->priv;
    Param *w = &l->params[CONV_WEIGHTS];
    const int fan_in = (l->in_shape.c / cv->groups) * window2d_taps(cv->win);
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
    const Window2d win = cv->win;
    const int64_t kernel[] = {win.size_h, win.size_w}, strides[] = {win.stride_h, win.stride_w};
    const int64_t pads[] = {win.pad_h, win.pad_w, win.pad_h, win.pad_w}; /* begins, then ends */
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
    .set_size = conv_set_size,
    .quant_weights = conv_quant_weights,
    .quant_calibrated = 1,
    .gemm_bound = 1,
    .darknet_weights = DARKNET_CONVOLUTIONAL,
    .backward_ignores_output = 1,
    .writes_input_delta = 1,
};
