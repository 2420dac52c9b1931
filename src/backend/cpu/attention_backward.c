/* [attention]'s backward on the CPU (backend/cpu/attention.c has its forward and the per-thread
 * workspace, whose floats the pairs' backward takes its operands in):
 *
 *   delta [batch][T][C] -> dL/d(heads) [batch][T][C] -> dL/d(qkv) [batch][T][3C] -> dL/dx
 *   [batch][T][C], the four parameter gradients added to
 *
 * in the net's workspace (StepContext.exec): dL/d(heads), dL/d(qkv) and per sample the bias
 * gradients [4C]. */
#include "backend/cpu/attention.h"

#include <math.h>
#include <string.h>

#include "backend/cpu/gemm_tn.h"
#include "backend/cpu/sum_rows.h"

/* Asks for the pair's rows of Q, K and V: the backward finds them out of the cache, and the
 * products' strided reads alone keep few misses in flight. */
static void prefetch_head(const Attention *a, HeadView hv)
{
    const size_t ld = 3 * (size_t)a->channels;
    for (int i = 0; i < a->seq; i++)
        for (int j = 0; j < a->head_size; j += 16) {
            __builtin_prefetch(hv.q + i * ld + j, 0, 2);
            __builtin_prefetch(hv.k + i * ld + j, 0, 2);
            __builtin_prefetch(hv.v + i * ld + j, 0, 2);
        }
}

/* Asks for the rows of a [T][T] matrix in the query block from row r0 on, up to the block's last
 * key: the backward reads P a block at a time, after it left the cache. */
static void prefetch_block(const Attention *a, HeadView hv, const float *x, int r0)
{
    const int t = a->seq, end = r0 + a->block < t ? r0 + a->block : t;
    const int keys = keys_of_block(a, hv, end);
    for (int i = r0; i < end; i++)
        for (int j = 0; j < keys; j += 16)
            __builtin_prefetch(x + (size_t)i * t + j);
}

/* One (sample, head) pair: writes dL/dQ, dL/dK, dL/dV into dqkv (row stride 3C, at the pair's
 * columns) from dy = dL/dY (row stride C). Query block by query block, dP, then dS into ds [T][T]
 * and dQ = scale dS K; then key block by key block dK = scale dS^T Q and dV = weights^T dY
 * over all the query rows at once (with the causal mask from the key block's first row on: the
 * earlier rows' entries are 0; the blocks' keys cover every entry these read). ws holds
 * workspace_floats(a): ds, the weights P m [T][T] (dropout or bf16) and V^T [D][T]. */
static void head_backward(const Attention *a, GemmPrecision prec, HeadView hv, const float *dy,
                          float *dqkv, int use_mask, float *ws)
{
    const int t = a->seq, d = a->head_size, c = a->channels, ld = 3 * c;
    const float scale = 1.0f / sqrtf((float)d);
    const size_t tt = (size_t)t * t;
    float *dq = dqkv, *dk = dqkv + c, *dv = dqkv + 2 * c;
    float *ds = ws, *dropped = ws + tt, *vt = dropped + tt;
    const int weights_copied = use_mask || prec != GEMM_FP32;
    const float *weights = weights_copied ? dropped : hv.p;
    prefetch_head(a, hv);
    prefetch_block(a, hv, hv.p, 0);
    transpose_head(a, hv.v, ld, vt);
    for (int r0 = 0; r0 < t; r0 += a->block) {
        const int rows = r0 + a->block < t ? a->block : t - r0;
        const int keys = keys_of_block(a, hv, r0 + rows);
        prefetch_block(a, hv, hv.p, r0 + a->block);
        for (int i = r0; weights_copied && i < r0 + rows; i++) {
            const size_t row = (size_t)i * t;
            for (size_t at = row; at < row + keys; at++)
                dropped[at] = use_mask ? hv.p[at] * hv.mask[at] : hv.p[at];
            gemm_operand(prec, dropped + row, (size_t)keys, dropped + row);
        }
        /* dP[rows][keys] = dY V^T (through the mask: dP *= m) */
        head_product(a, 0, rows, keys, d, 1.0f, dy + (size_t)r0 * c, c, vt, t, 0.0f,
                     ds + (size_t)r0 * t, t);
        /* softmax: dS = P (dP - sum_j P_j dP_j) */
        for (int i = r0; i < r0 + rows; i++) {
            float *dsi = ds + (size_t)i * t;
            softmax_row_backward(hv.p + (size_t)i * t, use_mask ? hv.mask + (size_t)i * t : NULL,
                                 keys, 1.0f, dsi);
            gemm_operand(prec, dsi, (size_t)keys, dsi);
        }
        /* dQ[r0 .. r0+rows) = scale * dS K[0 .. keys) */
        head_product(a, 0, rows, d, keys, scale, ds + (size_t)r0 * t, t, hv.k, ld, 0.0f,
                     dq + (size_t)r0 * ld, ld);
    }
    const int computed = keys_of_block(a, hv, t); /* the keys past them get no gradient */
    for (int j = computed; j < t; j++) {
        memset(dk + (size_t)j * ld, 0, (size_t)d * sizeof *dk);
        memset(dv + (size_t)j * ld, 0, (size_t)d * sizeof *dv);
    }
    for (int j0 = 0; j0 < computed; j0 += a->block) {
        const int keys = j0 + a->block < computed ? a->block : computed - j0;
        const int i0 = a->causal ? j0 : 0;
        const size_t first = (size_t)i0 * t + (size_t)j0;
        /* dK[j0 .. j0+keys) = scale * dS^T Q; dV[j0 .. j0+keys) = weights^T dY */
        head_product(a, 1, keys, d, t - i0, scale, ds + first, t, hv.q + (size_t)i0 * ld, ld, 0.0f,
                     dk + (size_t)j0 * ld, ld);
        head_product(a, 1, keys, d, t - i0, 1.0f, weights + first, t, dy + (size_t)i0 * c, c, 0.0f,
                     dv + (size_t)j0 * ld, ld);
    }
}

