/* [cost]: darknet's loss layer, accepted only where it adds nothing to cdl: as the last layer,
 * right after [softmax], whose cross-entropy is already the loss (darknet's resnet101 ends so).
 * It passes the probabilities through, forward and backward. Its keys (type, scale, ...) are
 * ignored with a warning (core/darknet_compat.c); anywhere else it would be a loss of its own
 * (darknet's default type=sse: squared error), which cdl does not have, and it is refused.
 *
 *   in, out [batch][c][h][w] */
#include "core/net.h"
#include "core/onnx_graph.h"

static int cost_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    const int after_loss = l->index > 0 && net->layers[l->index - 1].type->is_loss;
    if (!after_loss || l->index != net->n_layers - 1) {
        const CfgEntry *type = cfg_find(s, "type");
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: unsupported section [%s] (a type=%s loss) here: cdl "
                         "accepts [cost] only as the last layer, right after [softmax], whose "
                         "cross-entropy is the loss",
                         cfg->path, s->line, l->index, s->name, type ? type->value : "sse");
    }
    l->out_shape = l->in_shape;
    return CDL_OK;
}

static int cost_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const OnnxLayer *in = onnx_input(g, l, 0);
    const char *x = in->name;
    onnx_node(g, "Identity", 1, &x, onnx_output(g, l, in->flat), 0, NULL);
    return CDL_OK;
}

const LayerType cost_layer = {
    .name = "cost",
    .parse = cost_parse,
    .export_onnx = cost_export_onnx,
    .follows_loss = 1,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
};
