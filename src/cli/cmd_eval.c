/* cdl eval: loss, top-1/top-5 accuracy, per-class accuracy and the confusion matrix of a
 * model on the validation set of a .data file; for a text model, the validation loss, bits per
 * token and next-token accuracy. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "data/data_config.h"
#include "data/loader.h"
#include "data/text_data.h"
#include "model/model_io.h"
#include "train/evaluate.h"

static const OptSpec eval_opts[] = {
    {"--data", 1, 0, "dataset .data file (default: the one the model trained on)"},
    {"--json", 0, 0, "print one JSON object instead of tables"},
    {"--threads", 1, 0, "CPU threads (default: all cores)"},
    {"--workers", 1, 0, "data loader threads (default 2; 0: load in the evaluating thread)"},
    {"--skip-bad", 0, 0, "replace unreadable images by the next readable one (counted)"},
    {"--help", 0, 0, "show this help"},
};
#define N_EVAL_OPTS (int)(sizeof eval_opts / sizeof eval_opts[0])

static const char *class_name(const ModelMeta *m, int c, char *buf, size_t size)
{
    if (c < m->n_names)
        return m->names[c];
    snprintf(buf, size, "%d", c);
    return buf;
}

/* A text model's figures: text, or one JSON object. */
static void print_text_result(const EvalResult *r, const char *model, const char *data, int json)
{
    if (!json) {
        printf("%s on %s: %d tokens\nloss %.4f  %.4f bits/token  next-token accuracy %.2f%%  "
               "top-5 %.2f%%\n",
               model, data, r->samples, r->loss, r->loss / M_LN2, 100 * r->top1, 100 * r->top5);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "data", data);
    cJSON_AddNumberToObject(o, "tokens", r->samples);
    cJSON_AddNumberToObject(o, "loss", r->loss);
    cJSON_AddNumberToObject(o, "bits_per_token", r->loss / M_LN2);
    cJSON_AddNumberToObject(o, "accuracy", r->top1);
    cJSON_AddNumberToObject(o, "top5", r->top5);
    char *text = cJSON_PrintUnformatted(o);
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
}

/* cdl eval of a text model: the validation text of a type=text .data file. */
static int eval_text(Net *net, const ModelMeta *meta, const char *model, const char *data, int json,
                     Error *e)
{
    DataConfig dc = {0};
    TextData td = {0};
    EvalResult r = {0};
    int st = data_config_load(data, &dc, e);
    if (!st && dc.train_kind != DATA_TEXT)
        st = error_set(e, CDL_EUSAGE, "%s: a text model evaluates on a type=text dataset", data);
    st = st ? st : text_data_load(&dc, &meta->vocab, &td, e);
    if (!st && !td.valid.n)
        st = error_set(e, CDL_EUSAGE, "%s: no validation text (set valid= or valid_split=)", data);
    st = st ? st : net_resize(net, net->hyper.batch / net->hyper.subdivisions, 0, e);
    st = st ? st : evaluate_text(net, &td.valid, &r, e);
    if (!st)
        print_text_result(&r, model, data, json);
    text_data_free(&td);
    data_config_free(&dc);
    return st;
}

static void print_json(const EvalResult *r, const ModelMeta *m, const char *model, const char *data)
{
    cJSON *o = cJSON_CreateObject();
    char buf[32];
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "data", data);
    cJSON_AddNumberToObject(o, "samples", r->samples);
    cJSON_AddNumberToObject(o, "skipped", r->skipped);
    cJSON_AddNumberToObject(o, "loss", r->loss);
    cJSON_AddNumberToObject(o, "accuracy", r->top1);
    cJSON_AddNumberToObject(o, "top5", r->top5);
    cJSON *per_class = cJSON_AddObjectToObject(o, "per_class_accuracy");
    cJSON *confusion = cJSON_AddArrayToObject(o, "confusion");
    for (int c = 0; c < r->classes; c++) {
        cJSON_AddNumberToObject(per_class, class_name(m, c, buf, sizeof buf),
                                eval_class_accuracy(r, c));
        cJSON_AddItemToArray(confusion,
                             cJSON_CreateIntArray(r->confusion + c * r->classes, r->classes));
    }
    char *text = cJSON_PrintUnformatted(o);
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
}

