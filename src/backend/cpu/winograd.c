/* Winograd convolution F(2x2, 3x3) (backend/cpu/winograd.h): the weight, input and output
 * transforms and the chunked products, and the weight gradient's transforms and products. */
#include "backend/cpu/winograd.h"

#include <omp.h>
#include <string.h>

#include "backend/cpu/activation.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/lanes16.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define WINO_AVX2 1
#if defined(__AVX512F__)
#define WINO_AVX512 1
#endif
#endif

/* Transformed values of one 4x4 input window or one filter. */
#define WINO_E 16

/* Maps at most this wide take the fused path (winograd.h). */
#define WINO_FUSED_W 16

/* The floats of a chunk and the range the chunk is kept in. Apart: V and M near the L2 cache
 * (the products over fewer columns run slowly). Fused: V, which every block of filters reads,
 * in the L2 cache, in multiples of a product block's columns (8 * WINO_VECS). */
#define WINO_CHUNK_FLOATS (256 * 1024)
#define WINO_CHUNK_MIN 64
#define WINO_CHUNK_MAX 128
#define WINO_FUSED_FLOATS (64 * 1024)
#ifdef WINO_AVX512
#define WINO_FUSED_MIN 48
#define WINO_FUSED_MAX 144
#else
#define WINO_FUSED_MIN 24
#define WINO_FUSED_MAX 120
#endif

/* Channels and filters from which every map takes the products apart in chunks of
 * WINO_CHUNK_MAX tiles: with AVX-512 the fused chunk's V at 512 channels (48 tiles: 1.5 MiB)
 * spilled out of the L2 cache, which V[e] of the apart path (256 KiB) does not; 512x512 on 4x4
 * maps 1.15x, on 7x7 1.24x faster (256x256 ran slower apart). */
#ifdef WINO_AVX512
#define WINO_WIDE 512
#else
#define WINO_WIDE (1 << 30)
#endif

/* Threads split the filters (WinogradPlan.parts) when the busiest thread's chunks would hold
 * over NUM / DEN of its share of the tiles. */
#define WINO_SPLIT_NUM 11
#define WINO_SPLIT_DEN 10

/* Tiles transformed side by side: a run of up to this many tiles of one tile row. */
#define WINO_LANES 8

/* Filters per block of the packed weights: the rows of one product kernel call. */
#define WINO_ROWS 4

/* Columns (tiles) of a product kernel call: up to this many vectors of 8 (AVX-512: in pairs,
 * one vector of 16 each, an odd one as a vector of 8). */
#ifdef WINO_AVX512
#define WINO_VECS 6
#else
#define WINO_VECS 3
#endif

/* Floats between the 16 matrices of V past their rows * n: streams 16 apart by a power of two
 * would share L1 cache sets. */
#define WINO_SKEW 16

/* The row stride of V's and M's matrices for a chunk of n tiles: room past n for a run's last
 * lanes, which are always transformed and stored whole (those past the run are junk that the
 * next run overwrites, or fall in the room; the products read them up to n rounded up to 8, and
 * their sums are dropped). */
static int chunk_ld(int n)
{
    return (n + 2 * WINO_LANES - 1) / WINO_LANES * WINO_LANES;
}

/* The distance of V's (rows c) or M's (rows k rounded up to WINO_ROWS) matrices for a chunk of
 * n tiles. */
static size_t matrix_stride(int rows, int n)
{
    return (size_t)rows * chunk_ld(n) + WINO_SKEW;
}

/* Floats of one padded output row of a run (up to a whole tile row of w/2 tiles rounded up to
 * lanes): its 2 * tiles columns. */
static size_t run_row_floats(int w)
{
    const int tiles = (w + 1) / 2;
    return 2 * (size_t)((tiles + WINO_LANES - 1) / WINO_LANES * WINO_LANES);
}

static size_t rows_padded(int k)
{
    return (size_t)(k + WINO_ROWS - 1) / WINO_ROWS * WINO_ROWS;
}

WinogradPlan winograd_plan(int batch, int c, int k, int h, int w, int threads)
{
    const int wide = c >= WINO_WIDE && k >= WINO_WIDE;
    WinogradPlan p = {
        batch, c, k, h, w, 0, 0, threads < 1 ? 1 : threads, w <= WINO_FUSED_W && !wide, 1};
    p.tiles = batch * ((h + 1) / 2) * ((w + 1) / 2);
    const int blk = 8 * WINO_VECS, big = c > k ? c : k;
    int chunk = p.fused ? WINO_FUSED_FLOATS / (WINO_E * big) / blk * blk
                        : WINO_CHUNK_FLOATS / (WINO_E * (c + k));
    const int lo = p.fused ? WINO_FUSED_MIN
                   : wide  ? WINO_CHUNK_MAX
                           : WINO_CHUNK_MIN,
              hi = p.fused ? WINO_FUSED_MAX : WINO_CHUNK_MAX;
    chunk = chunk < lo ? lo : chunk > hi ? hi : chunk;
    const int per_thread = (p.tiles + p.threads - 1) / p.threads;
    p.chunk = chunk < per_thread ? chunk : per_thread;
    /* Few chunks a thread (a thread's share under a chunk, or its last chunk a large part of
     * its share): every thread takes its part of the filters over all the chunks instead. */
    const int chunks = (p.tiles + p.chunk - 1) / p.chunk;
    const long most = (long)(chunks + p.threads - 1) / p.threads * p.chunk * p.threads;
    if (p.threads > 1 &&
        (p.chunk < chunk || most * WINO_SPLIT_DEN > (long)p.tiles * WINO_SPLIT_NUM)) {
        const int blocks = (int)rows_padded(k) / WINO_ROWS;
        p.parts = p.threads < blocks ? p.threads : blocks;
        p.chunk = chunk < p.tiles ? chunk : p.tiles;
    }
    return p;
}

int winograd_worth(int c, int k, int h, int w)
{
    return c >= 16 && k >= 16 && h >= 4 && w >= 4;
}

size_t winograd_weights_floats(int k, int c)
{
    return (size_t)WINO_E * rows_padded(k) * rows_padded(c);
}

/* The row stride of a plane's padded copy (columns -1 .. 2 * tiles + 14: a run's 8 lanes read 18
 * columns from their first window on) and its floats (rows -1 .. h + 1); none with AVX-512, whose
 * windows come from the plane itself. */
static size_t padded_ld(int w)
{
    return 2 * (size_t)((w + 1) / 2) + 16;
}

static size_t padded_floats(int h, int w)
{
#ifdef WINO_AVX512
    (void)h;
    (void)w;
    return 0;
#else
    return (size_t)(h + 3) * padded_ld(w);
#endif
}

/* Floats of one thread's scratch: V of a chunk, M apart, the padded output rows of a run, then a
 * plane's padded copy; V and M with room for the larger of c and k, so that the swapped plan
 * fits. */
static size_t thread_floats(const WinogradPlan *p)
{
    const int big = (int)rows_padded(p->c > p->k ? p->c : p->k);
    return WINO_E * matrix_stride(big, p->chunk) * (p->fused ? 1 : 2) + 2 * run_row_floats(p->w) +
           padded_floats(p->h, p->w);
}

size_t winograd_scratch_floats(const WinogradPlan *p)
{
    return (size_t)p->threads * thread_floats(p);
}

