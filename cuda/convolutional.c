/* [convolutional]'s GPU kernels (layers/convolutional.c has its meaning): the convolution on one
 * of two engines, [net] gpu_engine= (gpu.h), then the bias or batch norm (cuda/bias_norm.h) and
 * the activation:
 * - "cudnn" (the default of a GPU=1 build): cuDNN's convolutions (conv_cudnn.h), descriptors and
 *   algorithms made at resize and kept in Conv.gpu, the workspace the net's (scratch_per_sample
 *   raised to what the algorithms need), and the batch norm on cuDNN where it computes cdl's
 *   (cuda/bn_cudnn.h; "cudnn-bn-ref" where it stays on cdl's kernels);
 * - "ref" (the only one of a GPU=sim build): the own kernels below, im2col + cuBLAS products.
 * Every configuration the parse accepts (any size, stride, padding, square or not; groups,
 * depthwise among them) in every precision on both. In precision bf16, tf32 or fp16 both
 * multiply operands rounded as the CPU's are (cuDNN on tensor cores: conv_cudnn.h says where it
 * rounds once more); the layer's input and output are each float32 or 16-bit (Layer.in_storage,
 * Layer.storage). On the own engine, whose products round their operands
 * (gpu_gemm_batched_typed), in bf16
 * and fp16 im2col writes the column matrices, and the backward the output gradient's rows, in that
 * 16-bit format, the products' operands as they are (the weights are rounded into their copy; the
 * forward's rows and the backward's columns, products' outputs, stay float32); int8 weights are
 * refused at resize. The CPU's state (Conv.cpu) is not used here.
 *
 * The own engine:
 *
 *   in  [batch][c][h][w]   out [batch][filters][out_h][out_w]
 *   weights [filters][c/groups][size_h][size_w] (Conv.win)
 *
 * The batch goes in chunks of images whose column matrices fit CONV_GPU_CHUNK_FLOATS (at least
 * one image), the images of a chunk side by side (cuda/kernels/im2col.h), from the net's
 * workspace:
 *
 *   cols [c * size_h * size_w][images * out_hw]     the chunk's columns, group g's rows a block
 *   rows [filters][images * out_hw]             the product, or delta gathered the same way
 *
 * forward:  cols = im2col(x); rows_g = W_g cols_g for each group; out = rows back to NCHW
 * backward: rows = delta (NCHW to rows); dW_g += rows_g cols_g^T (cols of the forward's input
 *           made again); cols_g = W_g^T rows_g; dx = col2im(cols), written or added
 *           (layer_input_delta_beta)
 *
 * The groups' products of a chunk are one strided-batched cuBLAS call (a depthwise layer's too:
 * channels products of fg x 9 x columns), so a chunk takes five launches forward, six backward.
 *
 * Channels-last (Layer.channels_last or in_channels_last[0] set, core/net_channels_last.h; any
 * groups, depthwise among them), the products run over pixel rows instead, against the weights
 * copied KRSC per group (in the products' operand format) into the workspace; with cg = c / groups
 * and fg = filters / groups:
 *
 *   cols [images * out_hw][groups][size_h * size_w * cg]   im2col's pixel rows (a 1x1 stride-1
 *                                      unpadded layer's NHWC input is its own cols: no im2col)
 *   rows [images * out_hw][filters]    the output itself where it is NHWC; group g's columns
 *                                      [g * fg, (g + 1) * fg)
 *   wk, dwk [filters][size_h][size_w][cg]
 *
 * forward:  rows_g = cols_g wk_g^T (one strided-batched product over the groups); an NCHW output
 *           the transpose of rows
 * backward: rows = delta (itself, or transposed from NCHW); dwk_g = rows_g^T cols_g over the
 *           chunks, added transposed into the OIHW gradient; cols_g = rows_g wk_g;
 *           dx = col2im(cols)
 *
 * The sums are those of the NCHW path in another order: cuBLAS's over the same kdim (a group's
 * channels, taps), col2im's over the same taps in the same order. */
#include "layers/convolutional.h"

#include <stdlib.h>

#include "bias_norm.h"
#include "conv_cudnn.h"
#include "gpu.h"
#include "kernels/copy.h"
#include "kernels/im2col.h"
#include "layer_activation.h"

