/* cdl check: everything `cdl train` would refuse about a cfg and its .data file, all listed
 * before anything trains, and the memory a training step needs (cdl_check in cdl.h). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec check_opts[] = {
    {"--data", 1, 0, "dataset .data file (default: the cfg's name with .data, as train)"},
    {"--set", 1, 1, "override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--weights", 1, 0,
     "the initial weights train --weights would load: loaded into the net and a loaded head's "
     "classes checked against the data"},
    {"--new-head", 0, 0, "with --weights: as train --new-head (the head is not loaded)"},
    CLI_PRECISION_OPT,
    CLI_GPU_OPT,
    {"--json", 0, 0, "print one JSON object instead of text"},
    {"--help", 0, 0, "show this help"},
};
#define N_CHECK_OPTS (int)(sizeof check_opts / sizeof check_opts[0])

/* The problems and warnings to stderr, the summary to stdout. */
static void print_text(const cdl_check_result *r, const char *cfg)
{
    cli_print_warnings(r->warnings);
    cli_print_warnings(r->errors);
    if (r->built) {
        printf("%s: input %dx%dx%d (CxHxW), %d outputs%s, %zu parameters (+%zu running "
               "statistics)\n",
               cfg, r->c, r->h, r->w, r->outputs, r->seq ? " per token" : "", r->params, r->state);
        if (r->seq)
            printf("sequence net: %d tokens per sample, a vocabulary of %d\n", r->seq, r->vocab);
    }
    if (r->weights_note)
        printf("--weights %s\n", r->weights_note);
    if (r->data_read) {
        printf("%s: %s, %d %s", r->data_path, r->data_kind, r->data_classes,
               r->seq ? "distinct tokens" : "classes");
        if (r->data_c)
            printf(", samples %dx%dx%d", r->data_c, r->data_h, r->data_w);
        printf("\n");
    }
    char t[5][16];
    if (r->total_bytes) {
        char passes[64] = "";
        if (r->train_pass < r->batch / r->subdivisions)
            snprintf(passes, sizeof passes, ", run as passes of %d", r->train_pass);
        printf("a training step (batch %d in %d mini-batch%s of %d%s) holds %s: parameters %s, "
               "gradients %s, %s state %s, activations %s\n",
               r->batch, r->subdivisions, r->subdivisions == 1 ? "" : "es",
               r->batch / r->subdivisions, passes, cdl_format_bytes(r->total_bytes, t[0]),
               cdl_format_bytes(r->param_bytes, t[1]), cdl_format_bytes(r->grad_bytes, t[2]),
               r->optimizer, cdl_format_bytes(r->optimizer_bytes, t[3]),
               cdl_format_bytes(r->activation_bytes, t[4]));
        if (r->memory_limit)
            printf("this process may take %s more: %s\n",
                   cdl_format_bytes(r->memory_left_bytes, t[0]), r->memory_limit);
    }
    if (r->n_errors)
        printf("%d problem%s: train would refuse this\n", r->n_errors, r->n_errors == 1 ? "" : "s");
    else
        printf("ok: train would start\n");
}

/* The lines of text as a JSON array of strings. */
static cJSON *lines_array(const char *text)
{
    cJSON *a = cJSON_CreateArray();
    for (const char *at = text; at && *at;) {
        const char *end = strchr(at, '\n');
        const size_t len = end ? (size_t)(end - at) : strlen(at);
        char *line = strndup(at, len);
        if (line)
            cJSON_AddItemToArray(a, cJSON_CreateString(line));
        free(line);
        at += len + (end != NULL);
    }
    return a;
}