void winograd_weights(const float *w, int k, int c, float *u)
{
    const size_t kc = rows_padded(k) * c, blocks = rows_padded(k) / WINO_ROWS * c;
    static const float zero[9];
    /* i: a block of WINO_ROWS filters and a channel, whose 16 x WINO_ROWS values lie side by
     * side in each of the 16 matrices (written in order, not WINO_ROWS floats apart) */
#pragma omp parallel for schedule(static) if (kc >= 16384)
    for (size_t i = 0; i < blocks; i++) {
        const int f0 = (int)(i / c) * WINO_ROWS, ch = (int)(i % c);
        float o[WINO_E][WINO_ROWS];
        for (int q = 0; q < WINO_ROWS; q++) {
            const int f = f0 + q;
            const float *g = f < k ? w + ((size_t)f * c + ch) * 9 : zero;
            float t[4][3]; /* G g: G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1] */
            for (int j = 0; j < 3; j++) {
                t[0][j] = g[j];
                t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
                t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
                t[3][j] = g[6 + j];
            }
            for (int r = 0; r < 4; r++) { /* (G g) G^T */
                o[4 * r + 0][q] = t[r][0];
                o[4 * r + 1][q] = 0.5f * (t[r][0] + t[r][1] + t[r][2]);
                o[4 * r + 2][q] = 0.5f * (t[r][0] - t[r][1] + t[r][2]);
                o[4 * r + 3][q] = t[r][2];
            }
        }
        /* u[e][f / ROWS][ch][f % ROWS] */
        for (int e = 0; e < WINO_E; e++)
            memcpy(u + e * kc + i * WINO_ROWS, o[e], sizeof o[e]);
    }
}

/* The tile at (ty, tx) of each plane: its chunk-local indices run along a row of tiles. */
typedef struct TileRun {
    int b, ty, tx, len; /* image, tile row, first tile column, tiles */
} TileRun;

/* The run of tiles starting at the batch-wide tile index t, at most left long. */
static TileRun tile_run(const WinogradPlan *p, int t, int left)
{
    const int tw = (p->w + 1) / 2, per_image = ((p->h + 1) / 2) * tw;
    TileRun r = {t / per_image, t % per_image / tw, t % per_image % tw, 0};
    r.len = tw - r.tx < left ? tw - r.tx : left;
    return r;
}

/* v[e * stride + i] (i < 4) and v[e * stride + half + i - 4] (i >= 4) = (B^T d_i B)[e] for the
 * lanes i of the windows d_i, d_i[a][b] = rows[a * ld + b * step + i * lane + (i < 4 ? 0 : jump)],
 * B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]; step, lane, jump and half are constants at each
 * call. */
static inline __attribute__((always_inline)) void window_tiles(const float *rows, size_t ld,
                                                               int step, int lane, int jump,
                                                               float *v, size_t stride, size_t half)
{
    float t[4][4][WINO_LANES], o[16][WINO_LANES];
    for (int b = 0; b < 4; b++) {
        const float *r0 = rows + b * step, *r1 = r0 + ld, *r2 = r1 + ld, *r3 = r2 + ld;
#pragma omp simd
        for (int i = 0; i < WINO_LANES; i++) {
            const int at = lane * i + (i < 4 ? 0 : jump);
            t[0][b][i] = r0[at] - r2[at];
            t[1][b][i] = r1[at] + r2[at];
            t[2][b][i] = r2[at] - r1[at];
            t[3][b][i] = r1[at] - r3[at];
        }
    }
    for (int a = 0; a < 4; a++)
#pragma omp simd
        for (int i = 0; i < WINO_LANES; i++) {
            o[4 * a + 0][i] = t[a][0][i] - t[a][2][i];
            o[4 * a + 1][i] = t[a][1][i] + t[a][2][i];
            o[4 * a + 2][i] = t[a][2][i] - t[a][1][i];
            o[4 * a + 3][i] = t[a][1][i] - t[a][3][i];
        }
    for (int e = 0; e < 16; e++)
#pragma omp simd
        for (int i = 0; i < WINO_LANES; i++)
            v[e * stride + (i < 4 ? (size_t)i : half + i - 4)] = o[e][i];
}

#ifdef WINO_AVX2
/* v[e * stride] = (B^T d_i B)[e] for the 8 lanes i of the windows d_i[a][b] = d[a][b] lane i:
 * B^T d down the rows first, then (B^T d) B along them (window_tiles' order, so the same
 * floats). */
static inline __attribute__((always_inline)) void window_vectors(__m256 d[4][4], float *v,
                                                                 size_t stride)
{
    __m256 t[4][4];
    for (int b = 0; b < 4; b++) {
        t[0][b] = _mm256_sub_ps(d[0][b], d[2][b]);
        t[1][b] = _mm256_add_ps(d[1][b], d[2][b]);
        t[2][b] = _mm256_sub_ps(d[2][b], d[1][b]);
        t[3][b] = _mm256_sub_ps(d[1][b], d[3][b]);
    }
    for (int a = 0; a < 4; a++) {
        _mm256_storeu_ps(v + (size_t)(4 * a) * stride, _mm256_sub_ps(t[a][0], t[a][2]));
        _mm256_storeu_ps(v + (size_t)(4 * a + 1) * stride, _mm256_add_ps(t[a][1], t[a][2]));
        _mm256_storeu_ps(v + (size_t)(4 * a + 2) * stride, _mm256_sub_ps(t[a][2], t[a][1]));
        _mm256_storeu_ps(v + (size_t)(4 * a + 3) * stride, _mm256_sub_ps(t[a][1], t[a][3]));
    }
}
#endif

#ifdef WINO_AVX512
/* Floats plane[yy][x .. x + n) (x >= -1, n <= 16) in lanes 0 .. n-1, 0 off the map: a load
 * masked to the columns on the map, shifted up a lane past the left padding column (so that no
 * address before the row is formed). */
static inline __m512 window_row(const float *plane, int h, int w, int yy, int x, int n)
{
    const int lead = x < 0, on = (w - x < n ? w - x : n) - lead;
    if (yy < 0 || yy >= h || on <= 0)
        return _mm512_setzero_ps();
    const __m512 v =
        _mm512_maskz_loadu_ps((__mmask16)((1u << on) - 1), plane + (size_t)yy * w + x + lead);
    return lead ? _mm512_castsi512_ps(
                      _mm512_alignr_epi32(_mm512_castps_si512(v), _mm512_setzero_si512(), 15))
                : v;
}

/* The transformed windows of 8 lanes of one channel's plane [h][w] into v (stride apart): lane
 * i's window at rows y0.., column x0 + 2i, or with pair (maps of 4 tiles a row, x0 -1) lanes
 * 4..7 those of the next tile row, at rows y0 + 2.. and column x0 + 2(i - 4). Straight from the
 * plane into registers, with no padded plane stored and loaded back (padded and ldp unused: the
 * other vector widths' copy of the plane). */
static inline __attribute__((always_inline)) void input_windows(const float *plane, int h, int w,
                                                                const float *padded, size_t ldp,
                                                                int y0, int x0, int pair, float *v,
                                                                size_t stride)
{
    (void)padded;
    (void)ldp;
    /* lane i of column k of the windows: lane k + 2i of a row (0..15), or of the second vector
     * (16..): the run's columns 16 and 17, or the next tile row's */
    static const int at[2][4][16] = {
        {{0, 2, 4, 6, 8, 10, 12, 14},
         {1, 3, 5, 7, 9, 11, 13, 15},
         {2, 4, 6, 8, 10, 12, 14, 16},
         {3, 5, 7, 9, 11, 13, 15, 17}},
        {{0, 2, 4, 6, 16, 18, 20, 22},
         {1, 3, 5, 7, 17, 19, 21, 23},
         {2, 4, 6, 8, 18, 20, 22, 24},
         {3, 5, 7, 9, 19, 21, 23, 25}},
    };
    __m256 d[4][4];
    for (int j = 0; j < 4; j++) {
        const __m512 lo = window_row(plane, h, w, y0 + j, x0, pair ? 10 : 16),
                     hi = pair ? window_row(plane, h, w, y0 + 2 + j, x0, 10)
                               : window_row(plane, h, w, y0 + j, x0 + 16, 2);
        for (int k = 0; k < 4; k++)
            d[j][k] = _mm512_castps512_ps256(
                _mm512_permutex2var_ps(lo, _mm512_loadu_si512((const void *)at[pair][k]), hi));
    }
    window_vectors(d, v, stride);
}
#else
#ifdef WINO_AVX2
/* The even (odd 0) or odd (odd 1) ones of the 8 floats from r on and of the 8 from r + second
 * on: r[2i + odd] for i < 4, then r[second + 2(i - 4) + odd]. */
