/* Byte and character vocabularies: UTF-8 decoding, building, encoding and decoding. */
#include "data/text_vocab.h"

#include <stdlib.h>
#include <string.h>

enum { CODE_POINTS = 0x110000 };

/* Decodes the code point at s[0..len) (len >= 1) into *cp; returns its byte count, or 0 for
 * invalid UTF-8 (a bad lead byte, a missing continuation, an overlong form, a surrogate). */
static int utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
    static const uint32_t min_of_length[] = {0, 0, 0x80, 0x800, 0x10000};
    int n = s[0] < 0x80             ? 1
            : (s[0] & 0xE0) == 0xC0 ? 2
            : (s[0] & 0xF0) == 0xE0 ? 3
            : (s[0] & 0xF8) == 0xF0 ? 4
                                    : 0;
    if (!n || (size_t)n > len)
        return 0;
    uint32_t c = n == 1 ? s[0] : s[0] & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    if (c < min_of_length[n] || c >= CODE_POINTS || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

static int utf8_encode(uint32_t c, char out[TEXT_TOKEN_MAX_BYTES])
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
    memset(v, 0, sizeof *v);
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
            char shown[TEXT_TOKEN_MAX_BYTES + 1] = {0};
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
    return utf8_encode(v->code_points[id], out);
}

char *text_vocab_to_string(const TextVocab *v)
{
    if (v->bytes)
        return strdup("byte");
    char *s = malloc((size_t)v->n * TEXT_TOKEN_MAX_BYTES + 1);
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
