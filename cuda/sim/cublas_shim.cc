// The simulator's cuBLAS: the gemm subset cdl uses, with cuBLAS's own declarations
// (cublas_v2.h), over OpenBLAS's column-major sgemm. bf16 and fp16 operands are widened to float,
// multiplied with float accumulation (CUBLAS_COMPUTE_32F) and the output rounded to nearest
// even, as cuBLAS documents; TF32 and the other fast modes compute in full float32. Arguments are
// checked in cuBLAS's order and refused with its statuses. Work goes through the handle's stream,
// so a gemm inside a stream capture is recorded and replayed.
#include <cblas.h>
#include <cublas_v2.h>
#include <string.h>

#include <vector>

#include "runtime.h"

struct cublasContext {
    cudaStream_t stream = nullptr;
    cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
    cublasMath_t math_mode = CUBLAS_DEFAULT_MATH;
};

namespace {

bool valid_op(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

// cuBLAS's argument checks for gemm, in its order.
cublasStatus_t gemm_check(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                          long m, long n, long k, const void *alpha, long lda, long ldb,
                          const void *beta, long ldc, long batch)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    auto at_least = [](long ld, long rows) { return ld >= (rows > 1 ? rows : 1); };
    if (m < 0 || n < 0 || k < 0 || batch < 0 || !valid_op(ta) || !valid_op(tb) ||
        !at_least(lda, ta == CUBLAS_OP_N ? m : k) || !at_least(ldb, tb == CUBLAS_OP_N ? k : n) ||
        !at_least(ldc, m) || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

CBLAS_TRANSPOSE cblas_op(cublasOperation_t op)
{
    return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
}

size_t element_bytes(cudaDataType t)
{
    return t == CUDA_R_32F ? 4 : 2;
}

// The `cols` columns of `rows` values `ld` apart, as floats at the same places.
std::vector<float> widen(const void *src, cudaDataType type, long rows, long cols, long ld)
{
    const size_t span = rows && cols ? (size_t)(cols - 1) * ld + rows : 0;
    std::vector<float> out(span);
    for (long c = 0; c < cols; c++)
        for (long r = 0; r < rows; r++) {
            const size_t i = (size_t)c * ld + r;
            out[i] = type == CUDA_R_32F    ? ((const float *)src)[i]
                     : type == CUDA_R_16BF ? __bfloat162float(((const __nv_bfloat16 *)src)[i])
                                           : __half2float(((const __half *)src)[i]);
        }
    return out;
}

void narrow(void *dst, cudaDataType type, const float *src, long rows, long cols, long ld)
{
    for (long c = 0; c < cols; c++)
        for (long r = 0; r < rows; r++) {
            const size_t i = (size_t)c * ld + r;
            if (type == CUDA_R_16BF)
                ((__nv_bfloat16 *)dst)[i] = __float2bfloat16_rn(src[i]);
            else
                ((__half *)dst)[i] = __float2half_rn(src[i]);
        }
}

struct Gemm {
    cublasOperation_t ta, tb;
    int m, n, k;
    float alpha, beta;
    const void *a;
    cudaDataType a_type;
    int lda;
    long long stride_a;
    const void *b;
    cudaDataType b_type;
    int ldb;
    long long stride_b;
    void *c;
    cudaDataType c_type;
    int ldc;
    long long stride_c;
    int batch;
};

void sgemm(const Gemm &g, const float *a, const float *b, float *c)
{
    cblas_sgemm(CblasColMajor, cblas_op(g.ta), cblas_op(g.tb), g.m, g.n, g.k, g.alpha, a, g.lda, b,
                g.ldb, g.beta, c, g.ldc);
}

cudaError_t run_gemm(const Gemm &g)
{
    if (g.m == 0 || g.n == 0)
        return cudaSuccess;
    const long a_rows = g.ta == CUBLAS_OP_N ? g.m : g.k, a_cols = g.ta == CUBLAS_OP_N ? g.k : g.m;
    const long b_rows = g.tb == CUBLAS_OP_N ? g.k : g.n, b_cols = g.tb == CUBLAS_OP_N ? g.n : g.k;
    for (int i = 0; i < g.batch; i++) {
        const char *a = (const char *)g.a + (size_t)i * g.stride_a * element_bytes(g.a_type);
        const char *b = (const char *)g.b + (size_t)i * g.stride_b * element_bytes(g.b_type);
        char *c = (char *)g.c + (size_t)i * g.stride_c * element_bytes(g.c_type);
        if (g.a_type == CUDA_R_32F && g.b_type == CUDA_R_32F && g.c_type == CUDA_R_32F) {
            sgemm(g, (const float *)a, (const float *)b, (float *)c);
            continue;
        }
        const std::vector<float> wa = widen(a, g.a_type, a_rows, a_cols, g.lda);
        const std::vector<float> wb = widen(b, g.b_type, b_rows, b_cols, g.ldb);
        if (g.c_type == CUDA_R_32F) {
            sgemm(g, wa.data(), wb.data(), (float *)c);
            continue;
        }
        // beta == 0 never reads C (it may hold NaN), as BLAS and cuBLAS promise.
        std::vector<float> wc = g.beta != 0.0f ? widen(c, g.c_type, g.m, g.n, g.ldc)
                                               : std::vector<float>((size_t)(g.n - 1) * g.ldc + g.m);
        sgemm(g, wa.data(), wb.data(), wc.data());
        narrow(c, g.c_type, wc.data(), g.m, g.n, g.ldc);
    }
    return cudaSuccess;
}

cublasStatus_t submit(cublasHandle_t handle, const Gemm &g)
{
    const cudaError_t err = cuda_sim::stream_submit(handle->stream, [g]() { return run_gemm(g); });
    return err == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

bool supported_types(cudaDataType a, cudaDataType b, cudaDataType c, cublasComputeType_t compute)
{
    if (a != b)
        return false;
    switch (compute) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        return (a == CUDA_R_32F && c == CUDA_R_32F) ||
               ((a == CUDA_R_16BF || a == CUDA_R_16F) && (c == a || c == CUDA_R_32F));
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_16F:
        return a == CUDA_R_32F && c == CUDA_R_32F;
    default:
        return false;
    }
}

cublasStatus_t gemm_ex(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m,
                       int n, int k, const void *alpha, const void *a, cudaDataType a_type,
                       int lda, long long stride_a, const void *b, cudaDataType b_type, int ldb,
                       long long stride_b, const void *beta, void *c, cudaDataType c_type, int ldc,
                       long long stride_c, int batch, cublasComputeType_t compute)
{
    const cublasStatus_t bad = gemm_check(handle, ta, tb, m, n, k, alpha, lda, ldb, beta, ldc, batch);
    if (bad != CUBLAS_STATUS_SUCCESS)
        return bad;
    if (!supported_types(a_type, b_type, c_type, compute))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const Gemm g{ta,     tb,  m,      n,        k,     *(const float *)alpha, *(const float *)beta,
                 a,      a_type, lda, stride_a, b,     b_type,               ldb,
                 stride_b, c, c_type, ldc,      stride_c, batch};
    return submit(handle, g);
}

} // namespace

extern "C" {

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    if (!handle)
        return CUBLAS_STATUS_INVALID_VALUE;
    *handle = new cublasContext;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->stream = stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t *stream)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!stream)
        return CUBLAS_STATUS_INVALID_VALUE;
    *stream = handle->stream;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode(cublasHandle_t handle, cublasPointerMode_t *mode)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *mode = handle->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    *mode = handle->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    default: return "unknown error";
    }
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                           int m, int n, int k, const float *alpha, const float *a, int lda,
                           const float *b, int ldb, const float *beta, float *c, int ldc)
{
    return cublasSgemmStridedBatched(handle, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c,
                                     ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *a, int lda,
                                         long long stride_a, const float *b, int ldb,
                                         long long stride_b, const float *beta, float *c, int ldc,
                                         long long stride_c, int batch)
{
    return gemm_ex(handle, ta, tb, m, n, k, alpha, a, CUDA_R_32F, lda, stride_a, b, CUDA_R_32F,
                   ldb, stride_b, beta, c, CUDA_R_32F, ldc, stride_c, batch, CUBLAS_COMPUTE_32F);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                            int m, int n, int k, const void *alpha, const void *a,
                            cudaDataType a_type, int lda, const void *b, cudaDataType b_type,
                            int ldb, const void *beta, void *c, cudaDataType c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    (void)algo; // every algorithm computes the same product here
    return gemm_ex(handle, ta, tb, m, n, k, alpha, a, a_type, lda, 0, b, b_type, ldb, 0, beta, c,
                   c_type, ldc, 0, 1, compute);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *a, cudaDataType a_type,
                                          int lda, long long stride_a, const void *b,
                                          cudaDataType b_type, int ldb, long long stride_b,
                                          const void *beta, void *c, cudaDataType c_type, int ldc,
                                          long long stride_c, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    (void)algo;
    return gemm_ex(handle, ta, tb, m, n, k, alpha, a, a_type, lda, stride_a, b, b_type, ldb,
                   stride_b, beta, c, c_type, ldc, stride_c, batch, compute);
}

} // extern "C"
