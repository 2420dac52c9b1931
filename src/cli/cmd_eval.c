/* cdl eval: loss, top-1/top-5 accuracy, per-class accuracy and the confusion matrix of a
 * model on the validation set of a .data file; for a detector, mAP and per-class AP, TP, FP and
 * darknet's figures at a score threshold; for a text model, the validation loss, bits per
 * token, bits per byte and next-token accuracy. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/cdl.h"
#include "cli/cli.h"
#include "cli/eval_audit.h"
#include "util/utf8.h"

static const OptSpec eval_opts[] = {
    {"--data", 1, 0,
     "dataset: a .data file, a text file or an image folder DIR/ (default: the one the model "
     "trained on)"},
    {"--json", 0, 0, "print one JSON object instead of tables"},
    {"--threads", 1, 0,
     "CPU threads (default: OMP_NUM_THREADS, else the cores no other process is running on)"},
    CLI_PRECISION_OPT,
    CLI_GPU_OPT,
    {"--workers", 1, 0, "data loader threads (default 2; 0: load in the evaluating thread)"},
    {"--weights", 1, 0,
     "MODEL is then a CFG whose parameters come from FILE.safetensors (torchvision names), "
     "darknet .weights or a checkpoint's matching layers; needs --data"},
    {"--set", 1, 1, "with a CFG: override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--skip-bad", 0, 0, "replace unreadable images by the next readable one (counted)"},
    {"--thresh", 1, 0,
     "detectors: the score threshold of TP, FP, precision, recall, F1, average IoU (default "
     "0.25)"},
    {"--points", 1, 0,
     "detectors: AP as 101 (COCO), 11 (PASCAL VOC 2007) or 0 (area under the curve) recall "
     "points (default 101)"},
    {"--nms", 1, 0, "detectors: non-maximum suppression threshold; 0: none (default 0.45)"},
    {"--audit", 0, 0,
     "detectors: also list the labels most likely wrong (a class swapped, a box off, a box "
     "missing), most suspect first"},
    {"--audit-top", 1, 0, "detectors: how many suspects --audit lists (default 20, at most 400)"},
    {"--audit-sheet", 1, 0,
     "detectors: with --audit, draw the suspects' crops with truth (green) and detection (red) "
     "on one PNG"},
    {"--help", 0, 0, "show this help"},
};
#define N_EVAL_OPTS (int)(sizeof eval_opts / sizeof eval_opts[0])

static const char *class_name(const cdl_model *m, int c, char *buf, size_t size)
{
    const char *name = cdl_model_class_name(m, c);
    if (name)
        return name;
    snprintf(buf, size, "%d", c);
    return buf;
}

/* A text model's figures: text, or one JSON object. */
static void print_text_result(const cdl_eval_result *r, const char *model, const char *data,
                              int json)
{
    if (!json) {
        char bytes[48] = ""; /* paired text's predictions have no bytes of text */
        if (r->bits_per_byte > 0)
            snprintf(bytes, sizeof bytes, "  %.4f bits/byte", r->bits_per_byte);
        printf("%s on %s: %d tokens\nloss %.4f  %.4f bits/token%s  next-token accuracy %.2f%%  "
               "top-5 %.2f%%\n",
               model, data, r->samples, r->loss, r->loss / M_LN2, bytes, 100 * r->top1,
               100 * r->top5);
        if (r->decoded)
            printf("greedy decoding: %.2f%% of %d pairs exactly their target, BLEU %.2f, chrF "
                   "%.2f\n",
                   100 * r->exact_match, r->decoded, r->bleu, r->chrf);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "data", data);
    cJSON_AddNumberToObject(o, "tokens", r->samples);
    cJSON_AddNumberToObject(o, "loss", r->loss);
    cJSON_AddNumberToObject(o, "bits_per_token", r->loss / M_LN2);
    cJSON_AddNumberToObject(o, "bits_per_byte", r->bits_per_byte);
    cJSON_AddNumberToObject(o, "accuracy", r->top1);
    if (r->decoded) {
        cJSON_AddNumberToObject(o, "pairs_decoded", r->decoded);
        cJSON_AddNumberToObject(o, "exact_match", r->exact_match);
        cJSON_AddNumberToObject(o, "bleu", r->bleu);
        cJSON_AddNumberToObject(o, "chrf", r->chrf);
    }
    cJSON_AddNumberToObject(o, "top5", r->top5);
    char *text = cli_json_text(o);
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
}

