/* [convolutional]: 2-D convolution with groups, optional batch norm and an activation.
 *
 *   in  [batch][c][h][w]
 *   out [batch][filters][out_h][out_w], out_h = (h + 2*padding - size)/stride + 1
 *   weights [filters][c/groups][size][size]; biases [filters]
 *   with batch_normalize: scales, biases (the BN shift; no conv bias), rolling_mean,
 *   rolling_variance [filters]
 *
 * Each image and group is one gemm: out_g[filters/g][out_hw] = W_g * cols, with cols the
 * im2col unfolding of the group's input channels (the input itself for a 1x1, stride 1,
 * unpadded convolution). */
#include <math.h>
#include <stdlib.h>

#include "core/layer.h"
#include "core/net.h"
#include "ops/batchnorm.h"
#include "ops/gemm.h"
#include "ops/im2col.h"

/* Positions in l->params, in the order parse declares them. */
enum { P_WEIGHTS, P_BIASES, P_SCALES, P_ROLLING_MEAN, P_ROLLING_VARIANCE };

typedef struct Conv {
    int filters, size, stride, padding, groups, batch_normalize;
    int direct;     /* 1x1, stride 1, no padding: the input is its own column matrix */
    int batch;      /* batch the buffers below are sized for */
    float *x_hat;   /* [batch][filters][out_hw], batch norm only */
    float *inv_std; /* [filters] */
} Conv;

/* The line of key when the section sets it, else the section header's. */
static int key_line(CfgSection *s, const char *key)
{
    const CfgEntry *en = cfg_find(s, key);
    return en ? en->line : s->line;
}

static int conv_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int filters, size, stride, pad, padding, groups, bn;
    int rc = cfg_get_int(cfg, s, "filters", 1, &filters, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "size", 1, &size, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "stride", 1, &stride, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "pad", 0, &pad, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "padding", pad ? size / 2 : 0, &padding, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "groups", 1, &groups, e);
    if (!rc)
        rc = cfg_get_int(cfg, s, "batch_normalize", 0, &bn, e);
    if (!rc)
        rc = layer_parse_activation(l, cfg, s, CDL_ACT_LOGISTIC, e);
    if (rc)
        return rc;

    const char *path = cfg->path;
    const Shape in = l->in_shape;
    if (filters < 1)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d: [%s] filters=%d: expected at least 1",
                         path, key_line(s, "filters"), l->index, s->name, filters);
    if (size < 1)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d: [%s] size=%d: expected at least 1", path,
                         key_line(s, "size"), l->index, s->name, size);
    if (stride < 1)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d: [%s] stride=%d: expected at least 1",
                         path, key_line(s, "stride"), l->index, s->name, stride);
    if (padding < 0)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d: [%s] padding=%d: expected 0 or more",
                         path, key_line(s, "padding"), l->index, s->name, padding);
    if (groups < 1 || in.c % groups || filters % groups)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] groups=%d must divide both the input channels "
                         "(%d) and filters (%d)",
                         path, key_line(s, "groups"), l->index, s->name, groups, in.c, filters);
    const int out_h = conv_out_size(in.h, size, stride, padding);
    const int out_w = conv_out_size(in.w, size, stride, padding);
    if (out_h < 1 || out_w < 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] output would be empty: input %dx%d, size=%d, "
                         "stride=%d, padding=%d",
                         path, s->line, l->index, s->name, in.h, in.w, size, stride, padding);

    Conv *cv = calloc(1, sizeof *cv);
    if (!cv)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    cv->filters = filters;
    cv->size = size;
    cv->stride = stride;
    cv->padding = padding;
    cv->groups = groups;
    cv->batch_normalize = bn != 0;
    cv->direct = size == 1 && stride == 1 && padding == 0;
    l->priv = cv;

    l->out_shape = (Shape){filters, out_h, out_w};
    const size_t out_hw = (size_t)out_h * out_w;
    const size_t kdim = (size_t)(in.c / groups) * size * size;
    layer_add_param(l, "weights", (size_t)filters * kdim, 1, 1);
    layer_add_param(l, "biases", (size_t)filters, 1, 0);
    if (cv->batch_normalize) {
        layer_add_param(l, "scales", (size_t)filters, 1, 0);
        layer_add_param(l, "rolling_mean", (size_t)filters, 0, 0);
        layer_add_param(l, "rolling_variance", (size_t)filters, 0, 0);
    }
    l->flops = 2.0 * (double)out_hw * filters * (double)kdim;
    l->scratch_per_sample = cv->direct ? 0 : kdim * out_hw;
    return CDL_OK;
}

