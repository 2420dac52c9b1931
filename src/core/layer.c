/* Helpers shared by every layer family: parameters, cfg errors and activation=, per-batch state. */
#include "core/layer.h"

#include <string.h>

#include "core/net.h"

Param *layer_add_param(Layer *l, const char *name, int trainable, int decay, int n_dims,
                       const int64_t *dims)
{
    Param *p = &l->params[l->n_params++];
    memset(p, 0, sizeof *p);
    p->name = name;
    p->n_dims = n_dims;
    p->count = 1;
    for (int d = 0; d < n_dims; d++) {
        p->dims[d] = dims[d];
        p->count *= (size_t)dims[d];
    }
    p->trainable = trainable;
    p->decay = decay;
    return p;
}

Param *layer_param(Layer *l, const char *name)
{
    for (int i = 0; i < l->n_params; i++)
        if (!strcmp(l->params[i].name, name))
            return &l->params[i];
    return NULL;
}

void layer_init_uniform(Layer *l, Rng *rng, float bound)
{
    for (int p = 0; p < l->n_params; p++)
        for (size_t i = 0; i < l->params[p].count; i++)
            l->params[p].data[i] = bound * (2.0f * rng_uniform(rng) - 1.0f);
}

int layer_bad_key(const Layer *l, const Cfg *cfg, CfgSection *s, const char *key, int value,
                  const char *why, Error *e)
{
    return error_set(e, CDL_EUSAGE, "%s: layer %d: [%s] %s=%d: %s",
                     cfg_where(cfg, s, cfg_find(s, key)).text, l->index, s->name, key, value, why);
}

void layer_rows_follow_input(Layer *l, const Net *net)
{
    const int rows = net->layers[l->inputs[0]].out_shape.h;
    l->in_shape.h = rows;
    l->out_shape.h = rows;
}

Shape layer_input_shape(const Layer *l, const Net *net, int k)
{
    return l->inputs[k] < 0 ? net->in_shape : net->layers[l->inputs[k]].out_shape;
}

int layer_size_follow_input(Layer *l, const Net *net, Error *e)
{
    (void)e;
    const Shape in = layer_input_shape(l, net, 0);
    l->in_shape.h = l->out_shape.h = in.h;
    l->in_shape.w = l->out_shape.w = in.w;
    return CDL_OK;
}

int layer_parse_activation(Layer *l, const Cfg *cfg, CfgSection *s, ActivationKind def, Error *e)
{
    const char *name = cfg_get_str(s, "activation", NULL);
    l->activation = def;
    if (name && activation_from_name(name, &l->activation))
        return cfg_bad_value(cfg, s, "activation", e, "expected one of %s",
                             activation_valid_names());
    return CDL_OK;
}

int layer_parse_from(const Layer *l, const Cfg *cfg, CfgSection *s, const char *key, int *index,
                     Error *e)
{
    int from;
    const int st = cfg_get_int(cfg, s, key, 0, &from, e);
    if (st)
        return st;
    const CfgEntry *en = cfg_find(s, key);
    if (!en)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d [%s] needs key '%s'", cfg->path, s->line,
                         l->index, s->name, key);
    *index = from < 0 ? l->index + from : from;
    if (*index >= 0 && *index < l->index)
        return CDL_OK;
    if (l->index == 0)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer 0 [%s]: %s=%d: there is no earlier layer to read",
                         cfg_where(cfg, s, en).text, s->name, key, from);
    return error_set(e, CDL_EUSAGE,
                     "%s: layer %d [%s]: %s=%d names layer %d, not an earlier layer (0..%d, or "
                     "-1..-%d)",
                     cfg_where(cfg, s, en).text, l->index, s->name, key, from, *index, l->index - 1,
                     l->index);
}

float *layer_state_floats(LayerState *st, size_t n)
{
    float *at = st->floats && n ? st->floats + st->n_floats : NULL;
    st->n_floats += n;
    return at;
}

float *layer_work_floats(LayerState *st, size_t n)
{
    float *at = st->work && n ? st->work + st->n_work : NULL;
    st->n_work += n;
    return at;
}

float *layer_kept_floats(LayerState *st, size_t n)
{
    float *at = st->kept && n ? st->kept + st->n_kept : NULL;
    st->n_kept += n;
    return at;
}

void *layer_state_bytes(LayerState *st, size_t n)
{
    void *at = st->bytes && n ? st->bytes + st->n_bytes : NULL;
    st->n_bytes += (n + LAYER_STATE_ALIGN - 1) / LAYER_STATE_ALIGN * LAYER_STATE_ALIGN;
    return at;
}
