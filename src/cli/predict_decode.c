/* cdl predict MODEL --source TEXT | --sources FILE: greedy decoding with a sequence-to-sequence
 * model, one target per source (cmd_predict.c hands the parsed options here). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cdl.h"
#include "cli/cli.h"
#include "util/timer.h"
#include "util/utf8.h"

/* Decodes one source: its target on a line of stdout, or an object in results (--json). where
 * ("FILE:LINE"; NULL for --source) prefixes a refusal, which is printed and returned. */
static int decode_one(cdl_model *m, const char *source, const char *where, cJSON *results)
{
    char err[1024], *target;
    int tokens;
    const double start = time_now_s();
    const int st = cdl_model_decode(m, source, &target, &tokens, err, sizeof err);
    const double seconds = time_now_s() - start;
    if (st) {
        char message[1200];
        snprintf(message, sizeof message, "%s%s%s", where ? where : "", where ? ": " : "", err);
        cli_print_message(message);
        return st;
    }
    if (!results) {
        printf("%s\n", target);
        fflush(stdout);
    } else {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "source", source);
        cJSON_AddStringToObject(r, "target", target);
        cJSON_AddNumberToObject(r, "tokens", tokens);
        cJSON_AddNumberToObject(r, "seconds", seconds);
        cJSON_AddItemToArray(results, r);
    }
    free(target);
    return CDL_OK;
}

/* Every line of path (without its line break) through decode_one; a line refused is reported
 * and the others go on. Returns the last failure's code. */
static int decode_file(cdl_model *m, const char *path, cJSON *results)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        char message[1100];
        snprintf(message, sizeof message, "%s: cannot open the sources", path);
        cli_print_message(message);
        return CDL_ERUNTIME;
    }
    char *line = NULL, where[1100];
    size_t cap = 0;
    int status = CDL_OK;
    ssize_t n;
    for (long line_no = 1; (n = getline(&line, &cap, f)) >= 0; line_no++) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        snprintf(where, sizeof where, "%s:%ld", path, line_no);
        const int st = decode_one(m, line, where, results);
        status = st ? st : status;
    }
    free(line);
    fclose(f);
    return status;
}

int predict_decode(const Args *a, Error *e)
{
    long threads;
    const char *precision, *source = args_get(a, "--source"), *file = args_get(a, "--sources");
    int gpu;
    int st = args_get_int(a, "--threads", 0, 0, 1024, &threads, e);
    st = st ? st : cli_get_precision(a, &precision, e);
    st = st ? st : cli_get_gpu(a, &gpu, e);
    if (!st && a->n_positional > 1)
        st = error_set(e, CDL_EUSAGE, "predict --source takes one MODEL and no image files");
    if (!st && source && file)
        st = error_set(e, CDL_EUSAGE, "give --source TEXT or --sources FILE, not both");
    if (st)
        return cli_fail(e);
    cdl_set_threads((int)threads);
    const char *model = a->n_positional ? a->positional[0] : CDL_DEFAULT_MODEL;
    cdl_model *m;
    char err[1024];
    const cdl_open_options how = {.kind = CDL_OPEN_CHECKPOINT, .batch = 1};
    int status = cdl_model_open(model, &how, &m, err, sizeof err);
    if (status) {
        cli_print_message(err);
        return status;
    }
    if (cli_apply_precision(a, m, e) || cli_apply_gpu(a, m, e)) {
        cdl_model_free(m);
        return cli_fail(e);
    }
    const int json = args_get(a, "--json") != NULL;
    cJSON *results = json ? cJSON_CreateArray() : NULL;
    status = source ? decode_one(m, source, NULL, results) : decode_file(m, file, results);
    if (json) {
        cJSON *out = source ? cJSON_DetachItemFromArray(results, 0) : results;
        char *text = out ? cli_json_text(out) : NULL;
        if (text)
            printf("%s\n", text);
        free(text);
        if (out != results)
            cJSON_Delete(out);
        cJSON_Delete(results);
    }
    cdl_model_free(m);
    return status;
}
