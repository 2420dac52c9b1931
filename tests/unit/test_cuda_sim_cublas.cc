/* The simulator's cuBLAS (cuda/sim/cublas_shim.cc) against a column-major triple loop in double:
 * sgemm for every transpose pair with padded leading dimensions, strided batches, GemmEx on
 * bf16 and fp16 operands, beta = 0 ignoring NaN in C, a gemm recorded by stream capture, and
 * cuBLAS's statuses for bad arguments. */
#include <cublas_v2.h>
#include <stdlib.h>

#include <vector>

#include "cuda_sim_test.h"

/* C[i + j ldc] = alpha sum_p op(A)[i,p] op(B)[p,j] + beta C, in double; `bound` gets the
 * float32 rounding bound k U sum |products| + U |result| of each entry (first order). */
static void gemm_reference(bool ta, bool tb, int m, int n, int k, double alpha, const float *a,
                           int lda, const float *b, int ldb, double beta, std::vector<double> *c,
                           int ldc, std::vector<double> *bound)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double sum = 0.0, abs_sum = 0.0;
            for (int p = 0; p < k; p++) {
                const double x = ta ? a[p + (size_t)i * lda] : a[i + (size_t)p * lda];
                const double y = tb ? b[j + (size_t)p * ldb] : b[p + (size_t)j * ldb];
                sum += x * y;
                abs_sum += fabs(x * y);
            }
            double &out = (*c)[i + (size_t)j * ldc];
            out = alpha * sum + beta * out;
            (*bound)[i + (size_t)j * ldc] =
                (k + 2) * U32 * (fabs(alpha) * abs_sum + fabs(beta * out)) + U32 * fabs(out);
        }
}

static void fill(std::vector<float> *x, unsigned seed)
{
    check_fill_uniform(x->data(), x->size(), -1.0f, &seed);
}

static int count_outside(const float *got, const std::vector<double> &want,
                         const std::vector<double> &bound, int m, int n, int ldc)
{
    int bad = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            const size_t at = i + (size_t)j * ldc;
            if (!(fabs(got[at] - want[at]) <= bound[at]) && bad++ < 3)
                fprintf(stderr, "  C[%d,%d] = %.9g, want %.9g (bound %.3g)\n", i, j, got[at],
                        want[at], bound[at]);
        }
    return bad;
}

static void test_sgemm_every_transpose_pair(void)
{
    cublasHandle_t h;
    CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    const int m = 5, n = 7, k = 3;
    const float alpha = 1.5f, beta = 0.5f;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            const int lda = (ta ? k : m) + 2, ldb = (tb ? n : k) + 1, ldc = m + 3;
            std::vector<float> a((size_t)lda * (ta ? m : k)), b((size_t)ldb * (tb ? k : n)),
                c((size_t)ldc * n);
            fill(&a, 1 + ta), fill(&b, 3 + tb), fill(&c, 5);
            std::vector<double> want(c.begin(), c.end()), bound(c.size());
            gemm_reference(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, &want, ldc,
                           &bound);
            const std::vector<float> c_before = c;
            CHECK(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                              m, n, k, &alpha, a.data(), lda, b.data(), ldb, &beta, c.data(),
                              ldc) == CUBLAS_STATUS_SUCCESS);
            CHECK(count_outside(c.data(), want, bound, m, n, ldc) == 0);
            int padding_changed = 0; /* rows m..ldc of C are not C's */
            for (int j = 0; j < n; j++)
                for (int i = m; i < ldc && j * ldc + i < (int)c.size(); i++)
                    padding_changed += c[j * ldc + i] != c_before[j * ldc + i];
            CHECK(padding_changed == 0);
        }
    cublasDestroy(h);
}

static void test_sgemm_strided_batched(void)
{
    cublasHandle_t h;
    cublasCreate(&h);
    const int m = 4, n = 3, k = 6, batch = 3;
    const long long sa = m * k + 5, sb = k * n + 2, sc = m * n + 1;
    std::vector<float> a(sa * batch), b(sb * batch), c(sc * batch, 0.0f);
    fill(&a, 7), fill(&b, 8);
    const float alpha = 1.0f, beta = 0.0f;
    CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.data(), m, sa,
                                    b.data(), k, sb, &beta, c.data(), m, sc,
                                    batch) == CUBLAS_STATUS_SUCCESS);
    int bad = 0;
    for (int i = 0; i < batch; i++) {
        std::vector<double> want(m * n, 0.0), bound(m * n);
        gemm_reference(false, false, m, n, k, 1.0, a.data() + i * sa, m, b.data() + i * sb, k, 0.0,
                       &want, m, &bound);
        bad += count_outside(c.data() + i * sc, want, bound, m, n, m);
    }
    CHECK(bad == 0);
    cublasDestroy(h);
}

/* GemmEx on 16-bit operands equals the float32 product of the widened operands (exactly
 * representable), rounded once more to the output type when that is 16-bit. */
