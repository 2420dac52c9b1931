/* Telling what a file holds from its first bytes (see file_kind.h). */
#include "util/file_kind.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* How much of a file the sniffing reads. */
#define SNIFF_BYTES 4096

static int has_suffix(const char *path, const char *suffix)
{
    const size_t n = strlen(path), k = strlen(suffix);
    return n > k && !strcasecmp(path + n - k, suffix);
}

/* Text: no NUL, and at most 1 in 32 bytes a control character other than tab, CR, LF, FF, ESC
 * (UTF-8 and Latin-1 letters are >= 0x80, so they count as text). */
static int looks_like_text(const unsigned char *b, size_t n)
{
    size_t control = 0;
    for (size_t i = 0; i < n; i++) {
        if (!b[i])
            return 0;
        control += b[i] < 0x20 && !strchr("\t\r\n\f\033", b[i]);
    }
    return control * 32 <= n;
}

/* A cfg: the first line that is not blank or a comment (# or ;) starts with '['. */
static int looks_like_cfg(const unsigned char *b, size_t n)
{
    size_t i = 0;
    if (n >= 3 && !memcmp(b, "\xEF\xBB\xBF", 3)) /* a UTF-8 BOM */
        i = 3;
    while (i < n) {
        while (i < n && strchr(" \t\r\n", b[i]))
            i++;
        if (i < n && (b[i] == '#' || b[i] == ';')) {
            while (i < n && b[i] != '\n')
                i++;
            continue;
        }
        return i < n && b[i] == '[';
    }
    return 0;
}

/* safetensors: an 8-byte little-endian header length within the file, then '{'. */
static int looks_like_safetensors(const unsigned char *b, size_t n, long long file_size)
{
    if (n < 9 || b[8] != '{')
        return 0;
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--)
        len = len << 8 | b[i];
    return len >= 2 && len <= (uint64_t)file_size - 8;
}

/* The kind of a text file: a cfg, or what its first bytes that are not white space start with. */
static FileKind text_kind(const unsigned char *b, size_t n)
{
    if (looks_like_cfg(b, n))
        return FILE_KIND_CFG;
    size_t i = 0;
    while (i < n && strchr(" \t\r\n", b[i]))
        i++;
    const char *at = (const char *)b + i;
    const size_t left = n - i;
    if (left >= 1 && *at == '{')
        return FILE_KIND_JSON;
    if (left >= 7 && !memcmp(at, "digraph", 7))
        return FILE_KIND_DOT;
    if ((left >= 4 && !memcmp(at, "<svg", 4)) || (left >= 5 && !memcmp(at, "<?xml", 5)))
        return FILE_KIND_SVG;
    return FILE_KIND_TEXT;
}

FileKind file_kind(const char *path, int *err_no)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (err_no)
            *err_no = errno;
        return FILE_KIND_MISSING;
    }
    if (S_ISDIR(st.st_mode))
        return FILE_KIND_DIRECTORY;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err_no)
            *err_no = errno;
        return FILE_KIND_MISSING;
    }
    unsigned char b[SNIFF_BYTES];
    const size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (n == 0)
        return FILE_KIND_EMPTY;
    if (n >= 8 && !memcmp(b, "CDLCKPT", 8))
        return FILE_KIND_CHECKPOINT;
    if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8))
        return FILE_KIND_PNG;
    if (n >= 3 && !memcmp(b, "\xFF\xD8\xFF", 3))
        return FILE_KIND_JPEG;
    if (n >= 2 && b[0] == 0x1F && b[1] == 0x8B)
        return FILE_KIND_GZIP;
    if (looks_like_safetensors(b, n, (long long)st.st_size))
        return FILE_KIND_SAFETENSORS;
    if (n >= 6 && !memcmp(b, "\x93NUMPY", 6))
        return FILE_KIND_NPY;
    if (looks_like_text(b, n))
        return text_kind(b, n);
    if (has_suffix(path, ".onnx"))
        return FILE_KIND_ONNX;
    if (has_suffix(path, ".weights"))
        return FILE_KIND_WEIGHTS;
    return FILE_KIND_BINARY;
}