static void print_tables(const EvalResult *r, const ModelMeta *m, const char *model,
                         const char *data)
{
    char buf[32];
    printf("%s on %s: %d samples\n", model, data, r->samples);
    if (r->skipped)
        printf("skipped %d unreadable samples (replaced by the next readable ones)\n", r->skipped);
    printf("loss %.4f  top-1 %.2f%%", r->loss, 100 * r->top1);
    if (r->classes > 5)
        printf("  top-5 %.2f%%", 100 * r->top5);
    printf("\n\nper-class accuracy:\n");
    for (int c = 0; c < r->classes; c++)
        printf("  %-20s %6.2f%%\n", class_name(m, c, buf, sizeof buf),
               100 * eval_class_accuracy(r, c));
    printf("\nconfusion matrix (rows: true class, columns: predicted):\n      ");
    for (int c = 0; c < r->classes; c++)
        printf(" %5d", c);
    printf("\n");
    for (int t = 0; t < r->classes; t++) {
        printf("  %3d ", t);
        for (int c = 0; c < r->classes; c++)
            printf(" %5d", r->confusion[t * r->classes + c]);
        printf("  %s\n", class_name(m, t, buf, sizeof buf));
    }
}

int cmd_eval(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, eval_opts, N_EVAL_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("eval", "[MODEL] [options]",
                        "Evaluates a checkpoint on the validation set of a .data file.", eval_opts,
                        N_EVAL_OPTS);
        return 0;
    }
    if (a.n_positional > 1)
        return error_set(&e, CDL_EUSAGE, "eval takes one MODEL; see --help"), cli_fail(&e);
    long threads;
    if (args_get_int(&a, "--threads", 0, 0, 1024, &threads, &e))
        return cli_fail(&e);
    cli_set_threads((int)threads);
    const char *model = a.n_positional ? a.positional[0] : CDL_DEFAULT_MODEL;
    Net net;
    ModelMeta meta;
    int st = model_load(model, &net, 0, NULL, &meta, &e);
    if (st)
        return cli_fail(&e);
    const char *data = args_get(&a, "--data");
    data = data ? data : meta.data_path;
    DataConfig dc = {0};
    SampleSource train = {0}, valid = {0};
    EvalResult r = {0};
    EvalOptions opt = {0, args_get(&a, "--skip-bad") != NULL};
    long workers = 0;
    if (!data[0]) {
        st = error_set(&e, CDL_EUSAGE, "%s: the model names no dataset; pass --data", model);
        goto done;
    }
    if (net.seq > 0) {
        st = eval_text(&net, &meta, model, data, args_get(&a, "--json") != NULL, &e);
        goto done;
    }
    st = data_config_load(data, &dc, &e);
    st = st ? st : data_config_open_sources(&dc, &train, &valid, &e);
    if (!st && valid.n == 0)
        st = error_set(&e, CDL_EUSAGE, "%s: no validation set (set valid= or valid_split=)", data);
    st = st ? st : net_resize(&net, net.hyper.batch / net.hyper.subdivisions, 0, &e);
    st = st ? st : args_get_int(&a, "--workers", LOADER_DEFAULT_WORKERS, 0, 256, &workers, &e);
    opt.workers = (int)workers;
    st = st ? st : evaluate(&net, &valid, &opt, &r, &e);
    if (!st) {
        if (args_get(&a, "--json"))
            print_json(&r, &meta, model, data);
        else
            print_tables(&r, &meta, model, data);
    }
done:
    eval_result_free(&r);
    source_free(&train);
    source_free(&valid);
    data_config_free(&dc);
    model_meta_free(&meta);
    net_free(&net);
    return st ? cli_fail(&e) : 0;
}
