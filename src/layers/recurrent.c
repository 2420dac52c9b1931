/* [rnn], [lstm], [gru]: one-layer, one-direction recurrent layers over the T rows of each sample,
 * as torch.nn.RNN, nn.LSTM and nn.GRU (batch_first); the state starts at zero for every sample.
 *
 *   in  [batch][T][I]  (Shape {1, T, I})
 *   out [batch][T][H]  (Shape {1, T, H}): the hidden state h_t of every step
 *   weights_ih [G*H][I], weights_hh [G*H][H], biases_ih [G*H], biases_hh [G*H]: G gates per
 *   hidden unit, stacked in torch's order; a_t = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh [G*H]:
 *
 *   rnn  (G = 1): h_t = act(a_t)                                     act: activation= [tanh]
 *   lstm (G = 4): i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of the four parts of a_t;
 *                 c_t = f c_{t-1} + i g, h_t = o tanh(c_t)
 *   gru  (G = 3): r, z = sigmoid of the first two parts of a_t;
 *                 n = tanh(W_in x_t + b_in + r (W_hn h_{t-1} + b_hn)), h_t = (1 - z) n + z h_{t-1}
 *
 * The ONNX export uses ONNX's RNN, LSTM and GRU operators, the gates reordered to theirs.
 *
 * [lstm] fused= (1, 0, or -1: auto, as 1) picks on the CPU the fused recurrence for float32
 * (backend/cpu/lstm_fused.c) or, with 0, the per-step path of every cell (backend/cpu/recurrent.c),
 * the reference the tests compare the fused one against. */
#include "layers/recurrent.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/net.h"
#include "core/onnx_graph.h"
#include "layers/embedding.h"

static const Cell rnn_cell = {CELL_RNN, "RNN", {0}, 1};
static const Cell lstm_cell = {CELL_LSTM, "LSTM", {0, 3, 1, 2}, 4};
static const Cell gru_cell = {CELL_GRU, "GRU", {1, 0, 2}, 3};

/* Reads output= (H, required) and, for [rnn], hidden= (darknet's, the same H) and activation=. */
static int recurrent_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net,
                           const Cell *cell, Error *e)
{
    const int is_rnn = cell == &rnn_cell;
    int hidden = 0, st = cfg_get_int(cfg, s, "output", 0, &hidden, e);
    int darknet_hidden = hidden;
    if (!st && is_rnn)
        st = cfg_get_int(cfg, s, "hidden", hidden, &darknet_hidden, e);
    if (!st && is_rnn)
        st = layer_parse_activation(l, cfg, s, CDL_ACT_TANH, e);
    int fused = 0;
    if (!st && cell == &lstm_cell)
        st = cfg_get_int(cfg, s, "fused", -1, &fused, e);
    if (!st && (fused < -1 || fused > 1))
        st = layer_bad_key(l, cfg, s, "fused", fused, "expected -1 (auto), 0 or 1", e);
    if (st)
        return st;
    const CfgEntry *output = cfg_find(s, "output");
    if (!output)
        return error_set(e, CDL_EUSAGE, "%s:%d: layer %d: [%s] needs output= (the hidden size)",
                         cfg->path, s->line, l->index, s->name);
    if (hidden < 1)
        return layer_bad_key(l, cfg, s, "output", hidden, "expected at least 1", e);
    if (darknet_hidden != hidden)
        return error_set(e, CDL_EUSAGE,
                         "%s: layer %d: [%s] hidden=%d differs from output=%d: cdl's [rnn] "
                         "outputs its hidden state, so both are H (put a [connected] after it for "
                         "darknet's output projection)",
                         cfg_where(cfg, s, cfg_find(s, "hidden")).text, l->index, s->name,
                         darknet_hidden, hidden);
    const Shape in = l->in_shape;
    if (net->seq < 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] needs a sequence net: [net] seq=T (or time_steps)",
                         cfg->path, s->line, l->index, s->name);
    if (in.c != 1 || in.h != net->seq)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] needs an input of T=%d token rows (1x%dxfeatures), "
                         "not %dx%dx%d (CxHxW)",
                         cfg->path, s->line, l->index, s->name, net->seq, net->seq, in.c, in.h,
                         in.w);

    Recurrent *rc = l->priv;
    rc->cell = cell;
    rc->steps = in.h;
    rc->inputs = in.w;
    rc->hidden = hidden;
    rc->fused = fused;
    const Layer *first = &net->layers[0];
    /* the fused token rows read the ids as one contiguous row per token: an [embedding] of the
     * whole input row (not a sequence-to-sequence net's part=) */
    rc->embedding = cell == &lstm_cell && l->n_inputs == 1 && l->inputs[0] == 0 &&
                            first->type->reads_token_ids &&
                            ((const Embedding *)first->priv)->input_rows == first->out_shape.h &&
                            first->n_params == 1 && first->params[0].n_dims == 2 &&
                            first->params[0].dims[1] == in.w
                        ? first
                        : NULL;
    l->out_shape = (Shape){1, rc->steps, hidden};
    const size_t rows = (size_t)cell->gates * (size_t)hidden;
    /* torch.nn.RNN/GRU/LSTM's weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0 */
    layer_add_param(l, "weights_ih", 1, 1, 2, (int64_t[]){(int64_t)rows, rc->inputs});
    layer_add_param(l, "weights_hh", 1, 1, 2, (int64_t[]){(int64_t)rows, hidden});
    layer_add_param(l, "biases_ih", 1, 0, 1, (int64_t[]){(int64_t)rows});
    layer_add_param(l, "biases_hh", 1, 0, 1, (int64_t[]){(int64_t)rows});
    l->flops = 2.0 * rc->steps * (double)rows * (double)(rc->inputs + hidden);
    return CDL_OK;
}

