/* Corpus BLEU as sacreBLEU computes it by default (BLEU(): the 13a tokenizer, case kept, n-grams
 * up to 4, the 'exp' smoothing, one reference per hypothesis): the statistics of each pair are
 * summed over the corpus, then scored once. */
#ifndef CDL_BLEU_H
#define CDL_BLEU_H

#define BLEU_ORDER 4

typedef struct BleuStats {
    long sys_len, ref_len;                       /* tokens of the hypotheses, the references */
    long correct[BLEU_ORDER], total[BLEU_ORDER]; /* clipped matches, hypothesis n-grams */
} BleuStats;

/* mteval-v13a's tokenization of line (sacreBLEU's Tokenizer13a, after its rstrip): tokens
 * separated by single spaces, malloc'd; NULL when out of memory. */
char *bleu_tokenize_13a(const char *line);

/* Adds the pair (hypothesis, reference) to s; returns 0, or -1 when out of memory. */
int bleu_add(BleuStats *s, const char *hypothesis, const char *reference);

/* The corpus score in [0, 100]. */
double bleu_score(const BleuStats *s);

#endif
