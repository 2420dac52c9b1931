/* Corpus chrF as sacreBLEU computes it by default (CHRF(): character n-grams up to 6 over the
 * text without its white space, beta 2, no word n-grams, sacreBLEU 2's effective-order
 * averaging, one reference per hypothesis): statistics summed over the corpus, scored once. */
#ifndef CDL_CHRF_H
#define CDL_CHRF_H

#include "train/ngram_match.h"

#define CHRF_ORDER 6
#define CHRF_BETA 2

typedef struct ChrfStats {
    NgramStats order[CHRF_ORDER]; /* hyp counts only where the reference has n-grams of n */
} ChrfStats;

/* Adds the pair (hypothesis, reference) to s; returns 0, or -1 when out of memory. */
int chrf_add(ChrfStats *s, const char *hypothesis, const char *reference);

/* The corpus score in [0, 100]. */
double chrf_score(const ChrfStats *s);

#endif
