/* Fuzz target: text vocabularies in their checkpoint form (text_vocab_from_string): a vocabulary
 * read from the input must survive its own checkpoint form, and text in it (the input itself,
 * when the vocabulary accepts it) must encode into ids that decode back to the same bytes.
 * Building a vocabulary from a corpus (text_vocab_build_chars) is left to the data_config
 * target: it walks every Unicode code point (two passes over 0x110000), about 20 ms per call
 * under the sanitizers, which would cap this target at ~40 executions a second. */
#include <stdlib.h>
#include <string.h>

#include "data/text_vocab.h"
#include "fuzz.h"

/* Checks that text, which v accepted, round-trips through v. */
static void check_round_trip(const TextVocab *v, const char *text, size_t size, const int32_t *ids,
                             size_t n_ids)
{
    size_t at = 0;
    for (size_t i = 0; i < n_ids; i++) {
        char token[TEXT_TOKEN_MAX_BYTES];
        const int len = text_vocab_decode(v, ids[i], token);
        if (len <= 0 || at + (size_t)len > size || memcmp(text + at, token, (size_t)len))
            fuzz_fail("token %zu (id %d) does not decode to the text's bytes", i, ids[i]);
        at += (size_t)len;
    }
    if (at != size)
        fuzz_fail("the tokens decode to %zu bytes of %zu", at, size);
}

static void check_vocab(const TextVocab *v, const char *text, size_t size)
{
    char *s = text_vocab_to_string(v);
    TextVocab again;
    Error e;
    if (!s)
        return;
    if (text_vocab_from_string(&again, s, "fuzz", &e))
        fuzz_fail("a vocabulary's own string is refused: %s", e.msg);
    if (again.n != v->n || again.bytes != v->bytes || !again.bpe != !v->bpe ||
        !again.code_points != !v->code_points ||
        (v->code_points &&
         memcmp(again.code_points, v->code_points, (size_t)v->n * sizeof *v->code_points)))
        fuzz_fail("a vocabulary of %d tokens reads back as %d", v->n, again.n);
    text_vocab_free(&again);
    free(s);
    int32_t *ids = malloc((size ? size : 1) * sizeof *ids);
    size_t n_ids = 0;
    if (ids && text_vocab_encode(v, text, size, ids, &n_ids, "fuzz", &e) == CDL_OK)
        check_round_trip(v, text, size, ids, n_ids);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    TextVocab v;
    Error e;
    if (text_vocab_from_string(&v, text, "fuzz", &e) == CDL_OK) {
        check_vocab(&v, text, size);
        text_vocab_free(&v);
    }
    free(text);
    return 0;
}