int file_kind_is_text(FileKind kind)
{
    return kind == FILE_KIND_TEXT || kind == FILE_KIND_JSON || kind == FILE_KIND_DOT ||
           kind == FILE_KIND_SVG;
}

const char *file_kind_name(FileKind kind)
{
    static const char *const names[] = {
        [FILE_KIND_MISSING] = "a missing file",
        [FILE_KIND_DIRECTORY] = "a directory",
        [FILE_KIND_EMPTY] = "an empty file",
        [FILE_KIND_CHECKPOINT] = "a cdl checkpoint",
        [FILE_KIND_PNG] = "a PNG image",
        [FILE_KIND_JPEG] = "a JPEG image",
        [FILE_KIND_GZIP] = "a gzip file",
        [FILE_KIND_ONNX] = "an ONNX model",
        [FILE_KIND_SAFETENSORS] = "a safetensors file",
        [FILE_KIND_WEIGHTS] = "darknet .weights",
        [FILE_KIND_NPY] = "a NumPy .npy file",
        [FILE_KIND_CFG] = "a cfg file",
        [FILE_KIND_JSON] = "a JSON file",
        [FILE_KIND_DOT] = "a Graphviz DOT file",
        [FILE_KIND_SVG] = "an SVG image",
        [FILE_KIND_TEXT] = "a text file",
        [FILE_KIND_BINARY] = "a binary file",
    };
    return names[kind];
}

int file_kind_not_checkpoint(FileKind kind, const char *path, char *out, size_t size)
{
    const char *name = file_kind_name(kind);
    switch (kind) {
    case FILE_KIND_CFG:
        snprintf(out, size, "%s, not a cdl checkpoint: train it first (`cdl train %s`)", name,
                 path);
        return CDL_EUSAGE;
    case FILE_KIND_ONNX:
        snprintf(out, size, "%s, not a cdl checkpoint: import it first (`cdl import %s`)", name,
                 path);
        return CDL_EUSAGE;
    case FILE_KIND_SAFETENSORS:
    case FILE_KIND_WEIGHTS:
        snprintf(out, size,
                 "%s, not a cdl checkpoint: load it into the cfg it belongs to (`--weights %s` "
                 "with that CFG)",
                 name, path);
        return CDL_EUSAGE;
    case FILE_KIND_PNG:
    case FILE_KIND_JPEG:
        snprintf(out, size, "%s, not a cdl checkpoint", name);
        return CDL_EUSAGE;
    default:
        snprintf(out, size, "not a cdl checkpoint (bad magic)");
        return CDL_ERUNTIME;
    }
}

int file_check_output(const char *path, FileKind writes, const char *const *inputs, int n_inputs,
                      Error *e)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || S_ISDIR(sb.st_mode)) /* nothing there, or the write will fail */
        return CDL_OK;
    for (int k = 0; k < n_inputs; k++) {
        struct stat in;
        if (inputs[k] && stat(inputs[k], &in) == 0 && in.st_dev == sb.st_dev &&
            in.st_ino == sb.st_ino)
            return error_set(e, CDL_EUSAGE,
                             "%s: is an input of this command (%s); not overwriting it (choose "
                             "another output path)",
                             path, inputs[k]);
    }
    if (!S_ISREG(sb.st_mode))
        return error_set(e, CDL_EUSAGE, "%s: is not a regular file; not replacing it with %s", path,
                         file_kind_name(writes));
    if (sb.st_size == 0) /* holds nothing: `-o $(mktemp)` */
        return CDL_OK;
    int err_no = 0;
    const FileKind kind = file_kind(path, &err_no);
    if (kind == FILE_KIND_MISSING)
        return error_set(e, CDL_EUSAGE,
                         "%s: cannot read it (%s) to check what it holds; not overwriting it", path,
                         strerror(err_no));
    if (kind != writes)
        return error_set(e, CDL_EUSAGE,
                         "%s: exists and is %s, not %s; not overwriting it (choose another path)",
                         path, file_kind_name(kind), file_kind_name(writes));
    return CDL_OK;
}
