/* [rnn], [lstm] and [gru]'s CPU kernels (layers/recurrent.c has their meaning): the cells' steps,
 * the per-batch state, and the per-step path of every cell; [lstm] in float32 runs the fused
 * recurrence of backend/cpu/lstm_fused.c instead.
 *
 *   in  [batch][T][I], out [batch][T][H]; a_t = W_ih x_t + b_ih + W_hh h_{t-1} + b_hh [G*H]
 *
 * Forward projects the inputs of all batch*T rows in one product (backend/cpu/gemm_packed), then
 * per step multiplies the batch's h_{t-1} by W_hh (backend/cpu/gemm_packed: W_hh packed once per
 * forward, not by OpenBLAS on every step) and runs the cell's element-wise step. Backward runs the
 * steps in reverse (backpropagation through time; W_hh packed once more), leaving each step's
 * dL/da_t in place of its gate values, then dL/dx (backend/cpu/gemm_packed) and the weight
 * gradients, [dW_ih | dW_hh]^T in one sgemm, over all rows.
 *
 * precision=bf16 (Layer.precision): the gate products take bf16 operands (gemm_operand), as
 * torch.autocast("cpu", torch.bfloat16) runs the gate projections of an RNN cell: the weights,
 * the inputs and each step's h_{t-1} are rounded into copies, the backward's dL/da rows into
 * hh (per step) and in place once the bias gradients have summed them; the cells' element-wise
 * steps stay float32. */
#include "backend/cpu/recurrent.h"
#include "backend/cpu/activation.h"

#include <string.h>

#include "backend/cpu/gather_samples.h"
#include "backend/cpu/gemm.h"

/* Below this many values per step an element-wise parallel region costs more than it saves. */
#define RECURRENT_PARALLEL_MIN 16384

/* What a cell's step computes on the CPU. */
typedef struct CellSteps {
    int saved; /* floats per hidden unit that a step keeps for backward */
    /* dL/d(W_hh h) differs from dL/da (gru's n gate): it gets its own buffer. */
    int dhh_differs;
    void (*forward)(const Layer *l, const StepRow *r);
    void (*backward)(const Layer *l, const StepRow *r);
} CellSteps;

/* ---- cells: one sample's step, forward and backward ---- */

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

static const CellSteps cell_steps[] = {
    [CELL_RNN] = {0, 0, rnn_forward, rnn_backward},
    [CELL_LSTM] = {2, 0, lstm_forward, lstm_backward},
    [CELL_GRU] = {1, 1, gru_forward, gru_backward},
};

static const CellSteps *steps_of(const Recurrent *rc)
{
    return &cell_steps[rc->cell->kind];
}

/* ---- the per-batch state and the per-step path ---- */

/* The layer is to run the fused lstm: [lstm] in float32 (bf16 takes the reference) with fused=1
 * or fused=-1 (the default, at one thread too: there it measured faster than the per-step path
 * once the input projection ran inside the steps). */
static int fused_lstm(const Layer *l)
{
    const Recurrent *rc = l->priv;
    return rc->cell->kind == CELL_LSTM && rc->fused != 0 && l->precision == GEMM_FP32;
}

static int recurrent_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    (void)e;
    Recurrent *rc = l->priv;
    const CellSteps *steps = steps_of(rc);
    const size_t B = (size_t)batch, T = (size_t)rc->steps, H = (size_t)rc->hidden;
    const size_t GH = (size_t)rc->cell->gates * H, SH = (size_t)steps->saved * H;
    rc->time_major = fused_lstm(l);
    const size_t pad = rc->time_major ? ROW_PAD : 0;
    rc->ld_gates = GH + pad;
    rc->ld_saved = SH + pad;
    rc->ld_xh = (size_t)rc->inputs + H + pad;
    rc->gates = layer_state_floats(st, B * T * rc->ld_gates);
    rc->saved = layer_state_floats(st, B * T * rc->ld_saved);
    rc->dhh = steps->dhh_differs ? layer_state_floats(st, B * T * GH) : rc->gates;
    rc->hh = layer_state_floats(st, B * GH);
    rc->dh = layer_state_floats(st, B * H);
    rc->dh_carry = layer_state_floats(st, B * H);
    rc->dc = layer_state_floats(st, B * H);
    rc->zeros = layer_state_floats(st, GH);
    const int rounded = l->precision != GEMM_FP32;
    rc->w_ih_rounded = layer_state_floats(st, rounded ? GH * (size_t)rc->inputs : 0);
    rc->w_hh_rounded = layer_state_floats(st, rounded ? GH * H : 0);
    rc->x_rounded = layer_state_floats(st, rounded ? B * T * (size_t)rc->inputs : 0);
    rc->h_rounded = layer_state_floats(st, rounded ? B * H : 0);
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
static const float *weights_for(const Layer *l, int param, const float *rounded_copy)
{
    return l->precision != GEMM_FP32 ? rounded_copy : l->params[param].data;
}

/* rows[n] of a matrix with row stride ld, width values each, as the products take them: x
 * itself in float32 (*ld_out = ld), rounded into copy [n][width] in bf16 (*ld_out = width). */
static const float *rows_operand(const Layer *l, const float *x, int n, int width, int ld,
                                 float *copy, int *ld_out)
{
    *ld_out = ld;
    if (l->precision == GEMM_FP32)
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
    return steps_of(rc)->saved ? rc->saved + row * rc->ld_saved : NULL;
}