static void conv_init(Layer *l, Rng *rng)
{
    const Conv *cv = l->priv;
    Param *w = &l->params[P_WEIGHTS];
    const int fan_in = (l->in_shape.c / cv->groups) * cv->size * cv->size;
    const float std = sqrtf(2.0f / (float)fan_in);
    for (size_t i = 0; i < w->count; i++)
        w->data[i] = std * rng_normal(rng);
    for (size_t i = 0; i < l->params[P_BIASES].count; i++)
        l->params[P_BIASES].data[i] = 0.0f;
    if (cv->batch_normalize) {
        for (int i = 0; i < cv->filters; i++) {
            l->params[P_SCALES].data[i] = 1.0f;
            l->params[P_ROLLING_MEAN].data[i] = 0.0f;
            l->params[P_ROLLING_VARIANCE].data[i] = 1.0f;
        }
    }
}

static int conv_resize(Layer *l, int batch, Error *e)
{
    Conv *cv = l->priv;
    if (!cv->batch_normalize || batch == cv->batch)
        return CDL_OK;
    free(cv->x_hat);
    free(cv->inv_std);
    cv->x_hat = malloc((size_t)batch * shape_size(l->out_shape) * sizeof *cv->x_hat);
    cv->inv_std = malloc((size_t)cv->filters * sizeof *cv->inv_std);
    cv->batch = batch;
    if (!cv->x_hat || !cv->inv_std) {
        cv->batch = 0;
        return error_set(e, CDL_ERUNTIME, "layer %d: out of memory for batch %d", l->index, batch);
    }
    return CDL_OK;
}

static void conv_forward(Layer *l, Net *net)
{
    const Conv *cv = l->priv;
    const int batch = net->batch, groups = cv->groups;
    const Shape in = l->in_shape;
    const int cg = in.c / groups, fg = cv->filters / groups;
    const int out_hw = l->out_shape.h * l->out_shape.w;
    const int kdim = cg * cv->size * cv->size;
    const size_t in_size = shape_size(in), out_size = shape_size(l->out_shape);
    const float *x = net_layer_input(net, l, 0);
    const float *w = l->params[P_WEIGHTS].data;

    for (int b = 0; b < batch; b++) {
        for (int g = 0; g < groups; g++) {
            const float *xg = x + b * in_size + (size_t)g * cg * in.h * in.w;
            const float *cols = xg;
            if (!cv->direct) {
                im2col(xg, cg, in.h, in.w, cv->size, cv->stride, cv->padding, net->scratch,
                       (size_t)out_hw);
                cols = net->scratch;
            }
            gemm(0, 0, fg, out_hw, kdim, 1.0f, w + (size_t)g * fg * kdim, kdim, cols, out_hw, 0.0f,
                 l->out + b * out_size + (size_t)g * fg * out_hw, out_hw);
        }
    }

    const float *bias = l->params[P_BIASES].data;
    if (cv->batch_normalize) {
        const float *scale = l->params[P_SCALES].data;
        float *mean = l->params[P_ROLLING_MEAN].data, *var = l->params[P_ROLLING_VARIANCE].data;
        if (net->train)
            batchnorm_forward_train(l->out, l->out, cv->x_hat, cv->inv_std, scale, bias, mean, var,
                                    batch, cv->filters, out_hw, net->hyper.bn_momentum,
                                    net->hyper.bn_eps);
        else
            batchnorm_forward_eval(l->out, l->out, scale, bias, mean, var, batch, cv->filters,
                                   out_hw, net->hyper.bn_eps);
    } else {
        const int rows = batch * cv->filters;
#pragma omp parallel for schedule(static) if ((size_t)rows * out_hw >= 16384)
        for (int r = 0; r < rows; r++) {
            float *o = l->out + (size_t)r * out_hw;
            const float bv = bias[r % cv->filters];
#pragma omp simd
            for (int i = 0; i < out_hw; i++)
                o[i] += bv;
        }
    }
    layer_activate(l, batch);
}

