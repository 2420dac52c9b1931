/* `cdl import`: pooling and padding (onnx_import_internal.h): MaxPool, the averages
 * ([avgpool] over the whole map or over windows), and Pad ([pad]). */
#include "model/onnx_import_internal.h"

#include <string.h>

/* The padding to add after the input so that cdl's rounded-down output size is ceil_mode's
 * (0 without ceil_mode): ceil((h + pads - size) / stride) + 1 windows, less a last one that
 * would start in the padding after the input, as onnxruntime and PyTorch count them. cdl's
 * windows ignore padded cells, as ONNX MaxPool does. */
static int ceil_mode_padding(const OnnxNode *n, int h, int size, int stride, const int64_t pads[4])
{
    if (!import_attr_int(n, "ceil_mode", 0))
        return 0;
    const int span = h + (int)(pads[0] + pads[2]) - size;
    int out = (span + stride - 1) / stride + 1;
    if ((out - 1) * stride >= h + pads[0])
        out--;
    const int floor_out = span / stride + 1;
    return out > floor_out ? (out - 1) * stride - span : 0;
}

int import_maxpool(Importer *im, const OnnxNode *n)
{
    static const char *const allowed[] = {"auto_pad", "ceil_mode",     "dilations", "kernel_shape",
                                          "pads",     "storage_order", "strides",   NULL};
    const ImportValue *x;
    int layer, size, stride;
    int64_t pads[4];
    int st = import_check_attrs(im, n, allowed);
    st = st ? st : import_square_window_attrs(im, n, &size, &stride, pads);
    if (st)
        return st;
    if (n->n_outputs > 1)
        return import_refuse(im, n, "output Indices is not supported");
    if (import_attr_int(n, "storage_order", 0))
        return import_refuse(im, n, "attribute storage_order=1 is not supported");
    st = import_read_input(im, n, 0, &x, &layer);
    if (st)
        return st;
    const Shape in = import_layer_shape(im, layer);
    if (x->flat || in.h + pads[0] + pads[2] < size || in.w + pads[0] + pads[2] < size)
        return import_refuse(im, n, "the window is larger than its input");
    const int extra_h = ceil_mode_padding(n, in.h, size, stride, pads);
    const int extra_w = ceil_mode_padding(n, in.w, size, stride, pads);
    if (extra_h != extra_w)
        return import_refuse(im, n,
                             "attribute ceil_mode=1 on a %dx%d input: cdl pads rows and columns "
                             "alike",
                             in.h, in.w);
    const int before = (int)pads[0], after = (int)pads[2] + extra_h, padding = before + after;
    if (after != before && after != before + 1)
        return import_refuse(im, n,
                             "attribute pads=[%lld,%lld,%lld,%lld]%s: cdl pads as many after as "
                             "before, or one more",
                             (long long)pads[0], (long long)pads[1], (long long)pads[2],
                             (long long)pads[3], extra_h ? " with ceil_mode=1" : "");
    if (padding > 2 * (size - 1))
        return import_refuse(im, n, "pads of %d exceed the window's %d", padding, size - 1);
    const int out_h = (in.h + padding - size) / stride + 1;
    const int out_w = (in.w + padding - size) / stride + 1;
    ImportLayer *l = import_add_layer(im, K_MAXPOOL, n);
    if (!l)
        return CDL_ERUNTIME;
    l->size = size;
    l->stride = stride;
    l->padding = padding;
    l->out = (Shape){in.c, out_h, out_w};
    return import_bind_output(im, n, im->n_layers - 1, 0);
}

/* AveragePool of kxk windows at stride s, pads p (the same on every side): [avgpool] size=k
 * stride=s padding=p, which counts padded cells as zeros as torch's count_include_pad=True does,
 * so only with count_include_pad=1 or no pads (inception_v3's 3x3/1 pad 1, densenet's 2x2/2). */
