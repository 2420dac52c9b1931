/* cdl predict MODEL --source TEXT | --sources FILE: greedy decoding (or sampling, or --beam K's
 * beam search) with a sequence-to-sequence model, one target per source, the sources of a file
 * in forward passes of --batch (cmd_predict.c hands the parsed options here). */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cdl.h"
#include "cli/cli.h"
#include "util/timer.h"
#include "util/utf8.h"

/* The sources waiting for one forward pass of decoding (beam 1), or for beam search one by one
 * (beam > 1), and how they are decoded. */
typedef struct Chunk {
    char **sources; /* [cap], malloc'd copies */
    int n, cap;
    cdl_decode_options how;
} Chunk;

/* The JSON of source's target t, decoded in seconds. */
static cJSON *target_json(const char *source, const cdl_target *t, double seconds)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "source", source);
    cJSON_AddStringToObject(r, "target", t->text);
    cJSON_AddNumberToObject(r, "tokens", t->tokens);
    cJSON *ids = cJSON_AddArrayToObject(r, "ids");
    for (int i = 0; i < t->tokens; i++)
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(t->ids[i]));
    cJSON *source_ids = cJSON_AddArrayToObject(r, "source_ids");
    for (int i = 0; i < t->source_tokens; i++)
        cJSON_AddItemToArray(source_ids, cJSON_CreateNumber(t->source_ids[i]));
    cJSON_AddNumberToObject(r, "log_prob", t->log_prob);
    cJSON_AddNumberToObject(r, "score", t->score);
    cJSON_AddNumberToObject(r, "seconds", seconds);
    return r;
}

/* Decodes the chunk's sources in one batch: each target on a line of stdout, or an object in
 * results (--json); empties the chunk. A failure is printed and returned. */
static int decode_chunk(cdl_model *m, Chunk *c, cJSON *results)
{
    char err[1024];
    cdl_target *targets = calloc((size_t)c->n + 1, sizeof *targets);
    const double start = time_now_s();
    int st = targets ? cdl_model_decode_batch(m, (const char *const *)c->sources, c->n, &c->how,
                                              targets, err, sizeof err)
                     : (snprintf(err, sizeof err, "out of memory"), CDL_ERUNTIME);
    const double seconds = (time_now_s() - start) / (c->n ? c->n : 1);
    if (st)
        cli_print_message(err);
    for (int k = 0; k < c->n; k++) {
        if (!st && !results)
            printf("%s\n", targets[k].text);
        else if (!st)
            cJSON_AddItemToArray(results, target_json(c->sources[k], &targets[k], seconds));
        free(c->sources[k]);
    }
    fflush(stdout);
    if (targets)
        cdl_targets_free(targets, c->n);
    free(targets);
    c->n = 0;
    return st;
}

/* Adds source (line line_no of where, 0 for --source) to the chunk, decoding it when full; a
 * source the model cannot decode is reported as WHERE:LINE: ... and left out. */
static int add_source(cdl_model *m, Chunk *c, const char *source, const char *where, long line_no,
                      cJSON *results)
{
    char err[1024];
    int st = cdl_model_check_source(m, source, err, sizeof err);
    if (st) {
        char message[1200];
        if (line_no)
            snprintf(message, sizeof message, "%s:%ld: %s", where, line_no, err);
        cli_print_message(line_no ? message : err);
        return st;
    }
    if (!(c->sources[c->n] = strdup(source))) {
        cli_print_message("out of memory");
        return CDL_ERUNTIME;
    }
    c->n++;
    return c->n == c->cap ? decode_chunk(m, c, results) : CDL_OK;
}

/* Every line of path (without its line break) through add_source, in passes of the chunk's
 * size; a line refused is reported and the others go on. Returns the last failure's code. */
static int decode_file(cdl_model *m, Chunk *c, const char *path, cJSON *results)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        char message[1100];
        snprintf(message, sizeof message, "%s: cannot open the sources", path);
        cli_print_message(message);
        return CDL_ERUNTIME;
    }
    char *line = NULL;
    size_t cap = 0;
    int status = CDL_OK;
    ssize_t n;
    for (long line_no = 1; (n = getline(&line, &cap, f)) >= 0; line_no++) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        const int st = add_source(m, c, line, path, line_no, results);
        status = st ? st : status;
    }
    free(line);
    fclose(f);
    return status;
}

int predict_decode(const Args *a, Error *e)
{
    long threads, batch, beam, top_k, seed;
    double length_penalty, temperature, top_p;
    const char *precision, *source = args_get(a, "--source"), *file = args_get(a, "--sources");
    int gpu;
    int st = args_get_int(a, "--threads", 0, 0, 1024, &threads, e);
    st = st ? st : args_get_int(a, "--batch", 16, 1, 4096, &batch, e);
    st = st ? st : args_get_int(a, "--beam", 1, 1, 256, &beam, e);
    st = st ? st : args_get_float(a, "--length-penalty", 1.0, -10.0, 10.0, &length_penalty, e);
    st = st ? st : args_get_float(a, "--temperature", 0.0, 0.0, 1000.0, &temperature, e);
    st = st ? st : args_get_int(a, "--top-k", 0, 0, INT_MAX, &top_k, e);
    st = st ? st : args_get_float(a, "--top-p", 1.0, 1e-6, 1.0, &top_p, e);
    st = st ? st : args_get_int(a, "--seed", 1, 0, LONG_MAX, &seed, e);
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
    Chunk c = {calloc((size_t)batch, sizeof *c.sources),
               0,
               (int)batch,
               {(int)beam, (float)length_penalty, (float)temperature, (int)top_k, (float)top_p,
                (uint64_t)seed, args_get(a, "--no-cache") != NULL}};
    if (!c.sources) {
        cli_print_message("out of memory");
        status = CDL_ERUNTIME;
    } else {
        status = source ? add_source(m, &c, source, NULL, 0, results)
                        : decode_file(m, &c, file, results);
        const int last = c.n ? decode_chunk(m, &c, results) : CDL_OK;
        status = last ? last : status;
    }
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
    free(c.sources);
    cdl_model_free(m);
    return status;
}