static inline __m256 row_lanes(const float *r, size_t second, int odd)
{
    const __m256 a = _mm256_loadu_ps(r), b = _mm256_loadu_ps(r + second);
    const __m256 s = odd ? _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))
                         : _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    /* s: r[0 2 8 10 4 6 12 14] (+ odd) */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}
#endif

/* As the AVX-512 input_windows, from the plane's padded copy (padded: row y, column x of
 * the plane at (y + 1) * ldp + x + 1): the run's lanes 4..7 8 columns on, or with pair 2 rows
 * down (plane, h and w unused). */
static inline __attribute__((always_inline)) void input_windows(const float *plane, int h, int w,
                                                                const float *padded, size_t ldp,
                                                                int y0, int x0, int pair, float *v,
                                                                size_t stride)
{
    (void)plane;
    (void)h;
    (void)w;
    const float *rows = padded + (size_t)(y0 + 1) * ldp + (size_t)(x0 + 1);
    const size_t second = pair ? 2 * ldp : WINO_LANES;
#ifdef WINO_AVX2
    __m256 d[4][4];
    for (int j = 0; j < 4; j++) {
        const float *r = rows + j * ldp;
        d[j][0] = row_lanes(r, second, 0);
        d[j][1] = row_lanes(r, second, 1);
        d[j][2] = row_lanes(r + 2, second, 0);
        d[j][3] = row_lanes(r + 2, second, 1);
    }
    window_vectors(d, v, stride);
#else
    window_tiles(rows, ldp, 1, 2, (int)second - WINO_LANES, v, stride, 4);
#endif
}
#endif

/* Zeroes what of a padded copy [h + 3][ldp] lies off the plane [h][w]: the row above, the two
 * below and each row's columns left and right of the map. */
static void zero_border(int h, int w, size_t ldp, float *padded)
{
    memset(padded, 0, ldp * sizeof *padded);
    memset(padded + (size_t)(h + 1) * ldp, 0, 2 * ldp * sizeof *padded);
    for (int y = 1; y <= h; y++) {
        float *row = padded + (size_t)y * ldp;
        row[0] = 0.0f;
        memset(row + w + 1, 0, (ldp - (size_t)w - 1) * sizeof *row);
    }
}

/* Rows y_first .. y_last of the plane [h][w] (those on the map) into its padded copy; a row's
 * few floats by a vector loop, not a call to memcpy (which took half the copies' time). */
static void copy_rows(const float *plane, int h, int w, int y_first, int y_last, size_t ldp,
                      float *padded)
{
    for (int y = y_first < 0 ? 0 : y_first; y <= y_last && y < h; y++) {
        float *restrict dst = padded + (size_t)(y + 1) * ldp + 1;
        const float *restrict src = plane + (size_t)y * w;
#pragma omp simd
        for (int j = 0; j < w; j++)
            dst[j] = src[j];
    }
}

/* v [16][c][n]: the transformed windows of the chunk's n tiles from t0 on, 8 lanes at a time;
 * padded: the room of a plane's padded copy (padded_floats), through which the windows go where
 * they are not loaded from the plane itself (AVX-512). On maps of 4 tiles a row (7 or 8 wide)
 * two whole tile rows of an image go through one transform, half of the lanes each (a run alone
 * would leave half of them idle). Channel by channel, each plane's runs in order, so that the
 * planes are read front to back (run by run over the channels, the transforms spent more of their
 * time waiting on loads); an image's padded copy takes the rows its runs in the chunk read, once
 * (copied per run of 8 lanes, the rows cost a fifth of fashion's step at 1 thread). */
static void input_transform(const WinogradPlan *p, const float *x, int t0, int n, float *v,
                            float *padded)
{
    const size_t hw = (size_t)p->h * p->w, stride = matrix_stride(p->c, n), ldp = padded_ld(p->w);
    const int tw = (p->w + 1) / 2, th = (p->h + 1) / 2;
    TileRun run[WINO_CHUNK_MAX > WINO_FUSED_MAX ? WINO_CHUNK_MAX : WINO_FUSED_MAX];
    int pair[sizeof run / sizeof *run], first[sizeof run / sizeof *run], runs = 0;
    for (int t = 0; t < n; runs++) {
        run[runs] = tile_run(p, t0 + t, n - t);
        const TileRun *r = &run[runs];
        pair[runs] = 2 * tw == WINO_LANES && r->tx == 0 && r->ty + 1 < th && n - t >= 2 * tw;
        first[runs] = t;
        t += pair[runs] ? 2 * tw : r->len;
    }
    /* the last row each image's runs in the chunk read: 2 ty + 2 of its last run (of the next
     * tile row's with pair), kept at the image's first run */
    int y_last[sizeof run / sizeof *run];
    for (int q = runs - 1; q >= 0; q--)
        y_last[q] = q + 1 < runs && run[q + 1].b == run[q].b ? y_last[q + 1]
                                                             : 2 * (run[q].ty + pair[q]) + 2;
    if (padded)
        zero_border(p->h, p->w, ldp, padded);
    for (int ch = 0; ch < p->c; ch++)
        for (int q = 0; q < runs; q++) {
            const TileRun *r = &run[q];
            const float *plane = x + ((size_t)r->b * p->c + ch) * hw;
            if (padded && (q == 0 || r->b != run[q - 1].b))
                copy_rows(plane, p->h, p->w, 2 * r->ty - 1, y_last[q], ldp, padded);
            float *vc = v + (size_t)ch * chunk_ld(n) + first[q];
            for (int i = 0; i < r->len; i += WINO_LANES)
                input_windows(plane, p->h, p->w, padded, ldp, 2 * r->ty - 1, 2 * (r->tx + i) - 1,
                              pair[q], vc + i, stride);
        }
}

#ifdef WINO_AVX512
/* m[r][8j..8j+8) (add 0) or m[r][8j..8j+8) + (add 1) for the rows r < 4 * blocks of one or
 * two blocks and the vectors j < vecs: the sums over the c channels of up[ch][r] * v[ch][8j..]
 * (rows 4..7 from up + next); blocks, vecs and add are constants at each call, so the
 * accumulators (up to 8 rows x 3 vectors of 16) stay in the 32 registers. */
static inline __attribute__((always_inline)) void product_block(int blocks, int vecs, int add,
                                                                int c, const float *up, size_t next,
                                                                const float *v, size_t ldv,
                                                                float *m, size_t ldm)
{
    enum { Z = WINO_VECS / 2, R = 2 * WINO_ROWS };
    const int nz = vecs / 2, tail = vecs % 2, rows = blocks * WINO_ROWS;
    __m512 acc[R][Z];
    __m256 acc8[R];
    for (int r = 0; r < rows; r++) {
        for (int j = 0; j < nz; j++)
            acc[r][j] = _mm512_setzero_ps();
        acc8[r] = _mm256_setzero_ps();
    }
    for (int ch = 0; ch < c; ch++) {
        __m512 b[Z];
        __m256 b8 = _mm256_setzero_ps();
        for (int j = 0; j < nz; j++) {
            b[j] = _mm512_loadu_ps(v + (size_t)ch * ldv + 16 * j);
            __asm__("" : "+v"(b[j])); /* one load, kept in a register, not one per row */
        }
        if (tail) {
            b8 = _mm256_loadu_ps(v + (size_t)ch * ldv + 16 * nz);
            __asm__("" : "+v"(b8));
        }
        for (int r = 0; r < rows; r++) {
            const __m512 a = _mm512_set1_ps(
                up[(r < WINO_ROWS ? 0 : next) + (size_t)ch * WINO_ROWS + r % WINO_ROWS]);
            for (int j = 0; j < nz; j++)
                acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
            if (tail)
                acc8[r] = _mm256_fmadd_ps(_mm512_castps512_ps256(a), b8, acc8[r]);
        }
    }
    for (int r = 0; r < rows; r++) {
        float *o = m + (size_t)r * ldm;
        for (int j = 0; j < nz; j++)
            _mm512_storeu_ps(o + 16 * j, add ? _mm512_add_ps(_mm512_loadu_ps(o + 16 * j), acc[r][j])
                                             : acc[r][j]);
        if (tail)
            _mm256_storeu_ps(o + 16 * nz,
                             add ? _mm256_add_ps(_mm256_loadu_ps(o + 16 * nz), acc8[r]) : acc8[r]);
    }
}
#elif defined(WINO_AVX2)
/* m[r][8j..8j+8) (add 0) or m[r][8j..8j+8) + (add 1) for the rows r of one block (blocks 1; 2
 * is taken as two calls, the second's rows from up + next) and the vectors j < vecs: the sums
 * over the c channels of up[ch][r] * v[ch][8j..]; vecs and add are constants at each call, so
 * the accumulators stay in registers. */
