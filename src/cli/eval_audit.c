/* cdl eval --audit: the suspects listed and drawn (see eval_audit.h). */
#include "cli/eval_audit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/canvas.h"
#include "util/utf8.h"

enum { TILE = 160, CAPTION = 14, PER_ROW = 5, GAP = 4 };

static const char *const kind_names[] = {"class", "box", "missing"};

/* The name of class k (-1: "-"): the model's, else its number (in buf). */
static const char *name_of(const cdl_model *m, int k, char *buf, size_t size)
{
    const char *name = k >= 0 ? cdl_model_class_name(m, k) : NULL;
    if (!name)
        snprintf(buf, size, k >= 0 ? "%d" : "-", k);
    return name ? name : buf;
}

void audit_print(const cdl_detection_eval_result *r, const cdl_model *m, cJSON *o)
{
    char a[32], b[32], line[4][4096];
    cJSON *list = o ? cJSON_AddArrayToObject(o, "audit") : NULL;
    if (!o)
        printf("\nlabels most likely wrong (%d; a detection scoring %g or more accuses a label):\n"
               "  %4s %-8s %9s  %-6s %-6s %6s %5s  %s\n",
               r->n_suspects, r->thresh, "rank", "kind", "suspicion", "label", "found", "score",
               "IoU", "label file:line (image)");
    for (int i = 0; i < r->n_suspects; i++) {
        const cdl_label_suspect *s = &r->suspects[i];
        const char *label = name_of(m, s->label_class, a, sizeof a);
        const char *found = name_of(m, s->found_class, b, sizeof b);
        if (!o) {
            char at[16] = "";
            if (s->label_line > 0)
                snprintf(at, sizeof at, ":%d", s->label_line);
            printf("  %4d %-8s %9.3f  %-6s %-6s %6.3f %5.2f  %s%s (%s)\n", i + 1,
                   kind_names[s->kind], s->suspicion, utf8_escape_line(label, line[0], 4096),
                   utf8_escape_line(found, line[1], 4096), s->score, s->iou,
                   utf8_escape_line(s->label_path, line[2], 4096), at,
                   utf8_escape_line(s->image_path, line[3], 4096));
            continue;
        }
        cJSON *item = cJSON_CreateObject();
        cJSON_AddNumberToObject(item, "rank", i + 1);
        cJSON_AddStringToObject(item, "kind", kind_names[s->kind]);
        cJSON_AddNumberToObject(item, "suspicion", s->suspicion);
        cJSON_AddStringToObject(item, "image", s->image_path);
        cJSON_AddStringToObject(item, "label_file", s->label_path);
        cJSON_AddNumberToObject(item, "line", s->label_line);
        cJSON_AddNumberToObject(item, "label_class", s->label_class);
        cJSON_AddNumberToObject(item, "found_class", s->found_class);
        cJSON_AddNumberToObject(item, "score", s->score);
        cJSON_AddNumberToObject(item, "iou", s->iou);
        cJSON_AddItemToArray(list, item);
    }
}

/* A box (centre, size as fractions) in pixels of an image w x h: x0, y0, x1, y1. */
static void box_pixels(const float b[4], int w, int h, double out[4])
{
    out[0] = (b[0] - b[2] / 2) * w;
    out[1] = (b[1] - b[3] / 2) * h;
    out[2] = (b[0] + b[2] / 2) * w;
    out[3] = (b[1] + b[3] / 2) * h;
}

/* Draws box (image pixels) onto the tile at (tx, ty) that shows the image region from (x0, y0)
 * at scale pixels per image pixel. */
