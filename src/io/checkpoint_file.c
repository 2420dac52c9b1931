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
#include "util/file_kind.h"

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

/* Compresses the slabs, in order, as one zstd frame of pledged size raw_bytes straight into the
 * file; *packed_bytes and *crc (of the compressed bytes alone) describe what was written. */
static int write_frame(CheckpointWriter *w, const char *path, const CheckpointSlab *slabs,
                       int n_slabs, uint64_t raw_bytes, size_t *packed_bytes, uLong *crc, Error *e)
{
    const size_t chunk_bytes = ZSTD_CStreamOutSize();
    unsigned char *chunk = malloc(chunk_bytes);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    int rc = CDL_OK;
    if (!chunk || !cctx) {
        rc = error_set(e, CDL_ERUNTIME, "%s: out of memory compressing checkpoint data", path);
        goto done;
    }
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, ZSTD_LEVEL);
    ZSTD_CCtx_setPledgedSrcSize(cctx, raw_bytes);
    *packed_bytes = 0;
    *crc = crc32(0L, Z_NULL, 0);
    /* A last empty slab ends the frame, also when there is no data at all. */
    for (int k = 0; k <= n_slabs && !w->write_errno; k++) {
        const int last = k == n_slabs;
        ZSTD_inBuffer in = {last ? "" : slabs[k].data, last ? 0 : slabs[k].bytes, 0};
        size_t left;
        do {
            ZSTD_outBuffer out = {chunk, chunk_bytes, 0};
            left = ZSTD_compressStream2(cctx, &out, &in, last ? ZSTD_e_end : ZSTD_e_continue);
            if (ZSTD_isError(left)) {
                rc = error_set(e, CDL_ERUNTIME, "%s: cannot compress checkpoint data: %s", path,
                               ZSTD_getErrorName(left));
                goto done;
            }
            writer_put(w, chunk, out.pos, 0);
            *crc = crc32_update(*crc, chunk, out.pos);
            *packed_bytes += out.pos;
        } while (!w->write_errno && (last ? left != 0 : in.pos < in.size));
    }

done:
    ZSTD_freeCCtx(cctx);
    free(chunk);
    return rc;
}

int checkpoint_file_write_slabs(const char *path, const cJSON *header, const CheckpointSlab *slabs,
                                int n_slabs, Error *e)
{
    int rc;
    if (!header)
        return error_set(e, CDL_ERUNTIME, "%s: cannot write checkpoint: no header", path);
    uint64_t raw_bytes = 0;
    for (int k = 0; k < n_slabs; k++) {
        if (!slabs[k].data && slabs[k].bytes > 0)
            return error_set(e, CDL_ERUNTIME, "%s: cannot write checkpoint: blob is NULL", path);
        raw_bytes += slabs[k].bytes;
    }

    AtomicFile out;
    int opened = 0;
    char *json = cJSON_PrintUnformatted(header);
    if (!json) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot serialise checkpoint header", path);
        goto done;
    }
    size_t json_bytes = strlen(json);
    rc = atomic_file_open(&out, path, FILE_KIND_CHECKPOINT, e);
    if (rc)
        goto done;
    opened = 1;

    unsigned char prefix[PREFIX_BYTES], sizes[SIZES_BYTES], trailer[TRAILER_BYTES];
    memcpy(prefix, checkpoint_magic, 8);
    put_u32le(prefix + 8, CHECKPOINT_FILE_VERSION);
    put_u32le(prefix + 12, 0);
    put_u64le(prefix + 16, json_bytes);
    put_u64le(sizes, raw_bytes);
    put_u64le(sizes + 8, 0); /* the compressed size, patched in once known */

    CheckpointWriter w = {.file = out.file, .crc = crc32(0L, Z_NULL, 0), .write_errno = 0};
    writer_put(&w, prefix, sizeof prefix, 1);
    writer_put(&w, json, json_bytes, 1);
    writer_put(&w, sizes, 8, 1);
    const long packed_size_at = ftell(out.file);
    writer_put(&w, sizes + 8, 8, 0);
    size_t packed_bytes = 0;
    uLong packed_crc = 0;
    rc = write_frame(&w, path, slabs, n_slabs, raw_bytes, &packed_bytes, &packed_crc, e);
    if (rc)
        goto done;
    /* The CRC runs over the file in order: combine the parts around the patched field. */
    put_u64le(sizes + 8, packed_bytes);
    w.crc = crc32_combine(w.crc, crc32_update(crc32(0L, Z_NULL, 0), sizes + 8, 8), 8);
    w.crc = crc32_combine(w.crc, packed_crc, (z_off_t)packed_bytes);
    if (!w.write_errno && (packed_size_at < 0 || fseek(out.file, packed_size_at, SEEK_SET)))
        w.write_errno = errno ? errno : EIO;
    writer_put(&w, sizes + 8, 8, 0);
    if (!w.write_errno && fseek(out.file, 0, SEEK_END))
        w.write_errno = errno ? errno : EIO;
    put_u32le(trailer, (uint32_t)w.crc);
    memcpy(trailer + 4, checkpoint_end_magic, 8);
    writer_put(&w, trailer, sizeof trailer, 0);
    if (w.write_errno) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot write: %s", path,
                       atomic_file_strerror(w.write_errno));
        goto done;
    }
    opened = 0;
    rc = atomic_file_commit(&out, e);

