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
 * Forward projects the inputs of all batch*T rows in one product (ops/gemm_packed), then per
 * step multiplies the batch's h_{t-1} by W_hh (ops/gemm_packed: W_hh packed once per forward, not
 * by OpenBLAS on every step) and runs the cell's element-wise step. Backward runs the steps in
 * reverse (backpropagation through time; W_hh packed once more), leaving each step's dL/da_t in
 * place of its gate values, then dL/dx (ops/gemm_packed) and the weight gradients, [dW_ih |
 * dW_hh]^T in one sgemm, over all rows. The ONNX export uses ONNX's RNN, LSTM and GRU
 * operators, the gates reordered to theirs.
 *
 * [lstm] in float32 runs fused instead (fused=1, and the default fused=-1): one OpenMP parallel
 * region over the whole recurrence with one barrier per step, the hidden units split over the
 * threads in blocks of UNIT. Per step each thread computes its blocks' four gate panels of
 * [x_t, h_{t-1}] [W_ih | W_hh]^T + b_ih + b_hh (the weights packed once per pass, each thread its
 * own panels; the input projection inside the step, so that no pass over all rows writes the
 * gate rows first and the step reads them back from memory), runs their nonlinearities and cell
 * update while the panels are in L1, and writes its part of h_t into the next step's operand
 * rows; of the cell it keeps the gates and c_t (the saved rows' first half), not tanh(c_t).
 * Backward likewise: its blocks' part of dL/dh_t = dL/da_{t+1} W_hh (dL/da_{t+1} read from the gate
 * rows of step t+1, which hold it by then), then their cell backward (tanh(c_t) taken again), the
 * bias gradients summed on the way; then dL/dx = dL/da W_ih over all rows (ops/gemm_packed) and
 * [dW_ih | dW_hh] = dL/da^T [x, h_prev] in one sgemm. The state is time-major (a step's rows
 * together). Right after layer 0's [embedding] the fused lstm's inputs are rows of the embedding's
 * weights, so x_t W_ih^T + b_ih + b_hh comes from a table of one row per token id, computed once
 * per forward, and backward forms dW_ih and the embedding's gradient from dL/da summed per id
 * (Recurrent.embedding). fused=0 keeps the per-step path above, the reference the tests compare
 * the fused one against.
 *
 * precision=bf16 (Layer.precision): the gate products take bf16 operands (gemm_operand), as
 * torch.autocast("cpu", torch.bfloat16) runs the gate projections of an RNN cell: the weights,
 * the inputs and each step's h_{t-1} are rounded into copies, the backward's dL/da rows into
 * hh (per step) and in place once the bias gradients have summed them; the cells' element-wise
 * steps stay float32. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/net.h"
#include "core/onnx_graph.h"
#include "ops/exp_vec.h"
#include "ops/gemm.h"
#include "ops/gemm_packed.h"
#include "ops/lanes16.h"

/* Positions in l->params, in the order parse declares them (torch's). */
enum { P_WEIGHTS_IH, P_WEIGHTS_HH, P_BIASES_IH, P_BIASES_HH };

/* Below this many values per step an element-wise parallel region costs more than it saves. */
#define RECURRENT_PARALLEL_MIN 16384

/* Hidden units per block of the fused lstm: one packed panel of each gate; and the floats that
 * pad its rows of state. */
enum { UNIT = GEMM_PACKED_PANEL, ROW_PAD = 16 };

/* One sample's step t: rows of the layer's buffers, H = hidden units, G gates. */
typedef struct StepRow {
    float *gates;            /* [G*H] forward: in W_ih x_t (no bias), out the gate values (the
                                rnn's a_t); backward: out dL/da_t */
    const float *hh;         /* [G*H] forward: W_hh h_{t-1} (no bias) */
    float *dhh;              /* [G*H] backward, gru: out dL/d(W_hh h_{t-1}) */
    float *saved;            /* [saved*H] the cell's values of step t kept for backward */
    const float *saved_prev; /* [saved*H] those of step t-1 (zeros at t = 0) */
    const float *h_prev;     /* [H] h_{t-1} (zeros at t = 0) */
    float *h;                /* [H] h_t */
    float *dh;               /* [H] backward: dL/dh_t (the cell may overwrite it) */
    float *dh_prev;          /* [H] backward: out dL/dh_{t-1} apart from the path through W_hh */
    float *dc;               /* [H] lstm backward: in dL/dc_t from later steps, out dL/dc_{t-1} */
} StepRow;

typedef struct Cell {
    const char *onnx_op; /* ONNX's operator: RNN, LSTM or GRU */
    /* ONNX's gate k is torch's (and cdl's) gate onnx_gate[k]: ONNX stacks LSTM gates as
     * i, o, f, c (torch i, f, g, o) and GRU gates as z, r, h (torch r, z, n). */
    int onnx_gate[4];
    int gates; /* G */
    int saved; /* floats per hidden unit that a step keeps for backward */
    /* dL/d(W_hh h) differs from dL/da (gru's n gate): it gets its own buffer. */
    int dhh_differs;
    void (*forward)(const Layer *l, const StepRow *r);
    void (*backward)(const Layer *l, const StepRow *r);
} Cell;

typedef struct Recurrent {
    const Cell *cell;
    int steps, inputs, hidden; /* T, I, H */
    /* The per-batch state, in the net's slab (recurrent_resize): */
    float *gates;    /* [batch][T][G*H] gate values; in backward dL/da */
    float *saved;    /* [batch][T][saved*H] */
    float *dhh;      /* [batch][T][G*H] when dhh_differs, else gates */
    float *hh;       /* [batch][G*H] W_hh h_{t-1} of one step */
    float *dh;       /* [batch][H] dL/dh_t of one step */
    float *dh_carry; /* [batch][H] dL/dh_t that step t+1 sends back */
    float *dc;       /* [batch][H] lstm: dL/dc_t that step t+1 sends back */
    float *zeros;    /* [G*H] the state before the first step */
    /* precision=bf16: the weights as the last forward rounded them, the input [batch][T][I] and
     * one step's h_{t-1} [batch][H] */
    float *w_ih_bf16, *w_hh_bf16, *x_bf16, *h_bf16;
    /* Work: W_hh as the per-step products take it (gemm_pack), W_hh^T [H][G*H] in forward and
     * W_hh [G*H][H] in backward, packed by each call that runs steps; before them forward's
     * W_ih^T [I][G*H], after them backward's W_ih [G*H][I], then [dW_ih | dW_hh]^T [I+H][G*H] */
    float *w_hh_packed;
    /* The fused lstm (fused_lstm), U = ceil(H / UNIT) blocks of hidden units: */
    int fused;    /* [lstm] fused=: 1, 0, or -1 (auto: as 1) */
    float *xh;    /* [T+1][batch][ld_xh] the steps' operand rows x_t, h_{t-1} (zeros at t = 0); in
                     slot T only h_{T-1}. The per-step path: work [batch*T][I+H], backward's x_t,
                     h_{t-1} of each row for the weight gradients */
    float *dx_tm; /* work [T][batch][I]: backward's dL/dx, a step's rows together */
    float *wcat;  /* work: forward [W_ih | W_hh]^T [I+H][4 U UNIT], gate g of block u in
                     panel g U + u;
                     backward W_hh [G*H][H] (U panels), then W_ih [G*H][I], then
                     [dW_ih | dW_hh] [G*H][I+H] */
    float *tiles; /* work [U][4][batch][UNIT]: a block's gate products of one step */
    /* The fused lstm reading layer 0's [embedding] (set at parse; used when time_major): its
     * input rows are rows of the embedding's weights E [vocab][I], so forward takes x_t W_ih^T +
     * b_ih + b_hh from a table of vocab + 1 rows (E W_ih^T + the biases; the last, for an id
     * outside [0, vocab), the biases alone) and the steps multiply h_{t-1} W_hh^T alone; backward
     * sums dL/da by token id and takes dW_ih = sums^T E and E's gradient sums W_ih from those
     * (vocab rows instead of batch*T), leaving the embedding's delta to its other readers:
     * 3 products of batch*T x I x G*H become vocab-row ones (char_lstm: a fifth of the FLOPs).
     * NULL: the input's own rows. */
    const Layer *embedding;
    float *token_rows; /* work: forward the table [vocab+1][G*H], backward the sums [vocab][G*H] */
    int *token_of;     /* state [T][batch]: the table row of each step's sample, set by forward */
    float *bias;       /* work [G*H] forward b_ih + b_hh, backward dL/db */
    /* Set by resize, the layer runs the fused lstm (fused_lstm), and step t of sample b keeps its
     * gates and saved values in row t batch + b (a step's rows together, ld_* floats apart: a row
     * and a pad, so that a column block of a step's rows does not fall in one cache set); else in
     * row b T + t, ld_* the rows' width. */
    int time_major;
    size_t ld_gates, ld_saved, ld_xh;
} Recurrent;

