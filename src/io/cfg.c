/* Parser for darknet-style INI config files, and the nearest cfgs to one that is not there. */
#include "io/cfg.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/file.h"

static char *strip(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

static int add_section(Cfg *cfg, const char *name, int line)
{
    CfgSection *grown = realloc(cfg->sections, (size_t)(cfg->n_sections + 1) * sizeof *grown);
    if (!grown)
        return -1;
    cfg->sections = grown;
    CfgSection *s = &cfg->sections[cfg->n_sections++];
    memset(s, 0, sizeof *s);
    s->name = strdup(name);
    s->line = line;
    return s->name ? 0 : -1;
}

static int add_entry(CfgSection *s, const char *key, const char *value, int line)
{
    CfgEntry *grown = realloc(s->entries, (size_t)(s->n_entries + 1) * sizeof *grown);
    if (!grown)
        return -1;
    s->entries = grown;
    CfgEntry *en = &s->entries[s->n_entries++];
    en->key = strdup(key);
    en->value = strdup(value);
    en->line = line;
    en->used = 0;
    en->set = NULL;
    return (en->key && en->value) ? 0 : -1;
}

/* Appends one line (a newline is added) to *list; dropped when out of memory. */
static void append_line(char **list, const char *fmt, va_list ap)
{
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t have = *list ? strlen(*list) : 0, add = strlen(line);
    char *grown = realloc(*list, have + add + 2);
    if (!grown)
        return;
    memcpy(grown + have, line, add);
    memcpy(grown + have + add, "\n", 2);
    *list = grown;
}

static void add_problem(Cfg *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_problem(Cfg *cfg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    append_line(&cfg->problems, fmt, ap);
    va_end(ap);
}

/* A key given twice in one section: with the same value a warning (darknet's own cfgs repeat
 * `batch=1`), else refused, or (lenient) listed with the first value kept. */
static int duplicate_key(Cfg *cfg, const CfgSection *s, const CfgEntry *first, int line,
                         const char *value, Error *e)
{
    if (!strcmp(first->value, value)) {
        cfg_warn(cfg, "%s:%d: warning: key '%s' in [%s] repeats line %d with the same value",
                 cfg->path, line, first->key, s->name, first->line);
        return CDL_OK;
    }
    char text[512];
    snprintf(text, sizeof text,
             "%s:%d: duplicate key '%s' in [%s]: '%s' here, '%s' at line %d (give it once)",
             cfg->path, line, first->key, s->name, value, first->value, first->line);
    if (!cfg->lenient)
        return error_set(e, CDL_EUSAGE, "%s", text);
    add_problem(cfg, "%s", text);
    return CDL_OK;
}

static int parse(const char *text, const char *path, int lenient, Cfg *cfg, Error *e)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->lenient = lenient;
    cfg->path = strdup(path);
    cfg->text = strdup(text);
    char *copy = strdup(text);
    if (!cfg->path || !cfg->text || !copy) {
        free(copy);
        cfg_free(cfg);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    }
    int status = CDL_OK;
    int line_no = 0;
    char *save = NULL;
    for (char *raw = copy + file_bom_bytes(copy); raw && status == CDL_OK; raw = save) {
        save = strchr(raw, '\n');
        if (save)
            *save++ = '\0';
        line_no++;
        char *hash = strpbrk(raw, "#;");
        if (hash)
            *hash = '\0';
        char *line = strip(raw);
        if (!*line)
            continue;
        if (*line == '[') {
            char *close = strchr(line, ']');
            if (!close || close[1] != '\0' || close == line + 1) {
                status = error_set(e, CDL_EUSAGE, "%s:%d: malformed section header '%s'", path,
                                   line_no, line);
                break;
            }
            *close = '\0';
            if (add_section(cfg, strip(line + 1), line_no))
                status = error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
            continue;
        }
        char *eq = strchr(line, '=');
        if (!eq) {
            status = error_set(e, CDL_EUSAGE, "%s:%d: expected key=value, got '%s'", path, line_no,
                               line);
            break;
        }
        *eq = '\0';
        char *key = strip(line), *value = strip(eq + 1);
        if (!*key) {
            status = error_set(e, CDL_EUSAGE, "%s:%d: missing key before '='", path, line_no);
        } else if (cfg->n_sections == 0) {
            status = error_set(e, CDL_EUSAGE, "%s:%d: key '%s' before the first [section]", path,
                               line_no, key);
        } else {
            CfgSection *s = &cfg->sections[cfg->n_sections - 1];
            const CfgEntry *first = cfg_find(s, key);
            if (first)
                status = duplicate_key(cfg, s, first, line_no, value, e);
            else if (add_entry(s, key, value, line_no))
                status = error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
        }
    }
    free(copy);
    if (status == CDL_OK && cfg->n_sections == 0)
        status = error_set(e, CDL_EUSAGE, "%s:1: empty config: expected a [net] section", path);
    if (status != CDL_OK)
        cfg_free(cfg);
    return status;
}

int cfg_parse_text(const char *text, const char *path, Cfg *cfg, Error *e)
{
    return parse(text, path, 0, cfg, e);
}

/* Levenshtein distance of a and b (each at most 63 bytes are compared). */
static int edit_distance(const char *a, const char *b)
{
    int row[64], n = (int)strnlen(b, 63), m = (int)strnlen(a, 63);
    for (int j = 0; j <= n; j++)
        row[j] = j;
    for (int i = 1; i <= m; i++) {
        int diagonal = row[0];
        row[0] = i;
        for (int j = 1; j <= n; j++) {
            const int up = row[j], best = up < row[j - 1] ? up + 1 : row[j - 1] + 1;
            const int swap = diagonal + (a[i - 1] != b[j - 1]);
            row[j] = best < swap ? best : swap;
            diagonal = up;
        }
    }
    return row[n];
}

/* The cfgs beside path that its name is nearest, at most 4: those sharing its first 3
 * characters, then those within 2 edits, each by fewest edits (then name): "; the nearest are
 * a.cfg, b.cfg" into out, or "". cfg/resnet.cfg gives resnet18, resnet34, resnet50,
 * resnet18_cifar. */
static void nearest_cfgs(const char *path, char *out, size_t size)
{
    enum { SHOWN = 4 };
    char dir[4096], stem[64], best[SHOWN][64] = {{0}};
    int best_d[SHOWN], n = 0;
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    snprintf(stem, sizeof stem, "%.*s", (int)strcspn(base, "."), base);
    out[0] = '\0';
    DIR *d = opendir(dir);
    for (struct dirent *en; d && (en = readdir(d));) {
        const size_t len = strlen(en->d_name);
        if (len < 5 || len > 63 || strcmp(en->d_name + len - 4, ".cfg"))
            continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)len - 4, en->d_name);
        const int prefix = strlen(stem) >= 3 && !strncmp(stem, name, 3);
        const int dist = edit_distance(stem, name) + (prefix ? 0 : 1000);
        if (!prefix && dist > 1002)
            continue;
        int k = n < SHOWN ? n++ : SHOWN;
        for (; k > 0 &&
               (best_d[k - 1] > dist || (best_d[k - 1] == dist && strcmp(best[k - 1], name) > 0));
             k--)
            if (k < SHOWN) {
                best_d[k] = best_d[k - 1];
                memcpy(best[k], best[k - 1], sizeof best[k]);
            }
        if (k < SHOWN) {
            best_d[k] = dist;
            memcpy(best[k], name, sizeof best[k]);
        }
    }
    if (d)
        closedir(d);
    for (int k = 0; k < n; k++) {
        const size_t used = strlen(out);
        snprintf(out + used, size - used, "%s%.*s%s.cfg", k ? ", " : "; the nearest are ",
                 (int)(base - path), path, best[k]);
    }
}

