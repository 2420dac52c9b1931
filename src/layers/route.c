/* [route]: concatenates earlier layers' outputs along channels, in the listed order.
 *
 *   inputs k [batch][c_k][h][w]   all with the same h and w
 *   out      [batch][sum c_k / groups][h][w]
 *
 * layers= takes indices: negative ones count back from this layer, others are absolute.
 * groups=G, group_id=g (AlexeyAB's darknet, yolov4-tiny's CSP blocks): each input is cut into G
 * equal runs of channels and contributes run g, channels [g c_k/G, (g+1) c_k/G); every c_k must
 * divide by G (darknet cuts c_k h w / G values without checking). */
#include "layers/route.h"

#include "core/net.h"
#include "core/onnx_graph.h"

#include <stdio.h>

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
    Route *ro = l->priv;
    st = cfg_get_int_min(cfg, s, "groups", 1, 1, &ro->groups, e);
    st = st ? st : cfg_get_int_min(cfg, s, "group_id", 0, 0, &ro->group_id, e);
    st = st ? st : cfg_require_max(cfg, s, "group_id", ro->group_id, ro->groups, 0, e);
    if (st)
        return st;
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
        if (in.c % ro->groups)
            return cfg_bad_value(cfg, s, "groups", e,
                                 "layer %d's %d channels do not split into %d equal groups",
                                 l->inputs[k], in.c, ro->groups);
        out.c += in.c / ro->groups;
        ro->sizes[k] = shape_size(in);
    }
    l->in_shape = first;
    l->out_shape = out;
    l->flops = 0;
    return CDL_OK;
}

/* The inputs' new height and width (net_set_size), which must still agree. */
static int route_set_size(Layer *l, const Net *net, Error *e)
{
    Route *ro = l->priv;
    const Shape first = net->layers[l->inputs[0]].out_shape;
    for (int k = 0; k < l->n_inputs; k++) {
        const Shape in = net->layers[l->inputs[k]].out_shape;
        if (in.h != first.h || in.w != first.w)
            return error_set(e, CDL_EUSAGE,
                             "layer %d [route]: inputs must have the same height and width: layer "
                             "%d is %dx%d, layer %d is %dx%d",
                             l->index, l->inputs[0], first.h, first.w, l->inputs[k], in.h, in.w);
        ro->sizes[k] = shape_size(in);
    }
    l->in_shape = first;
    l->out_shape.h = first.h;
    l->out_shape.w = first.w;
    return CDL_OK;
}

/* Concat along channels; with groups, each input first goes through a Slice of its group. */
static int route_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)e;
    const Route *ro = l->priv;
    char names[LAYER_MAX_INPUTS][ONNX_NAME_MAX], part[ONNX_NAME_MAX];
    const char *in[LAYER_MAX_INPUTS];
    for (int k = 0; k < l->n_inputs; k++) {
        onnx_input_nchw(g, l, k, names[k]);
        in[k] = names[k];
        if (ro->groups == 1)
            continue;
        const int64_t c = net->layers[l->inputs[k]].out_shape.c / ro->groups;
        char suffix[32];
        snprintf(suffix, sizeof suffix, "group%d", k);
        onnx_name(part, l, suffix);
        onnx_slice(g, names[k], 1, ro->group_id * c, (ro->group_id + 1) * c, part);
        snprintf(names[k], sizeof names[k], "%s", part);
    }
    const OnnxAttr axis = onnx_attr_int("axis", 1);
    onnx_node(g, "Concat", l->n_inputs, in, onnx_output(g, l, 0), 1, &axis);
    return CDL_OK;
}

const LayerType route_layer = {
    .name = "route",
    .priv_size = sizeof(Route),
    .parse = route_parse,
    .export_onnx = route_export_onnx,
    .set_size = route_set_size,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};
