/* backend/cpu/winograd.h against the im2col + gemm reference: the forward, input and weight
 * gradients of every 3x3 stride-1 convolution of the cfg/ files (channels, filters, map), batch 1
 * and 3 (and 2 on some, with the plans that split the filters over the threads), within 1e-5
 * relative (max abs difference / max abs value) on 1 and 2 threads; odd maps whose tiles overhang;
 * identical results run twice on the same threads; the forward with a bias, an added tensor and
 * each activation the output transform applies (an inference forward's folded batch norm and
 * fused residual sum). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/activation.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/im2col.h"
#include "backend/cpu/winograd.h"
#include "check.h"

#define REL_TOL 1e-5

/* One convolution's buffers: x [batch][c][h][w], w [k][c][3][3], delta [batch][k][h][w]. */
typedef struct Case {
    int batch, c, k, h, w;
    float *x, *wt, *wf, *delta, *y_ref, *y, *dx_ref, *dx, *dw_ref, *dw, *cols, *u, *scratch;
} Case;

/* y_ref = W * im2col(x_b) per image; dx_ref = dx0 + col2im(W^T delta_b); dw_ref = the sum of
 * delta_b im2col(x_b)^T. */
static void reference(Case *t)
{
    const int hw = t->h * t->w, kdim = t->c * 9;
    for (int b = 0; b < t->batch; b++) {
        im2col(t->x + (size_t)b * t->c * hw, t->c, t->h, t->w, window2d_square(3, 1, 1), t->cols,
               (size_t)hw);
        gemm(0, 0, t->k, hw, kdim, 1.0f, t->wt, kdim, t->cols, hw, 0.0f,
             t->y_ref + (size_t)b * t->k * hw, hw);
        gemm(0, 1, t->k, kdim, hw, 1.0f, t->delta + (size_t)b * t->k * hw, hw, t->cols, hw,
             b ? 1.0f : 0.0f, t->dw_ref, kdim);
        gemm(1, 0, kdim, hw, t->k, 1.0f, t->wt, kdim, t->delta + (size_t)b * t->k * hw, hw, 0.0f,
             t->cols, hw);
        col2im(t->cols, t->c, t->h, t->w, window2d_square(3, 1, 1), (size_t)hw,
               t->dx_ref + (size_t)b * t->c * hw);
    }
}

/* The forward, the input gradient as the convolution of delta with the flipped, transposed
 * weights added onto dx (which starts as dx_ref's starting values, dx0), and the weight gradient
 * added onto dw (which starts as the weights). */
static void run_winograd(Case *t, int threads, const float *dx0)
{
    const size_t in = (size_t)t->batch * t->c * t->h * t->w;
    const WinogradPlan fwd = winograd_plan(t->batch, t->c, t->k, t->h, t->w, threads);
    const WinogradPlan bwd = winograd_plan(t->batch, t->k, t->c, t->h, t->w, threads);
    CHECK(winograd_scratch_floats(&bwd) == winograd_scratch_floats(&fwd));
    omp_set_num_threads(threads);
    winograd_weights(t->wt, t->k, t->c, t->u);
    winograd_conv(&fwd, t->u, t->x, t->y, NULL, t->scratch);
    memcpy(t->dx, dx0, in * sizeof *t->dx);
    winograd_weights(t->wf, t->c, t->k, t->u);
    winograd_conv(&bwd, t->u, t->delta, t->dx, &(WinogradOutput){.add = t->dx}, t->scratch);
    memcpy(t->dw, t->wt, (size_t)t->k * t->c * 9 * sizeof *t->dw);
    winograd_weight_grads(&fwd, t->x, t->delta, t->dw, t->scratch);
}

/* The forward with what an inference forward's output transform applies (WinogradOutput): a bias
 * per filter, an added tensor (delta's values as a residual input) and each activation it
 * takes, against activation_forward of y_ref + bias + that tensor. */
static void check_output(Case *t, int threads)
{
    const size_t hw = (size_t)t->h * t->w, out = (size_t)t->batch * t->k * hw;
    float *bias = malloc(((size_t)t->k + out) * sizeof *bias), *want = bias + t->k;
    unsigned state = (unsigned)(t->k * 31 + t->c);
    check_fill_uniform(bias, (size_t)t->k, -1.0f, &state);
    const WinogradPlan plan = winograd_plan(t->batch, t->c, t->k, t->h, t->w, threads);
    omp_set_num_threads(threads);
    winograd_weights(t->wt, t->k, t->c, t->u);
    static const ActivationKind acts[] = {CDL_ACT_LINEAR, CDL_ACT_RELU, CDL_ACT_LEAKY,
                                          CDL_ACT_RELU6};
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
        CHECK(winograd_fuses_activation(acts[a]));
        /* the activations change no value by more than its input changes: the error relative to
         * the largest input */
        double largest = 0, worst = 0;
        for (size_t i = 0; i < out; i++) {
            want[i] = t->y_ref[i] + bias[i / hw % t->k] + t->delta[i];
            largest = fmax(largest, fabs(want[i]));
        }
        activation_forward(want, want, out, acts[a]);
        winograd_conv(&plan, t->u, t->x, t->y, &(WinogradOutput){bias, t->delta, acts[a]},
                      t->scratch);
        for (size_t i = 0; i < out; i++)
            worst = fmax(worst, fabs((double)t->y[i] - want[i]));
        const double e = worst / largest;
        if (e > REL_TOL)
            fprintf(stderr, "batch %d c %d k %d %dx%d: output with %s %.3g\n", t->batch, t->c, t->k,
                    t->h, t->w, activation_name(acts[a]), e);
        CHECK(e <= REL_TOL);
    }
    CHECK(!winograd_fuses_activation(CDL_ACT_LOGISTIC));
    free(bias);
}