static int load(const char *path, int lenient, Cfg *cfg, Error *e)
{
    memset(cfg, 0, sizeof *cfg);
    char *text;
    size_t len;
    const int failure = file_read_path(path, FILE_MAX_CFG_BYTES, "config", &text, &len, e);
    if (failure && access(path, F_OK) != 0 && errno == ENOENT) {
        char nearest[512];
        nearest_cfgs(path, nearest, sizeof nearest);
        return error_append(e, failure, "%s", nearest);
    }
    if (failure)
        return failure;
    if (strlen(text) != len) {
        free(text);
        return error_set(e, CDL_EUSAGE, "%s: not a text config file (contains NUL bytes)", path);
    }
    int status = parse(text, path, lenient, cfg, e);
    free(text);
    return status;
}

int cfg_load(const char *path, Cfg *cfg, Error *e)
{
    return load(path, 0, cfg, e);
}

int cfg_load_lenient(const char *path, Cfg *cfg, Error *e)
{
    return load(path, 1, cfg, e);
}

void cfg_free(Cfg *cfg)
{
    for (int i = 0; i < cfg->n_sections; i++) {
        CfgSection *s = &cfg->sections[i];
        for (int j = 0; j < s->n_entries; j++) {
            free(s->entries[j].key);
            free(s->entries[j].value);
            free(s->entries[j].set);
        }
        free(s->entries);
        free(s->name);
    }
    free(cfg->sections);
    free(cfg->path);
    free(cfg->text);
    free(cfg->warnings);
    free(cfg->problems);
    memset(cfg, 0, sizeof *cfg);
}

