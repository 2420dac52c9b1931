/* UTF-8 decoding of one code point, strict: what the text vocabularies and the BPE pre-split
 * read text with; and the two ways a name read from a file (an ONNX node, a class, a path) is
 * made safe to write: escaped into one printable line, or made valid UTF-8 for JSON. */
#ifndef CDL_UTIL_UTF8_H
#define CDL_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the code point at s[0..len) (len >= 1) into *cp; returns its byte count, or 0 for
 * invalid UTF-8 (a bad lead byte, a missing continuation, an overlong form, a surrogate, a
 * value past U+10FFFF). */
int utf8_decode(const unsigned char *s, size_t len, uint32_t *cp);

/* Writes s into out (size > 0 bytes, NUL-terminated; cut before an escape that does not fit) as
 * one line of printable text, for a cfg comment or a terminal: valid UTF-8 and tab are kept,
 * every other control character (a newline, ESC, DEL, U+0080..U+009F) and every byte of
 * invalid UTF-8 becomes \xNN per byte.
 * Returns out. */
char *utf8_escape_line(const char *s, char *out, size_t size);

/* For JSON, which must be UTF-8: when s is not valid UTF-8, *copy = a copy (malloc'd) with each
 * byte of invalid UTF-8 replaced by U+FFFD, and returns 1; returns 0 when s is valid (*copy is
 * left alone), -1 when out of memory. */
int utf8_valid_copy(const char *s, char **copy);

#endif
