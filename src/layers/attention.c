/* [attention]: multi-head self-attention, as nanoGPT's CausalSelfAttention.
 *
 *   in, out [batch][T][C] (Shape {1, T, C}); H = heads, D = C / H
 *   weights [3C][C], biases [3C]: the fused projection, query rows, then key, then value rows
 *   out_weights [C][C], out_biases [C]: the output projection
 *
 *   qkv = x weights^T + biases                                         [batch][T][3C]
 *   for each sample b and head h, with Q, K, V the head's D columns of the q, k, v thirds:
 *     P = softmax(Q K^T / sqrt(D)), row i over the keys j <= i (causal=1) or all j  [T][T]
 *     Y = dropout(P) V, the head's D columns of heads                  [batch][T][C]
 *   out = heads out_weights^T + out_biases
 *
 * Queries go in blocks: with the causal mask a block needs only the keys up to its last row,
 * so the score products skip most of the masked upper triangle. The heads' products are
 * ops/gemm_strided's on the calling thread over blocks of STRIDED_ROW_BLOCK rows (K^T and V^T
 * transposed once per pair; the backward's dK and dV over all query rows at once, from the
 * transposes that gemm_strided reads through its strides), OpenBLAS gemms over blocks of
 * ATTENTION_ROW_BLOCK rows in staged=1's reference; with packed=1 (fp32, not staged) they
 * go through ops/gemm_packed instead (K^T and V packed once per (sample, head) pair, blocks of
 * one 16-key panel of rows, so a causal row computes less than a panel of masked scores; the
 * 1/sqrt(D) goes into the softmax; the backward keeps the pair's scale * dS [T][T], takes dQ
 * block by block and dK, dV from the transposes of dS and of the weights). packed=1 is off by
 * default: under load it measured no faster than the gemms (the packing and the transposes
 * cost what the kernel saves at D = 32).
 * The samples run in parallel, one whole sample per task (its projections, single-threaded
 * products: in fp32 on ops/gemm_rows and ops/gemm_packed with both weight matrices packed once
 * per pass, in bf16 OpenBLAS gemms; and its heads), dynamically scheduled: one parallel region per
 * forward and one plus the two weight-gradient products (ops/gemm_tn) per backward, so a thread
 * that another process holds up costs one sample's work, not a barrier per stage (under load, a
 * region per projection and per stage left the two threads waiting on each other). The bias
 * gradients are summed per sample, then over the samples in order, so results do not depend on
 * which thread ran what. staged=1 keeps the reference: stage by stage over the whole batch (the
 * projections as multi-threaded gemms, the (sample, head) pairs in parallel), the heads' products
 * as OpenBLAS gemms; the tests compare the default against it. The dropout mask is drawn from (net
 * seed, draw_id, layer index) as [dropout] draws its own.
 *
 * forward_at keeps qkv as the key/value cache: row t of each sample gets its q, k and v, then
 * attends to the cached keys and values of rows <= t, O(t C) per call. A bidirectional layer
 * (causal=0) attends to all T rows in forward, which a token-by-token pass cannot know: its
 * forward_at sees rows <= t only and so differs from forward.
 *
 * precision=bf16 (Layer.precision): every product takes bf16 operands (gemm_operand), as
 * torch.autocast("cpu", torch.bfloat16) runs the projections and attention's two matmuls: the
 * weights and input are rounded into copies, qkv and heads_out (the outputs of bf16 products,
 * bf16 tensors under autocast) in place, P into the workspace (the softmax backward reads it
 * in float32), and in the backward delta, dL/d(heads), dS and dL/d(qkv) in place once what
 * needs them in float32 (the bias gradients, the softmax backward) is done. The softmax, the
 * biases and the sums stay float32. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/layer.h"
#include "core/net.h"
#include "core/onnx_graph.h"
#include "ops/gemm.h"
#include "ops/gemm_packed.h"
#include "ops/gemm_rows.h"
#include "ops/gemm_strided.h"
#include "ops/gemm_tn.h"
#include "ops/softmax_row.h"
#include "ops/sum_rows.h"

/* Positions in l->params, in the order parse declares them. */
enum { P_WEIGHTS, P_BIASES, P_OUT_WEIGHTS, P_OUT_BIASES };

/* Query rows per score gemm of staged=1: small enough to skip most of the causal mask's zeros,
 * large enough for efficient gemms. */
#define ATTENTION_ROW_BLOCK 64

/* Query rows per block of ops/gemm_strided's products (the default): its calls cost little, so
 * a causal block computes few masked scores. */
#define STRIDED_ROW_BLOCK 16

/* Below this many multiply-adds a parallel region costs more than it saves. */
#define ATTENTION_PARALLEL_MIN 32768

/* Query rows per block of the packed path: one panel of keys, so that a causal block computes
 * less than a panel of masked scores per row. */
#define STRIP GEMM_PACKED_PANEL