/* ---- cells: one sample's step, forward and backward ---- */

static int hidden_of(const Layer *l)
{
    return ((const Recurrent *)l->priv)->hidden;
}

/* a[n] += b_ih + hh + b_hh: the pre-activations of n gate values. */
static void add_recurrent_terms(float *a, const float *b_ih, const float *hh, const float *b_hh,
                                int n)
{
    for (int j = 0; j < n; j++)
        a[j] += b_ih[j] + hh[j] + b_hh[j];
}

/* saved: nothing; gates: a_t, which the activation's derivative reads. */
static void rnn_forward(const Layer *l, const StepRow *r)
{
    const int H = hidden_of(l);
    add_recurrent_terms(r->gates, l->params[P_BIASES_IH].data, r->hh, l->params[P_BIASES_HH].data,
                        H);
    activation_forward(r->gates, r->h, (size_t)H, l->activation);
}

static void rnn_backward(const Layer *l, const StepRow *r)
{
    const size_t H = (size_t)hidden_of(l);
    activation_backward(r->gates, r->h, r->dh, H, l->activation);
    memcpy(r->gates, r->dh, H * sizeof *r->gates);
    memset(r->dh_prev, 0, H * sizeof *r->dh_prev);
}

/* saved: c_t, then tanh(c_t); gates: i, f, g, o. */
static void lstm_forward(const Layer *l, const StepRow *r)
{
    const int H = hidden_of(l);
    float *i = r->gates, *f = i + H, *g = f + H, *o = g + H;
    float *c = r->saved, *tanh_c = c + H;
    const float *c_prev = r->saved_prev;
    add_recurrent_terms(r->gates, l->params[P_BIASES_IH].data, r->hh, l->params[P_BIASES_HH].data,
                        4 * H);
    activation_forward(i, i, 2 * (size_t)H, CDL_ACT_LOGISTIC);
    activation_forward(g, g, (size_t)H, CDL_ACT_TANH);
    activation_forward(o, o, (size_t)H, CDL_ACT_LOGISTIC);
    for (int j = 0; j < H; j++)
        c[j] = f[j] * c_prev[j] + i[j] * g[j];
    activation_forward(c, tanh_c, (size_t)H, CDL_ACT_TANH);
    for (int j = 0; j < H; j++)
        r->h[j] = o[j] * tanh_c[j];
}

/* lstm_backward of n hidden units: the row's pointers at the first one, the gates H apart, and
 * tanh(c_t) at tanh_c (the fused lstm's recomputed, the per-step path's saved). */
static inline void lstm_backward_units(const StepRow *r, const float *tanh_c, int H, int n)
{
    float *i = r->gates, *f = i + H, *g = f + H, *o = g + H;
    const float *c_prev = r->saved_prev;
#pragma omp simd /* element j reads and writes index j of each row only */
    for (int j = 0; j < n; j++) {
        const float dh = r->dh[j], tc = tanh_c[j];
        const float dc = r->dc[j] + dh * o[j] * (1 - tc * tc);
        const float di = dc * g[j] * i[j] * (1 - i[j]);
        const float df = dc * c_prev[j] * f[j] * (1 - f[j]);
        const float dg = dc * i[j] * (1 - g[j] * g[j]);
        const float d_o = dh * tc * o[j] * (1 - o[j]);
        r->dc[j] = dc * f[j];
        i[j] = di;
        f[j] = df;
        g[j] = dg;
        o[j] = d_o;
        r->dh_prev[j] = 0;
    }
}

static void lstm_backward(const Layer *l, const StepRow *r)
{
    const int H = hidden_of(l);
    lstm_backward_units(r, r->saved + H, H, H);
}

/* saved: W_hn h_{t-1} + b_hn; gates: r, z, n. */
static void gru_forward(const Layer *l, const StepRow *r)
{
    const int H = hidden_of(l);
    const float *b_ih = l->params[P_BIASES_IH].data, *b_hh = l->params[P_BIASES_HH].data;
    float *reset = r->gates, *update = reset + H, *n = update + H, *hn = r->saved;
    add_recurrent_terms(reset, b_ih, r->hh, b_hh, 2 * H);
    activation_forward(reset, reset, 2 * (size_t)H, CDL_ACT_LOGISTIC);
    for (int j = 0; j < H; j++) {
        hn[j] = r->hh[2 * H + j] + b_hh[2 * H + j];
        n[j] += b_ih[2 * H + j] + reset[j] * hn[j];
    }
    activation_forward(n, n, (size_t)H, CDL_ACT_TANH);
    for (int j = 0; j < H; j++)
        r->h[j] = (1 - update[j]) * n[j] + update[j] * r->h_prev[j];
}

static void gru_backward(const Layer *l, const StepRow *r)
{
    const int H = hidden_of(l);
    float *reset = r->gates, *update = reset + H, *n = update + H;
    const float *hn = r->saved;
    for (int j = 0; j < H; j++) {
        const float dh = r->dh[j], rj = reset[j], zj = update[j], nj = n[j];
        const float dn = dh * (1 - zj) * (1 - nj * nj);
        const float dz = dh * (r->h_prev[j] - nj) * zj * (1 - zj);
        const float dr = dn * hn[j] * rj * (1 - rj);
        r->dh_prev[j] = dh * zj;
        reset[j] = r->dhh[j] = dr;
        update[j] = r->dhh[H + j] = dz;
        n[j] = dn;
        r->dhh[2 * H + j] = dn * rj;
    }
}