/* The most floats a chunk's cols and rows take together (unless one image needs more), 16 MiB:
 * a chunk's products then have millions of multiply-adds per output row block, enough to keep a
 * GPU busy, and the workspace stays small beside the activations. */
#define CONV_GPU_CHUNK_FLOATS ((size_t)1 << 22)

/* Floats of cols and rows that one image takes. */
static size_t image_floats(const Layer *l, const Conv *cv)
{
    const size_t out_hw = (size_t)l->out_shape.h * l->out_shape.w;
    return ((size_t)l->in_shape.c * window2d_taps(cv->win) + (size_t)cv->filters) * out_hw;
}

/* Images per chunk for a pass of batch images: as many as fit CONV_GPU_CHUNK_FLOATS, at least 1. */
static int chunk_images(const Layer *l, const Conv *cv, int batch)
{
    const size_t fit = CONV_GPU_CHUNK_FLOATS / image_floats(l, cv);
    return fit < 1 ? 1 : fit < (size_t)batch ? (int)fit : batch;
}

/* Both engines take NHWC for every layer they run, any groups (cuDNN: conv_cudnn.h's NHWC
 * descriptors, or NCHW ones with the tensors transposed where it has no NHWC algorithm); int8
 * layers run on neither. */
static ChannelsLastUse conv_takes_channels_last(const Layer *l, const ExecContext *exec)
{
    return exec->handles && !l->quant ? CHANNELS_LAST_EITHER : CHANNELS_LAST_NEVER;
}

static const char *conv_engine_gpu(const Layer *l, const ExecContext *exec)
{
    (void)l; /* every layer of the net runs on the net's engine */
    return gpu_on_cudnn(exec) ? "cudnn" : "ref";
}

/* 1 when the layer computes over pixel rows (channels-last, see the top comment). */
static int runs_channels_last(const Layer *l)
{
    return l->channels_last || l->in_channels_last[0];
}

#ifndef CDL_GPU_SIM
/* The layer's state on the GPU (Conv.gpu), made by the first resize on cuDNN. */
struct ConvGpu {
    ConvCudnn cudnn;
};

/* cuDNN's support matrix: bf16 convolutions (PSEUDO_BFLOAT16) need compute capability 8.0
 * (Ampere) or newer. fp16 and float32 run on every GPU CUDA 13 supports, and so does tf32: an
 * older GPU multiplies the operands, already rounded to tf32, on FMA kernels, the same numbers. */
static int cudnn_runs_precision(const Layer *l, Error *e)
{
    if (l->precision != GEMM_BF16)
        return CDL_OK;
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
        return error_set(e, CDL_ERUNTIME, "layer %d [convolutional]: no CUDA device to ask",
                         l->index);
    if (major >= 8)
        return CDL_OK;
    return error_set(e, CDL_EUSAGE,
                     "layer %d [convolutional]: cuDNN runs bf16 convolutions on compute "
                     "capability 8.0 and newer, this GPU is %d.%d (gpu_engine=ref runs it on "
                     "cdl's own kernels)",
                     l->index, major, minor);
}

/* cuDNN's layout, descriptors and algorithms for batch (once a batch, precision, layout and set
 * of passes: net_resize calls resize twice for each), and the scratch they need. */
