/* [softmax]: softmax over each sample's c*h*w values, and the cross-entropy loss.
 *
 *   in, out [batch][c][h][w]   out[b] = exp(in[b] - max) / sum exp(in[b] - max)
 *
 * With labels, forward adds sum_b -log(max(p[b][label_b], 1e-30)) / loss_divisor to
 * net->loss and backward adds the fused gradient (p - onehot(label)) / loss_divisor
 * into the input delta, ignoring l->delta. A sample whose label is outside [0, c*h*w)
 * contributes neither loss nor gradient. Without labels, backward applies the softmax
 * Jacobian to l->delta. */
#include <math.h>

#include "core/net.h"
#include "io/onnx.h"

/* Below this many values a parallel region costs more than it saves. */
#define SOFTMAX_PARALLEL_MIN 32768

static int softmax_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int groups;
    int st = cfg_get_int(cfg, s, "groups", 1, &groups, e);
    if (st)
        return st;
    if (groups != 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: bad value '%d' for key 'groups' in [%s]: only groups=1 is "
                         "supported",
                         cfg->path, cfg_find(s, "groups")->line, groups, s->name);
    l->out_shape = l->in_shape;
    l->flops = 3.0 * (double)shape_size(l->in_shape);
    return CDL_OK;
}

static void softmax_forward(Layer *l, Net *net)
{
    const float *in = net_layer_input(net, l, 0);
    size_t n = shape_size(l->out_shape);
    int batch = net->batch;
#pragma omp parallel for schedule(static) if (batch * n > SOFTMAX_PARALLEL_MIN)
    for (int b = 0; b < batch; b++) {
        const float *x = in + b * n;
        float *y = l->out + b * n;
        float max = x[0];
        for (size_t i = 1; i < n; i++)
            max = x[i] > max ? x[i] : max;
        float sum = 0;
        for (size_t i = 0; i < n; i++) {
            y[i] = expf(x[i] - max);
            sum += y[i];
        }
        float inv = 1.0f / sum;
        for (size_t i = 0; i < n; i++)
            y[i] *= inv;
    }
    if (!net->labels)
        return;
    double loss = 0;
    for (int b = 0; b < batch; b++) {
        int label = net->labels[b];
        if (label < 0 || (size_t)label >= n)
            continue;
        float p = l->out[b * n + (size_t)label];
        loss -= log(p > 1e-30f ? p : 1e-30f);
    }
    net->loss += (float)(loss / net->loss_divisor);
}

static void softmax_backward(Layer *l, Net *net)
{
    float *in_delta = net_layer_input_delta(net, l, 0);
    if (!in_delta)
        return;
    size_t n = shape_size(l->out_shape);
    int batch = net->batch;
    const int *labels = net->labels;
    float inv_divisor = 1.0f / net->loss_divisor;
#pragma omp parallel for schedule(static) if (batch * n > SOFTMAX_PARALLEL_MIN)
    for (int b = 0; b < batch; b++) {
        const float *p = l->out + b * n;
        float *dx = in_delta + b * n;
        if (labels) {
            int label = labels[b];
            if (label < 0 || (size_t)label >= n)
                continue;
            for (size_t i = 0; i < n; i++)
                dx[i] += p[i] * inv_divisor;
            dx[label] -= inv_divisor;
        } else {
            /* dL/dx_i = p_i (dL/dp_i - sum_j p_j dL/dp_j) */
            const float *dy = l->delta + b * n;
            float dot = 0;
            for (size_t i = 0; i < n; i++)
                dot += p[i] * dy[i];
            for (size_t i = 0; i < n; i++)
                dx[i] += p[i] * (dy[i] - dot);
        }
    }
}

/* Softmax over each sample's c*h*w values: Flatten, then Softmax along axis 1; the
 * output is [N][c*h*w]. */
static int softmax_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    char x[ONNX_NAME_MAX];
    onnx_input_flat(g, l, 0, x);
    const OnnxAttr axis = onnx_attr_int("axis", 1);
    onnx_node(g, "Softmax", 1, (const char *[]){x}, onnx_output(g, l, 1), 1, &axis);
    return CDL_OK;
}

const LayerType softmax_layer = {
    .name = "softmax",
    .parse = softmax_parse,
    .forward = softmax_forward,
    .backward = softmax_backward,
    .export_onnx = softmax_export_onnx,
};
