/* A byte-level BPE tokenizer (GPT-2's scheme): tokens 0..255 are the bytes, token 256+i is the
 * concatenation of the two tokens of merge i. Encoding cuts the text into pieces
 * (data/text_split.h) and, in each piece, applies the merges in the order they were learned
 * (lowest rank first, left to right for a repeated pair), so merges never cross a piece.
 * Decoding concatenates the tokens' bytes: any byte string, valid UTF-8 or not, round-trips. */
#ifndef CDL_BPE_H
#define CDL_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"
#include "util/hash_table.h"

enum { BPE_BYTE_TOKENS = 256 };

typedef struct Bpe {
    int n_merges;
    int32_t *merges; /* [n_merges][2]: token 256+i is merges[2i] followed by merges[2i+1] */
    size_t *offsets; /* [256 + n_merges + 1]: token t's bytes are bytes[offsets[t] .. [t+1]) */
    char *bytes;     /* every token's bytes, back to back */
    U64Map ranks;    /* pair (left << 32 | right) -> merge index */
} Bpe;

/* The tokenizer of merges[0..2*n_merges) (copied). A merge naming a token not defined before it
 * or repeating an earlier pair is CDL_EUSAGE naming what. */
int bpe_init(Bpe *b, const int32_t *merges, int n_merges, const char *what, Error *e);
/* Token ids of text[0..len) into ids (room for len ids; *n_ids set). Pieces seen before are
 * looked up rather than merged again (a cache for this call). */
int bpe_encode(const Bpe *b, const char *text, size_t len, int32_t *ids, size_t *n_ids, Error *e);
/* The bytes of token id (0 <= id < 256 + n_merges) and their count in *len. */
const char *bpe_token(const Bpe *b, int id, size_t *len);
/* Frees and zeroes b; safe on a zeroed Bpe. */
void bpe_free(Bpe *b);

#endif
