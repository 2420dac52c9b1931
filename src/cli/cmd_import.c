/* cdl import: an ONNX model as a cfg and a checkpoint. */
#include <stdio.h>
#include <string.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec import_opts[] = {
    {"-o", 1, 0, "the cfg to write (required)"},
    {"--out", 1, 0, "also write a checkpoint with the model's parameters here (net.cdl)"},
    {"--help", 0, 0, "show this help"},
};
#define N_IMPORT_OPTS (int)(sizeof import_opts / sizeof import_opts[0])

int cmd_import(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, import_opts, N_IMPORT_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help(
            "import", "MODEL.onnx -o NET.cfg [--out NET.cdl]",
            "Maps an ONNX inference graph onto cdl layers: writes the cfg and, with --out, a\n"
            "checkpoint holding its parameters (`cdl predict NET.cdl IMAGE`). Operators:\n"
            "  Conv (group; kernel, strides and pads per axis, symmetric pads, no dilation),\n"
            "  BatchNormalization (folded into the Conv or Gemm before it where it can be),\n"
            "  Relu, LeakyRelu (alpha 0.1), Sigmoid, Tanh, Elu (alpha 1), Clip (0..6: relu6),\n"
            "  HardSigmoid (alpha 1/6), HardSwish after a Conv, Gemm, Add or BatchNormalization,\n"
            "  x times Sigmoid(x) or HardSigmoid(x) (swish, hardswish), Mul of a map by a\n"
            "  per-channel gate ([scale_channels]), MaxPool (ceil_mode too), AveragePool over\n"
            "  the whole map, GlobalAveragePool, ReduceMean over H and W, Gemm (transB), MatMul\n"
            "  (+ Add of a bias), Add of two layers ([shortcut]), Concat of channels ([route]),\n"
            "  Slice of a channel group ([route] groups=), the channel shuffle as Reshape,\n"
            "  Transpose, Reshape ([shuffle]), Shape/Gather/arithmetic on shapes (folded),\n"
            "  Pad, AveragePool windows, Transpose to channels last and back around\n"
            "  LayerNormalization (or its ReduceMean...Div chain), MatMul over channels and\n"
            "  GELU's Div/Erf/Add/Mul chain, Mul by per-channel constants ([layer_scale]),\n"
            "  a vision transformer's patch rows, class token and position embedding\n"
            "  ([tokens]), nn.MultiheadAttention's subgraph ([attention]), layer norm, MatMul\n"
            "  and GELU over token rows ([layernorm], [linear]), Gather of one row\n"
            "  ([select_token]), Softmax, Flatten and Reshape to a vector, Dropout, Identity,\n"
            "  Constant, and the per-channel Sub/Mul of cdl's own [net] mean/std. Anything\n"
            "  else is refused naming the node, its operator and the attribute (exit 2); an\n"
            "  unreadable or malformed file exits 1.",
            import_opts, N_IMPORT_OPTS);
        return 0;
    }
    if (a.n_positional != 1 || !args_get(&a, "-o")) {
        error_set(&e, CDL_EUSAGE, "import takes one MODEL.onnx and -o NET.cfg; see --help");
        return cli_fail(&e);
    }
    const char *cfg = args_get(&a, "-o"), *model = args_get(&a, "--out");
    if (model && !strcmp(cfg, model))
        error_set(&e, CDL_EUSAGE, "%s: -o (the cfg) and --out (the checkpoint) name one file", cfg);
    if (e.code || cli_check_output(&a, cfg, FILE_KIND_CFG, &e) ||
        (model && cli_check_output(&a, model, FILE_KIND_CHECKPOINT, &e)))
        return cli_fail(&e);
    cdl_import_summary s;
    if ((e.code = cdl_import_onnx(a.positional[0], cfg, model, &s, e.msg, sizeof e.msg)))
        return cli_fail(&e);
    printf("%s: %d layers from %d ONNX nodes (opset %d)%s%s\n", cfg, s.layers, s.onnx_nodes,
           s.opset, model ? "; parameters in " : "", model ? model : "");
    return 0;
}