static const Cell rnn_cell = {"RNN", {0}, 1, 0, 0, rnn_forward, rnn_backward};
static const Cell lstm_cell = {"LSTM", {0, 3, 1, 2}, 4, 2, 0, lstm_forward, lstm_backward};
static const Cell gru_cell = {"GRU", {1, 0, 2}, 3, 1, 1, gru_forward, gru_backward};

/* ---- the layer ---- */

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
    rc->embedding = cell == &lstm_cell && l->n_inputs == 1 && l->inputs[0] == 0 &&
                            first->type->reads_token_ids && first->n_params == 1 &&
                            first->params[0].n_dims == 2 && first->params[0].dims[1] == in.w
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

/* The layer is to run the fused lstm: [lstm] in float32 (bf16 takes the reference) with fused=1
 * or fused=-1 (the default, at one thread too: there it measured faster than the per-step path
 * once the input projection ran inside the steps). */
static int fused_lstm(const Layer *l)
{
    const Recurrent *rc = l->priv;
    return rc->cell == &lstm_cell && rc->fused != 0 && l->precision == GEMM_FP32;
}

static int unit_blocks(const Recurrent *rc)
{
    return (rc->hidden + UNIT - 1) / UNIT;
}

static int recurrent_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Recurrent *rc = l->priv;
    const Cell *cell = rc->cell;
    const size_t B = (size_t)batch, T = (size_t)rc->steps, H = (size_t)rc->hidden;
    const size_t GH = (size_t)cell->gates * H, SH = (size_t)cell->saved * H;
    rc->time_major = fused_lstm(l);
    const size_t pad = rc->time_major ? ROW_PAD : 0;
    rc->ld_gates = GH + pad;
    rc->ld_saved = SH + pad;
    rc->ld_xh = (size_t)rc->inputs + H + pad;
    rc->gates = layer_state_floats(st, B * T * rc->ld_gates);
    rc->saved = layer_state_floats(st, B * T * rc->ld_saved);
    rc->dhh = cell->dhh_differs ? layer_state_floats(st, B * T * GH) : rc->gates;
    rc->hh = layer_state_floats(st, B * GH);
    rc->dh = layer_state_floats(st, B * H);
    rc->dh_carry = layer_state_floats(st, B * H);
    rc->dc = layer_state_floats(st, B * H);
    rc->zeros = layer_state_floats(st, GH);
    const int bf16 = l->precision == GEMM_BF16;
    rc->w_ih_bf16 = layer_state_floats(st, bf16 ? GH * (size_t)rc->inputs : 0);
    rc->w_hh_bf16 = layer_state_floats(st, bf16 ? GH * H : 0);
    rc->x_bf16 = layer_state_floats(st, bf16 ? B * T * (size_t)rc->inputs : 0);
    rc->h_bf16 = layer_state_floats(st, bf16 ? B * H : 0);
    if (fused_lstm(l)) {
        const size_t I = (size_t)rc->inputs, U = (size_t)unit_blocks(rc), K = I + H;
        rc->xh = layer_state_floats(st, (T + 1) * B * rc->ld_xh);
        rc->dx_tm = layer_work_floats(st, T * B * I);
        /* one at a time: the packed [W_ih | W_hh]^T; backward's W_hh, W_ih, then
         * [dW_ih | dW_hh] */
        const size_t uses[] = {4 * U * UNIT * K, gemm_packed_floats((int)GH, (int)H),
                               gemm_packed_floats((int)GH, (int)I), GH * K};
        size_t most = 0;
        for (size_t k = 0; k < sizeof uses / sizeof uses[0]; k++)
            most = uses[k] > most ? uses[k] : most;
        rc->wcat = layer_work_floats(st, most);
        rc->tiles = layer_work_floats(st, U * 4 * B * UNIT);
        rc->bias = layer_work_floats(st, GH);
        rc->token_rows = layer_work_floats(
            st, rc->embedding ? ((size_t)rc->embedding->params[0].dims[0] + 1) * GH : 0);
        rc->token_of = layer_state_bytes(st, rc->embedding ? T * B * sizeof *rc->token_of : 0);
        return CDL_OK;
    }
    /* W_hh^T, W_hh, W_ih^T and W_ih packed, one at a time */
    const int I = rc->inputs;
    size_t most = gemm_packed_floats((int)H, (int)GH);
    const size_t others[] = {gemm_packed_floats((int)GH, (int)H), gemm_packed_floats(I, (int)GH),
                             gemm_packed_floats((int)GH, I)};
    for (int k = 0; k < 3; k++)
        most = others[k] > most ? others[k] : most;
    /* and backward's [dW_ih | dW_hh] [G*H][I+H] */
    const size_t dw = GH * ((size_t)I + H);
    rc->w_hh_packed = layer_work_floats(st, most > dw ? most : dw);
    rc->xh = layer_work_floats(st, B * T * ((size_t)I + H));
    return CDL_OK;
}

/* The weights the products take: the forward's bf16 copy, or the float32 tensor. */
static const float *weights_for(const Layer *l, int param, const float *bf16_copy)
{
    return l->precision == GEMM_BF16 ? bf16_copy : l->params[param].data;
}

/* rows[n] of a matrix with row stride ld, width values each, as the products take them: x
 * itself in float32 (*ld_out = ld), rounded into copy [n][width] in bf16 (*ld_out = width). */
static const float *rows_operand(const Layer *l, const float *x, int n, int width, int ld,
                                 float *copy, int *ld_out)
{
    *ld_out = ld;
    if (l->precision != GEMM_BF16)
        return x;
    for (int r = 0; r < n; r++)
        gemm_operand(l->precision, x + (size_t)r * ld, (size_t)width, copy + (size_t)r * width);
    *ld_out = width;
    return copy;
}

/* The row of the gates and saved values of step t of sample b (Recurrent.time_major). */
static size_t state_row(const Recurrent *rc, int batch, int b, int t)
{
    return rc->time_major ? (size_t)t * batch + (size_t)b : (size_t)b * rc->steps + (size_t)t;
}

/* Row `row` of the saved values; NULL for a cell that saves none (rc->saved is then NULL, and
 * offsetting a null pointer, even by 0, is undefined). */
static float *saved_row(const Recurrent *rc, size_t row)
{
    return rc->cell->saved ? rc->saved + row * rc->ld_saved : NULL;
}

/* W_hh^T [H][G*H] packed for the steps' products (the weights as the forward rounded them). */
static void pack_forward_weights(const Layer *l)
{
    const Recurrent *rc = l->priv;
    const int H = rc->hidden, GH = rc->cell->gates * H;
    gemm_pack(1, H, GH, weights_for(l, P_WEIGHTS_HH, rc->w_hh_bf16), H, rc->w_hh_packed);
}

/* Step t for every sample: gates row t holds W_ih x_t; h_{t-1} is row t-1 of l->out. packed:
 * pack_forward_weights' W_hh^T, or NULL for a plain gemm (forward_at, whose work memory the plan
 * does not keep from one call to the next). */