/* W_hh^T [H][G*H] packed for the steps' products (the weights as the forward rounded them). */
static void pack_forward_weights(const Layer *l)
{
    const Recurrent *rc = l->priv;
    const int H = rc->hidden, GH = rc->cell->gates * H;
    gemm_pack(1, H, GH, weights_for(l, P_WEIGHTS_HH, rc->w_hh_rounded), H, rc->w_hh_packed);
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
            rows_operand(l, l->out + (size_t)(t - 1) * H, batch, H, T * H, rc->h_rounded, &ld);
        if (packed)
            gemm_packed(batch, GH, H, h_prev, ld, packed, 0.0f, rc->hh, GH);
        else
            gemm(0, 1, batch, GH, H, 1.0f, h_prev, ld,
                 weights_for(l, P_WEIGHTS_HH, rc->w_hh_rounded), H, 0.0f, rc->hh, GH);
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
        steps_of(rc)->forward(l, &r);
    }
}

static void recurrent_forward(Layer *l, const StepContext *ctx)
{
    if (((const Recurrent *)l->priv)->time_major) {
        lstm_fused_forward(l, ctx);
        return;
    }
    Recurrent *rc = l->priv;
    const int rows = ctx->batch * rc->steps, I = rc->inputs;
    const int GH = rc->cell->gates * rc->hidden;
    const Param *w_ih = &l->params[P_WEIGHTS_IH], *w_hh = &l->params[P_WEIGHTS_HH];
    gemm_operand(l->precision, w_ih->data, w_ih->count, rc->w_ih_rounded);
    gemm_operand(l->precision, w_hh->data, w_hh->count, rc->w_hh_rounded);
    /* gates[batch*T][G*H] = x[batch*T][I] W_ih^T (backend/cpu/gemm_packed: OpenBLAS runs this
     * product of a short K at half the speed) */
    gemm_pack(1, I, GH, weights_for(l, P_WEIGHTS_IH, rc->w_ih_rounded), I, rc->w_hh_packed);
    gemm_packed(rows, GH, I, gemm_operand(l->precision, l->in[0], (size_t)rows * I, rc->x_rounded),
                I, rc->w_hh_packed, 0.0f, rc->gates, GH);
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
        rows_operand(l, l->in[0] + (size_t)t * I, ctx->batch, I, T * I, rc->x_rounded, &ld);
    const size_t first = state_row(rc, ctx->batch, 0, t);
    const size_t apart = (state_row(rc, ctx->batch, 1, t) - first) * rc->ld_gates;
    gemm(0, 1, ctx->batch, GH, I, 1.0f, x, ld, weights_for(l, P_WEIGHTS_IH, rc->w_ih_rounded), I,
         0.0f, rc->gates + first * rc->ld_gates, (int)apart);
    recurrent_step(l, ctx, t, NULL);
}

/* Each sample's state: its outputs h [T][H] and saved values (T rows of state_row's, a block of
 * the sample's or one row per step). */
static size_t recurrent_gather_samples(Layer *l, const ExecContext *exec, int batch,
                                       const int *from, int n, float *scratch)
{
    (void)exec;
    Recurrent *rc = l->priv;
    const size_t steps = (size_t)rc->steps;
    size_t most = gather_sample_blocks(l->out, steps * (size_t)rc->hidden, from, n, scratch);
    if (!steps_of(rc)->saved)
        return most;
    for (size_t t = 0; t < (rc->time_major ? steps : 1); t++) {
        const size_t floats = gather_sample_blocks(
            saved_row(rc, state_row(rc, batch, 0, (int)t)),
            rc->time_major ? rc->ld_saved : steps * rc->ld_saved, from, n, scratch);
        most = floats > most ? floats : most;
    }
    return most;
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
        lstm_fused_backward(l, ctx);
        return;
    }
    Recurrent *rc = l->priv;
    const int batch = ctx->batch, T = rc->steps, I = rc->inputs, H = rc->hidden;
    const int GH = rc->cell->gates * H, rows = batch * T;
    const float *w_hh = weights_for(l, P_WEIGHTS_HH, rc->w_hh_rounded);
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
            steps_of(rc)->backward(l, &r);
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
    /* dx[batch*T][I] += da W_ih (backend/cpu/gemm_packed, as the forward's x W_ih^T) */
    if (dx) {
        gemm_pack(0, GH, I, weights_for(l, P_WEIGHTS_IH, rc->w_ih_rounded), I, rc->w_hh_packed);
        gemm_packed(rows, I, GH, rc->gates, GH, rc->w_hh_packed, 1.0f, dx, I);
    }
    /* The weight gradients' operand [x_t, h_{t-1}] [batch*T][I+H] (zeros for h_{-1}), so that
     * [dW_ih | dW_hh]^T [I+H][G*H] = [x, h_prev]^T da is one sgemm (two for the gru, whose dW_hh
     * takes dL/d(W_hh h)), into the packed weights' work memory, then added transposed: OpenBLAS
     * runs this product faster than the two dW = da^T x, which pack the tall da^T twice. */
    const int K = I + H;
    const float *x = l->precision != GEMM_FP32 ? rc->x_rounded : l->in[0];
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

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up for rnn, lstm and gru). */
const LayerKernels cpu_recurrent_kernels = {
    .resize = recurrent_resize,
    .forward = recurrent_forward,
    .backward = recurrent_backward,
    .forward_at = recurrent_forward_at,
    .keeps_rows = 1,
    .gather_samples = recurrent_gather_samples,
};
