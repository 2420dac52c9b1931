/* Files that appear whole or not at all: written to PATH.tmp.PID, then renamed over PATH. */
#ifndef CDL_ATOMIC_FILE_H
#define CDL_ATOMIC_FILE_H

#include <stdio.h>

#include "util/error.h"

typedef struct AtomicFile {
    FILE *file; /* write the contents here */
    char *path, *tmp_path;
} AtomicFile;

/* Creates the temporary file next to path. Errors start with path. */
int atomic_file_open(AtomicFile *f, const char *path, Error *e);
/* Flushes, closes and renames the temporary file over path (and frees f). On failure the
 * temporary file is removed and path is untouched. */
int atomic_file_commit(AtomicFile *f, Error *e);
/* Removes the temporary file and frees f (path is untouched). */
void atomic_file_abort(AtomicFile *f);

#endif
