/* [convolutional]'s reference on the CPU: im2col + gemm (conv.c chooses it where no other engine
 * runs the layer; int8 weights' products in conv_int8.c).
 *
 *   in [batch][c][h][w] -> out [batch][filters][out_h][out_w],
 *   weights [filters][c/groups][size_h][size_w] (Conv.win)
 *
 * Each image and group is one gemm: out_g[filters/g][out_hw] = W_g * cols, with cols the
 * im2col unfolding of the group's input channels (the input itself for a 1x1, stride 1,
 * unpadded convolution). A few-channel stride-1 one-group convolution (a first layer: at most
 * CONV_SMALL_MAX_TAPS taps) runs its forward and weight gradient on backend/cpu/conv_small.h's
 * direct kernel instead, in float32.
 *
 * Small maps with large weights (CONV_WEIGHTS_PER_COLUMN) put a chunk of n images side by side
 * instead: their column matrices [kdim][n*out_hw] (a 1x1 direct layer gathers its input), one
 * gemm per group into the scratch, scattered back to NCHW; weight gradients gather delta the same
 * way and take the n images as one long inner dimension; input gradients are W^T times the
 * gathered delta, folded back (col2im) image by image. n reaches CONV_GEMM_COLUMNS columns, at
 * most a thread's share of the batch (conv_set_images_per_gemm sets it, for tests).
 *
 * Threading: when the batch spreads evenly over the threads, each thread takes whole images
 * (its own im2col slice of the scratch buffer and a single-threaded gemm, since OpenBLAS
 * runs serially inside a parallel region); otherwise images go one by one with threaded
 * im2col and gemm. Weight gradients of an image-parallel backward are summed per thread and
 * reduced in thread order, so results depend on the thread count but not on timing. */
#include <omp.h>
#include <string.h>

#include "backend/cpu/conv.h"
#include "backend/cpu/im2col.h"

/* Threads that accumulate weight gradients in private copies: each copy costs one weight
 * tensor, so beyond this many the images of a backward run one by one instead. */
#define CONV_MAX_GRAD_THREADS 4

/* A gemm packs all its weights for each call, and OpenBLAS runs short gemms of large weights
 * slowly (512x4x4 layers: half the rate of N >= 256): layers with at least this many weights (of
 * a group) per output position put several images side by side in one gemm, up to
 * CONV_GEMM_COLUMNS columns. Measured under load: 1.4x on 512x4x4 layers (147456 weights per
 * position); 256x8x8 (9216) and 128x7x7 (1500-3000) layers ran 5-15% slower batched. */
#define CONV_WEIGHTS_PER_COLUMN 16384
#define CONV_GEMM_COLUMNS 512

/* Multiply-adds an image from which split_threads shares one image's work over the threads. */
#define CONV_SPLIT_MIN 262144

/* The image's forward and weight gradient run backend/cpu/conv_small.h: planned so at the layer's
 * first resize, float32 weights and products. */
static int conv_small_runs(const Layer *l, const Conv *cv)
{
    const ConvCpu *cpu = cv->cpu;
    return cpu->ref.small && !l->quant && conv_precision(l) == GEMM_FP32;
}