static void print_json(const cdl_check_result *r, const char *cfg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cfg", cfg);
    cJSON_AddStringToObject(o, "data", r->data_path);
    cJSON_AddBoolToObject(o, "ok", r->n_errors == 0);
    cJSON_AddItemToObject(o, "errors", lines_array(r->errors));
    cJSON_AddItemToObject(o, "warnings", lines_array(r->warnings));
    if (r->built) {
        int in[3] = {r->c, r->h, r->w};
        cJSON_AddItemToObject(o, "input", cJSON_CreateIntArray(in, 3));
        cJSON_AddNumberToObject(o, "outputs", r->outputs);
        if (r->seq) {
            cJSON_AddNumberToObject(o, "seq", r->seq);
            cJSON_AddNumberToObject(o, "vocab", r->vocab);
        }
        cJSON_AddNumberToObject(o, "batch", r->batch);
        cJSON_AddNumberToObject(o, "subdivisions", r->subdivisions);
        cJSON_AddNumberToObject(o, "params", (double)r->params);
        cJSON_AddNumberToObject(o, "state", (double)r->state);
        cJSON_AddStringToObject(o, "optimizer", r->optimizer);
    }
    if (r->weights_note)
        cJSON_AddStringToObject(o, "weights", r->weights_note);
    if (r->data_read) {
        cJSON_AddStringToObject(o, "data_kind", r->data_kind);
        cJSON_AddNumberToObject(o, "data_classes", r->data_classes);
        if (r->data_c) {
            int shape[3] = {r->data_c, r->data_h, r->data_w};
            cJSON_AddItemToObject(o, "data_shape", cJSON_CreateIntArray(shape, 3));
        }
    }
    if (r->total_bytes) {
        cJSON *m = cJSON_AddObjectToObject(o, "memory_bytes");
        cJSON_AddNumberToObject(m, "params", (double)r->param_bytes);
        cJSON_AddNumberToObject(m, "grads", (double)r->grad_bytes);
        cJSON_AddNumberToObject(m, "optimizer", (double)r->optimizer_bytes);
        cJSON_AddNumberToObject(m, "activations", (double)r->activation_bytes);
        cJSON_AddNumberToObject(m, "total", (double)r->total_bytes);
        cJSON_AddNumberToObject(m, "scratch", (double)r->scratch_bytes);
        if (r->memory_limit) {
            cJSON_AddNumberToObject(m, "left", (double)r->memory_left_bytes);
            cJSON_AddStringToObject(o, "memory_limit", r->memory_limit);
        }
        cJSON_AddNumberToObject(o, "train_pass", r->train_pass);
    }
    char *text = cli_json_text(o);
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
}

int cmd_check(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, check_opts, N_CHECK_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help(
            "check",
            "CFG [--data D] [--set K=V]... [--weights W [--new-head]] [--precision P] [--gpu N] "
            "[--json]",
            "Checks a cfg and its .data file as train would, without training or "
            "reading the samples:\nlists every problem (duplicate and unknown keys "
            "with FILE:LINE, bad values, the data against\nthe net, the initial weights "
            "against both) and the memory a training step needs. Exit 0 when train would start, 2 "
            "otherwise.",
            check_opts, N_CHECK_OPTS);
        return 0;
    }
    if (a.n_positional != 1)
        return error_set(&e, CDL_EUSAGE, "check takes one CFG; see --help"), cli_fail(&e);
    if (args_get(&a, "--new-head") && !args_get(&a, "--weights"))
        return error_set(&e, CDL_EUSAGE, "--new-head goes with --weights"), cli_fail(&e);
    char precision_set[CLI_PRECISION_SET_SIZE];
    const char *overrides[ARGS_MAX + 1];
    int n_overrides, device;
    if (cli_precision_overrides(&a, overrides, precision_set, &n_overrides, &e) ||
        cli_get_gpu(&a, &device, &e))
        return cli_fail(&e);
    const cdl_check_options o = {.cfg_path = a.positional[0],
                                 .data_path = args_get(&a, "--data"),
                                 .overrides = overrides,
                                 .n_overrides = n_overrides,
                                 .weights_path = args_get(&a, "--weights"),
                                 .new_head = args_get(&a, "--new-head") != NULL,
                                 .on_gpu = device >= 0,
                                 .gpu_device = device < 0 ? 0 : device};
    cdl_check_result r;
    const int st = cdl_check(&o, &r, e.msg, sizeof e.msg);
    if (st == CDL_ERUNTIME) {
        cdl_check_result_free(&r);
        e.code = st;
        return cli_fail(&e);
    }
    if (args_get(&a, "--json"))
        print_json(&r, a.positional[0]);
    else
        print_text(&r, a.positional[0]);
    cdl_check_result_free(&r);
    return st;
}
