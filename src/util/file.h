/* Reading a whole file into memory (cfgs, images, texts), and the UTF-8 byte order mark that
 * text files may start with; callers open them and word the errors. */
#ifndef CDL_FILE_H
#define CDL_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "util/error.h"

/* The most bytes cdl reads whole of each kind of input: far above any real one, so that a wrong
 * file (a disk image, /dev/zero, a FIFO that never ends) is refused instead of filling memory. */
#define FILE_MAX_CFG_BYTES ((size_t)16 << 20)
#define FILE_MAX_IMAGE_BYTES ((size_t)256 << 20)
#define FILE_MAX_TEXT_BYTES ((size_t)1 << 30)
#define FILE_MAX_LOG_BYTES ((size_t)1 << 30)
#define FILE_MAX_ONNX_BYTES ((size_t)2 << 30)    /* protobuf's own limit */
#define FILE_MAX_DATASET_BYTES ((size_t)2 << 30) /* an IDX or digits CSV file, decompressed */

/* Reads the file at path whole into *data (malloc'd, with a NUL after the *bytes bytes read;
 * NULL on failure) when it holds at most max_bytes, reading no more than max_bytes + 1. what names
 * the kind of file in the messages ("config", "image", "text", "ONNX model", "log"): CDL_ERUNTIME
 * "PATH: cannot open WHAT: REASON", "PATH: cannot read WHAT: REASON" or "PATH: out of memory
 * reading WHAT", and CDL_EUSAGE "PATH: larger than N MiB, the most cdl reads for one WHAT (is it
 * the right file?)". */
int file_read_path(const char *path, size_t max_bytes, const char *what, char **data, size_t *bytes,
                   Error *e);
/* file_read_path of a file that may be gzip-compressed (zlib passes other files through): the
 * data decompressed, max_bytes bounding what it decompresses to; a damaged .gz is CDL_ERUNTIME
 * "PATH: truncated (compressed data ends early)" or "PATH: corrupt: REASON". */
int file_read_path_gz(const char *path, size_t max_bytes, const char *what, char **data,
                      size_t *bytes, Error *e);

/* 3 when text starts with the UTF-8 byte order mark (EF BB BF) that Windows editors put at the
 * start of a text file, else 0: every reader of a text file (cfg, .data, names, lists, CSV,
 * corpora) skips that many of the file's first bytes. */
size_t file_bom_bytes(const char *text);

#endif
