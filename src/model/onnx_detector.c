/* The graph outputs of a detector's ONNX export: raw heads or decoded boxes (onnx_detector.h). */
#include "model/onnx_detector.h"

#include <stdio.h>
#include <stdlib.h>

#include "detect/net_detections.h"
#include "layers/families.h"
#include "layers/region.h"
#include "layers/yolo.h"

/* The [yolo] and [region] layers a detector may export. */
#define MAX_HEADS 16

/* What the decode of one head needs: anchors per cell and their sizes in input pixels. */
typedef struct Head {
    const Layer *layer;
    int anchors, classes;
    float anchor_px[2 * YOLO_MAX_ANCHORS]; /* w, h of each of its anchors */
} Head;

static Head head_of(const Layer *l, const Net *net)
{
    Head h = {.layer = l, .classes = detector_classes(l)};
    if (l->type == &yolo_layer) {
        const Yolo *yo = l->priv;
        h.anchors = yo->n_mask;
        for (int a = 0; a < yo->n_mask; a++) {
            h.anchor_px[2 * a] = yo->anchors[2 * yo->mask[a]];
            h.anchor_px[2 * a + 1] = yo->anchors[2 * yo->mask[a] + 1];
        }
    } else { /* [region] anchors are in grid cells */
        const Region *r = l->priv;
        h.anchors = r->num;
        for (int a = 0; a < r->num; a++) {
            h.anchor_px[2 * a] = r->anchors[2 * a] * net->in_shape.w / l->out_shape.w;
            h.anchor_px[2 * a + 1] = r->anchors[2 * a + 1] * net->in_shape.h / l->out_shape.h;
        }
    }
    return h;
}

/* The head's output as rows [N][anchors h w][classes + 5] ("layer<i>.decode_rows"). */
static void head_rows(OnnxGraph *g, const Head *h, const char *rows)
{
    const Layer *l = h->layer;
    const int64_t entries = h->classes + 5, cells = (int64_t)l->out_shape.h * l->out_shape.w;
    char split[ONNX_NAME_MAX], cells_first[ONNX_NAME_MAX], split_shape[ONNX_NAME_MAX],
        rows_shape[ONNX_NAME_MAX];
    onnx_name(split, l, "decode_split");
    onnx_name(cells_first, l, "decode_cells");
    onnx_name(split_shape, l, "decode_split_shape");
    onnx_name(rows_shape, l, "decode_rows_shape");
    onnx_int64s(g, split_shape, 4, (const int64_t[]){-1, h->anchors, entries, cells});
    onnx_int64s(g, rows_shape, 3, (const int64_t[]){-1, h->anchors * cells, entries});
    onnx_node(g, "Reshape", 2, (const char *[]){g->layers[l->index].name, split_shape}, split, 0,
              NULL);
    const int64_t perm[] = {0, 1, 3, 2};
    const OnnxAttr a = onnx_attr_ints("perm", perm, 4);
    onnx_node(g, "Transpose", 1, (const char *[]){split}, cells_first, 1, &a);
    onnx_node(g, "Reshape", 2, (const char *[]){cells_first, rows_shape}, rows, 0, NULL);
}

/* The constants of the decode, [1][anchors h w][2] each: every row's cell column and row (grid)
 * and its anchor's size in pixels (anchor_size). */
static int head_constants(OnnxGraph *g, const Head *h, const char *grid_name,
                          const char *anchor_name, Error *e)
{
    const int w = h->layer->out_shape.w, cells = h->layer->out_shape.h * w;
    const int64_t rows = (int64_t)h->anchors * cells, dims[] = {1, rows, 2};
    float *grid = malloc((size_t)rows * 2 * sizeof *grid);
    float *anchor = malloc((size_t)rows * 2 * sizeof *anchor);
    if (!grid || !anchor) {
        free(grid);
        free(anchor);
        return error_set(e, CDL_ERUNTIME, "out of memory building the box decode");
    }
    for (int a = 0; a < h->anchors; a++)
        for (int c = 0; c < cells; c++) {
            const size_t r = (size_t)a * cells + c;
            grid[2 * r] = (float)(c % w);
            grid[2 * r + 1] = (float)(c / w);
            anchor[2 * r] = h->anchor_px[2 * a];
            anchor[2 * r + 1] = h->anchor_px[2 * a + 1];
        }
    onnx_initializer(g, grid_name, ONNX_FLOAT, 3, dims, grid);
    onnx_initializer(g, anchor_name, ONNX_FLOAT, 3, dims, anchor);
    free(grid);
    free(anchor);
    return CDL_OK;
}

/* boxes = [N][anchors h w][4] centre and size in input pixels, scores = [N][..][classes]:
 * centre = (logistic x, y + cell) x input size / grid size, size = exp(w, h) x anchor. */
