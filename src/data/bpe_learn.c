/* The incremental BPE trainer: distinct pieces with frequencies, pair counts, a lazy max-heap. */
#include "data/bpe_learn.h"

#include <stdlib.h>
#include <string.h>

#include "data/bpe.h"
#include "data/text_split.h"
#include "util/hash_table.h"

/* An adjacent token pair: its count over the pieces and the pieces it was seen in (appended on
 * every gain, so it may name a piece twice or one that lost the pair since: a scan then finds
 * nothing). */
typedef struct Pair {
    int32_t left, right;
    int64_t count;
    int32_t *pieces;
    int32_t n_pieces, cap_pieces;
} Pair;

typedef struct HeapEntry {
    int64_t count; /* the pair's count when pushed: an upper bound, since counts only fall */
    int32_t pair;
} HeapEntry;

typedef struct Learner {
    /* Pieces: tokens[first[w] .. first[w] + len[w]) is piece w now, freq[w] its occurrences. */
    int32_t *tokens;
    size_t *first;
    int32_t *len;
    int64_t *freq;
    size_t n_pieces;
    /* Pairs, indexed by (left << 32 | right). */
    Pair *pairs;
    size_t n_pairs, cap_pairs;
    U64Map index;
    HeapEntry *heap;
    size_t n_heap, cap_heap;
    /* The pairs that gained count in the current merge (pushed when it is done). */
    int32_t *gained;
    size_t n_gained, cap_gained;
    uint8_t *in_gained; /* [cap_pairs] */
} Learner;

/* Grows *p (elements of size bytes, capacity *cap) to hold need; 0, or -1 when out of memory. */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *q = realloc(*p, cap2 * size);
    if (!q)
        return -1;
    *p = q;
    *cap = cap2;
    return 0;
}

/* a before b in the heap: higher count, then the smaller pair. */
static int heap_before(const Learner *l, HeapEntry a, HeapEntry b)
{
    if (a.count != b.count)
        return a.count > b.count;
    const Pair *pa = &l->pairs[a.pair], *pb = &l->pairs[b.pair];
    return pa->left != pb->left ? pa->left < pb->left : pa->right < pb->right;
}

static int heap_push(Learner *l, int32_t pair)
{
    if (grow((void **)&l->heap, &l->cap_heap, l->n_heap + 1, sizeof *l->heap))
        return -1;
    size_t i = l->n_heap++;
    const HeapEntry x = {l->pairs[pair].count, pair};
    while (i > 0 && heap_before(l, x, l->heap[(i - 1) / 2])) {
        l->heap[i] = l->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    l->heap[i] = x;
    return 0;
}

static HeapEntry heap_pop(Learner *l)
{
    const HeapEntry top = l->heap[0];
    const HeapEntry x = l->heap[--l->n_heap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= l->n_heap)
            break;
        if (c + 1 < l->n_heap && heap_before(l, l->heap[c + 1], l->heap[c]))
            c++;
        if (!heap_before(l, l->heap[c], x))
            break;
        l->heap[i] = l->heap[c];
        i = c;
    }
    if (l->n_heap)
        l->heap[i] = x;
    return top;
}

/* The index of pair (left, right), created with count 0 when new; -1 when out of memory. */
static int32_t pair_of(Learner *l, int32_t left, int32_t right)
{
    const uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    int32_t p = u64_map_get(&l->index, key);
    if (p >= 0)
        return p;
    size_t cap = l->cap_pairs;
    if (l->n_pairs >= INT32_MAX ||
        grow((void **)&l->pairs, &l->cap_pairs, l->n_pairs + 1, sizeof *l->pairs))
        return -1;
    if (l->cap_pairs != cap) {
        uint8_t *in = realloc(l->in_gained, l->cap_pairs);
        if (!in)
            return -1;
        memset(in + cap, 0, l->cap_pairs - cap);
        l->in_gained = in;
    }
    p = (int32_t)l->n_pairs;
    if (u64_map_put(&l->index, key, p))
        return -1;
    l->pairs[l->n_pairs++] = (Pair){left, right, 0, NULL, 0, 0};
    return p;
}

/* Adds sign (+1 or -1) times piece w's frequency to the count of pair (left, right); a gain
 * records w in the pair's pieces and the pair in the gained list. */
static int change(Learner *l, int32_t left, int32_t right, int32_t w, int sign)
{
    const int32_t p = pair_of(l, left, right);
    if (p < 0)
        return -1;
    Pair *x = &l->pairs[p];
    x->count += sign * l->freq[w];
    if (sign < 0)
        return 0;
    if (!x->n_pieces || x->pieces[x->n_pieces - 1] != w) {
        size_t cap = (size_t)x->cap_pieces;
        if (grow((void **)&x->pieces, &cap, (size_t)x->n_pieces + 1, sizeof *x->pieces))
            return -1;
        x->cap_pieces = (int32_t)cap;
        x->pieces[x->n_pieces++] = w;
    }
    if (!l->in_gained[p]) {
        if (grow((void **)&l->gained, &l->cap_gained, l->n_gained + 1, sizeof *l->gained))
            return -1;
        l->in_gained[p] = 1;
        l->gained[l->n_gained++] = p;
    }
    return 0;
}