typedef struct Attention {
    int seq, channels;    /* T, C */
    int heads, head_size; /* H, D */
    int causal;
    int staged;     /* 1: the stage-by-stage reference order */
    float dropout;  /* probability of dropping an attention weight in training */
    int packed_key; /* packed=1: the heads' products through ops/gemm_packed when fp32 */
    int packed;     /* the heads' products through ops/gemm_packed (fp32, not staged) */
    int block;   /* query rows per block: min(STRIDED_ROW_BLOCK, ATTENTION_ROW_BLOCK when staged or
                  * STRIP when packed, T) */
    int threads; /* workspaces */
    /* The projections' products but their weight gradients through ops/gemm_rows and
     * ops/gemm_packed (fp32, not staged) */
    int packed_proj;
    /* The per-batch state, in the net's slab (attention_resize): */
    float *qkv;       /* [batch][T][3C]; forward_at's key/value cache */
    float *heads_out; /* [batch][T][C]: the heads' outputs side by side */
    /* [batch][H][T][T]: P; causal, zero above the diagonal up to the last key of the row's
     * query block (keys_of_block; the backward reads no further), unset past it */
    float *probs;
    float *mask;       /* [batch][H][T][T]: 0 or 1/(1-dropout); nets with gradients only */
    int mask_is_valid; /* the last forward applied the mask (training) */
    float *workspace;  /* [threads][workspace_floats] */
    /* precision=bf16: weights, out_weights as the last forward rounded them, and the input
     * [batch][T][C] */
    float *w_bf16, *out_w_bf16, *x_bf16;
    /* packed_proj, kept between the passes of a step (StepContext.same_weights): weights and
     * out_weights as gemm_pack packs them, transposed for the forward, and as they are for the
     * backward's input gradients */
    float *w_packed, *out_w_packed, *w_packed_back, *out_w_packed_back;
} Attention;

/* The line of key when the section sets it, else the section header's. */
static int attention_parse(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e)
{
    int heads, causal, staged, packed;
    float dropout;
    int st = cfg_get_int(cfg, s, "heads", 1, &heads, e);
    st = st ? st : cfg_get_flag(cfg, s, "causal", 1, &causal, e);
    st = st ? st : cfg_get_flag(cfg, s, "staged", 0, &staged, e);
    st = st ? st : cfg_get_flag(cfg, s, "packed", 0, &packed, e);
    st = st ? st : cfg_get_float(cfg, s, "dropout", 0.0f, &dropout, e);
    if (st)
        return st;
    const int channels = l->in_shape.w;
    if (net->seq <= 0 || l->in_shape.c != 1)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: layer %d: [%s] needs a sequence net ([net] seq=T) and an input "
                         "of one row per token",
                         cfg->path, s->line, l->index, s->name);
    if (heads < 1 || channels % heads)
        return cfg_bad_value(cfg, s, "heads", e,
                             "the %d features per token must split evenly over the heads",
                             channels);
    if (!(dropout >= 0.0f && dropout < 1.0f))
        return cfg_bad_value(cfg, s, "dropout", e, "expected a number in [0, 1)");

    Attention *a = l->priv;
    a->seq = l->in_shape.h;
    a->channels = channels;
    a->heads = heads;
    a->head_size = channels / heads;
    a->causal = causal;
    a->staged = staged;
    a->packed_key = packed;
    a->dropout = dropout;

    const size_t c = (size_t)channels;
    l->out_shape = l->in_shape;
    /* torch.nn.MultiheadAttention's in_proj_weight, in_proj_bias and out_proj */
    layer_add_param(l, "weights", 1, 1, 2, (int64_t[]){3 * channels, channels});
    layer_add_param(l, "biases", 1, 0, 1, (int64_t[]){3 * channels});
    layer_add_param(l, "out_weights", 1, 1, 2, (int64_t[]){channels, channels});
    layer_add_param(l, "out_biases", 1, 0, 1, (int64_t[]){channels});
    /* backward's dL/d(heads) [T][C], dL/d(qkv) [T][3C] and the sample's bias gradients [4C] */
    l->scratch_per_sample = 4 * (size_t)a->seq * c + 4 * c;
    const double t = a->seq, pairs = causal ? t * (t + 1) / 2 : t * t;
    l->flops = 8.0 * t * (double)c * (double)c + 4.0 * pairs * (double)c;
    return CDL_OK;
}

/* As PyTorch's nn.Linear, for both projections (C inputs each): weights and biases
 * ~ U(-1/sqrt(C), 1/sqrt(C)). */
static void attention_init(Layer *l, Rng *rng)
{
    const Attention *a = l->priv;
    layer_init_uniform(l, rng, 1.0f / sqrtf((float)a->channels));
}

/* The workspace of one thread: [2][T][T] and K^T or V^T [D][T]; packed, the larger of the forward's
 * K^T and V packed and [block][T], and the backward's [2][T][T] and V^T, K, Q, dY packed. */
static size_t workspace_floats(const Attention *a)
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

