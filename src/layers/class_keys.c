/* map= and counters_per_class= of the detection layers (class_keys.h). */
#include "layers/class_keys.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

static int check_table_size(const Cfg *cfg, CfgSection *s, const char *key, int classes, Error *e)
{
    if (classes <= CLASS_TABLE_MAX)
        return CDL_OK;
    return cfg_bad_value(cfg, s, key, e, "cdl supports it for at most %d classes (classes=%d)",
                         CLASS_TABLE_MAX, classes);
}

/* Parses the class on line `line` (its text from p to the line's end) into *out. */
static int map_line(const Cfg *cfg, CfgSection *s, const char *path, int line, const char *p,
                    int classes, int *out, Error *e)
{
    char *end;
    errno = 0;
    const long v = strtol(p, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r')
        end++;
    const int number = end != p && (*end == '\n' || *end == '\0') && errno == 0;
    if (number && v >= 0 && v < classes) {
        *out = (int)v;
        return CDL_OK;
    }
    const int len = (int)strcspn(p, "\r\n");
    return error_set(e, CDL_EUSAGE,
                     "%s: map file %s:%d: '%.*s' is not a class in 0..%d (classes=%d)",
                     cfg_where(cfg, s, cfg_find(s, "map")).text, path, line, len > 40 ? 40 : len, p,
                     classes - 1, classes);
}

/* Reads map=FILE (path) into map[0..classes). */
static int map_file_read(const Cfg *cfg, CfgSection *s, const char *path, int classes, int *map,
                         Error *e)
{
    char *text;
    size_t bytes;
    int st = file_read_path(path, FILE_MAX_CFG_BYTES, "class map", &text, &bytes, e);
    if (st)
        return error_prefix(e, CDL_EUSAGE,
                            "%s: key 'map' in [%s]: ", cfg_where(cfg, s, cfg_find(s, "map")).text,
                            s->name);
    const char *p = text + file_bom_bytes(text);
    int k = 0;
    for (; k < classes && *p; k++) {
        st = map_line(cfg, s, path, k + 1, p, classes, &map[k], e);
        if (st)
            break;
        p += strcspn(p, "\n");
        p += *p == '\n';
    }
    free(text);
    if (!st && k < classes)
        st = error_set(e, CDL_EUSAGE,
                       "%s: map file %s has %d line%s; classes=%d needs %d (line k + 1: the class "
                       "that truth class k is learned as)",
                       cfg_where(cfg, s, cfg_find(s, "map")).text, path, k, k == 1 ? "" : "s",
                       classes, classes);
    return st;
}

/* class_map=C0,..: the table itself, one class in [0, classes) for each truth class. */
static int map_table_parse(const Cfg *cfg, CfgSection *s, int classes, int *map, Error *e)
{
    int n;
    int st = cfg_get_int_list(cfg, s, CLASS_MAP_KEY, map, CLASS_TABLE_MAX, &n, e);
    if (st)
        return st;
    if (n != classes)
        return cfg_bad_value(cfg, s, CLASS_MAP_KEY, e,
                             "expected %d classes (one for each of classes=%d), got %d", classes,
                             classes, n);
    for (int k = 0; k < n; k++)
        if (map[k] < 0 || map[k] >= classes)
            return cfg_bad_value(cfg, s, CLASS_MAP_KEY, e,
                                 "class %d (truth class %d's) is not in 0..%d", map[k], k,
                                 classes - 1);
    return CDL_OK;
}

/* Replaces s's map=FILE by class_map= of map[0..classes), the table the file held. */
static int keep_map_table(CfgSection *s, const int *map, int classes, Error *e)
{
    char text[CLASS_TABLE_MAX * 12];
    int at = 0;
    for (int k = 0; k < classes; k++)
        at += snprintf(text + at, sizeof text - (size_t)at, "%s%d", k ? "," : "", map[k]);
    if (cfg_rewrite_entry(cfg_find(s, "map"), CLASS_MAP_KEY, text))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    return CDL_OK;
}

int class_map_parse(const Cfg *cfg, CfgSection *s, int classes, int *map, int *has_map, Error *e)
{
    for (int k = 0; k < classes && k < CLASS_TABLE_MAX; k++)
        map[k] = k;
    const char *path = cfg_get_str(s, "map", NULL);
    const int has_table = cfg_get_str(s, CLASS_MAP_KEY, NULL) != NULL;
    *has_map = path || has_table;
    if (!*has_map)
        return CDL_OK;
    if (path && has_table)
        return cfg_bad_value(cfg, s, CLASS_MAP_KEY, e, "give map=FILE or %s=, not both",
                             CLASS_MAP_KEY);
    int st = check_table_size(cfg, s, path ? "map" : CLASS_MAP_KEY, classes, e);
    if (st)
        return st;
    if (has_table)
        return map_table_parse(cfg, s, classes, map, e);
    st = map_file_read(cfg, s, path, classes, map, e);
    return st ? st : keep_map_table(s, map, classes, e);
}

int class_multipliers_parse(const Cfg *cfg, CfgSection *s, int classes, float max_delta,
                            float *multipliers, int *has, Error *e)
{
    for (int k = 0; k < classes && k < CLASS_TABLE_MAX; k++)
        multipliers[k] = 1;
    *has = cfg_find(s, "counters_per_class") != NULL;
    if (!*has)
        return CDL_OK;
    int counters[CLASS_TABLE_MAX], n;
    int st = check_table_size(cfg, s, "counters_per_class", classes, e);
    st = st ? st : cfg_get_int_list(cfg, s, "counters_per_class", counters, CLASS_TABLE_MAX, &n, e);
    if (st)
        return st;
    if (n != classes)
        return cfg_bad_value(cfg, s, "counters_per_class", e,
                             "expected %d counts (one for each of classes=%d), got %d", classes,
                             classes, n);
    int most = 0;
    for (int k = 0; k < n; k++) {
        if (counters[k] < 1)
            return cfg_bad_value(cfg, s, "counters_per_class", e,
                                 "count %d (class %d) must be >= 1", counters[k], k);
        most = counters[k] > most ? counters[k] : most;
    }
    for (int k = 0; k < n; k++) {
        const float m = (float)most / (float)counters[k];
        multipliers[k] = m > max_delta ? max_delta : m;
    }
    return CDL_OK;
}
