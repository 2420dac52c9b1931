/* Error reporting: a status code plus a message with the context a user needs. */
#ifndef CDL_ERROR_H
#define CDL_ERROR_H

/* Status codes double as the CLI's exit codes. */
enum { CDL_OK = 0, CDL_ERUNTIME = 1, CDL_EUSAGE = 2 };

typedef struct Error {
    int code;
    char msg[1024];
} Error;

/* Fills e (which may be NULL) and returns code, so callers can `return error_set(...)`. */
int error_set(Error *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Chaining context onto a message that a callee filled: error_prefix puts fmt's text before
 * e's message ("PATH: " + "FILE:LINE: ..."), error_append after it; both set e->code = code
 * (e may be NULL) and return code, so callers can `return error_prefix(e, st, "%s: ", path)`.
 * A result longer than msg keeps its start and end, cut in the middle (" [...] "). */
int error_prefix(Error *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int error_append(Error *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
