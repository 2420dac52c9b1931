/* Whole-file reads with a doubling buffer; the UTF-8 byte order mark. */
#include "util/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int file_read_stream(FILE *f, char **data, size_t *bytes)
{
    *data = NULL;
    *bytes = 0;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - 1 - len, f); /* room for the NUL */
        if (len < cap - 1)
            break;
        char *grown = cap < ((size_t)1 << 40) ? realloc(buf, cap * 2) : NULL;
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    if (!buf)
        return ENOMEM;
    if (ferror(f)) {
        const int failure = errno ? errno : EIO;
        free(buf);
        return failure;
    }
    buf[len] = '\0';
    *data = buf;
    *bytes = len;
    return 0;
}

size_t file_bom_bytes(const char *text)
{
    return strncmp(text, "\xEF\xBB\xBF", 3) ? 0 : 3;
}
