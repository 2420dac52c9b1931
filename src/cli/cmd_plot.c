/* cdl plot: training curves from `cdl train --log` JSON Lines files, drawn to a PNG: loss and
 * validation accuracy against the optimizer step, one colour per run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/canvas.h"
#include "cli/cli.h"
#include "cli/font.h"
#include "cli/plot_log.h"

static const OptSpec plot_opts[] = {
    {"-o", 1, 0, "output PNG file (required)"},
    {"--width", 1, 0, "image width in pixels (default 1200)"},
    {"--height", 1, 0, "image height in pixels (default 600)"},
    {"--title", 1, 0, "chart title (default \"Training curves\")"},
    {"--help", 0, 0, "show this help"},
};
#define N_PLOT_OPTS (int)(sizeof plot_opts / sizeof plot_opts[0])

/* ---- Chart geometry ---- */

typedef struct Box {
    int x0, y0, x1, y1;
} Box;

#define MAX_TICKS 40

/* A value range [lo, hi] mapped onto one side of a plot, linearly or logarithmically, with
 * tick values and their labels. */
typedef struct Axis {
    double lo, hi;
    int log;
    double tick[MAX_TICKS];
    char label[MAX_TICKS][24];
    int n_ticks;
} Axis;

/* Where v falls along the axis: 0 at lo, 1 at hi. */
static double axis_fraction(const Axis *a, double v)
{
    if (a->log)
        return (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
    return (v - a->lo) / (a->hi - a->lo);
}

static void add_tick(Axis *a, double v, int decimals)
{
    if (a->n_ticks == MAX_TICKS)
        return;
    a->tick[a->n_ticks] = v;
    snprintf(a->label[a->n_ticks++], sizeof a->label[0], "%.*f", decimals > 0 ? decimals : 0, v);
}

/* Heckbert's "nice numbers": the 1, 2 or 5 times a power of ten nearest to x (round) or
 * the smallest one at least x. */
static double nice_number(double x, int round)
{
    const double p = pow(10, floor(log10(x))), f = x / p;
    if (round)
        return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* A linear axis over [lo, hi] with about max_ticks (at least 3) nice ticks; round_ends widens the
 * range to the enclosing ticks. */
static Axis linear_axis(double lo, double hi, int max_ticks, int round_ends)
{
    if (!(hi > lo)) {
        const double pad = lo != 0 ? 0.05 * fabs(lo) : 1;
        lo -= pad;
        hi += pad;
    }
    const double range = round_ends ? nice_number(hi - lo, 0) : hi - lo;
    const double step = nice_number(range / (max_ticks > 3 ? max_ticks - 1 : 2), 1);
    Axis a = {.lo = round_ends ? floor(lo / step) * step : lo,
              .hi = round_ends ? ceil(hi / step) * step : hi};
    const int decimals = (int)-floor(log10(step) + 1e-9);
    for (double k = ceil(a.lo / step - 1e-6); k * step <= a.hi + 1e-6 * step; k++)
        add_tick(&a, fabs(k) < 0.5 ? 0 : k * step, decimals); /* no "-0.0" */
    return a;
}

/* A logarithmic axis over whole decades enclosing [lo, hi] (lo > 0), ticked at each decade,
 * and at 2 and 5 times it when the range spans at most two decades. */
static Axis log_axis(double lo, double hi)
{
    const int d0 = (int)floor(log10(lo) + 1e-9);
    int d1 = (int)ceil(log10(hi) - 1e-9);
    d1 = d1 > d0 ? d1 : d0 + 1;
    Axis a = {.lo = pow(10, d0), .hi = pow(10, d1), .log = 1};
    static const double mantissas[3] = {1, 2, 5};
    for (int d = d0; d <= d1; d++)
        for (int m = 0; m < (d1 - d0 <= 2 && d < d1 ? 3 : 1); m++)
            add_tick(&a, mantissas[m] * pow(10, d), -d);
    return a;
}

/* ---- Styles ---- */

#define MAX_RUNS 10
static const uint32_t run_colors[MAX_RUNS] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                              0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};

/* Line width, dash length and marker radius in font pixels (multiplied by the scale). */
static const struct SeriesStyle {
    const char *label;
    double width, dash, marker;
} series_styles[N_SERIES] = {
    [TRAIN_LOSS] = {"train loss", 0.75, 0, 0},
    [VALID_LOSS] = {"valid loss", 1, 4, 1.75},
    [VALID_ACCURACY] = {"valid accuracy", 1, 0, 1.75},
};

typedef struct Panel {
    const char *title, *y_title;
    SeriesKind kinds[2];
    int n_kinds;
    double y_scale; /* displayed value = logged value * y_scale */
    double y_max;   /* the axis never extends past this */
    int log_ok;     /* positive data spanning more than a decade gets a log axis */
} Panel;

static const Panel panels[2] = {
    {"Loss", "loss", {TRAIN_LOSS, VALID_LOSS}, 2, 1, INFINITY, 1},
    {"Validation accuracy", "accuracy (%)", {VALID_ACCURACY}, 1, 100, 100, 0},
};

/* Colours and sizes of one chart. */
typedef struct Chart {
    Canvas canvas;
    int s; /* font scale; every length is a multiple of it */
    Rgb ink, muted, grid, frame;
    const Run *runs;
    int n_runs;
} Chart;

/* Draws a series style sample (a short line, dashed and/or with a marker) in [x, x+len]. */
static void draw_style_sample(Chart *ch, int x, int y, int len, SeriesKind k, Rgb color)
{
    const struct SeriesStyle *st = &series_styles[k];
    const double xs[2] = {x, x + len}, ys[2] = {y, y};
    canvas_polyline(&ch->canvas, xs, ys, 2, st->width * ch->s, st->dash * ch->s, color);
    if (st->marker > 0)
        canvas_disc(&ch->canvas, x + len / 2.0, y, st->marker * ch->s, color);
}

/* Draws the series' points mapped into plot, breaking the line where the step goes back (a
 * log that several runs appended to). */
static void draw_series(Chart *ch, Box plot, const Axis *xa, const Axis *ya, const Series *s,
                        double y_scale, SeriesKind k, Rgb color)
{
    const struct SeriesStyle *st = &series_styles[k];
    double *px = malloc((size_t)(s->n ? s->n : 1) * sizeof *px);
    double *py = malloc((size_t)(s->n ? s->n : 1) * sizeof *py);
    if (!px || !py) {
        free(px);
        free(py);
        return;
    }
    for (int i = 0; i < s->n; i++) {
        px[i] = plot.x0 + axis_fraction(xa, s->x[i]) * (plot.x1 - plot.x0);
        py[i] = plot.y1 - axis_fraction(ya, s->y[i] * y_scale) * (plot.y1 - plot.y0);
    }
    for (int start = 0; start < s->n;) {
        int end = start + 1;
        while (end < s->n && s->x[end] > s->x[end - 1])
            end++;
        canvas_polyline(&ch->canvas, px + start, py + start, end - start, st->width * ch->s,
                        st->dash * ch->s, color);
        start = end;
    }
    const double marker = st->marker > 0 ? st->marker : s->n == 1 ? 2 : 0;
    for (int i = 0; marker > 0 && i < s->n; i++)
        canvas_disc(&ch->canvas, px[i], py[i], marker * ch->s, color);
    free(px);
    free(py);
}

/* The panel's y axis over its series in every run; *has_data is 0 when there are none. */
static Axis panel_axis(const Chart *ch, const Panel *p, int plot_h, int *has_data)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int r = 0; r < ch->n_runs; r++)
        for (int k = 0; k < p->n_kinds; k++) {
            const Series *s = &ch->runs[r].series[p->kinds[k]];
            for (int i = 0; i < s->n; i++) {
                lo = fmin(lo, s->y[i] * p->y_scale);
                hi = fmax(hi, s->y[i] * p->y_scale);
            }
        }
    *has_data = lo <= hi;
    if (!*has_data)
        return linear_axis(0, 1, 2, 1);
    if (p->log_ok && lo > 0 && hi > 10 * lo)
        return log_axis(lo, hi);
    Axis a = linear_axis(lo, hi, plot_h / (28 * ch->s) + 1, 1);
    if (a.hi > p->y_max && hi <= p->y_max)
        a = linear_axis(a.lo, p->y_max, plot_h / (28 * ch->s) + 1, 0);
    return a;
}

