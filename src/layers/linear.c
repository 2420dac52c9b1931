/* [linear]: a dense layer applied to every token (row) on its own, as torch.nn.Linear on
 * [B][T][C], with an optional activation.
 *
 *   in  [batch][rows][inputs]  (rows = c*h: the T tokens of a sequence net; inputs = w)
 *   out [batch][rows][output]  out[b][r] = act(in[b][r] W^T + biases)
 *   weights [output][inputs], biases [output]: U(-1/sqrt(inputs), 1/sqrt(inputs)) as nn.Linear
 *
 * With tie=1 the layer has no weights of its own: W is the [embedding] weights [vocab][C] of
 * layer 0 (weight tying, as GPT-2's output projection), so output = vocab and inputs = C; the
 * forward reads them and the backward adds into their gradient.
 *
 * In float32 (not int8, not bf16) the forward and the input gradient run on ops/gemm_rows: W
 * packed once per pass (ops/gemm_packed), the biases and the activation (its derivative in the
 * backward, with the biases' gradient) fused into the product's blocks of rows; the weight
 * gradient is ops/gemm_tn's (an own kernel with AVX-512, else OpenBLAS).
 *
 * precision=bf16 (Layer.precision): the products take the weights, the input and delta rounded
 * to bf16 (gemm_operand); the biases and the activation stay float32. */
#include <math.h>
#include <string.h>

#include "core/layer_quant.h"
#include "core/net.h"
#include "core/onnx_graph.h"
#include "ops/gemm.h"
#include "ops/gemm_packed.h"
#include "ops/gemm_rows.h"
#include "ops/gemm_tn.h"
#include "ops/qgemm.h"
#include "ops/sum_rows.h"

/* Below this many values a parallel region costs more than it saves. */
#define LINEAR_PARALLEL_MIN 32768

typedef struct Linear {
    int inputs, outputs; /* values per row */
    const Param *tied;   /* layer 0's [embedding] weights W, bound at parse; NULL: its own */
    int has_biases;
    unsigned char *qwork; /* int8 weights (l->quant): qgemm_float's work for every row */
    /* precision=bf16: the weights as the last forward rounded them, and the input rows of a pass
     * [batch][rows][inputs] (of forward_at: [batch][inputs]) */
    float *w_bf16, *x_bf16;
    /* float32 only, kept between the passes of a step (StepContext.same_weights): W^T for the
     * forward and W for the backward, as gemm_pack packs them */
    float *w_packed, *w_packed_back;
    float *bias_sums; /* work, float32 with biases: gemm_act_backward's sums of delta's blocks */
} Linear;

/* Checks tie=1 against layer 0, which must be an [embedding] of vocab `outputs` and C `inputs`. */
static int check_tie(const Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, int outputs,
                     Error *e)
{
    const CfgWhere where = cfg_where(cfg, s, cfg_find(s, "tie"));
    if (l->index == 0 || !net->layers[0].type->reads_token_ids)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s] tie=1 uses the weights of an [embedding] first "
                         "layer, and this net has none",
                         where.text, l->index, s->name);
    const Layer *emb = &net->layers[0];
    const int channels = emb->out_shape.w;
    const int vocab = (int)(emb->params[0].count / (size_t)channels);
    if (outputs != vocab || l->in_shape.w != channels)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s] tie=1 needs output=%d (the [embedding]'s vocab) "
                         "and an input of %d values per token (its output), not output=%d and "
                         "%d inputs",
                         where.text, l->index, s->name, vocab, channels, outputs, l->in_shape.w);
    return CDL_OK;
}

static int linear_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int outputs, has_biases, tied;
    int st = cfg_get_int(cfg, s, "output", net->vocab, &outputs, e);
    st = st ? st : cfg_get_flag(cfg, s, "bias", 1, &has_biases, e);
    st = st ? st : cfg_get_flag(cfg, s, "tie", 0, &tied, e);
    st = st ? st : layer_parse_activation(l, cfg, s, CDL_ACT_LINEAR, e);
    if (st)
        return st;
    const CfgEntry *out_en = cfg_find(s, "output");
    if (!out_en && outputs < 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d [%s] needs key 'output' (its default, [net] vocab=, is "
                         "not set)",
                         cfg->path, s->line, l->index, s->name);
    if (outputs < 1)
        return cfg_require_min(cfg, s, "output", outputs, 1, e);
    if (tied && (st = check_tie(l, cfg, s, net, outputs, e)))
        return st;

    Linear *li = l->priv;
    li->inputs = l->in_shape.w;
    li->outputs = outputs;
    li->tied = tied ? &net->layers[0].params[0] : NULL;
    li->has_biases = has_biases;
    l->out_shape = (Shape){l->in_shape.c, l->in_shape.h, outputs};
    if (!tied)
        layer_add_param(l, "weights", 1, 1, 2, (int64_t[]){outputs, li->inputs});
    if (has_biases)
        layer_add_param(l, "biases", 1, 0, 1, (int64_t[]){outputs});
    l->flops = 2.0 * l->in_shape.c * l->in_shape.h * (double)li->inputs * outputs;
    return CDL_OK;
}

