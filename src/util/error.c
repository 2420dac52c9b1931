/* Error reporting helpers. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int error_set(Error *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

int error_prefix(Error *e, int code, const char *fmt, ...)
{
    if (e) {
        char prefix[sizeof e->msg];
        va_list ap;
        va_start(ap, fmt);
        const int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        const size_t len = n < 0 ? 0 : (size_t)n < sizeof prefix ? (size_t)n : sizeof prefix - 1;
        const size_t keep = strnlen(e->msg, sizeof e->msg - 1 - len);
        memmove(e->msg + len, e->msg, keep);
        memcpy(e->msg, prefix, len);
        e->msg[len + keep] = '\0';
        e->code = code;
    }
    return code;
}

int error_append(Error *e, int code, const char *fmt, ...)
{
    if (e) {
        const size_t len = strnlen(e->msg, sizeof e->msg - 1);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg + len, sizeof e->msg - len, fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}