static inline __attribute__((always_inline)) void product_rows(int vecs, int add, int c,
                                                               const float *up, const float *v,
                                                               size_t ldv, float *m, size_t ldm)
{
    __m256 acc[WINO_ROWS][WINO_VECS];
    for (int r = 0; r < WINO_ROWS; r++)
        for (int j = 0; j < vecs; j++)
            acc[r][j] = _mm256_setzero_ps();
    for (int ch = 0; ch < c; ch++) {
        __m256 b[WINO_VECS];
        for (int j = 0; j < vecs; j++) {
            b[j] = _mm256_loadu_ps(v + (size_t)ch * ldv + 8 * j);
            __asm__("" : "+x"(b[j])); /* one load, kept in a register, not one per row */
        }
        for (int r = 0; r < WINO_ROWS; r++) {
            const __m256 a = _mm256_broadcast_ss(up + (size_t)ch * WINO_ROWS + r);
            for (int j = 0; j < vecs; j++)
                acc[r][j] = _mm256_fmadd_ps(a, b[j], acc[r][j]);
        }
    }
    for (int r = 0; r < WINO_ROWS; r++)
        for (int j = 0; j < vecs; j++) {
            float *o = m + (size_t)r * ldm + 8 * j;
            _mm256_storeu_ps(o, add ? _mm256_add_ps(_mm256_loadu_ps(o), acc[r][j]) : acc[r][j]);
        }
}

static inline __attribute__((always_inline)) void product_block(int blocks, int vecs, int add,
                                                                int c, const float *up, size_t next,
                                                                const float *v, size_t ldv,
                                                                float *m, size_t ldm)
{
    for (int q = 0; q < blocks; q++)
        product_rows(vecs, add, c, up + q * next, v, ldv, m + (size_t)q * WINO_ROWS * ldm, ldm);
}
#else
static inline void product_block(int blocks, int vecs, int add, int c, const float *up, size_t next,
                                 const float *v, size_t ldv, float *m, size_t ldm)
{
    for (int q = 0; q < blocks; q++) {
        const float *uq = up + q * next;
        float *mq = m + (size_t)q * WINO_ROWS * ldm;
        float acc[WINO_ROWS][8 * WINO_VECS] = {{0}};
        for (int ch = 0; ch < c; ch++)
            for (int r = 0; r < WINO_ROWS; r++)
                for (int j = 0; j < 8 * vecs; j++)
                    acc[r][j] += uq[(size_t)ch * WINO_ROWS + r] * v[(size_t)ch * ldv + j];
        for (int r = 0; r < WINO_ROWS; r++)
            for (int j = 0; j < 8 * vecs; j++)
                mq[(size_t)r * ldm + j] = add ? mq[(size_t)r * ldm + j] + acc[r][j] : acc[r][j];
    }
}
#endif

/* product_block for blocks (1 or 2), vecs (1..WINO_VECS) and add not known at the call: the
 * kernel for each, so that its loops unroll. */
static void product_any(int blocks, int vecs, int add, int c, const float *up, size_t next,
                        const float *v, size_t ldv, float *m, size_t ldm)
{
#define WINO_CASE(B, N)                                                                            \
    case 16 * (B) + (N):                                                                           \
        if (add)                                                                                   \
            product_block(B, N, 1, c, up, next, v, ldv, m, ldm);                                   \
        else                                                                                       \
            product_block(B, N, 0, c, up, next, v, ldv, m, ldm);                                   \
        break;
    switch (16 * blocks + vecs) {
        WINO_CASE(1, 1)
        WINO_CASE(1, 2)
        WINO_CASE(1, 3)
        WINO_CASE(2, 1)
        WINO_CASE(2, 2)
        WINO_CASE(2, 3)
#if WINO_VECS > 3
        WINO_CASE(1, 4)
        WINO_CASE(1, 5)
        WINO_CASE(1, 6)
        WINO_CASE(2, 4)
        WINO_CASE(2, 5)
        WINO_CASE(2, 6)
#endif
    default:
        break;
    }
#undef WINO_CASE
}

int winograd_fuses_activation(ActivationKind act)
{
    return act == CDL_ACT_LINEAR || act == CDL_ACT_RELU || act == CDL_ACT_LEAKY ||
           act == CDL_ACT_RELU6;
}

#ifdef WINO_AVX512
/* act of each lane, as activate8 below. */
static inline __m512 activate16(__m512 v, ActivationKind act)
{
    const __m512 zero = _mm512_setzero_ps();
    switch (act) {
    case CDL_ACT_RELU:
        return _mm512_max_ps(zero, v);
    case CDL_ACT_LEAKY:
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ),
                                    _mm512_mul_ps(_mm512_set1_ps(0.1f), v), v);
    case CDL_ACT_RELU6:
        return _mm512_min_ps(_mm512_set1_ps(6.0f), _mm512_max_ps(zero, v));
    default:
        return v;
    }
}

/* to[0..n) = act(from + *bias + add) (WinogradOutput; bias, add NULL: none; add may be to): a
 * masked vector of 16 at a time. */
static inline __attribute__((always_inline)) void finish_row(const float *bias, const float *add,
                                                             ActivationKind act, int n,
                                                             const float *from, float *to)
{
    for (int b = 0; b < n; b += 16) {
        const __mmask16 lanes = lanes16(n - b);
        __m512 v = _mm512_maskz_loadu_ps(lanes, from + b);
        if (bias)
            v = _mm512_add_ps(v, _mm512_set1_ps(*bias));
        if (add)
            v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes, add + b));
        _mm512_mask_storeu_ps(to + b, lanes, activate16(v, act));
    }
}
#elif defined(WINO_AVX2)
/* act of each lane, as activation_forward computes it: vmaxps(0, v) is v < 0 ? 0 : v (NaN and -0
 * kept, its second operand passed), vminps(6, v) is v > 6 ? 6 : v. */
static inline __m256 activate8(__m256 v, ActivationKind act)
{
    const __m256 zero = _mm256_setzero_ps();
    switch (act) {
    case CDL_ACT_RELU:
        return _mm256_max_ps(zero, v);
    case CDL_ACT_LEAKY:
        return _mm256_blendv_ps(_mm256_mul_ps(_mm256_set1_ps(0.1f), v), v,
                                _mm256_cmp_ps(v, zero, _CMP_GT_OQ));
    case CDL_ACT_RELU6:
        return _mm256_min_ps(_mm256_set1_ps(6.0f), _mm256_max_ps(zero, v));
    default:
        return v;
    }
}

/* to[0..n) = act(from + *bias + add) (WinogradOutput; bias, add NULL: none; add may be to):
 * whole vectors, then the rest by store_first8; no loop gcc would make a call to memcpy of (it
 * did of a plain copy loop, 5% of fashion's step at 1 thread). */
