/* The fused [lstm] on the CPU (backend/cpu/recurrent.c has the per-step path and the state,
 * layers/recurrent.c the meaning): the whole recurrence in one parallel region.
 *
 *   in [batch][T][I], out [batch][T][H]; the state time-major: step t of sample b in row
 *   t batch + b
 *
 * [lstm] in float32 runs fused instead of step by step (fused=1, and the default fused=-1): one
 * OpenMP parallel region over the whole recurrence with one barrier per step, the hidden units
 * split over the threads in blocks of UNIT. Per step each thread computes its blocks' four gate
 * panels of [x_t, h_{t-1}] [W_ih | W_hh]^T + b_ih + b_hh (the weights packed once per pass, each
 * thread its own panels; the input projection inside the step, so that no pass over all rows writes
 * the gate rows first and the step reads them back from memory), runs their nonlinearities and cell
 * update while the panels are in L1, and writes its part of h_t into the next step's operand
 * rows; of the cell it keeps the gates and c_t (the saved rows' first half), not tanh(c_t).
 * Backward likewise: its blocks' part of dL/dh_t = dL/da_{t+1} W_hh (dL/da_{t+1} read from the gate
 * rows of step t+1, which hold it by then), then their cell backward (tanh(c_t) taken again), the
 * bias gradients summed on the way; then dL/dx = dL/da W_ih over all rows (backend/cpu/gemm_packed)
 * and [dW_ih | dW_hh] = dL/da^T [x, h_prev] in one sgemm. The state is time-major (a step's rows
 * together). Right after layer 0's [embedding] the fused lstm's inputs are rows of the embedding's
 * weights, so x_t W_ih^T + b_ih + b_hh comes from a table of one row per token id, computed once
 * per forward, and backward forms dW_ih and the embedding's gradient from dL/da summed per id
 * (Recurrent.embedding). fused=0 keeps the per-step path (backend/cpu/recurrent.c), the reference
 * the tests compare the fused one against. */
#include "backend/cpu/recurrent.h"

#include <omp.h>
#include <string.h>

#include "backend/cpu/exp_vec.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/lanes16.h"

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

/* The fused lstm's gate nonlinearities, one exponential (backend/cpu/exp_vec.h) and one reciprocal
 * each: sigmoid(x) = 1 / (1 + e^-x), and tanh(x) = 2 sigmoid(2x) - 1, within ~2e-7 of tanh
 * (absolute; activation's tanh pays a second polynomial for its relative precision near 0). With
 * AVX-512 16 lanes at a time, the reciprocal by recip16 (a division costs several times as much);
 * with AVX2 + FMA 8 lanes, recip8, for the blocks of UNIT units (the cell's share of char_lstm's
 * step at 1 thread on Zen 3, in perf: 5.6% -> 4.7%); else, and for a last block of fewer units,
 * scalar, for a simd loop. */
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

void lstm_fused_forward(Layer *l, const StepContext *ctx)
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

void lstm_fused_backward(Layer *l, const StepContext *ctx)
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
               backend/cpu/gemm_packed, as OpenBLAS runs this narrow product at half the speed */
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
