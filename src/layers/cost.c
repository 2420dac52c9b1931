/* [cost]: darknet's loss layer, accepted only where it adds nothing to cdl: as the last layer,
 * right after [softmax], whose cross-entropy is already the loss (darknet's resnet101 ends so).
 * It passes the probabilities through, forward and backward. Its keys (type, scale, ...) are
 * ignored with a warning (core/darknet_compat.c); anywhere else it would be a loss of its own
 * (darknet's default type=sse: squared error), which cdl does not have, and it is refused.
 *
 *   in, out [batch][c][h][w] */
#include <string.h>

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

static void cost_forward(Layer *l, const StepContext *ctx)
{
    memcpy(l->out, l->in[0], (size_t)ctx->batch * shape_size(l->out_shape) * sizeof *l->out);
}

/* The softmax before computes its gradient from the labels; without labels this is the
 * identity's gradient. */
static void cost_backward(Layer *l, const StepContext *ctx)
{
    float *in_delta = l->in_delta[0];
    if (!in_delta)
        return;
    const size_t n = (size_t)ctx->batch * shape_size(l->out_shape);
    for (size_t i = 0; i < n; i++)
        in_delta[i] += l->delta[i];
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

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_cost_kernels = {
    .forward = cost_forward,
    .backward = cost_backward,
};
