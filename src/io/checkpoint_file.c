/* The checkpoint container: atomic, checksummed writing and paranoid reading of a JSON header
 * plus one zstd-compressed blob. The layout is documented in checkpoint_file.h. */
#include "io/checkpoint_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

#include "util/atomic_file.h"

static const unsigned char checkpoint_magic[8] = "CDLCKPT";
static const unsigned char checkpoint_end_magic[8] = "CDLEND\0";

enum {
    PREFIX_BYTES = 24,  /* magic, version, flags, header_bytes */
    SIZES_BYTES = 16,   /* raw blob bytes, compressed bytes */
    TRAILER_BYTES = 12, /* CRC-32, end magic */
    MIN_FILE_BYTES = PREFIX_BYTES + SIZES_BYTES + TRAILER_BYTES,
    ZSTD_LEVEL = 3,
};

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

static uint32_t get_u32le(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get_u64le(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* zlib's crc32 takes a uInt length; feed it in chunks so blobs over 4 GiB are covered. */
static uLong crc32_update(uLong crc, const unsigned char *data, size_t bytes)
{
    const size_t chunk_bytes = (size_t)1 << 30;
    while (bytes > 0) {
        size_t n = bytes < chunk_bytes ? bytes : chunk_bytes;
        crc = crc32(crc, data, (uInt)n);
        data += n;
        bytes -= n;
    }
    return crc;
}

/* ---- writing ---------------------------------------------------------------------------- */

typedef struct CheckpointWriter {
    FILE *file;
    uLong crc;
    int write_errno; /* 0 until a write fails */
} CheckpointWriter;

/* Appends bytes; with checksummed set they count towards the trailer's CRC. */
static void writer_put(CheckpointWriter *w, const void *data, size_t bytes, int checksummed)
{
    if (w->write_errno || bytes == 0)
        return;
    errno = 0;
    if (fwrite(data, 1, bytes, w->file) != bytes) {
        w->write_errno = errno ? errno : EIO;
        return;
    }
    if (checksummed)
        w->crc = crc32_update(w->crc, data, bytes);
}

int checkpoint_file_write(const char *path, const cJSON *header, const void *blob,
                          size_t blob_bytes, Error *e)
{
    if (!header)
        return error_set(e, CDL_ERUNTIME, "%s: cannot write checkpoint: no header", path);
    if (!blob && blob_bytes > 0)
        return error_set(e, CDL_ERUNTIME, "%s: cannot write checkpoint: blob is NULL", path);

    int rc = CDL_OK;
    char *json = NULL;
    unsigned char *packed = NULL;
    AtomicFile out;
    int opened = 0;

    json = cJSON_PrintUnformatted(header);
    if (!json) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot serialise checkpoint header", path);
        goto done;
    }
    size_t json_bytes = strlen(json);

    size_t packed_capacity = ZSTD_compressBound(blob_bytes);
    if (ZSTD_isError(packed_capacity)) {
        rc = error_set(e, CDL_ERUNTIME, "%s: checkpoint data too large to compress (%zu bytes)",
                       path, blob_bytes);
        goto done;
    }
    packed = malloc(packed_capacity);
    if (!packed) {
        rc =
            error_set(e, CDL_ERUNTIME, "%s: out of memory compressing %zu bytes", path, blob_bytes);
        goto done;
    }
    size_t packed_bytes =
        ZSTD_compress(packed, packed_capacity, blob ? blob : "", blob_bytes, ZSTD_LEVEL);
    if (ZSTD_isError(packed_bytes)) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot compress checkpoint data: %s", path,
                       ZSTD_getErrorName(packed_bytes));
        goto done;
    }

    rc = atomic_file_open(&out, path, e);
    if (rc)
        goto done;
    opened = 1;

    unsigned char prefix[PREFIX_BYTES], sizes[SIZES_BYTES], trailer[TRAILER_BYTES];
    memcpy(prefix, checkpoint_magic, 8);
    put_u32le(prefix + 8, CHECKPOINT_FILE_VERSION);
    put_u32le(prefix + 12, 0);
    put_u64le(prefix + 16, json_bytes);
    put_u64le(sizes, blob_bytes);
    put_u64le(sizes + 8, packed_bytes);

    CheckpointWriter w = {.file = out.file, .crc = crc32(0L, Z_NULL, 0), .write_errno = 0};
    writer_put(&w, prefix, sizeof prefix, 1);
    writer_put(&w, json, json_bytes, 1);
    writer_put(&w, sizes, sizeof sizes, 1);
    writer_put(&w, packed, packed_bytes, 1);
    put_u32le(trailer, (uint32_t)w.crc);
    memcpy(trailer + 4, checkpoint_end_magic, 8);
    writer_put(&w, trailer, sizeof trailer, 0);
    if (w.write_errno) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot write %s: %s", path, out.tmp_path,
                       strerror(w.write_errno));
        goto done;
    }
    opened = 0;
    rc = atomic_file_commit(&out, e);

