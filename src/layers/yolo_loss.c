/* [yolo]'s loss on the host (yolo_loss.h): the rules of layers/yolo_loss_rules.h in their order,
 * one sample after another; the GPU runs the same rules as kernels (cuda/kernels/yolo.cu).
 *
 *   in, out, Yolo.delta [batch][n_mask][classes + 5][h][w] */
#include "layers/yolo_loss.h"

#include <string.h>

#include "layers/yolo_loss_rules.h"

double yolo_loss(const Yolo *yo, const float *out, float *delta, const float *truth,
                 int truth_boxes, int batch, int w, int h)
{
    const size_t stride = (size_t)w * (size_t)h;
    const size_t sample = (size_t)yo->n_mask * (size_t)(yo->classes + 5) * stride;
    memset(delta, 0, (size_t)batch * sample * sizeof *delta);
    const int n_truth = truth_boxes < yo->max_boxes ? truth_boxes : yo->max_boxes;
    YoloSampleLoss total = {0, 0, 0, 0, 0};
    for (int b = 0; b < batch; b++) {
        const float *boxes = truth + (size_t)b * truth_boxes * TRUTH_FLOATS;
        YoloSampleLoss s;
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++)
                for (int n = 0; n < yo->n_mask; n++)
                    yolo_cell_predictions(yo, out, delta, boxes, n_truth, b * sample, w, h, n, j,
                                          i);
        yolo_sample_truths(yo, out, delta, boxes, n_truth, b * sample, w, h, &s);
        for (size_t c = 0; yo->iou_thresh < 1.0f && c < (size_t)yo->n_mask * stride; c++)
            yolo_cell_average(
                yo, delta + b * sample + c / stride * (sample / yo->n_mask) + c % stride, stride);
        for (int k = 0; k < yo->n_mask * (yo->classes + 5); k++)
            yolo_add_plane(yo, k, loss_plane_squares(delta + b * sample + k * stride, stride), &s);
        yolo_loss_add(&total, &s);
    }
    return yolo_cost(yo, &total);
}
