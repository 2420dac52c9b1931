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
 * Forward projects the inputs of all batch*T rows in one sgemm, then per step multiplies the
 * batch's h_{t-1} by W_hh (ops/gemm_packed: W_hh packed once per forward, not by OpenBLAS on
 * every step) and runs the cell's element-wise step. Backward runs the steps in reverse
 * (backpropagation through time; W_hh packed once more), leaving each step's dL/da_t in place of
 * its gate values, then adds the weight gradients with sgemms over all rows. The ONNX export uses
 * ONNX's RNN, LSTM and GRU operators, the gates reordered to theirs.
 *
 * precision=bf16 (Layer.precision): the gate products take bf16 operands (gemm_operand), as
 * torch.autocast("cpu", torch.bfloat16) runs the gate projections of an RNN cell: the weights,
 * the inputs and each step's h_{t-1} are rounded into copies, the backward's dL/da rows into
 * hh (per step) and in place once the bias gradients have summed them; the cells' element-wise
 * steps stay float32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/net.h"
#include "core/onnx_graph.h"
#include "ops/gemm.h"
#include "ops/gemm_packed.h"

/* Positions in l->params, in the order parse declares them (torch's). */
enum { P_WEIGHTS_IH, P_WEIGHTS_HH, P_BIASES_IH, P_BIASES_HH };

/* Below this many values per step an element-wise parallel region costs more than it saves. */
#define RECURRENT_PARALLEL_MIN 16384

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
     * W_hh [G*H][H] in backward, packed by each call that runs steps */
    float *w_hh_packed;
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