static int attention_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    Attention *a = l->priv;
    const size_t rows = (size_t)batch * (size_t)a->seq, c = (size_t)a->channels;
    const size_t probs = (size_t)batch * (size_t)a->heads * (size_t)a->seq * (size_t)a->seq;
    if (probs > NET_MAX_BATCH_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "layer %d [attention]: a mini-batch of %d needs more than %zu attention "
                         "weights; lower batch or raise subdivisions",
                         l->index, batch, NET_MAX_BATCH_FLOATS);
    a->threads = omp_get_max_threads();
    a->packed = a->packed_key && !a->staged && l->precision == GEMM_FP32;
    const int block = a->packed ? STRIP : a->staged ? ATTENTION_ROW_BLOCK : STRIDED_ROW_BLOCK;
    a->block = a->seq < block ? a->seq : block;
    a->qkv = layer_state_floats(st, rows * 3 * c);
    a->heads_out = layer_state_floats(st, rows * c);
    a->probs = layer_state_floats(st, probs);
    /* Dropout acts in training only, which needs gradients. */
    a->mask = layer_state_floats(st, a->dropout > 0 && l->params[P_WEIGHTS].grad ? probs : 0);
    a->mask_is_valid = 0;
    a->workspace = layer_state_floats(st, (size_t)a->threads * workspace_floats(a));
    const int bf16 = l->precision == GEMM_BF16;
    a->w_bf16 = layer_state_floats(st, bf16 ? 3 * c * c : 0);
    a->out_w_bf16 = layer_state_floats(st, bf16 ? c * c : 0);
    a->x_bf16 = layer_state_floats(st, bf16 ? rows * c : 0);
    a->packed_proj = !a->staged && l->precision == GEMM_FP32;
    const size_t w_fwd = gemm_packed_floats((int)c, 3 * (int)c),
                 w_bwd = gemm_packed_floats(3 * (int)c, (int)c);
    const size_t out_fwd = gemm_packed_floats((int)c, (int)c); /* the backward's is the same */
    a->w_packed = layer_state_floats(st, a->packed_proj ? w_fwd : 0);
    a->out_w_packed = layer_state_floats(st, a->packed_proj ? out_fwd : 0);
    a->w_packed_back = layer_state_floats(st, a->packed_proj ? w_bwd : 0);
    a->out_w_packed_back = layer_state_floats(st, a->packed_proj ? out_fwd : 0);
    return CDL_OK;
}

/* y[rows][n] = x[rows][k] w^T + bias for w [n][k]; row r of x starts at r * x_stride and of
 * y at r * y_stride. In precision p, x's rows are rounded into x_copy [rows][k] first (w is
 * already rounded). */
static void linear_rows(GemmPrecision p, const float *x, int x_stride, int rows, int k, int n,
                        const float *w, const float *bias, float *y, int y_stride, float *x_copy)
{
#pragma omp parallel for schedule(static) if ((size_t)rows * n > ATTENTION_PARALLEL_MIN)
    for (int r = 0; r < rows; r++) {
        memcpy(y + (size_t)r * y_stride, bias, (size_t)n * sizeof *y);
        if (p == GEMM_BF16)
            gemm_operand(p, x + (size_t)r * x_stride, (size_t)k, x_copy + (size_t)r * k);
    }
    if (p == GEMM_BF16)
        x = x_copy, x_stride = k;
    gemm(0, 1, rows, n, k, 1.0f, x, x_stride, w, k, 1.0f, y, y_stride);
}

/* Rounds rows[0..n) of a [n][stride] matrix to bf16 in place, width values each, in precision
 * p (a product's output that autocast would hold in bf16 and that feeds further products). */
static void round_rows(GemmPrecision p, float *x, int n, int width, size_t stride)
{
    for (int r = 0; p == GEMM_BF16 && r < n; r++)
        gemm_operand(p, x + (size_t)r * stride, (size_t)width, x + (size_t)r * stride);
}

/* row[0..n) = softmax(scale * row[0..n)), row[n..width) = 0 (the masked keys). */
static void softmax_masked_row(float *row, int n, int width, float scale)
{
    softmax_row_probs(row, row, (size_t)n, scale);
    memset(row + n, 0, (size_t)(width - n) * sizeof *row);
}

/* 1 when the (sample, head) pairs of a forward or backward are worth a parallel region. */
static int pairs_in_parallel(const Attention *a, int pairs)
{
    const double work = (double)pairs * a->seq * a->seq * a->head_size;
    return pairs > 1 && work > ATTENTION_PARALLEL_MIN;
}

/* The threads a parallel loop may use: no more than there are workspaces. */
static int loop_threads(const Attention *a)
{
    const int nt = omp_get_max_threads();
    return nt < a->threads ? nt : a->threads;
}

/* Where one (sample, head) pair's tensors start; q, k, v and their gradients have row stride
 * 3C, y and dy C, p and mask T. */
typedef struct HeadView {
    const float *q, *k, *v;
    float *p, *mask, *y;
} HeadView;

static HeadView head_view(const Attention *a, int b, int h)
{
    const size_t t = (size_t)a->seq, c = (size_t)a->channels, ph = (size_t)b * a->heads + h;
    const float *q = a->qkv + (size_t)b * t * 3 * c + (size_t)h * a->head_size;
    return (HeadView){q,
                      q + c,
                      q + 2 * c,
                      a->probs + ph * t * t,
                      a->mask ? a->mask + ph * t * t : NULL,
                      a->heads_out + (size_t)b * t * c + (size_t)h * a->head_size};
}