done:
    if (opened)
        atomic_file_abort(&out);
    free(packed);
    cJSON_free(json);
    return rc;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* The file size that the length fields imply. *exact is 0 when the file is too short to hold
 * all of them; *expected is then a lower bound. Returns 0 if the fields overflow. */
static int implied_file_bytes(const unsigned char *data, size_t size, uint64_t *expected,
                              int *exact)
{
    *exact = 0;
    *expected = MIN_FILE_BYTES;
    if (size < PREFIX_BYTES)
        return 1;
    uint64_t header_bytes = get_u64le(data + 16);
    if (header_bytes > UINT64_MAX - MIN_FILE_BYTES)
        return 0;
    *expected = MIN_FILE_BYTES + header_bytes;
    uint64_t sizes_end = PREFIX_BYTES + header_bytes + SIZES_BYTES;
    if (size < sizes_end)
        return 1;
    uint64_t packed_bytes = get_u64le(data + sizes_end - 8);
    if (packed_bytes > UINT64_MAX - *expected)
        return 0;
    *expected += packed_bytes;
    *exact = 1;
    return 1;
}

/* Refuses anything that does not have the shape of a complete version-1 file, in an order that
 * gives the most useful message: magic, version, length, end marker, checksum. */
static int check_envelope(const char *path, const unsigned char *data, size_t size, Error *e)
{
    size_t magic_bytes = size < 8 ? size : 8;
    if (memcmp(data, checkpoint_magic, magic_bytes) != 0)
        return error_set(e, CDL_ERUNTIME, "%s: not a cdl checkpoint (bad magic)", path);
    /* The version is read before the checksum because a newer format may keep its checksum
     * elsewhere; the user needs "upgrade cdl", not "corrupted". */
    if (size >= 12) {
        uint32_t version = get_u32le(data + 8);
        if (version > CHECKPOINT_FILE_VERSION)
            return error_set(e, CDL_ERUNTIME,
                             "%s: checkpoint format version %u is newer than this cdl supports "
                             "(%d)",
                             path, version, CHECKPOINT_FILE_VERSION);
        if (version < 1)
            return error_set(e, CDL_ERUNTIME, "%s: unsupported checkpoint format version %u", path,
                             version);
    }

    uint64_t expected;
    int exact;
    if (!implied_file_bytes(data, size, &expected, &exact))
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (impossible section lengths)", path);
    int has_end_magic =
        size >= MIN_FILE_BYTES && memcmp(data + size - 8, checkpoint_end_magic, 8) == 0;
    if (!has_end_magic) {
        if (expected > size)
            return error_set(e, CDL_ERUNTIME,
                             "%s: truncated checkpoint (%zu bytes, expected %s%llu)", path, size,
                             exact ? "" : "at least ", (unsigned long long)expected);
        if (expected < size)
            return error_set(e, CDL_ERUNTIME,
                             "%s: checkpoint is corrupted (%zu bytes, expected %llu)", path, size,
                             (unsigned long long)expected);
        return error_set(e, CDL_ERUNTIME, "%s: checkpoint is corrupted (bad end marker)", path);
    }

    size_t checked_bytes = size - TRAILER_BYTES;
    uLong crc = crc32_update(crc32(0L, Z_NULL, 0), data, checked_bytes);
    if ((uint32_t)crc != get_u32le(data + checked_bytes))
        return error_set(e, CDL_ERUNTIME, "%s: checkpoint is corrupted (checksum mismatch)", path);

    /* The checksum holds, so a mismatch now means a hostile or buggy writer, not a short file. */
    if (!exact || expected != size)
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (section lengths imply %llu bytes, file has "
                         "%zu)",
                         path, (unsigned long long)expected, size);
    uint32_t flags = get_u32le(data + 12);
    if (flags != 0)
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint uses flags 0x%x that this cdl does not support", path,
                         flags);
    return CDL_OK;
}

