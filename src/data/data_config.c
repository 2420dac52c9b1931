/* The darknet-style `.data` file: parsing, path resolution, class names, and loading the sets. */
#include "data/data_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_CLASSES = 1 << 16 };

static const char VALID_KEYS[] = "classes, train, train_labels, valid, valid_labels, names (or "
                                 "labels), valid_split, backup, top";

void data_config_free(DataConfig *dc)
{
    if (!dc) {
        return;
    }
    free(dc->path);
    free(dc->train);
    free(dc->train_labels);
    free(dc->valid);
    free(dc->valid_labels);
    free(dc->names_path);
    for (int i = 0; i < dc->n_names; i++) {
        free(dc->names[i]);
    }
    free(dc->names);
    memset(dc, 0, sizeof *dc);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) {
        s[--n] = 0;
    }
    return s;
}

/* Cuts a comment: # or ; at the start of the line or after a space or tab. */
static void strip_comment(char *s)
{
    for (char *p = s; *p; p++) {
        if ((*p == '#' || *p == ';') && (p == s || p[-1] == ' ' || p[-1] == '\t')) {
            *p = 0;
            return;
        }
    }
}

/* Resolves a path named in the .data file: as given if it exists (or is absolute), else
   relative to the .data file's directory if it exists there, else as given. *found tells
   whether the returned path exists. Returns NULL when out of memory. */
static char *resolve_path(const char *data_path, const char *value, int *found)
{
    *found = access(value, F_OK) == 0;
    const char *slash = strrchr(data_path, '/');
    if (!*found && value[0] != '/' && slash) {
        size_t dir_len = (size_t)(slash - data_path) + 1;
        char *joined = malloc(dir_len + strlen(value) + 1);
        if (!joined) {
            return NULL;
        }
        memcpy(joined, data_path, dir_len);
        strcpy(joined + dir_len, value);
        if (access(joined, F_OK) == 0) {
            *found = 1;
            return joined;
        }
        free(joined);
    }
    return strdup(value);
}

/* Reads one name per non-blank line (surrounding whitespace trimmed). */
static int load_names(const char *path, const char *where, DataConfig *dc, Error *e)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        return error_set(e, CDL_EUSAGE, "%s: cannot open names file '%s': %s", where, path,
                         strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    int cap_names = 0, rc = CDL_OK;
    while (getline(&line, &cap, f) >= 0) {
        char *name = trim(line);
        if (!*name) {
            continue;
        }
        if (dc->n_names == cap_names) {
            cap_names = cap_names ? 2 * cap_names : 16;
            char **grown = realloc(dc->names, (size_t)cap_names * sizeof *grown);
            if (!grown) {
                rc = error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
                break;
            }
            dc->names = grown;
        }
        if (!(dc->names[dc->n_names] = strdup(name))) {
            rc = error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
            break;
        }
        dc->n_names++;
    }
    if (!rc && ferror(f)) {
        rc = error_set(e, CDL_ERUNTIME, "cannot read names file '%s'", path);
    }
    if (!rc && dc->n_names == 0) {
        rc = error_set(e, CDL_EUSAGE, "%s: names file '%s' holds no names", where, path);
    }
    free(line);
    fclose(f);
    return rc;
}

static int default_names(DataConfig *dc, Error *e)
{
    dc->names = calloc((size_t)dc->classes, sizeof *dc->names);
    if (!dc->names) {
        return error_set(e, CDL_ERUNTIME, "out of memory for %d class names", dc->classes);
    }
    for (; dc->n_names < dc->classes; dc->n_names++) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", dc->n_names);
        if (!(dc->names[dc->n_names] = strdup(buf))) {
            return error_set(e, CDL_ERUNTIME, "out of memory for class names");
        }
    }
    return CDL_OK;
}

