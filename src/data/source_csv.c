/* CSV datasets of image files: `path,label` lines, the label a class index or a class name, an
   optional header line. */
#include "data/source_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

/* Sentinels of parse_label besides a class index. */
enum { LABEL_UNKNOWN_NAME = -1, LABEL_OUT_OF_RANGE = -2 };

/* The class of a label field: an integer index, else a class name. */
static int parse_label(const NameIndex *ix, const char *field)
{
    char *end;
    errno = 0;
    long v = strtol(field, &end, 10);
    if (end != field && !*end) {
        return !errno && v >= 0 && v < ix->n ? (int)v : LABEL_OUT_OF_RANGE;
    }
    int cls = name_index_find(ix, field, strlen(field));
    return cls >= 0 ? cls : LABEL_UNKNOWN_NAME;
}

/* One non-blank line; *header_allowed is cleared after the first. */
static int add_line(FileList *l, const NameIndex *ix, const char *csv_path, int line_no, char *text,
                    int *header_allowed, Error *e)
{
    int first = *header_allowed;
    *header_allowed = 0;
    char *comma = strrchr(text, ',');
    if (!comma) {
        return error_set(e, CDL_EUSAGE, "%s:%d: expected path,label, got '%s'", csv_path, line_no,
                         text);
    }
    *comma = 0;
    char *path = text_trim(text), *field = text_trim(comma + 1);
    int cls = parse_label(ix, field);
    if (cls == LABEL_UNKNOWN_NAME && first) {
        return CDL_OK; /* a header line such as "path,label" */
    }
    if (!*path) {
        return error_set(e, CDL_EUSAGE, "%s:%d: empty path", csv_path, line_no);
    }
    if (cls == LABEL_OUT_OF_RANGE) {
        return error_set(e, CDL_EUSAGE, "%s:%d: label '%s' is not a class index in 0..%d", csv_path,
                         line_no, field, ix->n - 1);
    }
    if (cls == LABEL_UNKNOWN_NAME) {
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: label '%s' is neither a class index nor a class name", csv_path,
                         line_no, field);
    }
    int found;
    return file_list_add(l, path_resolve(csv_path, path, &found), cls, e);
}

int source_csv_open(SampleSource *s, const char *csv_path, char *const *names, int n_names,
                    Error *e)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(csv_path, "r");
    if (!f) {
        return error_set(e, CDL_ERUNTIME, "%s: cannot open CSV: %s", csv_path, strerror(errno));
    }
    NameIndex ix;
    FileList l = {0};
    int rc = name_index_build(&ix, names, n_names, e), header_allowed = 1;
    char *buf = NULL;
    size_t cap = 0;
    for (int line_no = 1; !rc && getline(&buf, &cap, f) >= 0; line_no++) {
        char *text = text_trim(buf + (line_no == 1 ? file_bom_bytes(buf) : 0));
        if (*text) {
            rc = add_line(&l, &ix, csv_path, line_no, text, &header_allowed, e);
        }
    }
    if (!rc && ferror(f)) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot read CSV", csv_path);
    }
    free(buf);
    fclose(f);
    name_index_free(&ix);
    if (rc) {
        file_list_free(&l);
        return rc;
    }
    return source_from_file_list(s, &l, n_names, csv_path, e);
}
