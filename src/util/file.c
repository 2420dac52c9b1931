/* Whole-file reads with a doubling buffer, bounded; the UTF-8 byte order mark. */
#include "util/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Reads f to its end into *data (malloc'd, with a NUL after the *bytes bytes read; NULL on
 * failure), reading at most max_bytes + 1 bytes. Returns 0, EFBIG when f holds more than
 * max_bytes, ENOMEM, or the errno of a read error (EIO when errno says nothing). */
static int read_stream(FILE *f, size_t max_bytes, char **data, size_t *bytes)
{
    *data = NULL;
    *bytes = 0;
    const size_t most = max_bytes + 2; /* max_bytes + 1 bytes tell a larger file, then the NUL */
    size_t cap = most < ((size_t)1 << 16) ? most : (size_t)1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - 1 - len, f); /* room for the NUL */
        if (len < cap - 1 || cap == most)
            break;
        const size_t grown_cap = cap > most / 2 ? most : cap * 2;
        char *grown = realloc(buf, grown_cap);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap = grown_cap;
    }
    if (!buf)
        return ENOMEM;
    if (ferror(f) || len > max_bytes) {
        const int failure = len > max_bytes ? EFBIG : errno ? errno : EIO;
        free(buf);
        return failure;
    }
    buf[len] = '\0';
    *data = buf;
    *bytes = len;
    return 0;
}

int file_read_path(const char *path, size_t max_bytes, const char *what, char **data, size_t *bytes,
                   Error *e)
{
    *data = NULL;
    *bytes = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return error_set(e, CDL_ERUNTIME, "%s: cannot open %s: %s", path, what, strerror(errno));
    const int failure = read_stream(f, max_bytes, data, bytes);
    fclose(f);
    if (failure == EFBIG)
        return error_set(e, CDL_EUSAGE,
                         "%s: larger than %zu MiB, the most cdl reads for one %s (is it the right "
                         "file?)",
                         path, max_bytes >> 20, what);
    if (failure == ENOMEM)
        return error_set(e, CDL_ERUNTIME, "%s: out of memory reading %s", path, what);
    if (failure)
        return error_set(e, CDL_ERUNTIME, "%s: cannot read %s: %s", path, what, strerror(failure));
    return CDL_OK;
}

size_t file_bom_bytes(const char *text)
{
    return strncmp(text, "\xEF\xBB\xBF", 3) ? 0 : 3;
}
