/* Text datasets: vocabularies (bytes, UTF-8 characters), encoding and decoding, the checkpoint
 * form, .data files with type=text, validation splits and training/validation windows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "data/text_data.h"

/* Writes text to a fresh temporary file; path receives its name. */
static void write_temp(char path[64], const char *text, size_t len)
{
    snprintf(path, 64, "/tmp/cdl_text_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, text, len) == (ssize_t)len);
    close(fd);
}

static void test_char_vocabulary(void)
{
    const char *text = "ba\xc3\xa9"
                       "a\xe2\x82\xac"; /* "baéa€" */
    const char *paths[] = {"mem"};
    const size_t lens[] = {strlen(text)};
    TextVocab v;
    Error e = {0};
    CHECK(text_vocab_build_chars(&v, &text, lens, paths, 1, &e) == CDL_OK);
    CHECK(v.n == 4 && v.code_points[0] == 'a' && v.code_points[1] == 'b' &&
          v.code_points[2] == 0xE9 && v.code_points[3] == 0x20AC);
    int32_t ids[16];
    size_t n;
    CHECK(text_vocab_encode(&v, text, lens[0], ids, &n, "t", &e) == CDL_OK);
    CHECK(n == 5 && ids[0] == 1 && ids[1] == 0 && ids[2] == 2 && ids[3] == 0 && ids[4] == 3);
    char decoded[64 + TEXT_TOKEN_MAX_BYTES];
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)text_vocab_decode(&v, ids[i], decoded + len);
    CHECK(len == lens[0] && !memcmp(decoded, text, len));
    CHECK(text_vocab_decode(&v, 4, decoded) == 0);
    CHECK(text_vocab_encode(&v, "abz", 3, ids, &n, "--prompt", &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg,
                   "--prompt: the character 'z' (U+007A) at byte 2 is not in the vocabulary");
    char *stored = text_vocab_to_string(&v);
    TextVocab back;
    CHECK(stored && text_vocab_from_string(&back, stored, "ckpt", &e) == CDL_OK);
    CHECK(back.n == v.n && !memcmp(back.code_points, v.code_points, 4 * sizeof *v.code_points));
    text_vocab_free(&back);
    CHECK(text_vocab_from_string(&back, "ba", "ckpt", &e) == CDL_EUSAGE); /* not ascending */
    CHECK_CONTAINS(e.msg, "ckpt: the vocabulary is malformed");
    free(stored);
    text_vocab_free(&v);
}

static void test_invalid_utf8_names_file_and_byte(void)
{
    const char *text = "ok\xff";
    const char *paths[] = {"corpus.txt"};
    const size_t lens[] = {3};
    TextVocab v;
    Error e = {0};
    CHECK(text_vocab_build_chars(&v, &text, lens, paths, 1, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "corpus.txt: invalid UTF-8 at byte 2");
    CHECK(v.n == 0 && !v.code_points);
}

static void test_byte_vocabulary(void)
{
    TextVocab v;
    text_vocab_bytes(&v);
    int32_t ids[4];
    size_t n;
    Error e = {0};
    CHECK(text_vocab_encode(&v,
                            "\xff"
                            "A",
                            2, ids, &n, "t", &e) == CDL_OK);
    CHECK(n == 2 && ids[0] == 255 && ids[1] == 65);
    char *stored = text_vocab_to_string(&v);
    CHECK(stored && !strcmp(stored, "byte"));
    free(stored);
}

/* A .data file with type=text and valid_split: the tail of the tokens is held out. */
static void test_data_file_split_and_windows(void)
{
    char text_path[64], data_path[64];
    char text[101];
    for (int i = 0; i < 100; i++)
        text[i] = (char)('a' + i % 7);
    write_temp(text_path, text, 100);
    char data[256];
    snprintf(data, sizeof data, "type=text\ntrain=%s\nvalid_split=0.2\n", text_path);
    write_temp(data_path, data, strlen(data));
    DataConfig dc;
    TextData td;
    Error e = {0};
    CHECK(data_config_load(data_path, &dc, &e) == CDL_OK && dc.train_kind == DATA_TEXT);
    CHECK(text_data_load(&dc, NULL, &td, &e) == CDL_OK);
    CHECK(td.vocab.n == 7 && td.train.n == 80 && td.valid.n == 20);
    CHECK(td.valid.ids[0] == 80 % 7);
    CHECK(text_windows(&td.train, 8) == 9); /* (80 - 1) / 8 */

    /* Random windows: labels are the inputs shifted by one; the same draw gives the same. */
    float x[3 * 8], x2[3 * 8];
    int y[3 * 8], y2[3 * 8];
    text_fill_random(&td.train, 5, 11, 0, 3, 8, 0, x, y);
    text_fill_random(&td.train, 5, 11, 0, 3, 8, 0, x2, y2);
    CHECK(!memcmp(x, x2, sizeof x) && !memcmp(y, y2, sizeof y));
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 8; t++) {
            CHECK(y[b * 8 + t] == ((int)x[b * 8 + t] + 1) % 7);
            if (t)
                CHECK((int)x[b * 8 + t] == y[b * 8 + t - 1]);
        }
    text_fill_random(&td.train, 5, 12, 0, 3, 8, 0, x2, y2);
    CHECK(memcmp(x, x2, sizeof x) != 0);
    /* Windows 1 and 2 of a draw (a second rank's) are those one process draws after window 0. */
    text_fill_random(&td.train, 5, 11, 1, 2, 8, 0, x2, y2);
    CHECK(!memcmp(x + 8, x2, 2 * 8 * sizeof *x) && !memcmp(y + 8, y2, 2 * 8 * sizeof *y));

    /* In order: valid holds 20 tokens, so 2 windows of 8; the third sample has no labels. */
    float one_hot[3 * 8 * 7];
    text_fill_in_order(&td.valid, 0, 3, 8, 7, one_hot, y);
    CHECK(one_hot[0 * 7 + 80 % 7] == 1.0f && one_hot[1 * 7 + 81 % 7] == 1.0f);
    CHECK(y[0] == 81 % 7 && y[8] == 89 % 7 && y[16] == -1 && y[23] == -1);
    float sum = 0;
    for (int i = 0; i < 3 * 8 * 7; i++)
        sum += one_hot[i];
    CHECK(sum == 16.0f);

    /* A fixed vocabulary (a resumed model's) refuses characters outside it. */
    TextVocab small;
    const char *ab = "ab";
    const size_t ab_len[] = {2};
    const char *ab_path[] = {"v"};
    CHECK(text_vocab_build_chars(&small, &ab, ab_len, ab_path, 1, &e) == CDL_OK);
    TextData refused;
    CHECK(text_data_load(&dc, &small, &refused, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "the character 'c' (U+0063) at byte 2 is not in the vocabulary");
    CHECK_CONTAINS(e.msg, text_path);
    text_vocab_free(&small);
    text_data_free(&td);
    data_config_free(&dc);
    unlink(text_path);
    unlink(data_path);
}

static void test_data_file_errors(void)
{
    char data_path[64];
    const char *bad = "type=text\ntrain=x.txt\ntokens=words\n";
    write_temp(data_path, bad, strlen(bad));
    DataConfig dc;
    Error e = {0};
    CHECK(data_config_load(data_path, &dc, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, ":3: tokens=words: expected char, byte or bpe");
    unlink(data_path);
    const char *images = "classes=2\ntrain=x.csv\ntokens=char\n";
    write_temp(data_path, images, strlen(images));
    CHECK(data_config_load(data_path, &dc, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, ":3: tokens= applies to type=text only");
    unlink(data_path);
    const char *missing = "type=text\ntrain=/nonexistent/cdl.txt\n";
    write_temp(data_path, missing, strlen(missing));
    CHECK(data_config_load(data_path, &dc, &e) == CDL_OK);
    TextData td;
    CHECK(text_data_load(&dc, NULL, &td, &e) == CDL_ERUNTIME); /* as missing images */
    CHECK_CONTAINS(e.msg, "/nonexistent/cdl.txt: cannot open text");
    data_config_free(&dc);
    unlink(data_path);
}

int main(void)
{
    test_char_vocabulary();
    test_invalid_utf8_names_file_and_byte();
    test_byte_vocabulary();
    test_data_file_split_and_windows();
    test_data_file_errors();
    return check_report("test_text");
}
