/* Reading a whole file into memory (cfgs, images, texts), and the UTF-8 byte order mark that
 * text files may start with; callers open them and word the errors. */
#ifndef CDL_FILE_H
#define CDL_FILE_H

#include <stddef.h>
#include <stdio.h>

/* Reads f to its end into *data (malloc'd, with a NUL after the *bytes bytes read; NULL on
 * failure). Returns 0, ENOMEM, or the errno of a read error (EIO when errno says nothing). */
int file_read_stream(FILE *f, char **data, size_t *bytes);

/* 3 when text starts with the UTF-8 byte order mark (EF BB BF) that Windows editors put at the
 * start of a text file, else 0: every reader of a text file (cfg, .data, names, lists, CSV,
 * corpora) skips that many of the file's first bytes. */
size_t file_bom_bytes(const char *text);

#endif
