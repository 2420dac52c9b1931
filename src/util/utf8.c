/* UTF-8 decoding of one code point, escaping and repair of names (util/utf8.h). */
#include "util/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
    static const uint32_t min_of_length[] = {0, 0, 0x80, 0x800, 0x10000};
    const int n = s[0] < 0x80             ? 1
                  : (s[0] & 0xE0) == 0xC0 ? 2
                  : (s[0] & 0xF0) == 0xE0 ? 3
                  : (s[0] & 0xF8) == 0xF0 ? 4
                                          : 0;
    if (!n || (size_t)n > len)
        return 0;
    uint32_t c = n == 1 ? s[0] : s[0] & (0x7Fu >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    if (c < min_of_length[n] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

char *utf8_escape_line(const char *s, char *out, size_t size)
{
    const unsigned char *u = (const unsigned char *)s;
    const size_t len = strlen(s);
    size_t at = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int n = utf8_decode(u + i, len - i, &cp);
        const int printable =
            n > 0 && (cp == '\t' || (cp >= 0x20 && cp != 0x7F && (cp < 0x80 || cp >= 0xA0)));
        const size_t need = printable ? (size_t)n : 4;
        if (at + need >= size)
            break;
        if (printable)
            memcpy(out + at, u + i, (size_t)n);
        else
            snprintf(out + at, 5, "\\x%02X", u[i]);
        at += need;
        i += printable ? (size_t)n : 1;
    }
    out[at] = '\0';
    return out;
}

int utf8_valid_copy(const char *s, char **copy)
{
    const unsigned char *u = (const unsigned char *)s;
    const size_t len = strlen(s);
    size_t bad = 0;
    uint32_t cp;
    for (size_t i = 0; i < len;) {
        const int n = utf8_decode(u + i, len - i, &cp);
        bad += n == 0;
        i += n ? (size_t)n : 1;
    }
    if (!bad)
        return 0;
    char *out = malloc(len + 2 * bad + 1), *at = out;
    if (!out)
        return -1;
    for (size_t i = 0; i < len;) {
        const int n = utf8_decode(u + i, len - i, &cp);
        memcpy(at, n ? s + i : "\xEF\xBF\xBD", n ? (size_t)n : 3);
        at += n ? n : 3;
        i += n ? (size_t)n : 1;
    }
    *at = '\0';
    *copy = out;
    return 1;
}
