/* backend/cpu/conv_small.h against the im2col + gemm reference: the forward and the weight gradient
 * (with beta 0 and 1) of few-channel stride-1 convolutions (the first layers of cfg/fashion.cfg
 * and cfg/cifar_small.cfg, odd maps and filter counts, sizes 1-5, padding 0-2) within 1e-5
 * relative (max abs difference / max abs value); plans refused beyond CONV_SMALL_MAX_TAPS. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/conv_small.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/im2col.h"
#include "check.h"

#define REL_TOL 1e-5

static void check_case(int c, int h, int w, int filters, int size, int pad)
{
    ConvSmall s;
    CHECK(conv_small_plan(&s, c, h, w, filters, size, pad));
    const int oh = window_out_extent(h, size, 1, pad), ow = window_out_extent(w, size, 1, pad);
    CHECK(s.oh == oh && s.ow == ow);
    const size_t in = (size_t)c * h * w, out = (size_t)filters * oh * ow;
    const size_t kdim = (size_t)c * size * size, weights = filters * kdim;
    float *x = malloc(in * sizeof *x), *wt = malloc(weights * sizeof *wt);
    float *delta = malloc(out * sizeof *delta), *cols = malloc(kdim * oh * ow * sizeof *cols);
    float *y = malloc(out * sizeof *y), *y_ref = malloc(out * sizeof *y_ref);
    float *dw = malloc(weights * sizeof *dw), *dw_ref = malloc(weights * sizeof *dw_ref);
    float *buf = malloc(conv_small_buf_floats(&s) * sizeof *buf);
    unsigned state = 17u + (unsigned)(c * 1000 + h * 10 + size);
    check_fill_uniform(x, in, -1.0f, &state);
    check_fill_uniform(wt, weights, -1.0f, &state);
    check_fill_uniform(delta, out, -1.0f, &state);
    check_fill_uniform(dw, weights, -1.0f, &state);
    memcpy(dw_ref, dw, weights * sizeof *dw);

    const int hw = oh * ow;
    im2col(x, c, h, w, window2d_square(size, 1, pad), cols, (size_t)hw);
    gemm(0, 0, filters, hw, (int)kdim, 1.0f, wt, (int)kdim, cols, hw, 0.0f, y_ref, hw);
    conv_small_forward(&s, x, wt, y, buf);
    CHECK(check_rel_error(y, y_ref, out) <= REL_TOL);

    /* beta 1 adds to the gradient; beta 0 overwrites it, even where it was NaN */
    gemm(0, 1, filters, (int)kdim, hw, 1.0f, delta, hw, cols, hw, 1.0f, dw_ref, (int)kdim);
    conv_small_weight_grads(&s, x, delta, 1.0f, dw, buf);
    CHECK(check_rel_error(dw, dw_ref, weights) <= REL_TOL);
    gemm(0, 1, filters, (int)kdim, hw, 1.0f, delta, hw, cols, hw, 0.0f, dw_ref, (int)kdim);
    for (size_t i = 0; i < weights; i++)
        dw[i] = NAN;
    conv_small_weight_grads(&s, x, delta, 0.0f, dw, buf);
    CHECK(check_rel_error(dw, dw_ref, weights) <= REL_TOL);

    free(x), free(wt), free(delta), free(cols), free(y), free(y_ref), free(dw), free(dw_ref);
    free(buf);
}

int main(void)
{
    check_case(1, 28, 28, 32, 3, 1); /* fashion's conv0 */
    check_case(3, 32, 32, 32, 3, 1); /* cifar_small's conv0 */
    check_case(3, 32, 32, 16, 3, 0);
    check_case(2, 9, 17, 7, 3, 1);
    check_case(1, 5, 5, 3, 5, 2);
    check_case(1, 3, 4, 5, 5, 2); /* a window larger than the map */
    check_case(3, 13, 11, 9, 1, 0);
    check_case(1, 40, 70, 6, 5, 2);
    check_case(2, 6, 8, 4, 4, 1);   /* even size, asymmetric output */
    check_case(3, 7, 13, 17, 3, 1); /* two blocks of 8 filters and one; 91 = 48 + 43 positions */
    ConvSmall s;
    CHECK(!conv_small_plan(&s, 4, 8, 8, 8, 3, 1)); /* 36 taps */
    CHECK(!conv_small_plan(&s, 1, 2, 2, 8, 5, 0)); /* empty output */
    return check_report("test_conv_small");
}
