/* TensorBoard event files: CRC-32C against published vectors, TFRecord framing and Event
 * bytes against values computed with the tensorboard package's own implementation
 * (tensorboard.compat: masked_crc32c, event_pb2). */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/tfevents.h"

static void test_crc32c_known_vectors(void)
{
    /* The CRC catalogue's check value, and RFC 3720 (iSCSI) appendix B.4. */
    CHECK(crc32c("123456789", 9) == 0xe3069283u);
    uint8_t zeros[32] = {0}, ones[32], ascending[32];
    for (int i = 0; i < 32; i++) {
        ones[i] = 0xff;
        ascending[i] = (uint8_t)i;
    }
    CHECK(crc32c(zeros, 32) == 0x8a9136aau);
    CHECK(crc32c(ones, 32) == 0x62a8ab43u);
    CHECK(crc32c(ascending, 32) == 0x46dd794eu);
    CHECK(crc32c("", 0) == 0);
}

static void test_masked_crc(void)
{
    /* ror(0xe3069283, 15) + 0xa282ead8 = 0x2507c60d + 0xa282ead8 */
    CHECK(tfrecord_masked_crc("123456789", 9) == 0xc78ab0e5u);
}

static void test_record_framing(void)
{
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(tfrecord_write(f, "abc", 3) == 0);
    rewind(f);
    uint8_t got[32];
    size_t n = fread(got, 1, sizeof got, f);
    fclose(f);
    /* length 3 as uint64 LE, masked CRC of those 8 bytes, "abc", masked CRC of "abc" */
    const uint8_t want[] = {3,    0,    0,   0,   0,   0,    0,    0,    0xb0, 0x99,
                            0x49, 0x0e, 'a', 'b', 'c', 0x6e, 0x57, 0xf1, 0x21};
    CHECK(n == sizeof want);
    CHECK(n == sizeof want && !memcmp(got, want, sizeof want));
}

/* Reads the whole file at path into a malloc'd buffer. */
static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = malloc(1 << 16);
    *n = buf ? fread(buf, 1, 1 << 16, f) : 0;
    fclose(f);
    return buf;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_event_file_records(const char *root)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/runs/a", root); /* two levels that do not exist yet */
    TfEvents *w;
    Error e = {0};
    CHECK(tfevents_open(dir, &w, &e) == CDL_OK);
    if (!w)
        return;
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/events.out.tfevents.", dir);
    CHECK(!strncmp(tfevents_path(w), prefix, strlen(prefix)));
    CHECK(tfevents_add_scalar(w, "loss", 7, 0.5f, 1.5, &e) == CDL_OK);
    CHECK(tfevents_flush(w, &e) == CDL_OK);
    size_t n = 0;
    uint8_t *buf = read_all(tfevents_path(w), &n);
    CHECK(tfevents_close(w, &e) == CDL_OK);
    CHECK(buf != NULL);
    if (!buf)
        return;

    /* Record 1: Event{wall_time, file_version "brain.Event:2"}: 9 + 15 bytes. */
    const size_t len1 = 24;
    CHECK(n >= 12 + len1 + 4 && le64(buf) == len1);
    CHECK(le32(buf + 8) == tfrecord_masked_crc(buf, 8));
    CHECK(buf[12] == 0x09 && buf[21] == 0x1a && buf[22] == 13);
    CHECK(!memcmp(buf + 23, "brain.Event:2", 13));
    CHECK(le32(buf + 12 + len1) == tfrecord_masked_crc(buf + 12, len1));

    /* Record 2: event_pb2.Event(wall_time=1.5, step=7, summary=Summary(value=[
     * Value(tag="loss", simple_value=0.5)])).SerializeToString() */
    const uint8_t event[] = {0x09, 0,    0,    0,    0,    0,    0,    0xf8, 0x3f,
                             0x10, 0x07, 0x2a, 0x0d, 0x0a, 0x0b, 0x0a, 0x04, 'l',
                             'o',  's',  's',  0x15, 0,    0,    0,    0x3f};
    const uint8_t *r2 = buf + 12 + len1 + 4;
    CHECK(n == 12 + len1 + 4 + 12 + sizeof event + 4);
    if (n == 12 + len1 + 4 + 12 + sizeof event + 4) {
        CHECK(le64(r2) == sizeof event);
        CHECK(!memcmp(r2 + 12, event, sizeof event));
        CHECK(le32(r2 + 12 + sizeof event) == tfrecord_masked_crc(event, sizeof event));
    }
    free(buf);
}

static void test_second_writer_gets_its_own_file(const char *root)
{
    TfEvents *a, *b;
    Error e = {0};
    CHECK(tfevents_open(root, &a, &e) == CDL_OK);
    CHECK(tfevents_open(root, &b, &e) == CDL_OK);
    if (a && b)
        CHECK(strcmp(tfevents_path(a), tfevents_path(b)) != 0);
    tfevents_close(a, &e);
    tfevents_close(b, &e);
}

static void test_directory_that_is_a_file_fails_naming_it(const char *root)
{
    char path[512];
    snprintf(path, sizeof path, "%s/plain", root);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
    TfEvents *w;
    Error e = {0};
    CHECK(tfevents_open(path, &w, &e) == CDL_ERUNTIME);
    CHECK(w == NULL);
    CHECK_CONTAINS(e.msg, path);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(void)
{
    char root[] = "/tmp/cdl_tfevents_XXXXXX";
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 1;
    }
    test_crc32c_known_vectors();
    test_masked_crc();
    test_record_framing();
    test_event_file_records(root);
    test_second_writer_gets_its_own_file(root);
    test_directory_that_is_a_file_fails_naming_it(root);
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return check_report("test_tfevents");
}