void conv_im2col_plan(Layer *l, int batch)
{
    const Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w;
    const int kdim = cg * window2d_taps(cv->win),
              kdim_delta = cpu->same && cpu->input_grads ? fg * window2d_taps(cv->win) : 0;
    const int kd = cpu->direct ? cg : kdim > kdim_delta ? kdim : kdim_delta;
    cpu->ref.image_floats = (size_t)(kd + (fg > cg ? fg : cg)) * out_hw;
    const int short_gemm = (double)fg * kdim >= (double)CONV_WEIGHTS_PER_COLUMN * out_hw;
    int k = cpu->ref.images_asked ? cpu->ref.images_asked
            : short_gemm          ? (CONV_GEMM_COLUMNS + out_hw - 1) / out_hw
                                  : 1;
    k = cpu->depthwise ? 1 : k < batch ? k : batch;
    cpu->ref.images_per_gemm = k;
    const int nt = conv_image_threads(batch), share = (batch + nt - 1) / nt;
    k = k < share ? k : share;
    const size_t per_sample = ((size_t)nt * k * cpu->ref.image_floats + batch - 1) / batch;
    if (k > 1 && per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
}

/* Threads that share each image's work when the images go one by one (image_threads 1): every
 * thread unfolds some channels and takes a fixed block of each product's rows or columns, with
 * single-threaded gemms (split_gemm), instead of OpenBLAS threading each call; 1 for layers
 * below CONV_SPLIT_MIN multiply-adds an image, for int8 weights (qgemm_float threads itself),
 * depthwise layers (their loops are threaded over planes) and few-channel layers on
 * backend/cpu/conv_small.h (one thread an image). */
static int split_threads(const Layer *l, const Conv *cv, int batch)
{
    const ConvCpu *cpu = cv->cpu;
    const int nt = omp_get_max_threads();
    if (nt < 2 || conv_image_threads(batch) > 1 || l->quant || cpu->depthwise ||
        conv_small_runs(l, cv) || l->flops < 2.0 * CONV_SPLIT_MIN)
        return 1;
    return nt;
}

/* The start of part t of n of [0, count) in whole blocks of align (the last part ends at count). */
static int part_start(int count, int t, int n, int align)
{
    const long blocks = (count + align - 1) / align;
    const int start = (int)(blocks * t / n) * align;
    return start < count ? start : count;
}

/* C [m][n] = op(A) op(B) + beta * C (alpha 1, row-major as gemm); split (inside a parallel
 * region): only this thread's block of it, the rows of C shared over the team when m >= n, else
 * its columns, in blocks of 16, so each value of C has one owner whatever the timing. */
static void conv_gemm(int split, int ta, int tb, int m, int n, int k, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    const int t = split ? omp_get_thread_num() : 0, nt = split ? omp_get_num_threads() : 1;
    if (m >= n) {
        const int r0 = part_start(m, t, nt, 16), r1 = part_start(m, t + 1, nt, 16);
        gemm(ta, tb, r1 - r0, n, k, 1.0f, a + (ta ? (size_t)r0 : (size_t)r0 * lda), lda, b, ldb,
             beta, c + (size_t)r0 * ldc, ldc);
    } else {
        const int c0 = part_start(n, t, nt, 16), c1 = part_start(n, t + 1, nt, 16);
        gemm(ta, tb, m, c1 - c0, k, 1.0f, a, lda, b + (tb ? (size_t)c0 * ldb : (size_t)c0), ldb,
             beta, c + c0, ldc);
    }
}

/* This thread's channels [*c0, *c1) of c when split (inside a parallel region), else all. */
static void split_channels(int split, int c, int *c0, int *c1)
{
    const int t = split ? omp_get_thread_num() : 0, n = split ? omp_get_num_threads() : 1;
    *c0 = part_start(c, t, n, 1);
    *c1 = part_start(c, t + 1, n, 1);
}

/* When split: the team waits until every thread's share of the last step is written. */
static void split_barrier(int split)
{
    if (split) {
#pragma omp barrier
    }
}

/* cols [kdim][out_hw] = im2col of one group's input channels xg, rounded to bf16 in place in
 * precision bf16; only the rows of channels [c0, c1). */
static void unfold_input(const Layer *l, const Conv *cv, const float *xg, int c0, int c1,
                         float *cols)
{
    const Shape in = l->in_shape;
    const int out_hw = l->out_shape.h * l->out_shape.w, kk = window2d_taps(cv->win);
    float *rows = cols + (size_t)c0 * kk * out_hw;
    im2col(xg + (size_t)c0 * in.h * in.w, c1 - c0, in.h, in.w, cv->win, rows, (size_t)out_hw);
    gemm_operand(conv_precision(l), rows, (size_t)(c1 - c0) * kk * out_hw, rows);
}

/* out_b[filters][out_hw] for one image x_b [c][h][w]; cols is this image's scratch slice. With
 * int8 weights (one group) the product is qgemm_float's, the input on the grid xq: the column
 * matrix cols [kdim][out_hw] is its input by columns, out_b its output by columns. split (inside
 * a parallel region, float weights): this thread's share of the image (split_threads). */
static void forward_image(const Layer *l, const Conv *cv, const float *x_b, float *out_b,
                          float *cols, QuantParams xq, int split)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * window2d_taps(cv->win);
    const float *w = conv_weights(l, cpu);
    int c0, c1;
    split_channels(split, cg, &c0, &c1);
    if (conv_small_runs(l, cv)) {
        conv_small_forward(&cpu->ref.small_plan, x_b, w, out_b, cols);
        return;
    }
    for (int g = 0; g < cv->groups; g++) {
        const float *xg = x_b + (size_t)g * cg * in.h * in.w;
        if (!cpu->direct) {
            unfold_input(l, cv, xg, c0, c1, cols);
            split_barrier(split);
        }
        const float *x_cols = cpu->direct ? xg : cols;
        float *out_g = out_b + (size_t)g * fg * out_hw;
        if (l->quant) {
            conv_int8_product(l, xq, out_hw, x_cols, out_g);
        } else {
            conv_gemm(split, 0, 0, fg, out_hw, kdim, w + (size_t)g * fg * kdim, kdim, x_cols,
                      out_hw, 0.0f, out_g, out_hw);
        }
        if (!cpu->direct)
            split_barrier(split); /* the next group or image overwrites cols */
    }
}