static inline __attribute__((always_inline)) void finish_row(const float *bias, const float *add,
                                                             ActivationKind act, int n,
                                                             const float *from, float *to)
{
    int b = 0;
    for (; b + 8 <= n; b += 8) {
        __m256 v = _mm256_loadu_ps(from + b);
        if (bias)
            v = _mm256_add_ps(v, _mm256_broadcast_ss(bias));
        if (add)
            v = _mm256_add_ps(v, _mm256_loadu_ps(add + b));
        _mm256_storeu_ps(to + b, activate8(v, act));
    }
    if (b < n) {
        const __m256i rest = lanes8(n - b);
        __m256 v = _mm256_maskload_ps(from + b, rest);
        if (bias)
            v = _mm256_add_ps(v, _mm256_broadcast_ss(bias));
        if (add)
            v = _mm256_add_ps(v, _mm256_maskload_ps(add + b, rest));
        store_first8(to + b, activate8(v, act), n - b);
    }
}
#else
/* The same by plain loops, the activation by activation_forward on the row written. */
static void finish_row(const float *bias, const float *add, ActivationKind act, int n,
                       const float *from, float *to)
{
    const float b = bias ? *bias : 0.0f;
    for (int j = 0; j < n; j++) {
        const float v = bias ? from[j] + b : from[j];
        to[j] = add ? v + add[j] : v;
    }
    if (act != CDL_ACT_LINEAR)
        activation_forward(to, to, (size_t)n, act);
}
#endif

/* rows[a][2i + b] = (A^T m_i A)[a][b] of m_i[e] = m[e * stride + i] for the lanes i,
 * A^T = [1 1 1 0; 0 1 -1 -1]. */
#ifdef WINO_AVX2
static void output_tiles(const float *m, size_t stride, float *rows, size_t ld)
{
    __m256 s[2][4];
    for (int b = 0; b < 4; b++) {
        const __m256 e0 = _mm256_loadu_ps(m + (size_t)b * stride),
                     e1 = _mm256_loadu_ps(m + (size_t)(4 + b) * stride),
                     e2 = _mm256_loadu_ps(m + (size_t)(8 + b) * stride),
                     e3 = _mm256_loadu_ps(m + (size_t)(12 + b) * stride);
        s[0][b] = _mm256_add_ps(_mm256_add_ps(e0, e1), e2);
        s[1][b] = _mm256_sub_ps(_mm256_sub_ps(e1, e2), e3);
    }
    for (int a = 0; a < 2; a++) {
        const __m256 even = _mm256_add_ps(_mm256_add_ps(s[a][0], s[a][1]), s[a][2]),
                     odd = _mm256_sub_ps(_mm256_sub_ps(s[a][1], s[a][2]), s[a][3]);
        /* lo: lanes 0 1 | 4 5 of even and odd in turn, hi: 2 3 | 6 7 */
        const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);
        _mm256_storeu_ps(rows + a * ld, _mm256_permute2f128_ps(lo, hi, 0x20));
        _mm256_storeu_ps(rows + a * ld + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    }
}
#else
static void output_tiles(const float *m, size_t stride, float *rows, size_t ld)
{
    float e[16][WINO_LANES], s[2][4][WINO_LANES];
    for (int k = 0; k < 16; k++)
#pragma omp simd
        for (int i = 0; i < WINO_LANES; i++)
            e[k][i] = m[k * stride + i];
    for (int b = 0; b < 4; b++)
#pragma omp simd
        for (int i = 0; i < WINO_LANES; i++) {
            s[0][b][i] = e[b][i] + e[4 + b][i] + e[8 + b][i];
            s[1][b][i] = e[4 + b][i] - e[8 + b][i] - e[12 + b][i];
        }
    for (int a = 0; a < 2; a++) {
        float *row = rows + a * ld;
#pragma omp simd
        for (int i = 0; i < WINO_LANES; i++) {
            row[2 * i] = s[a][0][i] + s[a][1][i] + s[a][2][i];
            row[2 * i + 1] = s[a][1][i] - s[a][2][i] - s[a][3][i];
        }
    }
}
#endif

/* y's 2x2 tiles of the chunk's filters f0..f1 (as out says: winograd_conv) from m [16][k][ld],
 * through the padded output rows of a run (2 * run_row_floats), dropping what lies past the map. */
static void output_transform(const WinogradPlan *p, const float *m, int t0, int n, int f0, int f1,
                             float *y, const WinogradOutput *out, float *rows)
{
    const size_t hw = (size_t)p->h * p->w, stride = matrix_stride((int)rows_padded(p->k), n),
                 ld = run_row_floats(p->w);
    for (int t = 0; t < n;) {
        const TileRun r = tile_run(p, t0 + t, n - t);
        const int y0 = 2 * r.ty, x0 = 2 * r.tx;
        const int n_rows = y0 + 1 < p->h ? 2 : 1;
        const int cols = p->w - x0 < 2 * r.len ? p->w - x0 : 2 * r.len;
        for (int f = f0; f < f1; f++) {
            for (int i = 0; i < r.len; i += WINO_LANES)
                output_tiles(m + (size_t)f * chunk_ld(n) + t + i, stride, rows + 2 * i, ld);
            const size_t at = ((size_t)r.b * p->k + f) * hw + (size_t)y0 * p->w + x0;
            for (int a = 0; a < n_rows; a++) {
                const size_t row = at + (size_t)a * p->w;
                finish_row(out && out->bias ? out->bias + f : NULL,
                           out && out->add ? out->add + row : NULL, out ? out->act : CDL_ACT_LINEAR,
                           cols, rows + a * ld, y + row);
            }
        }
        t += r.len;
    }
}

/* m [k][ldm] = U[e] v for one e, the rows f0..f1 (f0 a multiple of WINO_ROWS): up the packed
 * weights [k / ROWS][c][ROWS], v [c][ldv] the transformed windows of n tiles (columns up to n
 * rounded up to 8); m has rows k rounded up to WINO_ROWS. Two blocks of filters a call. */
static void product(int f0, int f1, int c, int n, const float *up, const float *v, size_t ldv,
                    float *m, size_t ldm)
{
    const int vecs = (n + 7) / 8;
    for (int f = f0; f < f1; f += 2 * WINO_ROWS) {
        const int blocks = f1 - f > WINO_ROWS ? 2 : 1;
        const float *uf = up + (size_t)f * c;
        float *mf = m + (size_t)f * ldm;
        for (int j = 0; j < vecs; j += WINO_VECS)
            product_any(blocks, vecs - j < WINO_VECS ? vecs - j : WINO_VECS, 0, c, uf,
                        (size_t)WINO_ROWS * c, v + 8 * j, ldv, mf + 8 * j, ldm);
    }
}

/* y's filters f0..f1 from v through M apart: the 16 products of the whole chunk, then the
 * output transform of each tile row's run; m the room for M, rows for a run's output rows. */
static void product_apart(const WinogradPlan *p, const float *u, const float *v, int t0, int n,
                          int f0, int f1, float *y, const WinogradOutput *out, float *m,
                          float *rows)
{
    const size_t kc = rows_padded(p->k) * p->c, vs = matrix_stride(p->c, n),
                 ms = matrix_stride((int)rows_padded(p->k), n);
    for (int e = 0; e < WINO_E; e++)
        product(f0, f1, p->c, n, u + e * kc, v + e * vs, chunk_ld(n), m + e * ms, chunk_ld(n));
    output_transform(p, m, t0, n, f0, f1, y, out, rows);
}

/* Where a run of a chunk's tiles side by side on the map goes: the first one's top-left pixel's
 * offset in its image's first output plane, its lane among the WINO_LANES tiles of its group,
 * and the rows (of 2) and columns (of 2 a tile) that lie on the map. */
typedef struct TileSpan {
    size_t at;
    int lane0, rows, cols;
} TileSpan;

/* The spans of the n tiles from t0 on, in groups of WINO_LANES tiles (a span ends at its group's
 * end, its tile row's end, or a tile that overhangs the map): group g's are span[first[g]] ..
 * span[first[g + 1] - 1]. */