static int rnn_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    return recurrent_parse(l, cfg, s, net, &rnn_cell, e);
}

static int lstm_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    return recurrent_parse(l, cfg, s, net, &lstm_cell, e);
}

static int gru_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    return recurrent_parse(l, cfg, s, net, &gru_cell, e);
}

/* As torch's recurrent layers: every weight and bias ~ U(-1/sqrt(H), 1/sqrt(H)). */
static void recurrent_init(Layer *l, Rng *rng)
{
    layer_init_uniform(l, rng, 1.0f / sqrtf((float)hidden_of(l)));
}

/* ---- ONNX export ---- */

/* dst [G][block] = the G gate blocks of src [G][block] (block = H rows) in ONNX's order. */
static void onnx_gate_order(const Cell *cell, const float *src, size_t block, float *dst)
{
    for (int k = 0; k < cell->gates; k++)
        memcpy(dst + (size_t)k * block, src + (size_t)cell->onnx_gate[k] * block,
               block * sizeof *dst);
}

/* ONNX's W [1][G*H][I], R [1][G*H][H] and B [1][2*G*H] (input biases, then recurrent ones) from
 * the layer's parameters, gates reordered; out of memory leaves the graph's buffer failed. */
static void onnx_recurrent_weights(const Layer *l, OnnxGraph *g, char names[3][ONNX_NAME_MAX])
{
    const Recurrent *rc = l->priv;
    const Cell *cell = rc->cell;
    const int64_t gh = (int64_t)cell->gates * rc->hidden, H = rc->hidden;
    const size_t n = (size_t)gh * (size_t)(rc->inputs > H ? rc->inputs : H);
    onnx_name(names[0], l, "W");
    onnx_name(names[1], l, "R");
    onnx_name(names[2], l, "B");
    float *buf = malloc((n > 2 * (size_t)gh ? n : 2 * (size_t)gh) * sizeof *buf);
    if (!buf) {
        g->body.failed = 1;
        return;
    }
    onnx_gate_order(cell, l->params[P_WEIGHTS_IH].data, (size_t)H * (size_t)rc->inputs, buf);
    onnx_initializer(g, names[0], ONNX_FLOAT, 3, (const int64_t[]){1, gh, rc->inputs}, buf);
    onnx_gate_order(cell, l->params[P_WEIGHTS_HH].data, (size_t)H * (size_t)H, buf);
    onnx_initializer(g, names[1], ONNX_FLOAT, 3, (const int64_t[]){1, gh, H}, buf);
    onnx_gate_order(cell, l->params[P_BIASES_IH].data, (size_t)H, buf);
    onnx_gate_order(cell, l->params[P_BIASES_HH].data, (size_t)H, buf + gh);
    onnx_initializer(g, names[2], ONNX_FLOAT, 2, (const int64_t[]){1, 2 * gh}, buf);
    free(buf);
}

