/* Byte-level BPE (tokens=bpe): the GPT-2 pre-split, merges learned by the incremental trainer
 * against a naive recount, encode/decode round trips (any bytes), determinism, the checkpoint
 * form, and the refused inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "data/bpe_learn.h"
#include "data/text_data.h"
#include "data/text_split.h"

/* The pieces of text joined by '|'. */
static void split_joined(const char *text, char *out)
{
    const size_t len = strlen(text);
    size_t n = 0;
    for (size_t at = 0; at < len;) {
        const size_t end = text_split_next(text, len, at);
        if (at)
            out[n++] = '|';
        memcpy(out + n, text + at, end - at);
        n += end - at;
        at = end;
    }
    out[n] = 0;
}

/* The expectations are what the tokenizers package's ByteLevel pre-tokenizer (GPT-2's
 * pattern) gives on the same texts; the invalid bytes and the cut of long runs are cdl's own. */
static void test_split_follows_gpt2_pattern(void)
{
    char out[256];
    split_joined("Hello world's end", out);
    CHECK(!strcmp(out, "Hello| world|'s| end"));
    split_joined("don't  stop\n\nAnd 1234 apples!!", out);
    CHECK(!strcmp(out, "don|'t| | stop|\n|\n|And| 1234| apples|!!"));
    split_joined("a\n   b  ", out);
    CHECK(!strcmp(out, "a|\n  | b|  "));
    split_joined(" 'quoted' (x)", out);
    CHECK(!strcmp(out, " '|quoted|'| (|x|)"));
    split_joined("caf\xc3\xa9 \xe2\x80\x94 na\xc3\xafve", out); /* "café — naïve" */
    CHECK(!strcmp(out, "caf\xc3\xa9| \xe2\x80\x94| na\xc3\xafve"));
    split_joined("ok\xff\xfe!x", out); /* invalid UTF-8 bytes are "other" */
    CHECK(!strcmp(out, "ok|\xff\xfe!|x"));
    /* A run longer than TEXT_SPLIT_MAX_BYTES is cut. */
    char run[TEXT_SPLIT_MAX_BYTES + 11];
    memset(run, 'a', sizeof run);
    CHECK(text_split_next(run, sizeof run, 0) == TEXT_SPLIT_MAX_BYTES);
    CHECK(text_split_next(run, sizeof run, TEXT_SPLIT_MAX_BYTES) == sizeof run);
}

/* The reference trainer: the same rule (most frequent pair over the pieces, ties to the smaller
 * left then right token) with every pair recounted from scratch at every step. */
static int naive_learn(const char *text, size_t len, int vocab_size, int32_t *merges)
{
    int32_t *tok = malloc(len * sizeof *tok);
    size_t *piece_end = malloc(len * sizeof *piece_end); /* piece k ends at piece_end[k] */
    size_t n_pieces = 0;
    for (size_t at = 0; at < len; at = piece_end[n_pieces++])
        piece_end[n_pieces] = text_split_next(text, len, at);
    for (size_t i = 0; i < len; i++)
        tok[i] = (unsigned char)text[i];
    size_t *piece_len = malloc(n_pieces * sizeof *piece_len), *piece_at = malloc(n_pieces * 8);
    for (size_t k = 0; k < n_pieces; k++) {
        piece_at[k] = k ? piece_end[k - 1] : 0;
        piece_len[k] = piece_end[k] - piece_at[k];
    }
    const int cap = vocab_size;
    long *counts = malloc((size_t)cap * (size_t)cap * sizeof *counts);
    int n = 0;
    for (; BPE_BYTE_TOKENS + n < vocab_size; n++) {
        const int tokens = BPE_BYTE_TOKENS + n;
        memset(counts, 0, (size_t)cap * (size_t)cap * sizeof *counts);
        for (size_t k = 0; k < n_pieces; k++)
            for (size_t i = 0; i + 1 < piece_len[k]; i++)
                counts[tok[piece_at[k] + i] * cap + tok[piece_at[k] + i + 1]]++;
        long best = 0;
        int best_l = 0, best_r = 0;
        for (int l = 0; l < tokens; l++)
            for (int r = 0; r < tokens; r++)
                if (counts[l * cap + r] > best) {
                    best = counts[l * cap + r];
                    best_l = l;
                    best_r = r;
                }
        if (!best)
            break;
        merges[2 * n] = best_l;
        merges[2 * n + 1] = best_r;
        for (size_t k = 0; k < n_pieces; k++) {
            int32_t *s = tok + piece_at[k];
            size_t out = 0;
            for (size_t i = 0; i < piece_len[k];) {
                if (i + 1 < piece_len[k] && s[i] == best_l && s[i + 1] == best_r) {
                    s[out++] = tokens;
                    i += 2;
                } else {
                    s[out++] = s[i++];
                }
            }
            piece_len[k] = out;
        }
    }
    free(tok);
    free(piece_end);
    free(piece_len);
    free(piece_at);
    free(counts);
    return n;
}

