/* Tests for the checkpoint container (src/io/checkpoint_file.c): round trips, refusal of damaged
 * or foreign files with a clear message, and atomic replacement on write. */
#include "io/checkpoint_file.h"

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "util/atomic_file.h"
#include "util/file_kind.h"

static int checks_run, checks_failed;

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        checks_run++;                                                                              \
        if (!(expr)) {                                                                             \
            checks_failed++;                                                                       \
            printf("FAIL %s:%d %s\n", __FILE__, __LINE__, #expr);                                  \
        }                                                                                          \
    } while (0)

/* ---- helpers -------------------------------------------------------------------------------- */

static char scratch_root[PATH_MAX];

/* A fresh directory per test, so listings see only what that test made. */
static void make_test_dir(char *dir, const char *test_name)
{
    if (snprintf(dir, PATH_MAX, "%s/%s", scratch_root, test_name) >= PATH_MAX ||
        mkdir(dir, 0700) != 0) {
        printf("FAIL %s:%d cannot create %s\n", __FILE__, __LINE__, dir);
        checks_failed++;
    }
}

static void join_path(char *out, const char *dir, const char *name)
{
    if (snprintf(out, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX) {
        printf("FAIL %s:%d path too long: %s/%s\n", __FILE__, __LINE__, dir, name);
        checks_failed++;
    }
}

static int count_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL)
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0)
            count++;
    closedir(d);
    return count;
}

static unsigned char *read_whole_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0) {
        fclose(f);
        return NULL;
    }
    unsigned char *data = malloc(n > 0 ? (size_t)n : 1);
    *size = fread(data, 1, (size_t)n, f);
    fclose(f);
    return data;
}

static void write_whole_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
    }
}

