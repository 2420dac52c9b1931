/* cdl predict: classifies image files with a model and prints the top-k classes. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "cdl.h"
#include "cli/cli.h"

static const OptSpec predict_opts[] = {
    {"--top", 1, 0, "how many classes to print per image (default 5)"},
    {"--json", 0, 0, "print one JSON array instead of text"},
    {"--threads", 1, 0, "CPU threads (default: all cores)"},
    {"--help", 0, 0, "show this help"},
};
#define N_PREDICT_OPTS (int)(sizeof predict_opts / sizeof predict_opts[0])

/* Indices of the k largest probabilities, in descending order. */
static void top_k(const float *p, int classes, int k, int *out)
{
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int c = 0; c < classes; c++) {
            int taken = 0;
            for (int j = 0; j < i; j++)
                taken |= out[j] == c;
            if (!taken && (best < 0 || p[c] > p[best]))
                best = c;
        }
        out[i] = best;
    }
}

int cmd_predict(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, predict_opts, N_PREDICT_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("predict", "[MODEL] IMAGE... [options]",
                        "Classifies PNG or JPEG files; MODEL defaults to " CDL_DEFAULT_MODEL ".",
                        predict_opts, N_PREDICT_OPTS);
        return 0;
    }
    long top, threads;
    if (args_get_int(&a, "--top", 5, 1, 100000, &top, &e) ||
        args_get_int(&a, "--threads", 0, 0, 1024, &threads, &e))
        return cli_fail(&e);
    cli_set_threads((int)threads);
    int first = a.n_positional > 0 && cli_is_checkpoint(a.positional[0]) ? 1 : 0;
    const char *model = first ? a.positional[0] : CDL_DEFAULT_MODEL;
    if (a.n_positional - first < 1)
        return error_set(&e, CDL_EUSAGE, "predict needs at least one image file; see --help"),
               cli_fail(&e);
    cdl_model *m;
    char err[1024];
    int status = cdl_model_load(model, &m, err, sizeof err);
    if (status) {
        fprintf(stderr, "cdl: %s\n", err);
        return status;
    }
    const int classes = cdl_model_classes(m);
    const int k = top < classes ? (int)top : classes;
    const int json = args_get(&a, "--json") != NULL;
    int *best = malloc((size_t)k * sizeof *best);
    float *probs = malloc((size_t)classes * sizeof *probs);
    cJSON *results = cJSON_CreateArray();
    if (!best || !probs) {
        fprintf(stderr, "cdl: out of memory\n");
        status = CDL_ERUNTIME;
    }
    for (int i = first; i < a.n_positional && best && probs; i++) {
        const char *path = a.positional[i];
        if (cdl_model_predict_file(m, path, probs, err, sizeof err)) {
            fprintf(stderr, "cdl: %s\n", err);
            status = CDL_ERUNTIME;
            continue;
        }
        top_k(probs, classes, k, best);
        cJSON *item = cJSON_CreateObject();
        cJSON_AddStringToObject(item, "file", path);
        cJSON *list = cJSON_AddArrayToObject(item, "top");
        if (!json)
            printf("%s:\n", path);
        for (int j = 0; j < k; j++) {
            char number[16];
            snprintf(number, sizeof number, "%d", best[j]);
            const char *name = cdl_model_class_name(m, best[j]);
            name = name ? name : number;
            if (!json)
                printf("  %6.2f%%  %s\n", 100.0 * probs[best[j]], name);
            cJSON *entry = cJSON_CreateObject();
            cJSON_AddStringToObject(entry, "class", name);
            cJSON_AddNumberToObject(entry, "index", best[j]);
            cJSON_AddNumberToObject(entry, "probability", probs[best[j]]);
            cJSON_AddItemToArray(list, entry);
        }
        cJSON_AddItemToArray(results, item);
    }
    if (json) {
        char *text = cJSON_PrintUnformatted(results);
        if (text)
            printf("%s\n", text);
        free(text);
    }
    cJSON_Delete(results);
    free(best);
    free(probs);
    cdl_model_free(m);
    return status;
}
