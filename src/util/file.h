/* Reading a whole file into memory (cfgs, images, texts); callers open it and word the errors. */
#ifndef CDL_FILE_H
#define CDL_FILE_H

#include <stddef.h>
#include <stdio.h>

/* Reads f to its end into *data (malloc'd, with a NUL after the *bytes bytes read; NULL on
 * failure). Returns 0, ENOMEM, or the errno of a read error (EIO when errno says nothing). */
int file_read_stream(FILE *f, char **data, size_t *bytes);

#endif
