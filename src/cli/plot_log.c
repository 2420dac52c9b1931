/* Reading `cdl train --log` JSON Lines files into the curves `cdl plot` draws. */
#include "cli/plot_log.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    FILE *f = fopen(path, "r");
    if (!f)
        return error_set(e, CDL_ERUNTIME, "%s: cannot open: %s", path, strerror(errno));
    char *text = NULL;
    size_t cap = 0;
    int line = 0, records = 0, st = CDL_OK;
    ssize_t len;
    while (!st && (len = getline(&text, &cap, f)) >= 0) {
        line++;
        if (!text[strspn(text, " \t\r\n")])
            continue;
        cJSON *o = cJSON_ParseWithOpts(text, NULL, 1);
        if (!cJSON_IsObject(o) && text[len - 1] != '\n') {
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
    if (!st && ferror(f))
        st = error_set(e, CDL_ERUNTIME, "%s: cannot read: %s", path, strerror(errno));
    if (!st && !records)
        st = error_set(e, CDL_ERUNTIME,
                       "%s: no step or epoch records (expected a `cdl train --log` file)", path);
    free(text);
    fclose(f);
    return st;
}
