/* A convolution with several images per gemm (conv_set_images_per_gemm) against the same layer
 * image by image, on every convolution configuration the cfgs in cfg/ use (kernel, stride,
 * padding, groups, 1x1 direct, a "same" layer's flipped-weight input gradient, batch norm or
 * bias): the training forward, the input, weight and bias (or batch norm) gradients agree within
 * 1e-5 of the reference tensor's largest magnitude, in float32 and in precision=bf16, at 1 and 2
 * threads, on batches that leave a partial chunk; int8 weights' inference forward likewise.
 * The batched path is deterministic: the same run twice gives identical gradients. Batches
 * smaller than the threads (one image's work split over them) against 1 thread likewise. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu/conv.h"
#include "backend/cpu/net_quant.h"
#include "check.h"
#include "core/net.h"

#define TOL 1e-5

typedef struct ConvCase {
    int c, h, w; /* input */
    int filters;
    const char *size, *stride; /* one value, or height,width */
    int pad;
    const char *padding;
    int groups, bn;
    const char *from; /* the cfgs that use it */
} ConvCase;

static const ConvCase cases[] = {
    {3, 9, 7, 8, "3", "1", 1, "0", 1, 1, "resnet*_cifar, cifar_small: first layer"},
    {8, 4, 4, 8, "3", "1", 1, "0", 1, 1, "resnet*: 3x3 body on a 4x4 map"},
    {64, 2, 2, 64, "3", "1", 1, "0", 1, 1, "resnet*: 512x4x4 body scaled down (batches by itself)"},
    {8, 9, 7, 16, "3", "2", 1, "0", 1, 1, "resnet*: 3x3 stride 2"},
    {8, 9, 7, 16, "1", "2", 0, "0", 1, 1, "resnet*: 1x1 stride 2 projection"},
    {8, 7, 7, 4, "1", "1", 0, "0", 1, 1, "resnet50, mobilenetv2: 1x1 (direct)"},
    {3, 17, 15, 8, "7", "2", 1, "0", 1, 1, "resnet18/34/50: 7x7 stride 2 stem"},
    {8, 9, 7, 12, "3", "1", 1, "0", 2, 1, "grouped (tests' groups=2)"},
    {8, 9, 7, 8, "1", "1", 1, "0", 1, 1, "darknet19: size=1 pad=1 (padding 0)"},
    {3, 11, 9, 6, "5", "1", 1, "0", 1, 0, "lenet: 5x5 pad=1 (padding 2), bias"},
    {3, 11, 9, 6, "5", "1", 0, "0", 1, 0, "lenet: 5x5 unpadded"},
    {8, 9, 7, 10, "1", "1", 1, "0", 1, 0, "darknet19, cifar_darknet: 1x1 classifier, bias"},
    {8, 9, 7, 8, "3", "1", 1, "0", 2, 0, "grouped, bias"},
    {8, 10, 8, 8, "3", "3", 0, "2", 1, 1, "odd: stride 3, padding 2, uneven windows"},
    {8, 9, 7, 8, "1,7", "1", 0, "0,3", 1, 1,
     "inception_v3: 1x7 (same: flipped-weight input gradient)"},
    {8, 9, 7, 8, "7,1", "1", 1, "0", 1, 1, "inception_v3: 7x1 pad=1 (padding 3,0)"},
    {8, 9, 7, 6, "3,1", "2,1", 0, "1,0", 1, 0, "non-square strides, bias"},
};

/* Batches with partial chunks of 4 images at 1 and 2 threads (10: 2 threads of 5). */
static const int batches[] = {5, 7, 10};

typedef struct Mode {
    const char *precision;
    int grads, quant;
} Mode;

static const Mode modes[] = {{"fp32", 1, 0}, {"bf16", 1, 0}, {"fp32", 0, 1}};

/* Layer 0 of k's case on batch, images per gemm, threads; trained (forward and backward on the
 * same random input and output gradient), or, int8, its inference forward. 0 on success. */
static int run_case(const ConvCase *k, const Mode *m, int batch, int images, Net *net)
{
    char text[1024];
    Error e = {0};
    snprintf(text, sizeof text,
             "[net]\nbatch=%d\nwidth=%d\nheight=%d\nchannels=%d\nprecision=%s\n"
             "[convolutional]\nfilters=%d\nsize=%s\nstride=%s\npad=%d\npadding=%s\ngroups=%d\n"
             "batch_normalize=%d\nactivation=leaky\n",
             batch, k->w, k->h, k->c, m->precision, k->filters, k->size, k->stride, k->pad,
             k->padding, k->groups, k->bn);
    int rc = net_build_from_text(net, text, "t.cfg", m->grads, 5, &e);
    if (!rc) {
        conv_set_images_per_gemm(&net->layers[0], images);
        if (m->quant) {
            unsigned char which[1] = {1};
            rc = net_quant_alloc(net, which, &e);
            if (!rc) {
                net_quant_from_float(net);
                net_quant_prepare(net);
            }
        }
    }
    if (!rc)
        rc = net_resize(net, batch, m->grads, &e);
    if (rc) {
        fprintf(stderr, "FAIL %s: %s\n", k->from, e.msg);
        check_failures++;
        return 1;
    }
    Rng rng;
    rng_seed(&rng, 77, 1);
    for (size_t i = 0; i < (size_t)batch * shape_size(net->in_shape); i++)
        net->input[i] = rng_normal(&rng);
    Layer *l = &net->layers[0];
    net->train = m->grads;
    net_forward(net);
    if (!m->grads)
        return 0;
    for (size_t i = 0; i < (size_t)batch * shape_size(l->out_shape); i++)
        l->delta[i] = rng_normal(&rng);
    net_zero_grads(net);
    net_backward(net);
    return 0;
}

