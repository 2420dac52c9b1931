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
#include "layers/crop.h"

#include <stdio.h>

#include "core/net.h"
#include "core/onnx_graph.h"

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
