/* Text datasets for sequence nets: the token streams of a `.data` file with type=text, training
 * windows at random offsets and validation windows in order.
 *
 * A window of T+1 consecutive tokens gives one sample: its first T tokens are the input
 * [1][T][1] (token ids as floats; or [1][T][V] one-hot when the net's inputs equal the vocabulary
 * V, as darknet's recurrent cfgs take bytes), its last T the labels [T], each the token after the
 * input token at the same position. */
#ifndef CDL_TEXT_DATA_H
#define CDL_TEXT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "data/data_config.h"
#include "data/text_pairs.h"
#include "data/text_vocab.h"

typedef struct TokenStream {
    int32_t *ids; /* [n] */
    size_t n;
    const uint32_t *token_bytes; /* [vocab] the bytes of each token's text (TextData's) */
} TokenStream;

typedef struct TextData {
    TextVocab vocab;
    TokenStream train, valid; /* valid.n = 0 when there is no validation text */
    /* type=pairs: the pairs of a sequence-to-sequence net (train and valid above stay empty) */
    TextPairs pairs;
    uint32_t *token_bytes; /* [vocab.n] */
    size_t train_bytes;    /* the train= text's */
    double learn_s;        /* seconds spent learning the BPE merges (0: none learned) */
} TextData;

/* Reads train= (and valid=) of a type=text DataConfig, or the pairs of a type=pairs one
 * (data/text_pairs.h: the vocabulary is then built from every side of every pair, and always
 * holds the start and end marks STX and ETX). vocab NULL: the vocabulary is built from
 * the text (dc->tokens_bytes: bytes; dc->tokens_bpe: the BPE merges learned from the training
 * text, without the held-out tail when valid_split is set; else the characters of train and
 * valid); otherwise the text is encoded with a copy of *vocab (a resumed model's) and a
 * character outside it is an error. valid_split=F holds out the last F of the training tokens.
 * Errors name the file. */
int text_data_load(const DataConfig *dc, const TextVocab *vocab, TextData *td, Error *e);
void text_data_free(TextData *td);
/* A fingerprint of the token streams (train, then valid), as source_fingerprint of images. */
uint64_t text_data_fingerprint(const TextData *td);

/* The bytes of text that windows first .. first+count-1 of s predict (their labels), for bits
 * per byte. */
size_t text_predicted_bytes(const TokenStream *s, size_t first, size_t count, int seq);

/* Training windows per epoch: as many as fit in the stream side by side, (n - 1) / seq. */
size_t text_windows(const TokenStream *s, int seq);

/* Fills x and y with windows first .. first+batch-1 of the sequence of windows of seq+1 tokens
 * whose offsets are drawn uniformly from the stream by (seed, draw) only, so that ranks taking
 * first = rank * batch together fill what one process with their summed batch does:
 * x [batch][seq][one_hot ? vocab : 1], y [batch][seq]. The stream must hold more than seq
 * tokens. No allocation. */
void text_fill_random(const TokenStream *s, uint64_t seed, uint64_t draw, int first, int batch,
                      int seq, int one_hot_vocab, float *x, int *y);
/* Fills x and y with windows first .. first+batch-1 of the stream side by side (window k starts at
 * token k*seq); the samples past the last window get labels -1 (no loss) and zero input. */
void text_fill_in_order(const TokenStream *s, size_t first, int batch, int seq, int one_hot_vocab,
                        float *x, int *y);

#endif
