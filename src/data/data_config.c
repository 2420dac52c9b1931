/* The darknet-style `.data` file: parsing, path resolution, dataset kinds, class names, and
   opening the sets as sample sources (or loading in-memory ones). */
#include "data/data_config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "data/cifar.h"
#include "data/source_coco.h"
#include "data/source_files.h"
#include "util/file.h"
#include "util/file_kind.h"

enum { MAX_CLASSES = 1 << 16 };

static const char VALID_KEYS[] = "classes, train, train_labels, valid, valid_labels, names, "
                                 "labels, type, tokens, vocab_size, valid_split, train_target, "
                                 "valid_target, bucket, backup, top";

static const char *const KIND_NAMES[] = {
    [DATA_ARRAYS] = "IDX or digits CSV", [DATA_CIFAR10] = "CIFAR-10",
    [DATA_CIFAR100] = "CIFAR-100",       [DATA_FOLDER] = "an image folder",
    [DATA_LIST] = "a darknet list",      [DATA_CSV] = "a CSV of image paths",
    [DATA_TEXT] = "a text file",         [DATA_COCO] = "a COCO JSON",
};

static void free_strings(char **v, int n)
{
    for (int i = 0; v && i < n; i++) {
        free(v[i]);
    }
    free(v);
}

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
    free(dc->train_target);
    free(dc->valid_target);
    free(dc->names_path);
    free(dc->labels_path);
    free(dc->type);
    free_strings(dc->names, dc->n_names);
    free_strings(dc->match_names, dc->n_names);
    memset(dc, 0, sizeof *dc);
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

/* The content of line number `line` of a .data file read into buf: a leading UTF-8 BOM (line
   1), the comment and surrounding blanks removed; "" for a blank or comment line. */
static char *data_line_content(char *buf, int line)
{
    char *s = buf + (line == 1 ? file_bom_bytes(buf) : 0);
    strip_comment(s);
    return text_trim(s);
}

/* Resolves a dataset path; a comma-separated list (CIFAR batches) part by part unless the whole
   value names a file. NULL when out of memory. */
static char *resolve_dataset_path(const char *data_path, const char *value)
{
    int found;
    char *whole = path_resolve(data_path, value, &found);
    if (!whole || found || !strchr(value, ',')) {
        return whole;
    }
    free(whole);
    size_t cap = 1, len = 0;
    char *joined = calloc(1, 1);
    for (const char *p = value; joined && *p;) {
        size_t n = strcspn(p, ",");
        char *part = strndup(p, n);
        char *resolved = part ? path_resolve(data_path, part, &found) : NULL;
        free(part);
        size_t add = resolved ? strlen(resolved) : 0;
        char *grown = resolved ? realloc(joined, cap + add + 1) : NULL;
        if (!grown) {
            free(resolved);
            free(joined);
            return NULL;
        }
        joined = grown;
        cap += add + 1;
        len += (size_t)sprintf(joined + len, "%s%s", len ? "," : "", resolved);
        free(resolved);
        p += n + (p[n] == ',');
    }
    return joined;
}

