/* The token vocabulary of a text model: bytes (256 ids), the distinct characters (Unicode code
 * points) of a corpus in code-point order, or byte-level BPE tokens (the bytes and merges learned
 * from a corpus: data/bpe.h). It is stored in the model's checkpoint, so encoding a prompt and
 * decoding generated tokens need nothing but the model. */
#ifndef CDL_TEXT_VOCAB_H
#define CDL_TEXT_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "data/bpe.h"
#include "util/error.h"

typedef struct TextVocab {
    int bytes;             /* 1: token i is byte value i (n = 256) */
    int n;                 /* tokens (0: no vocabulary) */
    uint32_t *code_points; /* [n] ascending; NULL for bytes and BPE */
    Bpe *bpe;              /* BPE tokens (n = 256 + merges); NULL else */
} TextVocab;

/* The longest text of one token (a BPE token is at most one pre-split piece). */
enum { TEXT_TOKEN_MAX_BYTES = 256 };

/* The byte vocabulary (allocates nothing). */
void text_vocab_bytes(TextVocab *v);
/* The characters of texts[0..n_texts) (UTF-8, lengths lens): every distinct code point, in order.
 * Invalid UTF-8 or a NUL character is CDL_EUSAGE naming paths[i] and the byte offset. */
int text_vocab_build_chars(TextVocab *v, const char *const *texts, const size_t *lens,
                           const char *const *paths, int n_texts, Error *e);
/* The BPE vocabulary learned from text[0..len) with at most vocab_size tokens (fewer when the
 * text runs out of pairs to merge). vocab_size < 256 is CDL_EUSAGE. */
int text_vocab_learn_bpe(TextVocab *v, const char *text, size_t len, int vocab_size, Error *e);
/* A deep copy of src into dst. */
int text_vocab_copy(TextVocab *dst, const TextVocab *src, Error *e);
/* Token ids of text[0..len) into ids (room for len ids; *n_ids set). A character outside the
 * vocabulary (or invalid UTF-8) is CDL_EUSAGE "WHAT: the character 'X' (U+XXXX) at byte N is not
 * in the vocabulary". */
int text_vocab_encode(const TextVocab *v, const char *text, size_t len, int32_t *ids, size_t *n_ids,
                      const char *what, Error *e);
/* The text of token id into out (not NUL-terminated); returns its byte count (0 for an id
 * outside the vocabulary). */
int text_vocab_decode(const TextVocab *v, int id, char out[TEXT_TOKEN_MAX_BYTES]);
/* text [n * TEXT_TOKEN_MAX_BYTES + 1] = the texts of ids [n] one after another, NUL-terminated;
 * returns text. */
char *text_vocab_decode_ids(const TextVocab *v, const int32_t *ids, int n, char *text);
/* The bytes of token id's text (0 for an id outside the vocabulary). */
int text_vocab_token_bytes(const TextVocab *v, int id);
/* The checkpoint form (malloc'd; NULL when out of memory): "byte"; "bpe" followed by each merge's
 * two token ids in order, all separated by spaces ("bpe 32 116 104 101"); or every character in
 * order as one UTF-8 string. */
char *text_vocab_to_string(const TextVocab *v);
/* Reads text_vocab_to_string's form; CDL_EUSAGE naming what when it is malformed. */
int text_vocab_from_string(TextVocab *v, const char *s, const char *what, Error *e);
/* Frees and zeroes v; safe on a zeroed vocabulary. */
void text_vocab_free(TextVocab *v);

#endif