/* ONNX's RNN/LSTM/GRU operator over the time-major input: x [N][T][I] transposed to [T][N][I],
 * the operator's Y [T][1][N][H] squeezed and transposed back to [N][T][H]. The state starts at
 * zero (no initial_h), as in cdl. */
static int recurrent_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net;
    const Recurrent *rc = l->priv;
    const char *activation = NULL;
    if (rc->cell == &rnn_cell) {
        switch (l->activation) {
        case CDL_ACT_TANH:
            activation = "Tanh";
            break;
        case CDL_ACT_RELU:
            activation = "Relu";
            break;
        case CDL_ACT_LOGISTIC:
            activation = "Sigmoid";
            break;
        default:
            return error_set(e, CDL_EUSAGE,
                             "layer %d [rnn]: activation=%s is not exported (ONNX's RNN takes "
                             "tanh, relu or logistic here)",
                             l->index, activation_name(l->activation));
        }
    }
    char x[ONNX_NAME_MAX], time_major[ONNX_NAME_MAX], y[ONNX_NAME_MAX], squeezed[ONNX_NAME_MAX];
    char axes[ONNX_NAME_MAX], w[3][ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, x);
    onnx_name(time_major, l, "time_major");
    onnx_name(y, l, "y");
    onnx_name(squeezed, l, "y.squeezed");
    onnx_name(axes, l, "y.axes");
    onnx_recurrent_weights(l, g, w);
    const int64_t swap[] = {1, 0, 2};
    const OnnxAttr perm = onnx_attr_ints("perm", swap, 3);
    onnx_node(g, "Transpose", 1, (const char *[]){x}, time_major, 1, &perm);
    OnnxAttr attrs[2] = {onnx_attr_int("hidden_size", rc->hidden)};
    int n_attrs = 1;
    if (activation)
        attrs[n_attrs++] = onnx_attr_strings("activations", &activation, 1);
    if (rc->cell == &gru_cell) /* torch's GRU applies the reset gate after W_hn h + b_hn */
        attrs[n_attrs++] = onnx_attr_int("linear_before_reset", 1);
    onnx_node(g, rc->cell->onnx_op, 4, (const char *[]){time_major, w[0], w[1], w[2]}, y, n_attrs,
              attrs);
    onnx_int64s(g, axes, 1, (const int64_t[]){1});
    onnx_node(g, "Squeeze", 2, (const char *[]){y, axes}, squeezed, 0, NULL);
    onnx_node(g, "Transpose", 1, (const char *[]){squeezed}, onnx_output(g, l, 0), 1, &perm);
    return CDL_OK;
}

const LayerType rnn_layer = {
    .name = "rnn",
    .priv_size = sizeof(Recurrent),
    .parse = rnn_parse,
    .init = recurrent_init,
    .export_onnx = recurrent_export_onnx,
};

const LayerType lstm_layer = {
    .name = "lstm",
    .priv_size = sizeof(Recurrent),
    .parse = lstm_parse,
    .init = recurrent_init,
    .export_onnx = recurrent_export_onnx,
};

const LayerType gru_layer = {
    .name = "gru",
    .priv_size = sizeof(Recurrent),
    .parse = gru_parse,
    .init = recurrent_init,
    .export_onnx = recurrent_export_onnx,
};