template <typename T>
static void check_gemm_ex_16bit(cudaDataType type, T (*narrow)(float), float (*widen)(T),
                                double output_unit)
{
    cublasHandle_t h;
    cublasCreate(&h);
    const int m = 6, n = 5, k = 9;
    std::vector<float> af(k * m), bf(k * n);
    fill(&af, 11), fill(&bf, 12);
    std::vector<T> a(af.size()), b(bf.size()), c16(m * n);
    for (size_t i = 0; i < af.size(); i++)
        af[i] = widen(a[i] = narrow(af[i]));
    for (size_t i = 0; i < bf.size(); i++)
        bf[i] = widen(b[i] = narrow(bf[i]));
    std::vector<float> c32(m * n, NAN); /* beta = 0: NaN in C must not show */
    for (T &x : c16)
        x = narrow(NAN);
    std::vector<double> want(m * n, 0.0), bound(m * n);
    gemm_reference(true, false, m, n, k, 1.0, af.data(), k, bf.data(), k, 0.0, &want, m, &bound);
    const float alpha = 1.0f, beta = 0.0f;
    CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a.data(), type, k, b.data(),
                       type, k, &beta, c32.data(), CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    CHECK(count_outside(c32.data(), want, bound, m, n, m) == 0);
    CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a.data(), type, k, b.data(),
                       type, k, &beta, c16.data(), type, m, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    std::vector<float> c16f(m * n);
    for (int i = 0; i < m * n; i++) {
        c16f[i] = widen(c16[i]);
        bound[i] += output_unit * fabs(want[i]);
    }
    CHECK(count_outside(c16f.data(), want, bound, m, n, m) == 0);
    cublasDestroy(h);
}

static __nv_bfloat16 to_bf16(float x) { return __float2bfloat16_rn(x); }
static float from_bf16(__nv_bfloat16 x) { return __bfloat162float(x); }
static __half to_half(float x) { return __float2half_rn(x); }
static float from_half(__half x) { return __half2float(x); }

static void test_gemm_ex_bf16_and_fp16_operands(void)
{
    check_gemm_ex_16bit<__nv_bfloat16>(CUDA_R_16BF, to_bf16, from_bf16, U_BF16);
    check_gemm_ex_16bit<__half>(CUDA_R_16F, to_half, from_half, 0x1p-11);
}

static void test_gemm_is_recorded_by_capture(void)
{
    cublasHandle_t h;
    cublasCreate(&h);
    cudaStream_t s;
    cudaStreamCreate(&s);
    CHECK(cublasSetStream(h, s) == CUBLAS_STATUS_SUCCESS);
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {0, 0, 0, 0};
    const float alpha = 2.0f, beta = 0.0f;
    cudaGraph_t graph;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta, c, 2) ==
          CUBLAS_STATUS_SUCCESS);
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK(c[0] == 0.0f);
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK(c[0] == 2.0f && c[1] == 4.0f && c[2] == 6.0f && c[3] == 8.0f);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cublasDestroy(h);
    cudaStreamDestroy(s);
}

/* cuBLAS's documented checks: lda >= max(1, rows of A as stored), likewise ldb and ldc, sizes
 * >= 0, NULL scalars; no handle; unsupported type combinations. */
static void test_bad_arguments_get_cublas_statuses(void)
{
    cublasHandle_t h;
    cublasCreate(&h);
    float a[64] = {0}, b[64] = {0}, c[64] = {0};
    const float one = 1.0f;
    const cublasOperation_t N = CUBLAS_OP_N, T = CUBLAS_OP_T;
    CHECK(cublasSgemm(h, N, N, 4, 4, 2, &one, a, 3, b, 2, &one, c, 4) ==
          CUBLAS_STATUS_INVALID_VALUE); /* lda < m */
    CHECK(cublasSgemm(h, T, N, 4, 4, 6, &one, a, 4, b, 6, &one, c, 4) ==
          CUBLAS_STATUS_INVALID_VALUE); /* lda < k for OP_T */
    CHECK(cublasSgemm(h, N, T, 4, 4, 2, &one, a, 4, b, 2, &one, c, 4) ==
          CUBLAS_STATUS_INVALID_VALUE); /* ldb < n for OP_T */
    CHECK(cublasSgemm(h, N, N, 4, 4, 2, &one, a, 4, b, 2, &one, c, 3) ==
          CUBLAS_STATUS_INVALID_VALUE); /* ldc < m */
    CHECK(cublasSgemm(h, N, N, -1, 4, 2, &one, a, 4, b, 2, &one, c, 4) ==
          CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasSgemm(h, N, N, 4, 4, 2, nullptr, a, 4, b, 2, &one, c, 4) ==
          CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cublasSgemm(h, N, N, 0, 0, 0, &one, a, 1, b, 1, &one, c, 1) == CUBLAS_STATUS_SUCCESS);
    CHECK(cublasSgemm(nullptr, N, N, 4, 4, 2, &one, a, 4, b, 2, &one, c, 4) ==
          CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK(cublasGemmEx(h, N, N, 4, 4, 2, &one, a, CUDA_R_16BF, 4, b, CUDA_R_32F, 2, &one, c,
                       CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED);
    CHECK(cublasGemmEx(h, N, N, 4, 4, 2, &one, a, CUDA_R_16BF, 4, b, CUDA_R_16BF, 2, &one, c,
                       CUDA_R_16F, 4, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED);
    cublasDestroy(h);
}

int main(void)
{
    test_sgemm_every_transpose_pair();
    test_sgemm_strided_batched();
    test_gemm_ex_bf16_and_fp16_operands();
    test_gemm_is_recorded_by_capture();
    test_bad_arguments_get_cublas_statuses();
    return check_report("test_cuda_sim_cublas");
}
