/* The next token from a net's softmax output: the most probable, or drawn with a temperature
 * among the top k and the top p of the tokens. Text generation (train/generate.c) and
 * sequence-to-sequence decoding (train/decode.c) share it. */
#ifndef CDL_SAMPLE_H
#define CDL_SAMPLE_H

#include "util/rng.h"

typedef struct SampleOptions {
    float temperature; /* 0: the most probable token (the lowest id on ties), nothing drawn */
    int top_k;         /* > 0: draw among the k most probable tokens only */
    /* in (0, 1): draw among the most probable tokens whose weights at the temperature (after
     * top_k) reach top_p of their sum, the fewest that do (nucleus sampling; a tie at the last
     * one keeps all of its weight); 0 or >= 1: all */
    float top_p;
} SampleOptions;

/* 1 when o draws tokens (a temperature above 0), 0 when it takes the most probable. */
int sample_draws(const SampleOptions *o);

/* The next token from the probabilities p [n] (a softmax row): weights proportional to
 * p^(1/temperature) over the tokens top_k and top_p keep, one draw of rng. weights [2n] is
 * scratch. */
int sample_token(const float *p, int n, const SampleOptions *o, Rng *rng, float *weights);

#endif
