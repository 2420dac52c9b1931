/* Error reporting helpers. A message longer than Error.msg loses its middle, not its end: a
 * long path comes first and the reason last, and the reason is what the reader needs. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Room for a message before it is fitted into Error.msg. */
#define ERROR_TEXT_BYTES 16384
#define ERROR_CUT " [...] "

/* Copies text (len bytes) into e->msg; when too long, its first quarter, ERROR_CUT and its end. */
static void fit(Error *e, const char *text, size_t len)
{
    const size_t cap = sizeof e->msg - 1;
    if (len <= cap) {
        memcpy(e->msg, text, len);
        e->msg[len] = '\0';
        return;
    }
    const size_t head = cap / 4, cut = sizeof ERROR_CUT - 1, tail = cap - head - cut;
    memcpy(e->msg, text, head);
    memcpy(e->msg + head, ERROR_CUT, cut);
    memcpy(e->msg + head + cut, text + len - tail, tail);
    e->msg[cap] = '\0';
}

/* before + fmt's text + after into e->msg (fitted). */
static void compose(Error *e, const char *before, const char *after, const char *fmt, va_list ap)
{
    char text[ERROR_TEXT_BYTES];
    size_t len = (size_t)snprintf(text, sizeof text, "%s", before);
    len = len < sizeof text ? len : sizeof text - 1;
    const int n = vsnprintf(text + len, sizeof text - len, fmt, ap);
    len += n < 0 ? 0 : (size_t)n;
    len = len < sizeof text ? len : sizeof text - 1;
    len += (size_t)snprintf(text + len, sizeof text - len, "%s", after);
    fit(e, text, len < sizeof text ? len : sizeof text - 1);
}

int error_set(Error *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        compose(e, "", "", fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

int error_prefix(Error *e, int code, const char *fmt, ...)
{
    if (e) {
        char old[sizeof e->msg];
        memcpy(old, e->msg, sizeof old);
        va_list ap;
        va_start(ap, fmt);
        compose(e, "", old, fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}

int error_append(Error *e, int code, const char *fmt, ...)
{
    if (e) {
        char old[sizeof e->msg];
        memcpy(old, e->msg, sizeof old);
        va_list ap;
        va_start(ap, fmt);
        compose(e, old, "", fmt, ap);
        va_end(ap);
        e->code = code;
    }
    return code;
}
