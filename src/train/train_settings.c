/* The training keys of [net] (train/train_settings.h): read, checked, and the learning-rate
 * schedule they describe. */
#include "train/train_settings.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const policy_names[] = {"constant", "step", "steps", "exp", "poly", "cosine"};
static const char *const optimizer_names[] = {"sgd", "adam", "adamw"};
#define N_NAMES(table) (int)(sizeof table / sizeof table[0])

const char *train_optimizer_name(OptimizerKind kind)
{
    return optimizer_names[kind];
}

/* The optimizer keys: optimizer, darknet's adam, nesterov, beta1, beta2, eps, decay_bn_bias,
 * clip_grad_norm and ema (defaults in docs/config.md). */
static int parse_optimizer(const Cfg *cfg, CfgSection *s, TrainSettings *h, Error *e)
{
    int kind = 0, darknet_adam = 0;
    int st =
        cfg_get_named(cfg, s, "optimizer", optimizer_names, N_NAMES(optimizer_names), &kind, e);
    h->optimizer = (OptimizerKind)kind;
    /* darknet's adam=1: Adam with the decay added to the gradient, as optimizer=adam */
    st = st ? st : cfg_get_int(cfg, s, "adam", 0, &darknet_adam, e);
    st = st ? st : cfg_require_min(cfg, s, "adam", darknet_adam, 0, e);
    st = st ? st : cfg_require_max(cfg, s, "adam", darknet_adam, 1, 1, e);
    if (!st && darknet_adam && !cfg_find(s, "optimizer"))
        h->optimizer = CDL_OPT_ADAM;
    else if (!st && darknet_adam && h->optimizer != CDL_OPT_ADAM)
        st = error_set(
            e, CDL_EUSAGE, "%s: adam=1 (darknet's optimizer=adam) contradicts optimizer=%s",
            cfg_where(cfg, s, cfg_find(s, "adam")).text, train_optimizer_name(h->optimizer));
    st = st ? st : cfg_get_int(cfg, s, "nesterov", 0, &h->nesterov, e);
    st = st ? st : cfg_get_float(cfg, s, "beta1", 0.9f, &h->beta1, e);
    st = st ? st : cfg_get_float(cfg, s, "beta2", 0.999f, &h->beta2, e);
    st = st ? st : cfg_get_float(cfg, s, "eps", 1e-8f, &h->eps, e);
    st = st ? st : cfg_get_int(cfg, s, "decay_bn_bias", 0, &h->decay_bn_bias, e);
    st = st ? st : cfg_get_float(cfg, s, "clip_grad_norm", 0.0f, &h->clip_grad_norm, e);
    st = st ? st : cfg_get_float(cfg, s, "ema", 0.0f, &h->ema, e);
    st = st ? st : cfg_require_min(cfg, s, "nesterov", h->nesterov, 0, e);
    st = st ? st : cfg_require_max(cfg, s, "nesterov", h->nesterov, 1, 1, e);
    st = st ? st : cfg_require_min(cfg, s, "beta1", h->beta1, 0, e);
    st = st ? st : cfg_require_max(cfg, s, "beta1", h->beta1, 1, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "beta2", h->beta2, 0, e);
    st = st ? st : cfg_require_max(cfg, s, "beta2", h->beta2, 1, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "eps", h->eps, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "decay_bn_bias", h->decay_bn_bias, 0, e);
    st = st ? st : cfg_require_max(cfg, s, "decay_bn_bias", h->decay_bn_bias, 1, 1, e);
    st = st ? st : cfg_require_min(cfg, s, "clip_grad_norm", h->clip_grad_norm, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "ema", h->ema, 0, e);
    st = st ? st : cfg_require_max(cfg, s, "ema", h->ema, 1, 0, e);
    if (!st && h->nesterov && (h->optimizer != CDL_OPT_SGD || h->momentum <= 0))
        st = error_set(e, CDL_EUSAGE, "%s: nesterov=1 needs optimizer=sgd and momentum > 0",
                       cfg_where(cfg, s, cfg_find(s, "nesterov")).text);
    return st;
}