/* The keys a block of queries ending before row `end` attends to. */
static int keys_of_block(const Attention *a, int end)
{
    return a->causal ? end : a->seq;
}

/* tr[D][T] = x^T for one head's x [T][D] of row stride ld: the right operand of the products
 * by K^T and V^T. */
static void transpose_head(const Attention *a, const float *x, int ld, float *tr)
{
    gemm_strided_transpose(a->seq, a->head_size, x, (size_t)ld, tr, (size_t)a->seq);
}

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
static void prefetch_block(const Attention *a, const float *x, int r0)
{
    const int t = a->seq, end = r0 + a->block < t ? r0 + a->block : t;
    const int keys = keys_of_block(a, end);
    for (int i = r0; i < end; i++)
        for (int j = 0; j < keys; j += 16)
            __builtin_prefetch(x + (size_t)i * t + j);
}

/* c[m][n] = alpha op(x) b + beta c for b [k][n] (op(x) = x [m][k] or, with trans_x, x^T for x
 * [k][m]; row strides ldx, ldb, ldc): OpenBLAS when staged (the reference), else ops/gemm_strided
 * on the calling thread. */
static void head_product(const Attention *a, int trans_x, int m, int n, int k, float alpha,
                         const float *x, int ldx, const float *b, int ldb, float beta, float *c,
                         int ldc)
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
static void packed_product(int m, int n, int k, const float *a, int lda, const float *packed,
                           int k_total, int k0, float beta, float *c, int ldc)
{
    for (int j0 = 0; j0 < n; j0 += STRIP)
        gemm_packed_panels(m, n - j0 < STRIP ? n - j0 : STRIP, k, a, lda,
                           packed + ((size_t)(j0 / STRIP) * k_total + k0) * STRIP, 0, 1, beta,
                           c + j0, ldc);
}

/* One (sample, head) pair: P and Y from its q, k, v; with use_mask, draws the dropout mask from
 * dropout_key at the pair's index in the step's global mini-batch and applies it. ws holds
 * workspace_floats(a). Packed, K^T and V are packed once for the pair's blocks and the scale
 * goes into the softmax; else the products are OpenBLAS gemms. */
static void head_forward(const Attention *a, GemmPrecision prec, HeadView hv, uint64_t pair,
                         int use_mask, uint64_t dropout_key, float *ws)
{
    const int t = a->seq, d = a->head_size, ld = 3 * a->channels;
    const float scale = 1.0f / sqrtf((float)d), keep_scale = 1.0f / (1.0f - a->dropout);
    float *kt = ws + (size_t)a->block * t;     /* K^T [D][T], packed or not */
    float *vp = kt + gemm_packed_floats(d, t); /* packed: V [T][D] */
    if (a->packed) {
        gemm_pack_rows(1, d, t, hv.k, ld, 0, d, kt);
        gemm_pack_rows(0, t, d, hv.v, ld, 0, t, vp);
    } else {
        transpose_head(a, hv.k, ld, kt);
    }
    for (int r0 = 0; r0 < t; r0 += a->block) {
        const int rows = r0 + a->block < t ? a->block : t - r0;
        const int keys = keys_of_block(a, r0 + rows);
        float *p = hv.p + (size_t)r0 * t;
        /* scores[rows][keys] = scale * Q[r0 .. r0+rows) K[0 .. keys)^T */
        if (a->packed)
            packed_product(rows, keys, d, hv.q + (size_t)r0 * ld, ld, kt, d, 0, 0.0f, p, t);
        else
            head_product(a, 0, rows, keys, d, scale, hv.q + (size_t)r0 * ld, ld, kt, t, 0.0f, p, t);
        for (int i = 0; i < rows; i++)
            softmax_masked_row(p + (size_t)i * t, a->causal ? r0 + i + 1 : t, keys,
                               a->packed ? scale : 1.0f);
        const float *weights = p;
        if (use_mask) {
            float *m = hv.mask + (size_t)r0 * t;
            const uint64_t first = (pair * (uint64_t)t + (uint64_t)r0) * (uint64_t)t;
            for (int i = 0; i < rows; i++)
                for (int j = 0; j < keys; j++) {
                    const size_t at = (size_t)i * t + j;
                    m[at] =
                        rng_uniform_at(dropout_key, first + at) < a->dropout ? 0.0f : keep_scale;
                    ws[at] = p[at] * m[at];
                }
            weights = ws;
        }
        if (prec == GEMM_BF16) {
            for (int i = 0; i < rows; i++)
                gemm_operand(prec, weights + (size_t)i * t, (size_t)keys, ws + (size_t)i * t);
            weights = ws;
        }
        /* Y[r0 .. r0+rows) = weights[rows][keys] V[0 .. keys) */
        float *y = hv.y + (size_t)r0 * a->channels;
        if (a->packed)
            packed_product(rows, d, keys, weights, t, vp, t, 0, 0.0f, y, a->channels);
        else
            head_product(a, 0, rows, d, keys, 1.0f, weights, t, hv.v, ld, 0.0f, y, a->channels);
    }
}

