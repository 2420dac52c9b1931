/* The next token's choice (train/sample.h): greedy takes the most probable (the lowest id on
 * ties), top_k and top_p (nucleus) leave the right tokens out, and the draws follow the weights
 * p^(1/temperature) renormalised over the tokens kept. */
#include "train/sample.h"

#include <math.h>

#include "check.h"

enum { DRAWS = 20000 };

/* The fraction of DRAWS draws (streams 0 ..) that give each of the n tokens. */
static void draw_frequencies(const float *p, int n, const SampleOptions *o, double *freq)
{
    float weights[16];
    for (int i = 0; i < n; i++)
        freq[i] = 0;
    for (int d = 0; d < DRAWS; d++) {
        Rng rng;
        rng_seed(&rng, 9, (uint64_t)d);
        freq[sample_token(p, n, o, &rng, weights)] += 1.0 / DRAWS;
    }
}

/* Each frequency within 4 standard deviations of a binomial's over DRAWS draws of want. */
static void check_frequencies(const double *freq, const double *want, int n)
{
    for (int i = 0; i < n; i++)
        CHECK_NEAR(freq[i], want[i], 4 * sqrt(want[i] * (1 - want[i]) / DRAWS) + 1e-12);
}

static void test_greedy_takes_the_most_probable(void)
{
    const float p[4] = {0.2f, 0.4f, 0.4f, 0.0f};
    float weights[8];
    Rng rng;
    rng_seed(&rng, 1, 0);
    CHECK(sample_token(p, 4, &(SampleOptions){0}, &rng, weights) == 1);
    CHECK(!sample_draws(&(SampleOptions){0, 3, 0.5f}));
    CHECK(sample_draws(&(SampleOptions){0.5f, 0, 0}));
}

/* p = {0.5, 0.3, 0.15, 0.05}: at temperature 1 the draws follow p; top_k 2 keeps 0.5 and 0.3
 * (5/8, 3/8); top_p 0.7 keeps the fewest whose sum reaches 0.7, the same two; top_p 0.45 the
 * first alone; temperature 0.5 weights p^2 = {.25, .09, .0225, .0025} over their sum .365. */
static void test_draws_follow_the_kept_weights(void)
{
    const float p[4] = {0.5f, 0.3f, 0.15f, 0.05f};
    double freq[4];
    draw_frequencies(p, 4, &(SampleOptions){1.0f, 0, 0}, freq);
    check_frequencies(freq, (const double[]){0.5, 0.3, 0.15, 0.05}, 4);
    draw_frequencies(p, 4, &(SampleOptions){1.0f, 2, 0}, freq);
    check_frequencies(freq, (const double[]){0.625, 0.375, 0, 0}, 4);
    draw_frequencies(p, 4, &(SampleOptions){1.0f, 0, 0.7f}, freq);
    check_frequencies(freq, (const double[]){0.625, 0.375, 0, 0}, 4);
    draw_frequencies(p, 4, &(SampleOptions){1.0f, 0, 0.45f}, freq);
    check_frequencies(freq, (const double[]){1, 0, 0, 0}, 4);
    draw_frequencies(p, 4, &(SampleOptions){0.5f, 0, 1.0f}, freq);
    check_frequencies(freq, (const double[]){.25 / .365, .09 / .365, .0225 / .365, .0025 / .365},
                      4);
    /* top_p on the weights after top_k and the temperature: {.25, .09, .0225} of .3625, 0.9 of it
     * reached by the first two (.34) */
    draw_frequencies(p, 4, &(SampleOptions){0.5f, 3, 0.9f}, freq);
    check_frequencies(freq, (const double[]){.25 / .34, .09 / .34, 0, 0}, 4);
}

int main(void)
{
    test_greedy_takes_the_most_probable();
    test_draws_follow_the_kept_weights();
    return check_report("test_sample");
}
