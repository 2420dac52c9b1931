/* What a file named on the command line holds, told from its first bytes (and, where the bytes
 * cannot tell, its name): so that a file of the wrong kind is refused with a message that says
 * what it is and which command takes it, never with its raw bytes. */
#ifndef CDL_FILE_KIND_H
#define CDL_FILE_KIND_H

#include <stddef.h>

#include "util/error.h"

typedef enum FileKind {
    FILE_KIND_MISSING, /* cannot be opened (errno says why) */
    FILE_KIND_DIRECTORY,
    FILE_KIND_EMPTY,
    FILE_KIND_CHECKPOINT, /* starts with the cdl checkpoint magic */
    FILE_KIND_PNG,
    FILE_KIND_JPEG,
    FILE_KIND_GZIP,
    FILE_KIND_ONNX,        /* binary, named *.onnx (protobuf has no magic) */
    FILE_KIND_SAFETENSORS, /* a little-endian header length, then '{' */
    FILE_KIND_WEIGHTS,     /* binary, named *.weights (darknet's have no magic) */
    FILE_KIND_CFG,         /* text whose first line that is not blank or a comment is [section] */
    FILE_KIND_TEXT,        /* other text: no NUL and few control bytes in the first 4 KiB */
    FILE_KIND_BINARY,      /* anything else */
} FileKind;

/* The kind of path; *err_no receives errno when it is FILE_KIND_MISSING (may be NULL). */
FileKind file_kind(const char *path, int *err_no);

/* "a PNG image", "a cfg file", "an ONNX model", "a binary file", ... (for messages). */
const char *file_kind_name(FileKind kind);

/* Why a file of this kind (at path) is not a cdl checkpoint, and what to do with it, written to
 * out: "a cfg file, not a cdl checkpoint: train it first (`cdl train x.cfg`)", "an ONNX model,
 * not a cdl checkpoint: import it first (`cdl import m.onnx`)", ...; "not a cdl checkpoint (bad
 * magic)" for other files. Returns CDL_EUSAGE when the file is of a known other kind (the
 * wrong file was given: a cfg, a model or weights of another format, an image), else
 * CDL_ERUNTIME (it may be a damaged checkpoint). */
int file_kind_not_checkpoint(FileKind kind, const char *path, char *out, size_t size);

#endif
