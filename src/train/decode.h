/* Greedy decoding, sampling and beam search with a sequence-to-sequence net ([net] source=S, seq=T;
 * the sample layout of data/text_pairs.h): the encoder runs once per source, then the decoder once
 * per new token. */
#ifndef CDL_DECODE_H
#define CDL_DECODE_H

#include <stdint.h>

#include "core/net.h"
#include "train/sample.h"

/* The first layer of the decoder: the [embedding] of the target rows (part=target). Fails unless
 * the net is sequence to sequence, keeps every output (net_can_forward_at) and no layer before
 * that one reads the target rows (an [attention] key_padding=target). */
int decode_first_layer(const Net *net, int *first, Error *e);

/* How each token is chosen and how the decoder runs per token. */
typedef struct DecodeOptions {
    /* greedy decoding's choice (temperature 0: the most probable token) or its draw; beam search
     * refuses any but the default (temperature 0, top_k 0, top_p 0 or 1) */
    SampleOptions sample;
    /* the draws of source k's token at target row t come from (seed, source k's ids, t): the
     * same source gives the same target in any batch and at any place of the file */
    uint64_t seed;
    /* 1: the cached step (net_forward_at from the decoder's first layer: row t of each decoder
     * layer alone, self-attention appending row t's key and value, cross-attention reading the
     * memory's, computed once per source); 0: the decoder over all T rows per token
     * (net_forward_from). Beam search runs uncached when a decoder layer cannot move its cache
     * between samples (net_can_gather_samples). */
    int use_cache;
} DecodeOptions;

/* The greedy targets of n sources at once (n <= net->batch; the samples past n are padding):
 * source k is sources[k] [n_sources[k]] (ids below the vocabulary). The target rows start as BOS
 * then padding; each step takes every unfinished sample's most probable token (the lowest id on
 * ties) at its last filled row, or draws it (o->sample); EOS (not stored) finishes it, else the
 * token goes to its next row; when every sample is finished or the T rows are full it stops, else
 * the decoder (layers first
 * ..) runs again. out [n][T] gets the tokens, n_out [n] their counts, log_probs [n] (unless NULL)
 * the sums of the natural logs of their probabilities, EOS's included where it came. net:
 * inference mode; first: decode_first_layer's. A source of no token or more than S is refused. */
int decode_greedy(Net *net, int first, const int32_t *const *sources, const int *n_sources, int n,
                  int bos, int eos, const DecodeOptions *o, int32_t *out, int *n_out,
                  double *log_probs, Error *e);

/* Beam search over one source (sources as decode_greedy's, with net->batch >= beam: beam k in
 * row k): from BOS, each step extends every live hypothesis by every token and keeps the beam
 * best by the sum of their log-probabilities (ties: the earlier hypothesis, then the lower id);
 * one ending in EOS is finished, scored by its sum over its length (its tokens, EOS included)
 * to the power length_penalty, and a hypothesis that fills the T rows finishes as it is. A live
 * hypothesis that can no longer beat the best finished one (its sum only falls) is dropped; the
 * search ends when none is live and gives the best finished: its tokens into out [T], their count
 * into *n_out, its sum of log-probabilities (EOS's included) into *log_prob (unless NULL). Every
 * hypothesis row holds the source from the first step on. beam 1 is decode_greedy. */
int decode_beam(Net *net, int first, const int32_t *source, int n_source, int beam,
                float length_penalty, int bos, int eos, const DecodeOptions *o, int32_t *out,
                int *n_out, double *log_prob, Error *e);

#endif