/* Draws one panel (title, axes, grid, ticks, curves) inside area. Returns 0, or -1 when area
 * is too small for a plot. */
static int draw_panel(Chart *ch, Box area, const Panel *p, const Axis *xa)
{
    const int s = ch->s, line_h = FONT_LINE_H * s, tick = 3 * s, gap = 3 * s;
    int has_data;
    const Axis ya = panel_axis(ch, p, area.y1 - area.y0 - 3 * line_h, &has_data);
    int label_w = 0;
    for (int i = 0; i < ya.n_ticks; i++) {
        const int w = canvas_text_width(ya.label[i], s);
        label_w = w > label_w ? w : label_w;
    }
    const Box plot = {area.x0 + line_h + gap + label_w + gap + tick, area.y0 + line_h + gap,
                      area.x1 - 2 * FONT_ADVANCE * s, area.y1 - tick - gap - 2 * line_h};
    if (plot.x1 - plot.x0 < 30 || plot.y1 - plot.y0 < 30)
        return -1;
    Canvas *c = &ch->canvas;
    const int cx = (plot.x0 + plot.x1) / 2, cy = (plot.y0 + plot.y1) / 2;
    canvas_text(c, cx - canvas_text_width(p->title, s) / 2, area.y0, p->title, s, TEXT_RIGHT,
                ch->ink);
    for (int i = 0; i < ya.n_ticks; i++) {
        const int y = (int)lround(plot.y1 - axis_fraction(&ya, ya.tick[i]) * (plot.y1 - plot.y0));
        canvas_fill_rect(c, plot.x0, y, plot.x1, y + 1, ch->grid);
        canvas_fill_rect(c, plot.x0 - tick, y, plot.x0, y + 1, ch->frame);
        canvas_text(c, plot.x0 - tick - gap - canvas_text_width(ya.label[i], s),
                    y - FONT_CAP_H * s / 2, ya.label[i], s, TEXT_RIGHT, ch->ink);
    }
    for (int i = 0; i < xa->n_ticks; i++) {
        const int x = (int)lround(plot.x0 + axis_fraction(xa, xa->tick[i]) * (plot.x1 - plot.x0));
        canvas_fill_rect(c, x, plot.y0, x + 1, plot.y1, ch->grid);
        canvas_fill_rect(c, x, plot.y1, x + 1, plot.y1 + tick, ch->frame);
        canvas_text(c, x - canvas_text_width(xa->label[i], s) / 2, plot.y1 + tick + gap,
                    xa->label[i], s, TEXT_RIGHT, ch->ink);
    }
    canvas_fill_rect(c, plot.x0, plot.y0, plot.x1 + 1, plot.y0 + 1, ch->frame);
    canvas_fill_rect(c, plot.x0, plot.y1, plot.x1 + 1, plot.y1 + 1, ch->frame);
    canvas_fill_rect(c, plot.x0, plot.y0, plot.x0 + 1, plot.y1 + 1, ch->frame);
    canvas_fill_rect(c, plot.x1, plot.y0, plot.x1 + 1, plot.y1 + 1, ch->frame);
    canvas_text(c, cx - canvas_text_width("step", s) / 2, plot.y1 + tick + gap + line_h, "step", s,
                TEXT_RIGHT, ch->ink);
    char y_title[64];
    snprintf(y_title, sizeof y_title, "%s%s", p->y_title, ya.log ? " (log scale)" : "");
    canvas_text(c, area.x0, cy + canvas_text_width(y_title, s) / 2, y_title, s, TEXT_UP, ch->ink);
    if (!has_data) {
        const char *none = "no data";
        canvas_text(c, cx - canvas_text_width(none, s) / 2, cy - FONT_CAP_H * s / 2, none, s,
                    TEXT_RIGHT, ch->muted);
        return 0;
    }
    for (int r = 0; r < ch->n_runs; r++)
        for (int k = 0; k < p->n_kinds; k++)
            draw_series(ch, plot, xa, &ya, &ch->runs[r].series[p->kinds[k]], p->y_scale,
                        p->kinds[k], rgb_hex(run_colors[r]));
    return 0;
}

