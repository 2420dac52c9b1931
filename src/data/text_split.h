/* The pre-split of byte-level BPE: text cut into the pieces that merges never cross, as GPT-2's
 * pattern cuts it:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * so a word keeps the space before it (" the"), digits and punctuation runs are their own pieces,
 * and a run of spaces gives all but its last to a piece of its own. The Unicode classes are
 * approximated without tables: letters are ASCII letters and the code points of the letter
 * blocks (Latin-1 letters, Latin Extended, Greek to Ethiopic, CJK, Hangul, ...), digits are
 * 0-9, spaces are ASCII and Unicode white space; everything else, invalid UTF-8 bytes included,
 * is "other". A piece longer than TEXT_SPLIT_MAX_BYTES is cut every TEXT_SPLIT_MAX_BYTES bytes,
 * which bounds a token's length and the work of merging one piece. Every byte belongs to exactly
 * one piece. */
#ifndef CDL_TEXT_SPLIT_H
#define CDL_TEXT_SPLIT_H

#include <stddef.h>

enum { TEXT_SPLIT_MAX_BYTES = 256 };

/* The end of the piece that starts at s[at] (at < len): a position in at+1 .. len, at most
 * at + TEXT_SPLIT_MAX_BYTES. */
size_t text_split_next(const char *s, size_t len, size_t at);

#endif
