/* [convolutional] on Winograd F(2x2, 3x3) (backend/cpu/winograd.h), the engine of [net] winograd=1
 * for a same 3x3 one-group layer where winograd_worth (conv.c chooses), in float32: the forward and
 * the input gradient (a Winograd convolution of delta with the flipped weights), and in a training
 * net whose mini-batch has [net] winograd_min_tiles output tiles the weight gradient too where
 * winograd_grad_worth (else the reference's). An inference net (no gradients) folds the batch
 * norm's running statistics into the weights before their transform (bias_norm_fold, as oneDNN's
 * layers do) and keeps the transformed weights and folded bias from one forward to the next while
 * the layer's parameters do not change; its inference forwards apply the bias, the activation
 * (winograd_fuses_activation's; others by layer_activate after) and a fused residual sum in the
 * output transform, one pass over the output instead of three (conv_winograd_fuse_sum).
 *
 *   in [batch][c][h][w] -> out [batch][filters][h][w], weights [filters][c][3][3]
 */
#include <string.h>

#include "backend/cpu/bias_norm.h"
#include "backend/cpu/conv.h"
#include "util/cache_lines.h"

/* Floats of all the layer's parameters: the weights, then the stage's. */
static size_t params_floats(const Layer *l)
{
    size_t n = 0;
    for (int i = 0; i < l->n_params; i++)
        n += l->params[i].count;
    return n;
}

/* Allocates wino.kept, kept_bias and seen for a winograd layer of an inference net (and marks them
 * stale), once for the largest size asked; without the memory each forward transforms. */
static void winograd_keep(const Layer *l, const Conv *cv, ConvWinograd *wg)
{
    wg->fresh = 0;
    const size_t params = params_floats(l),
                 transformed = winograd_weights_floats(cv->filters, l->in_shape.c),
                 floats =
                     l->params[CONV_WEIGHTS].grad ? 0 : transformed + (size_t)cv->filters + params;
    if (floats > wg->kept_floats) {
        free_lines(wg->kept);
        wg->kept = zeroed_lines(floats, sizeof *wg->kept);
        wg->kept_floats = wg->kept ? floats : 0;
    }
    wg->kept_bias = wg->kept ? wg->kept + transformed : NULL;
    wg->seen = wg->kept ? wg->kept_bias + cv->filters : NULL;
}

void conv_winograd_release(ConvCpu *cpu)
{
    free_lines(cpu->wino.kept);
}

/* Whether n floats of a and b differ in any bit, the threads comparing blocks. */
static int weights_differ(const float *a, const float *b, size_t n)
{
    int differ = 0;
#pragma omp parallel for schedule(static) reduction(| : differ) if (n > CONV_PARALLEL_MIN)
    for (size_t i = 0; i < n; i += CONV_COPY_BLOCK)
        differ |= memcmp(a + i, b + i,
                         (n - i < CONV_COPY_BLOCK ? n - i : CONV_COPY_BLOCK) * sizeof *a) != 0;
    return differ;
}

/* The forward's transformed weights: those kept, transformed again when the weights changed
 * since, or else transformed into u. Where the net says the weights are those of its last
 * forward (StepContext.same_weights: an inference net's forwards between loads) the kept ones
 * without comparing: the comparison read twice the weights' bytes at every forward (on resnet's
 * 256-channel 14x14 layers a tenth of the layer's time at batch 1). */
static const float *winograd_forward_weights(const Layer *l, const Conv *cv, ConvWinograd *wg,
                                             const StepContext *ctx)
{
    const Param *pw = &l->params[CONV_WEIGHTS];
    if (!wg->kept || pw->grad || wg->fold) { /* a folding layer keeps its folded weights only */
        winograd_weights(pw->data, cv->filters, l->in_shape.c, wg->u);
        return wg->u;
    }
    if (!wg->fresh || (!ctx->same_weights && weights_differ(wg->seen, pw->data, pw->count))) {
        winograd_weights(pw->data, cv->filters, l->in_shape.c, wg->kept);
        memcpy(wg->seen, pw->data, pw->count * sizeof *pw->data);
        wg->fresh = 1;
    }
    return wg->kept;
}

/* Whether the layer's parameters differ from seen (all of them, one after another), or with
 * copy 1 copies them there instead. */
static int params_seen(const Layer *l, float *seen, int copy)
{
    for (int i = 0; i < l->n_params; i++) {
        const Param *p = &l->params[i];
        if (copy)
            memcpy(seen, p->data, p->count * sizeof *seen);
        else if (weights_differ(seen, p->data, p->count))
            return 1;
        seen += p->count;
    }
    return 0;
}

/* A folding layer's transformed weights, *bias its bias [filters] (NULL: none): the batch norm's
 * running statistics folded into the weights and bias (bias_norm_fold) before the transform, those
 * kept where the parameters are those seen (unchanged since, or StepContext.same_weights: see
 * winograd_forward_weights), else made again into kept (or u and the work, without kept memory). */
