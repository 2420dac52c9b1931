/* Clipped n-gram matches of a hypothesis against one reference, what BLEU (word n-grams) and
 * chrF (character n-grams) count: a sequence is a list of units (words or code points), each a
 * span of bytes, and two n-grams are equal when their units' bytes are. */
#ifndef CDL_NGRAM_MATCH_H
#define CDL_NGRAM_MATCH_H

#include <stddef.h>

/* A sequence of n units: unit k is text[start[k] .. start[k] + len[k]). */
typedef struct Units {
    const char *text;
    const size_t *start, *len;
    int n;
} Units;

/* Of one n-gram order: the hypothesis's n-grams, the reference's, and the hypothesis's that
 * the reference holds, each counted at most as often as the reference holds it. */
typedef struct NgramStats {
    long hyp, ref, match;
} NgramStats;

/* stats[n - 1] for n = 1..max_order; returns 0, or -1 when out of memory. */
int ngram_match(const Units *hyp, const Units *ref, int max_order, NgramStats *stats);

/* Splits text into units: words separated by white space as Python's str.split() sees it
 * (words = 1), or the code points other than white space (words = 0); invalid UTF-8 counts
 * byte by byte. *start and *len are malloc'd [n]; returns 0, or -1 when out of memory. */
int units_split(const char *text, int words, Units *u);
void units_free(Units *u);

#endif
