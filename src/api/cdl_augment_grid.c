/* The public API's augmentation preview (cdl.h): the first training samples as the network sees
 * them (the cfg's [net] augmentation with the loader's seeding) in one PNG grid. */
#include "cdl.h"

#include <stdlib.h>

#include "cdl_model.h"
#include "data/data_config.h"

/* Pixels between tiles and around the grid (white). */
enum { GRID_GAP = 2 };

/* Draws tile i's input [c][h][w] (normalisation undone) at its grid place in grid. */
static void place_tile(const AugmentConfig *a, const float *input, int i,
                       const cdl_augment_grid_options *g, Image *grid)
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
static int draw_grid(const AugmentConfig *a, const SampleSource *src,
                     const cdl_augment_grid_options *g, Image *grid, Error *e)
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
        st = g->eval ? augment_eval(a, &img, &scratch, x, NULL)
                     : augment_train(a, &img, &rng, &scratch, x, NULL);
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

static int write_grid(const AugmentConfig *a, const char *data_path,
                      const cdl_augment_grid_options *options, const char *png_path, Error *e)
{
    DataConfig dc;
    SampleSource train = {0}, valid = {0};
    int st = data_config_load(data_path, &dc, e);
    dc.split_seed = options->seed; /* the training images of that seed's split */
    st = st ? st : data_config_open_sources(&dc, &train, &valid, e);
    if (!st && train.n < 1)
        st = error_set(e, CDL_EUSAGE, "%s: the training set is empty", data_path);
    Image grid = {0};
    cdl_augment_grid_options g = *options;
    g.n = g.n < train.n ? g.n : train.n;
    g.cols = g.cols < g.n ? g.cols : g.n;
    st = st ? st : draw_grid(a, &train, &g, &grid, e);
    st = st ? st : image_write_png(png_path, &grid, e);
    image_free(&grid);
    source_free(&train);
    source_free(&valid);
    data_config_free(&dc);
    return st;
}

int cdl_model_write_augment_grid(const cdl_model *model, const char *data_path,
                                 const cdl_augment_grid_options *options, const char *png_path,
                                 char *err, size_t err_size)
{
    Error e = {0};
    AugmentConfig a;
    if (net_augment(&model->net, &a, &e))
        return api_report(&e, err, err_size);
    if (a.out_c != 1 && a.out_c != 3)
        return error_set(&e, CDL_EUSAGE, "%s: cannot draw %d-channel inputs (only 1 or 3)",
                         model->net.cfg.path, a.out_c),
               api_report(&e, err, err_size);
    return write_grid(&a, data_path, options, png_path, &e) ? api_report(&e, err, err_size)
                                                            : CDL_OK;
}