/* tr = x^T for x [T][T], in blocks of a->block: with the causal mask only the blocks at or below
 * the diagonal of x, those key_products reads. */
static void transpose_blocks(const Attention *a, const float *x, float *tr)
{
    const int t = a->seq, n = a->block;
    for (int j0 = 0; j0 < t; j0 += n)
        for (int i0 = a->causal ? j0 : 0; i0 < t; i0 += n)
            for (int i = i0; i < i0 + n && i < t; i++)
                for (int j = j0; j < j0 + n && j < t; j++)
                    tr[(size_t)j * t + i] = x[(size_t)i * t + j];
}

/* out[T][D] (row stride 3C) = tr[T][T] B for B [T][D] packed, key block by key block; with the
 * causal mask key j sums the query rows from its block's first on (the earlier ones are 0). */
static void key_products(const Attention *a, const float *tr, const float *packed, float *out)
{
    const int t = a->seq, ld = 3 * a->channels;
    for (int j0 = 0; j0 < t; j0 += a->block) {
        const int rows = j0 + a->block < t ? a->block : t - j0, i0 = a->causal ? j0 : 0;
        packed_product(rows, a->head_size, t - i0, tr + (size_t)j0 * t + i0, t, packed, t, i0, 0.0f,
                       out + (size_t)j0 * ld, ld);
    }
}

/* head_backward through backend/cpu/gemm_packed (fp32): dP, then dS' = scale dS of all T rows into
 * ds [T][T] with dQ = dS' K block by block; then dK = dS'^T Q and dV = weights^T dY from the
 * transposes of dS' and of the weights. ws holds workspace_floats(a). */
static void head_backward_packed(const Attention *a, HeadView hv, const float *dy, float *dqkv,
                                 int use_mask, float *ws)
{
    const int t = a->seq, d = a->head_size, c = a->channels, ld = 3 * c;
    const float scale = 1.0f / sqrtf((float)d);
    const size_t tt = (size_t)t * t, t_d = gemm_packed_floats(t, d);
    float *dq = dqkv, *dk = dqkv + c, *dv = dqkv + 2 * c;
    float *ds = ws, *tr = ws + tt, *vt = tr + tt; /* [T][T], [T][T], V^T [D][T] */
    float *kp = vt + gemm_packed_floats(d, t), *qp = kp + t_d, *yp = qp + t_d; /* [T][D] */
    gemm_pack_rows(1, d, t, hv.v, ld, 0, d, vt);
    gemm_pack_rows(0, t, d, hv.k, ld, 0, t, kp);
    gemm_pack_rows(0, t, d, hv.q, ld, 0, t, qp);
    gemm_pack_rows(0, t, d, dy, c, 0, t, yp);
    for (int r0 = 0; r0 < t; r0 += a->block) {
        const int rows = r0 + a->block < t ? a->block : t - r0;
        const int keys = keys_of_block(a, hv, r0 + rows);
        /* dP[rows][keys] = dY V^T (through the mask: dP *= m) */
        packed_product(rows, keys, d, dy + (size_t)r0 * c, c, vt, d, 0, 0.0f, ds + (size_t)r0 * t,
                       t);
        for (int i = r0; i < r0 + rows; i++) {
            float *dpi = ds + (size_t)i * t;
            softmax_row_backward(hv.p + (size_t)i * t, use_mask ? hv.mask + (size_t)i * t : NULL,
                                 keys, scale, dpi);
            memset(dpi + keys, 0, (size_t)(t - keys) * sizeof *dpi);
        }
        /* dQ[r0 .. r0+rows) = dS' K[0 .. keys) */
        packed_product(rows, d, keys, ds + (size_t)r0 * t, t, kp, t, 0, 0.0f, dq + (size_t)r0 * ld,
                       ld);
    }
    transpose_blocks(a, ds, tr);
    key_products(a, tr, qp, dk);
    const float *weights = hv.p;
    if (use_mask) {
        /* ds's masked tails stay 0 */
        for (int r0 = 0; r0 < t; r0 += a->block) {
            const int keys = keys_of_block(a, hv, r0 + a->block < t ? r0 + a->block : t);
            for (int i = r0; i < r0 + a->block && i < t; i++)
                for (size_t at = (size_t)i * t; at < (size_t)i * t + keys; at++)
                    ds[at] = hv.p[at] * hv.mask[at];
        }
        weights = ds;
    }
    transpose_blocks(a, weights, tr);
    key_products(a, tr, yp, dv);
}