/* dW[filters][kdim] = beta * dW + delta_b * cols_b^T for one image, group by group; split as
 * forward_image's. */
static void weight_grads_image(const Layer *l, const Conv *cv, const float *x_b,
                               const float *delta_b, float beta, float *dw, float *cols, int split)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * window2d_taps(cv->win);
    int c0, c1;
    split_channels(split, cg, &c0, &c1);
    if (conv_small_runs(l, cv)) {
        conv_small_weight_grads(&cpu->ref.small_plan, x_b, delta_b, beta, dw, cols);
        return;
    }
    for (int g = 0; g < cv->groups; g++) {
        const float *xg = x_b + (size_t)g * cg * in.h * in.w;
        if (!cpu->direct) {
            unfold_input(l, cv, xg, c0, c1, cols);
            split_barrier(split);
        }
        conv_gemm(split, 0, 1, fg, kdim, out_hw, delta_b + (size_t)g * fg * out_hw, out_hw,
                  cpu->direct ? xg : cols, out_hw, beta, dw + (size_t)g * fg * kdim, kdim);
        if (!cpu->direct)
            split_barrier(split);
    }
}

/* With the flipped weights (both axes: the taps' order reversed) the input gradient of a same
 * convolution is the convolution of delta padded by size-1-pad along each axis (which is pad). */
static Window2d flipped_window(Window2d w)
{
    return (Window2d){w.size_h, w.size_w, 1, 1, w.size_h - 1 - w.pad_h, w.size_w - 1 - w.pad_w};
}

void conv_flip_weights(const Layer *l)
{
    const Conv *cv = l->priv;
    const ConvCpu *cpu = cv->cpu;
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int kk = window2d_taps(cv->win);
    const float *w = conv_weights(l, cpu);
    for (int g = 0; g < cv->groups; g++) {
        const float *wg = w + (size_t)g * fg * cg * kk;
        float *fl = cpu->ref.w_flipped + (size_t)g * fg * cg * kk;
        for (int c = 0; c < cg; c++)
            for (int f = 0; f < fg; f++)
                for (int k = 0; k < kk; k++)
                    fl[((size_t)c * fg + f) * kk + kk - 1 - k] = wg[((size_t)f * cg + c) * kk + k];
    }
}

/* dx_b += W^T * delta_b folded back onto the image (col2im), group by group; a same
 * convolution instead adds the flipped weights times delta_b's own im2col columns. split as
 * forward_image's. */