char *cfg_to_text(const Cfg *cfg)
{
    size_t bytes = 1;
    for (int i = 0; i < cfg->n_sections; i++) {
        const CfgSection *s = &cfg->sections[i];
        bytes += strlen(s->name) + 4;
        for (int j = 0; j < s->n_entries; j++)
            bytes += strlen(s->entries[j].key) + strlen(s->entries[j].value) + 2;
    }
    char *text = malloc(bytes), *at = text;
    if (!text)
        return NULL;
    for (int i = 0; i < cfg->n_sections; i++) {
        const CfgSection *s = &cfg->sections[i];
        at += sprintf(at, "%s[%s]\n", i ? "\n" : "", s->name);
        for (int j = 0; j < s->n_entries; j++)
            at += sprintf(at, "%s=%s\n", s->entries[j].key, s->entries[j].value);
    }
    *at = '\0';
    return text;
}

int cfg_apply_override(Cfg *cfg, const char *assignment, Error *e)
{
    const char *dot = strchr(assignment, '.');
    const char *eq = strchr(assignment, '=');
    if (!dot || !eq || dot > eq || dot == assignment || eq == dot + 1)
        return error_set(e, CDL_EUSAGE,
                         "--set '%s': expected SECTION.key=value (SECTION is net or a layer index)",
                         assignment);
    char section[64], key[128];
    size_t section_len = (size_t)(dot - assignment), key_len = (size_t)(eq - dot - 1);
    if (section_len >= sizeof section || key_len >= sizeof key)
        return error_set(e, CDL_EUSAGE, "--set '%s': name too long", assignment);
    memcpy(section, assignment, section_len);
    section[section_len] = '\0';
    memcpy(key, dot + 1, key_len);
    key[key_len] = '\0';
    CfgSection *s = NULL;
    if (!strcmp(section, "net")) {
        s = &cfg->sections[0];
    } else {
        char *end;
        long index = strtol(section, &end, 10);
        if (*end || index < 0 || index >= cfg->n_sections - 1)
            return error_set(e, CDL_EUSAGE,
                             "--set '%s': no layer %s (the cfg has layers 0..%d, or use net)",
                             assignment, section, cfg->n_sections - 2);
        s = &cfg->sections[index + 1];
    }
    CfgEntry *en = cfg_find(s, key);
    if (!en) {
        if (add_entry(s, key, eq + 1, s->line))
            return error_set(e, CDL_ERUNTIME, "out of memory");
        en = &s->entries[s->n_entries - 1];
    }
    char *v = strdup(eq + 1), *set = strdup(assignment);
    if (!v || !set) {
        free(v);
        free(set);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    free(en->value);
    free(en->set);
    en->value = v;
    en->set = set;
    return CDL_OK;
}

CfgWhere cfg_where(const Cfg *cfg, const CfgSection *s, const CfgEntry *en)
{
    CfgWhere w;
    if (en && en->set)
        snprintf(w.text, sizeof w.text, "--set %s", en->set);
    else
        snprintf(w.text, sizeof w.text, "%s:%d", cfg->path, en ? en->line : s->line);
    return w;
}

CfgEntry *cfg_find(CfgSection *s, const char *key)
{
    for (int i = 0; i < s->n_entries; i++)
        if (!strcmp(s->entries[i].key, key))
            return &s->entries[i];
    return NULL;
}

int cfg_rewrite_entry(CfgEntry *en, const char *key, const char *value)
{
    char *new_key = strdup(key), *new_value = strdup(value);
    if (!new_key || !new_value) {
        free(new_key);
        free(new_value);
        return -1;
    }
    free(en->key);
    free(en->value);
    en->key = new_key;
    en->value = new_value;
    return 0;
}

/* Records that the section's parser reads key, and returns its entry marked used. */
static CfgEntry *ask(CfgSection *s, const char *key)
{
    int known = 0;
    for (int i = 0; i < s->n_asked; i++)
        known |= !strcmp(s->asked[i], key);
    if (!known && s->n_asked < (int)(sizeof s->asked / sizeof s->asked[0]))
        s->asked[s->n_asked++] = key;
    CfgEntry *en = cfg_find(s, key);
    if (en)
        en->used = 1;
    return en;
}

static int bad_value(const Cfg *cfg, const CfgSection *s, const CfgEntry *en, const char *expected,
                     Error *e)
{
    return error_set(e, CDL_EUSAGE, "%s: bad value '%s' for key '%s' in [%s]: expected %s",
                     cfg_where(cfg, s, en).text, en->value, en->key, s->name, expected);
}

/* 0 and *out = text's integer; -1 when text is no integer, or one beyond +-CFG_INT_MAX. */
static int parse_int(const char *text, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *strip(end) || errno || v < -CFG_INT_MAX || v > CFG_INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_float(const char *text, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *strip(end) || errno || !isfinite(v))
        return -1;
    *out = (float)v;
    return 0;
}

int cfg_get_int(const Cfg *cfg, CfgSection *s, const char *key, int def, int *out, Error *e)
{
    CfgEntry *en = ask(s, key);
    *out = def;
    if (en && parse_int(en->value, out))
        return bad_value(cfg, s, en, "an integer in " CFG_INT_RANGE, e);
    return CDL_OK;
}

int cfg_get_float(const Cfg *cfg, CfgSection *s, const char *key, float def, float *out, Error *e)
{
    CfgEntry *en = ask(s, key);
    *out = def;
    if (en && parse_float(en->value, out))
        return bad_value(cfg, s, en, "a number", e);
    return CDL_OK;
}

int cfg_bad_value(const Cfg *cfg, CfgSection *s, const char *key, Error *e, const char *why, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, why);
    vsnprintf(text, sizeof text, why, ap);
    va_end(ap);
    const CfgEntry *en = cfg_find(s, key);
    return error_set(e, CDL_EUSAGE, "%s: bad value '%s' for key '%s' in [%s]: %s",
                     cfg_where(cfg, s, en).text, en ? en->value : "", key, s->name, text);
}