/* Lays the legend out in rows from (x, y) within width: a row of series styles (in the ink
 * colour), then rows of run colours and names. Draws when draw is set; returns the rows. */
static int legend(Chart *ch, int x, int y, int width, int draw)
{
    const int s = ch->s, swatch = 4 * FONT_ADVANCE * s, gap = FONT_ADVANCE * s,
              space = 4 * FONT_ADVANCE * s;
    int rows = 1, cx = x;
    for (int i = 0; i < N_SERIES + ch->n_runs; i++) {
        const char *text = i < N_SERIES ? series_styles[i].label : ch->runs[i - N_SERIES].name;
        const int w = swatch + gap + canvas_text_width(text, s);
        if (cx > x && (cx + w > x + width || i == N_SERIES)) {
            rows++;
            cx = x;
        }
        if (draw) {
            const int ty = y + (rows - 1) * FONT_LINE_H * s, mid = ty + FONT_CAP_H * s / 2;
            if (i < N_SERIES)
                draw_style_sample(ch, cx, mid, swatch, (SeriesKind)i, ch->ink);
            else
                canvas_fill_rect(&ch->canvas, cx, mid - s, cx + swatch, mid + 2 * s,
                                 rgb_hex(run_colors[i - N_SERIES]));
            canvas_text(&ch->canvas, cx + swatch + gap, ty, text, s, TEXT_RIGHT, ch->ink);
        }
        cx += w + space;
    }
    return rows;
}

