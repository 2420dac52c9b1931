/* SGD, Adam and AdamW over the parameter slab, with gradient clipping and the weights' EMA. */
#include "train/optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/ema.h"
#include "util/cache_lines.h"

/* Below this many values a parallel region costs more than it saves. */
#define OPTIMIZER_PARALLEL_MIN 65536

size_t optimizer_state_floats(OptimizerKind kind, size_t n_params)
{
    return kind == CDL_OPT_SGD ? n_params : 2 * n_params;
}

int optimizer_alloc(Optimizer *o, const Net *net, Error *e)
{
    memset(o, 0, sizeof *o);
    int st = train_settings_read(&net->cfg, &o->settings, e);
    if (st)
        return st;
    o->kind = o->settings.optimizer;
    o->slab_floats = optimizer_state_floats(o->kind, net->n_params);
    o->slab = zeroed_lines(o->slab_floats + 1, sizeof *o->slab);
    if (o->settings.ema > 0 && o->slab)
        o->ema = zeroed_lines(ema_floats(net) + 1, sizeof *o->ema);
    if (!o->slab || (o->settings.ema > 0 && !o->ema))
        return error_set(e, CDL_ERUNTIME, "out of memory for the %s state of %zu parameters",
                         train_optimizer_name(o->kind), net->n_params);
    return CDL_OK;
}

int optimizer_init(Optimizer *o, const Net *net, Error *e)
{
    int st = optimizer_alloc(o, net, e);
    if (!st && o->ema)
        ema_start(o->ema, net);
    return st;
}

void optimizer_free(Optimizer *o)
{
    free_lines(o->slab);
    free_lines(o->ema);
    memset(o, 0, sizeof *o);
}

/* Scales the gradients so that their global L2 norm is at most max_norm, as
 * torch.nn.utils.clip_grad_norm_. The sum runs in double in a fixed order, so the result does
 * not depend on the thread count. */
static void clip_gradients(Net *net, float max_norm)
{
    const float *g = net->grads;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t i = 0; i < net->n_params; i++)
        sum += (double)g[i] * (double)g[i];
    const double coef = max_norm / (sqrt(sum) + 1e-6);
    if (coef >= 1)
        return;
    const float scale = (float)coef;
    const long n = (long)net->n_params;
#pragma omp parallel for simd if (parallel : n > OPTIMIZER_PARALLEL_MIN) schedule(static)
    for (long i = 0; i < n; i++)
        net->grads[i] *= scale;
}

/* p's weight decay: on flagged tensors, or on all of them with decay_bn_bias=1. */
static float param_decay(const TrainSettings *h, const Param *p)
{
    return p->decay || h->decay_bn_bias ? h->decay : 0.0f;
}

/* SGD on p; v: its velocity. */
static void sgd_update(const TrainSettings *h, Param *p, float *v, float lr)
{
    const float momentum = h->momentum, decay = param_decay(h, p);
    /* The step is g_weight*g + v_weight*v: g + momentum*v (nesterov) or v. */
    const float g_weight = h->nesterov ? 1.0f : 0.0f, v_weight = h->nesterov ? momentum : 1.0f;
    float *w = p->data;
    const float *grad = p->grad;
    const long n = (long)p->count;
#pragma omp parallel for simd if (parallel : n > OPTIMIZER_PARALLEL_MIN) schedule(static)
    for (long j = 0; j < n; j++) {
        const float g = grad[j] + decay * w[j];
        const float vj = momentum * v[j] + g;
        v[j] = vj;
        w[j] -= lr * (g_weight * g + v_weight * vj);
    }
}

/* The quantities of Adam step t (from 1) that do not depend on the parameter. */
typedef struct AdamStep {
    float lr, step_size, bias2_sqrt; /* lr/(1-b1^t), sqrt(1-b2^t) */
    int decoupled;                   /* adamw */
} AdamStep;

/* Adam or AdamW on p; m, v: its moments. */
static void adam_update(const TrainSettings *h, const AdamStep *s, Param *p, float *m, float *v)
{
    const float decay = param_decay(h, p), b1 = h->beta1, b2 = h->beta2, eps = h->eps;
    const float shrink = s->decoupled ? 1.0f - s->lr * decay : 1.0f;
    const float l2 = s->decoupled ? 0.0f : decay;
    const float step_size = s->step_size, bias2_sqrt = s->bias2_sqrt;
    float *w = p->data;
    const float *grad = p->grad;
    const long n = (long)p->count;
#pragma omp parallel for simd if (parallel : n > OPTIMIZER_PARALLEL_MIN) schedule(static)
    for (long j = 0; j < n; j++) {
        w[j] *= shrink;
        const float g = grad[j] + l2 * w[j];
        m[j] = b1 * m[j] + (1.0f - b1) * g;
        v[j] = b2 * v[j] + (1.0f - b2) * g * g;
        w[j] -= step_size * m[j] / (sqrtf(v[j]) / bias2_sqrt + eps);
    }
}

void optimizer_step(Optimizer *o, Net *net, float lr)
{
    const TrainSettings *h = &o->settings;
    if (h->clip_grad_norm > 0)
        clip_gradients(net, h->clip_grad_norm);
    o->steps++;
    const double t = (double)o->steps;
    const AdamStep adam = {lr, (float)(lr / (1.0 - pow(h->beta1, t))),
                           (float)sqrt(1.0 - pow(h->beta2, t)), o->kind == CDL_OPT_ADAMW};
    for (int i = net->train_from; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_params; k++) {
            Param *p = &l->params[k];
            if (!p->trainable)
                continue;
            const size_t at = (size_t)(p->data - net->params);
            if (o->kind == CDL_OPT_SGD)
                sgd_update(h, p, o->slab + at, lr);
            else
                adam_update(h, &adam, p, o->slab + at, o->slab + net->n_params + at);
        }
    }
    net_zero_grads(net);
    if (o->ema)
        ema_update(o->ema, net, h->ema);
}