static const float *winograd_folded_weights(Layer *l, const Conv *cv, ConvWinograd *wg,
                                            const StepContext *ctx, const float **bias)
{
    const BiasNorm *bn = &cv->stage;
    const Param *pw = &l->params[CONV_WEIGHTS], *biases = bias_norm_biases(bn, l);
    float *u = wg->kept ? wg->kept : wg->u, *b_fold = wg->kept ? wg->kept_bias : wg->b_fold;
    *bias = bn->batch_normalize ? b_fold : biases ? biases->data : NULL;
    if (wg->kept && wg->fresh && (ctx->same_weights || !params_seen(l, wg->seen, 0)))
        return u;
    const float *w = pw->data;
    if (bn->batch_normalize) {
        bias_norm_fold(bn, l, ctx, w, pw->count / (size_t)cv->filters, wg->w_fold, b_fold);
        w = wg->w_fold;
    }
    winograd_weights(w, cv->filters, l->in_shape.c, u);
    if (wg->kept) {
        params_seen(l, wg->seen, 1);
        wg->fresh = 1;
    }
    return u;
}

/* Plans the winograd layer (wino.on) for batch on threads: its transformed weights and the
 * threads' scratch, which the input gradient's swapped plan needs as much of (and the weight
 * gradient's, wino.grad). bf16 and int8 layers stay on the reference. */
void conv_winograd_resize(Layer *l, int batch, int threads, LayerState *st)
{
    const Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    ConvWinograd *wg = &cpu->wino;
    const Shape in = l->in_shape;
    const int training = l->params[CONV_WEIGHTS].grad != NULL;
    wg->on = cpu->wanted == CONV_ENGINE_WINO && !l->quant && l->precision == GEMM_FP32;
    wg->grad =
        wg->on && training && wg->training && winograd_grad_worth(in.c, cv->filters, in.h, in.w);
    wg->u = layer_work_floats(st, wg->on ? winograd_weights_floats(cv->filters, in.c) : 0);
    if (!wg->on)
        return;
    l->engine = training && !wg->training ? "ref" : "wino"; /* what its training passes run */
    wg->fold = !training;
    const int bn = wg->fold && cv->stage.batch_normalize;
    wg->w_fold = layer_work_floats(st, bn ? l->params[CONV_WEIGHTS].count : 0);
    wg->b_fold = layer_work_floats(st, bn ? (size_t)cv->filters : 0);
    winograd_keep(l, cv, wg);
    wg->plan = winograd_plan(batch, in.c, cv->filters, in.h, in.w, threads);
    size_t floats = winograd_scratch_floats(&wg->plan);
    if (wg->grad && winograd_grad_scratch_floats(&wg->plan) > floats)
        floats = winograd_grad_scratch_floats(&wg->plan);
    const size_t per_sample = (floats + (size_t)batch - 1) / (size_t)batch;
    if (per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
}

int conv_winograd_runs(const Layer *l, const StepContext *ctx)
{
    const ConvWinograd *wg = &((const Conv *)l->priv)->cpu->wino;
    return wg->on && conv_precision(l) == GEMM_FP32 && !l->quant && (!ctx->train || wg->training);
}

int conv_winograd_forward(Layer *l, const StepContext *ctx, const float *x, float *y)
{
    const Conv *cv = l->priv;
    ConvWinograd *wg = &cv->cpu->wino;
    if (!wg->fold || ctx->train) {
        winograd_conv(&wg->plan, winograd_forward_weights(l, cv, wg, ctx), x, y, NULL,
                      ctx->exec->workspace);
        return 0;
    }
    const ActivationKind act = wg->sum_act ? (ActivationKind)(wg->sum_act - 1) : l->activation;
    const int fused = winograd_fuses_activation(act);
    WinogradOutput out = {NULL, wg->sum_act ? l->sum_into->in[1] : NULL,
                          fused ? act : CDL_ACT_LINEAR};
    const float *u = winograd_folded_weights(l, cv, wg, ctx, &out.bias);
    winograd_conv(&wg->plan, u, x,
                  wg->sum_act ? l->sum_into->out
                  : fused     ? l->out
                              : layer_activation_input(l),
                  &out, ctx->exec->workspace);
    if (!fused)
        layer_activate(l, ctx->batch);
    return 1;
}

int conv_winograd_fuse_sum(Layer *l, int act)
{
    ConvWinograd *wg = &((Conv *)l->priv)->cpu->wino;
    wg->sum_act = 0;
    if (act < 0 || !wg->on || !wg->fold || l->activation != CDL_ACT_LINEAR ||
        !winograd_fuses_activation((ActivationKind)act) || l->blocked >> LAYER_OUT_BIT & 1)
        return 0;
    wg->sum_act = act + 1;
    return 1;
}

void conv_winograd_weight_grads(Layer *l, const StepContext *ctx)
{
    const ConvWinograd *wg = &((const Conv *)l->priv)->cpu->wino;
    winograd_weight_grads(&wg->plan, l->in[0], l->delta, l->params[CONV_WEIGHTS].grad,
                          ctx->exec->workspace);
}

void conv_winograd_input_grads(Layer *l, const StepContext *ctx, float *dx, int fresh)
{
    const ConvCpu *cpu = ((const Conv *)l->priv)->cpu;
    const WinogradPlan *p = &cpu->wino.plan;
    const WinogradPlan dp = winograd_plan(ctx->batch, p->k, p->c, p->h, p->w, p->threads);
    winograd_weights(cpu->ref.w_flipped, p->c, p->k, cpu->wino.u);
    winograd_conv(&dp, cpu->wino.u, l->delta, dx, fresh ? NULL : &(WinogradOutput){.add = dx},
                  ctx->exec->workspace);
}
