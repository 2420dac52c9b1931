/* What the recurrent layers' CPU kernels share (backend/cpu/recurrent.c: the cells and the
 * per-step path; backend/cpu/lstm_fused.c: the fused lstm): a step's rows, the lstm cell's
 * backward, the fused lstm's blocks of hidden units and its entry points. */
#ifndef CDL_CPU_RECURRENT_H
#define CDL_CPU_RECURRENT_H

#include "backend/cpu/gemm_packed.h"
#include "layers/recurrent.h"

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

static inline int unit_blocks(const Recurrent *rc)
{
    return (rc->hidden + UNIT - 1) / UNIT;
}

/* The fused lstm's forward and backward (LayerKernels' for a layer with Recurrent.time_major). */
void lstm_fused_forward(Layer *l, const StepContext *ctx);
void lstm_fused_backward(Layer *l, const StepContext *ctx);

#endif