int train_settings_read(const Cfg *cfg, TrainSettings *h, Error *e)
{
    CfgSection *s = &cfg->sections[0];
    int st = CDL_OK;
    int n_scales = 0, policy = 0;
    *h = (TrainSettings){0};
    st = st ? st : cfg_get_float(cfg, s, "learning_rate", 0.001f, &h->learning_rate, e);
    st = st ? st : cfg_get_float(cfg, s, "momentum", 0.9f, &h->momentum, e);
    st = st ? st : cfg_get_float(cfg, s, "decay", 0.0001f, &h->decay, e);
    st = st ? st : cfg_get_named(cfg, s, "policy", policy_names, N_NAMES(policy_names), &policy, e);
    h->policy = (LrPolicy)policy;
    st = st ? st : cfg_get_int(cfg, s, "step", 1, &h->step, e);
    st = st ? st : cfg_get_float(cfg, s, "scale", 1.0f, &h->scale, e);
    st = st ? st : cfg_get_float(cfg, s, "gamma", 1.0f, &h->gamma, e);
    st = st ? st : cfg_get_float(cfg, s, "power", 4.0f, &h->power, e);
    st = st ? st : cfg_get_int_list(cfg, s, "steps", h->steps, TRAIN_MAX_STEPS, &h->n_steps, e);
    st = st ? st : cfg_get_float_list(cfg, s, "scales", h->scales, TRAIN_MAX_STEPS, &n_scales, e);
    st = st ? st : cfg_get_int(cfg, s, "burn_in", 0, &h->burn_in, e);
    st = st ? st : cfg_get_int(cfg, s, "warmup", 0, &h->warmup, e);
    st = st ? st : cfg_get_float(cfg, s, "lr_min", 0.0f, &h->lr_min, e);
    st = st ? st : cfg_get_int(cfg, s, "max_batches", 0, &h->max_batches, e);
    st = st ? st : cfg_get_int(cfg, s, "epochs", 0, &h->epochs, e);
    st = st ? st : parse_optimizer(cfg, s, h, e);
    st = st ? st : cfg_require_min(cfg, s, "learning_rate", h->learning_rate, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "step", h->step, 1, e);
    st = st ? st : cfg_require_min(cfg, s, "burn_in", h->burn_in, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "warmup", h->warmup, 0, e);
    st = st ? st : cfg_require_min(cfg, s, "lr_min", h->lr_min, 0, e);
    if (st)
        return st;
    if (h->policy == CDL_LR_STEPS && n_scales != h->n_steps)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: policy=steps needs as many scales (%d) as steps (%d)", cfg->path,
                         s->line, n_scales, h->n_steps);
    if (h->policy == CDL_LR_POLY && h->max_batches < 1)
        return error_set(e, CDL_EUSAGE, "%s:%d: policy=poly needs max_batches", cfg->path, s->line);
    return CDL_OK;
}

/* The rate of the policy alone (burn_in and warmup aside) at step t. */
static float policy_rate(const TrainSettings *h, uint64_t t, uint64_t total_steps)
{
    float rate = h->learning_rate;
    switch (h->policy) {
    case CDL_LR_CONSTANT:
        return rate;
    case CDL_LR_STEP:
        return rate * powf(h->scale, (float)(t / (uint64_t)h->step));
    case CDL_LR_STEPS:
        for (int i = 0; i < h->n_steps; i++) {
            if ((uint64_t)h->steps[i] > t)
                return rate;
            rate *= h->scales[i];
        }
        return rate;
    case CDL_LR_EXP:
        return rate * powf(h->gamma, (float)t);
    case CDL_LR_POLY: {
        float left = 1.0f - (float)t / (float)h->max_batches;
        return left > 0 ? rate * powf(left, h->power) : 0.0f;
    }
    case CDL_LR_COSINE: {
        /* torch.optim.lr_scheduler.CosineAnnealingLR's closed form with T_max = span, held at
         * lr_min from then on. */
        const uint64_t span = h->max_batches > 0 ? (uint64_t)h->max_batches : total_steps;
        if (!span)
            return rate;
        if (t >= span)
            return h->lr_min;
        const double half_cos = 0.5 * (1.0 + cos(M_PI * (double)t / (double)span));
        return (float)(h->lr_min + ((double)rate - h->lr_min) * half_cos);
    }
    }
    return rate;
}

float train_learning_rate(const TrainSettings *h, uint64_t t, uint64_t total_steps)
{
    float rate = t < (uint64_t)h->burn_in
                     ? h->learning_rate * powf((float)t / (float)h->burn_in, h->power)
                     : policy_rate(h, t, total_steps);
    if (t < (uint64_t)h->warmup)
        rate *= (float)(t + 1) / (float)h->warmup;
    return rate;
}