/* What one forward's tasks share: the operands as precision p takes them, the dropout draw. */
typedef struct ForwardStep {
    GemmPrecision p;
    const float *x, *w_in, *w_out;           /* x [batch][T][C] */
    const float *w_in_packed, *w_out_packed; /* packed_proj: w_in^T, w_out^T packed, else NULL */
    float *out;
    int use_mask;
    uint64_t key, first_pair; /* the dropout key, the global index of the batch's first pair */
} ForwardStep;

/* qkv of rows [r0, r0 + n) from x (rounded into x_bf16 in bf16), itself rounded in bf16. */
static void project_in(const Layer *l, const ForwardStep *s, size_t r0, int n)
{
    const Attention *a = l->priv;
    const size_t c = (size_t)a->channels;
    float *qkv = a->qkv + r0 * 3 * c;
    if (s->w_in_packed)
        gemm_bias_act(n, 3 * (int)c, (int)c, s->x + r0 * c, (int)c, s->w_in_packed,
                      l->params[P_BIASES].data, CDL_ACT_LINEAR, qkv, qkv);
    else
        linear_rows(s->p, s->x + r0 * c, (int)c, n, (int)c, 3 * (int)c, s->w_in,
                    l->params[P_BIASES].data, qkv, 3 * (int)c,
                    a->x_bf16 ? a->x_bf16 + r0 * c : NULL);
    gemm_operand(s->p, qkv, (size_t)n * 3 * c, qkv);
}

/* out of rows [r0, r0 + n) from heads_out (rounded in place in bf16). */
static void project_out(const Layer *l, const ForwardStep *s, size_t r0, int n)
{
    const Attention *a = l->priv;
    const size_t c = (size_t)a->channels;
    float *heads = a->heads_out + r0 * c;
    gemm_operand(s->p, heads, (size_t)n * c, heads);
    /* heads_out is rounded already: its copy would be itself */
    if (s->w_out_packed)
        gemm_bias_act(n, (int)c, (int)c, heads, (int)c, s->w_out_packed,
                      l->params[P_OUT_BIASES].data, CDL_ACT_LINEAR, s->out + r0 * c,
                      s->out + r0 * c);
    else
        linear_rows(GEMM_FP32, heads, (int)c, n, (int)c, (int)c, s->w_out,
                    l->params[P_OUT_BIASES].data, s->out + r0 * c, (int)c, NULL);
}

/* Pair `pair` (sample pair / H, head pair % H) of the batch, in the workspace of this thread. */
static void pair_forward(const Layer *l, const ForwardStep *s, int pair)
{
    const Attention *a = l->priv;
    head_forward(a, s->p, head_view(a, pair / a->heads, pair % a->heads),
                 s->first_pair + (uint64_t)pair, s->use_mask, s->key,
                 a->workspace + (size_t)omp_get_thread_num() * workspace_floats(a));
}

static void attention_forward(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    const int t = a->seq, rows = ctx->batch * t, pairs = ctx->batch * a->heads;
    const GemmPrecision p = l->precision;
    const Param *w = &l->params[P_WEIGHTS], *out_w = &l->params[P_OUT_WEIGHTS];
    a->mask_is_valid = ctx->train && a->dropout > 0 && a->mask;
    const ForwardStep s = {
        .p = p,
        .x = l->in[0],
        .w_in = gemm_operand(p, w->data, w->count, a->w_bf16),
        .w_out = gemm_operand(p, out_w->data, out_w->count, a->out_w_bf16),
        .out = l->out,
        .use_mask = a->mask_is_valid,
        .key = a->mask_is_valid ? rng_key(ctx->seed, layer_draw_stream(ctx, l)) : 0,
        .first_pair = (uint64_t)ctx->sample_offset * (uint64_t)a->heads,
        .w_in_packed = a->packed_proj ? a->w_packed : NULL,
        .w_out_packed = a->packed_proj ? a->out_w_packed : NULL,
    };
    if (a->packed_proj && !ctx->same_weights) {
        const int c = a->channels;
        gemm_pack(1, c, 3 * c, w->data, c, a->w_packed);
        gemm_pack(1, c, c, out_w->data, c, a->out_w_packed);
    }
    if (a->staged) {
        project_in(l, &s, 0, rows);
#pragma omp parallel for schedule(static)                                                          \
    num_threads(loop_threads(a)) if (pairs_in_parallel(a, pairs))
        for (int pair = 0; pair < pairs; pair++)
            pair_forward(l, &s, pair);
        project_out(l, &s, 0, rows);
        return;
    }
#pragma omp parallel for schedule(dynamic)                                                         \
    num_threads(loop_threads(a)) if (pairs_in_parallel(a, pairs) && ctx->batch > 1)
    for (int b = 0; b < ctx->batch; b++) {
        project_in(l, &s, (size_t)b * t, t);
        for (int h = 0; h < a->heads; h++)
            pair_forward(l, &s, b * a->heads + h);
        project_out(l, &s, (size_t)b * t, t);
    }
}

