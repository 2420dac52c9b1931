/* [dropout]: inverted dropout. In training each value is dropped with `probability`
 * and the kept ones are scaled by 1/(1-probability), so evaluation is the identity.
 * [drop_path]: stochastic depth, torchvision.ops.StochasticDepth(p, mode="row"): the same with one
 * draw per sample, which drops or keeps (scaled) the whole sample; placed on a residual branch
 * before its [shortcut], it drops the branch of some samples.
 *
 *   in, out [batch][c][h][w]
 *
 * The mask is drawn from (net seed, draw_id, layer index) at every training forward: sample b of
 * the step's global mini-batch draws at b dropout_sample_draws + its draw (a value's place in
 * the sample as sized, or 0 for the sample), so the same pass id redraws the same mask whatever
 * the thread count, the rank holding the sample or the rows a sequence-to-sequence pass is cut
 * to (an eager step's cut passes draw what a graphed step's padded ones do). */
#include "layers/dropout.h"

#include "core/net.h"
#include "core/onnx_graph.h"

/* Both sections: probability [default_p], per_sample. */
static int parse_probability(Layer *l, const Cfg *cfg, CfgSection *s, float default_p,
                             int per_sample, Error *e)
{
    float p;
    int st = cfg_get_float(cfg, s, "probability", default_p, &p, e);
    if (st)
        return st;
    if (!(p >= 0.0f && p < 1.0f))
        return cfg_bad_value(cfg, s, "probability", e, "expected a number in [0, 1)");
    l->out_shape = l->in_shape;
    l->flops = (double)shape_size(l->in_shape);
    Dropout *d = l->priv;
    d->probability = p;
    d->scale = 1.0f / (1.0f - p);
    d->per_sample = per_sample;
    d->sized_rows = l->out_shape.h;
    return CDL_OK;
}

static int dropout_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    return parse_probability(l, cfg, s, 0.5f, 0, e);
}

static int drop_path_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    (void)net;
    return parse_probability(l, cfg, s, 0.1f, 1, e);
}

/* An image net's new size (net_set_size) is the one its samples draw across: their draws stay
 * first + i over the pass. */
static int dropout_set_size(Layer *l, const Net *net, Error *e)
{
    int st = layer_size_follow_input(l, net, e);
    ((Dropout *)l->priv)->sized_rows = l->out_shape.h;
    return st;
}

int dropout_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Dropout *d = l->priv;
    d->mask = layer_state_floats(st, (size_t)batch * shape_size(l->out_shape) /
                                         dropout_values_per_draw(l));
    d->mask_is_valid = 0;
    return CDL_OK;
}

/* Inference is the identity (the kept values were scaled during training); the input keeps
 * its layout. */
static int dropout_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const OnnxLayer *in = onnx_input(g, l, 0);
    const char *x = in->name;
    onnx_node(g, "Identity", 1, &x, onnx_output(g, l, in->flat), 0, NULL);
    return CDL_OK;
}

const LayerType dropout_layer = {
    .name = "dropout",
    .set_rows = layer_rows_follow_input,
    .set_size = dropout_set_size,
    .priv_size = sizeof(Dropout),
    .parse = dropout_parse,
    .export_onnx = dropout_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};

const LayerType drop_path_layer = {
    .name = "drop_path",
    .priv_size = sizeof(Dropout),
    .parse = drop_path_parse,
    .export_onnx = dropout_export_onnx,
    .backward_ignores_inputs = 1,
    .backward_ignores_output = 1,
    .splits_batch = 1,
};
