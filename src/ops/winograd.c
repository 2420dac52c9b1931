/* Winograd convolution F(2x2, 3x3) (ops/winograd.h): the weight, input and output transforms
 * and the chunked products. */
#include "ops/winograd.h"

#include <omp.h>

#include "ops/gemm.h"

/* Transformed values of one 4x4 input window or one filter. */
#define WINO_E 16

/* Floats of V and M one thread's chunk may take, to stay near the L2 cache, and the range
 * the chunk is kept in (gemms over fewer columns run slowly). */
#define WINO_CHUNK_FLOATS (256 * 1024)
#define WINO_CHUNK_MIN 32
#define WINO_CHUNK_MAX 256

WinogradPlan winograd_plan(int batch, int c, int k, int h, int w, int threads)
{
    WinogradPlan p = {batch, c, k, h, w, 0, 0, threads < 1 ? 1 : threads};
    p.tiles = batch * ((h + 1) / 2) * ((w + 1) / 2);
    int chunk = WINO_CHUNK_FLOATS / (WINO_E * (c + k));
    chunk = chunk < WINO_CHUNK_MIN   ? WINO_CHUNK_MIN
            : chunk > WINO_CHUNK_MAX ? WINO_CHUNK_MAX
                                     : chunk;
    const int per_thread = (p.tiles + p.threads - 1) / p.threads;
    p.chunk = chunk < per_thread ? chunk : per_thread;
    return p;
}

size_t winograd_weights_floats(int k, int c)
{
    return (size_t)WINO_E * k * c;
}

size_t winograd_scratch_floats(const WinogradPlan *p)
{
    return (size_t)p->threads * WINO_E * p->chunk * (size_t)(p->c + p->k);
}

void winograd_weights(const float *w, int k, int c, float *u)
{
    const size_t kc = (size_t)k * c;
#pragma omp parallel for schedule(static) if (kc >= 16384)
    for (size_t i = 0; i < kc; i++) {
        const float *g = w + i * 9;
        float t[4][3]; /* G g: G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1] */
        for (int j = 0; j < 3; j++) {
            t[0][j] = g[j];
            t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
            t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
            t[3][j] = g[6 + j];
        }
        for (int r = 0; r < 4; r++) { /* (G g) G^T */
            float *o = u + (size_t)r * 4 * kc + i;
            o[0] = t[r][0];
            o[kc] = 0.5f * (t[r][0] + t[r][1] + t[r][2]);
            o[2 * kc] = 0.5f * (t[r][0] - t[r][1] + t[r][2]);
            o[3 * kc] = t[r][2];
        }
    }
}

