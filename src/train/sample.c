/* Drawing the next token: greedy, temperature, top-k and top-p (nucleus) sampling. */
#include "train/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int descending(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

int sample_draws(const SampleOptions *o)
{
    return o->temperature > 0;
}

/* The smallest weight among the fewest largest of weights [n] whose sum reaches top_p of total;
 * sorted [n] is scratch. */
static float nucleus_floor(const float *weights, int n, double total, float top_p, float *sorted)
{
    memcpy(sorted, weights, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, descending);
    double sum = 0;
    for (int i = 0; i < n; i++)
        if ((sum += sorted[i]) >= top_p * total)
            return sorted[i];
    return 0;
}

int sample_token(const float *p, int n, const SampleOptions *o, Rng *rng, float *weights)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        best = p[i] > p[best] ? i : best;
    if (!sample_draws(o))
        return best;
    /* Tokens below the k-th largest probability are left out. */
    float floor_p = 0;
    if (o->top_k > 0 && o->top_k < n) {
        memcpy(weights, p, (size_t)n * sizeof *weights);
        qsort(weights, (size_t)n, sizeof *weights, descending);
        floor_p = weights[o->top_k - 1];
    }
    /* p^(1/T) renormalised is softmax(logits / T); relative to the best token for range. */
    const double inv_t = 1.0 / o->temperature;
    double total = 0;
    for (int i = 0; i < n; i++) {
        weights[i] = p[i] >= floor_p && p[i] > 0 ? (float)pow((double)p[i] / p[best], inv_t) : 0;
        total += weights[i];
    }
    if (o->top_p > 0 && o->top_p < 1) {
        const float floor_w = nucleus_floor(weights, n, total, o->top_p, weights + n);
        total = 0;
        for (int i = 0; i < n; i++) {
            weights[i] = weights[i] >= floor_w ? weights[i] : 0;
            total += weights[i];
        }
    }
    double u = rng_uniform(rng) * total;
    for (int i = 0; i < n; i++)
        if (weights[i] > 0 && (u -= weights[i]) < 0)
            return i;
    return best;
}
