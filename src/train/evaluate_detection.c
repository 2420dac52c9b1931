/* A detector over a dataset: detections and truths of every image, then their metrics. */
#include "train/evaluate_detection.h"

#include <stdlib.h>

#include "data/boxes.h"
#include "detect/net_detections.h"
#include "train/net_keys.h"

/* Appends box to items [*n] of *capacity, growing it. */
static int push_box(DetBox **items, int *n, int *capacity, DetBox box, Error *e)
{
    if (*n == *capacity) {
        const int grown = *capacity ? 2 * *capacity : 256;
        DetBox *more = realloc(*items, (size_t)grown * sizeof *more);
        if (!more)
            return error_set(e, CDL_ERUNTIME, "out of memory holding %d boxes", *n);
        *items = more;
        *capacity = grown;
    }
    (*items)[(*n)++] = box;
    return CDL_OK;
}

void detection_eval_boxes_free(DetectionEvalBoxes *b)
{
    free(b->truths);
    free(b->found);
    *b = (DetectionEvalBoxes){0};
}

/* Image i's truths (boxes relative to the image) into gts; truth: room for the list. */
static int add_truths(const SampleSource *src, int i, float *truth, DetectionEvalBoxes *b, Error *e)
{
    int st = src->read_boxes(src, i, truth, DETECTION_EVAL_MAX_TRUTHS, e);
    for (int t = 0; !st && t < DETECTION_EVAL_MAX_TRUTHS; t++) {
        const float *f = truth + (size_t)t * TRUTH_FLOATS;
        if (f[TRUTH_X] == 0)
            break;
        st = push_box(
            &b->truths, &b->n_truths, &b->truths_capacity,
            (DetBox){i, (int)f[TRUTH_CLASS], 0, {f[TRUTH_X], f[TRUTH_Y], f[TRUTH_W], f[TRUTH_H]}},
            e);
    }
    return st;
}

/* Image i detected: every class score left after NMS, as a detection of that class. */
static int add_detections(Net *net, const AugmentConfig *aug, AugmentScratch *scratch,
                          const Image *img, int i, const DetectionEvalOptions *opt,
                          DetectionList *list, DetectionEvalBoxes *b, Error *e)
{
    if (augment_eval(aug, img, scratch, net_host_input(net), NULL))
        return error_set(e, CDL_ERUNTIME, "out of memory preprocessing an image");
    net_commit_batch(net);
    net_forward(net);
    const DetectFrame frame = {img->w, img->h, aug->letterbox};
    int st = net_detections(net, 0, &frame, DETECTION_EVAL_MIN_SCORE, opt->nms, list, e);
    for (int d = 0; !st && d < list->n; d++)
        for (int k = 0; !st && k < list->classes; k++) {
            const float score = list->prob[(size_t)d * list->classes + k];
            if (score > 0)
                st = push_box(&b->found, &b->n_found, &b->found_capacity,
                              (DetBox){i, k, score, list->items[d].box}, e);
        }
    return st;
}

int evaluate_detection(Net *net, const SampleSource *src, const DetectionEvalOptions *opt,
                       DetMetrics *m, int *images, DetectionEvalBoxes *keep, Error *e)
{
    const Layer *last = net_last_detector(net);
    if (!last)
        return error_set(e, CDL_EUSAGE,
                         "the net has no [yolo] or [region] layer: it is not a detector");
    if (!src->read_boxes)
        return error_set(e, CDL_EUSAGE,
                         "the validation set has no truth boxes (a detector evaluates on a "
                         "darknet list with label files)");
    AugmentConfig aug;
    if (net_augment(net, &aug, e) || detect_check_framing(&aug, e))
        return e->code;
    const int classes = detector_classes(last), train = net->train, batch = net->batch;
    net->train = 0;
    net->batch = 1;
    DetectionEvalBoxes boxes = {0};
    DetectionList list;
    detection_list_init(&list, classes);
    AugmentScratch scratch = {0};
    float *truth = malloc((size_t)DETECTION_EVAL_MAX_TRUTHS * TRUTH_FLOATS * sizeof *truth);
    int st = truth ? CDL_OK : error_set(e, CDL_ERUNTIME, "out of memory for truth boxes");
    for (int i = 0; !st && i < src->n; i++) {
        Image img;
        int label;
        if ((st = src->read(src, i, &img, &label, e)))
            break;
        st = add_truths(src, i, truth, &boxes, e);
        st = st ? st : add_detections(net, &aug, &scratch, &img, i, opt, &list, &boxes, e);
        image_free(&img);
    }
    if (!st)
        st = det_metrics_compute(boxes.truths, boxes.n_truths, boxes.found, boxes.n_found, classes,
                                 opt->points, opt->thresh, m, e);
    *images = src->n;
    net->train = train;
    net->batch = batch;
    free(truth);
    if (keep)
        *keep = boxes;
    else
        detection_eval_boxes_free(&boxes);
    detection_list_free(&list);
    augment_scratch_free(&scratch);
    return st;
}