static void put_u32le(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64le(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Makes a tampered file self-consistent again, so only the tampering itself is under test. */
static void reseal_crc(unsigned char *data, size_t size)
{
    put_u32le(data + size - 12, (uint32_t)crc32(0L, data, (uInt)(size - 12)));
}

/* Builds a file byte by byte with any field values, to feed the reader what a hostile or buggy
 * writer might produce. The CRC is always correct. */
static unsigned char *craft_checkpoint(uint32_t version, const char *json, uint64_t raw_bytes,
                                       const void *packed, size_t packed_bytes, size_t *size)
{
    size_t json_bytes = strlen(json);
    *size = 52 + json_bytes + packed_bytes;
    unsigned char *data = malloc(*size);
    unsigned char *p = data;
    memcpy(p, "CDLCKPT", 8);
    put_u32le(p + 8, version);
    put_u32le(p + 12, 0);
    put_u64le(p + 16, json_bytes);
    p += 24;
    memcpy(p, json, json_bytes);
    p += json_bytes;
    put_u64le(p, raw_bytes);
    put_u64le(p + 8, packed_bytes);
    p += 16;
    memcpy(p, packed, packed_bytes);
    p += packed_bytes;
    memcpy(p + 4, "CDLEND\0", 8);
    reseal_crc(data, *size);
    return data;
}

static cJSON *make_header(int step)
{
    cJSON *h = cJSON_CreateObject();
    cJSON_AddStringToObject(h, "cfg", "[net]\nbatch=64\n\n[convolutional]\nfilters=16\n");
    cJSON_AddNumberToObject(h, "step", step);
    cJSON_AddNumberToObject(h, "lr", 0.001);
    cJSON_AddStringToObject(h, "name", "caf\xc3\xa9 \"quoted\"");
    cJSON *layers = cJSON_AddArrayToObject(h, "layers");
    cJSON *conv = cJSON_CreateObject();
    cJSON_AddStringToObject(conv, "type", "conv");
    int shape[4] = {16, 3, 3, 3};
    cJSON_AddItemToObject(conv, "shape", cJSON_CreateIntArray(shape, 4));
    cJSON_AddItemToArray(layers, conv);
    return h;
}

/* Deterministic bytes that zstd cannot shrink much (xorshift64). */
static void fill_noise(unsigned char *data, size_t bytes, uint64_t seed)
{
    uint64_t x = seed;
    for (size_t i = 0; i < bytes; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data[i] = (unsigned char)(x >> 32);
    }
}

/* Writes a small valid checkpoint at path; returns its bytes (caller frees). */
static unsigned char *write_sample(const char *path, size_t blob_bytes, size_t *file_bytes)
{
    unsigned char *blob = malloc(blob_bytes);
    fill_noise(blob, blob_bytes, 42);
    cJSON *h = make_header(7);
    Error e = {0};
    CHECK(checkpoint_file_write(path, h, blob, blob_bytes, &e) == CDL_OK);
    cJSON_Delete(h);
    free(blob);
    unsigned char *data = read_whole_file(path, file_bytes);
    CHECK(data != NULL && *file_bytes > 52);
    if (data && *file_bytes <= 52) {
        free(data);
        data = NULL;
    }
    return data;
}

/* Reads path expecting refusal; returns 1 if it was refused cleanly with outputs cleared. */
static int read_is_refused(const char *path, Error *e)
{
    cJSON *h = (cJSON *)1;
    void *blob = (void *)1;
    size_t blob_bytes = 1;
    memset(e, 0, sizeof *e);
    int rc = checkpoint_file_read(path, &h, &blob, &blob_bytes, e);
    int refused = rc == CDL_ERUNTIME && e->code == CDL_ERUNTIME && h == NULL && blob == NULL &&
                  blob_bytes == 0 && strncmp(e->msg, path, strlen(path)) == 0;
    if (rc == CDL_OK) {
        cJSON_Delete(h);
        free(blob);
    }
    return refused;
}

static int has_expected_message(const char *msg, const char *expected)
{
    if (strcmp(msg, expected) != 0) {
        printf("  got:      %s\n  expected: %s\n", msg, expected);
        return 0;
    }
    return 1;
}

/* ---- round trips ---------------------------------------------------------------------------- */

static void round_trip(const char *test_name, const unsigned char *blob, size_t blob_bytes)
{
    char dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, test_name);
    join_path(path, dir, "model.cdl");
    cJSON *written = make_header(1234);
    Error e = {0};
    CHECK(checkpoint_file_write(path, written, blob, blob_bytes, &e) == CDL_OK);

    cJSON *read = NULL;
    void *read_blob = NULL;
    size_t read_bytes = 0;
    int read_rc = checkpoint_file_read(path, &read, &read_blob, &read_bytes, &e);
    CHECK(read_rc == CDL_OK);
    if (read_rc == CDL_OK) {
        CHECK(cJSON_Compare(written, read, 1));
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(read, "step")) == 1234);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(read, "name"));
        CHECK(name != NULL && strcmp(name, "caf\xc3\xa9 \"quoted\"") == 0);
        CHECK(read_blob != NULL);
        CHECK(read_bytes == blob_bytes);
        CHECK(read_bytes == blob_bytes &&
              (blob_bytes == 0 || memcmp(read_blob, blob, blob_bytes) == 0));
    }
    cJSON_Delete(written);
    cJSON_Delete(read);
    free(read_blob);
}

static void test_round_trip_preserves_header_and_blob(void)
{
    unsigned char blob[4096];
    fill_noise(blob, sizeof blob, 1);
    round_trip("round_trip_small", blob, sizeof blob);
}

static void test_round_trip_of_empty_blob(void)
{
    round_trip("round_trip_empty", NULL, 0);
}

static void test_round_trip_of_10mb_blob(void)
{
    size_t bytes = (size_t)10 << 20;
    unsigned char *blob = malloc(bytes);
    /* Half noise, half float ramp: exercises both incompressible and compressible data. */
    fill_noise(blob, bytes / 2, 2);
    float *ramp = (float *)(blob + bytes / 2);
    for (size_t i = 0; i < bytes / 2 / sizeof(float); i++)
        ramp[i] = (float)(i % 1000) * 0.25f;
    round_trip("round_trip_10mb", blob, bytes);
    free(blob);
}

