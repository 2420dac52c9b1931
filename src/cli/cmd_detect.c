/* cdl detect: finds objects in image files with a detector (a net with [yolo] layers) and prints
 * their boxes, classes and scores; -o draws them onto the image. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/cdl.h"
#include "cli/canvas.h"
#include "cli/cli.h"
#include "util/utf8.h"

static const OptSpec detect_opts[] = {
    {"--thresh", 1, 0, "report a box's class when its score is above this (default 0.25)"},
    {"--nms", 1, 0,
     "non-maximum suppression threshold, of the kind [yolo] nms_kind= says; 0: none (default "
     "0.45)"},
    {"--json", 0, 0, "print one JSON array instead of text"},
    {"-o", 1, 0, "write the image with its boxes and labels drawn (PNG; one IMAGE)"},
    {"--threads", 1, 0,
     "CPU threads (default: OMP_NUM_THREADS, else the cores no other process is running on)"},
    {"--set", 1, 1, "with a CFG: override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--weights", 1, 0,
     "with a CFG: load darknet .weights, FILE.safetensors or a checkpoint's matching layers"},
    {"--help", 0, 0, "show this help"},
};
#define N_DETECT_OPTS (int)(sizeof detect_opts / sizeof detect_opts[0])

/* The name of class k: the model's, else its number (in buf). */
static const char *class_name(const cdl_model *m, int k, char *buf, size_t size)
{
    const char *name = cdl_model_class_name(m, k);
    if (name)
        return name;
    snprintf(buf, size, "%d", k);
    return buf;
}

/* Prints one image's detections as text, or appends them to results. */
static void report(const cdl_model *m, const char *path, const cdl_detection *d, int n, int w,
                   int h, cJSON *results)
{
    char line[4096], number[16];
    if (!results) {
        printf("%s: %d object%s\n", utf8_escape_line(path, line, sizeof line), n,
               n == 1 ? "" : "s");
        for (int i = 0; i < n; i++)
            printf("  %s %.2f%%  x=%.1f y=%.1f w=%.1f h=%.1f\n",
                   utf8_escape_line(class_name(m, d[i].class_id, number, sizeof number), line,
                                    sizeof line),
                   100.0 * d[i].score, d[i].x, d[i].y, d[i].w, d[i].h);
        return;
    }
    cJSON *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "file", path);
    cJSON_AddNumberToObject(item, "width", w);
    cJSON_AddNumberToObject(item, "height", h);
    cJSON *list = cJSON_AddArrayToObject(item, "detections");
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "class", class_name(m, d[i].class_id, number, sizeof number));
        cJSON_AddNumberToObject(o, "index", d[i].class_id);
        cJSON_AddNumberToObject(o, "score", d[i].score);
        cJSON_AddNumberToObject(o, "x", d[i].x);
        cJSON_AddNumberToObject(o, "y", d[i].y);
        cJSON_AddNumberToObject(o, "w", d[i].w);
        cJSON_AddNumberToObject(o, "h", d[i].h);
        cJSON_AddItemToArray(list, o);
    }
    cJSON_AddItemToArray(results, item);
}

/* A colour per class, cycling through a palette that reads on photos. */
static Rgb class_color(int k)
{
    static const uint32_t palette[] = {0xe6194b, 0x3cb44b, 0xffe119, 0x4363d8, 0xf58231,
                                       0x911eb4, 0x46f0f0, 0xf032e6, 0xbcf60c, 0xfabebe};
    return rgb_hex(palette[k % (int)(sizeof palette / sizeof palette[0])]);
}

/* Draws each box (clamped to the image) with its label "NAME 87%" on a filled strip above it
 * (inside the box when there is no room above, moved left when it would leave the image), line
 * width darknet's 0.6% of the height. */
static void draw_detections(Canvas *c, const cdl_model *m, const cdl_detection *d, int n)
{
    const double width = fmax(1, round(c->height * 0.006));
    const int scale = c->height >= 600 ? 2 : 1;
    for (int i = n - 1; i >= 0; i--) { /* the highest score last, on top */
        const Rgb color = class_color(d[i].class_id);
        const double x0 = fmax(0, d[i].x), y0 = fmax(0, d[i].y);
        const double x1 = fmin(c->width, d[i].x + d[i].w), y1 = fmin(c->height, d[i].y + d[i].h);
        const double xs[5] = {x0, x1, x1, x0, x0}, ys[5] = {y0, y0, y1, y1, y0};
        canvas_polyline(c, xs, ys, 5, width, 0, color);
        char label[160], number[16];
        snprintf(label, sizeof label, "%s %.0f%%",
                 class_name(m, d[i].class_id, number, sizeof number), 100.0 * d[i].score);
        const int th = 11 * scale, tw = canvas_text_width(label, scale) + 2 * scale;
        const int top = y0 >= th ? (int)y0 - th : (int)y0;
        const int left = (int)fmax(0, fmin(x0, c->width - tw)); /* kept inside when it fits */
        canvas_fill_rect(c, left, top, left + tw, top + th, color);
        canvas_text(c, left + scale, top + scale, label, scale, TEXT_RIGHT, rgb_hex(0x000000));
    }
}

