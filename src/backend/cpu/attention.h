/* What attention's CPU kernels share (backend/cpu/attention.c, the forward passes, and
 * backend/cpu/attention_backward.c): the block sizes, the per-thread workspace, where a (sample,
 * head) pair's tensors start and the heads' products. */
#ifndef CDL_CPU_ATTENTION_H
#define CDL_CPU_ATTENTION_H

#include <omp.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_packed.h"
#include "backend/cpu/gemm_strided.h"
#include "core/layer.h"
#include "layers/attention.h"

/* Query rows per score gemm of staged=1: small enough to skip most of the causal mask's zeros,
 * large enough for efficient gemms. */
#define ATTENTION_ROW_BLOCK 64

/* Query rows per block of backend/cpu/gemm_strided's products (the default): its calls cost little,
 * so a causal block computes few masked scores. */
#define STRIDED_ROW_BLOCK 16

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define ATTENTION_PARALLEL_MIN 32768

/* Query rows per block of the packed path: one panel of keys, so that a causal block computes
 * less than a panel of masked scores per row. */
#define STRIP GEMM_PACKED_PANEL

/* The workspace of one thread: [2][T][T] and K^T or V^T [D][T]; packed, the larger of the forward's
 * K^T and V packed and [block][T], and the backward's [2][T][T] and V^T, K, Q, dY packed. */
static inline size_t workspace_floats(const Attention *a)
{
    const size_t t = (size_t)a->seq;
    if (!a->packed)
        return 2 * t * t + (size_t)a->head_size * t;
    const size_t d_t = gemm_packed_floats(a->head_size, a->seq); /* [D][T] packed */
    const size_t t_d = gemm_packed_floats(a->seq, a->head_size); /* [T][D] packed */
    const size_t forward = d_t + t_d + (size_t)a->block * t;
    const size_t backward = 2 * t * t + d_t + 3 * t_d;
    return forward > backward ? forward : backward;
}

/* 1 when the (sample, head) pairs of a forward or backward are worth a parallel region. */
static inline int pairs_in_parallel(const Attention *a, int pairs)
{
    const double work = (double)pairs * a->seq * a->seq * a->head_size;
    return pairs > 1 && work > ATTENTION_PARALLEL_MIN;
}

/* The threads a parallel loop may use: no more than there are workspaces. */
static inline int loop_threads(const Attention *a)
{
    const int nt = omp_get_max_threads();
    return nt < a->threads ? nt : a->threads;
}

/* Self-attention's kernels here run the layer, cross-attention's (attention_cross.c) where the
 * keys and values come from another layer (source=). Self-attention with key_padding= reads its
 * input as the memory too (mem_seq = T), and runs here. */
static inline int runs_cross_kernels(const Layer *l)
{
    const Attention *a = l->priv;
    return a->mem_seq && l->inputs[1] != l->inputs[0];
}

/* Sample b's token ids [S] in the net input under key padding (negative: padding); NULL without. */
static inline const float *sample_ids(const Layer *l, int b)
{
    const Attention *a = l->priv;
    return a->key_padding ? l->in[2] + (size_t)b * a->pad_stride + a->pad_first : NULL;
}

/* The keys a pair's products need for sample ids' padding (NULL: none; S keys, T without a
 * memory): the first n when ids has a token in each of its first n rows and padding in every
 * later one; -1 when a token follows padding (all keys, masked one by one). */
static inline int pair_keys(const Attention *a, const float *ids)
{
    const int s = a->mem_seq ? a->mem_seq : a->seq;
    int n = 0;
    if (!ids)
        return s;
    while (n < s && ids[n] >= 0)
        n++;
    for (int j = n; j < s; j++)
        if (ids[j] >= 0)
            return -1;
    return n;
}

/* Where one (sample, head) pair's tensors start; q, k, v and their gradients have row stride
 * 3C, y and dy C, p and mask T. Under key padding, ids are the sample's [T] and the pair computes
 * its first `keys` keys (pair_keys: T without padding, -1 for padding before a token). */
typedef struct HeadView {
    const float *q, *k, *v;
    float *p, *mask, *y;
    const float *ids;
    int keys;
} HeadView;

static inline HeadView head_view(const Layer *l, int b, int h)
{
    const Attention *a = l->priv;
    const size_t t = (size_t)a->seq, c = (size_t)a->channels, ph = (size_t)b * a->heads + h;
    const float *q = a->qkv + (size_t)b * t * 3 * c + (size_t)h * a->head_size;
    const float *ids = sample_ids(l, b);
    return (HeadView){q,
                      q + c,
                      q + 2 * c,
                      a->probs + ph * t * t,
                      a->mask ? a->mask + ph * t * t : NULL,
                      a->heads_out + (size_t)b * t * c + (size_t)h * a->head_size,
                      ids,
                      pair_keys(a, ids)};
}

/* The ids whose padding a pair masks key by key: only where padding comes before a token (its
 * trailing padding is cut by the keys it computes). */
static inline const float *ids_masked_one_by_one(HeadView hv)
{
    return hv.keys < 0 ? hv.ids : NULL;
}