static void recurrent_step(Layer *l, const StepContext *ctx, int t, const float *packed)
{
    Recurrent *rc = l->priv;
    const int batch = ctx->batch, T = rc->steps, H = rc->hidden;
    const int GH = rc->cell->gates * H;
    /* The state holds nothing from an earlier pass (another layer may have used it since). */
    if (t == 0)
        memset(rc->zeros, 0, (size_t)GH * sizeof *rc->zeros);
    /* hh[batch][G*H] = h_{t-1} W_hh^T, the rows h_{t-1} of the batch T*H apart */
    if (t > 0) {
        int ld;
        const float *h_prev =
            rows_operand(l, l->out + (size_t)(t - 1) * H, batch, H, T * H, rc->h_bf16, &ld);
        if (packed)
            gemm_packed(batch, GH, H, h_prev, ld, packed, 0.0f, rc->hh, GH);
        else
            gemm(0, 1, batch, GH, H, 1.0f, h_prev, ld, weights_for(l, P_WEIGHTS_HH, rc->w_hh_bf16),
                 H, 0.0f, rc->hh, GH);
    }
#pragma omp parallel for schedule(static) if ((size_t)batch * GH >= RECURRENT_PARALLEL_MIN)
    for (int b = 0; b < batch; b++) {
        const size_t row = state_row(rc, batch, b, t), out_row = (size_t)b * T + (size_t)t;
        const StepRow r = {
            .gates = rc->gates + row * rc->ld_gates,
            .hh = t > 0 ? rc->hh + (size_t)b * GH : rc->zeros,
            .saved = saved_row(rc, row),
            .saved_prev = t > 0 ? saved_row(rc, state_row(rc, batch, b, t - 1)) : rc->zeros,
            .h_prev = t > 0 ? l->out + (out_row - 1) * H : rc->zeros,
            .h = l->out + out_row * H,
        };
        rc->cell->forward(l, &r);
    }
}

/* ---- the fused lstm ---- */

/* This thread's share [*lo, *hi) of n items, in order of thread number. */
static void thread_share(int n, int *lo, int *hi)
{
    const int nth = omp_get_num_threads(), tid = omp_get_thread_num();
    *lo = (int)((long)n * tid / nth);
    *hi = (int)((long)n * (tid + 1) / nth);
}

/* Hidden units j0.. of block u, and how many of them exist (the last block may be short). */
static int block_units(const Recurrent *rc, int u, int *j0)
{
    *j0 = u * UNIT;
    return rc->hidden - *j0 < UNIT ? rc->hidden - *j0 : UNIT;
}

/* The embedding whose weight rows are the fused lstm's inputs (Recurrent.embedding), or NULL. */
static const Layer *token_input(const Recurrent *rc)
{
    return rc->time_major ? rc->embedding : NULL;
}

/* The columns of the operand rows [x_t, h_{t-1}] that the steps' products take: I, or none
 * (0) when x_t W_ih^T comes from the token table. */
static int x_columns(const Recurrent *rc)
{
    return token_input(rc) ? 0 : rc->inputs;
}

/* The token table's row for the embedding's input row r ([batch][T]): its id, or vocab (the
 * biases alone) for an id outside [0, vocab), as [embedding] gives such an id a zero row. */
static int token_row(const Layer *emb, size_t r)
{
    const float id = emb->in[0][r];
    const int vocab = (int)emb->params[0].dims[0];
    return id >= 0 && id < (float)vocab ? (int)id : vocab;
}

/* Block u's panels of the forward's [W_ih | W_hh]^T (rc->wcat; W_hh^T alone with a token
 * table), by the thread that uses them. */
static void fused_pack_forward(const Layer *l, int u)
{
    const Recurrent *rc = l->priv;
    const int I = rc->inputs, H = rc->hidden, U = unit_blocks(rc), X = x_columns(rc), K = X + H;
    int j0;
    const int n = block_units(rc, u, &j0);
    for (int g = 0; g < 4; g++) {
        float *panel = rc->wcat + (size_t)(g * U + u) * UNIT * K;
        const size_t row = (size_t)g * H + (size_t)j0;
        if (X)
            gemm_pack_rows(1, I, n, l->params[P_WEIGHTS_IH].data + row * I, I, 0, K, panel);
        gemm_pack_rows(1, H, n, l->params[P_WEIGHTS_HH].data + row * H, H, X, K, panel);
    }
}

/* Blocks ahead of the running one whose state lines prefetch_lines fetches: a step ahead they
 * were gone again, evicted by the step's weight panels; one block ahead left the backward's cell
 * waiting on them (2 measured ~25% less time in its pass than 1, 4 no better). */
enum { PREFETCH_BLOCKS = 2 };

/* The block PREFETCH_BLOCKS after block u of step t in a thread's order (its blocks lo..hi-1 of
 * each step, the steps in direction dir = 1 or -1 over 0..T-1): its step, -1 past the last, and
 * in *u_ahead the block. */
static int block_ahead(int t, int u, int lo, int hi, int dir, int T, int *u_ahead)
{
    const int ahead = u - lo + PREFETCH_BLOCKS, t_ahead = t + dir * (ahead / (hi - lo));
    *u_ahead = lo + ahead % (hi - lo);
    return t_ahead >= 0 && t_ahead < T ? t_ahead : -1;
}

/* Prefetches the lines that block u of step t (hidden units u UNIT.., UNIT floats = one line)
 * reads and writes in sample b's state row: its four gates and c_t, and in backward
 * (delta: l->delta) its c_{t-1} and dL/dh_t; sample by sample, while an earlier block runs.
 * t < 0: none. */
static inline void prefetch_lines(const Recurrent *rc, int batch, int t, int u, int b,
                                  const float *delta)
{
    if (t >= 0) {
        const size_t row = (size_t)t * batch + b, j0 = (size_t)u * UNIT;
        const float *gates = rc->gates + row * rc->ld_gates + j0;
        const float *saved = rc->saved + row * rc->ld_saved + j0;
        for (int g = 0; g < 4; g++)
            __builtin_prefetch(gates + (size_t)g * rc->hidden, 1);
        __builtin_prefetch(saved, 1);
        if (delta && t > 0)
            __builtin_prefetch(saved - (size_t)batch * rc->ld_saved);
        if (delta)
            __builtin_prefetch(delta + ((size_t)b * rc->steps + (size_t)t) * rc->hidden + j0);
    }
}

/* The fused lstm's gate nonlinearities, one exponential (ops/exp_vec.h) and one reciprocal each:
 * sigmoid(x) = 1 / (1 + e^-x), and tanh(x) = 2 sigmoid(2x) - 1, within ~2e-7 of tanh (absolute;
 * activation's tanh pays a second polynomial for its relative precision near 0). With AVX-512 16
 * lanes at a time, the reciprocal by recip16 (a division costs several times as much); with AVX2 +
 * FMA 8 lanes, recip8, for the blocks of UNIT units (the cell's share of char_lstm's step at 1
 * thread on Zen 3, in perf: 5.6% -> 4.7%); else, and for a last block of fewer units, scalar, for
 * a simd loop. */
