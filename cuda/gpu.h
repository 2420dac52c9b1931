/* The GPU backend's execution context and the helpers its family kernels share (the C files of
 * cuda/). A net's ExecContext (core/backend.h) holds the stream and, in handles, a GpuHandles. */
#ifndef CDL_CUDA_GPU_H
#define CDL_CUDA_GPU_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "core/layer.h"
#include "kernels/operand.h"

/* [net] gpu_engine=: what the GPU's convolutions run on: cuDNN (conv_cudnn.h; the default of a
 * GPU=1 build) or the own im2col + cuBLAS kernels (the only one of a GPU=sim build). */
typedef enum GpuEngine { GPU_ENGINE_CUDNN, GPU_ENGINE_REF } GpuEngine;

/* What a step captured as a CUDA graph reads from device memory rather than from its kernels'
 * arguments, which the graph keeps as they were at the capture. */
typedef struct GpuStepValues {
    uint64_t draw_id;     /* StepContext.draw_id: dropout computes its key from it on the device */
    uint64_t images_seen; /* StepContext.images_seen: [region]'s anchor prior */
    float lr, step_size, bias2_sqrt; /* the optimizer's (UpdateRule), in this order */
    float skip; /* 1 when fp16's gradients were not finite: the update leaves everything (slab.h) */
} GpuStepValues;

/* What ExecContext.handles points to on the GPU. */
typedef struct GpuHandles {
    cublasHandle_t cublas;
    GpuEngine engine;
    /* A cudnnHandle_t bound to the stream with engine cudnn, else NULL (gpu.h stays free of
     * cudnn.h, which a GPU=sim build does not use). */
    void *cudnn;
    /* The first CUDA or cuBLAS failure of the net's passes (cudaSuccess: none), with what failed:
     * the passes cannot return one, so the backend's sync reports it (gpu_backend.c). */
    cudaError_t error;
    char failed[96];
    /* Device work of cuda_sum_squares, its total last (kernels/slab.h). */
    double *reduce_work;
    /* The profiling clock (gpu_backend.c's clock_s): events recorded on the stream, the time of
     * mark read as origin_s plus the events' elapsed time; NULL until first asked. */
    cudaEvent_t clock_origin, clock_mark;
    double clock_origin_s;
    /* The mini-batches' uploads (gpu_backend.c's upload_staged): their own stream, so that a copy
     * need not wait behind work queued after it; staged[slot] recorded after the last copy from
     * staging slot `slot`, which the net's stream and the host wait for; passes_queued recorded on
     * the net's stream, which the copies wait for before they overwrite the device's batch. */
    cudaStream_t copy_stream;
    cudaEvent_t staged[2], passes_queued;

    /* A training step's losses, read by the host once at its end (BackendOps.keep_loss, eager,
     * and capture_begin): the loss layers of pass `part` add theirs (divided, in float32, as the
     * host adds them into StepContext.loss) to loss_slot, pass_losses + part of pass_losses
     * [loss_parts] (device), instead of downloading them, and step_outcome downloads them all
     * into host_pass_losses [loss_parts] with one wait and sets loss_slot back to NULL: outside
     * such a step (evaluation, prediction), a loss layer downloads its loss at once
     * (gpu_add_loss). */
    float *pass_losses, *loss_slot, *host_pass_losses;
    int loss_parts, loss_slots_made; /* slots in use, and made (at least loss_parts) */
    /* 1 from an eager step's unscaling (fp16) that kept its outcome on the device, in step->skip,
     * without waiting for it (a step that keeps its losses there) to the step's step_outcome,
     * which downloads it with the losses: the updates meanwhile read it there, as a captured
     * step's do (slab_kernels.c). */
    int skip_on_device;
    /* A step captured as CUDA graphs, one per pass (BackendOps.capture_begin): capturing is 1
     * while one is recorded, when the kernels take what changes from step to step from step
     * (device memory), which each replay uploads from step_host first; graphs [graph_parts],
     * NULL where none was captured. */
    int capturing;
    GpuStepValues *step;
    GpuStepValues step_host;
    cudaGraphExec_t *graphs;
    int graph_parts;
} GpuHandles;

/* 1 when exec's net runs gpu_engine=cudnn. */
static inline int gpu_on_cudnn(const ExecContext *exec)
{
    return exec->handles && ((const GpuHandles *)exec->handles)->engine == GPU_ENGINE_CUDNN;
}

static inline cudaStream_t gpu_stream(const StepContext *ctx)
{
    return (cudaStream_t)ctx->exec->stream;
}

