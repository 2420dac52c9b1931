/* Reading `cdl train --log` JSON Lines files into the curves `cdl plot` draws. */
#include "cli/plot_log.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"

static int series_add(Series *s, double x, double y)
{
    if (s->n == s->cap) {
        const int cap = s->cap ? 2 * s->cap : 64;
        double *nx = realloc(s->x, (size_t)cap * sizeof *nx);
        if (nx)
            s->x = nx;
        double *ny = nx ? realloc(s->y, (size_t)cap * sizeof *ny) : NULL;
        if (!ny)
            return -1;
        s->y = ny;
        s->cap = cap;
    }
    s->x[s->n] = x;
    s->y[s->n++] = y;
    return 0;
}

void plot_run_free(Run *r)
{
    for (int k = 0; k < N_SERIES; k++) {
        free(r->series[k].x);
        free(r->series[k].y);
    }
}

/* Adds the value of key (when it is a finite number: a diverged loss is logged as null). */
static int add_point(Series *s, double step, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return 0;
    return series_add(s, step, v->valuedouble);
}

/* Takes the curve points of one record; other record types are skipped. */
static int add_record(Run *run, const cJSON *o, const char *path, int line, int *records, Error *e)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "type"));
    const int is_step = type && !strcmp(type, "step");
    if (!is_step && !(type && !strcmp(type, "epoch")))
        return CDL_OK;
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(o, "step");
    if (!cJSON_IsNumber(step))
        return error_set(e, CDL_ERUNTIME, "%s:%d: %s record without a numeric \"step\"", path, line,
                         type);
    if (is_step && !cJSON_GetObjectItemCaseSensitive(o, "loss"))
        return error_set(e, CDL_ERUNTIME, "%s:%d: step record without \"loss\"", path, line);
    (*records)++;
    const int failed =
        is_step ? add_point(&run->series[TRAIN_LOSS], step->valuedouble, o, "loss")
                : add_point(&run->series[VALID_LOSS], step->valuedouble, o, "valid_loss") ||
                      add_point(&run->series[VALID_ACCURACY], step->valuedouble, o, "accuracy");
    return failed ? error_set(e, CDL_ERUNTIME, "%s: out of memory", path) : CDL_OK;
}

int plot_log_read(const char *path, Run *run, Error *e)
{
    const char *slash = strrchr(path, '/');
    run->name = slash ? slash + 1 : path;
    char *text;
    size_t bytes;
    int st = file_read_path(path, FILE_MAX_LOG_BYTES, "log", &text, &bytes, e);
    if (st)
        return st;
    int line = 0, records = 0;
    for (char *at = text, *end = text + bytes; !st && at < end;) {
        char *newline = memchr(at, '\n', (size_t)(end - at)), *this_line = at;
        const size_t len = newline ? (size_t)(newline - at) : (size_t)(end - at);
        at[len] = '\0'; /* text[bytes] is a NUL already */
        at += len + 1;
        line++;
        if (!this_line[strspn(this_line, " \t\r")])
            continue;
        cJSON *o = cJSON_ParseWithOpts(this_line, NULL, 1);
        if (!cJSON_IsObject(o) && !newline) {
            run->cut_line = line;
            run->cut_bytes = (long)len;
            run->records_kept = records;
        } else {
            st = cJSON_IsObject(o)
                     ? add_record(run, o, path, line, &records, e)
                     : error_set(e, CDL_ERUNTIME, "%s:%d: not a JSON object (malformed line)", path,
                                 line);
        }
        cJSON_Delete(o);
    }
    if (!st && !records)
        st = error_set(e, CDL_ERUNTIME,
                       "%s: no step or epoch records (expected a `cdl train --log` file)", path);
    free(text);
    return st;
}