/* max |got - want| <= TOL * max |want| (and want not all zero); exact with tol 0. */
static void check_close(const char *label, const char *what, const float *got, const float *want,
                        size_t n, double tol)
{
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)got[i] - want[i]));
        scale = fmax(scale, fabs((double)want[i]));
    }
    check_count++;
    if (!(diff <= tol * scale) || scale == 0) {
        check_failures++;
        fprintf(stderr, "FAIL %s: %s differs by %.3g (largest value %.3g)\n", label, what, diff,
                scale);
    }
}

/* got's output and gradients against want's within tol. */
static void compare_nets(const char *label, const Net *got, const Net *want, int grads, double tol)
{
    const Layer *lg = &got->layers[0], *lw = &want->layers[0];
    check_close(label, "output", lg->out, lw->out, (size_t)want->batch * shape_size(lw->out_shape),
                tol);
    if (!grads)
        return;
    check_close(label, "input gradient", got->input_delta, want->input_delta,
                (size_t)want->batch * shape_size(want->in_shape), tol);
    for (int p = 0; p < lw->n_params; p++) {
        if (!lw->params[p].trainable)
            continue;
        char what[64];
        snprintf(what, sizeof what, "%s gradient", lw->params[p].name);
        check_close(label, what, lg->params[p].grad, lw->params[p].grad, lw->params[p].count, tol);
    }
}

/* Images per gemm 4 and the shape's own choice against 1 (and 4 against itself, exactly). */
static void compare_case(const ConvCase *k, const Mode *m, int batch, int threads)
{
    if (m->quant && k->groups > 1)
        return; /* grouped layers keep float weights */
    omp_set_num_threads(threads);
    Net ref, four, again, chosen;
    if (run_case(k, m, batch, 1, &ref))
        return;
    char label[200];
    snprintf(label, sizeof label, "%s (%s%s, batch %d, %d threads)", k->from, m->precision,
             m->quant   ? " int8"
             : m->grads ? " training"
                        : "",
             batch, threads);
    if (!run_case(k, m, batch, 4, &four)) {
        compare_nets(label, &four, &ref, m->grads, TOL);
        if (!run_case(k, m, batch, 4, &again)) {
            compare_nets(label, &again, &four, m->grads, 0.0);
            net_free(&again);
        }
        net_free(&four);
    }
    if (!run_case(k, m, batch, 0, &chosen)) {
        compare_nets(label, &chosen, &ref, m->grads, TOL);
        net_free(&chosen);
    }
    net_free(&ref);
}

/* Layers of at least CONV_SPLIT_MIN multiply-adds an image (262144): at 2 threads a batch of 1
 * or 3 images shares each image's im2col and products over the threads (split_threads). */
static const ConvCase split_cases[] = {
    {32, 8, 8, 32, "3", "1", 1, "0", 1, 1, "split: 3x3 same (flipped-weight input gradient)"},
    {128, 2, 2, 128, "3", "1", 1, "0", 1, 1, "split: 3x3 of large weights on a 2x2 map"},
    {128, 7, 7, 64, "1", "1", 0, "0", 1, 1, "split: 1x1 direct"},
    {32, 9, 7, 64, "3", "2", 1, "0", 1, 1, "split: 3x3 stride 2 (col2im)"},
    {128, 13, 11, 128, "1", "2", 0, "0", 1, 1, "split: 1x1 stride 2 projection"},
    {3, 33, 31, 16, "7", "2", 1, "0", 1, 1, "split: 7x7 stride 2 stem (split by columns)"},
    {32, 8, 8, 64, "3", "1", 1, "0", 2, 0, "split: grouped, bias"},
    {3, 32, 32, 32, "3", "1", 1, "0", 1, 1,
     "cifar_small's first layer (backend/cpu/conv_small.h, not split)"},
    {64, 9, 8, 64, "1,7", "1", 0, "0,3", 1, 1, "split: 1x7 same (inception_v3)"},
    {64, 9, 8, 64, "3,1", "2,1", 0, "1,0", 1, 1, "split: 3x1 strides 2,1 (col2im)"},
};

/* A batch smaller than the threads, or uneven over them, at 2 threads (each image split over
 * both) against the same layer at 1 thread (image by image, whole gemms); deterministic: the
 * same run twice gives identical results. In bf16 within BF16_TOL: batch norm's sums differ in
 * the last bit between thread counts, which flips a few of delta's bf16 roundings (2^-8). */
#define BF16_TOL 1e-3
static void compare_split(const ConvCase *k, const Mode *m, int batch)
{
    Net ref, split, again;
    omp_set_num_threads(1);
    if (run_case(k, m, batch, 1, &ref))
        return;
    char label[200];
    snprintf(label, sizeof label, "%s (%s, batch %d, 2 threads against 1)", k->from, m->precision,
             batch);
    omp_set_num_threads(2);
    if (!run_case(k, m, batch, 1, &split)) {
        compare_nets(label, &split, &ref, m->grads, strcmp(m->precision, "bf16") ? TOL : BF16_TOL);
        if (!run_case(k, m, batch, 1, &again)) {
            compare_nets(label, &again, &split, m->grads, 0.0);
            net_free(&again);
        }
        net_free(&split);
    }
    net_free(&ref);
}

int main(void)
{
    for (size_t i = 0; i < sizeof split_cases / sizeof split_cases[0]; i++)
        for (size_t m = 0; m < 2; m++) /* fp32 and bf16 training */
            for (int batch = 1; batch <= 3; batch += 2)
                compare_split(&split_cases[i], &modes[m], batch);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
            for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++)
                for (int threads = 1; threads <= 2; threads++)
                    compare_case(&cases[i], &modes[m], batches[b], threads);
    return check_report("test_conv_batch");
}