int cfg_require_min(const Cfg *cfg, CfgSection *s, const char *key, double value, double min,
                    Error *e)
{
    if (value >= min)
        return CDL_OK;
    if (!cfg_find(s, key))
        return error_set(e, CDL_EUSAGE, "%s:%d: [%s] needs key '%s' (a value >= %g)", cfg->path,
                         s->line, s->name, key, min);
    return cfg_bad_value(cfg, s, key, e, "must be >= %g", min);
}

int cfg_require_max(const Cfg *cfg, CfgSection *s, const char *key, double value, double max,
                    int inclusive, Error *e)
{
    if (value < max || (inclusive && value == max))
        return CDL_OK;
    return cfg_bad_value(cfg, s, key, e, "must be %s %g", inclusive ? "<=" : "<", max);
}

int cfg_get_int_min(const Cfg *cfg, CfgSection *s, const char *key, int def, int min, int *out,
                    Error *e)
{
    int st = cfg_get_int(cfg, s, key, def, out, e);
    return st ? st : cfg_require_min(cfg, s, key, *out, min, e);
}

int cfg_get_named(const Cfg *cfg, CfgSection *s, const char *key, const char *const *names, int n,
                  int *out, Error *e)
{
    const char *name = cfg_get_str(s, key, names[0]);
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        if (!strcmp(name, names[i])) {
            *out = i;
            return CDL_OK;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    }
    return cfg_bad_value(cfg, s, key, e, "expected one of %s", list);
}

