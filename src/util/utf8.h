/* UTF-8 decoding of one code point, strict: what the text vocabularies and the BPE pre-split
 * read text with. */
#ifndef CDL_UTIL_UTF8_H
#define CDL_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the code point at s[0..len) (len >= 1) into *cp; returns its byte count, or 0 for
 * invalid UTF-8 (a bad lead byte, a missing continuation, an overlong form, a surrogate, a
 * value past U+10FFFF). */
int utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);

#endif