/* The keys a block of queries ending before row `end` attends to: with the causal mask those
 * up to its last row, never past the pair's last token. */
static inline int keys_of_block(const Attention *a, HeadView hv, int end)
{
    const int keys = a->causal ? end : a->seq;
    return hv.keys >= 0 && hv.keys < keys ? hv.keys : keys;
}

/* The keys row i attends to (the masked ones among them, padding before a token, aside). */
static inline int keys_of_row(const Attention *a, HeadView hv, int i)
{
    return keys_of_block(a, hv, i + 1);
}

/* tr[D][T] = x^T for one head's x [T][D] of row stride ld: the right operand of the products
 * by K^T and V^T. */
static inline void transpose_head(const Attention *a, const float *x, int ld, float *tr)
{
    gemm_strided_transpose(a->seq, a->head_size, x, (size_t)ld, tr, (size_t)a->seq);
}

/* c[m][n] = alpha op(x) b + beta c for b [k][n] (op(x) = x [m][k] or, with trans_x, x^T for x
 * [k][m]; row strides ldx, ldb, ldc): OpenBLAS when staged (the reference), else
 * backend/cpu/gemm_strided on the calling thread. */
static inline void head_product(const Attention *a, int trans_x, int m, int n, int k, float alpha,
                                const float *x, int ldx, const float *b, int ldb, float beta,
                                float *c, int ldc)
{
    if (a->staged)
        gemm(trans_x, 0, m, n, k, alpha, x, ldx, b, ldb, beta, c, ldc);
    else
        gemm_strided(m, n, k, alpha, x, trans_x ? 1 : (size_t)ldx, trans_x ? (size_t)ldx : 1, b,
                     (size_t)ldb, beta, c, (size_t)ldc);
}

/* c[m][0..n) = a[m][k] B[k0 .. k0+k)[0..n) + beta c for B [k_total][n] packed by gemm_pack_rows
 * (rows k0.. of every panel: a panel at a time, as gemm_packed_panels finds panel p at p * PANEL
 * * k). */
static inline void packed_product(int m, int n, int k, const float *a, int lda, const float *packed,
                                  int k_total, int k0, float beta, float *c, int ldc)
{
    for (int j0 = 0; j0 < n; j0 += STRIP)
        gemm_packed_panels(m, n - j0 < STRIP ? n - j0 : STRIP, k, a, lda,
                           packed + ((size_t)(j0 / STRIP) * k_total + k0) * STRIP, 0, 1, beta,
                           c + j0, ldc);
}

/* y[rows][n] = x[rows][k] w^T + bias for w [n][k]; row r of x starts at r * x_stride and of
 * y at r * y_stride. In precision p, x's rows are rounded into x_copy [rows][k] first (w is
 * already rounded). */
static inline void attention_linear_rows(GemmPrecision p, const float *x, int x_stride, int rows,
                                         int k, int n, const float *w, const float *bias, float *y,
                                         int y_stride, float *x_copy)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * n > ATTENTION_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        memcpy(y + (size_t)r * y_stride, bias, (size_t)n * sizeof *y);
        if (p != GEMM_FP32)
            gemm_operand(p, x + (size_t)r * x_stride, (size_t)k, x_copy + (size_t)r * k);
    }
    if (p != GEMM_FP32)
        x = x_copy, x_stride = k;
    gemm(0, 1, rows, n, k, 1.0f, x, x_stride, w, k, 1.0f, y, y_stride);
}

/* Rounds rows[0..n) of a [n][stride] matrix to bf16 in place, width values each, in precision
 * p (a product's output that autocast would hold in bf16 and that feeds further products). */
static inline void round_rows(GemmPrecision p, float *x, int n, int width, size_t stride)
{
    for (int r = 0; p != GEMM_FP32 && r < n; r++)
        gemm_operand(p, x + (size_t)r * stride, (size_t)width, x + (size_t)r * stride);
}

/* One row of softmax's backward: dp[keys] = scale * p (dp - sum_j p_j dp_j), dp first taken
 * through the dropout mask row (mask NULL: none). */
static inline void softmax_row_backward(const float *p, const float *mask, int keys, float scale,
                                        float *dp)
{
    if (mask)
        for (int j = 0; j < keys; j++)
            dp[j] *= mask[j];
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int j = 0; j < keys; j++)
        dot += p[j] * dp[j];
#pragma omp simd
    for (int j = 0; j < keys; j++)
        dp[j] = scale * p[j] * (dp[j] - dot);
}

/* LayerKernels.backward (backend/cpu/attention_backward.c). */
void attention_backward(Layer *l, const StepContext *ctx);

/* Cross-attention's (Attention.mem_seq, backend/cpu/attention_cross.c): the reference kernels
 * alone, which attention_resize, attention_forward and attention_backward hand it to. */
int attention_cross_resize(Layer *l, int batch, LayerState *st, Error *e);
void attention_cross_forward(Layer *l, const StepContext *ctx);
void attention_cross_backward(Layer *l, const StepContext *ctx);
void attention_cross_forward_at(Layer *l, const StepContext *ctx, int t);
size_t attention_cross_gather_samples(Layer *l, int batch, const int *from, int n, float *scratch);

#endif