static void test_file_layout_matches_documentation(void)
{
    char dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, "layout");
    join_path(path, dir, "model.cdl");
    cJSON *h = cJSON_CreateObject();
    cJSON_AddNumberToObject(h, "a", 1);
    Error e = {0};
    CHECK(checkpoint_file_write(path, h, "abc", 3, &e) == CDL_OK);
    cJSON_Delete(h);
    size_t size = 0;
    unsigned char *d = read_whole_file(path, &size);
    const char json[] = "{\"a\":1}";
    size_t json_bytes = sizeof json - 1;
    CHECK(d != NULL && size > 52 + json_bytes);
    if (!d || size <= 52 + json_bytes) {
        free(d);
        return;
    }
    CHECK(memcmp(d, "CDLCKPT\0", 8) == 0);
    CHECK(d[8] == 1 && d[9] == 0 && d[10] == 0 && d[11] == 0);
    CHECK(d[12] == 0 && d[13] == 0 && d[14] == 0 && d[15] == 0);
    CHECK(d[16] == json_bytes && d[17] == 0);
    CHECK(memcmp(d + 24, json, json_bytes) == 0);
    const unsigned char *sizes = d + 24 + json_bytes;
    CHECK(sizes[0] == 3 && sizes[1] == 0);
    size_t packed_bytes = sizes[8] | (size_t)sizes[9] << 8;
    CHECK(size == 52 + json_bytes + packed_bytes);
    CHECK(ZSTD_getFrameContentSize(sizes + 16, packed_bytes) == 3);
    uint32_t crc = (uint32_t)crc32(0L, d, (uInt)(size - 12));
    const unsigned char *t = d + size - 12;
    CHECK((t[0] | t[1] << 8 | t[2] << 16 | (uint32_t)t[3] << 24) == crc);
    CHECK(memcmp(d + size - 8, "CDLEND\0\0", 8) == 0);
    free(d);
}

/* ---- refusing damaged or foreign files ------------------------------------------------------ */

static void test_truncation_at_every_offset_is_refused(void)
{
    char dir[PATH_MAX], path[PATH_MAX], cut_path[PATH_MAX];
    make_test_dir(dir, "truncation");
    join_path(path, dir, "model.cdl");
    join_path(cut_path, dir, "cut.cdl");
    size_t size = 0;
    unsigned char *data = write_sample(path, 1000, &size);
    if (!data)
        return;
    Error e;
    for (size_t keep = 0; keep < size; keep++) {
        write_whole_file(cut_path, data, keep);
        int refused = read_is_refused(cut_path, &e);
        int clear =
            strstr(e.msg, "truncated checkpoint") != NULL || strstr(e.msg, "checksum") != NULL;
        if (!refused || !clear)
            printf("  truncated to %zu of %zu bytes: %s\n", keep, size, e.msg);
        CHECK(refused && clear);
    }

    char expected[PATH_MAX + 128];
    write_whole_file(cut_path, data, 0);
    read_is_refused(cut_path, &e);
    snprintf(expected, sizeof expected, "%s: truncated checkpoint (0 bytes, expected at least 52)",
             cut_path);
    CHECK(has_expected_message(e.msg, expected));
    write_whole_file(cut_path, data, size - 1);
    read_is_refused(cut_path, &e);
    snprintf(expected, sizeof expected, "%s: truncated checkpoint (%zu bytes, expected %zu)",
             cut_path, size - 1, size);
    CHECK(has_expected_message(e.msg, expected));
    free(data);
}

static void test_flipped_bit_anywhere_is_refused(void)
{
    char dir[PATH_MAX], path[PATH_MAX], flipped_path[PATH_MAX];
    make_test_dir(dir, "bit_flip");
    join_path(path, dir, "model.cdl");
    join_path(flipped_path, dir, "flipped.cdl");
    size_t size = 0;
    unsigned char *data = write_sample(path, 200, &size);
    if (!data)
        return;
    Error e;
    for (size_t byte = 0; byte < size; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            data[byte] ^= (unsigned char)(1u << bit);
            write_whole_file(flipped_path, data, size);
            data[byte] ^= (unsigned char)(1u << bit);
            int refused = read_is_refused(flipped_path, &e);
            if (!refused)
                printf("  bit %d of byte %zu flipped: accepted\n", bit, byte);
            CHECK(refused);
        }
    }
    free(data);
}

static void test_flipped_bit_in_data_reports_checksum_mismatch(void)
{
    char dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, "bit_flip_message");
    join_path(path, dir, "model.cdl");
    size_t size = 0;
    unsigned char *data = write_sample(path, 200, &size);
    if (!data)
        return;
    data[size - 40] ^= 0x10;
    write_whole_file(path, data, size);
    Error e;
    CHECK(read_is_refused(path, &e));
    char expected[PATH_MAX + 64];
    snprintf(expected, sizeof expected, "%s: checkpoint is corrupted (checksum mismatch)", path);
    CHECK(has_expected_message(e.msg, expected));
    free(data);
}

