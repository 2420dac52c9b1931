/* cdl: the command-line entry point, dispatching to one subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *about;
} commands[] = {
    {"train", cmd_train, "train a network from a cfg (or resume a checkpoint)"},
    {"eval", cmd_eval, "evaluate a model on a dataset: loss, accuracy, confusion matrix; mAP"},
    {"predict", cmd_predict, "classify image files (PNG, JPEG) with a model"},
    {"detect", cmd_detect, "find objects in image files with a detector: boxes, classes, scores"},
    {"info", cmd_info, "print a model's layer table: shapes, parameters, FLOPs"},
    {"export", cmd_export, "write a model as ONNX, or its tensors as .npy files"},
    {"import", cmd_import, "turn an ONNX model into a cfg and a checkpoint"},
    {"quantize", cmd_quantize, "write a model with int8 weights for faster inference"},
    {"bench", cmd_bench, "time training steps of a cfg on random data (images/s)"},
    {"bench-loader", cmd_bench_loader, "time the data loader alone: decode + augment (images/s)"},
    {"profile", cmd_profile, "time each layer's forward and backward; Chrome trace (--trace)"},
    {"graph", cmd_graph, "draw a model's layer graph (Graphviz DOT, PNG or SVG)"},
    {"plot", cmd_plot, "draw training curves (loss, accuracy) from --log files as a PNG"},
    {"augment", cmd_augment, "draw training samples as the net sees them (PNG grid)"},
    {"doctor", cmd_doctor, "report the build and the machine: BLAS, threads, OpenMP, GPU, MPI"},
    {"version", cmd_version, "print the version and build options (also cdl --version)"},
    {"check", cmd_check, "check a cfg and its .data as train would, and a step's memory"},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: cdl COMMAND [options]   (cdl COMMAND --help for its options)\n\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(to, "  %-12s %s\n", commands[i].name, commands[i].about);
}

int main(int argc, char **argv)
{
    cli_signals_init();
    if (argc < 2) {
        usage(stderr);
        return CDL_EUSAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        return cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "cdl: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CDL_EUSAGE;
}
