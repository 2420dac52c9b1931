/* SGD, Adam and AdamW over the parameter slab, with gradient clipping and the weights' EMA: the
 * rules' bookkeeping here, their loops on the net's backend (SlabKernels). */
#include "train/optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/ema.h"

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
    o->backend = net->backend;
    o->loss_scale = loss_scale_start(net->precision);
    o->slab = o->backend->alloc(o->slab_floats + 1, sizeof *o->slab);
    if (o->settings.ema > 0 && o->slab)
        o->ema = o->backend->alloc(ema_floats(net) + 1, sizeof *o->ema);
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
    if (o->backend) {
        o->backend->free(o->slab);
        o->backend->free(o->ema);
    }
    memset(o, 0, sizeof *o);
}

/* Scales the gradients so that their global L2 norm is at most max_norm, as
 * torch.nn.utils.clip_grad_norm_. The sum runs in double in a fixed order, so the result does
 * not depend on the thread count. */
static void clip_gradients(Net *net, float max_norm)
{
    const SlabKernels *k = net->backend->slab;
    if (k->clip_norm) {
        k->clip_norm(net->grads, net->n_params, max_norm, &net->exec);
        return;
    }
    const double sum = k->sum_squares(net->grads, net->n_params, &net->exec);
    const double coef = max_norm / (sqrt(sum) + 1e-6);
    if (coef < 1)
        k->scale(net->grads, net->n_params, (float)coef, &net->exec);
}

/* p's weight decay: on flagged tensors, or on all of them with decay_bn_bias=1. */
static float param_decay(const TrainSettings *h, const Param *p)
{
    return p->decay || h->decay_bn_bias ? h->decay : 0.0f;
}

UpdateRule optimizer_next_rule(const Optimizer *o, float lr)
{
    const TrainSettings *h = &o->settings;
    const double t = (double)(o->steps + 1);
    return (UpdateRule){.lr = lr,
                        .momentum = h->momentum,
                        .nesterov = h->nesterov,
                        .beta1 = h->beta1,
                        .beta2 = h->beta2,
                        .eps = h->eps,
                        .step_size = (float)(lr / (1.0 - pow(h->beta1, t))),
                        .bias2_sqrt = (float)sqrt(1.0 - pow(h->beta2, t)),
                        .decoupled = o->kind == CDL_OPT_ADAMW};
}

void optimizer_step(Optimizer *o, Net *net, float lr)
{
    const TrainSettings *h = &o->settings;
    if (h->clip_grad_norm > 0)
        clip_gradients(net, h->clip_grad_norm);
    UpdateRule rule = optimizer_next_rule(o, lr);
    o->steps++;
    const SlabKernels *k = net->backend->slab;
    for (int i = net->train_from; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        for (int j = 0; j < l->n_params; j++) {
            Param *p = &l->params[j];
            if (!p->trainable)
                continue;
            const size_t at = (size_t)(p->data - net->params);
            rule.decay = param_decay(h, p);
            if (o->kind == CDL_OPT_SGD)
                k->sgd(p->data, o->slab + at, p->grad, p->count, &rule, &net->exec);
            else
                k->adam(p->data, o->slab + at, o->slab + net->n_params + at, p->grad, p->count,
                        &rule, &net->exec);
        }
    }
    net_zero_grads(net);
    if (o->ema)
        ema_update(o->ema, net, h->ema);
}