static void print_json(const cdl_eval_result *r, const cdl_model *m, const char *model,
                       const char *data)
{
    cJSON *o = cJSON_CreateObject();
    char buf[32];
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddStringToObject(o, "data", data);
    cJSON_AddNumberToObject(o, "samples", r->samples);
    cJSON_AddNumberToObject(o, "skipped", r->skipped);
    cJSON_AddNumberToObject(o, "loss", r->loss);
    cJSON_AddNumberToObject(o, "accuracy", r->top1);
    cJSON_AddNumberToObject(o, "top5", r->top5);
    cJSON *per_class = cJSON_AddObjectToObject(o, "per_class_accuracy");
    cJSON *confusion = cJSON_AddArrayToObject(o, "confusion");
    for (int c = 0; c < r->classes; c++) {
        cJSON_AddNumberToObject(per_class, class_name(m, c, buf, sizeof buf),
                                cdl_eval_class_accuracy(r, c));
        cJSON_AddItemToArray(confusion,
                             cJSON_CreateIntArray(r->confusion + c * r->classes, r->classes));
    }
    char *text = cli_json_text(o);
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
}

static void print_tables(const cdl_eval_result *r, const cdl_model *m, const char *model,
                         const char *data)
{
    char buf[32], line[4096];
    printf("%s on %s: %d samples\n", model, data, r->samples);
    if (r->skipped)
        printf("skipped %d unreadable samples (replaced by the next readable ones)\n", r->skipped);
    printf("loss %.4f  top-1 %.2f%%", r->loss, 100 * r->top1);
    if (r->classes > 5)
        printf("  top-5 %.2f%%", 100 * r->top5);
    printf("\n\nper-class accuracy:\n");
    for (int c = 0; c < r->classes; c++)
        printf("  %-20s %6.2f%%\n",
               utf8_escape_line(class_name(m, c, buf, sizeof buf), line, sizeof line),
               100 * cdl_eval_class_accuracy(r, c));
    printf("\nconfusion matrix (rows: true class, columns: predicted):\n      ");
    for (int c = 0; c < r->classes; c++)
        printf(" %5d", c);
    printf("\n");
    for (int t = 0; t < r->classes; t++) {
        printf("  %3d ", t);
        for (int c = 0; c < r->classes; c++)
            printf(" %5d", r->confusion[t * r->classes + c]);
        printf("  %s\n", utf8_escape_line(class_name(m, t, buf, sizeof buf), line, sizeof line));
    }
}