static int window_average(Importer *im, const OnnxNode *n, const ImportValue *x, int size,
                          int stride, const int64_t pads[4])
{
    int layer;
    if (x->flat || x->layer < 0)
        return import_refuse(im, n, "its input is %s, not a layer's feature map",
                             x->flat ? "a vector" : "the graph input");
    if (import_attr_int(n, "ceil_mode", 0))
        return import_refuse(im, n, "attribute ceil_mode=1 is not supported on an average");
    if ((pads[0] || pads[2]) && !import_attr_int(n, "count_include_pad", 0))
        return import_refuse(im, n,
                             "attribute count_include_pad=0 with pads: cdl's [avgpool] counts "
                             "the padding in a window's average");
    if (pads[0] != pads[2] || pads[0] != pads[1] || pads[0] != pads[3] || pads[0] > size / 2)
        return import_refuse(im, n,
                             "attribute pads=[%lld,%lld,%lld,%lld]: cdl pads every side alike, "
                             "at most half the window",
                             (long long)pads[0], (long long)pads[1], (long long)pads[2],
                             (long long)pads[3]);
    const Shape in = import_layer_shape(im, x->layer);
    if (in.h + 2 * pads[0] < size || in.w + 2 * pads[0] < size)
        return import_refuse(im, n, "the window is larger than its %dx%d input", in.h, in.w);
    int st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_AVGPOOL, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->size = size;
    l->stride = stride;
    l->padding = (int)pads[0];
    l->out = (Shape){in.c, (in.h + 2 * l->padding - size) / stride + 1,
                     (in.w + 2 * l->padding - size) / stride + 1};
    return import_bind_output(im, n, im->n_layers - 1, 0);
}

/* Pad (mode constant) of H and W: [pad] top, left, bottom, right, value; no layer when every
 * pad is 0. pads from the input (opset 11 on) or the attribute (before). */
int import_pad(Importer *im, const OnnxNode *n)
{
    static const char *const allowed[] = {"mode", "pads", "value", NULL};
    const ImportValue *x;
    const OnnxTensor *pads_input = NULL, *value_input = NULL;
    const OnnxAttribute *mode = onnx_node_attr(n, "mode"), *pads_attr = onnx_node_attr(n, "pads");
    int layer;
    int st = import_check_attrs(im, n, allowed);
    st = st || pads_attr ? st : import_input_constant(im, n, 1, 2, &pads_input);
    st = st || pads_attr ? st : import_input_constant(im, n, 2, 1, &value_input);
    st = st ? st : import_input_layer(im, n, 0, &x);
    if (st)
        return st;
    if (mode && mode->s && strcmp(mode->s, "constant"))
        return import_refuse(im, n, "attribute mode=%s: cdl's [pad] pads with a constant", mode->s);
    if (n->n_inputs > 3 && n->inputs[3][0])
        return import_refuse(im, n, "input axes is not supported (all four axes' pads only)");
    const int64_t *p = pads_attr ? pads_attr->ints : pads_input ? pads_input->ints : NULL;
    const int count = pads_attr ? pads_attr->n_ints : pads_input ? (int)pads_input->count : 0;
    if (!p || count != 8 || (pads_input && pads_input->data_type != ONNX_READ_INT64) || x->flat ||
        x->layer < 0 || p[0] || p[1] || p[4] || p[5] || p[2] < 0 || p[3] < 0 || p[6] < 0 ||
        p[7] < 0 || p[2] > 4096 || p[3] > 4096 || p[6] > 4096 || p[7] > 4096) {
        char buf[128];
        return import_refuse(im, n,
                             "pads %s: cdl's [pad] adds rows and columns (0 to 4096) to a "
                             "layer's [N,C,H,W] map",
                             p ? import_ints_text(p, count, buf, sizeof buf) : "(none)");
    }
    const float value = pads_attr     ? import_attr_float(n, "value", 0.0f)
                        : value_input ? value_input->floats[0]
                                      : 0;
    if (!p[2] && !p[3] && !p[6] && !p[7])
        return import_bind_output(im, n, x->layer, 0);
    const Shape in = import_layer_shape(im, x->layer);
    st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_PAD, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->pad[0] = (int)p[2], l->pad[1] = (int)p[3], l->pad[2] = (int)p[6], l->pad[3] = (int)p[7];
    l->pad_value = value;
    l->out = (Shape){in.c, in.h + l->pad[0] + l->pad[2], in.w + l->pad[1] + l->pad[3]};
    return import_bind_output(im, n, im->n_layers - 1, 0);
}

