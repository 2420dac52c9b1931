/* [convolutional] on Winograd F(2x2, 3x3) (backend/cpu/winograd.h), the engine of [net] winograd=1
 * for a same 3x3 one-group layer where winograd_worth (conv.c chooses), in float32: the forward and
 * the input gradient (a Winograd convolution of delta with the flipped weights), and in a training
 * net whose mini-batch has [net] winograd_min_tiles output tiles the weight gradient too where
 * winograd_grad_worth (else the reference's). An inference net keeps the transformed weights
 * from one forward to the next while the weights do not change.
 *
 *   in [batch][c][h][w] -> out [batch][filters][h][w], weights [filters][c][3][3]
 */
#include <string.h>

#include "backend/cpu/conv.h"
#include "util/cache_lines.h"

/* Allocates wino.kept and seen for a winograd layer of an inference net (and marks them stale),
 * once for the largest size asked; without the memory each forward transforms. */
static void winograd_keep(const Layer *l, const Conv *cv, ConvWinograd *wg)
{
    wg->fresh = 0;
    const size_t weights = l->params[CONV_WEIGHTS].count,
                 floats = l->params[CONV_WEIGHTS].grad
                              ? 0
                              : winograd_weights_floats(cv->filters, l->in_shape.c) + weights;
    if (floats <= wg->kept_floats)
        return;
    free_lines(wg->kept);
    wg->kept = zeroed_lines(floats, sizeof *wg->kept);
    wg->kept_floats = wg->kept ? floats : 0;
    wg->seen = wg->kept ? wg->kept + floats - weights : NULL;
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
    if (!wg->kept || pw->grad) {
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

void conv_winograd_forward(Layer *l, const StepContext *ctx, const float *x, float *y)
{
    const Conv *cv = l->priv;
    ConvWinograd *wg = &cv->cpu->wino;
    winograd_conv(&wg->plan, winograd_forward_weights(l, cv, wg, ctx), x, y, 0,
                  ctx->exec->workspace);
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
    winograd_conv(&dp, cpu->wino.u, l->delta, dx, !fresh, ctx->exec->workspace);
}
