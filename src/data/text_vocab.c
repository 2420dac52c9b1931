/* Byte, character and BPE vocabularies: UTF-8 decoding, building, encoding, decoding and the
 * checkpoint form. */
#include "data/text_vocab.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/bpe_learn.h"
#include "util/utf8.h"

enum { CODE_POINTS = 0x110000, UTF8_MAX_BYTES = 4 };

static int utf8_encode(uint32_t c, char out[UTF8_MAX_BYTES])
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xC0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xE0 | c >> 12);
        out[1] = (char)(0x80 | (c >> 6 & 0x3F));
        out[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | c >> 18);
    out[1] = (char)(0x80 | (c >> 12 & 0x3F));
    out[2] = (char)(0x80 | (c >> 6 & 0x3F));
    out[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

void text_vocab_bytes(TextVocab *v)
{
    memset(v, 0, sizeof *v);
    v->bytes = 1;
    v->n = 256;
}

void text_vocab_free(TextVocab *v)
{
    if (!v)
        return;
    free(v->code_points);
    bpe_free(v->bpe);
    free(v->bpe);
    memset(v, 0, sizeof *v);
}

/* v as the BPE of merges[0..2*n_merges). */
static int vocab_from_merges(TextVocab *v, const int32_t *merges, int n_merges, const char *what,
                             Error *e)
{
    memset(v, 0, sizeof *v);
    if (!(v->bpe = malloc(sizeof *v->bpe)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    const int st = bpe_init(v->bpe, merges, n_merges, what, e);
    if (st) {
        free(v->bpe);
        v->bpe = NULL;
        return st;
    }
    v->n = BPE_BYTE_TOKENS + n_merges;
    return CDL_OK;
}

int text_vocab_learn_bpe(TextVocab *v, const char *text, size_t len, int vocab_size, Error *e)
{
    memset(v, 0, sizeof *v);
    int32_t *merges;
    int n_merges;
    int st = bpe_learn(text, len, vocab_size, &merges, &n_merges, e);
    st = st ? st : vocab_from_merges(v, merges, n_merges, "the BPE vocabulary", e);
    free(merges);
    return st;
}

int text_vocab_copy(TextVocab *dst, const TextVocab *src, Error *e)
{
    if (src->bpe)
        return vocab_from_merges(dst, src->bpe->merges, src->bpe->n_merges, "the BPE vocabulary",
                                 e);
    *dst = *src;
    if (!src->code_points)
        return CDL_OK;
    if (!(dst->code_points = malloc((size_t)src->n * sizeof *src->code_points))) {
        memset(dst, 0, sizeof *dst);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    memcpy(dst->code_points, src->code_points, (size_t)src->n * sizeof *src->code_points);
    return CDL_OK;
}

/* Marks the code points of text in seen[]; CDL_EUSAGE at invalid UTF-8 or a NUL. */
static int mark_chars(const char *text, size_t len, const char *path, uint8_t *seen, Error *e)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t at = 0; at < len;) {
        uint32_t c;
        int n = utf8_decode(s + at, len - at, &c);
        if (!n)
            return error_set(e, CDL_EUSAGE,
                             "%s: invalid UTF-8 at byte %zu (use tokens=byte for binary or "
                             "non-UTF-8 text)",
                             path, at);
        if (!c)
            return error_set(e, CDL_EUSAGE,
                             "%s: a NUL character at byte %zu (use tokens=byte for such text)",
                             path, at);
        seen[c] = 1;
        at += (size_t)n;
    }
    return CDL_OK;
}

int text_vocab_build_chars(TextVocab *v, const char *const *texts, const size_t *lens,
                           const char *const *paths, int n_texts, Error *e)
{
    memset(v, 0, sizeof *v);
    uint8_t *seen = calloc(CODE_POINTS, 1);
    if (!seen)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    int st = CDL_OK;
    for (int i = 0; i < n_texts && !st; i++)
        st = mark_chars(texts[i], lens[i], paths[i], seen, e);
    int n = 0;
    for (uint32_t c = 0; c < CODE_POINTS && !st; c++)
        n += seen[c];
    if (!st && !n)
        st = error_set(e, CDL_EUSAGE, "%s: the text is empty", n_texts ? paths[0] : "text");
    if (!st && !(v->code_points = malloc((size_t)n * sizeof *v->code_points)))
        st = error_set(e, CDL_ERUNTIME, "out of memory");
    for (uint32_t c = 0; c < CODE_POINTS && !st; c++)
        if (seen[c])
            v->code_points[v->n++] = c;
    free(seen);
    if (st)
        text_vocab_free(v);
    return st;
}

/* The id of code point c, or -1. */
static int char_id(const TextVocab *v, uint32_t c)
{
    int lo = 0, hi = v->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (v->code_points[mid] == c)
            return mid;
        if (v->code_points[mid] < c)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

int text_vocab_encode(const TextVocab *v, const char *text, size_t len, int32_t *ids, size_t *n_ids,
                      const char *what, Error *e)
{
    *n_ids = 0;
    const unsigned char *s = (const unsigned char *)text;
    if (v->bpe) {
        const int st = bpe_encode(v->bpe, text, len, ids, n_ids, e);
        return st ? error_prefix(e, st, "%s: ", what) : CDL_OK;
    }
    if (v->bytes) {
        for (size_t i = 0; i < len; i++)
            ids[i] = s[i];
        *n_ids = len;
        return CDL_OK;
    }
    for (size_t at = 0; at < len;) {
        uint32_t c;
        int n = utf8_decode(s + at, len - at, &c);
        if (!n)
            return error_set(e, CDL_EUSAGE, "%s: invalid UTF-8 at byte %zu", what, at);
        int id = char_id(v, c);
        if (id < 0) {
            char shown[UTF8_MAX_BYTES + 1] = {0};
            utf8_encode(c, shown);
            return error_set(e, CDL_EUSAGE,
                             "%s: the character '%s' (U+%04X) at byte %zu is not in the "
                             "vocabulary",
                             what, c < 0x20 ? "?" : shown, (unsigned)c, at);
        }
        ids[(*n_ids)++] = id;
        at += (size_t)n;
    }
    return CDL_OK;
}

int text_vocab_decode(const TextVocab *v, int id, char out[TEXT_TOKEN_MAX_BYTES])
{
    if (id < 0 || id >= v->n)
        return 0;
    if (v->bytes) {
        out[0] = (char)id;
        return 1;
    }
    if (v->bpe) {
        size_t len;
        const char *bytes = bpe_token(v->bpe, id, &len);
        memcpy(out, bytes, len);
        return (int)len;
    }
    return utf8_encode(v->code_points[id], out);
}

char *text_vocab_decode_ids(const TextVocab *v, const int32_t *ids, int n, char *text)
{
    size_t at = 0;
    for (int i = 0; i < n; i++)
        at += (size_t)text_vocab_decode(v, ids[i], text + at);
    text[at] = 0;
    return text;
}

int text_vocab_token_bytes(const TextVocab *v, int id)
{
    char text[TEXT_TOKEN_MAX_BYTES];
    return text_vocab_decode(v, id, text);
}

/* The checkpoint form of a BPE: "bpe", then " LEFT RIGHT" per merge. */
static char *bpe_to_string(const Bpe *b)
{
    const size_t cap = 4 + (size_t)b->n_merges * 2 * 12;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t len = (size_t)snprintf(s, cap, "bpe");
    for (int i = 0; i < 2 * b->n_merges; i++)
        len += (size_t)snprintf(s + len, cap - len, " %d", (int)b->merges[i]);
    return s;
}

/* Reads bpe_to_string's form (after "bpe"). */
static int bpe_from_string(TextVocab *v, const char *s, const char *what, Error *e)
{
    const size_t words = strlen(s) / 2 + 1; /* every number takes a space and a digit */
    int32_t *merges = malloc(words * sizeof *merges);
    if (!merges)
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", what);
    size_t n = 0;
    int st = CDL_OK;
    while (*s && !st) {
        char *end;
        errno = 0;
        const long id = *s == ' ' && s[1] >= '0' && s[1] <= '9' ? strtol(s + 1, &end, 10) : -1;
        if (id < 0 || id > INT32_MAX || errno || (*end && *end != ' '))
            st = error_set(e, CDL_EUSAGE, "%s: the BPE vocabulary is malformed", what);
        else {
            merges[n++] = (int32_t)id;
            s = end;
        }
    }
    if (!st && n % 2)
        st = error_set(e, CDL_EUSAGE, "%s: the BPE vocabulary has an odd number of ids", what);
    st = st ? st : vocab_from_merges(v, merges, (int)(n / 2), what, e);
    free(merges);
    return st;
}

char *text_vocab_to_string(const TextVocab *v)
{
    if (v->bpe)
        return bpe_to_string(v->bpe);
    if (v->bytes)
        return strdup("byte");
    char *s = malloc((size_t)v->n * UTF8_MAX_BYTES + 1);
    if (!s)
        return NULL;
    size_t len = 0;
    for (int i = 0; i < v->n; i++)
        len += (size_t)utf8_encode(v->code_points[i], s + len);
    s[len] = 0;
    return s;
}

int text_vocab_from_string(TextVocab *v, const char *s, const char *what, Error *e)
{
    memset(v, 0, sizeof *v);
    if (!strcmp(s, "byte")) {
        text_vocab_bytes(v);
        return CDL_OK;
    }
    if (!strncmp(s, "bpe", 3) && (!s[3] || s[3] == ' '))
        return bpe_from_string(v, s + 3, what, e);
    size_t len = strlen(s);
    if (!len || !(v->code_points = malloc(len * sizeof *v->code_points)))
        return error_set(e, len ? CDL_ERUNTIME : CDL_EUSAGE, "%s: %s", what,
                         len ? "out of memory" : "the vocabulary is empty");
    const unsigned char *u = (const unsigned char *)s;
    for (size_t at = 0; at < len;) {
        uint32_t c;
        int n = utf8_decode(u + at, len - at, &c);
        if (!n || (v->n && c <= v->code_points[v->n - 1])) {
            text_vocab_free(v);
            return error_set(e, CDL_EUSAGE, "%s: the vocabulary is malformed at byte %zu", what,
                             at);
        }
        v->code_points[v->n++] = c;
        at += (size_t)n;
    }
    return CDL_OK;
}