static void input_grads_image(const Layer *l, const Conv *cv, const float *delta_b, float *dx_b,
                              float *cols, int split)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * window2d_taps(cv->win);
    const int kk = window2d_taps(cv->win);
    const float *w = conv_weights(l, cpu);
    if (cpu->same) {
        const int kdim_delta = fg * kk;
        int f0, f1;
        split_channels(split, fg, &f0, &f1);
        for (int g = 0; g < cv->groups; g++) {
            im2col(delta_b + ((size_t)g * fg + f0) * out_hw, f1 - f0, in.h, in.w,
                   flipped_window(cv->win), cols + (size_t)f0 * kk * out_hw, (size_t)out_hw);
            split_barrier(split);
            conv_gemm(split, 0, 0, cg, out_hw, kdim_delta,
                      cpu->ref.w_flipped + (size_t)g * cg * kdim_delta, kdim_delta, cols, out_hw,
                      1.0f, dx_b + (size_t)g * cg * out_hw, out_hw);
            split_barrier(split);
        }
        return;
    }
    int c0, c1;
    split_channels(split, cg, &c0, &c1);
    for (int g = 0; g < cv->groups; g++) {
        const float *wg = w + (size_t)g * fg * kdim, *dg = delta_b + (size_t)g * fg * out_hw;
        float *dxg = dx_b + (size_t)g * cg * in.h * in.w;
        if (cpu->direct) {
            conv_gemm(split, 1, 0, kdim, out_hw, fg, wg, kdim, dg, out_hw, 1.0f, dxg, out_hw);
        } else {
            conv_gemm(split, 1, 0, kdim, out_hw, fg, wg, kdim, dg, out_hw, 0.0f, cols, out_hw);
            split_barrier(split);
            col2im(cols + (size_t)c0 * kk * out_hw, c1 - c0, in.h, in.w, cv->win, (size_t)out_hw,
                   dxg + (size_t)c0 * in.h * in.w);
            split_barrier(split);
        }
    }
}

/* ---- several images per gemm: a chunk of n images side by side in one matrix, image j in
 * columns [j*out_hw, (j+1)*out_hw) of rows ld = n*out_hw apart ---- */

/* dst[r][j*hw + i] = src[j*stride + r*hw + i] for the n images of src, rows r < rows. */
static void pack_images(const float *src, size_t stride, int n, int rows, int hw, float *dst)
{
    const size_t ld = (size_t)n * hw;
    for (int j = 0; j < n; j++)
        for (int r = 0; r < rows; r++)
            memcpy(dst + r * ld + (size_t)j * hw, src + j * stride + (size_t)r * hw,
                   (size_t)hw * sizeof *dst);
}

/* The inverse of pack_images: dst[j*stride + r*hw + i] = (or, with add, +=) src[r][j*hw + i]. */
static void unpack_images(const float *src, int n, int rows, int hw, float *dst, size_t stride,
                          int add)
{
    const size_t ld = (size_t)n * hw;
    for (int j = 0; j < n; j++)
        for (int r = 0; r < rows; r++) {
            const float *restrict s = src + r * ld + (size_t)j * hw;
            float *restrict d = dst + j * stride + (size_t)r * hw;
            if (add)
                for (int i = 0; i < hw; i++)
                    d[i] += s[i];
            else
                memcpy(d, s, (size_t)hw * sizeof *d);
        }
}

/* cols [kdim][n*out_hw]: group g's column matrices of the n images from x (the input itself for a
 * direct convolution), rounded to bf16 in precision bf16 (a direct one's x is rounded already). */
static void unfold_images(const Layer *l, const Conv *cv, const float *x, int n, int g, float *cols)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, out_hw = l->out_shape.h * l->out_shape.w;
    const size_t in_size = shape_size(in), ld = (size_t)n * out_hw;
    const float *xg = x + (size_t)g * cg * in.h * in.w;
    if (cpu->direct) {
        pack_images(xg, in_size, n, cg, out_hw, cols);
        return;
    }
    for (int j = 0; j < n; j++)
        im2col(xg + j * in_size, cg, in.h, in.w, cv->win, cols + (size_t)j * out_hw, ld);
    gemm_operand(conv_precision(l), cols, (size_t)cg * window2d_taps(cv->win) * ld, cols);
}

/* The scratch of a chunk of n images: the columns, then the product's (or delta's) rows. */
static float *chunk_rows(const Conv *cv, const Layer *l, float *scratch, int n)
{
    const ConvCpu *cpu = cv->cpu;
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const size_t rows = (size_t)(fg > cg ? fg : cg) * l->out_shape.h * l->out_shape.w;
    return scratch + (cpu->ref.image_floats - rows) * n;
}