/* Writes the image at path with its detections drawn, as an RGB PNG at out. */
static int write_drawing(const cdl_model *m, const char *path, const cdl_detection *d, int n,
                         const char *out, Error *e)
{
    float *pixels;
    int ch, h, w;
    int st = cdl_read_image(path, &pixels, &ch, &h, &w, e->msg, sizeof e->msg);
    if (st)
        return e->code = st;
    Canvas c;
    if (!(st = canvas_init(&c, w, h, rgb_hex(0), e))) {
        const size_t plane = (size_t)h * w;
        for (int k = 0; k < 3; k++)
            for (size_t p = 0; p < plane; p++)
                c.rgb[k * plane + p] = pixels[(ch == 3 ? k : 0) * plane + p];
        draw_detections(&c, m, d, n);
        st = canvas_write_png(&c, out, e);
        canvas_free(&c);
    }
    free(pixels);
    return st;
}

/* Reads the options into o, threads and paths; checks the arguments. */
static int read_options(const Args *a, cdl_detect_options *o, long *threads, Error *e)
{
    double thresh, nms;
    int st = args_get_float(a, "--thresh", 0.25, 0, 1, &thresh, e);
    st = st ? st : args_get_float(a, "--nms", 0.45, 0, 1, &nms, e);
    st = st ? st : args_get_int(a, "--threads", 0, 0, 1024, threads, e);
    *o = (cdl_detect_options){(float)thresh, (float)nms};
    if (st)
        return st;
    const char *out = args_get(a, "-o");
    if (a->n_positional < 2)
        return error_set(e, CDL_EUSAGE, "detect needs a MODEL and at least one IMAGE; see --help");
    if (out && a->n_positional != 2)
        return error_set(e, CDL_EUSAGE, "-o draws one image: give one IMAGE with it");
    return out ? cli_check_output(a, out, FILE_KIND_PNG, e) : CDL_OK;
}

int cmd_detect(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, detect_opts, N_DETECT_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("detect", "MODEL IMAGE... [options]",
                        "Finds objects in PNG or JPEG files with a detector (a net with [yolo] "
                        "layers): per image its boxes' class, score and box in pixels (left x, "
                        "top y, width, height), highest score first.",
                        detect_opts, N_DETECT_OPTS);
        return 0;
    }
    cdl_detect_options o;
    long threads;
    if (read_options(&a, &o, &threads, &e))
        return cli_fail(&e);
    cdl_set_threads((int)threads);
    cdl_model *m;
    if (cli_open_model(&a, a.positional[0], 0, &m, &e))
        return cli_fail(&e);
    if (cli_load_weights(&a, a.positional[0], m, &e)) {
        cdl_model_free(m);
        return cli_fail(&e);
    }
    if (!cdl_model_is_detector(m)) { /* one line, before any image */
        cdl_model_free(m);
        return error_set(&e, CDL_EUSAGE,
                         "%s: not a detector (it has no [yolo] or [region] layer); classify images "
                         "with "
                         "cdl predict",
                         a.positional[0]),
               cli_fail(&e);
    }
    cJSON *results = args_get(&a, "--json") ? cJSON_CreateArray() : NULL;
    int status = CDL_OK;
    for (int i = 1; i < a.n_positional; i++) {
        const char *path = a.positional[i];
        cdl_detection *d;
        int n, w, h;
        int st = cdl_model_detect_file(m, path, &o, &d, &n, &w, &h, e.msg, sizeof e.msg);
        if (!st)
            report(m, path, d, n, w, h, results);
        if (!st && args_get(&a, "-o"))
            st = write_drawing(m, path, d, n, args_get(&a, "-o"), &e);
        if (st) {
            cli_print_message(e.msg);
            status = st;
        }
        free(d);
    }
    if (results) {
        char *text = cli_json_text(results);
        if (text)
            printf("%s\n", text);
        free(text);
        cJSON_Delete(results);
    }
    cdl_model_free(m);
    return status;
}
