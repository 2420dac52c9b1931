/* What a file named on the command line holds, told from its first bytes (and, where the bytes
 * cannot tell, its name): so that a file of the wrong kind is refused with a message that says
 * what it is and which command takes it, never with its raw bytes; and so that no writer replaces
 * a file the user did not mean it to (file_check_output). */
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
    FILE_KIND_NPY,         /* starts with the NumPy magic \x93NUMPY */
    FILE_KIND_CFG,         /* text whose first line that is not blank or a comment is [section] */
    FILE_KIND_JSON,        /* text that starts with '{' (a trace, a JSON Lines log) */
    FILE_KIND_DOT,         /* text that starts with "digraph" (Graphviz) */
    FILE_KIND_SVG,         /* text that starts with "<svg" or "<?xml" */
    FILE_KIND_TEXT,        /* other text: no NUL and few control bytes in the first 4 KiB */
    FILE_KIND_BINARY,      /* anything else */
} FileKind;

/* The kind of path; *err_no receives errno when it is FILE_KIND_MISSING (may be NULL). */
FileKind file_kind(const char *path, int *err_no);

/* 1 for text that is no cfg: FILE_KIND_TEXT and the kinds of text told apart for writers (JSON,
 * DOT, SVG), which readers of text (corpora, .data files) take alike. */
int file_kind_is_text(FileKind kind);

/* "a PNG image", "a cfg file", "an ONNX model", "a binary file", ... (for messages). */
const char *file_kind_name(FileKind kind);

/* Why a file of this kind (at path) is not a cdl checkpoint, and what to do with it, written to
 * out: "a cfg file, not a cdl checkpoint: train it first (`cdl train x.cfg`)", "an ONNX model,
 * not a cdl checkpoint: import it first (`cdl import m.onnx`)", ...; "not a cdl checkpoint (bad
 * magic)" for other files. Returns CDL_EUSAGE when the file is of a known other kind (the
 * wrong file was given: a cfg, a model or weights of another format, an image), else
 * CDL_ERUNTIME (it may be a damaged checkpoint). */
int file_kind_not_checkpoint(FileKind kind, const char *path, char *out, size_t size);

/* CDL_OK when writing a file of kind `writes` at path loses nothing the user meant to keep:
 * nothing is there (or a directory, on which the write fails), an empty file (mktemp's), or a
 * file of that kind that is none of inputs[0..n_inputs) (the same file by device and inode,
 * whatever its name). Else CDL_EUSAGE starting with path: "PATH: is an input of this command;
 * not overwriting it (choose another output path)", "PATH: exists and is a text file, not an
 * ONNX model; not overwriting it (choose another path)", "PATH: is not a regular file; not
 * replacing it with an ONNX model", or that it cannot be read to tell. atomic_file_open checks
 * it (no inputs) for every writer; the commands that read one file and write another check their
 * inputs up front. */
int file_check_output(const char *path, FileKind writes, const char *const *inputs, int n_inputs,
                      Error *e);

#endif