/* forward_image for the n images x [n][c][h][w] -> out [n][filters][out_h][out_w]. */
static void forward_images(const Layer *l, const Conv *cv, const float *x, float *out, int n,
                           float *scratch, QuantParams xq)
{
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * window2d_taps(cv->win);
    const int ld = n * out_hw;
    const float *w = conv_weights(l, cv->cpu);
    float *cols = scratch, *y = chunk_rows(cv, l, scratch, n);
    for (int g = 0; g < cv->groups; g++) {
        unfold_images(l, cv, x, n, g, cols);
        if (l->quant) {
            conv_int8_product(l, xq, ld, cols, y);
        } else {
            gemm(0, 0, fg, ld, kdim, 1.0f, w + (size_t)g * fg * kdim, kdim, cols, ld, 0.0f, y, ld);
        }
        unpack_images(y, n, fg, out_hw, out + (size_t)g * fg * out_hw, shape_size(l->out_shape), 0);
    }
}

/* weight_grads_image for the n images x and their delta: dW = beta * dW + delta * cols^T, the
 * n images' columns one long inner dimension. */
static void weight_grads_images(const Layer *l, const Conv *cv, const float *x, const float *delta,
                                int n, float beta, float *dw, float *scratch)
{
    const int cg = l->in_shape.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * window2d_taps(cv->win);
    const int ld = n * out_hw;
    float *cols = scratch, *d = chunk_rows(cv, l, scratch, n);
    for (int g = 0; g < cv->groups; g++) {
        unfold_images(l, cv, x, n, g, cols);
        pack_images(delta + (size_t)g * fg * out_hw, shape_size(l->out_shape), n, fg, out_hw, d);
        gemm(0, 1, fg, kdim, ld, 1.0f, d, ld, cols, ld, beta, dw + (size_t)g * fg * kdim, kdim);
    }
}

/* input_grads_image for the n images' delta, adding into their dx. */
static void input_grads_images(const Layer *l, const Conv *cv, const float *delta, float *dx, int n,
                               float *scratch)
{
    const ConvCpu *cpu = cv->cpu;
    const Shape in = l->in_shape;
    const int cg = in.c / cv->groups, fg = cv->filters / cv->groups;
    const int out_hw = l->out_shape.h * l->out_shape.w, kdim = cg * window2d_taps(cv->win);
    const int ld = n * out_hw, in_hw = in.h * in.w;
    const size_t in_size = shape_size(in), out_size = shape_size(l->out_shape);
    const float *w = conv_weights(l, cpu);
    float *cols = scratch, *rows = chunk_rows(cv, l, scratch, n);
    for (int g = 0; g < cv->groups; g++) {
        float *dxg = dx + (size_t)g * cg * in_hw;
        if (cpu->same) {
            const int kdim_delta = fg * window2d_taps(cv->win);
            for (int j = 0; j < n; j++)
                im2col(delta + j * out_size + (size_t)g * fg * out_hw, fg, in.h, in.w,
                       flipped_window(cv->win), cols + (size_t)j * out_hw, (size_t)ld);
            gemm(0, 0, cg, ld, kdim_delta, 1.0f, cpu->ref.w_flipped + (size_t)g * cg * kdim_delta,
                 kdim_delta, cols, ld, 0.0f, rows, ld);
            unpack_images(rows, n, cg, out_hw, dxg, in_size, 1);
            continue;
        }
        pack_images(delta + (size_t)g * fg * out_hw, out_size, n, fg, out_hw, rows);
        gemm(1, 0, kdim, ld, fg, 1.0f, w + (size_t)g * fg * kdim, kdim, rows, ld, 0.0f, cols, ld);
        if (cpu->direct)
            unpack_images(cols, n, cg, out_hw, dxg, in_size, 1);
        else
            for (int j = 0; j < n; j++)
                col2im(cols + (size_t)j * out_hw, cg, in.h, in.w, cv->win, (size_t)ld,
                       dxg + j * in_size);
    }
}