static void tile_spans(const WinogradPlan *p, int t0, int n, TileSpan *span, int *first)
{
    const int tw = (p->w + 1) / 2, per_image = ((p->h + 1) / 2) * tw;
    int count = 0;
    for (int i = 0; i < n; i++) {
        const int t = t0 + i, b = t / per_image, y0 = 2 * (t % per_image / tw),
                  x0 = 2 * (t % per_image % tw), lane = i % WINO_LANES;
        const int rows = p->h - y0 < 2 ? p->h - y0 : 2, cols = p->w - x0 < 2 ? p->w - x0 : 2;
        if (lane == 0)
            first[i / WINO_LANES] = count;
        TileSpan *last = count ? &span[count - 1] : NULL;
        if (lane && x0 && last->cols % 2 == 0 && last->rows == rows) {
            last->cols += cols;
            continue;
        }
        span[count++] =
            (TileSpan){(size_t)b * p->k * p->h * p->w + (size_t)y0 * p->w + x0, lane, rows, cols};
    }
    first[(n + WINO_LANES - 1) / WINO_LANES] = count;
}

/* The spans of one group of o (2 rows of 2 * WINO_LANES: tile i at column 2i) put in their places
 * of y, filter f's plane, as out says (winograd_conv). */
static void put_spans(const WinogradOutput *out, int f, size_t hw, int w, const TileSpan *span,
                      int count, const float *o, float *y)
{
    const float *bias = out && out->bias ? out->bias + f : NULL;
    const float *add = out && out->add ? out->add + (size_t)f * hw : NULL;
    const ActivationKind act = out ? out->act : CDL_ACT_LINEAR;
    y += (size_t)f * hw;
    for (int s = 0; s < count; s++)
        for (int a = 0; a < span[s].rows; a++) {
            const size_t at = span[s].at + (size_t)a * w;
            finish_row(bias, add ? add + at : NULL, act, span[s].cols,
                       o + 2 * span[s].lane0 + a * 2 * WINO_LANES, y + at);
        }
}

/* m[e][r][j] for the 16 e, the blocks (1 or 2) of WINO_ROWS filters from up on and the
 * 8 * vecs columns from v on. */
static void products(int blocks, int vecs, int c, const float *up, size_t kc, const float *v,
                     size_t vs, size_t ldv, float *m)
{
    for (int e = 0; e < WINO_E; e++)
        product_any(blocks, vecs, 0, c, up + e * kc, (size_t)WINO_ROWS * c, v + e * vs, ldv,
                    m + e * 2 * WINO_ROWS * 8 * WINO_VECS, 8 * WINO_VECS);
}

/* y's 2x2 tiles of the chunk's n tiles from t0 on, filters f0..f1 (f0 a multiple of WINO_ROWS;
 * as out says: winograd_conv), from v [16][c][ld] and the packed weights u: for each two blocks of
 * WINO_ROWS filters and 8 * WINO_VECS tiles, the 16 products into a block of M that stays in L1,
 * then its output transform, dropping what lies past the map. */
static void product_output(const WinogradPlan *p, const float *u, const float *v, int t0, int n,
                           int f0, int f1, float *y, const WinogradOutput *out)
{
    enum { BLOCK = 8 * WINO_VECS };
    TileSpan span[WINO_FUSED_MAX];
    int first[WINO_FUSED_MAX / WINO_LANES + 2];
    tile_spans(p, t0, n, span, first);
    const size_t kc = rows_padded(p->k) * p->c, vs = matrix_stride(p->c, n), ld = chunk_ld(n);
    const size_t hw = (size_t)p->h * p->w;
    const int vecs_all = (n + 7) / 8;
    float m[WINO_E * 2 * WINO_ROWS * BLOCK], o[2][2 * WINO_LANES];
    for (int f = f0; f < f1; f += 2 * WINO_ROWS) {
        const int rows = f1 - f < 2 * WINO_ROWS ? f1 - f : 2 * WINO_ROWS,
                  blocks = rows > WINO_ROWS ? 2 : 1;
        const float *uf = u + (size_t)f * p->c;
        for (int j = 0; j < vecs_all; j += WINO_VECS) {
            const int vecs = vecs_all - j < WINO_VECS ? vecs_all - j : WINO_VECS;
            products(blocks, vecs, p->c, uf, kc, v + 8 * j, vs, ld, m);
            for (int r = 0; r < rows; r++)
                for (int q = 0; q < vecs; q++) {
                    output_tiles(m + r * BLOCK + 8 * q, 2 * WINO_ROWS * BLOCK, o[0],
                                 2 * WINO_LANES);
                    const int g = j + q;
                    put_spans(out, f + r, hw, p->w, span + first[g], first[g + 1] - first[g], o[0],
                              y);
                }
        }
    }
}

void winograd_conv(const WinogradPlan *p, const float *u, const float *x, float *y,
                   const WinogradOutput *out, float *scratch)
{
    const int chunks = (p->tiles + p->chunk - 1) / p->chunk,
              blocks = (int)rows_padded(p->k) / WINO_ROWS;
    const int limit = omp_get_max_threads();
    const int nt = p->threads < limit ? p->threads : limit;
    /* task q: the chunk q % chunks, the part q / chunks of the filters (each thread one part
     * over every chunk when parts is the thread count) */
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && chunks * p->parts > 1)
    for (int q = 0; q < chunks * p->parts; q++) {
        const int t0 = q % chunks * p->chunk, part = q / chunks;
        const int n = p->tiles - t0 < p->chunk ? p->tiles - t0 : p->chunk;
        const int f0 = blocks * part / p->parts * WINO_ROWS,
                  f1 = blocks * (part + 1) / p->parts * WINO_ROWS;
        const size_t padded_n = padded_floats(p->h, p->w);
        float *v = scratch + (size_t)omp_get_thread_num() * thread_floats(p);
        float *padded = v + thread_floats(p) - padded_n;
        float *rows = padded - 2 * run_row_floats(p->w);
        input_transform(p, x, t0, n, v, padded_n ? padded : NULL);
        if (p->fused)
            product_output(p, u, v, t0, n, f0, f1 < p->k ? f1 : p->k, y, out);
        else
            product_apart(
                p, u, v, t0, n, f0, f1 < p->k ? f1 : p->k, y, out,
                v + WINO_E * matrix_stride((int)rows_padded(p->c > p->k ? p->c : p->k), p->chunk),
                rows);
    }
}

/* ---- The weight gradient: dg = G^T [(A dy A^T) . (B^T d B)] G for each tile's input window d
 * and output gradient dy, summed over the tiles in the transformed domain. An image's planes go
 * 8 channels (or filters) at a time, interleaved pixel by pixel, so that a tile's transform has
 * them in its lanes and stores them side by side: V [16][c8 / 4][tiles][4], packed as the product
 * kernel's rows, D [16][tiles][k8] as its columns (c8, k8: c and k rounded up to 8, zero planes
 * past them). M [16][c8][k8] sums V^T D over the tiles. */

/* Planes interleaved: the lanes. */
#define WINO_PLANES WINO_LANES

/* Filters times channels at most of the weight gradients taken here (each thread sums M
 * [16][c][k]: 16 x 256 x 256 floats, 4 MiB), on maps at most WINO_GRAD_MAP wide and high.
 * AVX-512 (resnet18 224 at batch 16, 1 thread, CPU time): 64x56x56 backward 1.18x, 128x28x28
 * 1.37x, 256x14x14 1.15x faster than im2col + gemm; 512x512 on 7x7 maps 1.3x slower. AVX2: as
 * measured on that machine, up to 128 x 128 on maps up to 16. */
#ifdef WINO_AVX512
#define WINO_GRAD_WEIGHTS (256 * 256)
#define WINO_GRAD_MAP 64
#else
#define WINO_GRAD_WEIGHTS (128 * 128)
#define WINO_GRAD_MAP WINO_FUSED_W
#endif

/* Floats of a chunk's V and D, most of the time (a chunk is whole images). */
#define WINO_GRAD_FLOATS (128 * 1024)

