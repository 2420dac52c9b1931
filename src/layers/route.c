/* [route]: concatenates earlier layers' outputs along channels, in the listed order.
 *
 *   inputs k [batch][c_k][h][w]   all with the same h and w
 *   out      [batch][sum c_k][h][w]
 *
 * layers= takes indices: negative ones count back from this layer, others are absolute. */
#include <string.h>

#include "core/net.h"
#include "core/onnx_graph.h"
#include "ops/dnnl_conv.h"

/* Below this many values a parallel region costs more than it saves. */
#define ROUTE_PARALLEL_MIN 65536

typedef struct Route {
    size_t sizes[LAYER_MAX_INPUTS]; /* c_k * h * w: values per sample of input k */
} Route;

static int route_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int listed[LAYER_MAX_INPUTS], n;
    int st = cfg_get_int_list(cfg, s, "layers", listed, LAYER_MAX_INPUTS, &n, e);
    if (st)
        return st;
    const CfgEntry *en = cfg_find(s, "layers");
    if (n == 0)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d [%s] needs key 'layers'", cfg->path,
                         s->line, l->index, s->name);
    for (int k = 0; k < n; k++) {
        int index = listed[k] < 0 ? l->index + listed[k] : listed[k];
        if (index >= 0 && index < l->index) {
            l->inputs[k] = index;
            continue;
        }
        if (l->index == 0)
            return error_set(e, CDL_EUSAGE,
                             "%s: layer 0 [%s]: layers=%d: there is no earlier layer to route",
                             cfg_where(cfg, s, en).text, s->name, listed[k]);
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d [%s]: layers entry %d names layer %d, not an earlier "
                         "layer (0..%d, or -1..-%d)",
                         cfg_where(cfg, s, en).text, l->index, s->name, listed[k], index,
                         l->index - 1, l->index);
    }
    l->n_inputs = n;
    Shape first = net->layers[l->inputs[0]].out_shape;
    Shape out = {0, first.h, first.w};
    for (int k = 0; k < n; k++) {
        Shape in = net->layers[l->inputs[k]].out_shape;
        if (in.h != first.h || in.w != first.w)
            return error_set(e, CDL_EUSAGE,
                             "%s: layer %d [%s]: inputs must have the same height and width: "
                             "layer %d is %dx%dx%d, layer %d is %dx%dx%d (CxHxW)",
                             cfg_where(cfg, s, en).text, l->index, s->name, l->inputs[0], first.c,
                             first.h, first.w, l->inputs[k], in.c, in.h, in.w);
        if ((size_t)out.c + (size_t)in.c > NET_MAX_FLOATS)
            return error_set(e, CDL_EUSAGE, "%s: layer %d [%s]: more than %zu channels",
                             cfg_where(cfg, s, en).text, l->index, s->name, NET_MAX_FLOATS);
        out.c += in.c;
        ((Route *)l->priv)->sizes[k] = shape_size(in);
    }
    l->in_shape = first;
    l->out_shape = out;
    l->flops = 0;
    return CDL_OK;
}

static void route_forward(Layer *l, const StepContext *ctx)
{
    const Route *ro = l->priv;
    size_t out_sample = shape_size(l->out_shape);
    int batch = ctx->batch;
#pragma omp parallel for schedule(static) if (batch * out_sample > ROUTE_PARALLEL_MIN)
    for (int b = 0; b < batch; b++) {
        float *dst = l->out + b * out_sample;
        for (int k = 0; k < l->n_inputs; k++) {
            size_t n = ro->sizes[k];
            memcpy(dst, l->in[k] + b * n, n * sizeof *dst);
            dst += n;
        }
    }
}

static void route_backward(Layer *l, const StepContext *ctx)
{
    const Route *ro = l->priv;
    size_t out_sample = shape_size(l->out_shape);
    int batch = ctx->batch;
    size_t offset = 0;
    for (int k = 0; k < l->n_inputs; k++) {
        size_t n = ro->sizes[k];
        float *in_delta = l->in_delta[k];
        if (in_delta) {
            /* Two listed entries may name the same layer: the inputs go one at a time. */
#pragma omp parallel for schedule(static) if (batch * out_sample > ROUTE_PARALLEL_MIN)
            for (int b = 0; b < batch; b++) {
                float *dst = in_delta + b * n;
                const float *src = l->delta + b * out_sample + offset;
                for (size_t i = 0; i < n; i++)
                    dst[i] += src[i];
            }
        }
        offset += n;
    }
}

static int route_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    char names[LAYER_MAX_INPUTS][ONNX_NAME_MAX];
    const char *in[LAYER_MAX_INPUTS];
    for (int k = 0; k < l->n_inputs; k++) {
        onnx_input_nchw(g, l, k, names[k]);
        in[k] = names[k];
    }
    const OnnxAttr axis = onnx_attr_int("axis", 1);
    onnx_node(g, "Concat", l->n_inputs, in, onnx_output(g, l, 0), 1, &axis);
    return CDL_OK;
}

/* In nChw8c a sample's channel blocks follow each other as its channels do in NCHW: inputs of
 * whole blocks concatenate in it as they are, all with the output (LayerKernels.layout). */
static int route_layout(const Layer *l, int k)
{
    (void)k;
    for (int i = 0; i < l->n_inputs; i++)
        if (((const Route *)l->priv)->sizes[i] / ((size_t)l->out_shape.h * l->out_shape.w) %
            DNNL_LANES)
            return LAYOUT_PLAIN;
    return LAYOUT_TIED;
}

const LayerType route_layer = {
    .name = "route",
    .priv_size = sizeof(Route),
    .parse = route_parse,
    .export_onnx = route_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_route_kernels = {
    .layout = route_layout,
    .forward = route_forward,
    .backward = route_backward,
};
