/* Paired text for sequence-to-sequence nets (a .data file's type=pairs): source and target token
 * ids of each pair, a seeded validation split, and the samples a net of S source and T target
 * rows reads ([net] source=S, seq=T).
 *
 * A pair is a line `source<TAB>target` of a TSV file, or line i of the train= file with line i of
 * the train_target= file. Sample layout (the net input [S + T] ids as floats, labels [T]):
 *
 *   x = s_1 .. s_n, -1 ..          (the source, padded with -1 to S)
 *       BOS t_1 .. t_m, -1 ..      (the target after BOS, padded to T)
 *   y = t_1 .. t_m EOS, -1 ..      (the token after each target row; -1: no loss)
 *
 * BOS and EOS are the tokens of the control characters STX (U+0002) and ETX (U+0003), which the
 * vocabulary always holds and a pair may not contain. A pair fits a net when n <= S and
 * m + 1 <= T.
 *
 * Length buckets (a .data file's bucket=N): the training pairs are ordered by the rows of their
 * longer part (max(n, m + 1)), then target length, source length and place in the file, and
 * cut into buckets of N (the last one also holds the rest). A batch draws one pair uniformly from
 * all, then the others uniformly from that pair's bucket, by (seed, draw) alone: every pair is
 * drawn as often as without buckets, a batch's pairs are of similar length, so its padding stays
 * small (a net computes it at its longest pair's rows: core/net.h net_fit_rows), and a resumed
 * run draws the same batches. */
#ifndef CDL_TEXT_PAIRS_H
#define CDL_TEXT_PAIRS_H

#include <stddef.h>
#include <stdint.h>

#include "data/data_config.h"
#include "data/text_vocab.h"

/* The characters that mark a target's start (BOS) and end (EOS). */
#define TEXT_PAIR_BOS "\x02"
#define TEXT_PAIR_EOS "\x03"

/* One pair: the source's ids at TextPairs.ids[source .. source + n_source), the target's at
 * [target .. target + n_target). */
typedef struct TextPair {
    size_t source, target;
    int n_source, n_target;
} TextPair;

typedef struct PairSet {
    TextPair *pairs; /* [n] */
    size_t n;
} PairSet;

typedef struct TextPairs {
    int32_t *ids; /* every pair's tokens */
    PairSet train, valid;
    int bos, eos; /* the token ids of STX and ETX */
    int bucket;   /* pairs per length bucket of train (text_pairs_bucket); 0: none */
} TextPairs;

/* The bytes of one set's pair files: a TSV file, or the sources' file, a newline, then the
 * targets' file from target_at on (0 for TSV). */
typedef struct PairText {
    char *text;
    size_t len, target_at;
    const char *path, *target_path; /* target_path NULL for TSV */
} PairText;

/* Reads the pair files of dc: texts[0] train= (and train_target=), texts[1] valid= (and
 * valid_target=) when given (*n_texts 1 or 2), and checks every pair: a TSV line without exactly
 * one tab, an empty side, invalid UTF-8, a NUL, STX or ETX, or two files of different line counts
 * is CDL_EUSAGE naming FILE:LINE (the files and their counts); a missing file is CDL_ERUNTIME. */
int text_pairs_read(const DataConfig *dc, PairText texts[2], int *n_texts, Error *e);
void text_pairs_free_texts(PairText texts[2]);
/* *joined (malloc'd, *len bytes, NUL-terminated) = every side of every pair of texts, in order,
 * each followed by sep ("" or one byte): the text a vocabulary is built from, without the tabs
 * and line breaks that only separate the sides. */
int text_pairs_sides(const PairText *texts, int n_texts, const char *sep, char **joined,
                     size_t *len, Error *e);

/* Encodes the pairs of texts (text_pairs_read's) with vocab, which holds STX and ETX: the valid
 * set from texts[1] when n_texts is 2, else valid_split of the pairs drawn by split_seed. A
 * character outside the vocabulary is CDL_EUSAGE naming FILE:LINE. */
int text_pairs_load(const PairText *texts, int n_texts, float valid_split, uint64_t split_seed,
                    const TextVocab *vocab, TextPairs *tp, Error *e);
void text_pairs_free(TextPairs *tp);

/* The tokens of every side of every pair of set. */
size_t text_pairs_tokens(const PairSet *set);

/* Drops the pairs of train and valid that do not fit source=S, seq=T (see above); returns how
 * many were dropped. */
size_t text_pairs_fit(TextPairs *tp, int source, int seq);

/* Orders the training pairs by length and draws batches from buckets of `bucket` pairs (see
 * above); 0: leaves them as they are, drawn from all. After text_pairs_fit. */
void text_pairs_bucket(TextPairs *tp, int bucket);
/* Orders pairs [n] as the buckets' (see above): by the rows of their longer part, then target
 * length, source length and place in the file. */
void text_pairs_sort_by_length(TextPair *pairs, size_t n);

/* One sample's input row x [S + T] (see above): source_ids [n_source], then BOS and target_ids
 * [n_target] (n_target -1: no target row, all padding), each part padded with -1. */
void text_pairs_input_row(const int32_t *source_ids, int n_source, int bos,
                          const int32_t *target_ids, int n_target, int source, int seq, float *x);
/* Fills sample b of x [batch][S + T] and y [batch][T] with pair p (NULL: padding only, no
 * labels). */
void text_pairs_fill(const TextPairs *tp, const TextPair *p, int b, int source, int seq, float *x,
                     int *y);
/* Fills samples 0 .. batch-1 with pairs of train drawn uniformly by (seed, draw) only, after the
 * `first` draws of the ranks before this one (as text_fill_random); with buckets, from the bucket
 * of the draw's first pair, the same on every rank. No allocation. */
void text_pairs_fill_random(const TextPairs *tp, uint64_t seed, uint64_t draw, int first, int batch,
                            int source, int seq, float *x, int *y);

#endif