/* Learns with bpe_learn and with the naive recount; both must agree merge for merge. */
static void check_learn_matches_naive(const char *text, int vocab_size)
{
    const size_t len = strlen(text);
    int32_t *merges, *expected = malloc((size_t)vocab_size * 2 * sizeof *expected);
    int n;
    Error e = {0};
    CHECK(bpe_learn(text, len, vocab_size, &merges, &n, &e) == CDL_OK);
    const int n_expected = naive_learn(text, len, vocab_size, expected);
    CHECK(n == n_expected);
    CHECK(n == n_expected && !memcmp(merges, expected, (size_t)n * 2 * sizeof *merges));
    free(merges);
    free(expected);
}

/* "ab ab ab ac" splits into "ab", " ab", " ab", " ac": (' ','a') and ('a','b') both occur 3
 * times, the tie goes to the smaller left token ' '; then (256,'b') occurs twice, while
 * ('a','b') and (256,'c') occur once: the tie goes to 'a' < 256. */
static void test_tiny_corpus_merges_by_counting(void)
{
    const char *text = "ab ab ab ac";
    int32_t *merges;
    int n;
    Error e = {0};
    CHECK(bpe_learn(text, strlen(text), 259, &merges, &n, &e) == CDL_OK);
    CHECK(n == 3);
    CHECK(merges[0] == ' ' && merges[1] == 'a');
    CHECK(merges[2] == 256 && merges[3] == 'b');
    CHECK(merges[4] == 'a' && merges[5] == 'b');
    free(merges);
    check_learn_matches_naive(text, 300);
    check_learn_matches_naive("aaaa aaa aa a abab ba abba", 300); /* repeated and overlapping */
    check_learn_matches_naive("the cat sat on the mat; the dog ran to the red hat.\nthe cat, "
                              "the hat - and 12 3456 cats' hats don't\n\n  fit",
                              400);
}

/* A text of every kind of byte: words, UTF-8, every byte value, invalid UTF-8. */
static char *mixed_text(size_t *len)
{
    const char *words = "In the beginning God created the heaven and the earth. "
                        "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82 "
                        "don't we'll 2024 --- ...\n\t\r\n";
    const size_t n_words = strlen(words);
    char *s = malloc(n_words * 40 + 256 * 3);
    size_t n = 0;
    for (int r = 0; r < 40; r++, n += n_words)
        memcpy(s + n, words, n_words);
    for (int b = 0; b < 256; b++) { /* every byte, lone continuation and lead bytes included */
        s[n++] = (char)b;
        s[n++] = (char)(255 - b);
        s[n++] = b % 3 ? ' ' : 'x';
    }
    *len = n;
    return s;
}

/* Encodes text with v, checks that decoding gives the same bytes; returns the token count. */
static size_t check_round_trip(const TextVocab *v, const char *text, size_t len)
{
    int32_t *ids = malloc((len + 1) * sizeof *ids);
    char *back = malloc(len + TEXT_TOKEN_MAX_BYTES);
    size_t n = 0, back_len = 0;
    Error e = {0};
    CHECK(text_vocab_encode(v, text, len, ids, &n, "t", &e) == CDL_OK);
    for (size_t i = 0; i < n && back_len <= len; i++) {
        CHECK(ids[i] >= 0 && ids[i] < v->n);
        back_len += (size_t)text_vocab_decode(v, ids[i], back + back_len);
    }
    CHECK(back_len == len && !memcmp(back, text, len));
    if (back_len != len)
        fprintf(stderr, "  %zu bytes back of %zu, %zu tokens\n", back_len, len, n);
    free(ids);
    free(back);
    return n;
}

/* The text of path (NULL when absent); the first max bytes at most. */
static char *read_corpus(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = malloc(max);
    *len = fread(s, 1, max, f);
    fclose(f);
    return s;
}

static void test_round_trips_on_every_corpus(void)
{
    size_t len;
    char *mixed = mixed_text(&len);
    TextVocab v;
    Error e = {0};
    CHECK(text_vocab_learn_bpe(&v, mixed, len, 600, &e) == CDL_OK);
    CHECK(check_round_trip(&v, mixed, len) < len);
    const char invalid[] = "\xff\xfe\xc3(\xe2\x82\x80\x80\xed\xa0\x80\xc0\xaf\x00 \xf8";
    check_round_trip(&v, invalid, sizeof invalid - 1);
    /* The corpora of cfg/kjv.data and cfg/fortunes.data (scripts/text-data.sh), when written:
     * merges from one, encoding of both. */
    const char *paths[] = {"data/text/kjv.txt", "data/text/fortunes.txt"};
    TextVocab learned[2] = {{0}};
    char *texts[2];
    size_t lens[2];
    for (int i = 0; i < 2; i++) {
        texts[i] = read_corpus(paths[i], 300000, &lens[i]);
        if (!texts[i]) {
            printf("test_bpe: %s is absent (scripts/text-data.sh): its round trip skipped\n",
                   paths[i]);
            continue;
        }
        CHECK(text_vocab_learn_bpe(&learned[i], texts[i], lens[i], 2000, &e) == CDL_OK);
        CHECK(learned[i].n == 2000);
        CHECK(check_round_trip(&learned[i], texts[i], lens[i]) < lens[i] / 2);
        check_round_trip(&learned[i], mixed, len);
    }
    for (int i = 0; i < 2; i++)
        if (texts[i] && texts[1 - i])
            check_round_trip(&learned[i], texts[1 - i], lens[1 - i]);
    for (int i = 0; i < 2; i++) {
        free(texts[i]);
        text_vocab_free(&learned[i]);
    }
    text_vocab_free(&v);
    free(mixed);
}