static inline GpuHandles *gpu_handles(const StepContext *ctx)
{
    return (GpuHandles *)ctx->exec->handles;
}

/* Keeps the first failure of the work queued on exec (err not cudaSuccess), naming what failed. */
void gpu_note_exec(const ExecContext *exec, cudaError_t err, const char *what);
/* The same in a layer's pass. */
static inline void gpu_note(const StepContext *ctx, cudaError_t err, const char *what)
{
    gpu_note_exec(ctx->exec, err, what);
}
/* The same for a cuBLAS status. */
void gpu_note_cublas(const StepContext *ctx, cublasStatus_t st, const char *what);

/* A loss layer's total (device, not yet divided by the loss divisor) into its pass's loss: added
 * to GpuHandles.loss_slot on the device in a training step that keeps its losses there, else
 * downloaded (a wait) and added to *ctx->loss. */
void gpu_add_loss(const StepContext *ctx, const double *total, const char *what);

/* count products C_i = alpha op(A_i) op(B_i) + beta C_i in row-major terms, as
 * backend/cpu/gemm.h's gemm: A_i [m][k] (or [k][m] when trans_a) at a + i * stride_a, B_i [k][n]
 * (or [n][k] when trans_b) at b + i * stride_b, C_i [m][n] at c + i * stride_c, leading
 * dimensions and strides in elements; float32 on the device, through cuBLAS on the context's
 * stream. In precision p other than GEMM_FP32 the operands are rounded to p (to nearest even)
 * into copies at the end of the net's workspace (gpu_reserve_scratch) and multiplied with
 * float32 sums, as the CPU's gemm_operand does: the same numerics up to the order of the sums. */
void gpu_gemm_batched(const StepContext *ctx, GemmPrecision p, int trans_a, int trans_b, int m,
                      int n, int k, float alpha, const float *a, int lda, long long stride_a,
                      const float *b, int ldb, long long stride_b, float beta, float *c, int ldc,
                      long long stride_c, int count);

/* The same with a, b and c each float32 or stored in p's 16-bit format (core/precision.h
 * precision_storage; only float32 in fp32 and tf32): a 16-bit operand is multiplied as it is, a
 * float32 one rounded into its copy; a 16-bit c takes the float32 sums rounded (beta read from
 * it). */
void gpu_gemm_batched_typed(const StepContext *ctx, GemmPrecision p, int trans_a, int trans_b,
                            int m, int n, int k, float alpha, const void *a, ElemType a_type,
                            int lda, long long stride_a, const void *b, ElemType b_type, int ldb,
                            long long stride_b, float beta, void *c, ElemType c_type, int ldc,
                            long long stride_c, int count);

/* One product of gpu_gemm_batched_typed. */
static inline void gpu_gemm_typed(const StepContext *ctx, GemmPrecision p, int trans_a, int trans_b,
                                  int m, int n, int k, float alpha, const void *a, ElemType a_type,
                                  int lda, const void *b, ElemType b_type, int ldb, float beta,
                                  void *c, ElemType c_type, int ldc)
{
    gpu_gemm_batched_typed(ctx, p, trans_a, trans_b, m, n, k, alpha, a, a_type, lda, 0, b, b_type,
                           ldb, 0, beta, c, c_type, ldc, 0, 1);
}

/* One product of gpu_gemm_batched. */
static inline void gpu_gemm(const StepContext *ctx, GemmPrecision p, int trans_a, int trans_b,
                            int m, int n, int k, float alpha, const float *a, int lda,
                            const float *b, int ldb, float beta, float *c, int ldc)
{
    gpu_gemm_batched(ctx, p, trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc,
                     0, 1);
}

/* The copies precision p multiplies from (p is not GEMM_FP32). */
static inline CudaOperandFormat gpu_operand_format(GemmPrecision p)
{
    return p == GEMM_BF16   ? CUDA_OPERAND_BF16
           : p == GEMM_FP16 ? CUDA_OPERAND_FP16
                            : CUDA_OPERAND_TF32;
}

/* The larger of a and b: the largest of a family's operands for gpu_reserve_scratch. */
static inline size_t size_max(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* Sets l's scratch (Layer.scratch_per_sample, for a mini-batch of batch) to hold own floats that
 * its passes use from the start of the net's workspace and, in a precision other than fp32, the
 * rounded copies of one product's two operands that gpu_gemm_batched puts at its end, neither
 * operand spanning more than largest_operand floats. */
void gpu_reserve_scratch(Layer *l, int batch, size_t own, size_t largest_operand);

#endif