/* The weights W [output][inputs]: the layer's own, or the tied [embedding]'s. */
static const Param *weights_of(Layer *l)
{
    const Linear *li = l->priv;
    return li->tied ? li->tied : layer_param(l, "weights");
}

/* As PyTorch's nn.Linear: weights (unless tied) and biases ~ U(-1/sqrt(inputs), 1/sqrt(inputs)). */
static void linear_init(Layer *l, Rng *rng)
{
    const Linear *li = l->priv;
    layer_init_uniform(l, rng, 1.0f / sqrtf((float)li->inputs));
}

/* 1 when the forward and the input gradient run on ops/gemm_rows (float32 products). */
static int packed_path(const Layer *l)
{
    return !l->quant && l->precision == GEMM_FP32;
}

static int linear_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Linear *li = l->priv;
    const int rows = batch * l->in_shape.c * l->in_shape.h;
    li->qwork =
        layer_state_bytes(st, l->quant ? qgemm_work_bytes(rows, li->outputs, li->inputs) : 0);
    const int bf16 = l->precision == GEMM_BF16 && !l->quant;
    li->w_bf16 = layer_state_floats(st, bf16 ? (size_t)li->outputs * li->inputs : 0);
    li->x_bf16 = layer_state_floats(st, bf16 ? (size_t)rows * li->inputs : 0);
    const size_t fwd = gemm_packed_floats(li->inputs, li->outputs),
                 bwd = gemm_packed_floats(li->outputs, li->inputs);
    li->w_packed = layer_state_floats(st, packed_path(l) ? fwd : 0);
    li->w_packed_back = layer_state_floats(st, packed_path(l) ? bwd : 0);
    li->bias_sums = layer_work_floats(st, packed_path(l) && li->has_biases
                                              ? gemm_act_backward_sums_floats(rows, li->outputs)
                                              : 0);
    return CDL_OK;
}

/* Tied weights belong to the [embedding], which reads them as floats. */
static int linear_quant_weights(const Layer *l)
{
    const Linear *li = l->priv;
    return li->tied ? -1 : 0;
}

/* y[rows][outputs] = x[rows][inputs] W^T + biases, rows strided by x_stride and y_stride; in bf16
 * with the weights forward rounded and x's rows rounded into x_bf16 first. */
static void linear_rows(Layer *l, const float *x, int x_stride, float *y, int y_stride, int rows)
{
    const Linear *li = l->priv;
    const Param *biases = layer_param(l, "biases");
    if (l->quant) {
        const QuantParams xq =
            layer_quant_input(l->quant, x, (size_t)rows, (size_t)li->inputs, (size_t)x_stride);
        qgemm_float(&l->quant->matrix, xq, rows, x, x_stride, QGEMM_ROWS, y, y_stride, QGEMM_ROWS,
                    li->qwork);
        for (int r = 0; biases && r < rows; r++)
            for (int j = 0; j < li->outputs; j++)
                y[(size_t)r * y_stride + j] += biases->data[j];
        return;
    }
    if (biases) {
#pragma omp parallel for schedule(static) if ((long)rows * li->outputs > LINEAR_PARALLEL_MIN)
        for (int r = 0; r < rows; r++)
            memcpy(y + (size_t)r * y_stride, biases->data, (size_t)li->outputs * sizeof *y);
    }
    const float *w = weights_of(l)->data;
    if (l->precision == GEMM_BF16) {
        for (int r = 0; r < rows; r++)
            gemm_operand(GEMM_BF16, x + (size_t)r * x_stride, (size_t)li->inputs,
                         li->x_bf16 + (size_t)r * li->inputs);
        x = li->x_bf16, x_stride = li->inputs, w = li->w_bf16;
    }
    gemm(0, 1, rows, li->outputs, li->inputs, 1.0f, x, x_stride, w, li->inputs,
         biases ? 1.0f : 0.0f, y, y_stride);
}