static void lstm_backward(const Layer *l, const StepRow *r)
{
    const int H = hidden_of(l);
    float *i = r->gates, *f = i + H, *g = f + H, *o = g + H;
    const float *tanh_c = r->saved + H, *c_prev = r->saved_prev;
    for (int j = 0; j < H; j++) {
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

static int recurrent_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Recurrent *rc = l->priv;
    const Cell *cell = rc->cell;
    const size_t B = (size_t)batch, T = (size_t)rc->steps, H = (size_t)rc->hidden;
    const size_t GH = (size_t)cell->gates * H, SH = (size_t)cell->saved * H;
    rc->gates = layer_state_floats(st, B * T * GH);
    rc->saved = layer_state_floats(st, B * T * SH);
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
    const size_t fwd = gemm_packed_floats((int)H, (int)GH),
                 bwd = gemm_packed_floats((int)GH, (int)H);
    rc->w_hh_packed = layer_work_floats(st, fwd > bwd ? fwd : bwd);
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

/* Row `row` of the saved values; NULL for a cell that saves none (rc->saved is then NULL, and
 * offsetting a null pointer, even by 0, is undefined). */
static float *saved_row(const Recurrent *rc, size_t row, size_t SH)
{
    return SH ? rc->saved + row * SH : NULL;
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
    const int GH = rc->cell->gates * H, SH = rc->cell->saved * H;
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
        const size_t row = (size_t)b * T + (size_t)t;
        const StepRow r = {
            .gates = rc->gates + row * GH,
            .hh = t > 0 ? rc->hh + (size_t)b * GH : rc->zeros,
            .saved = saved_row(rc, row, SH),
            .saved_prev = t > 0 ? saved_row(rc, row - 1, SH) : rc->zeros,
            .h_prev = t > 0 ? l->out + (row - 1) * H : rc->zeros,
            .h = l->out + row * H,
        };
        rc->cell->forward(l, &r);
    }
}

static void recurrent_forward(Layer *l, const StepContext *ctx)
{
    Recurrent *rc = l->priv;
    const int rows = ctx->batch * rc->steps, I = rc->inputs;
    const int GH = rc->cell->gates * rc->hidden;
    const Param *w_ih = &l->params[P_WEIGHTS_IH], *w_hh = &l->params[P_WEIGHTS_HH];
    gemm_operand(l->precision, w_ih->data, w_ih->count, rc->w_ih_bf16);
    gemm_operand(l->precision, w_hh->data, w_hh->count, rc->w_hh_bf16);
    /* gates[batch*T][G*H] = x[batch*T][I] W_ih^T */
    gemm(0, 1, rows, GH, I, 1.0f,
         gemm_operand(l->precision, l->in[0], (size_t)rows * I, rc->x_bf16), I,
         weights_for(l, P_WEIGHTS_IH, rc->w_ih_bf16), I, 0.0f, rc->gates, GH);
    pack_forward_weights(l);
    for (int t = 0; t < rc->steps; t++)
        recurrent_step(l, ctx, t, rc->w_hh_packed);
}

static void recurrent_forward_at(Layer *l, const StepContext *ctx, int t)
{
    Recurrent *rc = l->priv;
    const int T = rc->steps, I = rc->inputs, GH = rc->cell->gates * rc->hidden;
    /* row t of gates = x_t W_ih^T for every sample, the rows T apart (the weights as the forward
     * before rounded them) */
    int ld;
    const float *x =
        rows_operand(l, l->in[0] + (size_t)t * I, ctx->batch, I, T * I, rc->x_bf16, &ld);
    gemm(0, 1, ctx->batch, GH, I, 1.0f, x, ld, weights_for(l, P_WEIGHTS_IH, rc->w_ih_bf16), I, 0.0f,
         rc->gates + (size_t)t * GH, T * GH);
    recurrent_step(l, ctx, t, NULL);
}

/* sums[j] += sum over the rows of m[rows][cols] of m[r][j], in row order. */
static void add_column_sums(const float *m, size_t rows, int cols, float *sums)
{
    enum { BLOCK = 64 };
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
    Recurrent *rc = l->priv;
    const int batch = ctx->batch, T = rc->steps, I = rc->inputs, H = rc->hidden;
    const int GH = rc->cell->gates * H, SH = rc->cell->saved * H, rows = batch * T;
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
                .saved = saved_row(rc, row, SH),
                .saved_prev = t > 0 ? saved_row(rc, row - 1, SH) : rc->zeros,
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
    const float *x = l->precision == GEMM_BF16 ? rc->x_bf16 : l->in[0];
    /* dW_ih[G*H][I] += da^T x */
    gemm(1, 0, GH, I, rows, 1.0f, rc->gates, GH, x, I, 1.0f, w_ih->grad, I);
    float *dx = l->in_delta[0];
    /* dx[batch*T][I] += da W_ih */
    if (dx)
        gemm(0, 0, rows, I, GH, 1.0f, rc->gates, GH, weights_for(l, P_WEIGHTS_IH, rc->w_ih_bf16), I,
             1.0f, dx, I);
    /* l->delta is spent: it now holds h_{t-1} for every row (zeros at t = 0), so that
     * dW_hh[G*H][H] += dL/d(W_hh h)^T h_prev is one sgemm too. */
    float *h_prev = l->delta;
    for (int b = 0; b < batch; b++) {
        float *sample = h_prev + (size_t)b * T * H;
        memcpy(sample + H, l->out + (size_t)b * T * H, (size_t)(T - 1) * H * sizeof *sample);
        memset(sample, 0, (size_t)H * sizeof *sample);
    }
    gemm_operand(l->precision, h_prev, (size_t)rows * H, h_prev);
    gemm(1, 0, GH, H, rows, 1.0f, rc->dhh, GH, h_prev, H, 1.0f, w_hh_param->grad, H);
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
    .resize = recurrent_resize,
    .cpu = {.forward = recurrent_forward,
            .backward = recurrent_backward,
            .forward_at = recurrent_forward_at},
    .export_onnx = recurrent_export_onnx,
};

const LayerType lstm_layer = {
    .name = "lstm",
    .priv_size = sizeof(Recurrent),
    .parse = lstm_parse,
    .init = recurrent_init,
    .resize = recurrent_resize,
    .cpu = {.forward = recurrent_forward,
            .backward = recurrent_backward,
            .forward_at = recurrent_forward_at},
    .export_onnx = recurrent_export_onnx,
};

const LayerType gru_layer = {
    .name = "gru",
    .priv_size = sizeof(Recurrent),
    .parse = gru_parse,
    .init = recurrent_init,
    .resize = recurrent_resize,
    .cpu = {.forward = recurrent_forward,
            .backward = recurrent_backward,
            .forward_at = recurrent_forward_at},
    .export_onnx = recurrent_export_onnx,
};
