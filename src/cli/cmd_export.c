/* cdl export: writes a model as ONNX (export onnx), as one .npy file per tensor (export npy), as
 * darknet .weights (export darknet) or as safetensors under torchvision's names (export
 * safetensors). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec export_opts[] = {
    {"-o", 1, 0,
     "onnx, darknet, safetensors: output file (default: the model's name with .onnx, .weights "
     "or .safetensors)"},
    {"--batch", 1, 0, "onnx: fix the batch axis to N (default: dynamic, named N)"},
    {"--opset", 1, 0, "onnx: operator set 13..17 (default 13; IR version 7, or 8 from 15)"},
    {"--decode", 0, 0,
     "onnx, detectors: output the decoded boxes [N,B,4] (centre x, y, w, h in input pixels) and "
     "scores [N,B,C] instead of the raw [yolo]/[region] heads (no NMS)"},
    {"--seed", 1, 0, "with a CFG: initialise the parameters from this seed (default 1)"},
    {"--weights", 1, 0,
     "with a CFG: load its parameters from FILE.safetensors (torchvision names), darknet "
     ".weights or a checkpoint's matching layers"},
    {"--set", 1, 1, "with a CFG: override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--help", 0, 0, "show this help"},
};
#define N_EXPORT_OPTS (int)(sizeof export_opts / sizeof export_opts[0])

/* A checkpoint, or a cfg built with parameters from --seed or --weights (no activations). */
static int load_model(const Args *a, const char *path, cdl_model **m, Error *e)
{
    long seed;
    const char *weights = args_get(a, "--weights");
    if (cdl_is_checkpoint(path)) {
        if (args_get(a, "--seed") || weights)
            return error_set(e, CDL_EUSAGE,
                             "--seed and --weights apply to cfg files, not checkpoints");
        const cdl_open_options how = {
            .overrides = a->repeats, .n_overrides = a->n_repeats, .kind = CDL_OPEN_CHECKPOINT};
        return e->code = cdl_model_open(path, &how, m, e->msg, sizeof e->msg);
    }
    if (weights && args_get(a, "--seed"))
        return error_set(e, CDL_EUSAGE, "--weights replaces --seed: give one of them");
    int st = args_get_int(a, "--seed", 1, 0, LONG_MAX, &seed, e);
    if (st)
        return st;
    const cdl_open_options how = {.overrides = a->repeats,
                                  .n_overrides = a->n_repeats,
                                  .seed = (uint64_t)seed,
                                  .kind = CDL_OPEN_CFG};
    if ((st = cdl_model_open(path, &how, m, e->msg, sizeof e->msg)))
        return e->code = st;
    cli_print_warnings(cdl_model_warnings(*m));
    char note[1200];
    if (weights &&
        (st = cdl_model_load_weights(*m, weights, note, sizeof note, e->msg, sizeof e->msg))) {
        cdl_model_free(*m);
        return e->code = st;
    }
    if (weights)
        fprintf(stderr, "cdl: --weights %s\n", note);
    return CDL_OK;
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
            : args_get_int(a, "--opset", CDL_ONNX_OPSET_DEFAULT, CDL_ONNX_OPSET_MIN,
                           CDL_ONNX_OPSET_MAX, &opset, e);
    char name[PATH_MAX], out[PATH_MAX + 8];
    model_name(model, name, sizeof name);
    snprintf(out, sizeof out, "%s.onnx", name);
    const char *path = args_get(a, "-o") ? args_get(a, "-o") : out;
    cdl_model *m;
    st = st ? st : load_model(a, model, &m, e);
    if (st)
        return st;
    /* a sequence-to-sequence model's encoder and decoder step go beside each other */
    cdl_model_summary summary;
    cdl_model_get_summary(m, &summary);
    const int parts = summary.source > 0;
    char encoder[PATH_MAX + 16], decoder[PATH_MAX + 16], written[2 * PATH_MAX + 40];
    cdl_onnx_part_path(path, "encoder", encoder, sizeof encoder);
    cdl_onnx_part_path(path, "decoder", decoder, sizeof decoder);
    snprintf(written, sizeof written, "%s", path);
    if (parts)
        snprintf(written, sizeof written, "%s and %s", encoder, decoder);
    st = cli_check_output(a, parts ? encoder : path, FILE_KIND_ONNX, e);
    st = st || !parts ? st : cli_check_output(a, decoder, FILE_KIND_ONNX, e);
    st = st ? st
            : (e->code =
                   cdl_model_export_onnx(m, name, path, (int)batch, (int)opset,
                                         args_get(a, "--decode") != NULL, e->msg, sizeof e->msg));
    cdl_model_free(m);
    if (!st)
        printf("%s: opset %ld, IR version %d, %s batch\n", written, opset,
               cdl_onnx_ir_version((int)opset), batch ? "fixed" : "dynamic");
    return st;
}

