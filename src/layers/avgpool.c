/* [avgpool]: global average pooling, as darknet's avgpool layer.
 *
 *   in  [batch][c][h][w]
 *   out [batch][c][1][1]   out[b][k] = mean over h*w of in[b][k]
 */
#include "core/net.h"
#include "core/onnx_graph.h"

static int avgpool_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)cfg, (void)s, (void)net, (void)e;
    l->out_shape = (Shape){l->in_shape.c, 1, 1};
    l->flops = (double)shape_size(l->in_shape);
    return CDL_OK;
}

static int avgpool_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    char x[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    onnx_node(g, "GlobalAveragePool", 1, (const char *[]){x}, onnx_output(g, l, 0), 0, NULL);
    return CDL_OK;
}

const LayerType avgpool_layer = {
    .name = "avgpool",
    .parse = avgpool_parse,
    .export_onnx = avgpool_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};