static void check_case(int batch, int c, int k, int h, int w)
{
    Case t = {.batch = batch, .c = c, .k = k, .h = h, .w = w};
    const size_t in = (size_t)batch * c * h * w, out = (size_t)batch * k * h * w;
    const size_t weights = (size_t)k * c * 9, cols = (size_t)c * 9 * h * w;
    const WinogradPlan plan = winograd_plan(batch, c, k, h, w, 2);
    const size_t scratch = winograd_scratch_floats(&plan) > winograd_grad_scratch_floats(&plan)
                               ? winograd_scratch_floats(&plan)
                               : winograd_grad_scratch_floats(&plan);
    float *buf = malloc((4 * in + 3 * out + 4 * weights + (in > cols ? in : cols) +
                         winograd_weights_floats(k, c) + scratch) *
                        sizeof *buf);
    float *dx0 = buf;
    t.x = dx0 + in;
    t.delta = t.x + in;
    t.y_ref = t.delta + out;
    t.y = t.y_ref + out;
    t.wt = t.y + out;
    t.wf = t.wt + weights;
    t.cols = t.wf + weights;
    t.dx_ref = t.cols + (in > cols ? in : cols);
    t.dx = t.dx_ref + in;
    t.dw_ref = t.dx + in;
    t.dw = t.dw_ref + weights;
    t.u = t.dw + weights;
    t.scratch = t.u + winograd_weights_floats(k, c);
    unsigned state = (unsigned)(batch * 131 + c * 17 + k * 7 + h * 3 + w);
    check_fill_uniform(t.x, in, -1.0f, &state);
    check_fill_uniform(t.delta, out, -1.0f, &state);
    check_fill_uniform(t.wt, weights, -1.0f, &state);
    check_fill_uniform(dx0, in, -1.0f, &state);
    for (int ch = 0; ch < c; ch++) /* wf[c][k][2-i][2-j] = wt[k][c][i][j] */
        for (int f = 0; f < k; f++)
            for (int e = 0; e < 9; e++)
                t.wf[((size_t)ch * k + f) * 9 + 8 - e] = t.wt[((size_t)f * c + ch) * 9 + e];
    memcpy(t.dx_ref, dx0, in * sizeof *dx0);
    omp_set_num_threads(1);
    reference(&t);
    /* dx_ref holds dx0 + the gradient; the tolerance is relative to the gradient alone. */
    for (size_t i = 0; i < in; i++)
        t.dx_ref[i] -= dx0[i];
    check_output(&t, 2);

    for (int threads = 1; threads <= 2; threads++) {
        run_winograd(&t, threads, dx0);
        for (size_t i = 0; i < in; i++)
            t.dx[i] -= dx0[i];
        for (size_t i = 0; i < weights; i++)
            t.dw[i] -= t.wt[i];
        const double ey = check_rel_error(t.y, t.y_ref, out),
                     edx = check_rel_error(t.dx, t.dx_ref, in),
                     edw = check_rel_error(t.dw, t.dw_ref, weights);
        if (ey > REL_TOL || edx > REL_TOL || edw > REL_TOL)
            fprintf(stderr,
                    "batch %d c %d k %d %dx%d threads %d: forward %.3g, input grad %.3g, weight "
                    "grad %.3g\n",
                    batch, c, k, h, w, threads, ey, edx, edw);
        CHECK(ey <= REL_TOL);
        CHECK(edx <= REL_TOL);
        CHECK(edw <= REL_TOL);
    }
    /* Bit-identical run to run on the same threads (the last run had 2). */
    float *y2 = t.y_ref, *dx2 = t.dx_ref, *dw2 = t.dw_ref;
    memcpy(y2, t.y, out * sizeof *y2);
    memcpy(dx2, t.dx, in * sizeof *dx2);
    memcpy(dw2, t.dw, weights * sizeof *dw2);
    run_winograd(&t, 2, dx0);
    for (size_t i = 0; i < in; i++)
        t.dx[i] -= dx0[i];
    for (size_t i = 0; i < weights; i++)
        t.dw[i] -= t.wt[i];
    CHECK(!memcmp(y2, t.y, out * sizeof *y2));
    CHECK(!memcmp(dx2, t.dx, in * sizeof *dx2));
    CHECK(!memcmp(dw2, t.dw, weights * sizeof *dw2));
    free(buf);
}

/* (channels, filters, map) of the 3x3 stride-1 one-group convolutions of the cfg/ files (as `cdl
 * info` lists them). Maps above 56 are tested at 57x57 (odd, overhanging): the code has no path
 * that only a larger map takes, and the reference would take minutes on them. */
