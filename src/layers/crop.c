/* [crop]: darknet's crop layer (the first layer of its vgg-16 and strided cfgs), kept a layer
 * rather than mapped onto the data augmentation because darknet runs it inside the net: a
 * crop_height x crop_width window of the input, rescaled from [0,1] to [-1,1] (2x - 1) unless
 * noadjust=1.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][crop_height][crop_width]
 *
 * Inference takes the centre window, offsets (h - crop_height)/2 and (w - crop_width)/2
 * rounded down, as darknet. Training takes a random window per sample, mirrored left-right
 * with p = 0.5 when flip=1, drawn from (net seed, draw_id, layer index) so a pass id redraws
 * the same windows whatever the thread count (darknet's GPU crop draws per image like this;
 * its CPU one draws once per batch). Backward adds the scaled deltas back into the window. */
#include <stdio.h>

#include "core/net.h"
#include "core/onnx_graph.h"

typedef struct Crop {
    int flip, noadjust;
    float scale, shift; /* out = in * scale + shift */
    int *windows;       /* [batch][3]: row and column offsets, mirrored, of the last forward */
} Crop;

static int crop_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    int height, width, flip, noadjust;
    int st = cfg_get_int(cfg, s, "crop_height", 1, &height, e);
    st = st ? st : cfg_get_int(cfg, s, "crop_width", 1, &width, e);
    st = st ? st : cfg_get_int(cfg, s, "flip", 0, &flip, e);
    st = st ? st : cfg_get_int(cfg, s, "noadjust", 0, &noadjust, e);
    if (st)
        return st;
    if (height < 1 || width < 1 || height > l->in_shape.h || width > l->in_shape.w)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] crop_height=%d, crop_width=%d: expected a window "
                         "of at least 1x1 inside the %dx%d input",
                         cfg->path, s->line, l->index, s->name, height, width, l->in_shape.h,
                         l->in_shape.w);
    Crop *cr = l->priv;
    cr->flip = flip != 0;
    cr->noadjust = noadjust != 0;
    cr->scale = cr->noadjust ? 1.0f : 2.0f;
    cr->shift = cr->noadjust ? 0.0f : -1.0f;
    l->out_shape = (Shape){l->in_shape.c, height, width};
    l->flops = 2.0 * (double)shape_size(l->out_shape);
    return CDL_OK;
}

static int crop_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Crop *cr = l->priv;
    cr->windows = layer_state_bytes(st, (size_t)batch * 3 * sizeof *cr->windows);
    return CDL_OK;
}

/* Chooses each sample's window: the centre in inference, random ones in training. */
static void choose_windows(const Layer *l, const StepContext *ctx, Crop *cr)
{
    const int spare_h = l->in_shape.h - l->out_shape.h, spare_w = l->in_shape.w - l->out_shape.w;
    const uint64_t key = rng_key(ctx->seed, layer_draw_stream(ctx, l));
    for (int b = 0; b < ctx->batch; b++) {
        int *win = cr->windows + 3 * b;
        if (!ctx->train) {
            win[0] = spare_h / 2, win[1] = spare_w / 2, win[2] = 0;
            continue;
        }
        Rng r; /* the sample's own stream: its window does not depend on its rank */
        rng_seed(&r, key, (uint64_t)(ctx->sample_offset + b));
        win[0] = (int)rng_below(&r, (uint32_t)spare_h + 1);
        win[1] = (int)rng_below(&r, (uint32_t)spare_w + 1);
        win[2] = cr->flip && rng_below(&r, 2);
    }
}

/* The input index of output column x of a window starting at column x0 (mirrored or not). */
static inline int source_column(int x, int x0, int mirrored, int out_w)
{
    return x0 + (mirrored ? out_w - 1 - x : x);
}

static void crop_forward(Layer *l, const StepContext *ctx)
{
    Crop *cr = l->priv;
    choose_windows(l, ctx, cr);
    const float *in = l->in[0];
    const Shape is = l->in_shape, os = l->out_shape;
    const int planes = ctx->batch * os.c;
#pragma omp parallel for schedule(static) if ((size_t)planes * os.h * os.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const int *win = cr->windows + 3 * (p / os.c);
        const float *src = in + (size_t)p * is.h * is.w;
        float *dst = l->out + (size_t)p * os.h * os.w;
        for (int y = 0; y < os.h; y++)
            for (int x = 0; x < os.w; x++)
                dst[y * os.w + x] =
                    src[(size_t)(win[0] + y) * is.w + source_column(x, win[1], win[2], os.w)] *
                        cr->scale +
                    cr->shift;
    }
}

static void crop_backward(Layer *l, const StepContext *ctx)
{
    const Crop *cr = l->priv;
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const Shape is = l->in_shape, os = l->out_shape;
    const int planes = ctx->batch * os.c;
#pragma omp parallel for schedule(static) if ((size_t)planes * os.h * os.w >= 65536)
    for (int p = 0; p < planes; p++) {
        const int *win = cr->windows + 3 * (p / os.c);
        float *dsrc = in_delta + (size_t)p * is.h * is.w;
        const float *d = l->delta + (size_t)p * os.h * os.w;
        for (int y = 0; y < os.h; y++)
            for (int x = 0; x < os.w; x++)
                dsrc[(size_t)(win[0] + y) * is.w + source_column(x, win[1], win[2], os.w)] +=
                    d[y * os.w + x] * cr->scale;
    }
}

/* Inference: Slice of the centre window, then Mul 2 and Add -1 unless noadjust. */
static int crop_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Crop *cr = l->priv;
    const Shape is = l->in_shape, os = l->out_shape;
    const int64_t starts[] = {(is.h - os.h) / 2, (is.w - os.w) / 2};
    const int64_t ends[] = {starts[0] + os.h, starts[1] + os.w}, axes[] = {2, 3};
    char x[ONNX_NAME_MAX], arg[3][ONNX_NAME_MAX + 8], sliced[ONNX_NAME_MAX], scaled[ONNX_NAME_MAX];
    char scale[ONNX_NAME_MAX + 8], shift[ONNX_NAME_MAX + 8];
    onnx_input_nchw(g, l, 0, x);
    const char *out = onnx_output(g, l, 0);
    if (cr->noadjust)
        snprintf(sliced, sizeof sliced, "%s", out);
    else
        onnx_name(sliced, l, "window");
    const int64_t *const args[] = {starts, ends, axes};
    const char *const arg_names[] = {"starts", "ends", "axes"};
    for (int k = 0; k < 3; k++) {
        snprintf(arg[k], sizeof arg[k], "%s.%s", sliced, arg_names[k]);
        onnx_int64s(g, arg[k], 2, args[k]);
    }
    onnx_node(g, "Slice", 4, (const char *[]){x, arg[0], arg[1], arg[2]}, sliced, 0, NULL);
    if (cr->noadjust)
        return CDL_OK;
    onnx_name(scaled, l, "scaled");
    snprintf(scale, sizeof scale, "%s.factor", scaled);
    snprintf(shift, sizeof shift, "%s.shift", out);
    onnx_scalar(g, scale, cr->scale);
    onnx_scalar(g, shift, cr->shift);
    onnx_node(g, "Mul", 2, (const char *[]){sliced, scale}, scaled, 0, NULL);
    onnx_node(g, "Add", 2, (const char *[]){scaled, shift}, out, 0, NULL);
    return CDL_OK;
}

const LayerType crop_layer = {
    .name = "crop",
    .priv_size = sizeof(Crop),
    .parse = crop_parse,
    .export_onnx = crop_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_crop_kernels = {
    .resize = crop_resize,
    .forward = crop_forward,
    .backward = crop_backward,
};
