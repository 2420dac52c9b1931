/* [dropout]: inverted dropout. In training each value is dropped with `probability`
 * and the kept ones are scaled by 1/(1-probability), so evaluation is the identity.
 *
 *   in, out [batch][c][h][w]
 *
 * The mask is drawn from (net seed, draw_id, layer index) at every training forward:
 * the same pass id redraws the same mask, whatever the thread count. */
#include <stdlib.h>
#include <string.h>

#include "core/net.h"

/* Below this many values a parallel region costs more than it saves. */
#define DROPOUT_PARALLEL_MIN 65536
/* Mask chunks: at least DROPOUT_CHUNK values each (one generator per chunk), and at
 * most DROPOUT_MAX_CHUNKS of them. */
#define DROPOUT_CHUNK 16384
#define DROPOUT_MAX_CHUNKS 1024

typedef struct Dropout {
    float probability;
    float scale;       /* 1 / (1 - probability) */
    float *mask;       /* [batch][c][h][w]: 0 or scale */
    int mask_is_valid; /* the last forward applied the mask (training) */
} Dropout;

static int dropout_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    float p;
    int st = cfg_get_float(cfg, s, "probability", 0.5f, &p, e);
    if (st)
        return st;
    if (!(p >= 0.0f && p < 1.0f)) {
        const CfgEntry *en = cfg_find(s, "probability");
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: bad value '%s' for key 'probability' in [%s]: expected a "
                         "number in [0, 1)",
                         cfg->path, en->line, en->value, s->name);
    }
    l->out_shape = l->in_shape;
    l->flops = (double)shape_size(l->in_shape);
    Dropout *d = calloc(1, sizeof *d);
    if (!d)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    d->probability = p;
    d->scale = 1.0f / (1.0f - p);
    l->priv = d;
    return CDL_OK;
}

static int dropout_resize(Layer *l, int batch, Error *e)
{
    Dropout *d = l->priv;
    free(d->mask);
    d->mask = malloc((size_t)batch * shape_size(l->out_shape) * sizeof *d->mask);
    d->mask_is_valid = 0;
    if (!d->mask)
        return error_set(e, CDL_ERUNTIME, "out of memory for dropout layer %d", l->index);
    return CDL_OK;
}

static void dropout_forward(Layer *l, Net *net)
{
    Dropout *d = l->priv;
    const float *in = net_layer_input(net, l, 0);
    size_t n = (size_t)net->batch * shape_size(l->out_shape);
    d->mask_is_valid = net->train && d->probability > 0;
    if (!d->mask_is_valid) {
        memcpy(l->out, in, n * sizeof *l->out);
        return;
    }
    /* The layer's stream seeds one generator per fixed-size chunk, so the chunks can be
     * drawn in parallel while the mask depends only on (seed, draw_id, layer). */
    Rng master;
    rng_seed(&master, net->seed, (net->draw_id << 16) ^ (uint64_t)l->index);
    uint64_t chunk_seeds[DROPOUT_MAX_CHUNKS];
    size_t chunk = n / DROPOUT_MAX_CHUNKS + 1;
    chunk = chunk > DROPOUT_CHUNK ? chunk : DROPOUT_CHUNK;
    int chunks = (int)((n + chunk - 1) / chunk);
    for (int k = 0; k < chunks; k++) {
        uint64_t high = rng_u32(&master);
        chunk_seeds[k] = high << 32 | rng_u32(&master);
    }
    float *mask = d->mask, *out = l->out;
    float p = d->probability, scale = d->scale;
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int k = 0; k < chunks; k++) {
        Rng r;
        rng_seed(&r, chunk_seeds[k], (uint64_t)k);
        size_t end = (size_t)(k + 1) * chunk < n ? (size_t)(k + 1) * chunk : n;
        for (size_t i = (size_t)k * chunk; i < end; i++) {
            mask[i] = rng_uniform(&r) < p ? 0.0f : scale;
            out[i] = in[i] * mask[i];
        }
    }
}

static void dropout_backward(Layer *l, Net *net)
{
    const Dropout *d = l->priv;
    float *in_delta = net_layer_input_delta(net, l, 0);
    if (!in_delta)
        return;
    size_t n = (size_t)net->batch * shape_size(l->out_shape);
    const float *delta = l->delta, *mask = d->mask;
    if (!d->mask_is_valid) {
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            in_delta[i] += delta[i];
        return;
    }
#pragma omp parallel for schedule(static) if (n > DROPOUT_PARALLEL_MIN)
    for (size_t i = 0; i < n; i++)
        in_delta[i] += delta[i] * mask[i];
}

static void dropout_destroy(Layer *l)
{
    Dropout *d = l->priv;
    if (d)
        free(d->mask);
    free(d);
    l->priv = NULL;
}

const LayerType dropout_layer = {
    .name = "dropout",
    .parse = dropout_parse,
    .resize = dropout_resize,
    .forward = dropout_forward,
    .backward = dropout_backward,
    .destroy = dropout_destroy,
};
