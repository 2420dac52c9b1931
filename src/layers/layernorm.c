/* [layernorm]: layer normalisation of each row of w values, as torch.nn.LayerNorm(w, eps).
 *
 *   in, out [batch][rows][w] (rows = c*h: the T tokens of a sequence net, w = C)
 *   out[r] = (in[r] - mean(in[r])) / sqrt(var(in[r]) + eps) * scales + biases
 *   (var is the biased variance); scales [w] start at 1, biases [w] at 0. */
#include <math.h>

#include "core/net.h"
#include "core/onnx_graph.h"
#include "ops/sum_rows.h"

/* Below this many values a parallel region costs more than it saves. */
#define LAYERNORM_PARALLEL_MIN 16384

/* Positions in l->params, in the order parse declares them. */
enum { P_SCALES, P_BIASES };

typedef struct LayerNorm {
    float eps;
    /* Per row of the batch, from the last forward, for backward: [batch][rows] */
    float *mean, *inv_std; /* inv_std = 1 / sqrt(var + eps) */
} LayerNorm;

static int layernorm_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    float eps;
    int st = cfg_get_float(cfg, s, "eps", 1e-5f, &eps, e);
    if (st)
        return st;
    if (!(eps > 0))
        return cfg_bad_value(cfg, s, "eps", e, "must be > 0");
    LayerNorm *ln = l->priv;
    ln->eps = eps;
    l->out_shape = l->in_shape;
    layer_add_param(l, "scales", 1, 0, 1, (int64_t[]){l->in_shape.w});
    layer_add_param(l, "biases", 1, 0, 1, (int64_t[]){l->in_shape.w});
    /* mean, variance, then a multiply-add per value */
    l->flops = 5.0 * (double)shape_size(l->in_shape);
    return CDL_OK;
}

static void layernorm_init(Layer *l, Rng *rng)
{
    (void)rng;
    for (int j = 0; j < l->in_shape.w; j++) {
        l->params[P_SCALES].data[j] = 1;
        l->params[P_BIASES].data[j] = 0;
    }
}

static int layernorm_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    LayerNorm *ln = l->priv;
    const size_t rows = (size_t)batch * (size_t)l->in_shape.c * (size_t)l->in_shape.h;
    ln->mean = layer_state_floats(st, rows);
    ln->inv_std = layer_state_floats(st, rows);
    return CDL_OK;
}

/* Normalises row r of in into out ([n] each, n = w) and keeps its statistics. */
static void normalize_row(const Layer *l, const float *in, float *out, size_t r)
{
    const LayerNorm *ln = l->priv;
    const size_t n = (size_t)l->in_shape.w;
    const float *x = in + r * n, *scale = l->params[P_SCALES].data;
    const float *bias = l->params[P_BIASES].data;
    float *y = out + r * n;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t j = 0; j < n; j++)
        sum += x[j];
    const float mean = sum / (float)n;
    float squares = 0;
#pragma omp simd reduction(+ : squares)
    for (size_t j = 0; j < n; j++)
        squares += (x[j] - mean) * (x[j] - mean);
    const float inv_std = 1.0f / sqrtf(squares / (float)n + ln->eps);
#pragma omp simd
    for (size_t j = 0; j < n; j++)
        y[j] = (x[j] - mean) * inv_std * scale[j] + bias[j];
    ln->mean[r] = mean;
    ln->inv_std[r] = inv_std;
}

static void layernorm_forward(Layer *l, const StepContext *ctx)
{
    const float *in = l->in[0];
    const long rows = (long)ctx->batch * l->in_shape.c * l->in_shape.h;
#pragma omp parallel for schedule(static) if (rows * l->in_shape.w > LAYERNORM_PARALLEL_MIN)
    for (long r = 0; r < rows; r++)
        normalize_row(l, in, l->out, (size_t)r);
}

static void layernorm_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const float *in = l->in[0];
    const size_t tokens = (size_t)l->in_shape.c * (size_t)l->in_shape.h;
    for (int b = 0; b < ctx->batch; b++)
        normalize_row(l, in, l->out, (size_t)b * tokens + (size_t)t);
}

/* With x_hat the normalised input and g = dy * scales, per row of n values:
 *   dx = inv_std * (g - mean(g) - x_hat * mean(g * x_hat))
 *   dbiases += sum over rows of dy, dscales += sum over rows of dy * x_hat
 * The row pass overwrites l->delta (dy, no longer needed by then) with dy * x_hat, so that both
 * parameter gradients are plain column sums. */
