/* [positional]: a learned positional embedding added to each token (GPT-2's wpe).
 *
 *   in, out [batch][T][C]   out[b][t] = in[b][t] + weights[t]
 *   weights [T][C] (one value per value of a sample), N(0, 1) as torch.nn.Embedding
 *
 * Its CPU kernels are in backend/cpu/positional.c. */
#include <stddef.h>

#include "core/net.h"
#include "core/onnx_graph.h"

static int positional_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)cfg, (void)s, (void)net, (void)e;
    l->out_shape = l->in_shape;
    const Shape in = l->in_shape; /* [1][T][C] */
    layer_add_param(l, "weights", 1, 1, 2, (int64_t[]){(int64_t)in.c * in.h, in.w});
    l->flops = (double)shape_size(l->in_shape);
    return CDL_OK;
}

static void positional_init(Layer *l, Rng *rng)
{
    Param *w = &l->params[0];
    for (size_t i = 0; i < w->count; i++)
        w->data[i] = rng_normal(rng);
}

/* Add of the weights [T][C], broadcast over the batch; in a decoder step, of the weights' row at
 * the step's position (Gather, [1][C]). */
static int positional_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    char x[ONNX_NAME_MAX], w[ONNX_NAME_MAX], row[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    onnx_param(g, l, 0, w);
    if (g->part == ONNX_DECODER_STEP) {
        onnx_name(row, l, "row");
        const OnnxAttr axis = onnx_attr_int("axis", 0);
        onnx_node(g, "Gather", 2, (const char *[]){w, ONNX_POSITION}, row, 1, &axis);
    }
    const char *added = g->part == ONNX_DECODER_STEP ? row : w;
    onnx_node(g, "Add", 2, (const char *[]){x, added}, onnx_output(g, l, 0), 0, NULL);
    return CDL_OK;
}

const LayerType positional_layer = {
    .name = "positional",
    .set_rows = layer_rows_follow_input,
    .parse = positional_parse,
    .init = positional_init,
    .export_onnx = positional_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