static void draw_box(Canvas *c, const double box[4], double x0, double y0, double scale, int tx,
                     int ty, double dash, Rgb color)
{
    double xs[5], ys[5];
    const double l = tx + (box[0] - x0) * scale, t = ty + (box[1] - y0) * scale;
    const double r = tx + (box[2] - x0) * scale, bt = ty + (box[3] - y0) * scale;
    const double px[] = {l, r, r, l, l}, py[] = {t, t, bt, bt, t};
    for (int k = 0; k < 5; k++) {
        xs[k] = fmin(fmax(px[k], tx), tx + TILE - 1);
        ys[k] = fmin(fmax(py[k], ty), ty + TILE - 1);
    }
    canvas_polyline(c, xs, ys, 5, 2, dash, color);
}

/* Tile i: the crop around suspect s of its image, nearest-neighbour scaled, boxes drawn. */
static int draw_tile(Canvas *c, const cdl_label_suspect *s, int i, Error *e)
{
    float *pixels;
    int ch, h, w;
    int st = cdl_read_image(s->image_path, &pixels, &ch, &h, &w, e->msg, sizeof e->msg);
    if (st)
        return e->code = st;
    double truth[4], found[4];
    box_pixels(s->truth_box, w, h, truth);
    box_pixels(s->found_box, w, h, found);
    const int has_truth = s->kind != CDL_SUSPECT_MISSING;
    double x0 = found[0], y0 = found[1], x1 = found[2], y1 = found[3];
    if (has_truth) {
        x0 = fmin(x0, truth[0]), y0 = fmin(y0, truth[1]);
        x1 = fmax(x1, truth[2]), y1 = fmax(y1, truth[3]);
    }
    const double margin = fmax(8, 0.25 * fmax(x1 - x0, y1 - y0));
    x0 = fmax(0, x0 - margin), y0 = fmax(0, y0 - margin);
    x1 = fmin(w, x1 + margin), y1 = fmin(h, y1 + margin);
    const double scale = fmin(TILE / fmax(1, x1 - x0), TILE / fmax(1, y1 - y0));
    const int tx = GAP + i % PER_ROW * (TILE + GAP);
    const int ty = GAP + i / PER_ROW * (TILE + CAPTION + GAP) + CAPTION;
    const size_t plane = (size_t)h * w, canvas_plane = (size_t)c->height * c->width;
    for (int v = 0; v < TILE; v++)
        for (int u = 0; u < TILE; u++) {
            const int x = (int)(x0 + (u + 0.5) / scale), y = (int)(y0 + (v + 0.5) / scale);
            if (x < 0 || y < 0 || x >= w || y >= h || x >= x1 || y >= y1)
                continue;
            for (int k = 0; k < 3; k++)
                c->rgb[k * canvas_plane + (size_t)(ty + v) * c->width + tx + u] =
                    pixels[(ch == 3 ? k : 0) * plane + (size_t)y * w + x];
        }
    free(pixels);
    if (has_truth)
        draw_box(c, truth, x0, y0, scale, tx, ty, 0, rgb_hex(0x3cb44b));
    draw_box(c, found, x0, y0, scale, tx, ty, s->kind == CDL_SUSPECT_MISSING ? 6 : 0,
             rgb_hex(0xe6194b));
    char caption[48];
    snprintf(caption, sizeof caption, "#%d %s %.2f", i + 1, kind_names[s->kind], s->score);
    canvas_text(c, tx, ty - CAPTION + 2, caption, 1, TEXT_RIGHT, rgb_hex(0xffffff));
    return CDL_OK;
}

int audit_sheet_write(const cdl_detection_eval_result *r, const char *path, Error *e)
{
    const int n = r->n_suspects, cols = n < PER_ROW ? (n ? n : 1) : PER_ROW;
    const int rows = n ? (n + PER_ROW - 1) / PER_ROW : 1;
    Canvas c;
    int st = canvas_init(&c, GAP + cols * (TILE + GAP), GAP + rows * (TILE + CAPTION + GAP),
                         rgb_hex(0x202020), e);
    for (int i = 0; !st && i < n; i++)
        st = draw_tile(&c, &r->suspects[i], i, e);
    st = st ? st : canvas_write_png(&c, path, e);
    canvas_free(&c);
    return st;
}