/* Images per gemm in a pass over the batch on nt image threads (1: image by image): resize's
 * choice, at most a thread's share of the batch and what the scratch holds for nt threads. */
static int chunk_images(const Conv *cv, const StepContext *ctx, int nt)
{
    const ConvCpu *cpu = cv->cpu;
    int k = cpu->ref.images_per_gemm, share = (ctx->batch + nt - 1) / nt;
    k = k < share ? k : share;
    if (k > 1 && (size_t)nt * k * cpu->ref.image_floats > ctx->exec->workspace_floats)
        k = (int)(ctx->exec->workspace_floats / ((size_t)nt * cpu->ref.image_floats));
    return k > 1 ? k : 1;
}

/* Inside a parallel region: this thread's images [*b0, *b1) of the batch (a fixed contiguous
 * range) and its scratch for chunks of k images. */
static float *thread_chunk(const Conv *cv, const StepContext *ctx, int k, int *b0, int *b1)
{
    const ConvCpu *cpu = cv->cpu;
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    *b0 = (int)((long)ctx->batch * t / n);
    *b1 = (int)((long)ctx->batch * (t + 1) / n);
    return ctx->exec->workspace + (size_t)t * k * cpu->ref.image_floats;
}

/* The forward of the batch x into out, in chunks of k images, on nt image threads. */
static void forward_chunks(Layer *l, const Conv *cv, const StepContext *ctx, const float *x,
                           float *out, int nt, int k, QuantParams xq)
{
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int b0, b1;
        float *scratch = thread_chunk(cv, ctx, k, &b0, &b1);
        for (int b = b0; b < b1; b += k)
            forward_images(l, cv, x + b * in_size, out + b * out_size, b1 - b < k ? b1 - b : k,
                           scratch, xq);
    }
}

/* The input gradient of the batch in chunks of k images, on nt image threads. */
static void input_grads_chunks(const Layer *l, const Conv *cv, const StepContext *ctx, float *dx,
                               int nt, int k)
{
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int b0, b1;
        float *scratch = thread_chunk(cv, ctx, k, &b0, &b1);
        for (int b = b0; b < b1; b += k)
            input_grads_images(l, cv, l->delta + b * out_size, dx + b * in_size,
                               b1 - b < k ? b1 - b : k, scratch);
    }
}

/* Weight gradients of the whole batch. Image-parallel: thread t takes a fixed contiguous
 * range of images and sums them into its own copy (thread 0 straight into the gradient);
 * the copies are then added in thread order. */
void conv_im2col_weight_grads(Layer *l, const StepContext *ctx)
{
    const Conv *cv = l->priv;
    const ConvCpu *cpu = cv->cpu;
    const int nt = conv_image_threads(ctx->batch);
    const int batch = ctx->batch;
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
    const size_t count = l->params[CONV_WEIGHTS].count;
    const float *x = conv_input(l, cpu);
    float *dw = l->params[CONV_WEIGHTS].grad;
    int threads = nt < cpu->ref.n_partial + 1 ? nt : cpu->ref.n_partial + 1;
    /* Chunks of k images per gemm (chunk_images), else image by image. */
    const int k = chunk_images(cv, ctx, threads);

    const int split = k == 1 ? split_threads(l, cv, batch) : 1;
    if (split > 1) {
#pragma omp parallel num_threads(split)
        for (int b = 0; b < batch; b++)
            weight_grads_image(l, cv, x + b * in_size, l->delta + b * out_size, 1.0f, dw,
                               ctx->exec->workspace, 1);
        return;
    }
    if (threads < 2) {
        for (int b = 0; b < batch; b += k)
            if (k > 1)
                weight_grads_images(l, cv, x + b * in_size, l->delta + b * out_size,
                                    batch - b < k ? batch - b : k, 1.0f, dw, ctx->exec->workspace);
            else
                weight_grads_image(l, cv, x + b * in_size, l->delta + b * out_size, 1.0f, dw,
                                   ctx->exec->workspace, 0);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), n = omp_get_num_threads();
        const int b0 = (int)((long)batch * t / n), b1 = (int)((long)batch * (t + 1) / n);
        float *acc = t ? cpu->ref.dw_partial + (size_t)(t - 1) * count : dw;
        if (t == 0)
            threads = n;
        if (t && b0 == b1)
            memset(acc, 0, count * sizeof *acc);
        for (int b = b0; b < b1; b += k)
            if (k > 1)
                weight_grads_images(l, cv, x + b * in_size, l->delta + b * out_size,
                                    b1 - b < k ? b1 - b : k, t == 0 || b > b0 ? 1.0f : 0.0f, acc,
                                    ctx->exec->workspace + (size_t)t * k * cpu->ref.image_floats);
            else
                weight_grads_image(l, cv, x + b * in_size, l->delta + b * out_size,
                                   t == 0 || b > b0 ? 1.0f : 0.0f, acc,
                                   ctx->exec->workspace + (size_t)b * cpu->ref.cols_floats, 0);
    }
