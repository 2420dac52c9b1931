/* [rnn], [lstm] and [gru]'s configuration and per-batch state, shared by their meaning
 * (layers/recurrent.c) and their kernels (backend/cpu/recurrent.c, backend/cpu/lstm_fused.c);
 * tensors [batch][T][I] in, [batch][T][H] out, G gates per hidden unit. */
#ifndef CDL_RECURRENT_H
#define CDL_RECURRENT_H

#include "core/layer.h"

/* Positions in l->params, in the order parse declares them (torch's). */
enum { P_WEIGHTS_IH, P_WEIGHTS_HH, P_BIASES_IH, P_BIASES_HH };

/* The cell a layer runs. */
typedef enum CellKind { CELL_RNN, CELL_LSTM, CELL_GRU } CellKind;

typedef struct Cell {
    CellKind kind;
    const char *onnx_op; /* ONNX's operator: RNN, LSTM or GRU */
    /* ONNX's gate k is torch's (and cdl's) gate onnx_gate[k]: ONNX stacks LSTM gates as
     * i, o, f, c (torch i, f, g, o) and GRU gates as z, r, h (torch r, z, n). */
    int onnx_gate[4];
    int gates; /* G */
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
    /* The GPU's, where the layer stores its output in 16 bits (Layer.storage; else NULL): the
     * outputs h [batch][T][H] in float32, which the recurrence reads (out holds them rounded),
     * and backward's dL/dh [batch][T][H] read from delta into float32. */
    float *h_rows, *dy_rows;
    float *zeros; /* [G*H] the state before the first step */
    /* precision=bf16: the weights as the last forward rounded them, the input [batch][T][I] and
     * one step's h_{t-1} [batch][H] */
    float *w_ih_rounded, *w_hh_rounded, *x_rounded, *h_rounded;
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

static inline int hidden_of(const Layer *l)
{
    return ((const Recurrent *)l->priv)->hidden;
}

#endif