static int export_npy(const Args *a, Error *e)
{
    for (int k = 0; k < N_EXPORT_OPTS; k++)
        if (strcmp(export_opts[k].name, "--seed") && strcmp(export_opts[k].name, "--weights") &&
            strcmp(export_opts[k].name, "--set") && args_get(a, export_opts[k].name))
            return error_set(e, CDL_EUSAGE, "option %s applies to export onnx, not npy",
                             export_opts[k].name);
    if (a->n_positional != 3)
        return error_set(e, CDL_EUSAGE, "export npy takes MODEL|CFG DIR; see --help");
    const char *model = a->positional[1], *dir = a->positional[2];
    cdl_model *m;
    int st = load_model(a, model, &m, e);
    if (st)
        return st;
    cdl_model_summary sum;
    cdl_model_get_summary(m, &sum);
    st = e->code = cdl_model_export_npy(m, dir, e->msg, sizeof e->msg);
    if (!st)
        printf("%s: %zu parameters, %zu running statistics\n", dir, sum.params, sum.state);
    cdl_model_free(m);
    return st;
}

/* The tensors alone, as darknet .weights (`seen` = the images the checkpoint trained on, steps x
 * batch) or safetensors under torchvision's names. */
static int export_tensors(const Args *a, const char *format, Error *e)
{
    const int darknet = !strcmp(format, "darknet");
    if (args_get(a, "--batch") || args_get(a, "--opset") || args_get(a, "--decode") != NULL)
        return error_set(e, CDL_EUSAGE,
                         "options --batch, --opset and --decode apply to export onnx");
    if (a->n_positional > 2)
        return error_set(e, CDL_EUSAGE, "export %s takes at most one MODEL or CFG; see --help",
                         format);
    const char *model = a->n_positional == 2 ? a->positional[1] : CDL_DEFAULT_MODEL;
    char name[PATH_MAX], out[PATH_MAX + 16];
    model_name(model, name, sizeof name);
    snprintf(out, sizeof out, "%s%s", name, darknet ? ".weights" : ".safetensors");
    const char *path = args_get(a, "-o") ? args_get(a, "-o") : out;
    cdl_model *m;
    int st = cli_check_output(a, path, darknet ? FILE_KIND_WEIGHTS : FILE_KIND_SAFETENSORS, e);
    st = st ? st : load_model(a, model, &m, e);
    if (st)
        return st;
    cdl_model_summary sum;
    cdl_model_get_summary(m, &sum);
    st = e->code = darknet ? cdl_model_export_darknet(m, path, e->msg, sizeof e->msg)
                           : cdl_model_export_safetensors(m, path, e->msg, sizeof e->msg);
    if (!st)
        printf("%s: %s, %zu parameters, %zu running statistics\n", path,
               darknet ? "darknet 0.2.0" : "safetensors (torchvision names)", sum.params,
               sum.state);
    cdl_model_free(m);
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
            "export darknet|safetensors [MODEL|CFG] [-o OUT]",
            "onnx: writes the inference graph as an ONNX model (batch norm with its "
            "running statistics,\ndropout as identity) for onnxruntime; MODEL "
            "defaults to " CDL_DEFAULT_MODEL ".\nA sequence-to-sequence model is two files, "
            "NAME.encoder.onnx and NAME.decoder.onnx\n(its encoder and one decoder step; -o "
            "names the prefix).\nnpy: writes each parameter and "
            "running statistic as DIR/layerN.NAME.npy (float32).\ndarknet: writes "
            "darknet's .weights (version 0.2.0) for its cfg.\nsafetensors: writes "
            "the tensors under torchvision's state-dict names (zoo resnet, vgg, mobilenetv2).\n"
            "A CFG gets "
            "parameters initialised from --seed (for testing an architecture), or those of\n"
            "--weights (to convert a darknet, safetensors or cdl model).",
            export_opts, N_EXPORT_OPTS);
        return 0;
    }
    const char *format = a.n_positional ? a.positional[0] : "";
    int st;
    if (!strcmp(format, "onnx"))
        st = export_onnx(&a, &e);
    else if (!strcmp(format, "npy"))
        st = export_npy(&a, &e);
    else if (!strcmp(format, "darknet") || !strcmp(format, "safetensors"))
        st = export_tensors(&a, format, &e);
    else
        st = error_set(&e, CDL_EUSAGE,
                       "export needs a format, onnx, npy, darknet or safetensors%s%s%s; see --help",
                       *format ? " (not '" : "", format, *format ? "')" : "");
    return st ? cli_fail(&e) : 0;
}
