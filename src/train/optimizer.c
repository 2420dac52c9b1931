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

/* p's weight decay: on flagged tensors, or on all of them with decay_bn_bias=1. */
static float param_decay(const TrainSettings *h, const Param *p)
{
    return p->decay || h->decay_bn_bias ? h->decay : 0.0f;
}

/* o->runs: every trainable tensor of the layers from net->train_from on, in the backend's memory;
 * 0 when out of memory. */
static int make_runs(Optimizer *o, const Net *net)
{
    int n = 0;
    for (int i = net->train_from; i < net->n_layers; i++)
        for (int j = 0; j < net->layers[i].n_params; j++)
            n += net->layers[i].params[j].trainable;
    SlabRun *runs = calloc((size_t)n + 1, sizeof *runs);
    if (!runs || !(o->runs = o->backend->alloc((size_t)n + 1, sizeof *o->runs))) {
        free(runs);
        return 0;
    }
    o->n_runs = 0;
    o->run_values = 0;
    for (int i = net->train_from; i < net->n_layers; i++)
        for (int j = 0; j < net->layers[i].n_params; j++) {
            const Param *p = &net->layers[i].params[j];
            if (p->trainable)
                runs[o->n_runs++] = (SlabRun){.offset = (size_t)(p->data - net->params),
                                              .first = o->run_values,
                                              .count = p->count,
                                              .decay = param_decay(&o->settings, p)};
            o->run_values += p->trainable ? p->count : 0;
        }
    o->backend->upload(o->runs, runs, (size_t)n * sizeof *runs);
    free(runs);
    return 1;
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
    if (!o->slab || (o->settings.ema > 0 && !o->ema) || !make_runs(o, net))
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
        o->backend->free(o->runs);
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
    const UpdateRule rule = optimizer_next_rule(o, lr);
    o->steps++;
    const SlabKernels *k = net->backend->slab;
    if (o->kind == CDL_OPT_SGD)
        k->sgd(net->params, o->slab, net->grads, o->runs, o->n_runs, o->run_values, &rule,
               &net->exec);
    else
        k->adam(net->params, o->slab, o->slab + net->n_params, net->grads, o->runs, o->n_runs,
                o->run_values, &rule, &net->exec);
    net_zero_grads(net);
    if (o->ema)
        ema_update(o->ema, net, h->ema);
}