#if defined(__AVX512F__)
static inline __m512 gate_sigmoid16(__m512 x)
{
    return recip16(
        _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

static inline __m512 gate_tanh16(__m512 x)
{
    return _mm512_fmsub_ps(_mm512_set1_ps(2.0f), gate_sigmoid16(_mm512_add_ps(x, x)),
                           _mm512_set1_ps(1.0f));
}
#else
#if defined(__AVX2__) && defined(__FMA__)
static inline __m256 gate_sigmoid8(__m256 x)
{
    return recip8(_mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

static inline __m256 gate_tanh8(__m256 x)
{
    return _mm256_fmsub_ps(_mm256_set1_ps(2.0f), gate_sigmoid8(_mm256_add_ps(x, x)),
                           _mm256_set1_ps(1.0f));
}
#endif
static inline float gate_sigmoid(float x)
{
    return 1.0f / (1.0f + exp_vec(-x));
}

static inline float gate_tanh(float x)
{
    return 2.0f / (1.0f + exp_vec(-2.0f * x)) - 1.0f;
}
#endif

/* One sample's cell forward for n <= UNIT hidden units: gate g's products at a + g bu and its
 * biases at bias + g H, c_{t-1} at c_prev; out the gate values (gates + g H), c_t (saved) and
 * h_t, as lstm_forward computes them but for the nonlinearities. tanh(c_t) is not kept: backward
 * takes it again by cell_tanh_row, the same steps, so the same bits (a line less per row and
 * block to write here and read back there, where the state comes from memory: char_lstm's
 * tokens a second 1.016x at 1 thread, 13 alternating runs, 1.024x at 2, the recomputation
 * included). */
static inline __attribute__((always_inline)) void
cell_forward_row(const float *a, size_t bu, const float *bias, int H, const float *c_prev,
                 float *gates, float *saved, float *h, int n)
{
#if defined(__AVX512F__)
    _Static_assert(UNIT == 16, "a block's row is one vector");
    const __mmask16 m = lanes16(n);
    __m512 v[4];
    for (int g = 0; g < 4; g++)
        v[g] = _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + g * bu),
                             _mm512_maskz_loadu_ps(m, bias + (size_t)g * H));
    const __m512 i = gate_sigmoid16(v[0]), f = gate_sigmoid16(v[1]);
    const __m512 g = gate_tanh16(v[2]), o = gate_sigmoid16(v[3]);
    const __m512 c =
        _mm512_add_ps(_mm512_mul_ps(f, _mm512_maskz_loadu_ps(m, c_prev)), _mm512_mul_ps(i, g));
    const __m512 tanh_c = gate_tanh16(c);
    _mm512_mask_storeu_ps(gates, m, i);
    _mm512_mask_storeu_ps(gates + H, m, f);
    _mm512_mask_storeu_ps(gates + 2 * (size_t)H, m, g);
    _mm512_mask_storeu_ps(gates + 3 * (size_t)H, m, o);
    _mm512_mask_storeu_ps(saved, m, c);
    _mm512_mask_storeu_ps(h, m, _mm512_mul_ps(o, tanh_c));
#else
#if defined(__AVX2__) && defined(__FMA__)
    if (n == UNIT) {
        for (int j = 0; j < UNIT; j += 8) {
            __m256 v[4];
            for (int g = 0; g < 4; g++)
                v[g] = _mm256_add_ps(_mm256_loadu_ps(a + g * bu + j),
                                     _mm256_loadu_ps(bias + (size_t)g * H + j));
            const __m256 i = gate_sigmoid8(v[0]), f = gate_sigmoid8(v[1]);
            const __m256 g = gate_tanh8(v[2]), o = gate_sigmoid8(v[3]);
            const __m256 c =
                _mm256_add_ps(_mm256_mul_ps(f, _mm256_loadu_ps(c_prev + j)), _mm256_mul_ps(i, g));
            const __m256 tanh_c = gate_tanh8(c);
            _mm256_storeu_ps(gates + j, i);
            _mm256_storeu_ps(gates + H + j, f);
            _mm256_storeu_ps(gates + 2 * (size_t)H + j, g);
            _mm256_storeu_ps(gates + 3 * (size_t)H + j, o);
            _mm256_storeu_ps(saved + j, c);
            _mm256_storeu_ps(h + j, _mm256_mul_ps(o, tanh_c));
        }
        return;
    }
#endif
#pragma omp simd
    for (int j = 0; j < n; j++) {
        const float i = gate_sigmoid(a[j] + bias[j]);
        const float f = gate_sigmoid(a[bu + j] + bias[H + j]);
        const float g = gate_tanh(a[2 * bu + j] + bias[2 * H + j]);
        const float o = gate_sigmoid(a[3 * bu + j] + bias[3 * H + j]);
        const float c = f * c_prev[j] + i * g, tanh_c = gate_tanh(c);
        gates[j] = i;
        gates[H + j] = f;
        gates[2 * H + j] = g;
        gates[3 * H + j] = o;
        saved[j] = c;
        h[j] = o * tanh_c;
    }
#endif
}

/* tanh(c) of n <= UNIT hidden units into out, as cell_forward_row took it for the same n. */
static inline __attribute__((always_inline)) void cell_tanh_row(const float *c, float *out, int n)
{
#if defined(__AVX512F__)
    const __mmask16 m = lanes16(n);
    _mm512_mask_storeu_ps(out, m, gate_tanh16(_mm512_maskz_loadu_ps(m, c)));
#else
#if defined(__AVX2__) && defined(__FMA__)
    if (n == UNIT) {
        for (int j = 0; j < UNIT; j += 8)
            _mm256_storeu_ps(out + j, gate_tanh8(_mm256_loadu_ps(c + j)));
        return;
    }
#endif
#pragma omp simd
    for (int j = 0; j < n; j++)
        out[j] = gate_tanh(c[j]);
#endif
}

/* Step t of the n hidden units j0.. (block u) for every sample: the four gate panels of
 * [x_t, h_{t-1}] [W_ih | W_hh]^T into tile [4][batch][UNIT], then in one pass over the tile the
 * biases and the cell (cell_forward_row, sample by sample): the values backward reads (gates and
 * c_t) and h_t into the operand rows of step t+1. Inlined with n = UNIT for the full
 * blocks, so the loops are whole vectors. */
static inline __attribute__((always_inline)) void
forward_units(Layer *l, int batch, int t, int u, int j0, int n, float *tile, int next_t, int next_u)
{
    Recurrent *rc = l->priv;
    const int I = rc->inputs, H = rc->hidden, U = unit_blocks(rc), X = x_columns(rc);
    const size_t BU = (size_t)batch * UNIT, step = (size_t)t * batch;
    const size_t K = (size_t)X + H;
    for (int g = 0; g < 4; g += 2) /* W_ih x_t + W_hh h_{t-1}, two gates' panels at a time */
        gemm_packed_two_panels(batch, (int)K, rc->xh + step * rc->ld_xh + (I - X), (int)rc->ld_xh,
                               rc->wcat + (size_t)(g * U + u) * UNIT * K,
                               rc->wcat + (size_t)((g + 1) * U + u) * UNIT * K, 0.0f, tile + g * BU,
                               tile + (g + 1) * BU, UNIT);
    const int tokens = token_input(rc) != NULL;
    const float *bias = rc->bias + j0; /* b_ih + b_hh, or the token's row of the table */
    for (int b = 0; b < batch; b++) {
        const size_t row = step + b;
        if (tokens)
            bias = rc->token_rows + (size_t)rc->token_of[row] * 4 * H + j0;
        prefetch_lines(rc, batch, next_t, next_u, b, NULL);
        const float *a = tile + (size_t)b * UNIT;
        const float *c_prev = t > 0 ? rc->saved + (row - batch) * rc->ld_saved + j0 : rc->zeros;
        float *gates = rc->gates + row * rc->ld_gates + j0;
        float *saved = rc->saved + row * rc->ld_saved + j0;
        float *h = rc->xh + (row + batch) * rc->ld_xh + I + j0;
        cell_forward_row(a, BU, bias, H, c_prev, gates, saved, h, n);
    }
}

/* forward_units of block u, in the tile of the calling thread's first block (one tile per
 * thread stays in L1 from block to block); prefetching for block u1 of step t1. */
static void fused_forward_block(Layer *l, int batch, int t, int u, float *tile, int t1, int u1)
{
    const Recurrent *rc = l->priv;
    int j0;
    const int n = block_units(rc, u, &j0);
    if (n == UNIT)
        forward_units(l, batch, t, u, j0, UNIT, tile, t1, u1);
    else
        forward_units(l, batch, t, u, j0, n, tile, t1, u1);
}

static void fused_forward(Layer *l, const StepContext *ctx)
{
    Recurrent *rc = l->priv;
    const int batch = ctx->batch, T = rc->steps, I = rc->inputs, H = rc->hidden;
    const int U = unit_blocks(rc), rows = batch * T;
    const float *b_ih = l->params[P_BIASES_IH].data, *b_hh = l->params[P_BIASES_HH].data;
    for (int j = 0; j < 4 * H; j++)
        rc->bias[j] = b_ih[j] + b_hh[j];
    memset(rc->zeros, 0, 4 * (size_t)H * sizeof *rc->zeros);
    const Layer *emb = token_input(rc);
    if (emb) { /* table [vocab+1][G*H] = the biases, + E W_ih^T in the first vocab rows */
        const int vocab = (int)emb->params[0].dims[0];
        for (int v = 0; v <= vocab; v++)
            memcpy(rc->token_rows + (size_t)v * 4 * H, rc->bias, 4 * (size_t)H * sizeof *rc->bias);
        gemm(0, 1, vocab, 4 * H, I, 1.0f, emb->params[0].data, I, l->params[P_WEIGHTS_IH].data, I,
             1.0f, rc->token_rows, 4 * H);
    }
    const int X = x_columns(rc);
#pragma omp parallel
    {
        int lo, hi;
        thread_share(rows, &lo, &hi);
        for (int r = lo; r < hi; r++) { /* the operand rows: x_t (or its table row), h_{-1} = 0 */
            const int b = r / T, t = r % T;
            float *dst = rc->xh + ((size_t)t * batch + b) * rc->ld_xh;
            if (X)
                memcpy(dst, l->in[0] + (size_t)r * I, (size_t)I * sizeof *dst);
            else
                rc->token_of[(size_t)t * batch + b] = token_row(emb, (size_t)r);
            if (t == 0)
                memset(dst + I, 0, (size_t)H * sizeof *dst);
        }
    }
#pragma omp parallel
    {
        int lo, hi;
        thread_share(U, &lo, &hi);
        for (int u = lo; u < hi; u++)
            fused_pack_forward(l, u);
#pragma omp barrier
        float *tile = rc->tiles + (size_t)lo * 4 * batch * UNIT;
        for (int t = 0; t < T; t++) {
            for (int u = lo; u < hi; u++) {
                int u_ahead;
                const int t_ahead = block_ahead(t, u, lo, hi, 1, T, &u_ahead);
                fused_forward_block(l, batch, t, u, tile, t_ahead, u_ahead);
            }
#pragma omp barrier
        }
        thread_share(rows, &lo, &hi);
        for (int r = lo; r < hi; r++) { /* l->out row (b, t): h_t, operand slot t+1 */
            const int b = r / T, t = r % T;
            memcpy(l->out + (size_t)r * H, rc->xh + ((size_t)(t + 1) * batch + b) * rc->ld_xh + I,
                   (size_t)H * sizeof *l->out);
        }
    }
}

/* Step t of the n hidden units j0.. for every sample: dL/dh_t (l->delta, and rc->dh_carry from
 * step t+1), the cell's backward (lstm_backward_units), dL/da_t into the gates (step t-1's product
 * operand), summed into the bias gradient rc->bias. Inlined with n = UNIT for the full blocks. */
static inline __attribute__((always_inline)) void backward_units(Layer *l, int batch, int t, int j0,
                                                                 int n, int next_t, int next_u)
{
    Recurrent *rc = l->priv;
    const int H = rc->hidden;
    for (int b = 0; b < batch; b++) {
        const size_t row = (size_t)t * batch + b, at = (size_t)b * H + j0;
        prefetch_lines(rc, batch, next_t, next_u, b, l->delta);
        float *dh = rc->dh + at, *carry = rc->dh_carry + at;
        const float *delta = l->delta + ((size_t)b * rc->steps + (size_t)t) * H + j0;
#pragma omp simd
        for (int j = 0; j < n; j++)
            dh[j] = delta[j] + carry[j];
        const StepRow r = {
            .gates = rc->gates + row * rc->ld_gates + j0,
            .saved = rc->saved + row * rc->ld_saved + j0,
            .saved_prev = t > 0 ? rc->saved + (row - batch) * rc->ld_saved + j0 : rc->zeros,
            .dh = dh,
            .dh_prev = carry,
            .dc = rc->dc + at,
        };
        float tanh_c[UNIT];
        cell_tanh_row(r.saved, tanh_c, n);
        lstm_backward_units(&r, tanh_c, H, n);
        for (int g = 0; g < 4; g++) {
            const size_t col = (size_t)g * H + j0;
            const float *d = r.gates + (size_t)g * H;
#pragma omp simd
            for (int j = 0; j < n; j++)
                rc->bias[col + j] += d[j];
        }
    }
}

/* backward_units of block u, prefetching for block u1 of step t1. */
static void fused_backward_block(Layer *l, int batch, int t, int u, int t1, int u1)
{
    const Recurrent *rc = l->priv;
    int j0;
    const int n = block_units(rc, u, &j0);
    if (n == UNIT)
        backward_units(l, batch, t, j0, UNIT, t1, u1);
    else
        backward_units(l, batch, t, j0, n, t1, u1);
}

/* The fused lstm's weight gradients on a token table (Recurrent.embedding), dL/da in the gate
 * rows: sums[v] = the rows of the tokens of id v; dW_ih += sums^T E, E's gradient += sums W_ih
 * (unless the embedding is frozen), dW_hh += dL/da^T h_{t-1} over every row. */
static void token_weight_gradients(Layer *l, const Layer *emb, int batch)
{
    Recurrent *rc = l->priv;
    const int T = rc->steps, I = rc->inputs, H = rc->hidden, GH = 4 * H, rows = batch * T;
    const int vocab = (int)emb->params[0].dims[0];
    float *sums = rc->token_rows;
    memset(sums, 0, (size_t)vocab * GH * sizeof *sums);
#pragma omp parallel
    { /* the threads split the columns: each sum in row order, no two threads on one value */
        int lo, hi;
        thread_share(GH, &lo, &hi);
        for (int r = 0; r < rows; r++) {
            const size_t v = (size_t)rc->token_of[r];
            if (v == (size_t)vocab)
                continue;
            const float *d = rc->gates + (size_t)r * rc->ld_gates;
            float *sum = sums + v * GH;
#pragma omp simd
            for (int j = lo; j < hi; j++)
                sum[j] += d[j];
        }
    }
    gemm(1, 0, GH, I, vocab, 1.0f, sums, GH, emb->params[0].data, I, 1.0f,
         l->params[P_WEIGHTS_IH].grad, I);
    if (emb->params[0].grad)
        gemm(0, 0, vocab, I, GH, 1.0f, sums, GH, l->params[P_WEIGHTS_IH].data, I, 1.0f,
             emb->params[0].grad, I);
    gemm(1, 0, GH, H, rows, 1.0f, rc->gates, (int)rc->ld_gates, rc->xh + I, (int)rc->ld_xh, 1.0f,
         l->params[P_WEIGHTS_HH].grad, H);
}

static void fused_backward(Layer *l, const StepContext *ctx)
{
    Recurrent *rc = l->priv;
    const int batch = ctx->batch, T = rc->steps, I = rc->inputs, H = rc->hidden;
    const int GH = 4 * H, U = unit_blocks(rc), rows = batch * T;
    float *dx = l->in_delta[0], *w_hh = rc->wcat;
    memset(rc->bias, 0, (size_t)GH * sizeof *rc->bias);
    memset(rc->zeros, 0, (size_t)GH * sizeof *rc->zeros);
    memset(rc->dh_carry, 0, (size_t)batch * H * sizeof *rc->dh_carry);
    memset(rc->dc, 0, (size_t)batch * H * sizeof *rc->dc);
#pragma omp parallel
    {
        int u0, u1;
        thread_share(U, &u0, &u1);
        /* this thread's panels of W_hh [G*H][H] (its blocks' columns) */
        for (int u = u0; u < u1; u++) {
            int j0;
            const int n = block_units(rc, u, &j0);
            gemm_pack_rows(0, GH, n, l->params[P_WEIGHTS_HH].data + j0, H, 0, GH,
                           w_hh + (size_t)u * UNIT * GH);
        }
#pragma omp barrier
        for (int t = T - 1; t >= 0; t--) {
            if (t < T - 1) /* dh_carry = dL/da_{t+1} W_hh, from the gate rows of step t+1 */
                gemm_packed_panels(batch, H, GH, rc->gates + (size_t)(t + 1) * batch * rc->ld_gates,
                                   (int)rc->ld_gates, w_hh, u0, u1, 0.0f, rc->dh_carry, H);
            for (int u = u0; u < u1; u++) {
                int u_ahead;
                const int t_ahead = block_ahead(t, u, u0, u1, -1, T, &u_ahead);
                fused_backward_block(l, batch, t, u, t_ahead, u_ahead);
            }
#pragma omp barrier
        }
    }
    const Layer *emb = token_input(rc);
    if (dx && !emb) { /* dx += da W_ih, every step at once (time-major rows in dx_tm, then added);
               ops/gemm_packed, as OpenBLAS runs this narrow product at half the speed */
        float *dx_tm = rc->dx_tm;
        gemm_pack(0, GH, I, l->params[P_WEIGHTS_IH].data, I, rc->wcat);
        gemm_packed(rows, I, GH, rc->gates, (int)rc->ld_gates, rc->wcat, 0.0f, dx_tm, I);
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; r++) {
            const int b = r / T, t = r % T;
            const float *src = dx_tm + ((size_t)t * batch + b) * I;
            for (int k = 0; k < I; k++)
                dx[(size_t)r * I + k] += src[k];
        }
    }
    float *db_ih = l->params[P_BIASES_IH].grad, *db_hh = l->params[P_BIASES_HH].grad;
    for (int j = 0; j < GH; j++) {
        db_ih[j] += rc->bias[j];
        db_hh[j] += rc->bias[j];
    }
    if (emb) {
        token_weight_gradients(l, emb, batch);
        return;
    }
    /* [dW_ih | dW_hh] [G*H][I+H] = da^T [x, h_prev] (the operand rows) in one sgemm, into the
     * packed weights' work memory, then added into the two gradients */
    const int K = I + H;
    float *dw = rc->wcat;
    gemm(1, 0, GH, K, rows, 1.0f, rc->gates, (int)rc->ld_gates, rc->xh, (int)rc->ld_xh, 0.0f, dw,
         K);
    float *g_ih = l->params[P_WEIGHTS_IH].grad, *g_hh = l->params[P_WEIGHTS_HH].grad;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < GH; r++) {
        for (int k = 0; k < I; k++)
            g_ih[(size_t)r * I + k] += dw[(size_t)r * K + k];
        for (int k = 0; k < H; k++)
            g_hh[(size_t)r * H + k] += dw[(size_t)r * K + I + k];
    }
}

