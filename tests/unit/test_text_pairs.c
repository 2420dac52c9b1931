/* Paired text (data/text_pairs.h): the vocabulary with its start and end marks, the sample
 * layout a sequence-to-sequence net reads, the seeded validation split, dropping the pairs that
 * do not fit, and two aligned files read as one TSV. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "data/text_data.h"

/* Writes text to a fresh temporary file; path receives its name. */
static void write_temp(char path[64], const char *text)
{
    snprintf(path, 64, "/tmp/cdl_pairs_XXXXXX");
    const int fd = mkstemp(path);
    const size_t len = strlen(text);
    CHECK(fd >= 0 && write(fd, text, len) == (ssize_t)len);
    close(fd);
}

/* Loads the pairs of a type=pairs .data file whose keys are `keys` (train= etc.); split seed 3. */
static int load(const char *keys, TextData *td)
{
    char data[64], text[512];
    snprintf(text, sizeof text, "type=pairs\n%s", keys);
    write_temp(data, text);
    DataConfig dc;
    Error e = {0};
    int st = data_config_load(data, &dc, &e);
    dc.split_seed = 3;
    st = st ? st : text_data_load(&dc, NULL, td, &e);
    if (st)
        fprintf(stderr, "load: %s\n", e.msg);
    data_config_free(&dc);
    unlink(data);
    return st;
}

static int id_of(const TextData *td, const char *c)
{
    int32_t id;
    size_t n;
    Error e = {0};
    return text_vocab_encode(&td->vocab, c, strlen(c), &id, &n, "t", &e) ? -2 : id;
}

/* "ab<TAB>cde" in a net of S=3, T=5: x = a b -1 | BOS c d e -1, y = c d e EOS -1; no pair: all
 * padding, no labels. */
static void test_sample_layout(void)
{
    char tsv[64], keys[128];
    write_temp(tsv, "ab\tcde\n");
    snprintf(keys, sizeof keys, "train=%s\n", tsv);
    TextData td;
    if (load(keys, &td)) {
        check_failures++;
        return;
    }
    CHECK(td.pairs.train.n == 1 && td.pairs.valid.n == 0);
    CHECK(td.pairs.bos == id_of(&td, "\x02") && td.pairs.eos == id_of(&td, "\x03"));
    const float a = (float)id_of(&td, "a"), b = (float)id_of(&td, "b"), c = (float)id_of(&td, "c"),
                d = (float)id_of(&td, "d"), ee = (float)id_of(&td, "e");
    float x[2 * 8];
    int y[2 * 5];
    text_pairs_fill(&td.pairs, &td.pairs.train.pairs[0], 0, 3, 5, x, y);
    text_pairs_fill(&td.pairs, NULL, 1, 3, 5, x, y);
    const float want_x[16] = {a,  b,  -1, (float)td.pairs.bos, c, d, ee, -1, -1, -1, -1, -1, -1,
                              -1, -1, -1};
    const int want_y[10] = {(int)c, (int)d, (int)ee, td.pairs.eos, -1, -1, -1, -1, -1, -1};
    CHECK(!memcmp(x, want_x, sizeof x));
    CHECK(!memcmp(y, want_y, sizeof y));
    text_data_free(&td);
    unlink(tsv);
}

/* valid_split draws its pairs from the seed: the same seed the same split, every pair on one
 * side; pairs longer than the net are dropped from both. */
static void test_split_and_fit(void)
{
    char tsv[64], keys[128], text[4096] = "";
    for (int i = 0; i < 40; i++) /* pair i: i % 7 + 1 letters, reversed */
        snprintf(text + strlen(text), sizeof text - strlen(text), "%.*s\t%.*s\n", i % 7 + 1,
                 "abcdefg", i % 7 + 1, "gfedcba");
    write_temp(tsv, text);
    snprintf(keys, sizeof keys, "train=%s\nvalid_split=0.25\n", tsv);
    TextData one, two;
    if (load(keys, &one) || load(keys, &two)) {
        check_failures++;
        return;
    }
    CHECK(one.pairs.train.n == 30 && one.pairs.valid.n == 10);
    CHECK(two.pairs.valid.n == 10 &&
          !memcmp(one.pairs.valid.pairs, two.pairs.valid.pairs, 10 * sizeof(TextPair)));
    CHECK(text_data_fingerprint(&one) == text_data_fingerprint(&two));
    /* sources of up to 4 tokens, targets of up to 3 (+ EOS) */
    size_t long_pairs = 0;
    for (int i = 0; i < 40; i++)
        long_pairs += i % 7 + 1 > 3;
    CHECK(text_pairs_fit(&one.pairs, 4, 4) == long_pairs);
    CHECK(one.pairs.train.n + one.pairs.valid.n == 40 - long_pairs);
    text_data_free(&one);
    text_data_free(&two);
    unlink(tsv);
}

/* train= and train_target= pair line by line, as the same lines in one TSV do. */
static void test_two_files_equal_tsv(void)
{
    char tsv[64], src[64], tgt[64], keys[256];
    write_temp(tsv, "ab\tba\r\nabc\tcba\n");
    write_temp(src, "ab\r\nabc\n");
    write_temp(tgt, "ba\ncba");
    TextData a, b;
    snprintf(keys, sizeof keys, "train=%s\n", tsv);
    const int st_a = load(keys, &a);
    snprintf(keys, sizeof keys, "train=%s\ntrain_target=%s\n", src, tgt);
    const int st_b = load(keys, &b);
    CHECK(!st_a && !st_b);
    if (!st_a && !st_b) {
        CHECK(a.pairs.train.n == 2 && b.pairs.train.n == 2);
        CHECK(text_data_fingerprint(&a) == text_data_fingerprint(&b));
        text_data_free(&a);
        text_data_free(&b);
    }
    unlink(tsv);
    unlink(src);
    unlink(tgt);
}

int main(void)
{
    test_sample_layout();
    test_split_and_fit();
    test_two_files_equal_tsv();
    return check_report("test_text_pairs");
}
