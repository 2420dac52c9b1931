/* The exponential moving average of the weights. */
#include "train/ema.h"

#include <string.h>

size_t ema_floats(const Net *net)
{
    return net->n_params + net->n_state;
}

void ema_start(float *shadow, const Net *net)
{
    memcpy(shadow, net->params, net->n_params * sizeof *shadow);
    memcpy(shadow + net->n_params, net->state, net->n_state * sizeof *shadow);
}

/* shadow [n] moves towards w [n]. */
static void average_into(float *shadow, const float *w, size_t n, float decay)
{
    const float keep = decay, take = 1.0f - decay;
    const long count = (long)n;
#pragma omp parallel for simd if (parallel : count > 65536) schedule(static)
    for (long i = 0; i < count; i++)
        shadow[i] = keep * shadow[i] + take * w[i];
}

void ema_update(float *shadow, const Net *net, float decay)
{
    average_into(shadow, net->params, net->n_params, decay);
    average_into(shadow + net->n_params, net->state, net->n_state, decay);
}

/* Exchanges a [n] and b [n]. */
static void swap_values(float *a, float *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const float t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

void ema_swap(float *shadow, Net *net)
{
    swap_values(shadow, net->params, net->n_params);
    swap_values(shadow + net->n_params, net->state, net->n_state);
}