/* dL/dQ, dL/dK, dL/dV of pair `pair` written into its columns of dqkv [batch][T][3C] (every
 * element once: the heads cover dqkv, which needs no zeroing) from dheads [batch][T][C]. */
static void pair_backward(const Layer *l, int pair, const float *dheads, float *dqkv)
{
    const Attention *a = l->priv;
    const GemmPrecision p = l->precision;
    const int b = pair / a->heads, h = pair % a->heads;
    const size_t t = (size_t)a->seq, c = (size_t)a->channels, col = (size_t)h * a->head_size;
    const HeadView hv = head_view(l, b, h);
    const float *dy = dheads + b * t * c + col;
    float *ws = a->workspace + (size_t)omp_get_thread_num() * workspace_floats(a);
    if (a->packed)
        head_backward_packed(a, hv, dy, dqkv + b * t * 3 * c + col, a->mask_is_valid, ws);
    else
        head_backward(a, p, hv, dy, dqkv + b * t * 3 * c + col, a->mask_is_valid, ws);
}

/* staged=1: each stage over the whole batch, the projections' gemms multi-threaded. */
static void backward_staged(Layer *l, const StepContext *ctx, float *dheads, float *dqkv)
{
    Attention *a = l->priv;
    const int rows = ctx->batch * a->seq, c = a->channels, pairs = ctx->batch * a->heads;
    Param *w = &l->params[P_WEIGHTS], *out_w = &l->params[P_OUT_WEIGHTS];
    const GemmPrecision p = l->precision;
    const int rounded = p != GEMM_FP32;

    /* Output projection: d out_weights += delta^T heads, d heads = delta out_weights. */
    sum_rows_add(l->params[P_OUT_BIASES].grad, l->delta, (size_t)rows, (size_t)c);
    const float *delta = gemm_operand(p, l->delta, (size_t)rows * c, l->delta);
    gemm(1, 0, c, c, rows, 1.0f, delta, c, a->heads_out, c, 1.0f, out_w->grad, c);
    gemm(0, 0, rows, c, c, 1.0f, delta, c, rounded ? a->out_w_rounded : out_w->data, c, 0.0f,
         dheads, c);
    gemm_operand(p, dheads, (size_t)rows * c, dheads);

#pragma omp parallel for schedule(static)                                                          \
    num_threads(loop_threads(a)) if (pairs_in_parallel(a, pairs))
    for (int pair = 0; pair < pairs; pair++)
        pair_backward(l, pair, dheads, dqkv);

    /* Input projection: d weights += dqkv^T x, d x += dqkv weights. */
    const float *x = rounded ? a->x_rounded : l->in[0];
    sum_rows_add(l->params[P_BIASES].grad, dqkv, (size_t)rows, 3 * (size_t)c);
    gemm_operand(p, dqkv, (size_t)rows * 3 * c, dqkv);
    gemm(1, 0, 3 * c, c, rows, 1.0f, dqkv, 3 * c, x, c, 1.0f, w->grad, c);
    float *dx = l->in_delta[0];
    if (dx)
        gemm(0, 0, rows, c, 3 * c, 1.0f, dqkv, 3 * c, rounded ? a->w_rounded : w->data, c,
             layer_input_delta_beta(l, 0), dx, c);
}

/* Sample b's part of the backward: its rows of dheads, dqkv and dL/dx, and its bias gradients
 * bias_grads [4C] (the output biases', then the input biases'), each in the order of
 * backward_staged's stages. */