static void layernorm_backward(Layer *l, const StepContext *ctx)
{
    const LayerNorm *ln = l->priv;
    const float *in = l->in[0], *scale = l->params[P_SCALES].data;
    float *dx_all = l->in_delta[0];
    const size_t n = (size_t)l->in_shape.w;
    const long rows = (long)ctx->batch * l->in_shape.c * l->in_shape.h;

    sum_rows_add(l->params[P_BIASES].grad, l->delta, (size_t)rows, n);
#pragma omp parallel for schedule(static) if (rows * (long)n > LAYERNORM_PARALLEL_MIN)
    for (long r = 0; r < rows; r++) {
        const float *x = in + r * n;
        float *dy = l->delta + r * n;
        const float mean = ln->mean[r], inv_std = ln->inv_std[r];
        float sum_g = 0, sum_g_x_hat = 0;
#pragma omp simd reduction(+ : sum_g, sum_g_x_hat)
        for (size_t j = 0; j < n; j++) {
            const float g = dy[j] * scale[j];
            sum_g += g;
            sum_g_x_hat += g * (x[j] - mean) * inv_std;
        }
        const float mean_g = sum_g / (float)n, mean_g_x_hat = sum_g_x_hat / (float)n;
        if (dx_all) {
            float *dx = dx_all + r * n;
#pragma omp simd
            for (size_t j = 0; j < n; j++)
                dx[j] +=
                    inv_std * (dy[j] * scale[j] - mean_g - (x[j] - mean) * inv_std * mean_g_x_hat);
        }
#pragma omp simd
        for (size_t j = 0; j < n; j++)
            dy[j] *= (x[j] - mean) * inv_std;
    }
    sum_rows_add(l->params[P_SCALES].grad, l->delta, (size_t)rows, n);
}

/* The normalisation over the last axis from ReduceMean, Sub, Mul, Sqrt and Div, which every
 * opset from 13 has (LayerNormalization only comes with opset 17). */
static int layernorm_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    static const char *const suffixes[] = {"mean",    "centered", "squares",    "variance", "eps",
                                           "var_eps", "std",      "normalized", "scaled",   NULL};
    char x[ONNX_NAME_MAX], v[9][ONNX_NAME_MAX], scales[ONNX_NAME_MAX], biases[ONNX_NAME_MAX];
    for (int k = 0; suffixes[k]; k++)
        onnx_name(v[k], l, suffixes[k]);
    enum { MEAN, CENTERED, SQUARES, VARIANCE, EPS, VAR_EPS, STD, NORMALIZED, SCALED };
    onnx_input_nchw(g, l, 0, x);
    onnx_param(g, l, P_SCALES, scales);
    onnx_param(g, l, P_BIASES, biases);
    onnx_scalar(g, v[EPS], ((const LayerNorm *)l->priv)->eps);
    const int64_t last[] = {-1};
    const OnnxAttr reduce[] = {onnx_attr_ints("axes", last, 1), onnx_attr_int("keepdims", 1)};
    onnx_node(g, "ReduceMean", 1, (const char *[]){x}, v[MEAN], 2, reduce);
    onnx_node(g, "Sub", 2, (const char *[]){x, v[MEAN]}, v[CENTERED], 0, NULL);
    onnx_node(g, "Mul", 2, (const char *[]){v[CENTERED], v[CENTERED]}, v[SQUARES], 0, NULL);
    onnx_node(g, "ReduceMean", 1, (const char *[]){v[SQUARES]}, v[VARIANCE], 2, reduce);
    onnx_node(g, "Add", 2, (const char *[]){v[VARIANCE], v[EPS]}, v[VAR_EPS], 0, NULL);
    onnx_node(g, "Sqrt", 1, (const char *[]){v[VAR_EPS]}, v[STD], 0, NULL);
    onnx_node(g, "Div", 2, (const char *[]){v[CENTERED], v[STD]}, v[NORMALIZED], 0, NULL);
    onnx_node(g, "Mul", 2, (const char *[]){v[NORMALIZED], scales}, v[SCALED], 0, NULL);
    onnx_node(g, "Add", 2, (const char *[]){v[SCALED], biases}, onnx_output(g, l, 0), 0, NULL);
    return CDL_OK;
}

const LayerType layernorm_layer = {
    .name = "layernorm",
    .priv_size = sizeof(LayerNorm),
    .parse = layernorm_parse,
    .init = layernorm_init,
    .export_onnx = layernorm_export_onnx,
    .splits_batch = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_layernorm_kernels = {
    .resize = layernorm_resize,
    .forward = layernorm_forward,
    .backward = layernorm_backward,
    .forward_at = layernorm_forward_at,
};
