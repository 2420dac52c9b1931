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

#endif
