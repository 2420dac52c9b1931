/* GPT-2's pre-split pattern, written as the regex engine would run it at each position. */
#include "data/text_split.h"

#include <stdint.h>
#include <string.h>

#include "util/utf8.h"

enum { CLASS_LETTER, CLASS_DIGIT, CLASS_SPACE, CLASS_OTHER };

static int is_unicode_space(uint32_t c)
{
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* \p{L} by blocks: the letter ranges of the scripts, without their punctuation blocks. */
static int is_unicode_letter(uint32_t c)
{
    return c == 0xAA || c == 0xB5 || c == 0xBA ||
           (c >= 0xC0 && c <= 0x2FF && c != 0xD7 && c != 0xF7) || (c >= 0x370 && c <= 0x1FFF) ||
           (c >= 0x2C00 && c <= 0x2DFF) || (c >= 0x3040 && c <= 0xD7FF) ||
           (c >= 0xF900 && c <= 0xFDFF) || (c >= 0xFE70 && c <= 0xFEFF) ||
           (c >= 0xFF21 && c <= 0xFF3A) || (c >= 0xFF41 && c <= 0xFF5A) ||
           (c >= 0xFF66 && c <= 0xFFDC) || c >= 0x10000;
}

/* The class of the character at s[at] and its byte count in *n. */
static int class_at(const unsigned char *s, size_t len, size_t at, size_t *n)
{
    const unsigned char b = s[at];
    *n = 1;
    if ((b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z'))
        return CLASS_LETTER;
    if (b >= '0' && b <= '9')
        return CLASS_DIGIT;
    if (b == ' ' || (b >= '\t' && b <= '\r'))
        return CLASS_SPACE;
    uint32_t c;
    const int k = b < 0x80 ? 0 : utf8_decode(s + at, len - at, &c);
    if (!k)
        return CLASS_OTHER;
    *n = (size_t)k;
    return is_unicode_space(c) ? CLASS_SPACE : is_unicode_letter(c) ? CLASS_LETTER : CLASS_OTHER;
}

/* The end of the run of class cls that starts at at. */
static size_t run_end(const unsigned char *s, size_t len, size_t at, int cls)
{
    size_t n;
    while (at < len && class_at(s, len, at, &n) == cls)
        at += n;
    return at;
}

/* The length of the contraction at s[at] ('s 't 're 've 'm 'll 'd), or 0. */
static size_t contraction(const unsigned char *s, size_t len, size_t at)
{
    static const char *const forms[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        const size_t n = strlen(forms[i]);
        if (len - at >= n && !memcmp(s + at, forms[i], n))
            return n;
    }
    return 0;
}

/* The end of the pattern's match at at. */
static size_t match_end(const char *text, size_t len, size_t at)
{
    const unsigned char *s = (const unsigned char *)text;
    const size_t quoted = s[at] == '\'' ? contraction(s, len, at) : 0;
    if (quoted)
        return at + quoted;
    size_t n;
    /* " ?X+": an optional space, then a run of letters, digits or others. */
    const size_t body = s[at] == ' ' && at + 1 < len ? at + 1 : at;
    const int cls = class_at(s, len, body, &n);
    if (cls != CLASS_SPACE)
        return run_end(s, len, body, cls);
    /* White space: to the end of the text, or all but its last character before a non-space
     * (which then takes it as " ?X+" does), or one character when there is just one. */
    size_t end = at, last = at;
    while (end < len && class_at(s, len, end, &n) == CLASS_SPACE) {
        last = end;
        end += n;
    }
    return end == len || last == at ? end : last;
}

size_t text_split_next(const char *text, size_t len, size_t at)
{
    const size_t end = match_end(text, len, at);
    return end - at > TEXT_SPLIT_MAX_BYTES ? at + TEXT_SPLIT_MAX_BYTES : end;
}