/* Counts the distinct pieces of text and lays out their bytes as tokens. */
static int count_pieces(Learner *l, const char *text, size_t len)
{
    ByteSet set = {0};
    size_t cap_freq = 0;
    int st = 0;
    for (size_t at = 0; at < len && !st;) {
        const size_t end = text_split_next(text, len, at);
        int added;
        const int32_t w = byte_set_intern(&set, text + at, end - at, &added);
        st = w < 0 || grow((void **)&l->freq, &cap_freq, (size_t)w + 1, sizeof *l->freq);
        if (!st && added)
            l->freq[w] = 0;
        if (!st)
            l->freq[w]++;
        at = end;
    }
    l->n_pieces = set.n;
    const size_t bytes = set.n ? set.offsets[set.n] : 0;
    l->tokens = malloc((bytes + 1) * sizeof *l->tokens);
    l->first = malloc((set.n + 1) * sizeof *l->first);
    l->len = malloc((set.n + 1) * sizeof *l->len);
    st = st || !l->tokens || !l->first || !l->len;
    for (size_t w = 0; w < set.n && !st; w++) {
        l->first[w] = set.offsets[w];
        l->len[w] = (int32_t)(set.offsets[w + 1] - set.offsets[w]);
    }
    for (size_t i = 0; i < bytes && !st; i++)
        l->tokens[i] = (unsigned char)set.bytes[i];
    byte_set_free(&set);
    return st ? -1 : 0;
}

/* Pushes the pairs that gained in the last step and clears the list. */
static int push_gained(Learner *l)
{
    for (size_t i = 0; i < l->n_gained; i++) {
        const int32_t p = l->gained[i];
        l->in_gained[p] = 0;
        if (l->pairs[p].count > 0 && heap_push(l, p))
            return -1;
    }
    l->n_gained = 0;
    return 0;
}

/* Replaces pair p's occurrences in every piece that has it by token t, left to right, keeping
 * the counts of the neighbouring pairs exact. */
static int apply_merge(Learner *l, int32_t p, int32_t t)
{
    const int32_t a = l->pairs[p].left, b = l->pairs[p].right;
    /* The pair's piece list is not appended to here: every gaining pair contains t. */
    const int32_t *pieces = l->pairs[p].pieces;
    const int32_t n_pieces = l->pairs[p].n_pieces;
    for (int32_t k = 0; k < n_pieces; k++) {
        const int32_t w = pieces[k];
        int32_t *sym = l->tokens + l->first[w];
        const int32_t n = l->len[w];
        int32_t out = 0;
        for (int32_t i = 0; i < n;) {
            if (i + 1 < n && sym[i] == a && sym[i + 1] == b) {
                if (out > 0 &&
                    (change(l, sym[out - 1], a, w, -1) || change(l, sym[out - 1], t, w, +1)))
                    return -1;
                if (i + 2 < n &&
                    (change(l, b, sym[i + 2], w, -1) || change(l, t, sym[i + 2], w, +1)))
                    return -1;
                l->pairs[p].count -= l->freq[w];
                sym[out++] = t;
                i += 2;
            } else {
                sym[out++] = sym[i++];
            }
        }
        l->len[w] = out;
    }
    return push_gained(l);
}

static void learner_free(Learner *l)
{
    free(l->tokens);
    free(l->first);
    free(l->len);
    free(l->freq);
    for (size_t p = 0; p < l->n_pairs; p++)
        free(l->pairs[p].pieces);
    free(l->pairs);
    u64_map_free(&l->index);
    free(l->heap);
    free(l->gained);
    free(l->in_gained);
}

/* The learning proper; -1 when out of memory. */
static int learn(Learner *l, const char *text, size_t len, int max_merges, int32_t *merges,
                 int *n_merges)
{
    if (count_pieces(l, text, len))
        return -1;
    for (size_t w = 0; w < l->n_pieces; w++) {
        const int32_t *sym = l->tokens + l->first[w];
        for (int32_t i = 0; i + 1 < l->len[w]; i++)
            if (change(l, sym[i], sym[i + 1], (int32_t)w, +1))
                return -1;
    }
    if (push_gained(l))
        return -1;
    while (*n_merges < max_merges && l->n_heap) {
        const HeapEntry top = heap_pop(l);
        const Pair *x = &l->pairs[top.pair];
        if (x->count <= 0)
            continue;
        if (top.count != x->count) { /* stale: back in with its count now */
            if (heap_push(l, top.pair))
                return -1;
            continue;
        }
        const int32_t t = BPE_BYTE_TOKENS + *n_merges;
        merges[2 * *n_merges] = x->left;
        merges[2 * *n_merges + 1] = x->right;
        ++*n_merges;
        if (apply_merge(l, top.pair, t))
            return -1;
    }
    return 0;
}

int bpe_learn(const char *text, size_t len, int vocab_size, int32_t **merges, int *n_merges,
              Error *e)
{
    *merges = NULL;
    *n_merges = 0;
    if (vocab_size < BPE_BYTE_TOKENS)
        return error_set(e, CDL_EUSAGE, "vocab_size=%d: a byte-level BPE has at least %d tokens",
                         vocab_size, BPE_BYTE_TOKENS);
    const int max_merges = vocab_size - BPE_BYTE_TOKENS;
    *merges = malloc(((size_t)max_merges * 2 + 1) * sizeof **merges);
    Learner l = {0};
    const int failed = !*merges || learn(&l, text, len, max_merges, *merges, n_merges);
    learner_free(&l);
    if (failed) {
        free(*merges);
        *merges = NULL;
        *n_merges = 0;
        return error_set(e, CDL_ERUNTIME, "out of memory learning the BPE merges");
    }
    return CDL_OK;
}
