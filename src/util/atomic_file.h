/* Files that appear whole or not at all: written unnamed (O_TMPFILE) or under a temporary name
 * in the target's directory, then renamed over PATH. Temporary names are
 * DIR/.BASE.cdl-tmp.HOST.PID; one left by a killed process is removed by the next write into
 * DIR once PID no longer runs on HOST. */
#ifndef CDL_ATOMIC_FILE_H
#define CDL_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "util/error.h"
#include "util/file_kind.h"

typedef struct AtomicFile {
    FILE *file; /* write the contents here */
    char *path, *tmp_path;
    int unnamed; /* 1: file has no name yet (O_TMPFILE); commit links it as tmp_path */
} AtomicFile;

/* Refuses to replace what path holds unless it is of kind, the kind the caller writes
 * (file_check_output: nothing there, an empty file or a file of that kind), then removes the
 * temporary names of dead processes from path's directory and creates the temporary file there.
 * Errors start with path. */
int atomic_file_open(AtomicFile *f, const char *path, FileKind kind, Error *e);
/* Flushes, syncs, closes and renames the temporary file over path (and frees f). On failure the
 * temporary file is removed and path is untouched. */
int atomic_file_commit(AtomicFile *f, Error *e);
/* Removes the temporary file and frees f (path is untouched). */
void atomic_file_abort(AtomicFile *f);

/* Makes link a symbolic link to target (as symlink(2) takes it) atomically: a temporary link
 * beside it renamed over it, so concurrent callers each succeed and the last one wins. An
 * existing link path that is not a symbolic link is left alone (an error). */
int atomic_symlink(const char *target, const char *link, Error *e);

/* The temporary name this process writes path under: DIR/.BASE.cdl-tmp.HOST.PID. */
void atomic_file_temp_path(const char *path, char *out, size_t size);

/* strerror(err) for a failed write, saying what EFBIG means (SIGXFSZ is ignored by the CLI, so
 * a write past `ulimit -f` fails with it instead of killing the process). */
const char *atomic_file_strerror(int err);

#endif
