/* Error reporting helpers. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>

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