/* dbias[f] += sum over the batch and positions of delta[b][f][.] */
static void add_bias_grads(const float *delta, float *dbias, int batch, int filters, int out_hw)
{
#pragma omp parallel for schedule(static) if ((size_t)batch * filters * out_hw >= 16384)
    for (int f = 0; f < filters; f++) {
        double sum = 0.0;
        for (int b = 0; b < batch; b++) {
            const float *d = delta + ((size_t)b * filters + f) * out_hw;
#pragma omp simd reduction(+ : sum)
            for (int i = 0; i < out_hw; i++)
                sum += d[i];
        }
        dbias[f] += (float)sum;
    }
}

static void conv_backward(Layer *l, Net *net)
{
    const Conv *cv = l->priv;
    const int batch = net->batch, groups = cv->groups;
    const Shape in = l->in_shape;
    const int cg = in.c / groups, fg = cv->filters / groups;
    const int out_hw = l->out_shape.h * l->out_shape.w;
    const int kdim = cg * cv->size * cv->size;
    const size_t in_size = shape_size(in), out_size = shape_size(l->out_shape);
    const size_t in_group = (size_t)cg * in.h * in.w;

    layer_activation_backward(l, batch);
    if (cv->batch_normalize)
        batchnorm_backward(l->delta, cv->x_hat, cv->inv_std, l->params[P_SCALES].data,
                           l->params[P_SCALES].grad, l->params[P_BIASES].grad, l->delta, batch,
                           cv->filters, out_hw);
    else
        add_bias_grads(l->delta, l->params[P_BIASES].grad, batch, cv->filters, out_hw);

    const float *x = net_layer_input(net, l, 0);
    float *dx = net_layer_input_delta(net, l, 0);
    const float *w = l->params[P_WEIGHTS].data;
    float *dw = l->params[P_WEIGHTS].grad;
    for (int b = 0; b < batch; b++) {
        for (int g = 0; g < groups; g++) {
            const float *xg = x + b * in_size + g * in_group;
            const float *dg = l->delta + b * out_size + (size_t)g * fg * out_hw;
            const float *wg = w + (size_t)g * fg * kdim;
            const float *cols = xg;
            if (!cv->direct) {
                im2col(xg, cg, in.h, in.w, cv->size, cv->stride, cv->padding, net->scratch,
                       (size_t)out_hw);
                cols = net->scratch;
            }
            /* dW_g[fg][kdim] += delta_g[fg][out_hw] * cols^T */
            gemm(0, 1, fg, kdim, out_hw, 1.0f, dg, out_hw, cols, out_hw, 1.0f,
                 dw + (size_t)g * fg * kdim, kdim);
            if (!dx)
                continue;
            float *dxg = dx + b * in_size + g * in_group;
            /* dcols[kdim][out_hw] = W_g^T * delta_g, folded back onto the input */
            if (cv->direct) {
                gemm(1, 0, kdim, out_hw, fg, 1.0f, wg, kdim, dg, out_hw, 1.0f, dxg, out_hw);
            } else {
                gemm(1, 0, kdim, out_hw, fg, 1.0f, wg, kdim, dg, out_hw, 0.0f, net->scratch,
                     out_hw);
                col2im(net->scratch, cg, in.h, in.w, cv->size, cv->stride, cv->padding,
                       (size_t)out_hw, dxg);
            }
        }
    }
}

static void conv_destroy(Layer *l)
{
    Conv *cv = l->priv;
    if (!cv)
        return;
    free(cv->x_hat);
    free(cv->inv_std);
    free(cv);
    l->priv = NULL;
}

const LayerType convolutional_layer = {
    .name = "convolutional",
    .parse = conv_parse,
    .init = conv_init,
    .resize = conv_resize,
    .forward = conv_forward,
    .backward = conv_backward,
    .destroy = conv_destroy,
};