static void test_wrong_magic_is_refused(void)
{
    char dir[PATH_MAX], path[PATH_MAX], expected[PATH_MAX + 64];
    make_test_dir(dir, "wrong_magic");
    join_path(path, dir, "model.cdl");
    size_t size = 0;
    unsigned char *data = write_sample(path, 100, &size);
    if (!data)
        return;
    data[0] = 'X';
    reseal_crc(data, size);
    write_whole_file(path, data, size);
    Error e;
    CHECK(read_is_refused(path, &e));
    snprintf(expected, sizeof expected, "%s: not a cdl checkpoint (bad magic)", path);
    CHECK(has_expected_message(e.msg, expected));

    write_whole_file(path, "GIF89a", 6); /* shorter than the magic, and not a prefix of it */
    CHECK(read_is_refused(path, &e));
    CHECK(has_expected_message(e.msg, expected));
    free(data);
}

static void test_future_version_is_refused(void)
{
    char dir[PATH_MAX], path[PATH_MAX], expected[PATH_MAX + 128];
    make_test_dir(dir, "future_version");
    join_path(path, dir, "model.cdl");
    size_t size = 0;
    unsigned char *data = write_sample(path, 100, &size);
    if (!data)
        return;
    put_u32le(data + 8, 2);
    reseal_crc(data, size);
    write_whole_file(path, data, size);
    Error e;
    CHECK(read_is_refused(path, &e));
    snprintf(expected, sizeof expected,
             "%s: checkpoint format version 2 is newer than this cdl supports (1)", path);
    CHECK(has_expected_message(e.msg, expected));
    free(data);
}

static void test_missing_file_is_refused(void)
{
    char dir[PATH_MAX], path[PATH_MAX], expected[PATH_MAX + 64];
    make_test_dir(dir, "missing");
    join_path(path, dir, "absent.cdl");
    Error e;
    CHECK(read_is_refused(path, &e));
    snprintf(expected, sizeof expected, "%s: cannot open: No such file or directory", path);
    CHECK(has_expected_message(e.msg, expected));
}

static void test_directory_is_refused(void)
{
    char dir[PATH_MAX], expected[PATH_MAX + 64];
    make_test_dir(dir, "directory");
    Error e;
    CHECK(read_is_refused(dir, &e));
    snprintf(expected, sizeof expected, "%s: is a directory, not a checkpoint", dir);
    CHECK(has_expected_message(e.msg, expected));
}

static void test_length_field_beyond_file_is_refused_even_with_valid_checksum(void)
{
    char dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, "huge_header_length");
    join_path(path, dir, "model.cdl");
    size_t size = 0;
    unsigned char *data = write_sample(path, 100, &size);
    if (!data)
        return;
    put_u64le(data + 16, (uint64_t)1 << 62);
    reseal_crc(data, size);
    write_whole_file(path, data, size);
    Error e;
    CHECK(read_is_refused(path, &e));
    CHECK(strstr(e.msg, "checkpoint is corrupted (section lengths") != NULL);
    free(data);
}

static void test_recorded_size_disagreeing_with_data_is_refused(void)
{
    char dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, "raw_size_mismatch");
    join_path(path, dir, "model.cdl");
    unsigned char blob[64] = {0}, packed[256];
    size_t packed_bytes = ZSTD_compress(packed, sizeof packed, blob, sizeof blob, 3);
    CHECK(!ZSTD_isError(packed_bytes));
    Error e;
    /* A recorded size of 1 TiB must be refused without trying to allocate it. */
    uint64_t claimed[] = {0, 63, 65, (uint64_t)1 << 40, UINT64_MAX};
    for (size_t i = 0; i < sizeof claimed / sizeof claimed[0]; i++) {
        size_t size = 0;
        unsigned char *data = craft_checkpoint(1, "{}", claimed[i], packed, packed_bytes, &size);
        write_whole_file(path, data, size);
        CHECK(read_is_refused(path, &e));
        CHECK(strstr(e.msg, "checkpoint is corrupted") != NULL);
        free(data);
    }
}

