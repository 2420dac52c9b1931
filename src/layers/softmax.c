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
 * backward applies the softmax Jacobian to l->delta. */
#include <math.h>

#include "core/net.h"
#include "core/onnx_graph.h"
#include "ops/softmax_row.h"

/* Below this many values a parallel region costs more than it saves. */
#define SOFTMAX_PARALLEL_MIN 32768

typedef struct Softmax {
    float label_smoothing;
    int groups;
    float *row_loss; /* work [batch][groups]: each row's loss, in the forward */
} Softmax;

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

/* The label smoothing in effect: the cfg's in training, none in eval mode. */
static float smoothing_of(const Layer *l, const StepContext *ctx)
{
    return ctx->train ? ((const Softmax *)l->priv)->label_smoothing : 0.0f;
}

/* One sample's loss from its inputs x [n] and their log-sum-exp (see the top of the file). */
static double sample_loss(const float *x, size_t n, double log_sum_exp, int label, double smoothing)
{
    double loss = (1 - smoothing) * (log_sum_exp - x[label]);
    if (smoothing > 0) {
        float total = 0;
#pragma omp simd reduction(+ : total)
        for (size_t i = 0; i < n; i++)
            total += x[i];
        loss += smoothing * (log_sum_exp - (double)total / (double)n);
    }
    return loss;
}

static int softmax_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Softmax *sm = l->priv;
    sm->row_loss = layer_work_floats(st, (size_t)batch * (size_t)sm->groups);
    return CDL_OK;
}

/* Each row's softmax in parallel, with its loss (0 for a label outside [0, n)) in row_loss;
 * the losses are summed in row order after, so the total does not depend on the threads. */
static void softmax_forward(Layer *l, const StepContext *ctx)
{
    const Softmax *sm = l->priv;
    const float *in = l->in[0];
    const size_t groups = (size_t)sm->groups;
    const size_t n = shape_size(l->out_shape) / groups;
    const int rows = ctx->batch * (int)groups;
    const int *labels = ctx->labels;
    const double smoothing = smoothing_of(l, ctx);
    float *row_loss = sm->row_loss;
#pragma omp parallel for schedule(static) if (rows * n > SOFTMAX_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        const double log_sum_exp = softmax_row(in + r * n, l->out + r * n, n);
        if (labels) {
            const int label = labels[r];
            row_loss[r] = label >= 0 && (size_t)label < n
                              ? (float)sample_loss(in + r * n, n, log_sum_exp, label, smoothing)
                              : 0.0f;
        }
    }
    if (!labels)
        return;
    double loss = 0;
    for (int r = 0; r < rows; r++)
        loss += row_loss[r];
    *ctx->loss += (float)(loss / ctx->loss_divisor);
}

/* Row t of every sample (sequence nets; no loss). */
static void softmax_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const float *in = l->in[0];
    const size_t groups = (size_t)((const Softmax *)l->priv)->groups;
    const size_t n = shape_size(l->out_shape) / groups;
    for (int b = 0; b < ctx->batch; b++) {
        const size_t at = ((size_t)b * groups + (size_t)t) * n;
        softmax_row(in + at, l->out + at, n);
    }
}

static void softmax_backward(Layer *l, const StepContext *ctx)
{
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const size_t groups = (size_t)((const Softmax *)l->priv)->groups;
    const size_t n = shape_size(l->out_shape) / groups;
    const int rows = ctx->batch * (int)groups;
    const int *labels = ctx->labels;
    const float inv_divisor = 1.0f / ctx->loss_divisor, smoothing = smoothing_of(l, ctx);
    /* The smoothed target's weights: every class, and the label on top. */
    const float all_weight = smoothing / (float)n * inv_divisor;
    const float label_weight = (1.0f - smoothing) * inv_divisor;
#pragma omp parallel for schedule(static) if (rows * n > SOFTMAX_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        const float *p = l->out + r * n;
        float *dx = in_delta + r * n;
        if (labels) {
            int label = labels[r];
            if (label < 0 || (size_t)label >= n)
                continue;
            for (size_t i = 0; i < n; i++)
                dx[i] += p[i] * inv_divisor - all_weight;
            dx[label] -= label_weight;
        } else {
            /* dL/dx_i = p_i (dL/dp_i - sum_j p_j dL/dp_j) */
            const float *dy = l->delta + r * n;
            float dot = 0;
#pragma omp simd reduction(+ : dot)
            for (size_t i = 0; i < n; i++)
                dot += p[i] * dy[i];
            for (size_t i = 0; i < n; i++)
                dx[i] += p[i] * (dy[i] - dot);
        }
    }
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

const LayerType softmax_layer = {
    .name = "softmax",
    .priv_size = sizeof(Softmax),
    .parse = softmax_parse,
    .export_onnx = softmax_export_onnx,
    .is_loss = 1,
    .backward_ignores_inputs = 1,
    .splits_batch = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_softmax_kernels = {
    .resize = softmax_resize,
    .forward = softmax_forward,
    .backward = softmax_backward,
    .forward_at = softmax_forward_at,
};
