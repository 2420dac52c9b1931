/* darknet-style INI config files: sections of key=value lines, with line numbers
 * kept for error messages and "used" marks so unread keys can be reported. */
#ifndef CDL_CFG_H
#define CDL_CFG_H

#include "util/error.h"

#define CFG_MAX_LIST 64

/* Every integer a cfg gives is within +-CFG_INT_MAX (2^24): far above any real width, count or
 * step number, and low enough that the sums and products the layers make of a few of them fit
 * an int. A value beyond it is refused where it is read (FILE:LINE, exit 2). */
#define CFG_INT_MAX 16777216L
#define CFG_INT_RANGE "-16777216..16777216"

typedef struct CfgEntry {
    char *key;
    char *value;
    int line;
    int used;
    char *set; /* the --set assignment that gave the value ("net.batch=8"), or NULL */
} CfgEntry;

typedef struct CfgSection {
    char *name;
    int line;
    CfgEntry *entries;
    int n_entries;
    /* Keys that a parser asked for, whether present or not: the valid-key list
     * printed when an entry was never read. */
    const char *asked[64];
    int n_asked;
} CfgSection;

typedef struct Cfg {
    char *path;
    char *text; /* the file's text as read, kept for checkpoints */
    CfgSection *sections;
    int n_sections;
    /* Lines "FILE:LINE: warning: ...\n" for the user (darknet keys cdl ignores), or NULL. */
    char *warnings;
    /* Loaded by cfg_load_lenient: 1, and lines "WHERE: ...\n" of the problems that did not stop
     * it (duplicate keys, unknown keys), or NULL. */
    int lenient;
    char *problems;
} Cfg;

/* Text may start with a UTF-8 byte order mark (skipped). A key given twice in one section with
 * two values is refused: "FILE:LINE: duplicate key 'K' in [S]: 'V2' here, 'V1' at line N (give it
 * once)"; with one value, it is a warning. */
int cfg_load(const char *path, Cfg *cfg, Error *e);
int cfg_parse_text(const char *text, const char *path, Cfg *cfg, Error *e);
/* cfg_load for `cdl check`, which lists every problem: a duplicate key keeps its first value (as
 * darknet) and cfg_check_unused does not fail; both are listed in cfg->problems instead. */
int cfg_load_lenient(const char *path, Cfg *cfg, Error *e);
void cfg_free(Cfg *cfg);

/* The config as text again, overrides included (malloc'd; NULL when out of memory). */
char *cfg_to_text(const Cfg *cfg);

/* Applies "SECTION.key=value" where SECTION is `net` or a 0-based layer index; messages about
 * the value then name the assignment (cfg_where). */
int cfg_apply_override(Cfg *cfg, const char *assignment, Error *e);

/* Where a value came from, for messages: "FILE:LINE" of its entry (of section s when en is
 * NULL), or "--set ASSIGNMENT" when an override gave it. Use as cfg_where(...).text inside the
 * call that formats the message (the text lives until the end of that expression). */
typedef struct CfgWhere {
    char text[320];
} CfgWhere;
CfgWhere cfg_where(const Cfg *cfg, const CfgSection *s, const CfgEntry *en);

/* Typed getters: return CDL_OK and the default when absent; a malformed value (an integer beyond
 * +-CFG_INT_MAX too) is a CDL_EUSAGE error "FILE:LINE: bad value 'v' for key 'k' in [s]:
 * expected ...". */
int cfg_get_int(const Cfg *cfg, CfgSection *s, const char *key, int def, int *out, Error *e);
int cfg_get_float(const Cfg *cfg, CfgSection *s, const char *key, float def, float *out, Error *e);
/* String value or def (not copied; valid while cfg lives). */
const char *cfg_get_str(CfgSection *s, const char *key, const char *def);
/* Comma-separated ints; *n = count (0 when absent). */
int cfg_get_int_list(const Cfg *cfg, CfgSection *s, const char *key, int *out, int max, int *n,
                     Error *e);
int cfg_get_float_list(const Cfg *cfg, CfgSection *s, const char *key, float *out, int max, int *n,
                       Error *e);
/* A value per image axis: "v" gives out[0] = out[1] = v, "h,w" gives out[0] = h (height),
 * out[1] = w (width); absent, both def. */
int cfg_get_int_pair(const Cfg *cfg, CfgSection *s, const char *key, int def, int out[2], Error *e);
/* Validation, for the checks a getter does not make. Each returns CDL_OK or CDL_EUSAGE with
 * "FILE:LINE: bad value 'V' for key 'K' in [S]: WHY" at key's line, V its text as written.
 * cfg_bad_value always fails (an absent key: the section's line and V ''). */
int cfg_bad_value(const Cfg *cfg, CfgSection *s, const char *key, Error *e, const char *why, ...)
    __attribute__((format(printf, 5, 6)));
/* Fails unless value >= min: "must be >= MIN", or "FILE:LINE: [S] needs key 'K' (a value >=
 * MIN)" when key is absent (its default is below min). */
int cfg_require_min(const Cfg *cfg, CfgSection *s, const char *key, double value, double min,
                    Error *e);
/* Fails unless value < max (<= max when inclusive): "must be < MAX" ("<= MAX"); only a value
 * from the cfg can exceed max, so key is present. */
int cfg_require_max(const Cfg *cfg, CfgSection *s, const char *key, double value, double max,
                    int inclusive, Error *e);
/* cfg_get_int, then cfg_require_min. */
int cfg_get_int_min(const Cfg *cfg, CfgSection *s, const char *key, int def, int min, int *out,
                    Error *e);
/* *out = the index in names[0..n) of key's value (default names[0]); a value not among them is
 * refused with the list ("expected one of a, b, c"). */
int cfg_get_named(const Cfg *cfg, CfgSection *s, const char *key, const char *const *names, int n,
                  int *out, Error *e);
/* cfg_get_int of a key that must be 0 or 1 ("expected 0 or 1"). */
int cfg_get_flag(const Cfg *cfg, CfgSection *s, const char *key, int def, int *out, Error *e);
/* The line of key's entry, or the section's line when key is absent. */
int cfg_key_line(CfgSection *s, const char *key);

/* Appends one warning line (a newline is added) to cfg->warnings; dropped when out of memory. */
void cfg_warn(Cfg *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Fails on the first entry no getter read, listing the keys this section takes (a lenient cfg:
 * lists every such entry in cfg->problems and returns CDL_OK). */
int cfg_check_unused(Cfg *cfg, const CfgSection *s, Error *e);
/* The entry for key, or NULL (marks nothing). */
CfgEntry *cfg_find(CfgSection *s, const char *key);
/* Gives en a new key and value (copied), keeping its line and --set origin: what a key that names
 * a side file is replaced by once the file is read, so that the cfg's text holds the file's
 * contents. -1 (en unchanged) when out of memory. */
int cfg_rewrite_entry(CfgEntry *en, const char *key, const char *value);

#endif
