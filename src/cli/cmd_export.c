/* cdl export: writes a model as ONNX (export onnx), as one .npy file per tensor (export npy) or
 * as darknet .weights (export darknet). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "model/darknet_weights.h"
#include "model/model_io.h"
#include "model/npy_export.h"
#include "model/onnx_export.h"

static const OptSpec export_opts[] = {
    {"-o", 1, 0, "onnx, darknet: output file (default: the model's name with .onnx or .weights)"},
    {"--batch", 1, 0, "onnx: fix the batch axis to N (default: dynamic, named N)"},
    {"--opset", 1, 0, "onnx: operator set 13..17 (default 13; IR version 7, or 8 from 15)"},
    {"--seed", 1, 0, "with a CFG: initialise the parameters from this seed (default 1)"},
    {"--weights", 1, 0, "with a CFG: load its parameters from these darknet .weights"},
    {"--help", 0, 0, "show this help"},
};
#define N_EXPORT_OPTS (int)(sizeof export_opts / sizeof export_opts[0])

/* A checkpoint, or a cfg built with parameters from --seed or --weights; *step (may be NULL)
 * receives the checkpoint's optimizer steps (0 for a cfg). */
static int load_model(const Args *a, const char *path, Net *net, uint64_t *step, Error *e)
{
    long seed;
    const char *weights = args_get(a, "--weights");
    if (step)
        *step = 0;
    if (!cli_is_checkpoint(path)) {
        if (weights && args_get(a, "--seed"))
            return error_set(e, CDL_EUSAGE, "--weights replaces --seed: give one of them");
        int st = args_get_int(a, "--seed", 1, 0, LONG_MAX, &seed, e);
        st = st ? st : net_build_from_file(net, path, NULL, 0, 0, (uint64_t)seed, e);
        if (st)
            return st;
        cli_print_warnings(net->cfg.warnings);
        if (weights && (st = darknet_weights_load(net, weights, NULL, e)))
            net_free(net);
        return st;
    }
    if (args_get(a, "--seed") || weights)
        return error_set(e, CDL_EUSAGE, "--seed and --weights apply to cfg files, not checkpoints");
    ModelMeta meta;
    int st = model_load(path, net, 0, NULL, &meta, e);
    if (!st && step)
        *step = meta.step;
    if (!st)
        model_meta_free(&meta);
    return st;
}

/* name = the base name of model (after following links: weights/latest.cdl gives the name
 * of the checkpoint it points at) without its extension. */
static void model_name(const char *model, char *name, size_t size)
{
    char resolved[PATH_MAX];
    const char *path = realpath(model, resolved) ? resolved : model;
    const char *base = strrchr(path, '/');
    snprintf(name, size, "%s", base ? base + 1 : path);
    char *dot = strrchr(name, '.');
    if (dot && dot != name)
        *dot = '\0';
}

static int export_onnx(const Args *a, Error *e)
{
    if (a->n_positional > 2)
        return error_set(e, CDL_EUSAGE, "export onnx takes at most one MODEL or CFG; see --help");
    const char *model = a->n_positional == 2 ? a->positional[1] : CDL_DEFAULT_MODEL;
    long batch, opset;
    int st = args_get_int(a, "--batch", 0, 1, INT_MAX, &batch, e);
    st = st ? st
            : args_get_int(a, "--opset", ONNX_OPSET_DEFAULT, ONNX_OPSET_MIN, ONNX_OPSET_MAX, &opset,
                           e);
    Net net;
    st = st ? st : load_model(a, model, &net, NULL, e);
    if (st)
        return st;
    char name[PATH_MAX], out[PATH_MAX + 8];
    model_name(model, name, sizeof name);
    snprintf(out, sizeof out, "%s.onnx", name);
    const char *path = args_get(a, "-o") ? args_get(a, "-o") : out;
    st = onnx_export(&net, name, path, (int)batch, (int)opset, e);
    net_free(&net);
    if (!st)
        printf("%s: opset %ld, IR version %d, %s batch\n", path, opset, onnx_ir_version((int)opset),
               batch ? "fixed" : "dynamic");
    return st;
}

static int export_npy(const Args *a, Error *e)
{
    for (int k = 0; k < N_EXPORT_OPTS; k++)
        if (strcmp(export_opts[k].name, "--seed") && strcmp(export_opts[k].name, "--weights") &&
            args_get(a, export_opts[k].name))
            return error_set(e, CDL_EUSAGE, "option %s applies to export onnx, not npy",
                             export_opts[k].name);
    if (a->n_positional != 3)
        return error_set(e, CDL_EUSAGE, "export npy takes MODEL|CFG DIR; see --help");
    const char *model = a->positional[1], *dir = a->positional[2];
    Net net;
    int st = load_model(a, model, &net, NULL, e);
    if (st)
        return st;
    st = npy_export_net(&net, dir, e);
    if (!st)
        printf("%s: %zu parameters, %zu running statistics\n", dir, net.n_params, net.n_state);
    net_free(&net);
    return st;
}

/* darknet .weights, `seen` = the images the checkpoint trained on (steps x batch). */
static int export_darknet(const Args *a, Error *e)
{
    if (args_get(a, "--batch") || args_get(a, "--opset"))
        return error_set(e, CDL_EUSAGE, "options --batch and --opset apply to export onnx");
    if (a->n_positional > 2)
        return error_set(e, CDL_EUSAGE,
                         "export darknet takes at most one MODEL or CFG; see --help");
    const char *model = a->n_positional == 2 ? a->positional[1] : CDL_DEFAULT_MODEL;
    Net net;
    uint64_t step;
    int st = load_model(a, model, &net, &step, e);
    if (st)
        return st;
    char name[PATH_MAX], out[PATH_MAX + 8];
    model_name(model, name, sizeof name);
    snprintf(out, sizeof out, "%s.weights", name);
    const char *path = args_get(a, "-o") ? args_get(a, "-o") : out;
    st = darknet_weights_save(&net, path, step * (uint64_t)net.hyper.batch, e);
    if (!st)
        printf("%s: darknet 0.2.0, %zu parameters, %zu running statistics\n", path, net.n_params,
               net.n_state);
    net_free(&net);
    return st;
}

int cmd_export(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, export_opts, N_EXPORT_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help(
            "export",
            "onnx [MODEL|CFG] [options]  |  export npy MODEL|CFG DIR [--seed S]  |  "
            "export darknet [MODEL|CFG] [-o OUT]",
            "onnx: writes the inference graph as an ONNX model (batch norm with its "
            "running statistics,\ndropout as identity) for onnxruntime; MODEL "
            "defaults to " CDL_DEFAULT_MODEL ".\nnpy: writes each parameter and "
            "running statistic as DIR/layerN.NAME.npy (float32).\ndarknet: writes "
            "darknet's .weights (version 0.2.0) for its cfg.\nA CFG gets "
            "parameters initialised from --seed (for testing an architecture), or darknet's\n"
            "from --weights (to convert a darknet model).",
            export_opts, N_EXPORT_OPTS);
        return 0;
    }
    const char *format = a.n_positional ? a.positional[0] : "";
    int st;
    if (!strcmp(format, "onnx"))
        st = export_onnx(&a, &e);
    else if (!strcmp(format, "npy"))
        st = export_npy(&a, &e);
    else if (!strcmp(format, "darknet"))
        st = export_darknet(&a, &e);
    else
        st = error_set(&e, CDL_EUSAGE,
                       "export needs a format, onnx, npy or darknet%s%s%s; see --help",
                       *format ? " (not '" : "", format, *format ? "')" : "");
    return st ? cli_fail(&e) : 0;
}
