/* Byte-level BPE: the token table, encoding by merge ranks with a per-call piece cache, and
 * decoding. */
#include "data/bpe.h"

#include <stdlib.h>
#include <string.h>

#include "data/text_split.h"

static uint64_t pair_key(int32_t left, int32_t right)
{
    return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
}

void bpe_free(Bpe *b)
{
    if (!b)
        return;
    free(b->merges);
    free(b->offsets);
    free(b->bytes);
    u64_map_free(&b->ranks);
    memset(b, 0, sizeof *b);
}

int bpe_init(Bpe *b, const int32_t *merges, int n_merges, const char *what, Error *e)
{
    memset(b, 0, sizeof *b);
    const size_t n_tokens = (size_t)BPE_BYTE_TOKENS + (size_t)n_merges;
    b->n_merges = n_merges;
    b->merges = malloc(((size_t)n_merges * 2 + 1) * sizeof *b->merges);
    b->offsets = malloc((n_tokens + 1) * sizeof *b->offsets);
    if (!b->merges || !b->offsets) {
        bpe_free(b);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", what);
    }
    memcpy(b->merges, merges, (size_t)n_merges * 2 * sizeof *b->merges);
    /* Lengths first (each merge must name earlier tokens), then the bytes. */
    b->offsets[0] = 0;
    for (size_t t = 0; t < n_tokens; t++) {
        size_t len = 1;
        if (t >= BPE_BYTE_TOKENS) {
            const int i = (int)(t - BPE_BYTE_TOKENS);
            const int32_t l = merges[2 * i], r = merges[2 * i + 1];
            if (l < 0 || r < 0 || (size_t)l >= t || (size_t)r >= t ||
                u64_map_get(&b->ranks, pair_key(l, r)) >= 0) {
                bpe_free(b);
                return error_set(e, CDL_EUSAGE,
                                 "%s: BPE merge %d (%d %d) is malformed (tokens must be defined "
                                 "before they are merged, each pair once)",
                                 what, i, (int)l, (int)r);
            }
            len = (b->offsets[l + 1] - b->offsets[l]) + (b->offsets[r + 1] - b->offsets[r]);
            if (u64_map_put(&b->ranks, pair_key(l, r), i)) {
                bpe_free(b);
                return error_set(e, CDL_ERUNTIME, "%s: out of memory", what);
            }
        }
        b->offsets[t + 1] = b->offsets[t] + len;
    }
    if (!(b->bytes = malloc(b->offsets[n_tokens]))) {
        bpe_free(b);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", what);
    }
    for (size_t t = 0; t < n_tokens; t++) {
        char *out = b->bytes + b->offsets[t];
        if (t < BPE_BYTE_TOKENS) {
            *out = (char)t;
            continue;
        }
        const int32_t l = merges[2 * (t - BPE_BYTE_TOKENS)],
                      r = merges[2 * (t - BPE_BYTE_TOKENS) + 1];
        const size_t l_len = b->offsets[l + 1] - b->offsets[l];
        memcpy(out, b->bytes + b->offsets[l], l_len);
        memcpy(out + l_len, b->bytes + b->offsets[r], b->offsets[r + 1] - b->offsets[r]);
    }
    return CDL_OK;
}

const char *bpe_token(const Bpe *b, int id, size_t *len)
{
    *len = b->offsets[id + 1] - b->offsets[id];
    return b->bytes + b->offsets[id];
}

/* Merges sym[0..n) in place by rank; returns the token count. A piece is at most
 * TEXT_SPLIT_MAX_BYTES long, so the quadratic scan stays small. */
static size_t merge_piece(const Bpe *b, int32_t *sym, size_t n)
{
    for (;;) {
        int32_t best = -1;
        for (size_t i = 0; i + 1 < n; i++) {
            const int32_t rank = u64_map_get(&b->ranks, pair_key(sym[i], sym[i + 1]));
            if (rank >= 0 && (best < 0 || rank < best))
                best = rank;
        }
        if (best < 0)
            return n;
        const int32_t l = b->merges[2 * best], r = b->merges[2 * best + 1];
        size_t out = 0;
        for (size_t i = 0; i < n; out++) {
            if (i + 1 < n && sym[i] == l && sym[i + 1] == r) {
                sym[out] = BPE_BYTE_TOKENS + best;
                i += 2;
            } else {
                sym[out] = sym[i++];
            }
        }
        n = out;
    }
}

/* The pieces encoded so far in one call: piece k's tokens are ids[first[k] .. first[k]+count[k]).
 */
typedef struct PieceCache {
    ByteSet pieces;
    size_t *first;   /* [pieces.n]: where in the output the piece's tokens were first written */
    uint32_t *count; /* [pieces.n] */
    size_t cap;
} PieceCache;

static void piece_cache_free(PieceCache *c)
{
    byte_set_free(&c->pieces);
    free(c->first);
    free(c->count);
}

int bpe_encode(const Bpe *b, const char *text, size_t len, int32_t *ids, size_t *n_ids, Error *e)
{
    *n_ids = 0;
    PieceCache cache = {0};
    size_t out = 0;
    int st = CDL_OK;
    for (size_t at = 0; at < len && !st;) {
        const size_t end = text_split_next(text, len, at);
        int added;
        const int32_t k = byte_set_intern(&cache.pieces, text + at, end - at, &added);
        if (k >= 0 && added && (size_t)k >= cache.cap) {
            const size_t cap = cache.cap ? 2 * cache.cap : 1024;
            size_t *first = realloc(cache.first, cap * sizeof *first);
            if (first)
                cache.first = first;
            uint32_t *count = first ? realloc(cache.count, cap * sizeof *count) : NULL;
            if (count) {
                cache.count = count;
                cache.cap = cap;
            }
        }
        if (k < 0 || (size_t)k >= cache.cap) {
            st = error_set(e, CDL_ERUNTIME, "out of memory");
            break;
        }
        if (added) {
            for (size_t i = at; i < end; i++)
                ids[out + i - at] = (unsigned char)text[i];
            cache.first[k] = out;
            cache.count[k] = (uint32_t)merge_piece(b, ids + out, end - at);
        } else {
            memcpy(ids + out, ids + cache.first[k], cache.count[k] * sizeof *ids);
        }
        out += cache.count[k];
        at = end;
    }
    piece_cache_free(&cache);
    *n_ids = st ? 0 : out;
    return st;
}