static int render(Chart *ch, int width, int height, const char *title, Error *e)
{
    int st = canvas_init(&ch->canvas, width, height, rgb_hex(0xffffff), e);
    if (st)
        return st;
    const int s = ch->s, pad = 3 * FONT_ADVANCE * s / 2, line_h = FONT_LINE_H * s;
    const int title_s = s + 1;
    canvas_text(&ch->canvas, (width - canvas_text_width(title, title_s)) / 2, pad, title, title_s,
                TEXT_RIGHT, ch->ink);
    const int rows = legend(ch, pad, 0, width - 2 * pad, 0);
    const int legend_y = height - pad - rows * line_h + (line_h - FONT_CAP_H * s) / 2;
    legend(ch, pad, legend_y, width - 2 * pad, 1);

    double max_step = 0;
    for (int r = 0; r < ch->n_runs; r++)
        for (int k = 0; k < N_SERIES; k++)
            for (int i = 0; i < ch->runs[r].series[k].n; i++)
                max_step = fmax(max_step, ch->runs[r].series[k].x[i]);
    const int top = pad + FONT_LINE_H * title_s + pad, bottom = legend_y - pad;
    const int panel_w = (width - 3 * pad) / 2;
    const Axis xa = linear_axis(0, max_step, panel_w / (10 * FONT_ADVANCE * s) + 1, 0);
    for (int i = 0; i < 2; i++) {
        const Box area = {pad + i * (panel_w + pad), top, pad + i * (panel_w + pad) + panel_w,
                          bottom};
        if (draw_panel(ch, area, &panels[i], &xa))
            return error_set(e, CDL_EUSAGE, "%dx%d is too small for this chart (%d runs)", width,
                             height, ch->n_runs);
    }
    return CDL_OK;
}

static int plot_runs(const Args *a, Error *e)
{
    const char *out = args_get(a, "-o");
    if (!out)
        return error_set(e, CDL_EUSAGE, "plot needs -o OUT.png; see --help");
    if (cli_check_output(a, out, FILE_KIND_PNG, e))
        return e->code;
    if (a->n_positional < 1)
        return error_set(e, CDL_EUSAGE, "plot needs at least one JSONL log; see --help");
    if (a->n_positional > MAX_RUNS)
        return error_set(e, CDL_EUSAGE, "plot draws at most %d runs (%d given)", MAX_RUNS,
                         a->n_positional);
    long width, height;
    int st = args_get_int(a, "--width", 1200, 320, CANVAS_MAX_SIDE, &width, e);
    st = st ? st : args_get_int(a, "--height", 600, 200, CANVAS_MAX_SIDE, &height, e);
    if (st)
        return st;
    const char *title = args_get(a, "--title");
    Run runs[MAX_RUNS];
    memset(runs, 0, sizeof runs);
    for (int i = 0; i < a->n_positional && !st; i++) {
        st = plot_log_read(a->positional[i], &runs[i], e);
        if (!st && runs[i].cut_line)
            fprintf(stderr,
                    "cdl: %s:%d: warning: the last record is cut (%ld bytes, no end of line); "
                    "plotting the %d records before it\n",
                    a->positional[i], runs[i].cut_line, runs[i].cut_bytes, runs[i].records_kept);
    }
    for (int i = 0; i < a->n_positional && !st; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(runs[i].name, runs[j].name)) {
                runs[i].name = a->positional[i];
                runs[j].name = a->positional[j];
            }
    const int scale = (int)fmin(fmin(width / 440, height / 240), 4);
    Chart ch = {.s = scale > 1 ? scale : 1,
                .ink = rgb_hex(0x222222),
                .muted = rgb_hex(0x888888),
                .grid = rgb_hex(0xe8e8e8),
                .frame = rgb_hex(0x555555),
                .runs = runs,
                .n_runs = a->n_positional};
    st = st ? st : render(&ch, (int)width, (int)height, title ? title : "Training curves", e);
    st = st ? st : canvas_write_png(&ch.canvas, out, e);
    canvas_free(&ch.canvas);
    for (int i = 0; i < a->n_positional; i++)
        plot_run_free(&runs[i]);
    return st;
}

int cmd_plot(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, plot_opts, N_PLOT_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("plot", "RUN.jsonl [MORE.jsonl ...] -o OUT.png [options]",
                        "Draws training curves from `cdl train --log` files: train and validation "
                        "loss, and validation\naccuracy, against the step; one colour per run.",
                        plot_opts, N_PLOT_OPTS);
        return 0;
    }
    return plot_runs(&a, &e) ? cli_fail(&e) : 0;
}