static int parse_header(const char *path, const char *text, size_t bytes, cJSON **header, Error *e)
{
    const char *end = NULL;
    cJSON *json = cJSON_ParseWithLengthOpts(text, bytes, &end, 0);
    if (!json)
        return error_set(e, CDL_ERUNTIME, "%s: checkpoint is corrupted (header is not valid JSON)",
                         path);
    if (end != text + bytes) {
        cJSON_Delete(json);
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (trailing bytes after the JSON header)",
                         path);
    }
    *header = json;
    return CDL_OK;
}

/* Decompresses into a buffer that grows as output appears, so a recorded size that lies cannot
 * make us allocate more than about twice what the data really expands to. One byte beyond the
 * recorded size is room to notice output that overruns it. */
static int decompress_blob(const char *path, const unsigned char *src, size_t src_bytes,
                           uint64_t raw_bytes, void **blob, Error *e)
{
    unsigned long long frame_bytes = ZSTD_getFrameContentSize(src, src_bytes);
    if (frame_bytes == ZSTD_CONTENTSIZE_ERROR || frame_bytes == ZSTD_CONTENTSIZE_UNKNOWN)
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (data section is not a zstd frame)", path);
    if (frame_bytes != raw_bytes)
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (data holds %llu bytes, header records "
                         "%llu)",
                         path, frame_bytes, (unsigned long long)raw_bytes);
    if (raw_bytes >= SIZE_MAX)
        return error_set(e, CDL_ERUNTIME, "%s: checkpoint data too large (%llu bytes)", path,
                         (unsigned long long)raw_bytes);

    size_t limit = (size_t)raw_bytes + 1;
    size_t first_capacity = src_bytes <= SIZE_MAX / 4 ? src_bytes * 4 : SIZE_MAX;
    if (first_capacity < ((size_t)1 << 20))
        first_capacity = (size_t)1 << 20;
    size_t capacity = limit < first_capacity ? limit : first_capacity;

    int rc = CDL_OK;
    unsigned char *buffer = malloc(capacity);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    if (!buffer || !dctx) {
        rc = error_set(e, CDL_ERUNTIME, "%s: out of memory reading checkpoint", path);
        goto done;
    }
    ZSTD_inBuffer in = {src, src_bytes, 0};
    ZSTD_outBuffer out = {buffer, capacity, 0};
    for (;;) {
        size_t in_before = in.pos, out_before = out.pos;
        size_t remaining = ZSTD_decompressStream(dctx, &out, &in);
        if (ZSTD_isError(remaining)) {
            rc = error_set(e, CDL_ERUNTIME, "%s: checkpoint is corrupted (zstd: %s)", path,
                           ZSTD_getErrorName(remaining));
            goto done;
        }
        if (remaining == 0 || out.pos == limit)
            break;
        if (out.pos == out.size) {
            size_t grown = out.size <= limit / 2 ? out.size * 2 : limit;
            unsigned char *bigger = realloc(buffer, grown);
            if (!bigger) {
                rc = error_set(e, CDL_ERUNTIME, "%s: out of memory reading checkpoint", path);
                goto done;
            }
            buffer = bigger;
            out.dst = buffer;
            out.size = grown;
        } else if (in.pos == in.size || (in.pos == in_before && out.pos == out_before)) {
            rc = error_set(e, CDL_ERUNTIME, "%s: checkpoint is corrupted (data ends mid-frame)",
                           path);
            goto done;
        }
    }
    if (out.pos == limit) {
        rc = error_set(e, CDL_ERUNTIME,
                       "%s: checkpoint is corrupted (data decompressed to more than the %llu "
                       "bytes recorded)",
                       path, (unsigned long long)raw_bytes);
        goto done;
    }
    if (out.pos != raw_bytes) {
        rc = error_set(e, CDL_ERUNTIME,
                       "%s: checkpoint is corrupted (data decompressed to %zu bytes, expected "
                       "%llu)",
                       path, out.pos, (unsigned long long)raw_bytes);
        goto done;
    }
    if (in.pos != in.size) {
        rc = error_set(e, CDL_ERUNTIME,
                       "%s: checkpoint is corrupted (trailing bytes after the compressed data)",
                       path);
        goto done;
    }
    *blob = buffer;
    buffer = NULL;

done:
    ZSTD_freeDCtx(dctx);
    free(buffer);
    return rc;
}