static void linear_forward(Layer *l, const StepContext *ctx)
{
    const Linear *li = l->priv;
    const int rows = ctx->batch * l->in_shape.c * l->in_shape.h;
    const Param *w = weights_of(l);
    if (packed_path(l)) {
        const Param *biases = layer_param(l, "biases");
        if (!ctx->same_weights)
            gemm_pack(1, li->inputs, li->outputs, w->data, li->inputs, li->w_packed);
        gemm_bias_act(rows, li->outputs, li->inputs, l->in[0], li->inputs, li->w_packed,
                      biases ? biases->data : NULL, l->activation, layer_activation_input(l),
                      l->out);
        return;
    }
    gemm_operand(l->quant ? GEMM_FP32 : l->precision, w->data, w->count, li->w_bf16);
    linear_rows(l, l->in[0], li->inputs, layer_activation_input(l), li->outputs, rows);
    layer_activate(l, ctx->batch);
}

static void linear_forward_at(Layer *l, const StepContext *ctx, int t)
{
    const Linear *li = l->priv;
    const int in_sample = (int)shape_size(l->in_shape), out_sample = (int)shape_size(l->out_shape);
    linear_rows(l, l->in[0] + (size_t)t * li->inputs, in_sample,
                layer_activation_input(l) + (size_t)t * li->outputs, out_sample, ctx->batch);
    layer_activate_row(l, ctx->batch, t);
}

static void linear_backward(Layer *l, const StepContext *ctx)
{
    const Linear *li = l->priv;
    const int rows = ctx->batch * l->in_shape.c * l->in_shape.h;
    const int inputs = li->inputs, outputs = li->outputs;
    const Param *biases = layer_param(l, "biases"), *weights = weights_of(l);
    float *dx = l->in_delta[0];
    const float dx_beta = layer_input_delta_beta(l, 0);
    if (packed_path(l)) {
        /* delta = dL/d(pre), the biases' sums and dx += delta W block by block; then W's sums. */
        if (!ctx->same_weights)
            gemm_pack(0, outputs, inputs, weights->data, inputs, li->w_packed_back);
        gemm_act_backward(rows, inputs, outputs, l->delta, l->pre, l->out, l->activation,
                          li->w_packed_back, dx_beta, dx, biases ? biases->grad : NULL,
                          li->bias_sums);
        dx = NULL;
    } else {
        layer_activation_backward(l, ctx->batch);
        if (biases)
            sum_rows_add(biases->grad, l->delta, (size_t)rows, (size_t)outputs);
    }
    /* The biases took their gradients: only the products read delta from here. */
    const float *delta = gemm_operand(l->precision, l->delta, (size_t)rows * outputs, l->delta);
    const int bf16 = l->precision == GEMM_BF16;
    const float *x = bf16 ? li->x_bf16 : l->in[0], *w = bf16 ? li->w_bf16 : weights->data;
    /* dW[outputs][inputs] += delta^T x (ops/gemm_tn) */
    gemm_tn(outputs, inputs, rows, delta, outputs, x, inputs, 1.0f, weights->grad, inputs);
    /* dx[rows][inputs] += delta W (unless ops/gemm_rows took it) */
    if (dx)
        gemm(0, 0, rows, inputs, outputs, 1.0f, delta, outputs, w, inputs, dx_beta, dx, inputs);
}

/* MatMul by the transposed weights (layer 0's, which the [embedding] exported, when tied), the
 * biases, then the activation. */
static int linear_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)e;
    const Linear *li = l->priv;
    char x[ONNX_NAME_MAX], w[ONNX_NAME_MAX], b[ONNX_NAME_MAX], pre[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    if (li->tied)
        onnx_name(w, &net->layers[0], li->tied->name);
    else
        onnx_param(g, l, 0, w);
    if (li->has_biases)
        onnx_param(g, l, li->tied ? 0 : 1, b);
    const char *out = onnx_output(g, l, 0);
    onnx_activation_input(pre, l->activation, out);
    onnx_linear(g, x, w, li->has_biases ? b : NULL, pre);
    onnx_activation(g, l->activation, pre, out);
    return CDL_OK;
}

const LayerType linear_layer = {
    .name = "linear",
    .priv_size = sizeof(Linear),
    .parse = linear_parse,
    .init = linear_init,
    .export_onnx = linear_export_onnx,
    .quant_weights = linear_quant_weights,
    .backward_ignores_output = 1,
    .writes_input_delta = 1,
    .splits_batch = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_linear_kernels = {
    .resize = linear_resize,
    .forward = linear_forward,
    .backward = linear_backward,
    .forward_at = linear_forward_at,
};