/* The weight gradient's layout for a plan. */
typedef struct GradShape {
    int th, tw, c8, k8;  /* tiles of an image; c and k rounded up to 8 */
    int images;          /* per chunk */
    size_t x_row, d_row; /* floats of a row of the interleaved input (2 tw + 2 pixels) and delta
                            (2 tw pixels) planes */
} GradShape;

static int round8(int n)
{
    return (n + 7) / 8 * 8;
}

static GradShape grad_shape(const WinogradPlan *p)
{
    GradShape g = {(p->h + 1) / 2, (p->w + 1) / 2, round8(p->c), round8(p->k), 1, 0, 0};
    const int per_image = WINO_E * (g.c8 + g.k8) * g.th * g.tw;
    g.images = WINO_GRAD_FLOATS / per_image > 1 ? WINO_GRAD_FLOATS / per_image : 1;
    const int per_thread = (p->batch + p->threads - 1) / p->threads;
    g.images = g.images < per_thread ? g.images : per_thread;
    g.x_row = (size_t)(2 * g.tw + 2) * WINO_PLANES;
    g.d_row = (size_t)(2 * g.tw) * WINO_PLANES;
    return g;
}

/* Distance of V's and D's 16 matrices for a chunk of n images. */
static size_t grad_stride(const GradShape *g, int rows, int n)
{
    return (size_t)rows * n * g->th * g->tw + WINO_SKEW;
}

/* Floats of one thread's weight gradient scratch: M, V and D of a chunk, the interleaved input
 * plane (2 th + 2 rows) and delta plane (2 th rows). */
static size_t grad_thread_floats(const WinogradPlan *p)
{
    const GradShape g = grad_shape(p);
    return WINO_E * ((size_t)g.c8 * g.k8 + grad_stride(&g, g.c8, g.images) +
                     grad_stride(&g, g.k8, g.images)) +
           (2 * (size_t)g.th + 2) * g.x_row + 2 * (size_t)g.th * g.d_row;
}

size_t winograd_grad_scratch_floats(const WinogradPlan *p)
{
    return (size_t)p->threads * grad_thread_floats(p);
}

long winograd_tiles(int batch, int h, int w)
{
    return (long)batch * ((h + 1) / 2) * ((w + 1) / 2);
}

int winograd_grad_worth(int c, int k, int h, int w)
{
    return winograd_worth(c, k, h, w) && w <= WINO_GRAD_MAP && h <= WINO_GRAD_MAP &&
           (long)c * k <= WINO_GRAD_WEIGHTS;
}

/* v[e * stride + i] = (A d_i A^T)[e] for the lanes i of the 2x2 output gradient tiles d_i,
 * d_i[a][b] = rows[a * ld + b * WINO_PLANES + i], A^T = [1 1 1 0; 0 1 -1 -1]. */
#ifdef WINO_AVX2
static void grad_tiles(const float *rows, size_t ld, float *v, size_t stride)
{
    const __m256 zero = _mm256_setzero_ps();
    __m256 t[4][2];
    for (int b = 0; b < 2; b++) {
        const __m256 r0 = _mm256_loadu_ps(rows + b * WINO_PLANES),
                     r1 = _mm256_loadu_ps(rows + ld + b * WINO_PLANES);
        t[0][b] = r0;
        t[1][b] = _mm256_add_ps(r0, r1);
        t[2][b] = _mm256_sub_ps(r0, r1);
        t[3][b] = _mm256_sub_ps(zero, r1);
    }
    for (int a = 0; a < 4; a++) {
        _mm256_storeu_ps(v + (size_t)(4 * a) * stride, t[a][0]);
        _mm256_storeu_ps(v + (size_t)(4 * a + 1) * stride, _mm256_add_ps(t[a][0], t[a][1]));
        _mm256_storeu_ps(v + (size_t)(4 * a + 2) * stride, _mm256_sub_ps(t[a][0], t[a][1]));
        _mm256_storeu_ps(v + (size_t)(4 * a + 3) * stride, _mm256_sub_ps(zero, t[a][1]));
    }
}
#else
static void grad_tiles(const float *rows, size_t ld, float *v, size_t stride)
{
    float t[4][2][WINO_LANES], o[16][WINO_LANES];
    for (int b = 0; b < 2; b++) {
        const float *r0 = rows + b * WINO_PLANES, *r1 = r0 + ld;
#pragma omp simd
        for (int i = 0; i < WINO_LANES; i++) {
            t[0][b][i] = r0[i];
            t[1][b][i] = r0[i] + r1[i];
            t[2][b][i] = r0[i] - r1[i];
            t[3][b][i] = -r1[i];
        }
    }
    for (int a = 0; a < 4; a++)
#pragma omp simd
        for (int i = 0; i < WINO_LANES; i++) {
            o[4 * a + 0][i] = t[a][0][i];
            o[4 * a + 1][i] = t[a][0][i] + t[a][1][i];
            o[4 * a + 2][i] = t[a][0][i] - t[a][1][i];
            o[4 * a + 3][i] = -t[a][1][i];
        }
    for (int e = 0; e < 16; e++)
#pragma omp simd
        for (int i = 0; i < WINO_LANES; i++)
            v[e * stride + i] = o[e][i];
}
#endif

/* plane[(y0 + y) * row + (x0 + x) * WINO_PLANES + i] = planes[(p0 + i) * h * w + y * w + x] for
 * the h x w pixels of the planes p0 + i, 0 from the planes past count; the rest of plane is left
 * as it is (zeros). */