done:
    if (opened)
        atomic_file_abort(&out);
    cJSON_free(json);
    return rc;
}

int checkpoint_file_write(const char *path, const cJSON *header, const void *blob,
                          size_t blob_bytes, Error *e)
{
    const CheckpointSlab slab = {blob, blob_bytes};
    return checkpoint_file_write_slabs(path, header, &slab, 1, e);
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

/* What the envelope checks read of a file of `size` bytes: its front (up to the end of the
 * sizes, or all of a shorter file) and its last 12 bytes (trailer; fewer in a shorter file). */
typedef struct Envelope {
    const unsigned char *front;
    const unsigned char *trailer;
    size_t size;
} Envelope;

/* Refuses anything that does not have the shape of a complete version-1 file, in an order that
 * gives the most useful message: magic, version, length, end marker (this part), then checksum
 * and the rest (check_sealed_envelope). */
static int check_envelope_shape(const char *path, const Envelope *v, Error *e)
{
    const size_t size = v->size;
    size_t magic_bytes = size < 8 ? size : 8;
    if (memcmp(v->front, checkpoint_magic, magic_bytes) != 0) {
        char why[600];
        const int code = file_kind_not_checkpoint(file_kind(path, NULL), path, why, sizeof why);
        return error_set(e, code, "%s: %s", path, why);
    }
    /* The version is read before the checksum because a newer format may keep its checksum
     * elsewhere; the user needs "upgrade cdl", not "corrupted". */
    if (size >= 12) {
        uint32_t version = get_u32le(v->front + 8);
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
    if (!implied_file_bytes(v->front, size, &expected, &exact))
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (impossible section lengths)", path);
    int has_end_magic =
        size >= MIN_FILE_BYTES && memcmp(v->trailer + 4, checkpoint_end_magic, 8) == 0;
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
    return CDL_OK;
}

/* The rest of the envelope checks, given crc, the CRC-32 of bytes [0, size - 12). */
static int check_sealed_envelope(const char *path, const Envelope *v, uLong crc, Error *e)
{
    if ((uint32_t)crc != get_u32le(v->trailer))
        return error_set(e, CDL_ERUNTIME, "%s: checkpoint is corrupted (checksum mismatch)", path);

    /* The checksum holds, so a mismatch now means a hostile or buggy writer, not a short file. */
    uint64_t expected;
    int exact;
    implied_file_bytes(v->front, v->size, &expected, &exact);
    if (!exact || expected != v->size)
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (section lengths imply %llu bytes, file has "
                         "%zu)",
                         path, (unsigned long long)expected, v->size);
    uint32_t flags = get_u32le(v->front + 12);
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

/* Opens path for reading and sets *size, refusing what is not a regular file. */
static int open_file(const char *path, FILE **out, size_t *size, Error *e)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return error_set(e, CDL_ERUNTIME, "%s: cannot open: %s", path, strerror(errno));
    int rc = CDL_OK;
    struct stat st;
    if (fstat(fileno(file), &st) != 0)
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot stat: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        rc = error_set(e, CDL_ERUNTIME, "%s: is a directory, not a checkpoint", path);
    else if (!S_ISREG(st.st_mode))
        rc = error_set(e, CDL_ERUNTIME, "%s: not a regular file, not a checkpoint", path);
    else if (st.st_size < 0 || (uint64_t)st.st_size >= SIZE_MAX)
        rc = error_set(e, CDL_ERUNTIME, "%s: file too large to read", path);
    if (rc) {
        fclose(file);
        return rc;
    }
    *out = file;
    *size = (size_t)st.st_size;
    return CDL_OK;
}

/* Reads bytes at offset into dst: the file must still hold them. */
static int read_at(CheckpointReader *r, uint64_t offset, void *dst, size_t bytes, Error *e)
{
    if (bytes == 0)
        return CDL_OK;
    if (fseeko(r->file, (off_t)offset, SEEK_SET) || fread(dst, 1, bytes, r->file) != bytes)
        return error_set(e, CDL_ERUNTIME, "%s: cannot read: %s", r->path,
                         ferror(r->file) ? strerror(errno) : "the file changed while reading");
    return CDL_OK;
}

/* The CRC-32 of the file's bytes [0, bytes), read in chunks into buffer [capacity]. */
static int file_crc(CheckpointReader *r, uint64_t bytes, unsigned char *buffer, size_t capacity,
                    uLong *crc, Error *e)
{
    *crc = crc32(0L, Z_NULL, 0);
    for (uint64_t at = 0; at < bytes;) {
        const size_t n = bytes - at < capacity ? (size_t)(bytes - at) : capacity;
        int rc = read_at(r, at, buffer, n, e);
        if (rc)
            return rc;
        *crc = crc32_update(*crc, buffer, n);
        at += n;
    }
    return CDL_OK;
}

/* Reads the front of the file (up to the end of the sizes) into r->front. */
static int read_front(CheckpointReader *r, Error *e)
{
    size_t front_bytes = r->size < PREFIX_BYTES ? r->size : PREFIX_BYTES;
    unsigned char prefix[PREFIX_BYTES];
    int rc = read_at(r, 0, prefix, front_bytes, e);
    if (rc)
        return rc;
    if (front_bytes == PREFIX_BYTES) {
        const uint64_t header_bytes = get_u64le(prefix + 16);
        const uint64_t sizes_end = PREFIX_BYTES + SIZES_BYTES + header_bytes;
        front_bytes = header_bytes > r->size || sizes_end > r->size ? r->size : (size_t)sizes_end;
    }
    if (!(r->front = malloc(front_bytes ? front_bytes : 1)))
        return error_set(e, CDL_ERUNTIME, "%s: out of memory reading %zu bytes", r->path,
                         front_bytes);
    return read_at(r, 0, r->front, front_bytes, e);
}

int checkpoint_file_open(CheckpointReader *r, const char *path, cJSON **header, Error *e)
{
    memset(r, 0, sizeof *r);
    *header = NULL;
    r->path = path;
    int rc = open_file(path, &r->file, &r->size, e);
    if (rc != CDL_OK)
        return rc;
    unsigned char trailer[TRAILER_BYTES] = {0};
    const size_t trailer_bytes = r->size < TRAILER_BYTES ? r->size : TRAILER_BYTES;
    rc = read_front(r, e);
    rc = rc ? rc : read_at(r, r->size - trailer_bytes, trailer, trailer_bytes, e);
    const Envelope v = {r->front, trailer, r->size};
    rc = rc ? rc : check_envelope_shape(path, &v, e);
    r->in_capacity = ZSTD_DStreamInSize();
    if (!rc && !(r->in_buffer = malloc(r->in_capacity)))
        rc = error_set(e, CDL_ERUNTIME, "%s: out of memory reading checkpoint", path);
    uLong crc = 0;
    rc = rc ? rc : file_crc(r, r->size - TRAILER_BYTES, r->in_buffer, r->in_capacity, &crc, e);
    rc = rc ? rc : check_sealed_envelope(path, &v, crc, e);
    /* The envelope checks proved that every section lies inside the file. */
    const size_t json_bytes = rc ? 0 : (size_t)get_u64le(r->front + 16);
    if (!rc) {
        const unsigned char *sizes = r->front + PREFIX_BYTES + json_bytes;
        r->raw_bytes = get_u64le(sizes);
        r->packed_bytes = r->packed_left = get_u64le(sizes + 8);
        rc = parse_header(path, (const char *)r->front + PREFIX_BYTES, json_bytes, header, e);
    }
    /* The frame's first bytes (all of it when short) tell its content size. */
    const size_t first = r->packed_left < r->in_capacity ? (size_t)r->packed_left : r->in_capacity;
    rc = rc ? rc : read_at(r, PREFIX_BYTES + json_bytes + SIZES_BYTES, r->in_buffer, first, e);
    if (!rc) {
        r->in = (ZSTD_inBuffer){r->in_buffer, first, 0};
        r->packed_left -= first;
        unsigned long long frame_bytes = ZSTD_getFrameContentSize(r->in_buffer, first);
        if (frame_bytes == ZSTD_CONTENTSIZE_ERROR || frame_bytes == ZSTD_CONTENTSIZE_UNKNOWN)
            rc = error_set(e, CDL_ERUNTIME,
                           "%s: checkpoint is corrupted (data section is not a zstd frame)", path);
        else if (frame_bytes != r->raw_bytes)
            rc = error_set(e, CDL_ERUNTIME,
                           "%s: checkpoint is corrupted (data holds %llu bytes, header records "
                           "%llu)",
                           path, frame_bytes, (unsigned long long)r->raw_bytes);
        else if (r->raw_bytes >= SIZE_MAX)
            rc = error_set(e, CDL_ERUNTIME, "%s: checkpoint data too large (%llu bytes)", path,
                           (unsigned long long)r->raw_bytes);
    }
    if (!rc && !(r->dctx = ZSTD_createDCtx()))
        rc = error_set(e, CDL_ERUNTIME, "%s: out of memory reading checkpoint", path);
    if (rc) {
        cJSON_Delete(*header);
        *header = NULL;
        checkpoint_file_close(r);
    }
    return rc;
}

/* Decompresses up to bytes into dst; *got is how many came (fewer only at the frame's end). */
static int reader_pull(CheckpointReader *r, unsigned char *dst, size_t bytes, size_t *got, Error *e)
{
    ZSTD_outBuffer out = {dst, bytes, 0};
    while (out.pos < out.size && !r->frame_done) {
        if (r->in.pos == r->in.size && r->packed_left > 0) {
            /* The file position is right after the frame bytes read so far. */
            const size_t n =
                r->packed_left < r->in_capacity ? (size_t)r->packed_left : r->in_capacity;
            if (fread(r->in_buffer, 1, n, r->file) != n)
                return error_set(e, CDL_ERUNTIME, "%s: cannot read: %s", r->path,
                                 ferror(r->file) ? strerror(errno)
                                                 : "the file changed while reading");
            r->in = (ZSTD_inBuffer){r->in_buffer, n, 0};
            r->packed_left -= n;
        }
        const size_t in_before = r->in.pos, out_before = out.pos;
        const size_t left = ZSTD_decompressStream(r->dctx, &out, &r->in);
        if (ZSTD_isError(left))
            return error_set(e, CDL_ERUNTIME, "%s: checkpoint is corrupted (zstd: %s)", r->path,
                             ZSTD_getErrorName(left));
        r->frame_done = left == 0;
        const int input_spent = r->in.pos == r->in.size && r->packed_left == 0;
        if (!r->frame_done && out.pos < out.size &&
            (input_spent || (r->in.pos == in_before && out.pos == out_before)))
            return error_set(e, CDL_ERUNTIME, "%s: checkpoint is corrupted (data ends mid-frame)",
                             r->path);
    }
    *got = out.pos;
    r->raw_done += out.pos;
    return CDL_OK;
}

int checkpoint_file_read_into(CheckpointReader *r, void *dst, size_t bytes, Error *e)
{
    unsigned char discard[4096];
    unsigned char *at = dst;
    while (bytes > 0) {
        const size_t want = at ? bytes : bytes < sizeof discard ? bytes : sizeof discard;
        size_t got;
        int rc = reader_pull(r, at ? at : discard, want, &got, e);
        if (rc)
            return rc;
        if (got < want)
            return error_set(e, CDL_ERUNTIME,
                             "%s: checkpoint is corrupted (data decompressed to %llu bytes, "
                             "expected %llu)",
                             r->path, (unsigned long long)r->raw_done,
                             (unsigned long long)r->raw_bytes);
        at = at ? at + got : NULL;
        bytes -= got;
    }
    return CDL_OK;
}

int checkpoint_file_finish(CheckpointReader *r, Error *e)
{
    unsigned char extra;
    size_t got = 0;
    int rc = reader_pull(r, &extra, 1, &got, e);
    if (rc)
        return rc;
    if (got)
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (data decompressed to more than the %llu "
                         "bytes recorded)",
                         r->path, (unsigned long long)r->raw_bytes);
    if (r->raw_done != r->raw_bytes)
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (data decompressed to %llu bytes, expected "
                         "%llu)",
                         r->path, (unsigned long long)r->raw_done,
                         (unsigned long long)r->raw_bytes);
    if (r->in.pos != r->in.size || r->packed_left > 0)
        return error_set(e, CDL_ERUNTIME,
                         "%s: checkpoint is corrupted (trailing bytes after the compressed data)",
                         r->path);
    return CDL_OK;
}

void checkpoint_file_close(CheckpointReader *r)
{
    ZSTD_freeDCtx(r->dctx);
    free(r->in_buffer);
    free(r->front);
    if (r->file)
        fclose(r->file);
    memset(r, 0, sizeof *r);
}

int checkpoint_file_read(const char *path, cJSON **header, void **blob, size_t *blob_bytes,
                         Error *e)
{
    *blob = NULL;
    *blob_bytes = 0;
    CheckpointReader r;
    int rc = checkpoint_file_open(&r, path, header, e);
    if (rc)
        return rc;
    /* The buffer grows as output appears, so a recorded size that lies cannot make us allocate
     * more than about twice what the data really expands to. */
    const size_t raw = (size_t)r.raw_bytes;
    size_t first = r.packed_bytes <= SIZE_MAX / 4 ? (size_t)r.packed_bytes * 4 : SIZE_MAX;
    first = first > ((size_t)1 << 20) ? first : (size_t)1 << 20;
    size_t capacity = raw < first ? raw : first, done = 0;
    unsigned char *buffer = malloc(capacity ? capacity : 1);
    if (!buffer)
        rc = error_set(e, CDL_ERUNTIME, "%s: out of memory reading checkpoint", path);
    while (!rc && done < raw) {
        if (done == capacity) {
            capacity = capacity <= raw / 2 ? capacity * 2 : raw;
            unsigned char *bigger = realloc(buffer, capacity);
            if (!bigger) {
                rc = error_set(e, CDL_ERUNTIME, "%s: out of memory reading checkpoint", path);
                break;
            }
            buffer = bigger;
        }
        rc = checkpoint_file_read_into(&r, buffer + done, capacity - done, e);
        done = capacity;
    }
    rc = rc ? rc : checkpoint_file_finish(&r, e);
    checkpoint_file_close(&r);
    if (rc) {
        free(buffer);
        cJSON_Delete(*header);
        *header = NULL;
        return rc;
    }
    *blob = buffer;
    *blob_bytes = raw;
    return CDL_OK;
}