/* Row t of one (sample, head) pair from the cached keys and values of rows <= t; scores
 * holds T floats. In bf16 the weights are rounded before they multiply V, as head_forward's. */
static void head_forward_at(const Attention *a, GemmPrecision prec, HeadView hv, int t,
                            float *scores)
{
    const int d = a->head_size, ld = 3 * a->channels;
    const float scale = 1.0f / sqrtf((float)d);
    const float *q = hv.q + (size_t)t * ld;
    for (int j = 0; j <= t; j++) {
        const float *k = hv.k + (size_t)j * ld;
        float dot = 0;
#pragma omp simd reduction(+ : dot)
        for (int i = 0; i < d; i++)
            dot += q[i] * k[i];
        scores[j] = scale * dot;
    }
    softmax_masked_row(scores, t + 1, t + 1, 1.0f);
    gemm_operand(prec, scores, (size_t)t + 1, scores);
    float *y = hv.y + (size_t)t * a->channels;
    memset(y, 0, (size_t)d * sizeof *y);
    for (int j = 0; j <= t; j++) {
        const float *v = hv.v + (size_t)j * ld;
        const float w = scores[j];
#pragma omp simd
        for (int i = 0; i < d; i++)
            y[i] += w * v[i];
    }
}

static void attention_forward_at(Layer *l, const StepContext *ctx, int t)
{
    Attention *a = l->priv;
    const int c = a->channels, stride = a->seq * c, pairs = ctx->batch * a->heads;
    const size_t at = (size_t)t * c;
    const GemmPrecision p = l->precision;
    const int bf16 = p == GEMM_BF16;
    /* Row t of every sample: rows of the batch are T rows apart; the weights as the forward
     * before rounded them. */
    linear_rows(p, l->in[0] + at, stride, ctx->batch, c, 3 * c,
                bf16 ? a->w_bf16 : l->params[P_WEIGHTS].data, l->params[P_BIASES].data,
                a->qkv + 3 * at, 3 * stride, a->x_bf16);
    round_rows(p, a->qkv + 3 * at, ctx->batch, 3 * c, 3 * (size_t)stride);
    const size_t ws_floats = workspace_floats(a);
#pragma omp parallel for schedule(static) num_threads(                                             \
    loop_threads(a)) if ((size_t)pairs * (t + 1) * a->head_size > ATTENTION_PARALLEL_MIN)
    for (int pair = 0; pair < pairs; pair++)
        head_forward_at(a, p, head_view(a, pair / a->heads, pair % a->heads), t,
                        a->workspace + (size_t)omp_get_thread_num() * ws_floats);
    round_rows(p, a->heads_out + at, ctx->batch, c, (size_t)stride);
    linear_rows(GEMM_FP32, a->heads_out + at, stride, ctx->batch, c, c,
                bf16 ? a->out_w_bf16 : l->params[P_OUT_WEIGHTS].data, l->params[P_OUT_BIASES].data,
                l->out + at, stride, NULL);
}

/* One row of softmax's backward: dp[keys] = scale * p (dp - sum_j p_j dp_j), dp first taken
 * through the dropout mask row (mask NULL: none). */
