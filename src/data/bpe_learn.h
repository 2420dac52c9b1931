/* Learning byte-level BPE merges from a text, as GPT-2's and the `tokenizers` ByteLevel trainer
 * do: the text is cut into pieces (data/text_split.h) and counted; starting from the 256 byte
 * tokens, each step merges the most frequent adjacent pair of tokens (counted over the pieces,
 * times each piece's frequency) into a new token, ties going to the pair with the smaller left
 * token, then the smaller right token. Pair counts are kept up to date incrementally over the
 * distinct pieces (a heap of counts with lazy updates, and for each pair the pieces it occurs
 * in), so a step costs the pieces it changes, not a rescan. The result depends on the text only.
 *
 * Learning stops at vocab_size tokens, or earlier when no adjacent pair is left (every piece is
 * then one token). */
#ifndef CDL_BPE_LEARN_H
#define CDL_BPE_LEARN_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* The merges (malloc'd, [*n_merges][2], see data/bpe.h) of text[0..len) for vocab_size >= 256
 * tokens. */
int bpe_learn(const char *text, size_t len, int vocab_size, int32_t **merges, int *n_merges,
              Error *e);

#endif