static int head_decode(OnnxGraph *g, const Net *net, const Head *h, const char *boxes,
                       const char *scores, Error *e)
{
    const Layer *l = h->layer;
    char rows[ONNX_NAME_MAX], grid[ONNX_NAME_MAX], anchor[ONNX_NAME_MAX], cell[ONNX_NAME_MAX];
    onnx_name(rows, l, "decode_rows");
    onnx_name(grid, l, "decode_grid");
    onnx_name(anchor, l, "decode_anchor_size");
    onnx_name(cell, l, "decode_cell_size");
    head_rows(g, h, rows);
    const int st = head_constants(g, h, grid, anchor, e);
    if (st)
        return st;
    const float cell_px[] = {(float)net->in_shape.w / l->out_shape.w,
                             (float)net->in_shape.h / l->out_shape.h};
    onnx_initializer(g, cell, ONNX_FLOAT, 1, (const int64_t[]){2}, cell_px);

    const char *const part_names[] = {"decode_xy", "decode_wh", "decode_objectness",
                                      "decode_classes"};
    const int64_t bounds[] = {0, 2, 4, 5, h->classes + 5};
    char part[4][ONNX_NAME_MAX];
    for (int k = 0; k < 4; k++) {
        onnx_name(part[k], l, part_names[k]);
        onnx_slice(g, rows, 2, bounds[k], bounds[k + 1], part[k]);
    }
    char in_grid[ONNX_NAME_MAX], centre[ONNX_NAME_MAX], grown[ONNX_NAME_MAX], size[ONNX_NAME_MAX];
    onnx_name(in_grid, l, "decode_in_grid");
    onnx_name(centre, l, "decode_centre");
    onnx_name(grown, l, "decode_exp_wh");
    onnx_name(size, l, "decode_size");
    onnx_node(g, "Add", 2, (const char *[]){part[0], grid}, in_grid, 0, NULL);
    onnx_node(g, "Mul", 2, (const char *[]){in_grid, cell}, centre, 0, NULL);
    onnx_node(g, "Exp", 1, (const char *[]){part[1]}, grown, 0, NULL);
    onnx_node(g, "Mul", 2, (const char *[]){grown, anchor}, size, 0, NULL);
    const OnnxAttr axis = onnx_attr_int("axis", 2);
    onnx_node(g, "Concat", 2, (const char *[]){centre, size}, boxes, 1, &axis);
    onnx_node(g, "Mul", 2, (const char *[]){part[2], part[3]}, scores, 0, NULL);
    return CDL_OK;
}

/* The boxes and scores of every head, concatenated along the box axis. */
static int decoded_outputs(const Net *net, OnnxGraph *g, const Head *heads, int n, Error *e)
{
    char boxes[MAX_HEADS][ONNX_NAME_MAX], scores[MAX_HEADS][ONNX_NAME_MAX];
    const char *box_in[MAX_HEADS], *score_in[MAX_HEADS];
    int64_t total = 0;
    for (int k = 0; k < n; k++) {
        onnx_name(boxes[k], heads[k].layer, "decode_boxes");
        onnx_name(scores[k], heads[k].layer, "decode_scores");
        box_in[k] = boxes[k];
        score_in[k] = scores[k];
        const int st = head_decode(g, net, &heads[k], boxes[k], scores[k], e);
        if (st)
            return st;
        total +=
            (int64_t)heads[k].anchors * heads[k].layer->out_shape.h * heads[k].layer->out_shape.w;
    }
    const OnnxAttr axis = onnx_attr_int("axis", 1);
    onnx_node(g, "Concat", n, box_in, "boxes", 1, &axis);
    onnx_node(g, "Concat", n, score_in, "scores", 1, &axis);
    onnx_graph_add_output(g, "boxes", 3, (const int64_t[]){0, total, 4});
    onnx_graph_add_output(g, "scores", 3, (const int64_t[]){0, total, heads[0].classes});
    return CDL_OK;
}

/* Each head's output under the name "<family><index>". */
static void raw_outputs(OnnxGraph *g, const Head *heads, int n)
{
    for (int k = 0; k < n; k++) {
        const Layer *l = heads[k].layer;
        char name[ONNX_NAME_MAX];
        snprintf(name, sizeof name, "%s%d", l->type->name, l->index);
        onnx_node(g, "Identity", 1, (const char *[]){g->layers[l->index].name}, name, 0, NULL);
        const int64_t dims[] = {0, l->out_shape.c, l->out_shape.h, l->out_shape.w};
        onnx_graph_add_output(g, name, 4, dims);
    }
}

int onnx_detector_outputs(const Net *net, OnnxGraph *g, int decode, Error *e)
{
    Head heads[MAX_HEADS];
    int n = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (!layer_is_detector(l))
            continue;
        if (n == MAX_HEADS)
            return error_set(e, CDL_EUSAGE, "more than %d [yolo] and [region] layers to export",
                             MAX_HEADS);
        heads[n] = head_of(l, net);
        if (heads[n].classes != heads[0].classes)
            return error_set(e, CDL_EUSAGE,
                             "layer %d [%s] has classes=%d, layer %d [%s] classes=%d: a "
                             "detector's layers must agree",
                             l->index, l->type->name, heads[n].classes, heads[0].layer->index,
                             heads[0].layer->type->name, heads[0].classes);
        n++;
    }
    if (!n)
        return decode ? error_set(e, CDL_EUSAGE,
                                  "--decode: the net has no [yolo] or [region] layer to decode")
                      : CDL_OK;
    if (decode)
        return decoded_outputs(net, g, heads, n, e);
    raw_outputs(g, heads, n);
    return CDL_OK;
}
