/* Greedy decoding with a sequence-to-sequence net ([net] source=S, seq=T; the sample layout of
 * data/text_pairs.h): the encoder runs once per source, then the decoder once per new token. */
#ifndef CDL_DECODE_H
#define CDL_DECODE_H

#include <stdint.h>

#include "core/net.h"

/* The first layer of the decoder: the [embedding] of the target rows (part=target). Fails unless
 * the net is sequence to sequence, keeps every output (net_can_forward_at) and no layer before
 * that one reads the target rows (an [attention] key_padding=target). */
int decode_first_layer(const Net *net, int *first, Error *e);

/* out [*n_out] = the greedy target of source [n_source] (ids below the vocabulary): the target
 * rows start as BOS then padding; each step takes the most probable token (the lowest id on ties)
 * at the last filled row, stops at EOS (not stored) or when the T rows are full, else writes it to
 * the next row and runs the decoder (layers first ..) again. net: inference mode, batch 1; first:
 * decode_first_layer's; out: room for T ids. A source of more than S tokens is refused. */
int decode_greedy(Net *net, int first, const int32_t *source, int n_source, int bos, int eos,
                  int32_t *out, int *n_out, Error *e);

#endif
