/* darknet lists: one image path per line; a classifier's label is the class name that occurs in
   the path (darknet's substring rule), with ambiguous paths counted for a warning, a detector's
   boxes are in the image's label file. */
#include "data/source_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

/* The class whose name occurs in path[0..len) ending last (ties: the longest), or -1.
   *ambiguous tells whether more than one distinct class name occurs. Each start position whose
   byte begins some name is looked up once per distinct name length, so a line costs at most
   len * widths binary searches rather than a substring scan per class (ImageNet lists hold a
   million lines and 1000 classes). */
static int match_label(const NameIndex *ix, const char *path, size_t len, int *ambiguous)
{
    int best = -1, first = -1;
    size_t best_end = 0, best_len = 0;
    *ambiguous = 0;
    for (size_t p = 0; p < len; p++) {
        if (!ix->starts[(unsigned char)path[p]]) {
            continue;
        }
        for (int w = 0; w < ix->n_widths && ix->widths[w] <= len - p; w++) {
            size_t width = ix->widths[w];
            int cls = name_index_find(ix, path + p, width);
            if (cls < 0) {
                continue;
            }
            if (first < 0) {
                first = cls;
            } else if (cls != first) {
                *ambiguous = 1;
            }
            if (p + width > best_end || (p + width == best_end && width > best_len)) {
                best = cls;
                best_end = p + width;
                best_len = width;
            }
        }
    }
    return best;
}

/* One line's sample: the label by substring match (0 without ix: a detection list), then the
   resolved path. */
static int add_line(FileList *l, const NameIndex *ix, const char *list_path, int line_no,
                    const char *path, size_t len, Error *e)
{
    int ambiguous = 0;
    const int cls = ix ? match_label(ix, path, len, &ambiguous) : 0;
    if (cls < 0) {
        return error_set(e, CDL_EUSAGE, "%s:%d: no class name occurs in the path '%s'", list_path,
                         line_no, path);
    }
    if (ambiguous && l->ambiguous++ == 0 && !(l->first_ambiguous = strdup(path))) {
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", list_path);
    }
    int found;
    return file_list_add(l, path_resolve(list_path, path, &found), cls, e);
}

int source_list_open(SampleSource *s, const char *list_path, char *const *names, int n_names,
                     Error *e)
{
    memset(s, 0, sizeof *s);
    FILE *f = fopen(list_path, "r");
    if (!f) {
        return error_set(e, CDL_ERUNTIME, "%s: cannot open list: %s", list_path, strerror(errno));
    }
    NameIndex ix = {0};
    FileList l = {0};
    int rc = names ? name_index_build(&ix, names, n_names, e) : CDL_OK;
    char *buf = NULL;
    size_t cap = 0;
    for (int line_no = 1; !rc && getline(&buf, &cap, f) >= 0; line_no++) {
        char *path = text_trim(buf + (line_no == 1 ? file_bom_bytes(buf) : 0));
        size_t len = strlen(path);
        if (len > 0) {
            rc = add_line(&l, names ? &ix : NULL, list_path, line_no, path, len, e);
        }
    }
    if (!rc && ferror(f)) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot read list", list_path);
    }
    free(buf);
    fclose(f);
    name_index_free(&ix);
    if (rc) {
        file_list_free(&l);
        return rc;
    }
    return source_from_file_list(s, &l, n_names, list_path, e);
}
