/* cdl info: the layer table of a cfg or checkpoint: type, output shape, parameters, FLOPs. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "model/model_io.h"

static const OptSpec info_opts[] = {
    {"--set", 1, 1, "override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--json", 0, 0, "print one JSON object instead of a table"},
    {"--help", 0, 0, "show this help"},
};
#define N_INFO_OPTS (int)(sizeof info_opts / sizeof info_opts[0])

static size_t layer_params(const Layer *l, int trainable_only)
{
    size_t n = 0;
    for (int k = 0; k < l->n_params; k++)
        n += (!trainable_only || l->params[k].trainable) ? l->params[k].count : 0;
    return n;
}

static void print_json(const Net *net, const char *path)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", path);
    int in[3] = {net->in_shape.c, net->in_shape.h, net->in_shape.w};
    cJSON_AddItemToObject(o, "input", cJSON_CreateIntArray(in, 3));
    if (net->seq > 0) {
        cJSON_AddNumberToObject(o, "seq", net->seq);
        cJSON_AddNumberToObject(o, "vocab", net->vocab);
    }
    cJSON *layers = cJSON_AddArrayToObject(o, "layers");
    double flops = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        cJSON *j = cJSON_CreateObject();
        int out[3] = {l->out_shape.c, l->out_shape.h, l->out_shape.w};
        cJSON_AddNumberToObject(j, "index", i);
        cJSON_AddStringToObject(j, "type", l->type->name);
        cJSON_AddItemToObject(j, "output", cJSON_CreateIntArray(out, 3));
        cJSON_AddNumberToObject(j, "params", (double)layer_params(l, 1));
        cJSON_AddNumberToObject(j, "flops", l->flops);
        cJSON_AddStringToObject(j, "activation", activation_name(l->activation));
        cJSON_AddItemToArray(layers, j);
        flops += l->flops;
    }
    cJSON_AddNumberToObject(o, "params", (double)net->n_params);
    cJSON_AddNumberToObject(o, "state", (double)net->n_state);
    cJSON_AddNumberToObject(o, "flops", flops);
    char *text = cJSON_PrintUnformatted(o);
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
}

static void print_table(const Net *net, const char *path)
{
    printf("%s: input %dx%dx%d (CxHxW), batch %d, subdivisions %d\n", path, net->in_shape.c,
           net->in_shape.h, net->in_shape.w, net->hyper.batch, net->hyper.subdivisions);
    if (net->seq > 0)
        printf("sequence net: %d tokens per sample, a vocabulary of %d\n", net->seq, net->vocab);
    printf("%4s  %-14s %-16s %-10s %12s %12s\n", "#", "type", "output CxHxW", "activation",
           "params", "MFLOPs");
    double flops = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        char shape[48];
        snprintf(shape, sizeof shape, "%dx%dx%d", l->out_shape.c, l->out_shape.h, l->out_shape.w);
        printf("%4d  %-14s %-16s %-10s %12zu %12.3f\n", i, l->type->name, shape,
               activation_name(l->activation), layer_params(l, 1), l->flops / 1e6);
        flops += l->flops;
    }
    printf("total: %zu parameters (+%zu running statistics), %.3f MFLOPs per image\n",
           net->n_params, net->n_state, flops / 1e6);
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
    Net net;
    if (cli_load_model(&a, a.positional[0], 0, &net, NULL, &e))
        return cli_fail(&e);
    if (args_get(&a, "--json"))
        print_json(&net, a.positional[0]);
    else
        print_table(&net, a.positional[0]);
    net_free(&net);
    return 0;
}