static void recurrent_forward(Layer *l, const StepContext *ctx)
{
    if (((const Recurrent *)l->priv)->time_major) {
        fused_forward(l, ctx);
        return;
    }
    Recurrent *rc = l->priv;
    const int rows = ctx->batch * rc->steps, I = rc->inputs;
    const int GH = rc->cell->gates * rc->hidden;
    const Param *w_ih = &l->params[P_WEIGHTS_IH], *w_hh = &l->params[P_WEIGHTS_HH];
    gemm_operand(l->precision, w_ih->data, w_ih->count, rc->w_ih_bf16);
    gemm_operand(l->precision, w_hh->data, w_hh->count, rc->w_hh_bf16);
    /* gates[batch*T][G*H] = x[batch*T][I] W_ih^T (ops/gemm_packed: OpenBLAS runs this product
     * of a short K at half the speed) */
    gemm_pack(1, I, GH, weights_for(l, P_WEIGHTS_IH, rc->w_ih_bf16), I, rc->w_hh_packed);
    gemm_packed(rows, GH, I, gemm_operand(l->precision, l->in[0], (size_t)rows * I, rc->x_bf16), I,
                rc->w_hh_packed, 0.0f, rc->gates, GH);
    pack_forward_weights(l);
    for (int t = 0; t < rc->steps; t++)
        recurrent_step(l, ctx, t, rc->w_hh_packed);
}