/* Reads all of path into memory: the file's own size bounds the allocation. */
static int slurp_file(const char *path, unsigned char **data, size_t *size, Error *e)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return error_set(e, CDL_ERUNTIME, "%s: cannot open: %s", path, strerror(errno));
    int rc = CDL_OK;
    unsigned char *buffer = NULL;
    struct stat st;
    if (fstat(fileno(file), &st) != 0) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot stat: %s", path, strerror(errno));
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = error_set(e, CDL_ERUNTIME, "%s: is a directory, not a checkpoint", path);
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = error_set(e, CDL_ERUNTIME, "%s: not a regular file, not a checkpoint", path);
        goto done;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size >= SIZE_MAX) {
        rc = error_set(e, CDL_ERUNTIME, "%s: file too large to read", path);
        goto done;
    }
    size_t file_bytes = (size_t)st.st_size;
    buffer = malloc(file_bytes ? file_bytes : 1);
    if (!buffer) {
        rc = error_set(e, CDL_ERUNTIME, "%s: out of memory reading %zu bytes", path, file_bytes);
        goto done;
    }
    size_t got = fread(buffer, 1, file_bytes, file);
    if (ferror(file)) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot read: %s", path, strerror(errno));
        goto done;
    }
    /* A file that shrank since fstat is judged on what was actually read. */
    *data = buffer;
    *size = got;
    buffer = NULL;

done:
    free(buffer);
    fclose(file);
    return rc;
}

int checkpoint_file_read(const char *path, cJSON **header, void **blob, size_t *blob_bytes,
                         Error *e)
{
    *header = NULL;
    *blob = NULL;
    *blob_bytes = 0;

    unsigned char *data = NULL;
    size_t size = 0;
    int rc = slurp_file(path, &data, &size, e);
    if (rc != CDL_OK)
        return rc;
    rc = check_envelope(path, data, size, e);
    if (rc != CDL_OK)
        goto done;

    /* check_envelope proved that every section lies inside the file. */
    size_t json_bytes = (size_t)get_u64le(data + 16);
    const unsigned char *sizes = data + PREFIX_BYTES + json_bytes;
    uint64_t raw_bytes = get_u64le(sizes);
    size_t packed_bytes = (size_t)get_u64le(sizes + 8);

    cJSON *json = NULL;
    rc = parse_header(path, (const char *)data + PREFIX_BYTES, json_bytes, &json, e);
    if (rc != CDL_OK)
        goto done;
    void *out = NULL;
    rc = decompress_blob(path, sizes + SIZES_BYTES, packed_bytes, raw_bytes, &out, e);
    if (rc != CDL_OK) {
        cJSON_Delete(json);
        goto done;
    }
    *header = json;
    *blob = out;
    *blob_bytes = (size_t)raw_bytes;

done:
    free(data);
    return rc;
}
