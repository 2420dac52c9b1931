/* Corpus BLEU (bleu.h), following sacreBLEU 2.x's metrics/bleu.py and
 * tokenizers/tokenizer_13a.py rule by rule. */
#include "train/bleu.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "train/ngram_match.h"
#include "util/utf8.h"

/* A copy of s with every `from` replaced by `to` (len(to) <= len(from)), as Python's
 * str.replace. */
static char *replace_all(char *s, const char *from, const char *to)
{
    const size_t from_len = strlen(from), to_len = strlen(to);
    char *w = s;
    for (const char *r = s; *r;) {
        if (!strncmp(r, from, from_len)) {
            memcpy(w, to, to_len);
            w += to_len;
            r += from_len;
        } else
            *w++ = *r++;
    }
    *w = 0;
    return s;
}

/* 1 for the characters the first rule puts spaces around: [\{-\~\[-\` -\&\(-\+\:-\@\/]. */
static int spaced_punctuation(unsigned char c)
{
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

static int digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* One of the tokenizer's regular expressions applied as re.sub does (left to right, matches
 * not overlapping), from `in` into `out` (room for 3 bytes per byte of in): rule 1 puts spaces
 * around punctuation; rule 2 splits a period or comma from a non-digit before it
 * ([^0-9])([\.,]) -> '\1 \2 '; rule 3 from a non-digit after it ([\.,])([^0-9]) -> ' \1 \2';
 * rule 4 a dash after a digit ([0-9])(-) -> '\1 \2 '. Byte by byte: the ASCII of the patterns
 * never occurs inside a multi-byte character, and [^0-9] meets a character's last byte (rule 2)
 * or first (rule 3) exactly where it meets the character. */
static void apply_rule(int rule, const unsigned char *in, char *out)
{
    char *w = out;
    for (size_t i = 0; in[i];) {
        const unsigned char c = in[i], next = in[i + 1];
        const int point = next == '.' || next == ',';
        if (rule == 1 && spaced_punctuation(c)) {
            *w++ = ' ';
            *w++ = (char)c;
            *w++ = ' ';
            i++;
            continue;
        }
        const int two = (rule == 2 && next && !digit(c) && point) ||
                        (rule == 3 && (c == '.' || c == ',') && next && !digit(next)) ||
                        (rule == 4 && digit(c) && next == '-');
        if (!two) {
            *w++ = (char)in[i++];
            continue;
        }
        if (rule == 3)
            *w++ = ' ';
        *w++ = (char)c;
        *w++ = ' ';
        *w++ = (char)next;
        if (rule != 3)
            *w++ = ' ';
        i += 2;
    }
    *w = 0;
}

char *bleu_tokenize_13a(const char *line)
{
    const size_t n = strlen(line);
    /* the rules at most triple, then double, double and double the text */
    const size_t room = 24 * (n + 2) + 1;
    char *a = malloc(room), *b = malloc(room);
    if (!a || !b) {
        free(a);
        free(b);
        return NULL;
    }
    /* rstrip: the trailing white space words-splitting sees */
    Units u;
    if (units_split(line, 1, &u)) {
        free(a);
        free(b);
        return NULL;
    }
    const size_t kept = u.n ? u.start[u.n - 1] + u.len[u.n - 1] : 0;
    units_free(&u);
    a[0] = ' ';
    memcpy(a + 1, line, kept);
    a[kept + 1] = 0;
    replace_all(a + 1, "<skipped>", "");
    replace_all(a + 1, "-\n", "");
    replace_all(a + 1, "\n", " ");
    if (strchr(a, '&')) {
        replace_all(a + 1, "&quot;", "\"");
        replace_all(a + 1, "&amp;", "&");
        replace_all(a + 1, "&lt;", "<");
        replace_all(a + 1, "&gt;", ">");
    }
    strcat(a, " ");
    /* a -> b -> a -> b -> a: each rule reads the last one's output */
    apply_rule(1, (const unsigned char *)a, b);
    apply_rule(2, (const unsigned char *)b, a);
    apply_rule(3, (const unsigned char *)a, b);
    apply_rule(4, (const unsigned char *)b, a);
    /* ' '.join(line.split()) */
    if (units_split(a, 1, &u)) {
        free(a);
        free(b);
        return NULL;
    }
    char *w = b;
    for (int k = 0; k < u.n; k++) {
        if (k)
            *w++ = ' ';
        memcpy(w, a + u.start[k], u.len[k]);
        w += u.len[k];
    }
    *w = 0;
    units_free(&u);
    free(a);
    return b;
}

int bleu_add(BleuStats *s, const char *hypothesis, const char *reference)
{
    char *hyp = bleu_tokenize_13a(hypothesis), *ref = bleu_tokenize_13a(reference);
    Units h = {0}, r = {0};
    NgramStats stats[BLEU_ORDER];
    int st = hyp && ref && !units_split(hyp, 1, &h) && !units_split(ref, 1, &r) ? 0 : -1;
    st = st ? st : ngram_match(&h, &r, BLEU_ORDER, stats);
    if (!st) {
        s->sys_len += h.n;
        s->ref_len += r.n;
        for (int n = 0; n < BLEU_ORDER; n++) {
            s->correct[n] += stats[n].match;
            s->total[n] += stats[n].hyp;
        }
    }
    units_free(&h);
    units_free(&r);
    free(hyp);
    free(ref);
    return st;
}

/* sacreBLEU's my_log: log, floored for 0. */
static double floored_log(double x)
{
    return x > 0 ? log(x) : -9999999999.0;
}

double bleu_score(const BleuStats *s)
{
    double bp = 1.0;
    if (s->sys_len < s->ref_len)
        bp = s->sys_len > 0 ? exp(1.0 - (double)s->ref_len / (double)s->sys_len) : 0.0;
    long any = 0;
    for (int n = 0; n < BLEU_ORDER; n++)
        any += s->correct[n];
    if (!any)
        return 0.0;
    double precisions[BLEU_ORDER] = {0}, smooth = 1.0, log_sum = 0.0;
    for (int n = 0; n < BLEU_ORDER && s->total[n] > 0; n++) {
        if (s->correct[n] == 0) {
            smooth *= 2;
            precisions[n] = 100.0 / (smooth * (double)s->total[n]);
        } else
            precisions[n] = 100.0 * (double)s->correct[n] / (double)s->total[n];
    }
    for (int n = 0; n < BLEU_ORDER; n++)
        log_sum += floored_log(precisions[n]);
    return bp * exp(log_sum / BLEU_ORDER);
}
