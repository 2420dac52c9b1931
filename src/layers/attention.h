/* [attention]'s configuration and per-batch state, shared by its meaning (layers/attention.c) and
 * its kernels (backend/cpu/attention*.c); tensors [batch][T][C], H heads of D = C / H columns. */
#ifndef CDL_ATTENTION_H
#define CDL_ATTENTION_H

#include <stdint.h>

/* Positions in l->params, in the order parse declares them. */
enum { P_WEIGHTS, P_BIASES, P_OUT_WEIGHTS, P_OUT_BIASES };

typedef struct Attention {
    int seq, channels;    /* T, C */
    int heads, head_size; /* H, D */
    int causal;
    /* Cross-attention (source=): S, the rows of the memory l->in[1] [batch][S][C] that gives the
     * keys and values; 0: self-attention (keys and values from the input too) */
    int mem_seq;
    /* key_padding=source|target (sequence-to-sequence nets): a key whose token id in the net
     * input l->in[2] [batch][pad_stride] at row pad_first + j is negative (paired text's padding)
     * gets weight 0, as nn.MultiheadAttention's key_padding_mask. Self-attention with it reads its
     * input as the memory too (l->in[1], mem_seq = T): on the GPU through cross-attention's
     * kernels, on the CPU through self-attention's (backend/cpu/attention.h runs_cross_kernels). */
    int key_padding;
    int pad_first, pad_stride;
    int staged;    /* 1: the stage-by-stage reference order */
    float dropout; /* probability of dropping an attention weight in training */
    /* The cfg's T and S (S = T without a memory), which set_rows never cuts: weight (pair, i, j)
     * draws its dropout at pair draw_seq draw_keys + i draw_keys + j, so a pass cut to the batch's
     * rows and one padded to the cfg's draw the same mask on the rows they share */
    int draw_seq, draw_keys;
    int packed_key; /* packed=1: the heads' products through backend/cpu/gemm_packed when fp32 */
    int packed;     /* the heads' products through backend/cpu/gemm_packed (fp32, not staged) */
    int block;   /* query rows per block: min(STRIDED_ROW_BLOCK, ATTENTION_ROW_BLOCK when staged or
                  * STRIP when packed, T) */
    int threads; /* workspaces */
    /* The projections' products but their weight gradients through backend/cpu/gemm_rows and
     * backend/cpu/gemm_packed (fp32, not staged) */
    int packed_proj;
    /* The per-batch state, in the net's slab (attention_resize). float32 on the CPU; on the GPU
     * qkv, heads_out and probs hold 16-bit elements under bf16 and fp16 (cuda/attention.c): */
    /* [batch][T][3C]; forward_at's key/value cache. Cross-attention: q [batch][T][C], then kv
     * [batch][S][2C] */
    float *qkv;
    float *heads_out; /* [batch][T][C]: the heads' outputs side by side */
    /* [batch][H][T][T] (cross-attention: [batch][H][T][S]): P; causal, zero above the diagonal up
     * to the last key of the row's query block (keys_of_block; the backward reads no further),
     * unset past it */
    float *probs;
    float *mask;       /* [batch][H][T][T]: 0 or 1/(1-dropout); nets with gradients only */
    int mask_is_valid; /* the last forward applied the mask (training) */
    float *workspace;  /* [threads][workspace_floats] */
    /* precision bf16, tf32 or fp16: weights, out_weights as the last forward rounded them, and the
     * input [batch][T][C] */
    float *w_rounded, *out_w_rounded, *x_rounded;
    /* packed_proj, kept between the passes of a step (StepContext.same_weights, kept memory:
     * layer_kept_floats): weights and
     * out_weights as gemm_pack packs them, transposed for the forward, and as they are for the
     * backward's input gradients */
    float *w_packed, *out_w_packed, *w_packed_back, *out_w_packed_back;
} Attention;

/* Where weight (pair, i, j) of a pass draws its dropout: pair the (sample, head) pair's index in
 * the step's global mini-batch, i the query row, j the key; the cfg's rows are the strides. */
static inline uint64_t attention_draw_index(const Attention *a, uint64_t pair, int i, int j)
{
    return (pair * (uint64_t)a->draw_seq + (uint64_t)i) * (uint64_t)a->draw_keys + (uint64_t)j;
}

#endif