/* A detector's figures: tables, or one JSON object. */
static void print_detection(const cdl_detection_eval_result *r, const cdl_model *m,
                            const char *model, const char *data, int json)
{
    char buf[32], line[4096];
    const char *how = r->points == 101  ? "COCO 101-point"
                      : r->points == 11 ? "VOC 11-point"
                                        : "area under the curve";
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "model", model);
        cJSON_AddStringToObject(o, "data", data);
        cJSON_AddNumberToObject(o, "images", r->images);
        cJSON_AddNumberToObject(o, "truths", r->truths);
        cJSON_AddNumberToObject(o, "points", r->points);
        cJSON_AddNumberToObject(o, "map50", r->map50);
        cJSON_AddNumberToObject(o, "map50_95", r->map50_95);
        cJSON_AddNumberToObject(o, "thresh", r->thresh);
        cJSON_AddNumberToObject(o, "tp", r->tp);
        cJSON_AddNumberToObject(o, "fp", r->fp);
        cJSON_AddNumberToObject(o, "fn", r->fn);
        cJSON_AddNumberToObject(o, "precision", r->precision);
        cJSON_AddNumberToObject(o, "recall", r->recall);
        cJSON_AddNumberToObject(o, "f1", r->f1);
        cJSON_AddNumberToObject(o, "avg_iou", r->avg_iou);
        if (r->suspects)
            audit_print(r, m, o);
        cJSON *list = cJSON_AddArrayToObject(o, "per_class");
        for (int k = 0; k < r->classes; k++) {
            const cdl_detection_class_result *c = &r->per_class[k];
            cJSON *item = cJSON_CreateObject();
            cJSON_AddStringToObject(item, "class", class_name(m, k, buf, sizeof buf));
            cJSON_AddNumberToObject(item, "index", k);
            cJSON_AddNumberToObject(item, "truths", c->truths);
            cJSON_AddNumberToObject(item, "ap50", c->ap50);
            cJSON_AddNumberToObject(item, "ap50_95", c->ap50_95);
            cJSON_AddNumberToObject(item, "tp", c->tp);
            cJSON_AddNumberToObject(item, "fp", c->fp);
            cJSON_AddNumberToObject(item, "avg_iou", c->avg_iou);
            cJSON_AddItemToArray(list, item);
        }
        char *text = cli_json_text(o);
        if (text)
            printf("%s\n", text);
        free(text);
        cJSON_Delete(o);
        return;
    }
    printf("%s on %s: %d images, %d boxes\n\n", model, data, r->images, r->truths);
    printf("  %-20s %8s %10s %7s %6s %6s %8s\n", "class", "AP@0.5", "AP@.5:.95", "truths", "TP",
           "FP", "avg IoU");
    for (int k = 0; k < r->classes; k++) {
        const cdl_detection_class_result *c = &r->per_class[k];
        printf("  %-20s ", utf8_escape_line(class_name(m, k, buf, sizeof buf), line, sizeof line));
        if (c->truths)
            printf("%7.2f%% %9.2f%% ", 100 * c->ap50, 100 * c->ap50_95);
        else
            printf("%8s %10s ", "-", "-");
        printf("%7d %6d %6d %7.2f%%\n", c->truths, c->tp, c->fp, 100 * c->avg_iou);
    }
    printf("\nat score > %g (IoU 0.5): TP %d, FP %d, FN %d, precision %.4f, recall %.4f, F1 "
           "%.4f, average IoU %.2f%%\n",
           r->thresh, r->tp, r->fp, r->fn, r->precision, r->recall, r->f1, 100 * r->avg_iou);
    printf("mAP@0.5 %.2f%%  mAP@0.5:0.95 %.2f%%  (%s AP)\n", 100 * r->map50, 100 * r->map50_95,
           how);
    if (r->suspects)
        audit_print(r, m, NULL);
}

/* eval of a detector: --thresh, --points, --nms read, then its figures printed. */
static int evaluate_detector(const Args *a, cdl_model *m, const char *model, const char *data,
                             Error *e)
{
    double thresh, nms;
    long points, top;
    const char *sheet = args_get(a, "--audit-sheet");
    const int audit = args_get(a, "--audit") != NULL;
    int st = args_get_float(a, "--thresh", 0.25, 0, 1, &thresh, e);
    st = st ? st : args_get_int(a, "--audit-top", 20, 1, 400, &top, e);
    if (!st && !audit && (sheet || args_get(a, "--audit-top")))
        st = error_set(e, CDL_EUSAGE, "--audit-top and --audit-sheet go with --audit");
    st = st || !sheet ? st : cli_check_output(a, sheet, FILE_KIND_PNG, e);
    st = st ? st : args_get_float(a, "--nms", 0.45, 0, 1, &nms, e);
    st = st ? st : args_get_int(a, "--points", 101, 0, 101, &points, e);
    if (!st && points != 0 && points != 11 && points != 101)
        st =
            error_set(e, CDL_EUSAGE, "bad value '%ld' for --points: expected 0, 11 or 101", points);
    if (!st && args_get(a, "--skip-bad"))
        st = error_set(e, CDL_EUSAGE,
                       "--skip-bad: a detector's evaluation stops at an "
                       "unreadable image");
    if (st)
        return st;
    const cdl_detection_eval_options o = {(float)thresh, (float)nms, (int)points,
                                          audit ? (int)top : 0};
    cdl_detection_eval_result r;
    st = e->code =
        cdl_model_evaluate_detection(m, args_get(a, "--data"), &o, &r, e->msg, sizeof e->msg);
    if (!st)
        print_detection(&r, m, model, data, args_get(a, "--json") != NULL);
    if (!st && sheet && !(st = audit_sheet_write(&r, sheet, e)))
        fprintf(stderr, "cdl: %s: %d suspects drawn\n", sheet, r.n_suspects);
    cdl_detection_eval_result_free(&r);
    return st;
}

