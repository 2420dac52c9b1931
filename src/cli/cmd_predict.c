/* cdl predict: classifies image files with a model and prints the top-k classes. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "data/image.h"
#include "io/model_io.h"

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
    Net net;
    ModelMeta meta;
    if (model_load(model, &net, 0, NULL, &meta, &e))
        return cli_fail(&e);
    int status = 0;
    if (net_resize(&net, 1, 0, &e)) {
        status = cli_fail(&e);
        goto done;
    }
    const int k = top < net.classes ? (int)top : net.classes;
    int *best = malloc((size_t)k * sizeof *best);
    const int json = args_get(&a, "--json") != NULL;
    cJSON *results = cJSON_CreateArray();
    for (int i = first; i < a.n_positional && best; i++) {
        const char *path = a.positional[i];
        Image img;
        if (image_load(path, &img, &e)) {
            status = cli_fail(&e);
            continue;
        }
        image_to_input(&img, net.in_shape.c, net.in_shape.h, net.in_shape.w, net.input);
        image_free(&img);
        net_forward(&net);
        const float *p = net_output(&net);
        top_k(p, net.classes, k, best);
        cJSON *item = cJSON_CreateObject();
        cJSON_AddStringToObject(item, "file", path);
        cJSON *list = cJSON_AddArrayToObject(item, "top");
        if (!json)
            printf("%s:\n", path);
        for (int j = 0; j < k; j++) {
            char number[16];
            snprintf(number, sizeof number, "%d", best[j]);
            const char *name = best[j] < meta.n_names ? meta.names[best[j]] : number;
            if (!json)
                printf("  %6.2f%%  %s\n", 100.0 * p[best[j]], name);
            cJSON *entry = cJSON_CreateObject();
            cJSON_AddStringToObject(entry, "class", name);
            cJSON_AddNumberToObject(entry, "index", best[j]);
            cJSON_AddNumberToObject(entry, "probability", p[best[j]]);
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
done:
    model_meta_free(&meta);
    net_free(&net);
    return status;
}