/* v[e * stride] = (B^T d B)[e] of the window d, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. */
static inline void input_tile(const float d[4][4], float *v, size_t stride)
{
    float t[4][4];
    for (int j = 0; j < 4; j++) {
        t[0][j] = d[0][j] - d[2][j];
        t[1][j] = d[1][j] + d[2][j];
        t[2][j] = d[2][j] - d[1][j];
        t[3][j] = d[1][j] - d[3][j];
    }
    for (int r = 0; r < 4; r++) {
        v[(4 * r + 0) * stride] = t[r][0] - t[r][2];
        v[(4 * r + 1) * stride] = t[r][1] + t[r][2];
        v[(4 * r + 2) * stride] = t[r][2] - t[r][1];
        v[(4 * r + 3) * stride] = t[r][1] - t[r][3];
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

/* v [16][c][n]: the transformed windows of the chunk's n tiles from t0 on. */
static void input_transform(const WinogradPlan *p, const float *x, int t0, int n, float *v)
{
    const int h = p->h, w = p->w;
    const size_t hw = (size_t)h * w, stride = (size_t)p->c * n;
    for (int t = 0; t < n;) {
        const TileRun r = tile_run(p, t0 + t, n - t);
        const int y0 = 2 * r.ty - 1;
        const int rows_inside = y0 >= 0 && y0 + 3 < h;
        for (int ch = 0; ch < p->c; ch++) {
            const float *plane = x + ((size_t)r.b * p->c + ch) * hw;
            float *vc = v + (size_t)ch * n + t;
            for (int i = 0; i < r.len; i++) {
                const int x0 = 2 * (r.tx + i) - 1;
                float d[4][4];
                if (rows_inside && x0 >= 0 && x0 + 3 < w) {
                    const float *src = plane + (size_t)y0 * w + x0;
                    for (int a = 0; a < 4; a++)
                        for (int b = 0; b < 4; b++)
                            d[a][b] = src[(size_t)a * w + b];
                } else {
                    for (int a = 0; a < 4; a++)
                        for (int b = 0; b < 4; b++) {
                            const int yy = y0 + a, xx = x0 + b;
                            d[a][b] = yy >= 0 && yy < h && xx >= 0 && xx < w
                                          ? plane[(size_t)yy * w + xx]
                                          : 0.0f;
                        }
                }
                input_tile(d, vc + i, stride);
            }
        }
        t += r.len;
    }
}

/* y's 2x2 tiles of the chunk (written, or added to with accumulate) from m [16][k][n]:
 * A^T m A, A^T = [1 1 1 0; 0 1 -1 -1]; the rows and columns past the map are dropped. */
static void output_transform(const WinogradPlan *p, const float *m, int t0, int n, float *y,
                             int accumulate)
{
    const int h = p->h, w = p->w;
    const size_t hw = (size_t)h * w, stride = (size_t)p->k * n;
    for (int t = 0; t < n;) {
        const TileRun r = tile_run(p, t0 + t, n - t);
        const int y0 = 2 * r.ty, rows = y0 + 1 < h ? 2 : 1;
        for (int f = 0; f < p->k; f++) {
            float *plane = y + ((size_t)r.b * p->k + f) * hw;
            const float *mf = m + (size_t)f * n + t;
            for (int i = 0; i < r.len; i++) {
                const float *e = mf + i;
                float s[2][4], o[2][2];
                for (int j = 0; j < 4; j++) {
                    const float m0 = e[j * stride], m1 = e[(4 + j) * stride];
                    const float m2 = e[(8 + j) * stride], m3 = e[(12 + j) * stride];
                    s[0][j] = m0 + m1 + m2;
                    s[1][j] = m1 - m2 - m3;
                }
                for (int a = 0; a < 2; a++) {
                    o[a][0] = s[a][0] + s[a][1] + s[a][2];
                    o[a][1] = s[a][1] - s[a][2] - s[a][3];
                }
                const int x0 = 2 * (r.tx + i), cols = x0 + 1 < w ? 2 : 1;
                for (int a = 0; a < rows; a++) {
                    float *dst = plane + (size_t)(y0 + a) * w + x0;
                    for (int b = 0; b < cols; b++)
                        dst[b] = accumulate ? dst[b] + o[a][b] : o[a][b];
                }
            }
        }
        t += r.len;
    }
}

void winograd_conv(const WinogradPlan *p, const float *u, const float *x, float *y, int accumulate,
                   float *scratch)
{
    const int chunks = (p->tiles + p->chunk - 1) / p->chunk;
    const int limit = omp_get_max_threads();
    const int nt = p->threads < limit ? p->threads : limit;
    const size_t kc = (size_t)p->k * p->c;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && chunks > 1)
    for (int q = 0; q < chunks; q++) {
        const int t0 = q * p->chunk;
        const int n = p->tiles - t0 < p->chunk ? p->tiles - t0 : p->chunk;
        float *v = scratch + (size_t)omp_get_thread_num() * WINO_E * p->chunk * (p->c + p->k);
        float *m = v + (size_t)WINO_E * p->c * n;
        input_transform(p, x, t0, n, v);
        for (int e = 0; e < WINO_E; e++)
            gemm(0, 0, p->k, n, p->c, 1.0f, u + e * kc, p->c, v + (size_t)e * p->c * n, n, 0.0f,
                 m + (size_t)e * p->k * n, n);
        output_transform(p, m, t0, n, y, accumulate);
    }
}
