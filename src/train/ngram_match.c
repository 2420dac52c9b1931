/* Clipped n-gram matches (ngram_match.h): the reference's n-grams interned with their counts,
 * then the hypothesis's looked up, order by order. */
#include "train/ngram_match.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash_table.h"
#include "util/utf8.h"

/* 1 when code point cp is white space for Python's str.split(): the ASCII separators and the
 * Unicode ones (categories Zs, Zl, Zp and the bidirectional separators). */
static int is_space(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

int units_split(const char *text, int words, Units *u)
{
    const size_t n_bytes = strlen(text);
    size_t *start = malloc((n_bytes + 1) * sizeof *start),
           *len = malloc((n_bytes + 1) * sizeof *len);
    *u = (Units){text, start, len, 0};
    if (!start || !len) {
        units_free(u);
        return -1;
    }
    int in_word = 0;
    for (size_t i = 0; i < n_bytes;) {
        uint32_t cp;
        int bytes = utf8_decode((const unsigned char *)text + i, n_bytes - i, &cp);
        if (!bytes) { /* a stray byte: a unit of its own, never white space */
            bytes = 1;
            cp = 0xfffd;
        }
        if (is_space(cp))
            in_word = 0;
        else if (words && in_word)
            len[u->n - 1] += (size_t)bytes;
        else {
            start[u->n] = i;
            len[u->n++] = (size_t)bytes;
            in_word = words;
        }
        i += (size_t)bytes;
    }
    return 0;
}

void units_free(Units *u)
{
    free((void *)u->start);
    free((void *)u->len);
    u->start = u->len = NULL;
}

/* The bytes of the n-gram at unit k into key (each unit followed by a NUL, so that units stay
 * apart); returns its length. */
static size_t ngram_key(const Units *u, int k, int n, char *key)
{
    size_t at = 0;
    for (int i = k; i < k + n; i++) {
        memcpy(key + at, u->text + u->start[i], u->len[i]);
        at += u->len[i];
        key[at++] = 0;
    }
    return at;
}

/* The largest n-gram key of u. */
static size_t longest_key(const Units *u, int max_order)
{
    size_t longest = 0;
    for (int k = 0; k < u->n; k++) {
        size_t bytes = 0;
        for (int i = k; i < u->n && i < k + max_order; i++)
            bytes += u->len[i] + 1;
        longest = bytes > longest ? bytes : longest;
    }
    return longest;
}

int ngram_match(const Units *hyp, const Units *ref, int max_order, NgramStats *stats)
{
    const size_t h_key = longest_key(hyp, max_order), r_key = longest_key(ref, max_order);
    char *key = malloc((h_key > r_key ? h_key : r_key) + 1);
    long *left = malloc(((size_t)ref->n + 1) * sizeof *left); /* per reference n-gram */
    int st = key && left ? 0 : -1;
    for (int n = 1; n <= max_order && !st; n++) {
        ByteSet set = {0};
        NgramStats s = {hyp->n >= n ? hyp->n - n + 1 : 0, ref->n >= n ? ref->n - n + 1 : 0, 0};
        for (int k = 0; k + n <= ref->n && !st; k++) {
            int added;
            const int32_t i = byte_set_intern(&set, key, ngram_key(ref, k, n, key), &added);
            if (i < 0)
                st = -1;
            else
                left[i] = added ? 1 : left[i] + 1;
        }
        for (int k = 0; k + n <= hyp->n && !st; k++) {
            const int32_t i = byte_set_find(&set, key, ngram_key(hyp, k, n, key));
            if (i >= 0 && left[i] > 0) {
                left[i]--;
                s.match++;
            }
        }
        byte_set_free(&set);
        stats[n - 1] = s;
    }
    free(key);
    free(left);
    return st;
}