static const int cfg_layers[][4] = {
    {1, 16, 8, 8},      {1, 32, 28, 28},    {3, 32, 32, 32},      {3, 32, 224, 224},
    {3, 64, 32, 32},    {3, 64, 224, 224},  {3, 128, 28, 28},     {16, 32, 4, 4},
    {32, 64, 14, 14},   {32, 64, 16, 16},   {32, 64, 112, 112},   {64, 64, 14, 14},
    {64, 64, 32, 32},   {64, 64, 56, 56},   {64, 64, 224, 224},   {64, 128, 7, 7},
    {64, 128, 8, 8},    {64, 128, 56, 56},  {64, 128, 112, 112},  {128, 128, 7, 7},
    {128, 128, 16, 16}, {128, 128, 28, 28}, {128, 128, 112, 112}, {128, 256, 14, 14},
    {128, 256, 28, 28}, {128, 256, 56, 56}, {256, 256, 8, 8},     {256, 256, 14, 14},
    {256, 256, 56, 56}, {256, 512, 7, 7},   {256, 512, 14, 14},   {256, 512, 28, 28},
    {512, 512, 4, 4},   {512, 512, 7, 7},   {512, 512, 14, 14},   {512, 512, 28, 28},
    {512, 1024, 7, 7},
};

/* Batch 3 on layers up to this many channels x filters x pixels. Under ASan (some 40x slower
 * here) only layers up to CASE_MAX, batch 3 on the smaller ones: the same code paths, smaller
 * sizes; the release build's run checks them all. */
#ifdef __SANITIZE_ADDRESS__
#define CASE_MAX (128.0 * 128 * 28 * 28)
#define BATCH3_MAX (64.0 * 128 * 16 * 16)
#else
#define CASE_MAX HUGE_VAL
#define BATCH3_MAX (64.0 * 128 * 56 * 56)
#endif

int main(void)
{
    for (size_t i = 0; i < sizeof cfg_layers / sizeof *cfg_layers; i++) {
        const int *l = cfg_layers[i];
        const int h = l[2] > 56 ? 57 : l[2], w = l[3] > 56 ? 57 : l[3];
        if ((double)l[0] * l[1] * h * w > CASE_MAX)
            continue;
        check_case(1, l[0], l[1], h, w);
        if ((double)l[0] * l[1] * h * w <= BATCH3_MAX)
            check_case(3, l[0], l[1], h, w);
    }
    /* Batch 2, and the plans that split the filters over 2 threads (few chunks a thread: the
     * fused path, the path apart, filters not a multiple of a block) or do not (many chunks). */
    CHECK(winograd_plan(1, 512, 512, 7, 7, 2).parts == 2);
    CHECK(winograd_plan(16, 256, 256, 7, 7, 2).parts == 2);
    CHECK(winograd_plan(1, 64, 64, 56, 56, 2).parts == 2);
    CHECK(winograd_plan(3, 5, 7, 5, 5, 2).parts == 2);
    CHECK(winograd_plan(1, 512, 512, 7, 7, 1).parts == 1);
    CHECK(winograd_plan(64, 32, 64, 14, 14, 2).parts == 1);
    CHECK(winograd_plan(64, 64, 128, 8, 8, 2).parts == 1);
    static const int batch2[][4] = {
        {512, 512, 7, 7}, {256, 256, 14, 14}, {64, 64, 56, 56}, {16, 36, 9, 13}};
    for (size_t i = 0; i < sizeof batch2 / sizeof *batch2; i++)
        if ((double)batch2[i][0] * batch2[i][1] * batch2[i][2] * batch2[i][3] <= CASE_MAX)
            check_case(2, batch2[i][0], batch2[i][1], batch2[i][2], batch2[i][3]);
    /* fashion's and cifar_small's layers at their batch of 64 (the weight gradient sums over
     * every tile of the batch). */
    check_case(64, 32, 64, 14, 14);
    check_case(64, 64, 128, 7, 7);
    check_case(64, 32, 64, 16, 16);
    check_case(64, 64, 128, 8, 8);
    /* resnet18_cifar's last layers at batch 64: with AVX-512 their products go apart in chunks
     * of the most tiles (winograd_plan). */
    check_case(64, 512, 512, 4, 4);
    /* Odd and tiny maps, not square, one row or column, channels and filters apart. */
    check_case(3, 5, 7, 5, 5);
    check_case(3, 4, 6, 1, 1);
    check_case(2, 3, 2, 2, 3);
    check_case(3, 6, 5, 6, 5);
    check_case(1, 2, 3, 1, 9);
    check_case(2, 3, 4, 9, 1);
    check_case(3, 300, 70, 3, 3);
    /* Maps of 4 tiles a row (7 or 8 wide), whose input transform takes two tile rows at once:
     * an odd number of tile rows, and chunks (2 threads: 90 tiles) that end inside a tile row. */
    check_case(9, 16, 16, 9, 8);
    check_case(3, 16, 20, 5, 7);
    check_case(2, 24, 8, 1, 8);
    return check_report("test_winograd");
}
