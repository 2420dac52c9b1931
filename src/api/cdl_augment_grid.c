/* The public API's augmentation preview (cdl.h): the first training samples as the network sees
 * them (the cfg's [net] augmentation with the loader's seeding) in one PNG grid, a detector's
 * with their boxes. */
#include "cdl.h"

#include <stdlib.h>

#include "cdl_model.h"
#include "data/data_config.h"
#include "data/mosaic.h"

/* Pixels between tiles and around the grid (white). */
enum { GRID_GAP = 2 };

/* Tile i's place in the grid: its top-left pixel and zoomed size. */
typedef struct Tile {
    int top, left, h, w;
} Tile;

static Tile tile_of(const AugmentConfig *a, int i, const cdl_augment_grid_options *g)
{
    const int h = a->out_h * g->zoom, w = a->out_w * g->zoom;
    return (Tile){GRID_GAP + (i / g->cols) * (h + GRID_GAP),
                  GRID_GAP + (i % g->cols) * (w + GRID_GAP), h, w};
}

/* Draws tile i's input [c][h][w] (normalisation undone) at its grid place in grid. */
static void place_tile(const AugmentConfig *a, const float *input, int i,
                       const cdl_augment_grid_options *g, Image *grid)
{
    const Tile t = tile_of(a, i, g);
    const int th = t.h, tw = t.w, top = t.top, left = t.left;
    const size_t in_plane = (size_t)a->out_h * a->out_w, grid_plane = (size_t)grid->h * grid->w;
    for (int k = 0; k < a->out_c; k++)
        for (int y = 0; y < th; y++)
            for (int x = 0; x < tw; x++) {
                float v = input[k * in_plane + (size_t)(y / g->zoom) * a->out_w + x / g->zoom];
                grid->data[k * grid_plane + (size_t)(top + y) * grid->w + left + x] =
                    v * a->std[k] + a->mean[k];
            }
}

/* Outlines tile i's boxes, truth [max_boxes][TRUTH_FLOATS] placed in its input (the list ends at
 * the first x of 0), one pixel wide in the tile's zoomed pixels: red on colour inputs, white on
 * grey ones. */
static void outline_boxes(const AugmentConfig *a, const float *truth, int max_boxes, int i,
                          const cdl_augment_grid_options *g, Image *grid)
{
    const Tile t = tile_of(a, i, g);
    const int th = t.h, tw = t.w, top = t.top, left = t.left;
    const size_t plane = (size_t)grid->h * grid->w;
    for (int k = 0; k < max_boxes && truth[(size_t)k * TRUTH_FLOATS + TRUTH_X] != 0; k++) {
        const float *b = truth + (size_t)k * TRUTH_FLOATS;
        int x0 = (int)((b[TRUTH_X] - b[TRUTH_W] / 2) * (float)tw);
        int x1 = (int)((b[TRUTH_X] + b[TRUTH_W] / 2) * (float)tw);
        int y0 = (int)((b[TRUTH_Y] - b[TRUTH_H] / 2) * (float)th);
        int y1 = (int)((b[TRUTH_Y] + b[TRUTH_H] / 2) * (float)th);
        x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
        x1 = x1 > tw - 1 ? tw - 1 : x1, y1 = y1 > th - 1 ? th - 1 : y1;
        for (int y = y0; y <= y1; y++)
            for (int x = x0; x <= x1; x++) {
                if (y != y0 && y != y1 && x != x0 && x != x1)
                    continue;
                const size_t at = (size_t)(top + y) * grid->w + left + x;
                for (int c = 0; c < grid->c; c++)
                    grid->data[c * plane + at] = grid->c == 1 || c == 0 ? 1.0f : 0.0f;
            }
    }
}

/* Fills grid with the first g->n samples of src, augmented as configured, with their boxes
 * outlined where the net reads truth_boxes of them (a detector; 0: none). */
static int draw_grid(const AugmentConfig *a, const SampleSource *src, int truth_boxes,
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
    float *truth = truth_boxes ? malloc((size_t)truth_boxes * TRUTH_FLOATS * sizeof *truth) : NULL;
    if (!grid->data || !x || (truth_boxes && !truth)) {
        free(x);
        free(truth);
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
        if (!st && truth)
            st = src->read_boxes(src, i, truth, truth_boxes, e);
        if (st)
            break;
        Rng rng;
        augment_seed(&rng, g->seed, g->epoch, i);
        BoxPlacement placed;
        st = g->eval ? augment_eval(a, &img, &scratch, x, &placed)
                     : augment_train_mosaic(a, src, &img, truth, truth_boxes, &rng, &scratch, x,
                                            &placed, e);
        image_free(&img);
        if (st) {
            st = g->eval ? error_set(e, CDL_ERUNTIME, "out of memory") : st;
            break;
        }
        place_tile(a, x, i, g, grid);
        if (truth) {
            boxes_place(truth, truth_boxes, &placed);
            outline_boxes(a, truth, truth_boxes, i, g, grid);
        }
    }
    augment_scratch_free(&scratch);
    free(x);
    free(truth);
    return st;
}

static int write_grid(const AugmentConfig *a, int truth_boxes, const char *data_path,
                      const cdl_augment_grid_options *options, const char *png_path, Error *e)
{
    DataConfig dc;
    SampleSource train = {0}, valid = {0};
    int st = data_config_load(data_path, &dc, e);
    dc.split_seed = options->seed; /* the training images of that seed's split */
    dc.boxes = truth_boxes > 0;    /* a detector's list: boxes from the label files */
    st = st ? st : data_config_open_sources(&dc, &train, &valid, e);
    if (!st && train.n < 1)
        st = error_set(e, CDL_EUSAGE, "%s: the training set is empty", data_path);
    Image grid = {0};
    cdl_augment_grid_options g = *options;
    g.n = g.n < train.n ? g.n : train.n;
    g.cols = g.cols < g.n ? g.cols : g.n;
    if (!st && truth_boxes && !train.read_boxes)
        st = error_set(e, CDL_EUSAGE,
                       "%s: a detector's samples need boxes, which this dataset "
                       "has not (a darknet list with label files)",
                       data_path);
    if (!st && truth_boxes)
        st = augment_check_boxes(a, e);
    st = st ? st : draw_grid(a, &train, truth_boxes, &g, &grid, e);
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
    return write_grid(&a, net_truth_boxes(&model->net), data_path, options, png_path, &e)
               ? api_report(&e, err, err_size)
               : CDL_OK;
}
