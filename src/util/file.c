/* Whole-file reads, raw or through zlib, with a doubling buffer, bounded; the UTF-8 byte order
 * mark. */
#include "util/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Reads one source to its end: up to n bytes into buf; the count, 0 at the end or on an error. */
typedef size_t (*ReadFn)(void *source, char *buf, size_t n);

static size_t read_file(void *source, char *buf, size_t n)
{
    return fread(buf, 1, n, source);
}

static size_t read_gz(void *source, char *buf, size_t n)
{
    const int got = gzread(source, buf, (unsigned)(n < (1u << 30) ? n : 1u << 30));
    return got > 0 ? (size_t)got : 0;
}

/* Reads source to its end into *data (malloc'd, with a NUL after the *bytes bytes read; NULL on
 * failure), reading at most max_bytes + 1 bytes. Returns 0, EFBIG when source holds more than
 * max_bytes, or ENOMEM; the caller asks its source whether the read failed. */
static int read_bounded(void *source, ReadFn read, size_t max_bytes, char **data, size_t *bytes)
{
    *data = NULL;
    *bytes = 0;
    const size_t most = max_bytes + 2; /* max_bytes + 1 bytes tell a larger file, then the NUL */
    size_t cap = most < ((size_t)1 << 16) ? most : (size_t)1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got;
        while (len < cap - 1 && (got = read(source, buf + len, cap - 1 - len)) > 0)
            len += got; /* room for the NUL */
        if (len < cap - 1 || cap == most)
            break;
        const size_t grown_cap = cap > most / 2 ? most : cap * 2;
        char *grown = realloc(buf, grown_cap);
        if (!grown)
            free(buf);
        buf = grown;
        cap = grown_cap;
    }
    if (!buf)
        return ENOMEM;
    if (len > max_bytes) {
        free(buf);
        return EFBIG;
    }
    buf[len] = '\0';
    *data = buf;
    *bytes = len;
    return 0;
}

/* The messages of read_bounded's EFBIG and ENOMEM (else CDL_OK). */
static int bounded_failure(int failure, const char *path, size_t max_bytes, const char *what,
                           Error *e)
{
    if (failure == EFBIG)
        return error_set(e, CDL_EUSAGE,
                         "%s: larger than %zu MiB, the most cdl reads for one %s (is it the right "
                         "file?)",
                         path, max_bytes >> 20, what);
    if (failure == ENOMEM)
        return error_set(e, CDL_ERUNTIME, "%s: out of memory reading %s", path, what);
    return CDL_OK;
}

int file_read_path(const char *path, size_t max_bytes, const char *what, char **data, size_t *bytes,
                   Error *e)
{
    *data = NULL;
    *bytes = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return error_set(e, CDL_ERUNTIME, "%s: cannot open %s: %s", path, what, strerror(errno));
    int st = bounded_failure(read_bounded(f, read_file, max_bytes, data, bytes), path, max_bytes,
                             what, e);
    if (!st && ferror(f)) {
        st = error_set(e, CDL_ERUNTIME, "%s: cannot read %s: %s", path, what,
                       strerror(errno ? errno : EIO));
        free(*data);
        *data = NULL;
    }
    fclose(f);
    return st;
}

int file_read_path_gz(const char *path, size_t max_bytes, const char *what, char **data,
                      size_t *bytes, Error *e)
{
    *data = NULL;
    *bytes = 0;
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f)
        return error_set(e, CDL_ERUNTIME, "%s: cannot open %s: %s", path, what,
                         errno ? strerror(errno) : "out of memory");
    gzbuffer(f, 1 << 17);
    int st =
        bounded_failure(read_bounded(f, read_gz, max_bytes, data, bytes), path, max_bytes, what, e);
    int z = Z_OK;
    const char *zmsg = gzerror(f, &z);
    if (!st && z != Z_OK) {
        st = z == Z_BUF_ERROR
                 ? error_set(e, CDL_ERUNTIME, "%s: truncated (compressed data ends early)", path)
             : z == Z_ERRNO ? error_set(e, CDL_ERUNTIME, "%s: cannot read %s: %s", path, what,
                                        strerror(errno ? errno : EIO))
                            : error_set(e, CDL_ERUNTIME, "%s: corrupt: %s", path, zmsg);
        free(*data);
        *data = NULL;
    }
    gzclose(f);
    return st;
}

size_t file_bom_bytes(const char *text)
{
    return strncmp(text, "\xEF\xBB\xBF", 3) ? 0 : 3;
}