/* Stores one key=value; line is for messages. */
static int set_key(DataConfig *dc, const char *key, const char *value, int line, int *names_line,
                   Error *e)
{
    char **slot = NULL;
    if (!strcmp(key, "train")) {
        slot = &dc->train;
    } else if (!strcmp(key, "train_labels")) {
        slot = &dc->train_labels;
    } else if (!strcmp(key, "valid")) {
        slot = &dc->valid;
    } else if (!strcmp(key, "valid_labels")) {
        slot = &dc->valid_labels;
    } else if (!strcmp(key, "names") || !strcmp(key, "labels")) {
        slot = &dc->names_path;
    }
    if (slot) {
        if (*slot) {
            return error_set(e, CDL_EUSAGE, "%s:%d: duplicate key '%s'", dc->path, line, key);
        }
        int found;
        if (!(*slot = resolve_path(dc->path, value, &found))) {
            return error_set(e, CDL_ERUNTIME, "%s:%d: out of memory", dc->path, line);
        }
        if (slot == &dc->names_path) {
            *names_line = line;
        }
        return CDL_OK;
    }
    char *end;
    if (!strcmp(key, "classes")) {
        errno = 0;
        long v = strtol(value, &end, 10);
        if (dc->classes) {
            return error_set(e, CDL_EUSAGE, "%s:%d: duplicate key 'classes'", dc->path, line);
        }
        if (*end || errno || v < 1 || v > MAX_CLASSES) {
            return error_set(e, CDL_EUSAGE, "%s:%d: classes=%s: expected an integer in 1..%d",
                             dc->path, line, value, MAX_CLASSES);
        }
        dc->classes = (int)v;
        return CDL_OK;
    }
    if (!strcmp(key, "valid_split")) {
        double v = strtod(value, &end);
        if (*end || !(v >= 0.0 && v < 1.0)) {
            return error_set(e, CDL_EUSAGE, "%s:%d: valid_split=%s: expected a number in [0, 1)",
                             dc->path, line, value);
        }
        dc->valid_split = (float)v;
        return CDL_OK;
    }
    if (!strcmp(key, "backup") || !strcmp(key, "top")) {
        return CDL_OK; /* darknet keys with no meaning here */
    }
    return error_set(e, CDL_EUSAGE, "%s:%d: unknown key '%s' (valid keys: %s)", dc->path, line, key,
                     VALID_KEYS);
}

static int parse_lines(FILE *f, DataConfig *dc, int *names_line, Error *e)
{
    char *buf = NULL;
    size_t cap = 0;
    int rc = CDL_OK;
    for (int line = 1; !rc && getline(&buf, &cap, f) >= 0; line++) {
        strip_comment(buf);
        char *s = trim(buf);
        if (!*s) {
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = error_set(e, CDL_EUSAGE, "%s:%d: expected key=value, got '%s'", dc->path, line, s);
            break;
        }
        *eq = 0;
        char *key = trim(s), *value = trim(eq + 1);
        if (!*value) {
            rc = error_set(e, CDL_EUSAGE, "%s:%d: key '%s' has no value", dc->path, line, key);
            break;
        }
        rc = set_key(dc, key, value, line, names_line, e);
    }
    free(buf);
    return rc;
}

/* Cross-key checks and the class names, once every line is read. */
static int finish(DataConfig *dc, int names_line, Error *e)
{
    if (dc->valid && dc->valid_split > 0) {
        return error_set(e, CDL_EUSAGE, "%s: give either valid= or valid_split=, not both",
                         dc->path);
    }
    if (dc->train_labels && !dc->train) {
        return error_set(e, CDL_EUSAGE, "%s: train_labels= given without train=", dc->path);
    }
    if (dc->valid_labels && !dc->valid) {
        return error_set(e, CDL_EUSAGE, "%s: valid_labels= given without valid=", dc->path);
    }
    if (!dc->names_path) {
        if (!dc->classes) {
            return error_set(e, CDL_EUSAGE, "%s: needs classes= or names=", dc->path);
        }
        return default_names(dc, e);
    }
    char where[1100];
    snprintf(where, sizeof where, "%s:%d", dc->path, names_line);
    int rc = load_names(dc->names_path, where, dc, e);
    if (rc) {
        return rc;
    }
    if (!dc->classes) {
        dc->classes = dc->n_names;
    } else if (dc->n_names != dc->classes) {
        return error_set(e, CDL_EUSAGE, "%s: names file '%s' holds %d names but classes=%d", where,
                         dc->names_path, dc->n_names, dc->classes);
    }
    return CDL_OK;
}