/* GlobalAveragePool, AveragePool over the whole input (both [avgpool]), of 1x1 windows (an
 * identity) or of smaller windows (window_average). */
int import_avgpool(Importer *im, const OnnxNode *n, int global)
{
    static const char *const allowed[] = {
        "auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides", NULL};
    const ImportValue *x;
    int layer, size = 0, stride = 1;
    int64_t pads[4] = {0};
    int st = import_check_attrs(im, n, global ? (const char *const[]){NULL} : allowed);
    st = st ? st : global ? CDL_OK : import_square_window_attrs(im, n, &size, &stride, pads);
    st = st ? st : import_input_layer(im, n, 0, &x);
    if (st)
        return st;
    const Shape in = import_layer_shape(im, x->layer);
    if (!global && size == 1 && stride == 1 && !pads[0] && !pads[2])
        return import_bind_output(im, n, x->layer, x->flat);
    if (!global && (pads[0] || pads[2] || size != in.h || size != in.w))
        return window_average(im, n, x, size, stride, pads);
    if (x->flat)
        return import_refuse(im, n, "its input is a vector, not a feature map");
    st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_AVGPOOL, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->out = (Shape){in.c, 1, 1};
    return import_bind_output(im, n, im->n_layers - 1, 0);
}

/* ReduceMean over the spatial axes (2, 3): [avgpool], a vector when keepdims=0. */
int import_reduce_mean(Importer *im, const OnnxNode *n)
{
    const ImportValue *x;
    int layer;
    const OnnxTensor *axes_input = NULL;
    int st = import_check_attrs(im, n, (const char *const[]){"axes", "keepdims", NULL});
    st = st ? st : import_input_layer(im, n, 0, &x);
    if (st)
        return st;
    /* axes: an attribute up to opset 17, the optional input 1 from opset 18 */
    const OnnxAttribute *attr = onnx_node_attr(n, "axes");
    st = attr ? CDL_OK : import_input_constant(im, n, 1, 2, &axes_input);
    if (st)
        return st;
    if (axes_input && axes_input->data_type != ONNX_READ_INT64)
        return import_refuse(im, n, "axes '%s' must be int64", axes_input->name);
    const int64_t *axes = attr ? attr->ints : axes_input ? axes_input->ints : NULL;
    const int n_axes = attr ? attr->n_ints : axes_input ? (int)axes_input->count : 0;
    int spatial = n_axes == 2 && !x->flat;
    for (int k = 0; spatial && k < 2; k++)
        spatial = axes[k] == 2 + k || axes[k] == k - 2;
    if (!spatial && n_axes == 1 && x->layer >= 0 && x->flat != VALUE_VECTOR)
        return import_channel_norm(im, n, x);
    if (!spatial) {
        char buf[128];
        return import_refuse(im, n, "%s axes=%s: cdl averages over the spatial axes [2,3] only",
                             axes_input ? "input" : "attribute",
                             axes ? import_ints_text(axes, n_axes, buf, sizeof buf) : "(all)");
    }
    st = import_read_input(im, n, 0, &x, &layer);
    ImportLayer *l = st ? NULL : import_add_layer(im, K_AVGPOOL, n);
    if (!l)
        return st ? st : CDL_ERUNTIME;
    l->out = (Shape){import_layer_shape(im, layer).c, 1, 1};
    l->flat = !import_attr_int(n, "keepdims", 1);
    return import_bind_output(im, n, im->n_layers - 1, l->flat);
}