static void test_header_that_is_not_json_is_refused(void)
{
    char dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, "bad_json");
    join_path(path, dir, "model.cdl");
    unsigned char packed[64];
    size_t packed_bytes = ZSTD_compress(packed, sizeof packed, "", 0, 3);
    const char *bad_headers[] = {"{\"step\":", "", "{} trailing", "\xff\xfe"};
    Error e;
    for (size_t i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++) {
        size_t size = 0;
        unsigned char *data = craft_checkpoint(1, bad_headers[i], 0, packed, packed_bytes, &size);
        write_whole_file(path, data, size);
        CHECK(read_is_refused(path, &e));
        CHECK(strstr(e.msg, "checkpoint is corrupted") != NULL);
        free(data);
    }
    /* The crafting helper itself is sound: a valid header in the same frame is accepted. */
    size_t size = 0;
    unsigned char *data = craft_checkpoint(1, "{\"ok\":true}", 0, packed, packed_bytes, &size);
    write_whole_file(path, data, size);
    cJSON *h = NULL;
    void *blob = NULL;
    size_t blob_bytes = 1;
    CHECK(checkpoint_file_read(path, &h, &blob, &blob_bytes, &e) == CDL_OK);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(h, "ok")) && blob_bytes == 0);
    cJSON_Delete(h);
    free(blob);
    free(data);
}

/* ---- atomic writing ------------------------------------------------------------------------- */

static void test_write_leaves_no_temp_file_behind(void)
{
    char dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, "no_temp_left");
    join_path(path, dir, "model.cdl");
    size_t size = 0;
    free(write_sample(path, 500, &size));
    CHECK(count_dir_entries(dir) == 1);
    CHECK(access(path, F_OK) == 0);
}

static void test_write_replaces_existing_file(void)
{
    char dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, "replace");
    join_path(path, dir, "model.cdl");
    Error e = {0};
    cJSON *first = make_header(1), *second = make_header(2);
    CHECK(checkpoint_file_write(path, first, "old", 3, &e) == CDL_OK);
    CHECK(checkpoint_file_write(path, second, "newer", 5, &e) == CDL_OK);
    cJSON *h = NULL;
    void *blob = NULL;
    size_t blob_bytes = 0;
    CHECK(checkpoint_file_read(path, &h, &blob, &blob_bytes, &e) == CDL_OK);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(h, "step")) == 2);
    CHECK(blob_bytes == 5 && memcmp(blob, "newer", 5) == 0);
    CHECK(count_dir_entries(dir) == 1);
    cJSON_Delete(first);
    cJSON_Delete(second);
    cJSON_Delete(h);
    free(blob);
}

static void test_write_into_missing_directory_fails_and_creates_nothing(void)
{
    char dir[PATH_MAX], missing_dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, "missing_dir");
    join_path(missing_dir, dir, "not_there");
    join_path(path, missing_dir, "model.cdl");
    cJSON *h = make_header(1);
    Error e = {0};
    CHECK(checkpoint_file_write(path, h, "abc", 3, &e) == CDL_ERUNTIME);
    CHECK(e.code == CDL_ERUNTIME);
    CHECK(strncmp(e.msg, path, strlen(path)) == 0);
    CHECK(strstr(e.msg, "No such file or directory") != NULL);
    CHECK(access(missing_dir, F_OK) != 0);
    CHECK(count_dir_entries(dir) == 0);
    cJSON_Delete(h);
}

/* A directory squatting on our temp name makes the write fail before anything is renamed. */
static void test_failed_write_leaves_existing_file_untouched(void)
{
    char dir[PATH_MAX], path[PATH_MAX], squatter[PATH_MAX + 320];
    make_test_dir(dir, "failed_write");
    join_path(path, dir, "model.cdl");
    size_t before_bytes = 0;
    unsigned char *before = write_sample(path, 300, &before_bytes);
    if (!before)
        return;
    atomic_file_temp_path(path, squatter, sizeof squatter);
    CHECK(mkdir(squatter, 0700) == 0);

    cJSON *h = make_header(99);
    Error e = {0};
    CHECK(checkpoint_file_write(path, h, "replacement", 11, &e) == CDL_ERUNTIME);
    CHECK(strncmp(e.msg, path, strlen(path)) == 0);
    size_t after_bytes = 0;
    unsigned char *after = read_whole_file(path, &after_bytes);
    CHECK(after != NULL && after_bytes == before_bytes && memcmp(after, before, before_bytes) == 0);
    struct stat st;
    CHECK(stat(squatter, &st) == 0 && S_ISDIR(st.st_mode)); /* not ours to delete */
    CHECK(count_dir_entries(dir) == 2);
    rmdir(squatter);
    cJSON_Delete(h);
    free(before);
    free(after);
}

