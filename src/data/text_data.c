/* Reading and tokenising text datasets; training and validation windows. */
#include "data/text_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/file.h"
#include "util/hash_table.h"
#include "util/rng.h"
#include "util/timer.h"

/* The whole file at path (malloc'd, *len bytes). */
static int read_whole(const char *path, char **text, size_t *len, Error *e)
{
    const int failure = file_read_path(path, FILE_MAX_TEXT_BYTES, "text", text, len, e);
    const size_t bom = failure ? 0 : file_bom_bytes(*text); /* not a token of the text */
    if (bom) {
        memmove(*text, *text + bom, *len + 1 - bom);
        *len -= bom;
    }
    return failure;
}

/* A text that is not there yet: when a comment of the .data file at data_path names the script
 * that writes it (cfg/kjv.data: "Write it first with scripts/text-data.sh"), e says so. */
static void say_script(const char *data_path, Error *e)
{
    FILE *f = fopen(data_path, "r");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        const char *script = line[0] == '#' ? strstr(line, "scripts/") : NULL;
        if (script) {
            int len = (int)strcspn(script, " \t\r\n,;");
            len -= script[len - 1] == '.'; /* the sentence's full stop */
            error_append(e, e->code, "; %s says to write it first with %.*s", data_path, len,
                         script);
            break;
        }
    }
    if (f)
        fclose(f);
}

static int encode(const TextVocab *v, const char *text, size_t len, const char *path,
                  TokenStream *s, Error *e)
{
    if (!(s->ids = malloc((len + 1) * sizeof *s->ids)))
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    return text_vocab_encode(v, text, len, s->ids, &s->n, path, e);
}