static void test_learning_is_deterministic(void)
{
    size_t len;
    char *text = mixed_text(&len);
    int32_t *a, *b;
    int na, nb;
    Error e = {0};
    CHECK(bpe_learn(text, len, 700, &a, &na, &e) == CDL_OK);
    CHECK(bpe_learn(text, len, 700, &b, &nb, &e) == CDL_OK);
    CHECK(na == nb && na > 0 && !memcmp(a, b, (size_t)na * 2 * sizeof *a));
    free(a);
    free(b);
    free(text);
}

static void test_checkpoint_form_round_trip(void)
{
    size_t len;
    char *text = mixed_text(&len);
    TextVocab v, back;
    Error e = {0};
    CHECK(text_vocab_learn_bpe(&v, text, len, 400, &e) == CDL_OK);
    char *stored = text_vocab_to_string(&v);
    CHECK(stored && !strncmp(stored, "bpe ", 4));
    CHECK(text_vocab_from_string(&back, stored, "m.cdl", &e) == CDL_OK);
    CHECK(back.n == v.n && back.bpe && back.bpe->n_merges == v.bpe->n_merges &&
          !memcmp(back.bpe->merges, v.bpe->merges, 2 * (size_t)v.bpe->n_merges * sizeof(int32_t)));
    text_vocab_free(&back);
    TextVocab copy;
    CHECK(text_vocab_copy(&copy, &v, &e) == CDL_OK && copy.n == v.n);
    CHECK(check_round_trip(&copy, text, len) == check_round_trip(&v, text, len));
    text_vocab_free(&copy);
    CHECK(text_vocab_from_string(&back, "bpe", "m.cdl", &e) == CDL_OK && back.n == 256);
    text_vocab_free(&back);
    const char *malformed[] = {"bpe 97",     "bpe 97 x",        "bpe 97 98 256 256 ",
                               "bpe 300 97", "bpe 97 98 97 98", "bpe -1 2"};
    for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        CHECK(text_vocab_from_string(&back, malformed[i], "m.cdl", &e) == CDL_EUSAGE);
        CHECK_CONTAINS(e.msg, "m.cdl: ");
        CHECK(!back.bpe && !back.n);
    }
    free(stored);
    text_vocab_free(&v);
    free(text);
}

/* Writes text to a fresh temporary file; path receives its name. */
static void write_temp(char path[64], const char *text)
{
    snprintf(path, 64, "/tmp/cdl_bpe_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

/* The error of loading a .data file of text (train= is filled in). */
static int load_data_text(const char *keys, const char *train, TextData *td, Error *e)
{
    char data_path[64], buf[512];
    snprintf(buf, sizeof buf, "type=text\ntrain=%s\n%s", train, keys);
    write_temp(data_path, buf);
    DataConfig dc = {0};
    int st = data_config_load(data_path, &dc, e);
    st = st ? st : text_data_load(&dc, NULL, td, e);
    data_config_free(&dc);
    unlink(data_path);
    return st;
}

static void test_bad_inputs(void)
{
    int32_t *merges;
    int n;
    Error e = {0};
    CHECK(bpe_learn("ab", 2, 255, &merges, &n, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "vocab_size=255: a byte-level BPE has at least 256 tokens");
    char train[64];
    write_temp(train, "ab ab ab ac");
    TextData td;
    CHECK(load_data_text("tokens=bpe\nvocab_size=100\n", train, &td, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, ":4: vocab_size=100: expected an integer in 256..1048576");
    CHECK(load_data_text("tokens=bpe\n", train, &td, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, ":3: tokens=bpe needs vocab_size=N");
    CHECK(load_data_text("vocab_size=300\n", train, &td, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, ":3: vocab_size= applies to tokens=bpe only");
    /* More tokens asked for than the text has pairs: learning stops when every piece is one
     * token: " a", " ab", "ab", " ac" (the tiny corpus's merges above, then " ac"). */
    CHECK(load_data_text("tokens=bpe\nvocab_size=1000\n", train, &td, &e) == CDL_OK);
    CHECK(td.vocab.n == 256 + 4 && td.train.n == 4);
    CHECK(td.train_bytes == 11 && td.token_bytes[td.train.ids[1]] == 3);
    text_data_free(&td);
    unlink(train);
}

int main(void)
{
    test_split_follows_gpt2_pattern();
    test_tiny_corpus_merges_by_counting();
    test_round_trips_on_every_corpus();
    test_learning_is_deterministic();
    test_checkpoint_form_round_trip();
    test_bad_inputs();
    return check_report("test_bpe");
}