#ifdef WINO_AVX2
/* r[j] = lane j of each r[i] in its lane i: the 8 x 8 transpose. */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8], q[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        q[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        q[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        q[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        q[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(q[i], q[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(q[i], q[i + 4], 0x31);
    }
}

/* Up to 8 pixels at a time: a masked load of each plane's run of a row, transposed. */
static void interleave(const float *planes, int count, int p0, int h, int w, float *plane,
                       size_t row, int y0, int x0)
{
    const size_t hw = (size_t)h * w;
    const float *s[WINO_PLANES];
    for (int i = 0; i < WINO_PLANES; i++)
        s[i] = p0 + i < count ? planes + (size_t)(p0 + i) * hw : NULL;
    for (int y = 0; y < h; y++) {
        float *d = plane + (size_t)(y0 + y) * row + (size_t)x0 * WINO_PLANES;
        for (int x = 0; x < w; x += 8) {
            const int n = w - x < 8 ? w - x : 8;
            const __m256i mask =
                _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            __m256 r[8];
            for (int i = 0; i < WINO_PLANES; i++)
                r[i] =
                    s[i] ? _mm256_maskload_ps(s[i] + (size_t)y * w + x, mask) : _mm256_setzero_ps();
            transpose8(r);
            /* unrolled with a test: gcc made a memcpy call of the loop to n, through the stack */
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                if (j < n)
                    _mm256_storeu_ps(d + (size_t)(x + j) * WINO_PLANES, r[j]);
        }
    }
}
#else
static void interleave(const float *planes, int count, int p0, int h, int w, float *plane,
                       size_t row, int y0, int x0)
{
    const size_t hw = (size_t)h * w;
    for (int i = 0; i < WINO_PLANES; i++) {
        const float *s = p0 + i < count ? planes + (size_t)(p0 + i) * hw : NULL;
        for (int y = 0; y < h; y++) {
            float *d = plane + (size_t)(y0 + y) * row + (size_t)x0 * WINO_PLANES + i;
            for (int x = 0; x < w; x++)
                d[(size_t)x * WINO_PLANES] = s ? s[(size_t)y * w + x] : 0.0f;
        }
    }
}
#endif

#ifdef WINO_AVX2
/* window_tiles of the 8 interleaved planes of rows (step WINO_PLANES, lane 1) in one vector,
 * the same sums in the same order, planes 0..3 stored at v[e * stride], 4..7 at half past it
 * (what the compiler made of window_tiles here was scattered stores). */
static void plane_tiles(const float *rows, size_t ld, float *v, size_t stride, size_t half)
{
    __m256 t[4][4];
    for (int b = 0; b < 4; b++) {
        const float *r = rows + b * WINO_PLANES;
        const __m256 d0 = _mm256_loadu_ps(r), d1 = _mm256_loadu_ps(r + ld),
                     d2 = _mm256_loadu_ps(r + 2 * ld), d3 = _mm256_loadu_ps(r + 3 * ld);
        t[0][b] = _mm256_sub_ps(d0, d2);
        t[1][b] = _mm256_add_ps(d1, d2);
        t[2][b] = _mm256_sub_ps(d2, d1);
        t[3][b] = _mm256_sub_ps(d1, d3);
    }
    for (int a = 0; a < 4; a++) {
        const __m256 o[4] = {_mm256_sub_ps(t[a][0], t[a][2]), _mm256_add_ps(t[a][1], t[a][2]),
                             _mm256_sub_ps(t[a][2], t[a][1]), _mm256_sub_ps(t[a][1], t[a][3])};
        for (int j = 0; j < 4; j++) {
            float *dst = v + (size_t)(4 * a + j) * stride;
            _mm_storeu_ps(dst, _mm256_castps256_ps128(o[j]));
            _mm_storeu_ps(dst + half, _mm256_extractf128_ps(o[j], 1));
        }
    }
}
#else
static void plane_tiles(const float *rows, size_t ld, float *v, size_t stride, size_t half)
{
    window_tiles(rows, ld, WINO_PLANES, 1, 0, v, stride, half);
}
#endif

/* V and D of the n images from b0 on (tile column q * th * tw + ty * tw + tx of image b0 + q);
 * xp, dp: the interleaved planes. */
static void grad_transforms(const WinogradPlan *p, const GradShape *g, const float *x,
                            const float *delta, int b0, int n, float *v, float *d, float *xp,
                            float *dp)
{
    const size_t hw = (size_t)p->h * p->w, tiles = (size_t)n * g->th * g->tw;
    const size_t vs = grad_stride(g, g->c8, n), ds = grad_stride(g, g->k8, n);
    for (int q = 0; q < n; q++) {
        const size_t t0 = (size_t)q * g->th * g->tw;
        for (int ch = 0; ch < g->c8; ch += WINO_PLANES) {
            interleave(x + (size_t)(b0 + q) * p->c * hw, p->c, ch, p->h, p->w, xp, g->x_row, 1, 1);
            /* rows ch / 4 and ch / 4 + 1 of the packed V */
            float *vc = v + (size_t)ch * tiles;
            for (int ty = 0; ty < g->th; ty++)
                for (int tx = 0; tx < g->tw; tx++)
                    plane_tiles(xp + 2 * (size_t)ty * g->x_row + 2 * (size_t)tx * WINO_PLANES,
                                g->x_row, vc + (t0 + (size_t)ty * g->tw + tx) * WINO_ROWS, vs,
                                WINO_ROWS * tiles);
        }
        for (int f = 0; f < g->k8; f += WINO_PLANES) {
            interleave(delta + (size_t)(b0 + q) * p->k * hw, p->k, f, p->h, p->w, dp, g->d_row, 0,
                       0);
            for (int ty = 0; ty < g->th; ty++)
                for (int tx = 0; tx < g->tw; tx++)
                    grad_tiles(dp + 2 * (size_t)ty * g->d_row + 2 * (size_t)tx * WINO_PLANES,
                               g->d_row, d + (t0 + (size_t)ty * g->tw + tx) * g->k8 + f, ds);
        }
    }
}

/* m [c8][k8] (+)= V[e]^T D[e] over the chunk's tiles for one e: vp the packed V [c8 / 4][tiles]
 * [4], d [tiles][k8]; blocks of WINO_VECS vectors of filters (the last ones split evenly), each
 * block's columns of d kept in L1 while every two blocks of channels read them. */
static void grad_product(const GradShape *g, size_t tiles, const float *vp, const float *d,
                         float *m, int add)
{
    const int vecs = g->k8 / 8, n = (int)tiles;
    for (int j = 0; j < vecs;) {
        const int left = vecs - j, step = left <= WINO_VECS ? left
                                          : left <= WINO_VECS + 2 && WINO_VECS % 2 == 0
                                              ? (left + 1) / 2
                                          : left == 4 ? 2
                                                      : WINO_VECS;
        for (int ch = 0; ch < g->c8; ch += 2 * WINO_ROWS) /* c8: a multiple of 8 */
            product_any(2, step, add, n, vp + (size_t)ch * tiles, WINO_ROWS * tiles, d + 8 * j,
                        g->k8, m + (size_t)ch * g->k8 + 8 * j, g->k8);
        j += step;
    }
}

/* dw[9] += G^T m G of m[e] = m[e * stride], G^T = [1 .5 .5 0; 0 .5 -.5 0; 0 .5 .5 1]. */
static void grad_filter(const float *m, size_t stride, float *dw)
{
    float t[3][4];
    for (int b = 0; b < 4; b++) {
        const float m0 = m[b * stride], m1 = m[(4 + b) * stride], m2 = m[(8 + b) * stride],
                    m3 = m[(12 + b) * stride];
        t[0][b] = m0 + 0.5f * (m1 + m2);
        t[1][b] = 0.5f * (m1 - m2);
        t[2][b] = 0.5f * (m1 + m2) + m3;
    }
    for (int a = 0; a < 3; a++) {
        dw[3 * a + 0] += t[a][0] + 0.5f * (t[a][1] + t[a][2]);
        dw[3 * a + 1] += 0.5f * (t[a][1] - t[a][2]);
        dw[3 * a + 2] += 0.5f * (t[a][1] + t[a][2]) + t[a][3];
    }
}

void winograd_weight_grads(const WinogradPlan *p, const float *x, const float *delta, float *dw,
                           float *scratch)
{
    const GradShape g = grad_shape(p);
    const int limit = omp_get_max_threads();
    const int nt = p->threads < limit ? p->threads : limit;
    const size_t mk = (size_t)g.c8 * g.k8, per_thread = grad_thread_floats(p);
#pragma omp parallel num_threads(nt) if (nt > 1 && p->batch > 1)
    {
        const int t = omp_get_thread_num(), threads = omp_get_num_threads();
        const int lo = (int)((long)p->batch * t / threads),
                  hi = (int)((long)p->batch * (t + 1) / threads);
        float *m = scratch + (size_t)t * per_thread, *v = m + WINO_E * mk;
        float *d = v + WINO_E * grad_stride(&g, g.c8, g.images);
        float *xp = d + WINO_E * grad_stride(&g, g.k8, g.images);
        float *dp = xp + (2 * (size_t)g.th + 2) * g.x_row;
        memset(xp, 0, ((2 * (size_t)g.th + 2) * g.x_row + 2 * (size_t)g.th * g.d_row) * sizeof *xp);
        if (lo == hi)
            memset(m, 0, WINO_E * mk * sizeof *m);
        for (int b0 = lo; b0 < hi; b0 += g.images) {
            const int n = hi - b0 < g.images ? hi - b0 : g.images;
            const size_t tiles = (size_t)n * g.th * g.tw;
            grad_transforms(p, &g, x, delta, b0, n, v, d, xp, dp);
            for (int e = 0; e < WINO_E; e++)
                grad_product(&g, tiles, v + e * grad_stride(&g, g.c8, n),
                             d + e * grad_stride(&g, g.k8, n), m + e * mk, b0 > lo);
        }
#pragma omp barrier
        /* Thread 0's sums, then each thread's added in thread order, transformed back. */
#pragma omp for schedule(static)
        for (size_t i = 0; i < (size_t)p->k * p->c; i++) {
            const size_t at = (i % p->c) * g.k8 + i / p->c; /* M[e][ch][f] of dw[f][ch] */
            for (int q = 1; q < threads; q++)
                for (int e = 0; e < WINO_E; e++)
                    scratch[e * mk + at] += scratch[q * per_thread + e * mk + at];
            grad_filter(scratch + at, mk, dw + 9 * i);
        }
    }
}
