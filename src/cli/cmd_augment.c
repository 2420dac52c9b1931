/* cdl augment: draws the first training samples as the network sees them (the cfg's [net]
 * augmentation with the loader's seeding) into one PNG grid. */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec augment_opts[] = {
    {"--data", 1, 0, "dataset .data file (required)"},
    {"-o", 1, 0, "the PNG grid to write (required)"},
    {"--n", 1, 0, "how many training samples, from the first (default 16)"},
    {"--cols", 1, 0, "tiles per row (default: ceil(sqrt(n)))"},
    {"--seed", 1, 0, "the seed given to train (default 1)"},
    {"--epoch", 1, 0, "the 0-based epoch whose draws to show (default 0)"},
    {"--zoom", 1, 0, "enlarge each tile this many times, nearest neighbour (default 1)"},
    {"--eval", 0, 0, "show the eval-time transform instead of the training one"},
    {"--set", 1, 1, "override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--help", 0, 0, "show this help"},
};
#define N_AUGMENT_OPTS (int)(sizeof augment_opts / sizeof augment_opts[0])

/* Reads the options other than the paths into g. */
static int grid_options(const Args *args, cdl_augment_grid_options *g, Error *e)
{
    long n, cols, seed, epoch, zoom;
    int st = args_get_int(args, "--n", 16, 1, 100000, &n, e);
    st = st ? st : args_get_int(args, "--cols", 0, 1, 100000, &cols, e);
    st = st ? st : args_get_int(args, "--seed", 1, 0, LONG_MAX, &seed, e);
    st = st ? st : args_get_int(args, "--epoch", 0, 0, INT_MAX, &epoch, e);
    st = st ? st : args_get_int(args, "--zoom", 1, 1, 64, &zoom, e);
    g->n = (int)n;
    g->cols = cols ? (int)cols : (int)ceil(sqrt((double)n));
    g->seed = (uint64_t)seed;
    g->epoch = (int)epoch;
    g->zoom = (int)zoom;
    g->eval = args_get(args, "--eval") != NULL;
    return st;
}

int cmd_augment(int argc, char **argv)
{
    Args args;
    Error e = {0};
    if (args_parse(argc, argv, augment_opts, N_AUGMENT_OPTS, &args, &e))
        return cli_fail(&e);
    if (args_get(&args, "--help")) {
        args_print_help("augment", "CFG --data D -o GRID.png [options]",
                        "Writes the first training samples, augmented as the cfg's [net] keys "
                        "say and seeded as training seeds them, as a PNG grid (normalisation "
                        "undone for display).",
                        augment_opts, N_AUGMENT_OPTS);
        return 0;
    }
    cdl_augment_grid_options g;
    const char *data_path = args_get(&args, "--data"), *out_path = args_get(&args, "-o");
    if (grid_options(&args, &g, &e))
        return cli_fail(&e);
    if (args.n_positional != 1 || !data_path || !out_path)
        return error_set(&e, CDL_EUSAGE, "augment needs a CFG, --data and -o; see --help"),
               cli_fail(&e);
    if (cli_check_output(&args, out_path, FILE_KIND_PNG, &e))
        return cli_fail(&e);
    const cdl_open_options how = {
        .overrides = args.repeats, .n_overrides = args.n_repeats, .seed = 1, .kind = CDL_OPEN_CFG};
    cdl_model *m;
    char err[1024];
    int st = cdl_model_open(args.positional[0], &how, &m, err, sizeof err);
    if (!st) {
        st = cdl_model_write_augment_grid(m, data_path, &g, out_path, err, sizeof err);
        cdl_model_free(m);
    }
    if (st)
        cli_print_message(err);
    return st;
}
