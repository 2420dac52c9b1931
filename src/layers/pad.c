/* [pad]: explicit padding of each plane with a constant, torch's F.pad(x, (left, right, top,
 * bottom), value=value) (nn.ZeroPad2d with the default value 0), for the padding a convolution's
 * own (symmetric) padding cannot express.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][top + h + bottom][left + w + right]   the input at row top, column left;
 *                                                        value elsewhere
 */
#include "layers/pad.h"

#include <stdio.h>

#include "core/net.h"
#include "core/onnx_graph.h"

static int pad_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int all, top, bottom, left, right;
    float value;
    int st = cfg_get_int_min(cfg, s, "padding", 0, 0, &all, e);
    st = st ? st : cfg_get_int_min(cfg, s, "top", all, 0, &top, e);
    st = st ? st : cfg_get_int_min(cfg, s, "bottom", all, 0, &bottom, e);
    st = st ? st : cfg_get_int_min(cfg, s, "left", all, 0, &left, e);
    st = st ? st : cfg_get_int_min(cfg, s, "right", all, 0, &right, e);
    st = st ? st : cfg_get_float(cfg, s, "value", 0.0f, &value, e);
    if (st)
        return st;
    const Shape in = l->in_shape;
    const Shape out = {in.c, in.h + top + bottom, in.w + left + right};
    if ((double)in.c * out.h * out.w > (double)NET_MAX_FLOATS)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d: [%s] pads to more than %zu values",
                         cfg->path, s->line, l->index, s->name, NET_MAX_FLOATS);
    *(Pad *)l->priv = (Pad){top, left, value};
    l->out_shape = out;
    return CDL_OK;
}

/* Pad (constant mode) with the pads and the value as inputs, as opset 11 and later take them. */
static int pad_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Pad *p = l->priv;
    const Shape i = l->in_shape, o = l->out_shape;
    char x[ONNX_NAME_MAX], pads[ONNX_NAME_MAX + 5], value[ONNX_NAME_MAX + 6];
    onnx_input_nchw(g, l, 0, x);
    const char *out = onnx_output(g, l, 0);
    snprintf(pads, sizeof pads, "%s.pads", out);
    snprintf(value, sizeof value, "%s.value", out);
    const int64_t widths[] = {0, 0, p->top, p->left, 0, 0, o.h - i.h - p->top, o.w - i.w - p->left};
    onnx_int64s(g, pads, 8, widths);
    onnx_scalar(g, value, p->value);
    onnx_node(g, "Pad", 3, (const char *[]){x, pads, value}, out, 0, NULL);
    return CDL_OK;
}

const LayerType pad_layer = {
    .name = "pad",
    .priv_size = sizeof(Pad),
    .parse = pad_parse,
    .export_onnx = pad_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