/* rename() onto a non-empty directory fails after the temp file is fully written. */
static void test_failed_rename_removes_temp_file(void)
{
    char dir[PATH_MAX], path[PATH_MAX], inner[PATH_MAX];
    make_test_dir(dir, "failed_rename");
    join_path(path, dir, "model.cdl");
    CHECK(mkdir(path, 0700) == 0);
    join_path(inner, path, "keep.txt");
    write_whole_file(inner, "keep", 4);

    cJSON *h = make_header(1);
    Error e = {0};
    CHECK(checkpoint_file_write(path, h, "abc", 3, &e) == CDL_ERUNTIME);
    CHECK(strncmp(e.msg, path, strlen(path)) == 0);
    CHECK(count_dir_entries(dir) == 1);
    CHECK(count_dir_entries(path) == 1);
    cJSON_Delete(h);
}

/* A cfg given as the output by mistake: refused naming it, and kept as it was. */
static void test_write_over_a_file_that_is_not_a_checkpoint_is_refused(void)
{
    char dir[PATH_MAX], path[PATH_MAX];
    make_test_dir(dir, "not_a_checkpoint");
    join_path(path, dir, "net.cfg");
    write_whole_file(path, "[net]\nbatch=1\n", 14);
    cJSON *h = make_header(1);
    Error e = {0};
    CHECK(file_check_output(path, FILE_KIND_CHECKPOINT, NULL, 0, &e) == CDL_EUSAGE);
    CHECK(checkpoint_file_write(path, h, "abc", 3, &e) == CDL_EUSAGE);
    CHECK(strncmp(e.msg, path, strlen(path)) == 0);
    CHECK(strstr(e.msg, ": exists and is a cfg file, not a cdl checkpoint; not overwriting it "
                        "(choose another path)") != NULL);
    size_t bytes = 0;
    unsigned char *kept = read_whole_file(path, &bytes);
    CHECK(kept && bytes == 14 && !memcmp(kept, "[net]\nbatch=1\n", 14));
    CHECK(count_dir_entries(dir) == 1);
    write_whole_file(path, "", 0); /* empty (mktemp's): nothing to lose */
    CHECK(file_check_output(path, FILE_KIND_CHECKPOINT, NULL, 0, &e) == CDL_OK);
    const char *inputs[] = {path};
    CHECK(file_check_output(path, FILE_KIND_CHECKPOINT, inputs, 1, &e) == CDL_EUSAGE);
    CHECK(strstr(e.msg, ": is an input of this command") != NULL);
    join_path(path, dir, "missing.cdl");
    CHECK(file_check_output(path, FILE_KIND_CHECKPOINT, NULL, 0, &e) == CDL_OK);
    CHECK(file_check_output("/dev/null", FILE_KIND_CHECKPOINT, NULL, 0, &e) == CDL_EUSAGE);
    CHECK(strstr(e.msg, "/dev/null: is not a regular file") != NULL);
    free(kept);
    cJSON_Delete(h);
}

/* ---- driver --------------------------------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* FAIL lines survive a crash in the code under test */
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch_root, sizeof scratch_root, "%s/cdl_test_checkpoint_XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch_root)) {
        printf("FAIL %s:%d mkdtemp(%s)\n", __FILE__, __LINE__, scratch_root);
        return 1;
    }

    test_round_trip_preserves_header_and_blob();
    test_round_trip_of_empty_blob();
    test_round_trip_of_10mb_blob();
    test_file_layout_matches_documentation();
    test_truncation_at_every_offset_is_refused();
    test_flipped_bit_anywhere_is_refused();
    test_flipped_bit_in_data_reports_checksum_mismatch();
    test_wrong_magic_is_refused();
    test_future_version_is_refused();
    test_missing_file_is_refused();
    test_directory_is_refused();
    test_length_field_beyond_file_is_refused_even_with_valid_checksum();
    test_recorded_size_disagreeing_with_data_is_refused();
    test_header_that_is_not_json_is_refused();
    test_write_leaves_no_temp_file_behind();
    test_write_replaces_existing_file();
    test_write_into_missing_directory_fails_and_creates_nothing();
    test_failed_write_leaves_existing_file_untouched();
    test_failed_rename_removes_temp_file();
    test_write_over_a_file_that_is_not_a_checkpoint_is_refused();

    nftw(scratch_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (checks_failed) {
        printf("test_checkpoint_file: %d of %d checks FAILED\n", checks_failed, checks_run);
        return 1;
    }
    printf("test_checkpoint_file: all %d checks passed\n", checks_run);
    return 0;
}