#pragma omp parallel for simd schedule(static) if (parallel : count >= 16384)
    for (size_t i = 0; i < count; i++) {
        float sum = dw[i];
        for (int t = 1; t < threads; t++)
            sum += cpu->ref.dw_partial[(size_t)(t - 1) * count + i];
        dw[i] = sum;
    }
}

void conv_im2col_resize(Layer *l, int threads, LayerState *st)
{
    const Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    ConvIm2col *ref = &cpu->ref;
    /* Only a backward needs them; inference nets have no gradient slab. */
    const int backward = l->params[CONV_WEIGHTS].grad != NULL;
    ref->n_partial = backward && !cpu->depthwise
                         ? (threads < CONV_MAX_GRAD_THREADS ? threads : CONV_MAX_GRAD_THREADS) - 1
                         : 0;
    const size_t weights = l->params[CONV_WEIGHTS].count;
    ref->dw_partial = layer_work_floats(st, (size_t)ref->n_partial * weights);
    ref->w_flipped = layer_work_floats(st, cpu->same && backward ? weights : 0);
}

void conv_im2col_forward(Layer *l, const StepContext *ctx, const float *x, float *y)
{
    const Conv *cv = l->priv;
    const ConvCpu *cpu = cv->cpu;
    const int batch = ctx->batch;
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
    const int nt = conv_int8_threads(l, conv_image_threads(batch));
    const QuantParams xq = conv_int8_input(l, x, batch);
    const int k = chunk_images(cv, ctx, nt), split = split_threads(l, cv, batch);
    if (k > 1) {
        forward_chunks(l, cv, ctx, x, y, nt, k, xq);
    } else if (split > 1) {
#pragma omp parallel num_threads(split)
        for (int b = 0; b < batch; b++)
            forward_image(l, cv, x + b * in_size, y + b * out_size, ctx->exec->workspace, xq, 1);
    } else {
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
        for (int b = 0; b < batch; b++)
            forward_image(l, cv, x + b * in_size, y + b * out_size,
                          ctx->exec->workspace + (nt > 1 ? b : 0) * cpu->ref.cols_floats, xq, 0);
    }
}

void conv_im2col_input_grads(Layer *l, const StepContext *ctx, float *dx)
{
    const Conv *cv = l->priv;
    const ConvCpu *cpu = cv->cpu;
    const int batch = ctx->batch;
    const size_t in_size = shape_size(l->in_shape), out_size = shape_size(l->out_shape);
    const int nt = conv_image_threads(batch);
    const int k = chunk_images(cv, ctx, nt);
    if (k > 1) {
        input_grads_chunks(l, cv, ctx, dx, nt, k);
        return;
    }
    const int split = split_threads(l, cv, batch);
    if (split > 1) {
#pragma omp parallel num_threads(split)
        for (int b = 0; b < batch; b++)
            input_grads_image(l, cv, l->delta + b * out_size, dx + b * in_size,
                              ctx->exec->workspace, 1);
        return;
    }
#pragma omp parallel for schedule(static) if (nt > 1)
    for (int b = 0; b < batch; b++)
        input_grads_image(l, cv, l->delta + b * out_size, dx + b * in_size,
                          ctx->exec->workspace + (nt > 1 ? b : 0) * cpu->ref.cols_floats, 0);
}
