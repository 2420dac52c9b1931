/* Evaluation of a detector in the public API (cdl.h): mAP and darknet's figures on the
 * validation set of a .data file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdl_model.h"
#include "data/boxes.h"
#include "data/data_config.h"
#include "detect/det_audit.h"
#include "detect/net_detections.h"
#include "train/evaluate_detection.h"

/* Moves m's figures into out. */
static int take_metrics(const DetMetrics *m, int images, float thresh,
                        cdl_detection_eval_result *out, Error *e)
{
    *out = (cdl_detection_eval_result){.images = images,
                                       .classes = m->classes,
                                       .points = m->points,
                                       .thresh = thresh,
                                       .map50 = m->map50,
                                       .map50_95 = m->map50_95,
                                       .truths = m->truths,
                                       .tp = m->tp,
                                       .fp = m->fp,
                                       .fn = m->fn,
                                       .precision = m->precision,
                                       .recall = m->recall,
                                       .f1 = m->f1,
                                       .avg_iou = m->avg_iou};
    out->per_class = calloc((size_t)(m->classes ? m->classes : 1), sizeof *out->per_class);
    if (!out->per_class)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    for (int k = 0; k < m->classes; k++) {
        const DetClassMetrics *c = &m->per_class[k];
        double all = 0;
        for (int t = 0; t < DET_IOU_STEPS; t++)
            all += c->ap[t];
        out->per_class[k] = (cdl_detection_class_result){
            c->truths, c->ap[0], c->truths ? all / DET_IOU_STEPS : -1,
            c->tp,     c->fp,    c->tp + c->fp ? c->iou_sum / (c->tp + c->fp) : 0};
    }
    return CDL_OK;
}

/* The 1-based line of the k-th box (0-based) of a label file, blank lines skipped as boxes_read
 * skips them; 0 when the file has fewer. */
static int box_line(const char *label_path, int k)
{
    FILE *f = fopen(label_path, "r");
    char text[4096];
    int line = 0, boxes = 0, found = 0;
    while (f && !found && fgets(text, sizeof text, f)) {
        line++;
        if (strspn(text, " \t\r\n") != strlen(text) && boxes++ == k)
            found = line;
    }
    if (f)
        fclose(f);
    return found;
}

static void copy_box(float out[4], Box b)
{
    out[0] = b.x;
    out[1] = b.y;
    out[2] = b.w;
    out[3] = b.h;
}

/* result->suspects = the first `limit` suspects of the audit of boxes, with their files. */
static int audit(const DetectionEvalBoxes *boxes, const SampleSource *src, float confident,
                 int limit, cdl_detection_eval_result *result, Error *e)
{
    AuditSuspect *s;
    int n;
    int st = det_audit(boxes->truths, boxes->n_truths, boxes->found, boxes->n_found, confident, &s,
                       &n, e);
    if (st)
        return st;
    n = n < limit ? n : limit;
    result->suspects = calloc((size_t)(n ? n : 1), sizeof *result->suspects);
    if (!result->suspects) {
        free(s);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    for (int r = 0; r < n; r++) {
        cdl_label_suspect *out = &result->suspects[r];
        const DetBox *d = &boxes->found[s[r].detection];
        const char *image = src->path ? src->path(src, s[r].image) : "";
        int found;
        char *label = boxes_label_path(image, &found);
        snprintf(out->image_path, sizeof out->image_path, "%s", image);
        snprintf(out->label_path, sizeof out->label_path, "%s", label ? label : "");
        out->kind = (cdl_suspect_kind)s[r].kind;
        out->suspicion = s[r].suspicion;
        out->found_class = d->class_id;
        out->score = d->score;
        out->iou = s[r].iou;
        copy_box(out->found_box, d->box);
        out->label_class = -1;
        if (s[r].truth >= 0) {
            int first = s[r].truth; /* the image's first truth: k counts from there */
            while (first > 0 && boxes->truths[first - 1].image == s[r].image)
                first--;
            out->label_class = boxes->truths[s[r].truth].class_id;
            out->label_line = label ? box_line(label, s[r].truth - first) : 0;
            copy_box(out->truth_box, boxes->truths[s[r].truth].box);
        }
        free(label);
    }
    result->n_suspects = n;
    free(s);
    return CDL_OK;
}

/* The detector on the validation set of the .data file at data. */
static int evaluate_on(cdl_model *m, const char *data, const cdl_detection_eval_options *o,
                       cdl_detection_eval_result *result, Error *e)
{
    DataConfig dc = {0};
    SampleSource train = {0}, valid = {0};
    const DetectionEvalOptions opt = {o->thresh, o->nms, o->points};
    const int classes = detector_classes(net_last_detector(&m->net));
    DetMetrics metrics = {0};
    DetectionEvalBoxes boxes = {0};
    int images = 0;
    int st = data_config_load(data, &dc, e);
    if (!st && m->meta.seed) /* a checkpoint's: the images its training held out */
        dc.split_seed = m->meta.seed;
    dc.boxes = 1;
    if (!st && dc.classes != classes)
        st = error_set(e, CDL_EUSAGE,
                       "%s: classes=%d, but the detector's [yolo] or [region] layers have %d", data,
                       dc.classes, classes);
    if (!st && (st = model_meta_check_names(&m->meta, dc.names, dc.n_names, m->origin, data, e)))
        error_append(e, st, "; evaluate it on the dataset it was trained on");
    st = st ? st : data_config_open_sources(&dc, &train, &valid, e);
    if (!st && valid.n == 0)
        st = error_set(e, CDL_EUSAGE, "%s: no validation set (set valid= or valid_split=)", data);
    st = st ? st : api_model_reserve(m, 1, e);
    st = st ? st
            : evaluate_detection(&m->net, &valid, &opt, &metrics, &images, o->audit ? &boxes : NULL,
                                 e);
    st = st ? st : take_metrics(&metrics, images, o->thresh, result, e);
    st = st || !o->audit ? st : audit(&boxes, &valid, o->thresh, o->audit, result, e);
    detection_eval_boxes_free(&boxes);
    det_metrics_free(&metrics);
    source_free(&train);
    source_free(&valid);
    data_config_free(&dc);
    return st;
}

int cdl_model_evaluate_detection(cdl_model *model, const char *data_path,
                                 const cdl_detection_eval_options *options,
                                 cdl_detection_eval_result *result, char *err, size_t err_size)
{
    Error e = {0};
    memset(result, 0, sizeof *result);
    if (api_require_detector(model, &e))
        return api_report(&e, err, err_size);
    char recorded[4096];
    model_meta_find_data(&model->meta, model->origin, recorded, sizeof recorded);
    const char *data = data_path ? data_path : recorded;
    if (!data[0])
        return error_set(&e, CDL_EUSAGE, "the model names no dataset; pass --data"),
               api_report(&e, err, err_size);
    return evaluate_on(model, data, options, result, &e) ? api_report(&e, err, err_size) : CDL_OK;
}

void cdl_detection_eval_result_free(cdl_detection_eval_result *result)
{
    free(result->per_class);
    free(result->suspects);
    memset(result, 0, sizeof *result);
}