/* table[t] = the bytes of token t's text. */
static int token_byte_table(const TextVocab *v, uint32_t **table, Error *e)
{
    if (!(*table = malloc((size_t)v->n * sizeof **table)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    for (int t = 0; t < v->n; t++)
        (*table)[t] = (uint32_t)text_vocab_token_bytes(v, t);
    return CDL_OK;
}

/* The vocabulary of the texts (train's, then valid's) as type=text builds it: vocab's copy, the
 * bytes, the BPE merges of texts[0] (learned_bytes of it), or every character of them, with
 * `extra` (len extra_len) as one more text. */
static int build_vocab(const DataConfig *dc, const TextVocab *vocab, char *const *texts,
                       const size_t *lens, const char *const *paths, int n_texts, size_t learned,
                       const char *extra, size_t extra_len, TextData *td, Error *e)
{
    if (vocab)
        return text_vocab_copy(&td->vocab, vocab, e);
    if (dc->tokens_bytes) {
        text_vocab_bytes(&td->vocab);
        return CDL_OK;
    }
    if (dc->tokens_bpe) {
        const double start_s = time_now_s();
        const int st = text_vocab_learn_bpe(&td->vocab, texts[0], learned, dc->vocab_size, e);
        td->learn_s = time_now_s() - start_s;
        return st ? error_prefix(e, st, "%s: ", paths[0]) : CDL_OK;
    }
    const char *all[3] = {texts[0], n_texts > 1 ? texts[1] : extra, extra};
    const size_t all_lens[3] = {lens[0], n_texts > 1 ? lens[1] : extra_len, extra_len};
    const char *all_paths[3] = {paths[0], n_texts > 1 ? paths[1] : "", ""};
    return text_vocab_build_chars(&td->vocab, all, all_lens, all_paths, n_texts + (extra_len > 0),
                                  e);
}

/* type=pairs: the pairs' vocabulary (with the start and end marks) and their ids. The vocabulary
 * is built from the pairs' sides alone; BPE learns from them one a line (a merge never crosses a
 * line break), characters from them side by side. */
static int load_pairs(const DataConfig *dc, const TextVocab *vocab, TextData *td, Error *e)
{
    PairText texts[2];
    int n_texts;
    int st = text_pairs_read(dc, texts, &n_texts, e);
    if (st)
        return st;
    char *sides = NULL;
    size_t len = 0;
    st = text_pairs_sides(texts, dc->tokens_bpe ? 1 : n_texts, dc->tokens_bpe ? "\n" : "", &sides,
                          &len, e);
    const char *paths[1] = {texts[0].path};
    const char marks[] = TEXT_PAIR_BOS TEXT_PAIR_EOS;
    st = st ? st : build_vocab(dc, vocab, &sides, &len, paths, 1, len, marks, 2, td, e);
    st = st ? st : token_byte_table(&td->vocab, &td->token_bytes, e);
    st = st ? st
            : text_pairs_load(texts, n_texts, dc->valid_split, dc->split_seed, &td->vocab,
                              &td->pairs, e);
    td->train_bytes = texts[0].len;
    free(sides);
    text_pairs_free_texts(texts);
    if (st)
        text_data_free(td);
    return st;
}

int text_data_load(const DataConfig *dc, const TextVocab *vocab, TextData *td, Error *e)
{
    if (dc->pairs) {
        memset(td, 0, sizeof *td);
        return load_pairs(dc, vocab, td, e);
    }
    memset(td, 0, sizeof *td);
    char *texts[2] = {NULL, NULL};
    size_t lens[2] = {0, 0};
    const char *paths[2] = {dc->train, dc->valid};
    const int n_texts = dc->valid ? 2 : 1;
    int st = CDL_OK;
    for (int i = 0; i < n_texts && !st; i++)
        if ((st = read_whole(paths[i], &texts[i], &lens[i], e)) && access(paths[i], F_OK))
            say_script(dc->path, e);
    /* The held-out tail is cut from the tokens later: approximate it by bytes for BPE here. */
    const size_t learned =
        dc->valid ? lens[0] : lens[0] - (size_t)((double)lens[0] * dc->valid_split);
    st = st ? st : build_vocab(dc, vocab, texts, lens, paths, n_texts, learned, NULL, 0, td, e);
    st = st ? st : token_byte_table(&td->vocab, &td->token_bytes, e);
    st = st ? st : encode(&td->vocab, texts[0], lens[0], paths[0], &td->train, e);
    if (!st && dc->valid)
        st = encode(&td->vocab, texts[1], lens[1], paths[1], &td->valid, e);
    if (!st && !dc->valid && dc->valid_split > 0) {
        const size_t held = (size_t)((double)td->train.n * dc->valid_split); /* floor */
        td->valid.ids = malloc((held + 1) * sizeof *td->valid.ids);
        if (!td->valid.ids)
            st = error_set(e, CDL_ERUNTIME, "out of memory");
        else {
            td->train.n -= held;
            memcpy(td->valid.ids, td->train.ids + td->train.n, held * sizeof *td->valid.ids);
            td->valid.n = held;
        }
    }
    free(texts[0]);
    free(texts[1]);
    td->train_bytes = lens[0];
    td->train.token_bytes = td->valid.token_bytes = td->token_bytes;
    if (st)
        text_data_free(td);
    return st;
}

void text_data_free(TextData *td)
{
    if (!td)
        return;
    text_vocab_free(&td->vocab);
    text_pairs_free(&td->pairs);
    free(td->token_bytes);
    free(td->train.ids);
    free(td->valid.ids);
    memset(td, 0, sizeof *td);
}

uint64_t text_data_fingerprint(const TextData *td)
{
    const size_t sizes[2] = {td->train.n, td->valid.n};
    uint64_t h = fnv1a_add(FNV1A_START, sizes, sizeof sizes);
    h = fnv1a_add(h, td->train.ids, td->train.n * sizeof *td->train.ids);
    h = fnv1a_add(h, td->valid.ids, td->valid.n * sizeof *td->valid.ids);
    const PairSet *sets[2] = {&td->pairs.train, &td->pairs.valid};
    for (int k = 0; k < 2; k++) /* the pairs' tokens, in their order */
        for (size_t i = 0; i < sets[k]->n; i++) {
            const TextPair *p = &sets[k]->pairs[i];
            h = fnv1a_add(h, td->pairs.ids + p->source, (size_t)p->n_source * sizeof(int32_t));
            h = fnv1a_add(h, td->pairs.ids + p->target, (size_t)p->n_target * sizeof(int32_t));
        }
    return h;
}

size_t text_predicted_bytes(const TokenStream *s, size_t first, size_t count, int seq)
{
    size_t bytes = 0;
    const size_t end = (first + count) * (size_t)seq;
    for (size_t i = first * (size_t)seq; i < end; i++)
        bytes += s->token_bytes[s->ids[i + 1]];
    return bytes;
}

size_t text_windows(const TokenStream *s, int seq)
{
    return s->n > 0 ? (s->n - 1) / (size_t)seq : 0;
}

/* Sample b of x/y from the seq+1 tokens at ids. */
static void fill_window(const int32_t *ids, int b, int seq, int one_hot_vocab, float *x, int *y)
{
    const size_t width = one_hot_vocab ? (size_t)one_hot_vocab : 1;
    float *xb = x + (size_t)b * (size_t)seq * width;
    int *yb = y + (size_t)b * (size_t)seq;
    if (one_hot_vocab)
        memset(xb, 0, (size_t)seq * width * sizeof *xb);
    for (int t = 0; t < seq; t++) {
        if (one_hot_vocab)
            xb[(size_t)t * width + (size_t)ids[t]] = 1.0f;
        else
            xb[t] = (float)ids[t];
        yb[t] = ids[t + 1];
    }
}

void text_fill_random(const TokenStream *s, uint64_t seed, uint64_t draw, int first, int batch,
                      int seq, int one_hot_vocab, float *x, int *y)
{
    Rng r;
    rng_seed(&r, seed, 0x7e47000000000000ull ^ draw);
    const uint32_t offsets = (uint32_t)(s->n - (size_t)seq); /* starts 0 .. n-seq-1 */
    for (int b = 0; b < first; b++) /* the windows of the ranks before this one */
        (void)rng_below(&r, offsets);
    for (int b = 0; b < batch; b++)
        fill_window(s->ids + rng_below(&r, offsets), b, seq, one_hot_vocab, x, y);
}

void text_fill_in_order(const TokenStream *s, size_t first, int batch, int seq, int one_hot_vocab,
                        float *x, int *y)
{
    const size_t windows = text_windows(s, seq);
    const size_t width = one_hot_vocab ? (size_t)one_hot_vocab : 1;
    for (int b = 0; b < batch; b++) {
        if (first + (size_t)b < windows) {
            fill_window(s->ids + (first + (size_t)b) * (size_t)seq, b, seq, one_hot_vocab, x, y);
            continue;
        }
        memset(x + (size_t)b * (size_t)seq * width, 0, (size_t)seq * width * sizeof *x);
        for (int t = 0; t < seq; t++)
            y[(size_t)b * (size_t)seq + (size_t)t] = -1;
    }
}
