/* [region]'s loss on the host (region_loss.h): the rules of layers/region_loss_rules.h in their
 * order, one sample after another; the GPU runs the same rules as kernels
 * (cuda/kernels/region.cu).
 *
 *   out, delta [batch][num][classes + 5][h][w] */
#include "layers/region_loss.h"

#include <string.h>

#include "layers/loss_squares.h"
#include "layers/region_loss_rules.h"

double region_loss(const Region *r, const float *out, float *delta, const float *truth,
                   int truth_boxes, int batch, int w, int h, uint64_t seen)
{
    const size_t sample = (size_t)r->num * (size_t)(r->classes + 5) * (size_t)w * (size_t)h;
    memset(delta, 0, (size_t)batch * sample * sizeof *delta);
    double cost = 0;
    for (int b = 0; b < batch; b++) {
        const float *x = out + b * sample, *boxes = truth + (size_t)b * truth_boxes * TRUTH_FLOATS;
        float *d = delta + b * sample;
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++)
                for (int n = 0; n < r->num; n++)
                    region_cell_predictions(r, x, d, boxes, truth_boxes, w, h,
                                            seen < REGION_PRIOR_IMAGES, n, j, i);
        region_sample_truths(r, x, d, boxes, truth_boxes, w, h);
        double squares = 0;
        for (int k = 0; k < r->num * (r->classes + 5); k++)
            squares += loss_plane_squares(d + (size_t)k * w * h, (size_t)w * h);
        cost += squares;
    }
    return cost;
}