int cfg_get_flag(const Cfg *cfg, CfgSection *s, const char *key, int def, int *out, Error *e)
{
    int st = cfg_get_int(cfg, s, key, def, out, e);
    if (!st && *out != 0 && *out != 1)
        return cfg_bad_value(cfg, s, key, e, "expected 0 or 1");
    return st;
}

int cfg_key_line(CfgSection *s, const char *key)
{
    const CfgEntry *en = cfg_find(s, key);
    return en ? en->line : s->line;
}

const char *cfg_get_str(CfgSection *s, const char *key, const char *def)
{
    CfgEntry *en = ask(s, key);
    return en ? en->value : def;
}

/* Splits a comma-separated list, parsing each item with parse (int or float). */
static int get_list(const Cfg *cfg, CfgSection *s, const char *key, void *out, size_t item_bytes,
                    int (*parse)(const char *, void *), int max, int *n, const char *expected,
                    Error *e)
{
    CfgEntry *en = ask(s, key);
    *n = 0;
    if (!en)
        return CDL_OK;
    char item[64];
    const char *p = en->value;
    while (1) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len >= sizeof item || *n >= max)
            return bad_value(cfg, s, en, expected, e);
        memcpy(item, p, len);
        item[len] = '\0';
        if (parse(strip(item), (char *)out + (size_t)*n * item_bytes))
            return bad_value(cfg, s, en, expected, e);
        (*n)++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return CDL_OK;
}

static int parse_int_item(const char *text, void *out)
{
    return parse_int(text, out);
}

static int parse_float_item(const char *text, void *out)
{
    return parse_float(text, out);
}

int cfg_get_int_list(const Cfg *cfg, CfgSection *s, const char *key, int *out, int max, int *n,
                     Error *e)
{
    return get_list(cfg, s, key, out, sizeof *out, parse_int_item, max, n,
                    "a comma-separated list of integers in " CFG_INT_RANGE, e);
}

int cfg_get_float_list(const Cfg *cfg, CfgSection *s, const char *key, float *out, int max, int *n,
                       Error *e)
{
    return get_list(cfg, s, key, out, sizeof *out, parse_float_item, max, n,
                    "a comma-separated list of numbers", e);
}

int cfg_get_int_pair(const Cfg *cfg, CfgSection *s, const char *key, int def, int out[2], Error *e)
{
    int n;
    const int st = get_list(cfg, s, key, out, sizeof *out, parse_int_item, 2, &n,
                            "an integer in " CFG_INT_RANGE ", or two as height,width", e);
    if (st)
        return st;
    if (n == 0)
        out[0] = def;
    if (n < 2)
        out[1] = out[0];
    return CDL_OK;
}

void cfg_warn(Cfg *cfg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    append_line(&cfg->warnings, fmt, ap);
    va_end(ap);
}

int cfg_check_unused(Cfg *cfg, const CfgSection *s, Error *e)
{
    for (int i = 0; i < s->n_entries; i++) {
        const CfgEntry *en = &s->entries[i];
        if (en->used)
            continue;
        char valid[1024] = "";
        size_t len = 0;
        for (int k = 0; k < s->n_asked && len + 2 < sizeof valid; k++)
            len += (size_t)snprintf(valid + len, sizeof valid - len, "%s%s", k ? ", " : "",
                                    s->asked[k]);
        const CfgWhere where = cfg_where(cfg, s, en);
        if (!cfg->lenient)
            return error_set(e, CDL_EUSAGE, "%s: unknown key '%s' in [%s] (valid keys: %s)",
                             where.text, en->key, s->name, valid);
        add_problem(cfg, "%s: unknown key '%s' in [%s] (valid keys: %s)", where.text, en->key,
                    s->name, valid);
    }
    return CDL_OK;
}