static void recurrent_forward_at(Layer *l, const StepContext *ctx, int t)
{
    Recurrent *rc = l->priv;
    const int T = rc->steps, I = rc->inputs, GH = rc->cell->gates * rc->hidden;
    /* the gate rows of step t = x_t W_ih^T for every sample (the weights as the forward before
     * rounded them) */
    int ld;
    const float *x =
        rows_operand(l, l->in[0] + (size_t)t * I, ctx->batch, I, T * I, rc->x_bf16, &ld);
    const size_t first = state_row(rc, ctx->batch, 0, t);
    const size_t apart = (state_row(rc, ctx->batch, 1, t) - first) * rc->ld_gates;
    gemm(0, 1, ctx->batch, GH, I, 1.0f, x, ld, weights_for(l, P_WEIGHTS_IH, rc->w_ih_bf16), I, 0.0f,
         rc->gates + first * rc->ld_gates, (int)apart);
    recurrent_step(l, ctx, t, NULL);
}

/* sums[j] += sum over the rows of m[rows][cols] of m[r][j], in row order. */
static void add_column_sums(const float *m, size_t rows, int cols, float *sums)
{
    enum { BLOCK = 128 }; /* a block's part of a row: whole lines the prefetcher follows */
#pragma omp parallel for schedule(static) if (rows * (size_t)cols >= RECURRENT_PARALLEL_MIN)
    for (int j0 = 0; j0 < cols; j0 += BLOCK) {
        const int n = cols - j0 < BLOCK ? cols - j0 : BLOCK;
        float acc[BLOCK] = {0};
        for (size_t r = 0; r < rows; r++)
            for (int j = 0; j < n; j++)
                acc[j] += m[r * (size_t)cols + (size_t)j0 + (size_t)j];
        for (int j = 0; j < n; j++)
            sums[j0 + j] += acc[j];
    }
}