static void softmax_row_backward(const float *p, const float *mask, int keys, float scale,
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
    const int weights_copied = use_mask || prec == GEMM_BF16;
    const float *weights = weights_copied ? dropped : hv.p;
    prefetch_head(a, hv);
    prefetch_block(a, hv.p, 0);
    transpose_head(a, hv.v, ld, vt);
    for (int r0 = 0; r0 < t; r0 += a->block) {
        const int rows = r0 + a->block < t ? a->block : t - r0;
        const int keys = keys_of_block(a, r0 + rows);
        prefetch_block(a, hv.p, r0 + a->block);
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
    for (int j0 = 0; j0 < t; j0 += a->block) {
        const int keys = j0 + a->block < t ? a->block : t - j0, i0 = a->causal ? j0 : 0;
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

/* head_backward through ops/gemm_packed (fp32): dP, then dS' = scale dS of all T rows into ds
 * [T][T] with dQ = dS' K block by block; then dK = dS'^T Q and dV = weights^T dY from the
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
        const int keys = keys_of_block(a, r0 + rows);
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
            const int keys = keys_of_block(a, r0 + a->block < t ? r0 + a->block : t);
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
static void pair_backward(const Attention *a, GemmPrecision p, int pair, const float *dheads,
                          float *dqkv)
{
    const int b = pair / a->heads, h = pair % a->heads;
    const size_t t = (size_t)a->seq, c = (size_t)a->channels, col = (size_t)h * a->head_size;
    const HeadView hv = head_view(a, b, h);
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
    const int bf16 = p == GEMM_BF16;

    /* Output projection: d out_weights += delta^T heads, d heads = delta out_weights. */
    sum_rows_add(l->params[P_OUT_BIASES].grad, l->delta, (size_t)rows, (size_t)c);
    const float *delta = gemm_operand(p, l->delta, (size_t)rows * c, l->delta);
    gemm(1, 0, c, c, rows, 1.0f, delta, c, a->heads_out, c, 1.0f, out_w->grad, c);
    gemm(0, 0, rows, c, c, 1.0f, delta, c, bf16 ? a->out_w_bf16 : out_w->data, c, 0.0f, dheads, c);
    gemm_operand(p, dheads, (size_t)rows * c, dheads);

#pragma omp parallel for schedule(static)                                                          \
    num_threads(loop_threads(a)) if (pairs_in_parallel(a, pairs))
    for (int pair = 0; pair < pairs; pair++)
        pair_backward(a, p, pair, dheads, dqkv);

    /* Input projection: d weights += dqkv^T x, d x += dqkv weights. */
    const float *x = bf16 ? a->x_bf16 : l->in[0];
    sum_rows_add(l->params[P_BIASES].grad, dqkv, (size_t)rows, 3 * (size_t)c);
    gemm_operand(p, dqkv, (size_t)rows * 3 * c, dqkv);
    gemm(1, 0, 3 * c, c, rows, 1.0f, dqkv, 3 * c, x, c, 1.0f, w->grad, c);
    float *dx = l->in_delta[0];
    if (dx)
        gemm(0, 0, rows, c, 3 * c, 1.0f, dqkv, 3 * c, bf16 ? a->w_bf16 : w->data, c,
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
    const int bf16 = p == GEMM_BF16;
    const size_t r0 = (size_t)b * t;
    float *delta = l->delta + r0 * c, *dh = dheads + r0 * c, *dq = dqkv + r0 * 3 * c;

    memset(bias_grads, 0, 4 * (size_t)c * sizeof *bias_grads);
    sum_rows_add(bias_grads, delta, (size_t)t, (size_t)c);
    gemm_operand(p, delta, (size_t)t * c, delta);
    const int panels = (c + GEMM_PACKED_PANEL - 1) / GEMM_PACKED_PANEL;
    if (a->packed_proj)
        gemm_packed_panels(t, c, c, delta, c, a->out_w_packed_back, 0, panels, 0.0f, dh, c);
    else
        gemm(0, 0, t, c, c, 1.0f, delta, c, bf16 ? a->out_w_bf16 : l->params[P_OUT_WEIGHTS].data, c,
             0.0f, dh, c);
    gemm_operand(p, dh, (size_t)t * c, dh);

    for (int h = 0; h < a->heads; h++)
        pair_backward(a, p, b * a->heads + h, dheads, dqkv);

    sum_rows_add(bias_grads + c, dq, (size_t)t, 3 * (size_t)c);
    gemm_operand(p, dq, (size_t)t * 3 * c, dq);
    float *dx = l->in_delta[0];
    if (dx && a->packed_proj)
        gemm_packed_panels(t, c, 3 * c, dq, 3 * c, a->w_packed_back, 0, panels,
                           layer_input_delta_beta(l, 0), dx + r0 * c, c);
    else if (dx)
        gemm(0, 0, t, c, 3 * c, 1.0f, dq, 3 * c, bf16 ? a->w_bf16 : l->params[P_WEIGHTS].data, c,
             layer_input_delta_beta(l, 0), dx + r0 * c, c);
}

static void attention_backward(Layer *l, const StepContext *ctx)
{
    Attention *a = l->priv;
    const int rows = ctx->batch * a->seq, c = a->channels, pairs = ctx->batch * a->heads;
    float *dheads = ctx->exec->workspace;                   /* [batch][T][C] */
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
     * (delta and dqkv as the samples rounded them; ops/gemm_tn, the staged reference's are
     * OpenBLAS gemms). */
    const float *x = l->precision == GEMM_BF16 ? a->x_bf16 : l->in[0];
    gemm_tn(c, c, rows, l->delta, c, a->heads_out, c, 1.0f, l->params[P_OUT_WEIGHTS].grad, c);
    gemm_tn(3 * c, c, rows, dqkv, 3 * c, x, c, 1.0f, l->params[P_WEIGHTS].grad, c);
}

/* The causal mask [T][T]: 0 on and below the diagonal, -inf above it (the softmax gives those
 * keys weight 0); out of memory leaves the graph's buffer failed. */
static void onnx_causal_mask(OnnxGraph *g, const char *name, int t)
{
    float *mask = malloc((size_t)t * (size_t)t * sizeof *mask);
    if (!mask) {
        g->body.failed = 1;
        return;
    }
    for (int i = 0; i < t; i++)
        for (int j = 0; j < t; j++)
            mask[(size_t)i * t + j] = j <= i ? 0.0f : -INFINITY;
    onnx_initializer(g, name, ONNX_FLOAT, 2, (const int64_t[]){t, t}, mask);
    free(mask);
}

/* The fused projection to qkv [N][T][3C], reshaped and transposed to [3][N][H][T][D] and
 * gathered into Q, K, V [N][H][T][D]; P = Softmax(Q K^T * scale (+ the causal mask)) [N][H][T][T],
 * Y = P V, transposed and reshaped back to [N][T][C], then the output projection. */
static int attention_export_onnx(const Layer *l, const Net *net, OnnxGraph *g, Error *e)
{
    (void)net, (void)e;
    const Attention *a = l->priv;
    static const char *const suffixes[] = {
        "qkv",    "qkv.split", "qkv.heads", "q",      "k",      "v", "k_t",    "scores",
        "scaled", "scale",     "mask",      "masked", "probs",  "y", "y.rows", "heads",
        "split",  "rows",      "index0",    "index1", "index2", NULL};
    enum {
        QKV,
        QKV_SPLIT,
        QKV_HEADS,
        Q,
        K,
        V,
        K_T,
        SCORES,
        SCALED,
        SCALE,
        MASK,
        MASKED,
        PROBS,
        Y,
        Y_ROWS,
        HEADS,
        SPLIT_SHAPE,
        ROWS_SHAPE,
        INDEX0
    };
    char v[21][ONNX_NAME_MAX], x[ONNX_NAME_MAX], p[4][ONNX_NAME_MAX];
    for (int k = 0; suffixes[k]; k++)
        onnx_name(v[k], l, suffixes[k]);
    onnx_input_nchw(g, l, 0, x);
    for (int k = 0; k < 4; k++)
        onnx_param(g, l, k, p[k]);
    const int64_t t = a->seq, c = a->channels;
    onnx_linear(g, x, p[P_WEIGHTS], p[P_BIASES], v[QKV]);
    onnx_int64s(g, v[SPLIT_SHAPE], 5, (const int64_t[]){0, t, 3, a->heads, a->head_size});
    onnx_node(g, "Reshape", 2, (const char *[]){v[QKV], v[SPLIT_SHAPE]}, v[QKV_SPLIT], 0, NULL);
    const int64_t to_heads[] = {2, 0, 3, 1, 4}, key_t[] = {0, 1, 3, 2}, to_rows[] = {0, 2, 1, 3};
    const OnnxAttr perm_heads = onnx_attr_ints("perm", to_heads, 5);
    onnx_node(g, "Transpose", 1, (const char *[]){v[QKV_SPLIT]}, v[QKV_HEADS], 1, &perm_heads);
    const OnnxAttr axis0 = onnx_attr_int("axis", 0);
    for (int k = 0; k < 3; k++) {
        const int64_t index = k;
        onnx_initializer(g, v[INDEX0 + k], ONNX_INT64, 0, NULL, &index);
        onnx_node(g, "Gather", 2, (const char *[]){v[QKV_HEADS], v[INDEX0 + k]}, v[Q + k], 1,
                  &axis0);
    }
    const OnnxAttr perm_key = onnx_attr_ints("perm", key_t, 4);
    onnx_node(g, "Transpose", 1, (const char *[]){v[K]}, v[K_T], 1, &perm_key);
    onnx_node(g, "MatMul", 2, (const char *[]){v[Q], v[K_T]}, v[SCORES], 0, NULL);
    onnx_scalar(g, v[SCALE], 1.0f / sqrtf((float)a->head_size));
    onnx_node(g, "Mul", 2, (const char *[]){v[SCORES], v[SCALE]}, v[SCALED], 0, NULL);
    const char *logits = v[SCALED];
    if (a->causal) {
        onnx_causal_mask(g, v[MASK], a->seq);
        onnx_node(g, "Add", 2, (const char *[]){v[SCALED], v[MASK]}, v[MASKED], 0, NULL);
        logits = v[MASKED];
    }
    const OnnxAttr last = onnx_attr_int("axis", 3);
    onnx_node(g, "Softmax", 1, (const char *[]){logits}, v[PROBS], 1, &last);
    onnx_node(g, "MatMul", 2, (const char *[]){v[PROBS], v[V]}, v[Y], 0, NULL);
    const OnnxAttr perm_rows = onnx_attr_ints("perm", to_rows, 4);
    onnx_node(g, "Transpose", 1, (const char *[]){v[Y]}, v[Y_ROWS], 1, &perm_rows);
    onnx_int64s(g, v[ROWS_SHAPE], 3, (const int64_t[]){0, t, c});
    onnx_node(g, "Reshape", 2, (const char *[]){v[Y_ROWS], v[ROWS_SHAPE]}, v[HEADS], 0, NULL);
    onnx_linear(g, v[HEADS], p[P_OUT_WEIGHTS], p[P_OUT_BIASES], onnx_output(g, l, 0));
    return CDL_OK;
}

const LayerType attention_layer = {
    .name = "attention",
    .priv_size = sizeof(Attention),
    .parse = attention_parse,
    .init = attention_init,
    .export_onnx = attention_export_onnx,
    .writes_input_delta = 1,
    .splits_batch = 1,
};

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_attention_kernels = {
    .resize = attention_resize,
    .forward = attention_forward,
    .backward = attention_backward,
    .forward_at = attention_forward_at,
};