/* Reads one name per non-blank line (surrounding whitespace trimmed) into *names / *n_names. */
static int load_names(const char *path, const char *where, char ***names, int *n_names, Error *e)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        return error_set(e, CDL_ERUNTIME, "%s: cannot open names file '%s': %s", where, path,
                         strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    int cap_names = 0, rc = CDL_OK;
    for (int line_no = 1; getline(&line, &cap, f) >= 0; line_no++) {
        char *name = text_trim(line + (line_no == 1 ? file_bom_bytes(line) : 0));
        if (!*name) {
            continue;
        }
        if (*n_names == cap_names) {
            cap_names = cap_names ? 2 * cap_names : 16;
            char **grown = realloc(*names, (size_t)cap_names * sizeof *grown);
            if (!grown) {
                rc = error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
                break;
            }
            *names = grown;
        }
        if (!((*names)[*n_names] = strdup(name))) {
            rc = error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
            break;
        }
        (*n_names)++;
    }
    if (!rc && ferror(f)) {
        rc = error_set(e, CDL_ERUNTIME, "cannot read names file '%s'", path);
    }
    if (!rc && *n_names == 0) {
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

/* Lines of the keys that later checks name. */
typedef struct KeyLines {
    int names, labels, type, tokens, vocab_size, bucket;
} KeyLines;

static int parse_type(const char *value, DataKind *kind)
{
    static const struct {
        const char *name;
        DataKind kind;
    } types[] = {{"cifar10", DATA_CIFAR10}, {"cifar100", DATA_CIFAR100}, {"folder", DATA_FOLDER},
                 {"list", DATA_LIST},       {"csv", DATA_CSV},           {"idx", DATA_ARRAYS},
                 {"digits", DATA_ARRAYS},   {"text", DATA_TEXT},         {"pairs", DATA_TEXT},
                 {"coco", DATA_COCO}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        if (!strcmp(value, types[i].name)) {
            *kind = types[i].kind;
            return 1;
        }
    }
    return 0;
}

/* Stores one key=value; line is for messages. */
static int set_key(DataConfig *dc, const char *key, const char *value, int line, KeyLines *lines,
                   Error *e)
{
    char **slot = NULL;
    int *slot_line = NULL, dataset = 0;
    if (!strcmp(key, "train") || !strcmp(key, "valid")) {
        slot = key[0] == 't' ? &dc->train : &dc->valid;
        dataset = 1;
    } else if (!strcmp(key, "train_labels")) {
        slot = &dc->train_labels;
    } else if (!strcmp(key, "valid_labels")) {
        slot = &dc->valid_labels;
    } else if (!strcmp(key, "train_target") || !strcmp(key, "valid_target")) {
        slot = key[0] == 't' ? &dc->train_target : &dc->valid_target;
    } else if (!strcmp(key, "names")) {
        slot = &dc->names_path;
        slot_line = &lines->names;
    } else if (!strcmp(key, "labels")) {
        slot = &dc->labels_path;
        slot_line = &lines->labels;
    } else if (!strcmp(key, "type")) {
        DataKind kind;
        if (!parse_type(value, &kind)) {
            return error_set(e, CDL_EUSAGE,
                             "%s:%d: type=%s: expected cifar10, cifar100, folder, list, csv, idx, "
                             "digits, text or pairs",
                             dc->path, line, value);
        }
        dc->pairs = !strcmp(value, "pairs");
        slot = &dc->type;
        slot_line = &lines->type;
    }
    if (slot) {
        if (*slot) {
            return error_set(e, CDL_EUSAGE, "%s:%d: duplicate key '%s'", dc->path, line, key);
        }
        int found;
        *slot = slot == &dc->type ? strdup(value)
                : dataset         ? resolve_dataset_path(dc->path, value)
                                  : path_resolve(dc->path, value, &found);
        if (!*slot) {
            return error_set(e, CDL_ERUNTIME, "%s:%d: out of memory", dc->path, line);
        }
        if (slot_line) {
            *slot_line = line;
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
    if (!strcmp(key, "tokens")) {
        if (strcmp(value, "char") && strcmp(value, "byte") && strcmp(value, "bpe")) {
            return error_set(e, CDL_EUSAGE, "%s:%d: tokens=%s: expected char, byte or bpe",
                             dc->path, line, value);
        }
        dc->tokens_bytes = !strcmp(value, "byte");
        dc->tokens_bpe = !strcmp(value, "bpe");
        lines->tokens = line;
        return CDL_OK;
    }
    if (!strcmp(key, "vocab_size")) {
        errno = 0;
        long v = strtol(value, &end, 10);
        if (*end || errno || v < DATA_BPE_MIN_VOCAB || v > DATA_BPE_MAX_VOCAB) {
            return error_set(e, CDL_EUSAGE,
                             "%s:%d: vocab_size=%s: expected an integer in %d..%d (a byte-level "
                             "BPE has the 256 bytes and its merges)",
                             dc->path, line, value, DATA_BPE_MIN_VOCAB, DATA_BPE_MAX_VOCAB);
        }
        dc->vocab_size = (int)v;
        lines->vocab_size = line;
        return CDL_OK;
    }
    if (!strcmp(key, "bucket")) {
        errno = 0;
        long v = strtol(value, &end, 10);
        if (*end || errno || v < 0 || v > INT_MAX) {
            return error_set(e, CDL_EUSAGE,
                             "%s:%d: bucket=%s: expected the pairs of a length bucket, an integer "
                             ">= 0 (0: none)",
                             dc->path, line, value);
        }
        dc->bucket = (int)v;
        lines->bucket = line;
        return CDL_OK;
    }
    if (!strcmp(key, "backup") || !strcmp(key, "top")) {
        return CDL_OK; /* darknet keys with no meaning here */
    }
    return error_set(e, CDL_EUSAGE, "%s:%d: unknown key '%s' (valid keys: %s)", dc->path, line, key,
                     VALID_KEYS);
}

static int parse_lines(FILE *f, DataConfig *dc, KeyLines *lines, Error *e)
{
    char *buf = NULL;
    size_t cap = 0;
    int rc = CDL_OK;
    for (int line = 1; !rc && getline(&buf, &cap, f) >= 0; line++) {
        char *s = data_line_content(buf, line);
        if (!*s) {
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = error_set(e, CDL_EUSAGE, "%s:%d: expected key=value, got '%s'", dc->path, line, s);
            break;
        }
        *eq = 0;
        char *key = text_trim(s), *value = text_trim(eq + 1);
        if (!*value) {
            rc = error_set(e, CDL_EUSAGE, "%s:%d: key '%s' has no value", dc->path, line, key);
            break;
        }
        rc = set_key(dc, key, value, line, lines, e);
    }
    free(buf);
    return rc;
}

/* ---- dataset kinds ---- */

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether the first part of path (up to a comma) ends in ext, any case. */
static int has_extension(const char *path, const char *ext)
{
    size_t len = strcspn(path, ","), n = strlen(ext);
    return len > n && !strncasecmp(path + len - n, ext, n);
}

/* Whether a CSV's first field is not a number (so its lines are path,label), as far as the file
   can be read; an unreadable file is left to dataset_load to report. */
static int csv_holds_paths(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        return 0;
    }
    char *buf = NULL, *field = NULL;
    size_t cap = 0;
    for (int line = 1; getline(&buf, &cap, f) >= 0 &&
                       !*(field = text_trim(buf + (line == 1 ? file_bom_bytes(buf) : 0)));
         line++) {
    }
    int paths = 0;
    if (field && *field) {
        field[strcspn(field, ",")] = 0;
        field = text_trim(field);
        char *end;
        strtod(field, &end);
        paths = end == field || *end;
    }
    free(buf);
    fclose(f);
    return paths;
}

/* The kind of one dataset path (see data_config.h); role is for messages. */
static int detect_kind(const DataConfig *dc, const char *path, const char *role, DataKind *kind,
                       Error *e)
{
    if (dc->type) {
        parse_type(dc->type, kind);
        return CDL_OK;
    }
    int cifar = 0;
    if (is_dir(path)) {
        cifar = cifar_detect(path);
        *kind = cifar ? DATA_ARRAYS : DATA_FOLDER;
    } else if (has_extension(path, ".txt") || has_extension(path, ".list")) {
        *kind = DATA_LIST;
    } else if (has_extension(path, ".json")) {
        *kind = DATA_COCO;
    } else if (has_extension(path, ".csv")) {
        *kind = csv_holds_paths(path) ? DATA_CSV : DATA_ARRAYS;
    } else if (has_extension(path, ".bin")) {
        if (!(cifar = cifar_detect(path))) {
            return error_set(e, CDL_EUSAGE,
                             "%s: %s=%s: cannot tell CIFAR-10 from CIFAR-100 batches; add "
                             "type=cifar10 or type=cifar100",
                             dc->path, role, path);
        }
    } else {
        *kind = DATA_ARRAYS;
    }
    if (cifar) {
        *kind = cifar == 10 ? DATA_CIFAR10 : DATA_CIFAR100;
    }
    return CDL_OK;
}

/* ---- class names ---- */

/* names= and labels=: one of them is the class names; with both, labels= strings are what a
   darknet list matches (darknet's imagenet .data names wordnet ids there). */
static int load_name_files(DataConfig *dc, const KeyLines *lines, Error *e)
{
    if (!dc->names_path) {
        dc->names_path = dc->labels_path;
        dc->labels_path = NULL;
    }
    char where[1100];
    snprintf(where, sizeof where, "%s:%d", dc->path, lines->names ? lines->names : lines->labels);
    int rc = load_names(dc->names_path, where, &dc->names, &dc->n_names, e);
    if (rc) {
        return rc;
    }
    if (dc->classes && dc->n_names != dc->classes) {
        return error_set(e, CDL_EUSAGE, "%s: names file '%s' holds %d names but classes=%d", where,
                         dc->names_path, dc->n_names, dc->classes);
    }
    dc->classes = dc->n_names;
    if (!dc->labels_path) {
        return CDL_OK;
    }
    snprintf(where, sizeof where, "%s:%d", dc->path, lines->labels);
    int n_match = 0;
    rc = load_names(dc->labels_path, where, &dc->match_names, &n_match, e);
    if (!rc && n_match != dc->n_names) {
        rc = error_set(e, CDL_EUSAGE, "%s: labels file '%s' holds %d labels but names= holds %d",
                       where, dc->labels_path, n_match, dc->n_names);
    }
    if (rc) {
        free_strings(dc->match_names, n_match);
        dc->match_names = NULL;
    }
    return rc;
}

/* Without names=: the train folder's class folders, a COCO JSON's categories, else CIFAR's class
   count, else classes=. */
static int implied_names(DataConfig *dc, Error *e)
{
    if (dc->train && dc->train_kind == DATA_COCO) {
        char **names;
        int n;
        int rc = coco_category_names(dc->train, &names, &n, e);
        if (rc) {
            return error_prefix(e, rc, "%s: ", dc->path);
        }
        if (dc->classes && n != dc->classes) {
            free_strings(names, n);
            return error_set(e, CDL_EUSAGE, "%s: train=%s holds %d categories but classes=%d",
                             dc->path, dc->train, n, dc->classes);
        }
        dc->names = names;
        dc->n_names = dc->classes = n;
        return CDL_OK;
    }
    if (dc->train && dc->train_kind == DATA_FOLDER) {
        char **folders;
        int n;
        int rc = folder_list_classes(dc->train, &folders, &n, e);
        if (rc) {
            return error_prefix(e, rc, "%s: ", dc->path);
        }
        if (dc->classes && n != dc->classes) {
            free_strings(folders, n);
            return error_set(e, CDL_EUSAGE, "%s: train=%s holds %d class folders but classes=%d",
                             dc->path, dc->train, n, dc->classes);
        }
        dc->names = folders;
        dc->n_names = dc->classes = n;
        return CDL_OK;
    }
    if (!dc->classes && dc->train && dc->train_kind != DATA_ARRAYS) {
        dc->classes = dc->train_kind == DATA_CIFAR10    ? 10
                      : dc->train_kind == DATA_CIFAR100 ? 100
                                                        : 0;
    }
    if (!dc->classes) {
        return error_set(e, CDL_EUSAGE, "%s: needs classes= or names=", dc->path);
    }
    return default_names(dc, e);
}

/* Cross-key checks, dataset kinds and the class names, once every line is read. */
/* Checks the keys' combinations, tells the kinds of train= and valid= and loads the class names.
 * names_problem not NULL: a names= or labels= file that fails to load is reported there instead,
 * the classes named by number when classes= gives their count. */
static int finish(DataConfig *dc, const KeyLines *lines, Error *names_problem, Error *e)
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
    if ((dc->train_target || dc->valid_target) && !dc->pairs) {
        return error_set(e, CDL_EUSAGE, "%s: %s= applies to type=pairs only", dc->path,
                         dc->train_target ? "train_target" : "valid_target");
    }
    if (dc->pairs && dc->valid && !dc->train_target != !dc->valid_target) {
        return error_set(e, CDL_EUSAGE,
                         "%s: train= and valid= are both TSV files or both source files with a "
                         "%s= beside them",
                         dc->path, dc->train_target ? "valid_target" : "train_target");
    }
    int rc = dc->train ? detect_kind(dc, dc->train, "train", &dc->train_kind, e) : CDL_OK;
    if (!rc && dc->valid) {
        rc = detect_kind(dc, dc->valid, "valid", &dc->valid_kind, e);
    }
    if (rc) {
        return rc;
    }
    if (dc->train_kind == DATA_TEXT && lines->vocab_size && !dc->tokens_bpe) {
        return error_set(e, CDL_EUSAGE, "%s:%d: vocab_size= applies to tokens=bpe only", dc->path,
                         lines->vocab_size);
    }
    if (dc->train_kind == DATA_TEXT && dc->tokens_bpe && !lines->vocab_size) {
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: tokens=bpe needs vocab_size=N (%d..%d: 256 bytes plus N-256 "
                         "merges)",
                         dc->path, lines->tokens, DATA_BPE_MIN_VOCAB, DATA_BPE_MAX_VOCAB);
    }
    if (lines->bucket && !dc->pairs) {
        return error_set(e, CDL_EUSAGE, "%s:%d: bucket= applies to type=pairs only", dc->path,
                         lines->bucket);
    }
    if (dc->train_kind == DATA_TEXT) { /* the vocabulary comes from the text (data/text_data.h) */
        return dc->train ? CDL_OK
                         : error_set(e, CDL_EUSAGE, "%s: type=%s needs train= (a text file)",
                                     dc->path, dc->pairs ? "pairs" : "text");
    }
    if (lines->tokens || lines->vocab_size) {
        return error_set(e, CDL_EUSAGE, "%s:%d: %s= applies to type=text only", dc->path,
                         lines->tokens ? lines->tokens : lines->vocab_size,
                         lines->tokens ? "tokens" : "vocab_size");
    }
    if (dc->train && dc->train_kind == DATA_COCO && dc->valid_split > 0) {
        return error_set(e, CDL_EUSAGE,
                         "%s: valid_split= does not split a COCO JSON train=: give valid= (a "
                         "second JSON)",
                         dc->path);
    }
    if ((dc->train && dc->train_kind == DATA_LIST) || (dc->valid && dc->valid_kind == DATA_LIST)) {
        if (!dc->names_path && !dc->labels_path) {
            return error_set(e, CDL_EUSAGE,
                             "%s: a darknet list (%s) needs names= (the class names its paths "
                             "hold)",
                             dc->path, dc->train_kind == DATA_LIST ? dc->train : dc->valid);
        }
    }
    if (!dc->names_path && !dc->labels_path) {
        return implied_names(dc, e);
    }
    const int classes = dc->classes;
    const int loaded = load_name_files(dc, lines, e);
    if (!loaded || !names_problem || classes < 1) {
        return loaded;
    }
    *names_problem = *e;
    free_strings(dc->names, dc->n_names);
    dc->names = NULL;
    dc->n_names = 0;
    dc->classes = classes;
    return default_names(dc, e);
}

/* ---- datasets named without a .data file ---- */

/* Whether a text file is a .data file: its first line that is not blank or a comment is
   KEY=VALUE with one of the keys a .data file takes. */
static int holds_data_keys(FILE *f)
{
    char *buf = NULL;
    size_t cap = 0;
    int data = 0;
    for (int line = 1; getline(&buf, &cap, f) >= 0; line++) {
        char *s = data_line_content(buf, line);
        if (!*s) {
            continue;
        }
        char *eq = strchr(s, '=');
        if (eq) {
            *eq = 0;
            const char *key = text_trim(s);
            size_t n = strlen(key);
            for (const char *k = VALID_KEYS; *key && (k = strstr(k, key)); k += n) {
                data |= (k == VALID_KEYS || k[-1] == ' ') && (k[n] == ',' || k[n] == 0);
            }
        }
        break;
    }
    free(buf);
    rewind(f);
    return data;
}

/* Whether the first lines of a text that is not a .data file all name images (a darknet list,
   which needs a .data file for its class names). */
static int lists_images(FILE *f)
{
    char *buf = NULL;
    size_t cap = 0;
    int lines = 0, images = 0;
    while (lines < 20 && getline(&buf, &cap, f) >= 0) {
        char *s = text_trim(buf);
        if (!*s) {
            continue;
        }
        lines++;
        images += has_extension(s, ".jpg") || has_extension(s, ".jpeg") || has_extension(s, ".png");
    }
    free(buf);
    rewind(f);
    return lines && images == lines;
}

/* dir/name when that is a directory (malloc'd), else NULL. */
static char *subdirectory(const char *dir, const char *name)
{
    char *sub = malloc(strlen(dir) + strlen(name) + 2);
    if (sub) {
        sprintf(sub, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    }
    if (sub && !is_dir(sub)) {
        free(sub);
        return NULL;
    }
    return sub;
}

/* --data DIR/: CIFAR batches (the test batch validates), DIR/train and DIR/val (or valid) image
   folders, or one image folder of which a tenth of each class (picked by the seed) validates. */
static int implied_folder(DataConfig *dc, const char *dir, Error *e)
{
    char *train = subdirectory(dir, "train");
    char *valid = train ? subdirectory(dir, "val") : NULL;
    if (train && !valid) {
        valid = subdirectory(dir, "valid");
    }
    if (!train && cifar_detect(dir)) {
        train = strdup(dir);
        valid = strdup(dir);
    } else if (!train) {
        train = strdup(dir);
    }
    dc->train = train;
    dc->valid = valid;
    dc->valid_split = valid ? 0.0f : DATA_FOLDER_VALID_SPLIT;
    return train ? CDL_OK : error_set(e, CDL_ERUNTIME, "out of memory");
}

/* --data FILE of plain text: a text model's characters, the last 5% validating. */
static int implied_text(DataConfig *dc, const char *path, Error *e)
{
    dc->type = strdup("text");
    dc->train = strdup(path);
    dc->valid_split = DATA_TEXT_VALID_SPLIT;
    return dc->type && dc->train ? CDL_OK : error_set(e, CDL_ERUNTIME, "out of memory");
}

/* A file of another kind where a dataset is expected: what it is, and what --data takes. */
static int refuse_kind(const char *path, FileKind kind, Error *e)
{
    const char *hint = kind == FILE_KIND_PNG || kind == FILE_KIND_JPEG
                           ? "; to classify an image, use `cdl predict MODEL IMAGE`"
                       : kind == FILE_KIND_GZIP
                           ? "; IDX files (MNIST) go in a .data file: train= and train_labels="
                       : kind == FILE_KIND_CFG ? "; a cfg is the network: `cdl train CFG --data D`"
                       : kind == FILE_KIND_CHECKPOINT ? "; a checkpoint is the model: `cdl eval "
                                                        "MODEL --data D`"
                                                      : "";
    return error_set(e, CDL_EUSAGE,
                     "%s: %s, not a dataset: a dataset is a .data file, a text file (for a text "
                     "model) or an image folder (DIR/ with a folder per class)%s",
                     path, file_kind_name(kind), hint);
}

/* Reads the .data file f, or the dataset it implies (a text, a folder) when it is none. */
static int load_config(DataConfig *dc, const char *path, KeyLines *lines, Error *e)
{
    int err_no = 0;
    const FileKind kind = file_kind(path, &err_no);
    if (kind == FILE_KIND_MISSING) {
        return error_set(e, CDL_ERUNTIME, "%s: cannot open data file: %s", path, strerror(err_no));
    }
    if (kind == FILE_KIND_DIRECTORY) {
        return implied_folder(dc, path, e);
    }
    if (!file_kind_is_text(kind)) {
        return refuse_kind(path, kind, e);
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        return error_set(e, CDL_ERUNTIME, "%s: cannot open data file: %s", path, strerror(errno));
    }
    int rc;
    if (has_extension(path, ".data") || holds_data_keys(f)) {
        rc = parse_lines(f, dc, lines, e);
        if (!rc && ferror(f)) {
            rc = error_set(e, CDL_ERUNTIME, "%s: cannot read data file", path);
        }
    } else if (lists_images(f)) {
        rc = error_set(e, CDL_EUSAGE,
                       "%s: a list of image paths (a darknet list): name it in a .data file "
                       "(train=%s and names=, a file of class names)",
                       path, path);
    } else {
        rc = implied_text(dc, path, e);
    }
    fclose(f);
    return rc;
}

/* data_config_load, a names= file's failure in names_problem when that is not NULL (finish). */
static int load(const char *path, DataConfig *dc, Error *names_problem, Error *e)
{
    memset(dc, 0, sizeof *dc);
    if (!(dc->path = strdup(path))) {
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    dc->split_seed = DATA_SPLIT_SEED;
    KeyLines lines = {0};
    int rc = load_config(dc, path, &lines, e);
    if (!rc) {
        rc = finish(dc, &lines, names_problem, e);
    }
    if (rc) {
        data_config_free(dc);
    }
    return rc;
}

int data_config_load(const char *path, DataConfig *dc, Error *e)
{
    return load(path, dc, NULL, e);
}

int data_config_load_listing(const char *path, DataConfig *dc, Error *names_problem, Error *e)
{
    names_problem->code = CDL_OK;
    names_problem->msg[0] = '\0';
    return load(path, dc, names_problem, e);
}

/* ---- opening the sets ---- */

static int is_in_memory(DataKind kind)
{
    return kind == DATA_ARRAYS || kind == DATA_CIFAR10 || kind == DATA_CIFAR100;
}

/* Loads an in-memory set (IDX, digits, CIFAR; the CIFAR test batch for valid) and checks its
   labels against classes. */
static int load_arrays(const DataConfig *dc, DataKind kind, const char *role, const char *path,
                       const char *labels_path, Dataset *d, Error *e)
{
    int test = !strcmp(role, "valid");
    int rc = kind == DATA_ARRAYS ? dataset_load(path, labels_path, d, e)
                                 : cifar_load(path, kind == DATA_CIFAR10 ? 10 : 100, test, d, e);
    if (rc) {
        return error_prefix(e, rc, "%s: ", dc->path);
    }
    for (int i = 0; i < d->n; i++) {
        if (d->labels[i] >= dc->classes) {
            return error_set(e, CDL_EUSAGE, "%s: %s '%s' sample %d has label %d but classes=%d",
                             dc->path, role, path, i, d->labels[i], dc->classes);
        }
    }
    d->classes = dc->classes;
    return CDL_OK;
}

/* Opens an image-file set; folder_classes are the class folders a folder's labels index. */
static int open_files(const DataConfig *dc, DataKind kind, const char *path,
                      char *const *folder_classes, SampleSource *s, Error *e)
{
    char *const *match = dc->boxes ? NULL : dc->match_names ? dc->match_names : dc->names;
    if (kind == DATA_COCO && !dc->boxes) {
        return error_set(e, CDL_EUSAGE,
                         "%s: %s is COCO JSON detection labels, for a detection net ([yolo] or "
                         "[region])",
                         dc->path, path);
    }
    int rc = kind == DATA_COCO     ? source_coco_open(s, path, dc->classes, e)
             : kind == DATA_FOLDER ? source_folder_open(s, path, folder_classes, dc->classes, e)
             : kind == DATA_LIST   ? source_list_open(s, path, match, dc->classes, e)
                                   : source_csv_open(s, path, dc->names, dc->classes, e);
    return rc ? error_prefix(e, rc, "%s: ", dc->path) : CDL_OK;
}

/* Opens one set as a source; for train with valid_split and no valid=, held_out receives the
   split-off samples. folders: the train folder's class folders, or NULL. */
static int open_set(const DataConfig *dc, DataKind kind, const char *role, const char *path,
                    const char *labels_path, char *const *folders, SampleSource *s,
                    SampleSource *held_out, Error *e)
{
    if (!is_in_memory(kind)) {
        int rc = open_files(dc, kind, path, folders ? folders : dc->names, s, e);
        if (!rc && held_out) {
            rc = source_files_split(s, dc->valid_split, dc->split_seed, held_out, e);
            rc = rc ? error_prefix(e, rc, "%s: ", dc->path) : CDL_OK;
        }
        return rc;
    }
    Dataset d, tail = {0};
    int rc = load_arrays(dc, kind, role, path, labels_path, &d, e);
    if (!rc && held_out && (rc = dataset_split_tail(&d, dc->valid_split, &tail, e))) {
        rc = error_prefix(e, rc, "%s: ", dc->path);
    }
    if (!rc) {
        rc = source_from_dataset(s, &d, e);
    }
    if (!rc && held_out) {
        rc = source_from_dataset(held_out, &tail, e);
    }
    dataset_free(&d);
    dataset_free(&tail);
    return rc;
}

static int open_sources(const DataConfig *dc, SampleSource *train, SampleSource *valid,
                        char *const *folders, Error *e)
{
    int split = !dc->valid && dc->valid_split > 0;
    int rc = open_set(dc, dc->train_kind, "train", dc->train, dc->train_labels, folders, train,
                      split ? valid : NULL, e);
    if (rc || split) {
        return rc;
    }
    if (!dc->valid) {
        valid->classes = dc->classes;
        valid->c = train->c;
        valid->h = train->h;
        valid->w = train->w;
        return CDL_OK;
    }
    rc =
        open_set(dc, dc->valid_kind, "valid", dc->valid, dc->valid_labels, folders, valid, NULL, e);
    if (!rc && train->c && valid->c &&
        (valid->c != train->c || valid->h != train->h || valid->w != train->w)) {
        rc = error_set(e, CDL_EUSAGE, "%s: valid samples are %dx%dx%d, train are %dx%dx%d",
                       dc->path, valid->c, valid->h, valid->w, train->c, train->h, train->w);
    }
    return rc;
}

int data_config_check_image_sets(const DataConfig *dc, Error *e)
{
    if (!dc->train) {
        return error_set(e, CDL_EUSAGE, "%s: no train= entry", dc->path);
    }
    if (dc->train_kind == DATA_TEXT) {
        return error_set(e, CDL_EUSAGE,
                         "%s: a text dataset (type=text) is for sequence nets ([net] seq=), not "
                         "for image classifiers",
                         dc->path);
    }
    return CDL_OK;
}

int data_config_open_sources(const DataConfig *dc, SampleSource *train, SampleSource *valid,
                             Error *e)
{
    memset(train, 0, sizeof *train);
    memset(valid, 0, sizeof *valid);
    int checked = data_config_check_image_sets(dc, e);
    if (checked) {
        return checked;
    }
    /* Class folders index the labels of folder sets: the train folder's own when train is one. */
    char **folders = NULL;
    int n_folders = 0, rc = CDL_OK;
    if (dc->train_kind == DATA_FOLDER) {
        rc = folder_list_classes(dc->train, &folders, &n_folders, e);
        if (rc) {
            rc = error_prefix(e, rc, "%s: ", dc->path);
        } else if (n_folders != dc->classes) {
            rc = error_set(e, CDL_EUSAGE,
                           "%s: train=%s holds %d class folders but there are %d "
                           "classes",
                           dc->path, dc->train, n_folders, dc->classes);
        }
    }
    if (!rc) {
        rc = open_sources(dc, train, valid, folders, e);
    }
    free_strings(folders, n_folders);
    if (rc) {
        source_free(train);
        source_free(valid);
    } else {
        train->classes = valid->classes = dc->classes;
    }
    return rc;
}

int data_config_load_sets(const DataConfig *dc, Dataset *train, Dataset *valid, Error *e)
{
    memset(train, 0, sizeof *train);
    memset(valid, 0, sizeof *valid);
    if (!dc->train) {
        return error_set(e, CDL_EUSAGE, "%s: no train= entry", dc->path);
    }
    const char *files = !is_in_memory(dc->train_kind)                ? dc->train
                        : dc->valid && !is_in_memory(dc->valid_kind) ? dc->valid
                                                                     : NULL;
    if (files) {
        return error_set(e, CDL_EUSAGE,
                         "%s: '%s' is %s, which this command cannot read yet (it reads IDX, "
                         "digits CSV and CIFAR)",
                         dc->path, files,
                         KIND_NAMES[files == dc->train ? dc->train_kind : dc->valid_kind]);
    }
    int rc = load_arrays(dc, dc->train_kind, "train", dc->train, dc->train_labels, train, e);
    if (!rc && dc->valid) {
        rc = load_arrays(dc, dc->valid_kind, "valid", dc->valid, dc->valid_labels, valid, e);
        if (!rc && (valid->c != train->c || valid->h != train->h || valid->w != train->w)) {
            rc = error_set(e, CDL_EUSAGE, "%s: valid samples are %dx%dx%d, train are %dx%dx%d",
                           dc->path, valid->c, valid->h, valid->w, train->c, train->h, train->w);
        }
    } else if (!rc && dc->valid_split > 0) {
        if ((rc = dataset_split_tail(train, dc->valid_split, valid, e))) {
            rc = error_prefix(e, rc, "%s: ", dc->path);
        }
    } else if (!rc) {
        *valid = *train;
        valid->n = 0;
        valid->pixels = NULL;
        valid->labels = NULL;
    }
    if (rc) {
        dataset_free(train);
        dataset_free(valid);
    }
    return rc;
}
