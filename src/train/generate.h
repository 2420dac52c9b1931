/* Text generation with a sequence net: extends a prompt token by token, sampling each next token
 * from the net's output for the last position (train/sample.h), with or without the layers'
 * caches (LayerType.forward_at: attention's keys and values, recurrent state). */
#ifndef CDL_GENERATE_H
#define CDL_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "core/net.h"
#include "train/sample.h"

typedef struct GenerateOptions {
    int tokens;           /* how many tokens to produce */
    SampleOptions sample; /* how each token is chosen */
    uint64_t seed;        /* the sampling draws come from (seed, position) */
    int use_cache;        /* 1: forward_at per new token when every layer has it
                             (net_can_forward_at); else, or 0: a full forward over the context for
                             every token */
} GenerateOptions;

/* Receives each generated token id as it is produced. */
typedef void (*TokenSink)(void *ctx, int id);

/* net: a sequence net in inference mode sized for batch 1 (net_resize(net, 1, ...)); prompt:
 * n_prompt >= 1 token ids below net->classes. The context is the last seq tokens: when it is
 * full, it restarts from its last seq/2 tokens with one full forward (positions are learned per
 * index, so a cache cannot slide); both paths keep the same context, so they give the same
 * tokens. Allocates only the context and a row of sampling weights. */
int generate_tokens(Net *net, const int32_t *prompt, size_t n_prompt, const GenerateOptions *o,
                    TokenSink sink, void *ctx, Error *e);

/* probs [net->classes] = the distribution of the token that follows prompt (its last seq tokens),
 * the one generate_tokens draws its first token from: the net's output at the prompt's last
 * position after one full forward. net and prompt as for generate_tokens. */
int generate_next_probs(Net *net, const int32_t *prompt, size_t n_prompt, float *probs, Error *e);

#endif