static int conv_resize_cudnn(Layer *l, int batch, const LayerState *st, Error *e)
{
    Conv *cv = l->priv;
    if (!cv->gpu && !(cv->gpu = calloc(1, sizeof *cv->gpu)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    ConvCudnn *c = &cv->gpu->cudnn;
    const CudnnPasses needs = conv_cudnn_needs(l, st->input_grads);
    if (!conv_cudnn_planned(c, l, batch, needs)) {
        const int runs = cudnn_runs_precision(l, e);
        if (runs)
            return runs;
        const GpuHandles *h = st->exec->handles;
        const int chosen = conv_cudnn_choose(c, h->cudnn, l, batch, needs, e);
        if (chosen)
            return chosen;
    }
    const size_t floats = (conv_cudnn_scratch_bytes(c, l) + sizeof(float) - 1) / sizeof(float);
    l->scratch_per_sample = (floats + (size_t)batch - 1) / (size_t)batch;
    return CDL_OK;
}
#endif

static int conv_resize_gpu(Layer *l, int batch, LayerState *st, Error *e)
{
    Conv *cv = l->priv;
    if (l->quant)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [convolutional] with int8 weights has no GPU implementation",
                         l->index);
    l->engine = conv_engine_gpu(l, st->exec);
    if (gpu_on_cudnn(st->exec)) {
#ifndef CDL_GPU_SIM
        const int status = conv_resize_cudnn(l, batch, st, e);
        if (status)
            return status;
#endif
    } else {
        /* the chunk's cols and rows, and the products' operands: weights, cols or rows */
        const size_t chunk = (size_t)chunk_images(l, cv, batch) * image_floats(l, cv);
        const size_t weights = l->params[CONV_WEIGHTS].count;
        /* channels-last: wk and dwk after them */
        const size_t own = chunk + (runs_channels_last(l) ? 2 * weights : 0);
        gpu_reserve_scratch(l, batch, own, chunk > weights ? chunk : weights);
    }
    /* the batch norm on cuDNN too where it computes cdl's (cuda/bn_cudnn.h), after the
     * convolution's passes in the same workspace */
    const int status =
        gpu_bias_norm_resize(&cv->stage, l, batch, st, l->storage, gpu_on_cudnn(st->exec), e);
#ifndef CDL_GPU_SIM
    if (!status && gpu_on_cudnn(st->exec))
        l->engine = conv_cudnn_engine(
            &cv->gpu->cudnn, l, cv->stage.batch_normalize && !gpu_bias_norm_on_cudnn(&cv->stage));
#endif
    return status;
}

static void conv_release_gpu(Layer *l)
{
    Conv *cv = l->priv;
#ifndef CDL_GPU_SIM
    if (cv->gpu)
        conv_cudnn_release(&cv->gpu->cudnn);
#endif
    free(cv->gpu);
    cv->gpu = NULL;
    gpu_bias_norm_release(&cv->stage);
}

/* The shape of a chunk of images for the column kernels. */
static CudaConvShape chunk_shape(const Layer *l, const Conv *cv, int images)
{
    return (CudaConvShape){
        .images = images,
        .channels = l->in_shape.c,
        .h = l->in_shape.h,
        .w = l->in_shape.w,
        .out_h = l->out_shape.h,
        .out_w = l->out_shape.w,
        .size_h = cv->win.size_h,
        .size_w = cv->win.size_w,
        .stride_h = cv->win.stride_h,
        .stride_w = cv->win.stride_w,
        .pad_h = cv->win.pad_h,
        .pad_w = cv->win.pad_w,
        .groups = cv->groups,
        .x_nhwc = l->in_channels_last[0],
        .pixel_rows = runs_channels_last(l),
    };
}

/* The chunk's buffers in the workspace and the products' dimensions. */
typedef struct ConvChunk {
    CudaConvShape shape;
    float *cols, *rows;
    int groups, fg, kdim, columns; /* filters and kdim per group, columns of cols and rows */
    size_t w_stride, cols_stride, rows_stride; /* floats from one group's block to the next */
} ConvChunk;

static ConvChunk chunk_of(const Layer *l, const Conv *cv, const StepContext *ctx, int images)
{
    ConvChunk k = {.shape = chunk_shape(l, cv, images), .groups = cv->groups};
    k.fg = cv->filters / cv->groups;
    k.kdim = l->in_shape.c / cv->groups * window2d_taps(cv->win);
    k.columns = images * l->out_shape.h * l->out_shape.w;
    k.w_stride = (size_t)k.fg * k.kdim;
    k.cols_stride = (size_t)k.kdim * k.columns;
    k.rows_stride = (size_t)k.fg * k.columns;
    k.cols = ctx->exec->workspace;
    k.rows = k.cols + (size_t)cv->groups * k.cols_stride;
    return k;
}

/* The own engine's forward: the convolution into l->out. */
static void conv_forward_ref(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    const int batch = ctx->batch, per_chunk = chunk_images(l, cv, batch);
    const size_t in_image = shape_size(l->in_shape), out_image = shape_size(l->out_shape);
    const float *w = l->params[CONV_WEIGHTS].data;
    /* the columns in the products' 16-bit format in bf16 and fp16, else float32 */
    const ElemType x_type = l->in_storage[0], operand = precision_storage(l->precision);
    cudaStream_t stream = gpu_stream(ctx);
    for (int b0 = 0; b0 < batch; b0 += per_chunk) {
        const int images = batch - b0 < per_chunk ? batch - b0 : per_chunk;
        const ConvChunk k = chunk_of(l, cv, ctx, images);
        gpu_note(ctx,
                 cuda_im2col(k.cols, operand, elem_at(l->in[0], x_type, (size_t)b0 * in_image),
                             x_type, k.shape, stream),
                 "convolution im2col");
        /* rows_g [fg][columns] = W_g [fg][kdim] cols_g [kdim][columns] */
        gpu_gemm_batched_typed(ctx, l->precision, 0, 0, k.fg, k.columns, k.kdim, 1.0f, w, ELEM_F32,
                               k.kdim, (long long)k.w_stride, k.cols, operand, k.columns,
                               (long long)k.cols_stride, 0.0f, k.rows, ELEM_F32, k.columns,
                               (long long)k.rows_stride, k.groups);
        gpu_note(ctx,
                 cuda_image_rows(k.rows, ELEM_F32,
                                 elem_at(l->out, l->storage, (size_t)b0 * out_image), l->storage,
                                 images, cv->filters, l->out_shape.h * l->out_shape.w, 0, stream),
                 "convolution output");
    }
}

/* The channels-last products' buffers: a chunk's (ConvChunk's cols and rows, here [columns][kdim]
 * and [columns][filters]), and the KRSC weights and their gradient after the largest chunk's. */
typedef struct ConvRows {
    ConvChunk k;
    void *wk;
    float *dwk;
    const void *x;   /* the chunk's input: its cols (or the NHWC input itself, 1x1) */
    ElemType x_type; /* of x */
} ConvRows;

static ConvRows rows_of(const Layer *l, const Conv *cv, const StepContext *ctx, int images)
{
    const size_t chunk = (size_t)chunk_images(l, cv, ctx->batch) * image_floats(l, cv);
    const size_t weights = l->params[CONV_WEIGHTS].count;
    ConvRows r = {.k = chunk_of(l, cv, ctx, images)};
    r.wk = ctx->exec->workspace + chunk;
    r.dwk = ctx->exec->workspace + chunk + weights;
    return r;
}

/* The entries of a pixel row of cols, every group's: channels * size_h * size_w. */
static int pixel_row_length(const ConvChunk *k)
{
    return k->groups * k->kdim;
}

/* 1 when the layer's NHWC input is its own column matrix (a 1x1 stride-1 unpadded layer). */
static int input_is_cols(const Layer *l, const Conv *cv)
{
    const Window2d w = cv->win;
    return l->in_channels_last[0] && w.size_h == 1 && w.size_w == 1 && w.stride_h == 1 &&
           w.stride_w == 1 && w.pad_h == 0 && w.pad_w == 0;
}

/* r's x: the chunk from image b0 made into pixel rows (cols), or the input itself. */
static void chunk_cols(const Layer *l, const Conv *cv, const StepContext *ctx, ConvRows *r, int b0)
{
    const ElemType x_type = l->in_storage[0], operand = precision_storage(l->precision);
    const void *x = elem_at(l->in[0], x_type, (size_t)b0 * shape_size(l->in_shape));
    if (input_is_cols(l, cv)) {
        r->x = x;
        r->x_type = x_type;
        return;
    }
    gpu_note(ctx, cuda_im2col(r->k.cols, operand, x, x_type, r->k.shape, gpu_stream(ctx)),
             "convolution im2col (channels-last)");
    r->x = r->k.cols;
    r->x_type = operand;
}

/* wk [filters][size_h][size_w][c / groups] = the OIHW weights as KRSC (each group's block of
 * filters KRSC over the group's channels), in the products' operand format. */
static void weights_krsc(const Layer *l, const Conv *cv, const StepContext *ctx, void *wk)
{
    gpu_note(ctx,
             cuda_transpose(wk, precision_storage(l->precision), l->params[CONV_WEIGHTS].data,
                            ELEM_F32, cv->filters, l->in_shape.c / cv->groups,
                            window2d_taps(cv->win), 0, gpu_stream(ctx)),
             "convolution weights to KRSC");
}

/* The own engine's channels-last forward. */
static void conv_forward_rows(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    const int batch = ctx->batch, per_chunk = chunk_images(l, cv, batch);
    const int out_hw = l->out_shape.h * l->out_shape.w;
    const ElemType operand = precision_storage(l->precision);
    cudaStream_t stream = gpu_stream(ctx);
    for (int b0 = 0; b0 < batch; b0 += per_chunk) {
        const int images = batch - b0 < per_chunk ? batch - b0 : per_chunk;
        ConvRows r = rows_of(l, cv, ctx, images);
        if (b0 == 0)
            weights_krsc(l, cv, ctx, r.wk);
        chunk_cols(l, cv, ctx, &r, b0);
        void *out = elem_at(l->out, l->storage, (size_t)b0 * shape_size(l->out_shape));
        /* rows_g [columns][fg] = cols_g [columns][kdim] wk_g^T for each group (its block of
         * columns of rows, [columns][filters], and of cols), into an NHWC output directly */
        gpu_gemm_batched_typed(ctx, l->precision, 0, 1, r.k.columns, r.k.fg, r.k.kdim, 1.0f, r.x,
                               r.x_type, pixel_row_length(&r.k), r.k.kdim, r.wk, operand, r.k.kdim,
                               (long long)r.k.w_stride, 0.0f, l->channels_last ? out : r.k.rows,
                               l->channels_last ? l->storage : ELEM_F32, cv->filters, r.k.fg,
                               r.k.groups);
        if (!l->channels_last)
            gpu_note(ctx,
                     cuda_transpose(out, l->storage, r.k.rows, ELEM_F32, images, out_hw,
                                    cv->filters, 0, stream),
                     "convolution output to NCHW");
    }
}

/* The own engine's channels-last backward from l->delta. */
static void conv_backward_rows(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    const int batch = ctx->batch, per_chunk = chunk_images(l, cv, batch);
    const int out_hw = l->out_shape.h * l->out_shape.w;
    const Param *w = &l->params[CONV_WEIGHTS];
    const ElemType x_type = l->in_storage[0], operand = precision_storage(l->precision);
    float *dx = l->in_delta[0];
    const float dx_beta = layer_input_delta_beta(l, 0);
    cudaStream_t stream = gpu_stream(ctx);
    ConvRows r = rows_of(l, cv, ctx, per_chunk);
    weights_krsc(l, cv, ctx, r.wk);
    gpu_note(ctx, cudaMemsetAsync(r.dwk, 0, w->count * sizeof(float), stream),
             "convolution weight gradient (channels-last)");
    for (int b0 = 0; b0 < batch; b0 += per_chunk) {
        const int images = batch - b0 < per_chunk ? batch - b0 : per_chunk;
        r = rows_of(l, cv, ctx, images);
        chunk_cols(l, cv, ctx, &r, b0);
        const void *delta = elem_at(l->delta, l->storage, (size_t)b0 * shape_size(l->out_shape));
        ElemType delta_type = l->storage;
        if (!l->channels_last) {
            gpu_note(ctx,
                     cuda_transpose(r.k.rows, operand, delta, l->storage, images, cv->filters,
                                    out_hw, 0, stream),
                     "convolution delta rows (channels-last)");
            delta = r.k.rows;
            delta_type = operand;
        }
        /* dwk_g [fg][kdim] += rows_g^T cols_g for each group */
        gpu_gemm_batched_typed(ctx, l->precision, 1, 0, r.k.fg, r.k.kdim, r.k.columns, 1.0f, delta,
                               delta_type, cv->filters, r.k.fg, r.x, r.x_type,
                               pixel_row_length(&r.k), r.k.kdim, 1.0f, r.dwk, ELEM_F32, r.k.kdim,
                               (long long)r.k.w_stride, r.k.groups);
        if (!dx)
            continue;
        /* cols_g [columns][kdim] = rows_g wk_g (float32 now, for col2im) */
        gpu_gemm_batched_typed(ctx, l->precision, 0, 0, r.k.columns, r.k.kdim, r.k.fg, 1.0f, delta,
                               delta_type, cv->filters, r.k.fg, r.wk, operand, r.k.kdim,
                               (long long)r.k.w_stride, 0.0f, r.k.cols, ELEM_F32,
                               pixel_row_length(&r.k), r.k.kdim, r.k.groups);
        gpu_note(ctx,
                 cuda_col2im(elem_at(dx, x_type, (size_t)b0 * shape_size(l->in_shape)), x_type,
                             dx_beta, r.k.cols, r.k.shape, stream),
                 "convolution col2im (channels-last)");
    }
    /* the OIHW gradient [filters][c / groups][taps] += dwk [filters][taps][c / groups] */
    gpu_note(ctx,
             cuda_transpose(w->grad, ELEM_F32, r.dwk, ELEM_F32, cv->filters, window2d_taps(cv->win),
                            l->in_shape.c / cv->groups, 1, stream),
             "convolution weight gradient to OIHW");
}

static void conv_forward_gpu(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
#ifndef CDL_GPU_SIM
    if (gpu_on_cudnn(ctx->exec))
        conv_cudnn_forward(&cv->gpu->cudnn, l, ctx);
    else
#endif
        if (runs_channels_last(l))
        conv_forward_rows(l, ctx);
    else
        conv_forward_ref(l, ctx);
    gpu_bias_norm_forward(&cv->stage, l, ctx, l->out, l->storage, layer_activation_input(l),
                          layer_pre_storage(l));
    gpu_layer_activate(l, ctx);
}

/* The own engine's backward from l->delta, the gradient of the convolution's output. */
static void conv_backward_ref(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    const int batch = ctx->batch, per_chunk = chunk_images(l, cv, batch);
    const size_t in_image = shape_size(l->in_shape), out_image = shape_size(l->out_shape);
    const Param *w = &l->params[CONV_WEIGHTS];
    float *dx = l->in_delta[0];
    const float dx_beta = layer_input_delta_beta(l, 0);
    const ElemType x_type = l->in_storage[0], operand = precision_storage(l->precision);
    cudaStream_t stream = gpu_stream(ctx);
    for (int b0 = 0; b0 < batch; b0 += per_chunk) {
        const int images = batch - b0 < per_chunk ? batch - b0 : per_chunk;
        const ConvChunk k = chunk_of(l, cv, ctx, images);
        gpu_note(ctx,
                 cuda_im2col(k.cols, operand, elem_at(l->in[0], x_type, (size_t)b0 * in_image),
                             x_type, k.shape, stream),
                 "convolution im2col");
        gpu_note(ctx,
                 cuda_image_rows(k.rows, operand,
                                 elem_at(l->delta, l->storage, (size_t)b0 * out_image), l->storage,
                                 images, cv->filters, l->out_shape.h * l->out_shape.w, 1, stream),
                 "convolution delta rows");
        /* dW_g [fg][kdim] += rows_g [fg][columns] cols_g^T */
        gpu_gemm_batched_typed(ctx, l->precision, 0, 1, k.fg, k.kdim, k.columns, 1.0f, k.rows,
                               operand, k.columns, (long long)k.rows_stride, k.cols, operand,
                               k.columns, (long long)k.cols_stride, 1.0f, w->grad, ELEM_F32, k.kdim,
                               (long long)k.w_stride, k.groups);
        if (!dx)
            continue;
        /* cols_g [kdim][columns] = W_g^T rows_g, over the columns the product above read (float32
         * now, for col2im) */
        gpu_gemm_batched_typed(ctx, l->precision, 1, 0, k.kdim, k.columns, k.fg, 1.0f, w->data,
                               ELEM_F32, k.kdim, (long long)k.w_stride, k.rows, operand, k.columns,
                               (long long)k.rows_stride, 0.0f, k.cols, ELEM_F32, k.columns,
                               (long long)k.cols_stride, k.groups);
        gpu_note(ctx,
                 cuda_col2im(elem_at(dx, x_type, (size_t)b0 * in_image), x_type, dx_beta, k.cols,
                             k.shape, stream),
                 "convolution col2im");
    }
}

static void conv_backward_gpu(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    gpu_layer_activation_backward(l, ctx);
    gpu_bias_norm_backward(&cv->stage, l, ctx, l->delta, l->storage, l->delta, l->storage, 0.0f);
#ifndef CDL_GPU_SIM
    if (gpu_on_cudnn(ctx->exec)) {
        conv_cudnn_backward(&cv->gpu->cudnn, l, ctx);
        return;
    }
#endif
    if (runs_channels_last(l))
        conv_backward_rows(l, ctx);
    else
        conv_backward_ref(l, ctx);
}

/* The family's step on the GPU (cuda/gpu_backend.c looks it up by family). */
const LayerKernels gpu_convolutional_kernels = {
    .engine = conv_engine_gpu,
    .resize = conv_resize_gpu,
    .release = conv_release_gpu,
    .forward = conv_forward_gpu,
    .backward = conv_backward_gpu,
    .stores_16bit = 1,
    .takes_channels_last = conv_takes_channels_last,
};
