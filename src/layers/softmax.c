/* [softmax]: softmax over each of a sample's `groups` runs of n = c*h*w/groups values, and the
 * cross-entropy loss. groups is 1 in an image net; in a sequence net it is T, one softmax per
 * token row (darknet's key, with its meaning), each with its label.
 *
 *   in, out [batch][groups][n]   out[b][g] = exp(in[b][g] - max) / sum exp(in[b][g] - max)
 *
 * Below, "sample" means one (b, g) with its label labels[b * groups + g].
 * With labels, forward adds sum_b loss_b / loss_divisor to *ctx->loss, where with
 * e = label_smoothing in training (0 in eval mode, which measures the plain cross-entropy)
 *
 *   loss_b = (1 - e) * -log p[b][label_b] + e * mean_i -log p[b][i]
 *
 * as torch.nn.CrossEntropyLoss(label_smoothing=e), with log p from the log-sum-exp of the
 * inputs (the float sum of the exponentials, its log in double). Backward adds the fused gradient
 * (p - (1 - e) onehot(label) - e/n) / loss_divisor into the input delta, ignoring l->delta. A
 * sample whose label is outside [0, n) contributes neither loss nor gradient. Without labels,
 * backward applies the softmax Jacobian to l->delta.
 *
 * Its CPU kernels are in backend/cpu/softmax.c. */
#include "layers/softmax.h"

#include "core/net.h"
#include "core/onnx_graph.h"

static int softmax_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int groups;
    float smoothing;
    const int rows = net->seq > 0 ? l->in_shape.h : 1; /* the labels each sample has */
    if (rows != net_labels_per_sample(net)) /* a layer before changed the rows: seq labels */
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] of a sequence net needs one row per token: its "
                         "input has %d row%s (height) but the net has seq=%d tokens",
                         cfg->path, s->line, l->index, s->name, rows, rows == 1 ? "" : "s",
                         net->seq);
    int st = cfg_get_int(cfg, s, "groups", rows, &groups, e);
    st = st ? st : cfg_get_float(cfg, s, "label_smoothing", 0.0f, &smoothing, e);
    if (st)
        return st;
    if (groups != rows)
        return cfg_bad_value(cfg, s, "groups", e, "only groups=%d (%s) is supported", rows,
                             net->seq > 0 ? "one softmax per token" : "one softmax per image");
    if (!(smoothing >= 0 && smoothing <= 1))
        return cfg_bad_value(cfg, s, "label_smoothing", e, "expected a value in [0, 1]");
    Softmax *sm = l->priv;
    sm->label_smoothing = smoothing;
    sm->groups = groups;
    l->out_shape = l->in_shape;
    l->flops = 3.0 * (double)shape_size(l->in_shape);
    return CDL_OK;
}

/* Softmax over each sample's c*h*w values: Flatten, then Softmax along axis 1; the
 * output is [N][c*h*w]. One per token in a sequence net: Softmax along axis 2 of [N][T][n]. */
static int softmax_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    char x[ONNX_NAME_MAX];
    const int per_token = ((const Softmax *)l->priv)->groups != 1;
    if (per_token) /* [N][T][n]: one softmax per token, over the last axis */
        onnx_input_nchw(g, l, 0, x);
    else
        onnx_input_flat(g, l, 0, x);
    const OnnxAttr axis = onnx_attr_int("axis", per_token ? 2 : 1);
    onnx_node(g, "Softmax", 1, (const char *[]){x}, onnx_output(g, l, !per_token), 1, &axis);
    return CDL_OK;
}

/* One softmax per row: groups follows the rows. */
static void softmax_set_rows(Layer *l, const Net *net)
{
    layer_rows_follow_input(l, net);
    ((Softmax *)l->priv)->groups = l->in_shape.h;
}

const LayerType softmax_layer = {
    .name = "softmax",
    .set_rows = softmax_set_rows,
    .priv_size = sizeof(Softmax),
    .parse = softmax_parse,
    .export_onnx = softmax_export_onnx,
    .is_loss = 1,
    .backward_ignores_inputs = 1,
    .splits_batch = 1,
};
