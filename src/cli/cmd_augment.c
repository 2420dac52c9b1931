/* cdl augment: draws the first training samples as the network sees them (the cfg's [net]
 * augmentation with the loader's seeding) into one PNG grid. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/net.h"
#include "data/augment.h"
#include "data/data_config.h"

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

/* Pixels between tiles and around the grid (white). */
enum { GRID_GAP = 2 };

typedef struct GridSpec {
    int n, cols, zoom, eval, epoch;
    uint64_t seed;
} GridSpec;

/* Draws tile i's input [c][h][w] (normalisation undone) at its grid place in grid. */
static void place_tile(const AugmentConfig *a, const float *input, int i, const GridSpec *g,
                       Image *grid)
{
    const int th = a->out_h * g->zoom, tw = a->out_w * g->zoom;
    const int top = GRID_GAP + (i / g->cols) * (th + GRID_GAP);
    const int left = GRID_GAP + (i % g->cols) * (tw + GRID_GAP);
    const size_t in_plane = (size_t)a->out_h * a->out_w, grid_plane = (size_t)grid->h * grid->w;
    for (int k = 0; k < a->out_c; k++)
        for (int y = 0; y < th; y++)
            for (int x = 0; x < tw; x++) {
                float v = input[k * in_plane + (size_t)(y / g->zoom) * a->out_w + x / g->zoom];
                grid->data[k * grid_plane + (size_t)(top + y) * grid->w + left + x] =
                    v * a->std[k] + a->mean[k];
            }
}

/* Fills grid with the first g->n samples of src, augmented as configured. */
static int draw_grid(const AugmentConfig *a, const SampleSource *src, const GridSpec *g,
                     Image *grid, Error *e)
{
    const int rows = (g->n + g->cols - 1) / g->cols;
    grid->c = a->out_c;
    grid->h = GRID_GAP + rows * (a->out_h * g->zoom + GRID_GAP);
    grid->w = GRID_GAP + g->cols * (a->out_w * g->zoom + GRID_GAP);
    const size_t grid_values = (size_t)grid->c * grid->h * grid->w;
    if ((double)grid->h * grid->w > IMAGE_MAX_PIXELS)
        return error_set(e, CDL_EUSAGE,
                         "the grid would be %dx%d pixels: use fewer samples or "
                         "a smaller --zoom",
                         grid->w, grid->h);
    grid->data = malloc(grid_values * sizeof *grid->data);
    float *x = malloc((size_t)a->out_c * a->out_h * a->out_w * sizeof *x);
    if (!grid->data || !x) {
        free(x);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    for (size_t i = 0; i < grid_values; i++)
        grid->data[i] = 1.0f;
    AugmentScratch scratch = {0};
    int st = CDL_OK;
    for (int i = 0; i < g->n && !st; i++) {
        Image img = {0};
        int label;
        st = src->read(src, i, &img, &label, e);
        if (st)
            break;
        Rng rng;
        augment_seed(&rng, g->seed, g->epoch, i);
        st = g->eval ? augment_eval(a, &img, &scratch, x)
                     : augment_train(a, &img, &rng, &scratch, x);
        image_free(&img);
        if (st)
            st = error_set(e, CDL_ERUNTIME, "out of memory");
        else
            place_tile(a, x, i, g, grid);
    }
    augment_scratch_free(&scratch);
    free(x);
    return st;
}

/* Reads the options other than the paths into g. */
static int grid_options(const Args *args, GridSpec *g, Error *e)
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
    GridSpec g;
    const char *data_path = args_get(&args, "--data"), *out_path = args_get(&args, "-o");
    if (grid_options(&args, &g, &e))
        return cli_fail(&e);
    if (args.n_positional != 1 || !data_path || !out_path)
        return error_set(&e, CDL_EUSAGE, "augment needs a CFG, --data and -o; see --help"),
               cli_fail(&e);
    Net net;
    int st = net_build_from_file(&net, args.positional[0], args.repeats, args.n_repeats, 0, 1, &e);
    if (st)
        return cli_fail(&e);
    const AugmentConfig a = net.augment;
    net_free(&net);
    if (a.out_c != 1 && a.out_c != 3)
        return error_set(&e, CDL_EUSAGE, "%s: cannot draw %d-channel inputs (only 1 or 3)",
                         args.positional[0], a.out_c),
               cli_fail(&e);
    DataConfig dc;
    SampleSource train = {0}, valid = {0};
    st = data_config_load(data_path, &dc, &e);
    st = st ? st : data_config_open_sources(&dc, &train, &valid, &e);
    if (!st && train.n < 1)
        st = error_set(&e, CDL_EUSAGE, "%s: the training set is empty", data_path);
    Image grid = {0};
    g.n = g.n < train.n ? g.n : train.n;
    g.cols = g.cols < g.n ? g.cols : g.n;
    st = st ? st : draw_grid(&a, &train, &g, &grid, &e);
    st = st ? st : image_write_png(out_path, &grid, &e);
    image_free(&grid);
    source_free(&train);
    source_free(&valid);
    data_config_free(&dc);
    return st ? cli_fail(&e) : 0;
}
