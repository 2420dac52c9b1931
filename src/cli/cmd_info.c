/* cdl info: the layer table of a cfg or checkpoint: type, output shape, parameters, FLOPs, and
 * the planned activation memory of a training and of an inference pass (in --precision, on
 * --gpu's device: the GPU's plan keeps 16-bit slots under bf16 and fp16). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec info_opts[] = {
    {"--set", 1, 1, "override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    CLI_PRECISION_OPT,
    CLI_GPU_OPT,
    {"--json", 0, 0, "print one JSON object instead of a table"},
    {"--help", 0, 0, "show this help"},
};
#define N_INFO_OPTS (int)(sizeof info_opts / sizeof info_opts[0])

static void print_json(const cdl_model *m, const char *path)
{
    cdl_model_summary sum;
    cdl_model_get_summary(m, &sum);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", path);
    int in[3] = {sum.c, sum.h, sum.w};
    cJSON_AddItemToObject(o, "input", cJSON_CreateIntArray(in, 3));
    if (sum.seq > 0) {
        cJSON_AddNumberToObject(o, "seq", sum.seq);
        if (sum.source > 0)
            cJSON_AddNumberToObject(o, "source", sum.source);
        cJSON_AddNumberToObject(o, "vocab", sum.vocab);
    }
    cJSON *layers = cJSON_AddArrayToObject(o, "layers");
    for (int i = 0; i < sum.n_layers; i++) {
        cdl_layer_info l;
        cdl_model_layer_info(m, i, &l);
        cJSON *j = cJSON_CreateObject();
        int out[3] = {l.c, l.h, l.w};
        cJSON_AddNumberToObject(j, "index", i);
        cJSON_AddStringToObject(j, "type", l.type);
        cJSON_AddItemToObject(j, "output", cJSON_CreateIntArray(out, 3));
        cJSON_AddNumberToObject(j, "params", (double)l.params);
        cJSON_AddNumberToObject(j, "flops", l.flops);
        cJSON_AddStringToObject(j, "activation", l.activation);
        if (l.int8)
            cJSON_AddStringToObject(j, "weights", l.int8 == 2 ? "int8 static" : "int8 dynamic");
        if (l.engine)
            cJSON_AddStringToObject(j, "engine", l.engine);
        if (l.channels_last)
            cJSON_AddBoolToObject(j, "channels_last", 1);
        cJSON_AddItemToArray(layers, j);
    }
    if (sum.channels_last)
        cJSON_AddBoolToObject(o, "channels_last", 1);
    cJSON_AddNumberToObject(o, "params", (double)sum.params);
    cJSON_AddNumberToObject(o, "state", (double)sum.state);
    cJSON_AddNumberToObject(o, "flops", sum.flops);
    size_t bytes;
    if (!cdl_model_training_activation_bytes(m, &bytes, NULL, 0))
        cJSON_AddNumberToObject(o, "train_activation_bytes", (double)bytes);
    if (!cdl_model_inference_activation_bytes(m, &bytes, NULL, 0))
        cJSON_AddNumberToObject(o, "inference_activation_bytes", (double)bytes);
    char *text = cli_json_text(o);
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
}

static void print_table(const cdl_model *m, const char *path)
{
    cdl_model_summary sum;
    cdl_model_get_summary(m, &sum);
    printf("%s: input %dx%dx%d (CxHxW), batch %d, subdivisions %d\n", path, sum.c, sum.h, sum.w,
           sum.batch, sum.subdivisions);
    if (sum.source > 0)
        printf("sequence to sequence: %d source tokens and %d target rows per sample, a "
               "vocabulary of %d\n",
               sum.source, sum.seq, sum.vocab);
    else if (sum.seq > 0)
        printf("sequence net: %d tokens per sample, a vocabulary of %d\n", sum.seq, sum.vocab);
    printf("%4s  %-14s %-16s %-10s %12s %12s\n", "#", "type", "output CxHxW", "activation",
           "params", "MFLOPs");
    int int8 = 0, nhwc = 0;
    for (int i = 0; i < sum.n_layers; i++) {
        cdl_layer_info l;
        cdl_model_layer_info(m, i, &l);
        char shape[48];
        snprintf(shape, sizeof shape, "%dx%dx%d", l.c, l.h, l.w);
        /* int8 layers (cdl quantize) say so, with how their input is quantized; convolutions
         * say which engine runs them; channels-last outputs say nhwc. */
        printf("%4d  %-14s %-16s %-10s %12zu %12.3f%s%s%s%s\n", i, l.type, shape, l.activation,
               l.params, l.flops / 1e6,
               l.int8 == 2   ? "  int8 (static input)"
               : l.int8 == 1 ? "  int8 (dynamic input)"
                             : "",
               l.engine ? "  engine " : "", l.engine ? l.engine : "",
               l.channels_last ? "  nhwc" : "");
        int8 += l.int8 != 0;
        nhwc += l.channels_last;
    }
    if (sum.channels_last)
        printf("channels_last=1: %d layer outputs NHWC%s\n", nhwc,
               nhwc ? "" : " (only a GPU keeps any: --gpu N plans for one)");
    if (int8)
        printf("int8: %d quantized layers (per-channel int8 weights, uint8 inputs)\n", int8);
    printf("total: %zu parameters (+%zu running statistics), %.3f MFLOPs per image\n", sum.params,
           sum.state, sum.flops / 1e6);
    static const char *const passes[] = {"training", "inference"};
    for (int k = 0; k < 2; k++) {
        size_t bytes;
        char err[256];
        if ((k ? cdl_model_inference_activation_bytes
               : cdl_model_training_activation_bytes)(m, &bytes, err, sizeof err))
            printf("%s activations: unknown (%s)\n", passes[k], err);
        else
            printf("%s activations: %.1f MiB for a pass of %d samples\n", passes[k],
                   (double)bytes / (1 << 20), k ? sum.batch / sum.subdivisions : sum.train_pass);
    }
}

int cmd_info(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, info_opts, N_INFO_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("info", "CFG|MODEL [options]",
                        "Prints each layer's type, output shape, parameters and FLOPs.", info_opts,
                        N_INFO_OPTS);
        return 0;
    }
    if (a.n_positional != 1)
        return error_set(&e, CDL_EUSAGE, "info takes one CFG or MODEL; see --help"), cli_fail(&e);
    cdl_model *m;
    if (cli_open_model(&a, a.positional[0], 0, &m, &e))
        return cli_fail(&e);
    if (args_get(&a, "--json"))
        print_json(m, a.positional[0]);
    else
        print_table(m, a.positional[0]);
    cdl_model_free(m);
    return 0;
}
