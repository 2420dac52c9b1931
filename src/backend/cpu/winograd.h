/* Winograd convolution F(2x2, 3x3) (Lavin and Gray, 2015) of a 3x3, stride 1, padding 1,
 * one-group convolution: 2.25 times fewer multiplies than the direct product.
 *
 *   x [batch][c][h][w] -> y [batch][k][h][w], weights [k][c][3][3], no bias
 *
 * The output is cut into 2x2 tiles (the last row and column of tiles overhang an odd map), each
 * read through its 4x4 input window. The weights are transformed once per pass into U [16][k][c],
 * packed in blocks of 4 filters for the product kernel (AVX-512: 8 filters x 48 tiles of
 * accumulators; AVX2 + FMA: 4 filters x 24 tiles). The tiles of the whole batch go in chunks: a
 * chunk's windows are transformed into V [16][c][chunk]; the products M[e] = U[e] * V[e] [k][chunk]
 * are transformed back onto the 2x2 output tiles. On maps over 16 wide the 16 products of the chunk
 * go apart into M, then each tile row's run is transformed back (V[e] stays in L1 while every
 * filter reads it); on maps up to 16 wide (runs of 8 or fewer tiles; with AVX-512 not at 512
 * channels and filters, which go apart) each block of filters x tiles of the product kernel takes
 * its 16 products into a block of M that stays in L1 and is transformed back at once, tile by tile
 * (fused). Chunks spread over threads, each with its own slice of the scratch buffer, or, with few
 * chunks a thread (a small batch), each thread takes its range of the filters over every chunk; a
 * tile's result does not depend on which thread took it.
 *
 * The weight gradient dw = G^T [(A dy A^T) . (B^T d B)] G is summed over the tiles in the
 * transformed domain (winograd_weight_grads), with 8 channels or filters of an image in the
 * transform lanes. */
#ifndef CDL_WINOGRAD_H
#define CDL_WINOGRAD_H

#include <stddef.h>

#include "core/activation.h"

/* The geometry of one winograd_conv call and its chunks, made by winograd_plan. */
typedef struct WinogradPlan {
    int batch, c, k, h, w;
    int tiles;   /* 2x2 output tiles of the batch */
    int chunk;   /* tiles per chunk */
    int threads; /* at most this many threads, each with winograd_scratch_floats of scratch */
    int fused;   /* maps at most 16 wide: products and output transform per block (above) */
    int parts;   /* 1: the chunks spread over the threads; else (few chunks a thread) each thread
                    takes one of parts ranges of the filters over every chunk */
} WinogradPlan;

/* The plan for x [batch][c][h][w] and k filters on up to threads threads. The chunk is chosen
 * symmetric in c and k, so the plan with c and k swapped (the input gradient's) needs the same
 * scratch. */
WinogradPlan winograd_plan(int batch, int c, int k, int h, int w, int threads);

/* Whether a convolution of c channels into k filters on h x w maps is worth its transforms, as
 * measured against im2col + gemm (docs/engines.md, "Winograd convolutions"): not with fewer than 16
 * channels or filters (a first layer of 1 or 3 channels ran slower), nor on maps under 4 pixels
 * a side (mostly overhang). */
int winograd_worth(int c, int k, int h, int w);

/* Floats of the transformed weights U of k filters over c channels, or of c filters over k
 * channels (the input gradient's): 16 * k * c with k and c rounded up to 4. */
size_t winograd_weights_floats(int k, int c);

/* Floats of scratch winograd_conv needs: one slice of V and M per thread. */
size_t winograd_scratch_floats(const WinogradPlan *p);

/* u [16][k][c] = the transform G g G^T of each 3x3 filter g of w [k][c][3][3]. */
void winograd_weights(const float *w, int k, int c, float *u);

/* What the output transform makes of each value v it computes for filter f at position i of y
 * [batch][k][h][w]: act(v + bias[f] + add[i]), bias [k] and add [batch][k][h][w] each optional
 * (NULL: none; add may be y itself, for y += conv), act one that winograd_fuses_activation. An
 * inference forward's folded batch norm, its activation and a residual sum, in the pass that
 * writes y. */
typedef struct WinogradOutput {
    const float *bias;
    const float *add;
    ActivationKind act;
} WinogradOutput;

/* Whether the output transform applies act (linear, relu, leaky, relu6). */
int winograd_fuses_activation(ActivationKind act);

/* y = conv(x, weights) (out NULL), or as out says, with u the weights transformed by
 * winograd_weights; scratch holds winograd_scratch_floats(p) floats. */
void winograd_conv(const WinogradPlan *p, const float *u, const float *x, float *y,
                   const WinogradOutput *out, float *scratch);

/* Whether the weight gradient of such a convolution is worth its transforms against im2col +
 * gemm (docs/engines.md, "Winograd convolutions"): with AVX-512 maps up to 64 a side, at most 256 x
 * 256 channels and filters (else up to 16 a side, 128 x 128), of winograd_worth's shapes. */
int winograd_grad_worth(int c, int k, int h, int w);

/* The 2x2 output tiles of a pass of batch images on h x w maps. */
long winograd_tiles(int batch, int h, int w);

/* [net] winograd_min_tiles' default: a training net whose mini-batch has fewer tiles in a layer
 * trains it on im2col + gemm instead, as its weights are transformed again every step (an update
 * changes them) and a few tiles do not pay for that (docs/engines.md, "Winograd convolutions");
 * inference keeps the transformed weights and takes Winograd at any batch. At 1 and 2 threads a 3x3
 * layer of 256 channels on 14x14 maps broke even at 196-392 tiles (batch 4-8), one of 512 on 7x7
 * between 128 and 256 (batch 8-16); at batch 1 Winograd took twice im2col's time. resnet18_cifar's
 * 4x4 maps at batch 64 and the 224 nets' 7x7 ones at batch 16 have 256. */
#define WINOGRAD_TRAINING_TILES 256

/* Floats of scratch winograd_weight_grads needs: per thread, its sums and a chunk's transforms. */
size_t winograd_grad_scratch_floats(const WinogradPlan *p);

/* dw [k][c][3][3] += the gradient of y = conv(x, w) for y's gradient delta [batch][k][h][w]:
 * the transformed windows of x times the transformed tiles of delta, summed over each thread's
 * range of tiles (gemms over the tiles of a chunk), the threads' sums added in thread order and
 * transformed back. */
void winograd_weight_grads(const WinogradPlan *p, const float *x, const float *delta, float *dw,
                           float *scratch);

#endif
