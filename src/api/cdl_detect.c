/* Object detection in the public API (cdl.h): a detector's boxes for an image file, and images
 * read for drawing on. */
#include <stdlib.h>
#include <string.h>

#include "cdl_model.h"
#include "data/image.h"
#include "detect/net_detections.h"

int cdl_model_is_detector(const cdl_model *model)
{
    return net_last_detector(&model->net) != NULL;
}

int api_require_detector(const cdl_model *model, Error *e)
{
    if (cdl_model_is_detector(model))
        return CDL_OK;
    return error_set(e, CDL_EUSAGE, "%s: not a detector (it has no [yolo] or [region] layer)",
                     model->origin);
}

/* A detection and the order it was found in, for a sort that keeps that order among equals. */
typedef struct Ranked {
    cdl_detection d;
    int found;
} Ranked;

/* Descending score; equal scores in the order found. */
static int compare_ranked(const void *pa, const void *pb)
{
    const Ranked *a = pa, *b = pb;
    if (a->d.score != b->d.score)
        return a->d.score > b->d.score ? -1 : 1;
    return (a->found > b->found) - (a->found < b->found);
}

/* The detections of the image in the net's input (after a forward) as cdl_detections: one per
 * box and class whose score is above thresh, in pixels of the image, highest score first (equal
 * scores in decoding order, then by class). */
static int collect(const DetectionList *list, float thresh, int image_w, int image_h,
                   cdl_detection **dets, int *n, Error *e)
{
    int count = 0;
    for (size_t i = 0; i < (size_t)list->n * list->classes; i++)
        count += list->prob[i] > thresh;
    Ranked *ranked = malloc((size_t)(count ? count : 1) * sizeof *ranked);
    cdl_detection *out = malloc((size_t)(count ? count : 1) * sizeof *out);
    if (!ranked || !out) {
        free(ranked);
        free(out);
        return error_set(e, CDL_ERUNTIME, "out of memory holding %d detections", count);
    }
    int m = 0;
    for (int i = 0; i < list->n; i++)
        for (int k = 0; k < list->classes; k++) {
            const float score = list->prob[(size_t)i * list->classes + k];
            if (!(score > thresh))
                continue;
            const Box b = list->items[i].box;
            ranked[m] = (Ranked){{k, score, (b.x - b.w / 2) * image_w, (b.y - b.h / 2) * image_h,
                                  b.w * image_w, b.h * image_h},
                                 m};
            m++;
        }
    qsort(ranked, (size_t)count, sizeof *ranked, compare_ranked);
    for (int i = 0; i < count; i++)
        out[i] = ranked[i].d;
    free(ranked);
    *dets = out;
    *n = count;
    return CDL_OK;
}

/* Frames img into the net's input as eval does, runs the net (a detector) and collects its
 * boxes. */
static int detect_image(cdl_model *m, const Image *img, const char *path,
                        const cdl_detect_options *o, cdl_detection **dets, int *n, Error *e)
{
    Net *net = &m->net;
    const Layer *last = net_last_detector(net);
    AugmentConfig aug;
    if (net_augment(net, &aug, e) || api_model_reserve(m, 1, e))
        return e->code;
    if (detect_check_framing(&aug, e))
        return error_prefix(e, e->code, "%s: ", m->origin);
    net->batch = 1;
    if (augment_eval(&aug, img, &m->scratch, net_host_input(net), NULL))
        return error_set(e, CDL_ERUNTIME, "%s: out of memory preprocessing the image", path);
    net_commit_batch(net);
    net_forward(net);
    DetectionList list;
    detection_list_init(&list, detector_classes(last));
    const DetectFrame frame = {img->w, img->h, aug.letterbox};
    int st = net_detections(net, 0, &frame, o->thresh, o->nms, &list, e);
    st = st ? st : collect(&list, o->thresh, img->w, img->h, dets, n, e);
    detection_list_free(&list);
    return st;
}

int cdl_model_detect_file(cdl_model *model, const char *image_path,
                          const cdl_detect_options *options, cdl_detection **dets, int *n,
                          int *image_w, int *image_h, char *err, size_t err_size)
{
    Error e = {0};
    Image img;
    *dets = NULL;
    *n = 0;
    if (api_require_detector(model, &e) || image_load(image_path, &img, &e))
        return api_report(&e, err, err_size);
    *image_w = img.w;
    *image_h = img.h;
    const int st = detect_image(model, &img, image_path, options, dets, n, &e);
    image_free(&img);
    return st ? api_report(&e, err, err_size) : CDL_OK;
}

int cdl_read_image(const char *path, float **pixels, int *channels, int *height, int *width,
                   char *err, size_t err_size)
{
    Error e = {0};
    Image img;
    if (image_load(path, &img, &e))
        return api_report(&e, err, err_size);
    *pixels = img.data;
    *channels = img.c;
    *height = img.h;
    *width = img.w;
    return CDL_OK;
}