int data_config_load(const char *path, DataConfig *dc, Error *e)
{
    memset(dc, 0, sizeof *dc);
    FILE *f = fopen(path, "r");
    if (!f) {
        return error_set(e, CDL_EUSAGE, "%s: cannot open data file: %s", path, strerror(errno));
    }
    if (!(dc->path = strdup(path))) {
        fclose(f);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    int names_line = 0;
    int rc = parse_lines(f, dc, &names_line, e);
    if (!rc && ferror(f)) {
        rc = error_set(e, CDL_ERUNTIME, "%s: cannot read data file", path);
    }
    fclose(f);
    if (!rc) {
        rc = finish(dc, names_line, e);
    }
    if (rc) {
        data_config_free(dc);
    }
    return rc;
}

/* Prefixes e's message with the .data path, so a dataset error says which config named it. */
static int with_config_path(const DataConfig *dc, int rc, Error *e)
{
    if (e) {
        char inner[sizeof e->msg];
        memcpy(inner, e->msg, sizeof inner);
        error_set(e, rc, "%s: %.900s", dc->path, inner);
    }
    return rc;
}

static int check_labels(const DataConfig *dc, const char *role, const char *file, const Dataset *d,
                        Error *e)
{
    for (int i = 0; i < d->n; i++) {
        if (d->labels[i] >= dc->classes) {
            return error_set(e, CDL_EUSAGE, "%s: %s '%s' sample %d has label %d but classes=%d",
                             dc->path, role, file, i, d->labels[i], dc->classes);
        }
    }
    return CDL_OK;
}

static int load_sets(const DataConfig *dc, Dataset *train, Dataset *valid, Error *e)
{
    if (!dc->train) {
        return error_set(e, CDL_EUSAGE, "%s: no train= entry", dc->path);
    }
    int rc = dataset_load(dc->train, dc->train_labels, train, e);
    if (rc) {
        return with_config_path(dc, rc, e);
    }
    if ((rc = check_labels(dc, "train", dc->train, train, e))) {
        return rc;
    }
    if (dc->valid) {
        if ((rc = dataset_load(dc->valid, dc->valid_labels, valid, e))) {
            return with_config_path(dc, rc, e);
        }
        if ((rc = check_labels(dc, "valid", dc->valid, valid, e))) {
            return rc;
        }
        if (valid->c != train->c || valid->h != train->h || valid->w != train->w) {
            return error_set(e, CDL_EUSAGE, "%s: valid samples are %dx%dx%d, train are %dx%dx%d",
                             dc->path, valid->c, valid->h, valid->w, train->c, train->h, train->w);
        }
    } else if (dc->valid_split > 0) {
        if ((rc = dataset_split_tail(train, dc->valid_split, valid, e))) {
            return with_config_path(dc, rc, e);
        }
    } else {
        *valid = *train;
        valid->n = 0;
        valid->pixels = NULL;
        valid->labels = NULL;
    }
    train->classes = valid->classes = dc->classes;
    return CDL_OK;
}

int data_config_load_sets(const DataConfig *dc, Dataset *train, Dataset *valid, Error *e)
{
    memset(train, 0, sizeof *train);
    memset(valid, 0, sizeof *valid);
    int rc = load_sets(dc, train, valid, e);
    if (rc) {
        dataset_free(train);
        dataset_free(valid);
    }
    return rc;
}