/* A checkpoint; or, with --weights, the cfg model built with --set and loaded from it. */
static int open_model(const Args *a, const char *model, cdl_model **m, Error *e)
{
    const char *weights = args_get(a, "--weights");
    if (!weights) {
        if (a->n_repeats)
            return error_set(e, CDL_EUSAGE, "--set goes with a CFG and --weights");
        const cdl_open_options open = {.kind = CDL_OPEN_CHECKPOINT};
        return e->code = cdl_model_open(model, &open, m, e->msg, sizeof e->msg);
    }
    if (!args_get(a, "--data"))
        return error_set(e, CDL_EUSAGE, "a CFG with --weights names no dataset: pass --data");
    const cdl_open_options open = {
        .overrides = a->repeats, .n_overrides = a->n_repeats, .seed = 1, .kind = CDL_OPEN_CFG};
    int st = cdl_model_open(model, &open, m, e->msg, sizeof e->msg);
    if (st)
        return e->code = st;
    cli_print_warnings(cdl_model_warnings(*m));
    char note[1200];
    if ((st = cdl_model_load_weights(*m, weights, note, sizeof note, e->msg, sizeof e->msg))) {
        cdl_model_free(*m);
        return e->code = st;
    }
    fprintf(stderr, "cdl: --weights %s\n", note);
    return CDL_OK;
}

int cmd_eval(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, eval_opts, N_EVAL_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("eval", "[MODEL] [options]  |  CFG --weights FILE --data D [options]",
                        "Evaluates a checkpoint, or a cfg with the weights of --weights, on the "
                        "validation set of a .data file.",
                        eval_opts, N_EVAL_OPTS);
        return 0;
    }
    if (a.n_positional > 1)
        return error_set(&e, CDL_EUSAGE, "eval takes one MODEL; see --help"), cli_fail(&e);
    long threads;
    const char *precision;
    int gpu;
    if (args_get_int(&a, "--threads", 0, 0, 1024, &threads, &e) ||
        cli_get_precision(&a, &precision, &e) || cli_get_gpu(&a, &gpu, &e))
        return cli_fail(&e);
    cdl_set_threads((int)threads);
    const char *model = a.n_positional ? a.positional[0] : CDL_DEFAULT_MODEL;
    cdl_model *m;
    if ((e.code = open_model(&a, model, &m, &e)))
        return cli_fail(&e);
    if (cli_apply_precision(&a, m, &e) || cli_apply_gpu(&a, m, &e)) {
        cdl_model_free(m);
        return cli_fail(&e);
    }
    const char *data = args_get(&a, "--data");
    data = data ? data : cdl_model_data_path(m);
    const int json = args_get(&a, "--json") != NULL;
    cdl_eval_result r = {0};
    long workers = 0;
    int st = CDL_OK;
    if (!data[0])
        st = error_set(&e, CDL_EUSAGE, "%s: the model names no dataset; pass --data", model);
    else if (cdl_model_is_detector(m)) {
        st = evaluate_detector(&a, m, model, data, &e);
        cdl_model_free(m);
        return st ? cli_fail(&e) : 0;
    } else if (args_get(&a, "--audit") || args_get(&a, "--audit-sheet"))
        st = error_set(&e, CDL_EUSAGE,
                       "--audit: %s is not a detector (it has no [yolo] or [region] layer)", model);
    else if (!cdl_model_is_text(m))
        st = args_get_int(&a, "--workers", CDL_DEFAULT_WORKERS, 0, 256, &workers, &e);
    const cdl_data_options opt = {(int)workers, args_get(&a, "--skip-bad") != NULL};
    if (!st)
        st = e.code = cdl_model_evaluate(m, args_get(&a, "--data"), &opt, &r, e.msg, sizeof e.msg);
    if (!st && r.per_token)
        print_text_result(&r, model, data, json);
    else if (!st && json)
        print_json(&r, m, model, data);
    else if (!st)
        print_tables(&r, m, model, data);
    cdl_eval_result_free(&r);
    cdl_model_free(m);
    return st ? cli_fail(&e) : 0;
}