static void sample_backward(Layer *l, int b, float *dheads, float *dqkv, float *bias_grads)
{
    const Attention *a = l->priv;
    const int t = a->seq, c = a->channels;
    const GemmPrecision p = l->precision;
    const int rounded = p != GEMM_FP32;
    const size_t r0 = (size_t)b * t;
    float *delta = l->delta + r0 * c, *dh = dheads + r0 * c, *dq = dqkv + r0 * 3 * c;

    memset(bias_grads, 0, 4 * (size_t)c * sizeof *bias_grads);
    sum_rows_add(bias_grads, delta, (size_t)t, (size_t)c);
    gemm_operand(p, delta, (size_t)t * c, delta);
    const int panels = (c + GEMM_PACKED_PANEL - 1) / GEMM_PACKED_PANEL;
    if (a->packed_proj)
        gemm_packed_panels(t, c, c, delta, c, a->out_w_packed_back, 0, panels, 0.0f, dh, c);
    else
        gemm(0, 0, t, c, c, 1.0f, delta, c,
             rounded ? a->out_w_rounded : l->params[P_OUT_WEIGHTS].data, c, 0.0f, dh, c);
    gemm_operand(p, dh, (size_t)t * c, dh);

    for (int h = 0; h < a->heads; h++)
        pair_backward(l, b * a->heads + h, dheads, dqkv);

    sum_rows_add(bias_grads + c, dq, (size_t)t, 3 * (size_t)c);
    gemm_operand(p, dq, (size_t)t * 3 * c, dq);
    float *dx = l->in_delta[0];
    if (dx && a->packed_proj)
        gemm_packed_panels(t, c, 3 * c, dq, 3 * c, a->w_packed_back, 0, panels,
                           layer_input_delta_beta(l, 0), dx + r0 * c, c);
    else if (dx)
        gemm(0, 0, t, c, 3 * c, 1.0f, dq, 3 * c, rounded ? a->w_rounded : l->params[P_WEIGHTS].data,
             c, layer_input_delta_beta(l, 0), dx + r0 * c, c);
}

/* grad[m][n] += A^T B for A [k][m], B [k][n] (row strides lda, ldb): backend/cpu/gemm_tn, or with
 * key padding OpenBLAS (the staged reference's and cross-attention's gemm): the GPU runs those
 * layers on cross-attention's kernels, whose cuBLAS products add each sum to the gradient once, as
 * OpenBLAS does, where gemm_tn adds product by product. */
static void add_weight_gradient(const Attention *a, int m, int n, int k, const float *x, int lda,
                                const float *b, int ldb, float *grad)
{
    if (a->key_padding)
        gemm(1, 0, m, n, k, 1.0f, x, lda, b, ldb, 1.0f, grad, n);
    else
        gemm_tn(m, n, k, x, lda, b, ldb, 1.0f, grad, n);
}

void attention_backward(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    if (runs_cross_kernels(l)) {
        attention_cross_backward(l, ctx);
        return;
    }
    const int rows = ctx->batch * a->seq, c = a->channels, pairs = ctx->batch * a->heads;
    float *dheads = ctx->exec->workspace;            /* [batch][T][C] */
    float *dqkv = dheads + (size_t)rows * c;         /* [batch][T][3C] */
    float *bias_grads = dqkv + (size_t)rows * 3 * c; /* [batch][4C] */
    if (a->staged) {
        backward_staged(l, ctx, dheads, dqkv);
        return;
    }
    if (a->packed_proj && !ctx->same_weights) {
        gemm_pack(0, 3 * c, c, l->params[P_WEIGHTS].data, c, a->w_packed_back);
        gemm_pack(0, c, c, l->params[P_OUT_WEIGHTS].data, c, a->out_w_packed_back);
    }
#pragma omp parallel for schedule(dynamic)                                                         \
    num_threads(loop_threads(a)) if (pairs_in_parallel(a, pairs) && ctx->batch > 1)
    for (int b = 0; b < ctx->batch; b++)
        sample_backward(l, b, dheads, dqkv, bias_grads + (size_t)b * 4 * c);

    float *out_b = l->params[P_OUT_BIASES].grad, *in_b = l->params[P_BIASES].grad;
    for (int b = 0; b < ctx->batch; b++) {
        const float *g = bias_grads + (size_t)b * 4 * c;
        for (int j = 0; j < c; j++)
            out_b[j] += g[j];
        for (int j = 0; j < 3 * c; j++)
            in_b[j] += g[c + j];
    }
    /* The weight gradients over all rows: d out_weights += delta^T heads, d weights += dqkv^T x
     * (delta and dqkv as the samples rounded them). */
    const float *x = l->precision != GEMM_FP32 ? a->x_rounded : l->in[0];
    add_weight_gradient(a, c, c, rows, l->delta, c, a->heads_out, c, l->params[P_OUT_WEIGHTS].grad);
    add_weight_gradient(a, 3 * c, c, rows, dqkv, 3 * c, x, c, l->params[P_WEIGHTS].grad);
}
