/* UTF-8 decoding of one code point (util/utf8.h). */
#include "util/utf8.h"

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
