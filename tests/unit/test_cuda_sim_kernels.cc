/* cdl's example kernels (cuda/kernels/) run in the simulator against CPU references in double,
 * within float32 rounding bounds derived per value (first order, U = 2^-24), plus one bf16
 * rounding of each output for the bf16 versions (their inputs are bf16 values, which the
 * reference reads exactly). */
#include <stdlib.h>

#include <vector>

#include "backend/cpu/bf16.h"
#include "backend/cpu/round.h"
#include "cuda_sim_test.h"
#include "kernels/activation.h"
#include "kernels/layernorm.h"
#include "kernels/operand.h"
#include "kernels/reduce.h"
#include "kernels/slab.h"

static float *device_copy(const std::vector<float> &x)
{
    float *d;
    cudaMalloc((void **)&d, x.size() * sizeof *d);
    cudaMemcpy(d, x.data(), x.size() * sizeof *d, cudaMemcpyHostToDevice);
    return d;
}

/* A float sum of values reached through at most `depth` additions has error at most
 * depth U sum |x|. cuda_sum: a thread's grid-strided terms, 5 + 5 levels of shuffles, and the
 * blocks' atomicAdds one after another. */
static void test_sum_matches_reference(void)
{
    const size_t n = 100000;
    std::vector<float> x(n);
    unsigned seed = 21;
    check_fill_uniform(x.data(), n, 0.0f, &seed);
    double want = 0.0, abs_sum = 0.0;
    for (float v : x) {
        want += v;
        abs_sum += fabs(v);
    }
    float *d_x = device_copy(x), *d_out;
    cudaMalloc((void **)&d_out, sizeof *d_out);
    CHECK_CUDA(cuda_sum(d_out, d_x, n, 0));
    const size_t blocks = (n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024;
    const size_t per_thread = (n + blocks * 256 - 1) / (blocks * 256);
    const double depth = (double)(per_thread + 10 + blocks);
    CHECK_NEAR(*d_out, want, depth * U32 * abs_sum);
    cudaFree(d_x);
    cudaFree(d_out);
}

/* The layernorm bound, from the kernel's order of operations with d = ceil(C/256) + 10 the
 * depth of its block sums: |dmean| <= (d + 1) U sum|x| / C; the variance's relative error
 * e <= (d + 3) U; rstd's <= e/2 + 3U (add, sqrt, divide); an output's error
 * <= |w| rstd (|dmean| + |x - mean| (rstd's + 3U)) + 2U |y|. */
template <typename T>
static void check_layernorm(int N, int C, cudaDataType_t type, T (*narrow)(float),
                            float (*widen)(T), double output_unit)
{
    std::vector<float> xf((size_t)N * C), w(C), b(C);
    unsigned seed = 31;
    check_fill_uniform(xf.data(), xf.size(), 2.0f, &seed); /* mean near 3: not centred */
    check_fill_uniform(w.data(), C, -1.0f, &seed);
    check_fill_uniform(b.data(), C, -1.0f, &seed);
    std::vector<T> x(xf.size()), y(xf.size());
    for (size_t i = 0; i < xf.size(); i++)
        xf[i] = widen(x[i] = narrow(xf[i]));
    T *d_x, *d_y;
    float *d_mean, *d_rstd;
    cudaMalloc((void **)&d_x, x.size() * sizeof(T));
    cudaMalloc((void **)&d_y, y.size() * sizeof(T));
    cudaMalloc((void **)&d_mean, N * sizeof(float));
    cudaMalloc((void **)&d_rstd, N * sizeof(float));
    cudaMemcpy(d_x, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice);
    float *d_w = device_copy(w), *d_b = device_copy(b);
    CHECK_CUDA(cuda_layernorm_forward(d_y, d_mean, d_rstd, d_x, d_w, d_b, N, C, type, 0));
    const double d = (C + 255) / 256 + 10;
    int bad = 0;
    for (int r = 0; r < N; r++) {
        const float *row = &xf[(size_t)r * C];
        double mean = 0.0, abs_sum = 0.0, var = 0.0;
        for (int i = 0; i < C; i++) {
            mean += row[i];
            abs_sum += fabs(row[i]);
        }
        mean /= C;
        for (int i = 0; i < C; i++)
            var += (row[i] - mean) * (row[i] - mean);
        var /= C;
        const double rstd = 1.0 / sqrt(var + 1e-5);
        const double dmean = (d + 1) * U32 * abs_sum / C;
        const double rstd_rel = (d + 3) * U32 / 2 + 3 * U32;
        bad += !(fabs(d_mean[r] - mean) <= dmean);
        bad += !(fabs(d_rstd[r] - rstd) <= rstd_rel * rstd);
        for (int i = 0; i < C; i++) {
            const double want = (row[i] - mean) * rstd * w[i] + b[i];
            const double bound =
                fabs(w[i]) * rstd * (dmean + fabs(row[i] - mean) * (rstd_rel + 3 * U32)) +
                2 * U32 * fabs(want) + output_unit * fabs(want);
            const double got = widen(d_y[(size_t)r * C + i]);
            if (!(fabs(got - want) <= bound) && bad++ < 3)
                fprintf(stderr, "  layernorm row %d col %d: %.9g, want %.9g (bound %.3g)\n", r, i,
                        got, want, bound);
        }
    }
    CHECK(bad == 0);
    cudaFree(d_x);
    cudaFree(d_y);
    cudaFree(d_mean);
    cudaFree(d_rstd);
    cudaFree(d_w);
    cudaFree(d_b);
}

static float same(float x)
{
    return x;
}
static __nv_bfloat16 to_bf16(float x)
{
    return __float2bfloat16_rn(x);
}
static float from_bf16(__nv_bfloat16 x)
{
    return __bfloat162float(x);
}

static void test_layernorm_float_and_bf16(void)
{
    check_layernorm<float>(7, 300, CUDA_R_32F, same, same, 0.0);
    check_layernorm<float>(3, 768, CUDA_R_32F, same, same, 0.0);
    check_layernorm<__nv_bfloat16>(7, 300, CUDA_R_16BF, to_bf16, from_bf16, U_BF16);
    check_layernorm<__nv_bfloat16>(3, 768, CUDA_R_16BF, to_bf16, from_bf16, U_BF16);
    CHECK_STATUS(cuda_layernorm_forward(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 8,
                                        CUDA_R_16F, 0),
                 cudaErrorInvalidValue);
}

/* The gelu bound: u = c (x + 0.044715 x^3) in float has error <= 7U c (|x| + 0.044715 |x|^3)
 * (five roundings and the two constants); tanhf adds at most 2 ulp (4U, |tanh| < 1) and
 * tanh' <= 1; then 0.5 x (1 + t) adds 2U |x| / 2 and 2U |y|. */
template <typename T>
static void check_gelu(size_t n, cudaDataType_t type, T (*narrow)(float), float (*widen)(T),
                       double output_unit)
{
    std::vector<float> xf(n);
    unsigned seed = 41;
    check_fill_uniform(xf.data(), n, -1.0f, &seed);
    for (float &v : xf)
        v *= 3.0f; /* [-3, 3): tanh's curve and both tails */
    std::vector<T> x(n);
    for (size_t i = 0; i < n; i++)
        xf[i] = widen(x[i] = narrow(xf[i]));
    T *d_x;
    cudaMalloc((void **)&d_x, n * sizeof(T));
    cudaMemcpy(d_x, x.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    CHECK_CUDA(cuda_gelu_forward(d_x, d_x, n, type, 0)); /* in place */
    const double c = sqrt(2.0 / M_PI);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const double v = xf[i], a = fabs(v);
        const double want = 0.5 * v * (1.0 + tanh(c * (v + 0.044715 * v * v * v)));
        const double du = 7 * U32 * c * (a + 0.044715 * a * a * a);
        const double bound =
            0.5 * a * (du + 4 * U32 + 2 * U32) + 2 * U32 * fabs(want) + output_unit * fabs(want);
        const double got = widen(d_x[i]);
        if (!(fabs(got - want) <= bound) && bad++ < 3)
            fprintf(stderr, "  gelu(%.9g) = %.9g, want %.9g (bound %.3g)\n", v, got, want, bound);
    }
    CHECK(bad == 0);
    cudaFree(d_x);
}

static void test_gelu_float_and_bf16(void)
{
    check_gelu<float>(10007, CUDA_R_32F, same, same, 0.0);
    check_gelu<__nv_bfloat16>(10007, CUDA_R_16BF, to_bf16, from_bf16, U_BF16);
}

/* cuda_round_operand's copies hold, bit for bit, the CPU's roundings (bf16_round, tf32_round,
 * fp16_round, which test_bf16 and test_rounding check against torch's): on ties, subnormals,
 * the formats' overflow thresholds, infinities, NaNs and random values of every scale. */
static void test_operand_rounding_matches_cpu(void)
{
    static const uint32_t edges[] = {0x00000000, 0x80000000, 0x3F808000, 0x3F818000, 0x3F801000,
                                     0x3F803000, 0x3F800FFF, 0x3F801001, 0x387FF000, 0x33000000,
                                     0x33000001, 0x00000001, 0x007FFFFF, 0x477FEFFF, 0x477FF000,
                                     0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
                                     0xFF800000, 0x7FC00000, 0x7F800001};
    const size_t n_edges = sizeof edges / sizeof edges[0], n = n_edges + 3000;
    std::vector<float> x(n);
    memcpy(x.data(), edges, sizeof edges);
    unsigned seed = 5;
    check_fill_uniform(x.data() + n_edges, n - n_edges, -1.0f, &seed);
    for (size_t i = n_edges; i < n; i++)
        x[i] = ldexpf(x[i], (int)(i % 60) - 30);
    float *d_x = device_copy(x), *d_copy;
    cudaMalloc((void **)&d_copy, n * sizeof(float));
    for (int format = CUDA_OPERAND_TF32; format <= CUDA_OPERAND_FP16; format++) {
        const CudaOperandFormat f = (CudaOperandFormat)format;
        CHECK_CUDA(cuda_round_operand(d_copy, d_x, n, f, 0));
        std::vector<unsigned char> copy(n * cuda_operand_bytes(f));
        cudaMemcpy(copy.data(), d_copy, copy.size(), cudaMemcpyDeviceToHost);
        int mismatches = 0;
        for (size_t i = 0; i < n; i++) {
            float got, want;
            if (f == CUDA_OPERAND_TF32) {
                memcpy(&got, &copy[i * 4], 4);
                want = tf32_round(x[i]);
            } else if (f == CUDA_OPERAND_BF16) {
                got = __bfloat162float(((const __nv_bfloat16 *)copy.data())[i]);
                want = bf16_round(x[i]);
            } else {
                got = __half2float(((const __half *)copy.data())[i]);
                want = fp16_round(x[i]);
            }
            const bool same = std::isnan(want) ? std::isnan(got) : memcmp(&got, &want, 4) == 0;
            if (!same && mismatches++ < 5)
                fprintf(stderr, "FAIL format %d: 0x%08x rounds to %a, the CPU's %a\n", format,
                        ((const uint32_t *)x.data())[i], got, want);
        }
        CHECK(mismatches == 0);
    }
    cudaFree(d_x);
    cudaFree(d_copy);
}

static std::vector<float> host_copy(const float *d, size_t n)
{
    std::vector<float> x(n);
    cudaMemcpy(x.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
    return x;
}

/* fp16's unscaling: finite gradients times s exactly, skip 0; one infinity zeroes them all, skip
 * 1, and then SGD, Adam and the average leave their slabs as they were (a captured step whose
 * update is skipped on the device); with skip 0 each changes them. */
static void test_unscale_skips_the_update(void)
{
    const size_t n = 3000;
    std::vector<float> g(n), w(n), state(n);
    unsigned seed = 9;
    check_fill_uniform(g.data(), n, -0.5f, &seed);
    check_fill_uniform(w.data(), n, -0.5f, &seed);
    check_fill_uniform(state.data(), n, 0.0f, &seed);
    float *d_g = device_copy(g), *d_w = device_copy(w), *d_m = device_copy(state),
          *d_v = device_copy(state), *d_values;
    double *work;
    SlabRun *d_run;
    const SlabRun run = {0, 0, n, 0.01f};
    cudaMalloc((void **)&work, cuda_sum_squares_work());
    cudaMalloc((void **)&d_values, 4 * sizeof(float));
    cudaMalloc((void **)&d_run, sizeof run);
    cudaMemcpy(d_run, &run, sizeof run, cudaMemcpyHostToDevice);
    const float values[4] = {0.1f, 0.1f, 1.0f, 0.5f}; /* skip not yet 0 or 1 */
    cudaMemcpy(d_values, values, sizeof values, cudaMemcpyHostToDevice);
    CHECK_CUDA(cuda_unscale(d_g, n, 0x1p-10f, d_values + 3, work, 0));
    std::vector<float> got = host_copy(d_g, n), flags = host_copy(d_values, 4);
    int exact = 1;
    for (size_t i = 0; i < n; i++)
        exact &= got[i] == g[i] * 0x1p-10f;
    CHECK(exact && flags[3] == 0.0f);
    g[n / 2] = INFINITY;
    cudaMemcpy(d_g, g.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    CHECK_CUDA(cuda_unscale(d_g, n, 0x1p-10f, d_values + 3, work, 0));
    got = host_copy(d_g, n);
    flags = host_copy(d_values, 4);
    int zeroed = 1;
    for (size_t i = 0; i < n; i++)
        zeroed &= got[i] == 0.0f;
    CHECK(zeroed && flags[3] == 1.0f);
    /* skipped: every slab as it was, although the weights' decay would move them */
    CHECK_CUDA(cuda_sgd(d_w, d_v, d_g, d_run, 1, n, 0.1f, 0.9f, 0, d_values, d_values + 3, 0));
    CHECK_CUDA(cuda_adam(d_w, d_m, d_v, d_g, d_run, 1, n, 0.1f, 0.9f, 0.999f, 1e-8f, 0.1f, 1.0f, 1,
                         d_values, d_values + 3, 0));
    CHECK_CUDA(cuda_average(d_m, d_w, n, 0.5f, d_values + 3, 0));
    CHECK(host_copy(d_w, n) == w && host_copy(d_m, n) == state && host_copy(d_v, n) == state);
    const float update[4] = {0.1f, 0.1f, 1.0f, 0.0f};
    cudaMemcpy(d_values, update, sizeof update, cudaMemcpyHostToDevice);
    CHECK_CUDA(cuda_sgd(d_w, d_v, d_g, d_run, 1, n, 0.1f, 0.9f, 0, d_values, d_values + 3, 0));
    CHECK(host_copy(d_w, n) != w);
    CHECK_CUDA(cuda_average(d_m, d_w, n, 0.5f, d_values + 3, 0));
    CHECK(host_copy(d_m, n) != state);
    for (float *d : {d_g, d_w, d_m, d_v, d_values})
        cudaFree(d);
    cudaFree(work);
    cudaFree(d_run);
}

int main(void)
{
    test_unscale_skips_the_update();
    test_operand_rounding_matches_cpu();
    test_sum_matches_reference();
    test_layernorm_float_and_bf16();
    test_gelu_float_and_bf16();
    return check_report("test_cuda_sim_kernels");
}