/* Backpropagation through time: steps T-1 down to 0 turn the gate values into dL/da_t, then the
 * parameter and input gradients come from sgemms over all batch*T rows. */
static void recurrent_backward(Layer *l, const StepContext *ctx)
{
    if (((const Recurrent *)l->priv)->time_major) {
        fused_backward(l, ctx);
        return;
    }
    Recurrent *rc = l->priv;
    const int batch = ctx->batch, T = rc->steps, I = rc->inputs, H = rc->hidden;
    const int GH = rc->cell->gates * H, rows = batch * T;
    const float *w_hh = weights_for(l, P_WEIGHTS_HH, rc->w_hh_bf16);
    memset(rc->dh_carry, 0, (size_t)batch * H * sizeof *rc->dh_carry);
    memset(rc->dc, 0, (size_t)batch * H * sizeof *rc->dc);
    gemm_pack(0, GH, H, w_hh, H, rc->w_hh_packed);
    for (int t = T - 1; t >= 0; t--) {
#pragma omp parallel for schedule(static) if ((size_t)batch * GH >= RECURRENT_PARALLEL_MIN)
        for (int b = 0; b < batch; b++) {
            const size_t row = (size_t)b * T + (size_t)t;
            float *dh = rc->dh + (size_t)b * H, *carry = rc->dh_carry + (size_t)b * H;
            for (int j = 0; j < H; j++)
                dh[j] = l->delta[row * H + j] + carry[j];
            const StepRow r = {
                .gates = rc->gates + row * GH,
                .dhh = rc->dhh + row * GH,
                .saved = saved_row(rc, row),
                .saved_prev = t > 0 ? saved_row(rc, row - 1) : rc->zeros,
                .h_prev = t > 0 ? l->out + (row - 1) * H : rc->zeros,
                .h = l->out + row * H,
                .dh = dh,
                .dh_prev = carry,
                .dc = rc->dc + (size_t)b * H,
            };
            rc->cell->backward(l, &r);
        }
        /* dh_carry[batch][H] += dL/d(W_hh h_{t-1}) W_hh (hh is free in the backward) */
        if (t > 0) {
            int ld;
            const float *dhh =
                rows_operand(l, rc->dhh + (size_t)t * GH, batch, GH, T * GH, rc->hh, &ld);
            gemm_packed(batch, H, GH, dhh, ld, rc->w_hh_packed, 1.0f, rc->dh_carry, H);
        }
    }

    Param *w_ih = &l->params[P_WEIGHTS_IH], *b_ih = &l->params[P_BIASES_IH];
    Param *w_hh_param = &l->params[P_WEIGHTS_HH], *b_hh = &l->params[P_BIASES_HH];
    /* The biases: column sums, which b_hh shares with b_ih unless dhh differs. */
    float *sums = rc->hh;
    memset(sums, 0, (size_t)GH * sizeof *sums);
    add_column_sums(rc->gates, (size_t)rows, GH, sums);
    for (int j = 0; j < GH; j++)
        b_ih->grad[j] += sums[j];
    if (rc->dhh != rc->gates)
        add_column_sums(rc->dhh, (size_t)rows, GH, b_hh->grad);
    else
        for (int j = 0; j < GH; j++)
            b_hh->grad[j] += sums[j];
    /* Only the products read dL/da and dL/d(W_hh h) from here. */
    gemm_operand(l->precision, rc->gates, (size_t)rows * GH, rc->gates);
    if (rc->dhh != rc->gates)
        gemm_operand(l->precision, rc->dhh, (size_t)rows * GH, rc->dhh);
    float *dx = l->in_delta[0];
    /* dx[batch*T][I] += da W_ih (ops/gemm_packed, as the forward's x W_ih^T) */
    if (dx) {
        gemm_pack(0, GH, I, weights_for(l, P_WEIGHTS_IH, rc->w_ih_bf16), I, rc->w_hh_packed);
        gemm_packed(rows, I, GH, rc->gates, GH, rc->w_hh_packed, 1.0f, dx, I);
    }
    /* The weight gradients' operand [x_t, h_{t-1}] [batch*T][I+H] (zeros for h_{-1}), so that
     * [dW_ih | dW_hh]^T [I+H][G*H] = [x, h_prev]^T da is one sgemm (two for the gru, whose dW_hh
     * takes dL/d(W_hh h)), into the packed weights' work memory, then added transposed: OpenBLAS
     * runs this product faster than the two dW = da^T x, which pack the tall da^T twice. */
    const int K = I + H;
    const float *x = l->precision == GEMM_BF16 ? rc->x_bf16 : l->in[0];
#pragma omp parallel for schedule(static) if ((size_t)rows * K >= RECURRENT_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        float *dst = rc->xh + (size_t)r * K;
        memcpy(dst, x + (size_t)r * I, (size_t)I * sizeof *dst);
        if (r % T)
            memcpy(dst + I, l->out + (size_t)(r - 1) * H, (size_t)H * sizeof *dst);
        else
            memset(dst + I, 0, (size_t)H * sizeof *dst);
        gemm_operand(l->precision, dst + I, (size_t)H, dst + I);
    }
    float *dw_t = rc->w_hh_packed;
    if (rc->dhh == rc->gates) {
        gemm(1, 0, K, GH, rows, 1.0f, rc->xh, K, rc->gates, GH, 0.0f, dw_t, GH);
    } else {
        gemm(1, 0, I, GH, rows, 1.0f, rc->xh, K, rc->gates, GH, 0.0f, dw_t, GH);
        gemm(1, 0, H, GH, rows, 1.0f, rc->xh + I, K, rc->dhh, GH, 0.0f, dw_t + (size_t)I * GH, GH);
    }
    float *g_ih = w_ih->grad, *g_hh = w_hh_param->grad;
#pragma omp parallel for schedule(static) if ((size_t)GH * K >= RECURRENT_PARALLEL_MIN)
    for (int r = 0; r < GH; r++) {
        for (int k = 0; k < I; k++)
            g_ih[(size_t)r * I + k] += dw_t[(size_t)k * GH + r];
        for (int k = 0; k < H; k++)
            g_hh[(size_t)r * H + k] += dw_t[(size_t)(I + k) * GH + r];
    }
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

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up for rnn, lstm and gru). */
const LayerKernels cpu_recurrent_kernels = {
    .resize = recurrent_resize,
    .forward = recurrent_forward,
    .backward = recurrent_backward,
    .forward_at = recurrent_forward_at,
};
