/* The GPU backend (core/backend.h): device memory from cudaMalloc, the passes queued on one stream
 * per net with a cuBLAS handle bound to it, the mini-batches uploaded from pinned host memory on a
 * copy stream beside it, and each family's GPU kernel table found here by family. A family without
 * one is refused when a net is built for the GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CDL_GPU_SIM
#include <cudnn.h>
#endif

#include "gpu.h"
#include "kernels/operand.h"
#include "kernels/pass_loss.h"
#include "kernels/slab.h"
#include "layers/families.h"
#include "util/timer.h"

extern const SlabKernels gpu_slab_kernels;
extern const LayerKernels gpu_connected_kernels, gpu_softmax_kernels, gpu_avgpool_kernels;
extern const LayerKernels gpu_maxpool_kernels, gpu_shortcut_kernels, gpu_route_kernels,
    gpu_dropout_kernels, gpu_upsample_kernels, gpu_reorg_kernels, gpu_crop_kernels,
    gpu_cost_kernels;
extern const LayerKernels gpu_embedding_kernels, gpu_positional_kernels, gpu_layernorm_kernels,
    gpu_linear_kernels, gpu_attention_kernels, gpu_recurrent_kernels;
extern const LayerKernels gpu_convolutional_kernels, gpu_batchnorm_kernels,
    gpu_scale_channels_kernels, gpu_shuffle_kernels, gpu_pad_kernels, gpu_layer_scale_kernels,
    gpu_yolo_kernels, gpu_tokens_kernels, gpu_select_token_kernels, gpu_region_kernels;

static const struct {
    const LayerType *type;
    const LayerKernels *kernels;
} gpu_kernel_table[] = {
    /* one family a row, so that families join the table line by line */
    // clang-format off
    {&connected_layer, &gpu_connected_kernels},
    {&softmax_layer, &gpu_softmax_kernels},
    {&avgpool_layer, &gpu_avgpool_kernels},
    {&maxpool_layer, &gpu_maxpool_kernels},
    {&shortcut_layer, &gpu_shortcut_kernels},
    {&route_layer, &gpu_route_kernels},
    {&dropout_layer, &gpu_dropout_kernels},
    {&drop_path_layer, &gpu_dropout_kernels},
    {&upsample_layer, &gpu_upsample_kernels},
    {&reorg_layer, &gpu_reorg_kernels},
    {&crop_layer, &gpu_crop_kernels},
    {&cost_layer, &gpu_cost_kernels},
    {&embedding_layer, &gpu_embedding_kernels},
    {&positional_layer, &gpu_positional_kernels},
    {&layernorm_layer, &gpu_layernorm_kernels},
    {&linear_layer, &gpu_linear_kernels},
    {&attention_layer, &gpu_attention_kernels},
    {&rnn_layer, &gpu_recurrent_kernels},
    {&lstm_layer, &gpu_recurrent_kernels},
    {&gru_layer, &gpu_recurrent_kernels},
    {&convolutional_layer, &gpu_convolutional_kernels},
    {&batchnorm_layer, &gpu_batchnorm_kernels},
    {&scale_channels_layer, &gpu_scale_channels_kernels},
    {&shuffle_layer, &gpu_shuffle_kernels},
    {&pad_layer, &gpu_pad_kernels},
    {&layer_scale_layer, &gpu_layer_scale_kernels},
    {&yolo_layer, &gpu_yolo_kernels},
    {&tokens_layer, &gpu_tokens_kernels},
    {&select_token_layer, &gpu_select_token_kernels},
    {&region_layer, &gpu_region_kernels},
    // clang-format on
};

static const LayerKernels *gpu_kernels(const LayerType *t)
{
    for (size_t i = 0; i < sizeof gpu_kernel_table / sizeof gpu_kernel_table[0]; i++)
        if (gpu_kernel_table[i].type == t)
            return gpu_kernel_table[i].kernels;
    return NULL;
}

void gpu_note_exec(const ExecContext *exec, cudaError_t err, const char *what)
{
    GpuHandles *h = exec->handles;
    if (err == cudaSuccess || h->error != cudaSuccess)
        return;
    h->error = err;
    snprintf(h->failed, sizeof h->failed, "%s", what);
}

void gpu_note_cublas(const StepContext *ctx, cublasStatus_t st, const char *what)
{
    if (st != CUBLAS_STATUS_SUCCESS)
        gpu_note(ctx, cudaErrorUnknown, what);
}

void gpu_add_loss(const StepContext *ctx, const double *total, const char *what)
{
    GpuHandles *h = gpu_handles(ctx);
    cudaStream_t stream = gpu_stream(ctx);
    if (h->loss_slot) {
        gpu_note(ctx, cuda_pass_loss_add(h->loss_slot, total, ctx->loss_divisor, stream), what);
        return;
    }
    double host_total = 0;
    gpu_note(ctx,
             cudaMemcpyAsync(&host_total, total, sizeof host_total, cudaMemcpyDeviceToHost, stream),
             what);
    gpu_note(ctx, cudaStreamSynchronize(stream), what);
    *ctx->loss += (float)(host_total / ctx->loss_divisor);
}

/* The bytes the rounded copies of the two operands of a product may take at the workspace's end
 * beyond their values: each copy starts 256-aligned, as cuBLAS's fastest kernels want. */
#define OPERAND_ALIGN 256

void gpu_reserve_scratch(Layer *l, int batch, size_t own, size_t largest_operand)
{
    const size_t operands =
        l->precision == GEMM_FP32 ? 0 : 2 * largest_operand + 2 * OPERAND_ALIGN / sizeof(float);
    l->scratch_per_sample = (own + operands + (size_t)batch - 1) / (size_t)batch;
}

/* Elements from the first to the last that count matrices of rows x cols read, at leading
 * dimension ld, stride elements apart. */
static size_t operand_span(int count, long long stride, int rows, int cols, int ld)
{
    return (size_t)(count - 1) * (size_t)stride + (size_t)(rows - 1) * (size_t)ld + (size_t)cols;
}

static size_t align_up(size_t bytes)
{
    return (bytes + OPERAND_ALIGN - 1) / OPERAND_ALIGN * OPERAND_ALIGN;
}

/* Row-major C = A B is column-major C^T = B^T A^T: cuBLAS gets B first. */
/* A product's operand as cuBLAS takes it in precision p (not GEMM_FP32) with format's copies:
 * the tensor itself where it is stored in that 16-bit format already, else its copy rounded into
 * *next (the workspace), which then moves past it. */
static const void *operand_of(const StepContext *ctx, const void *x, ElemType type, size_t span,
                              CudaOperandFormat format, char **next)
{
    if (type != ELEM_F32)
        return x;
    char *copy = *next;
    *next += align_up(span * cuda_operand_bytes(format));
    gpu_note(ctx, cuda_round_operand(copy, x, span, format, gpu_stream(ctx)),
             "rounding a product's operand");
    return copy;
}

/* cuBLAS's data type of a tensor of type t (tf32 copies are float32). */
static cudaDataType data_type(ElemType t)
{
    return t == ELEM_BF16 ? CUDA_R_16BF : t == ELEM_FP16 ? CUDA_R_16F : CUDA_R_32F;
}

void gpu_gemm_batched_typed(const StepContext *ctx, GemmPrecision p, int trans_a, int trans_b,
                            int m, int n, int k, float alpha, const void *a, ElemType a_type,
                            int lda, long long stride_a, const void *b, ElemType b_type, int ldb,
                            long long stride_b, float beta, void *c, ElemType c_type, int ldc,
                            long long stride_c, int count)
{
    const cublasHandle_t cublas = gpu_handles(ctx)->cublas;
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (m <= 0 || n <= 0 || count <= 0)
        return;
    const ElemType half = precision_storage(p);
    if ((a_type != ELEM_F32 && a_type != half) || (b_type != ELEM_F32 && b_type != half) ||
        (c_type != ELEM_F32 && c_type != half)) {
        gpu_note(ctx, cudaErrorInvalidValue, "a product's 16-bit tensor is not in its precision");
        return;
    }
    if (p == GEMM_FP32) {
        gpu_note_cublas(ctx,
                        cublasSgemmStridedBatched(cublas, op_b, op_a, n, m, k, &alpha, b, ldb,
                                                  stride_b, a, lda, stride_a, &beta, c, ldc,
                                                  stride_c, count),
                        "cublasSgemmStridedBatched");
        return;
    }
    const CudaOperandFormat format = gpu_operand_format(p);
    const size_t bytes = cuda_operand_bytes(format);
    const size_t span_a = operand_span(count, stride_a, trans_a ? k : m, trans_a ? m : k, lda);
    const size_t span_b = operand_span(count, stride_b, trans_b ? n : k, trans_b ? k : n, ldb);
    const size_t need = (a_type == ELEM_F32 ? align_up(span_a * bytes) : 0) +
                        (b_type == ELEM_F32 ? align_up(span_b * bytes) : 0);
    const size_t have = ctx->exec->workspace_floats * sizeof(float);
    if (need > have) {
        gpu_note(ctx, cudaErrorInvalidValue,
                 "a product's rounded operands exceed the workspace (gpu_reserve_scratch)");
        return;
    }
    /* the copies at the workspace's end, where the layer's own use (from its start) stops */
    char *next = (char *)ctx->exec->workspace + (have - need) / OPERAND_ALIGN * OPERAND_ALIGN;
    const void *op_a_data = operand_of(ctx, a, a_type, span_a, format, &next);
    const void *op_b_data = operand_of(ctx, b, b_type, span_b, format, &next);
    const cudaDataType type = data_type(half);
    const cublasComputeType_t compute =
        format == CUDA_OPERAND_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    gpu_note_cublas(ctx,
                    cublasGemmStridedBatchedEx(cublas, op_b, op_a, n, m, k, &alpha, op_b_data, type,
                                               ldb, stride_b, op_a_data, type, lda, stride_a, &beta,
                                               c, data_type(c_type), ldc, stride_c, count, compute,
                                               CUBLAS_GEMM_DEFAULT),
                    "cublasGemmStridedBatchedEx");
}

void gpu_gemm_batched(const StepContext *ctx, GemmPrecision p, int trans_a, int trans_b, int m,
                      int n, int k, float alpha, const float *a, int lda, long long stride_a,
                      const float *b, int ldb, long long stride_b, float beta, float *c, int ldc,
                      long long stride_c, int count)
{
    gpu_gemm_batched_typed(ctx, p, trans_a, trans_b, m, n, k, alpha, a, ELEM_F32, lda, stride_a, b,
                           ELEM_F32, ldb, stride_b, beta, c, ELEM_F32, ldc, stride_c, count);
}

static const char *const gpu_engine_names[] = {"cudnn", "ref"}; /* GpuEngine */

/* [net] gpu_engine=cudnn|ref: cudnn by default where cuDNN is built in (GPU=1), ref on the
 * simulator (GPU=sim), which refuses cudnn. (train/net_keys.c checks the key in every build.) */
static int read_gpu_engine(Cfg *cfg, GpuEngine *engine, Error *e)
{
    CfgSection *s = &cfg->sections[0];
    const CfgEntry *given = cfg_find(s, "gpu_engine");
    int named = GPU_ENGINE_CUDNN;
    int st = cfg_get_named(cfg, s, "gpu_engine", gpu_engine_names, 2, &named, e);
    if (st)
        return st;
#ifdef CDL_GPU_SIM
    if (given && named == GPU_ENGINE_CUDNN)
        return error_set(e, CDL_EUSAGE,
                         "%s: gpu_engine=cudnn: this cdl is built on the GPU simulator (make "
                         "GPU=sim), which has no cuDNN; gpu_engine=ref runs there",
                         cfg_where(cfg, s, given).text);
    named = GPU_ENGINE_REF;
#else
    (void)given;
#endif
    *engine = (GpuEngine)named;
    return CDL_OK;
}

/* With engine cudnn, h's cuDNN handle on stream. */
static int open_cudnn(GpuHandles *h, cudaStream_t stream, Error *e)
{
    if (h->engine != GPU_ENGINE_CUDNN)
        return CDL_OK;
#ifdef CDL_GPU_SIM
    (void)stream;
    return error_set(e, CDL_EUSAGE, "gpu_engine=cudnn: this cdl is built without cuDNN");
#else
    cudnnHandle_t handle = NULL;
    cudnnStatus_t st = cudnnCreate(&handle);
    if (st == CUDNN_STATUS_SUCCESS && (st = cudnnSetStream(handle, stream)) != CUDNN_STATUS_SUCCESS)
        cudnnDestroy(handle);
    if (st != CUDNN_STATUS_SUCCESS)
        return error_set(e, CDL_ERUNTIME,
                         "gpu_engine=cudnn: cuDNN could not start (cudnnCreate: %s); "
                         "gpu_engine=ref runs the convolutions on cdl's own kernels",
                         cudnnGetErrorString(st));
    h->cudnn = handle;
    return CDL_OK;
#endif
}

static void close_cudnn(GpuHandles *h)
{
#ifndef CDL_GPU_SIM
    if (h->cudnn)
        cudnnDestroy((cudnnHandle_t)h->cudnn);
#endif
    h->cudnn = NULL;
}

/* The oldest compute capability the kernels are built for (cuda/cuda.mk: sm_80, sm_90, PTX 9.0). */
#define GPU_MIN_COMPUTE_MAJOR 8

/* Destroys h's captured graphs. */
static void drop_graphs(GpuHandles *h)
{
    for (int i = 0; i < h->graph_parts; i++)
        if (h->graphs[i])
            cudaGraphExecDestroy(h->graphs[i]);
    free(h->graphs);
    h->graphs = NULL;
    h->graph_parts = 0;
}

/* Ends what gpu_open started in h, as far as it got, and frees h. */
static void destroy_handles(GpuHandles *h)
{
    cudaEvent_t events[] = {h->clock_origin, h->clock_mark, h->staged[0], h->staged[1],
                            h->passes_queued};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        if (events[i])
            cudaEventDestroy(events[i]);
    if (h->copy_stream)
        cudaStreamDestroy(h->copy_stream);
    close_cudnn(h);
    drop_graphs(h);
    cudaFree(h->pass_losses);
    free(h->host_pass_losses);
    if (h->cublas)
        cublasDestroy(h->cublas);
    cudaFree(h->reduce_work);
    cudaFree(h->step);
    free(h);
}

static int gpu_open(ExecContext *exec, Cfg *cfg, int device, Error *e)
{
    GpuEngine engine;
    int driver = 0, devices = 0;
    int st = read_gpu_engine(cfg, &engine, e);
    if (st)
        return st;
    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0)
        return error_set(e, CDL_ERUNTIME,
                         "no CUDA driver on this machine (libcuda.so.1 is not loaded): --gpu "
                         "needs one; `cdl doctor` shows what this build finds");
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices < 1)
        return error_set(e, CDL_ERUNTIME, "no CUDA device: %s",
                         err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    if (device < 0 || device >= devices)
        return error_set(e, CDL_EUSAGE, "--gpu %d: this machine has %d CUDA device%s (0 to %d)",
                         device, devices, devices == 1 ? "" : "s", devices - 1);
    struct cudaDeviceProp prop;
    if ((err = cudaGetDeviceProperties(&prop, device)) != cudaSuccess)
        return error_set(e, CDL_ERUNTIME, "GPU %d: %s", device, cudaGetErrorString(err));
    if (prop.major < GPU_MIN_COMPUTE_MAJOR)
        return error_set(e, CDL_ERUNTIME,
                         "GPU %d (%s) has compute capability %d.%d; cdl's kernels need %d.0 or "
                         "newer",
                         device, prop.name, prop.major, prop.minor, GPU_MIN_COMPUTE_MAJOR);
    if ((err = cudaSetDevice(device)) != cudaSuccess)
        return error_set(e, CDL_ERUNTIME, "GPU %d: %s", device, cudaGetErrorString(err));
    GpuHandles *h = calloc(1, sizeof *h);
    cudaStream_t stream = NULL;
    if (!h)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (err != cudaSuccess) {
        free(h);
        return error_set(e, CDL_ERUNTIME, "cudaStreamCreate: %s", cudaGetErrorString(err));
    }
    if (cudaMalloc((void **)&h->reduce_work, cuda_sum_squares_work() + sizeof(double)) !=
            cudaSuccess ||
        cudaMalloc((void **)&h->step, sizeof *h->step) != cudaSuccess ||
        cublasCreate(&h->cublas) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(h->cublas, stream) != CUBLAS_STATUS_SUCCESS ||
        cudaStreamCreateWithFlags(&h->copy_stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&h->staged[0], cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&h->staged[1], cudaEventDisableTiming) != cudaSuccess ||
        cudaEventCreateWithFlags(&h->passes_queued, cudaEventDisableTiming) != cudaSuccess) {
        destroy_handles(h);
        cudaStreamDestroy(stream);
        return error_set(e, CDL_ERUNTIME,
                         "the GPU's context could not start (cuBLAS, memory, streams, events)");
    }
    h->engine = engine;
    if ((st = open_cudnn(h, stream, e))) {
        destroy_handles(h);
        cudaStreamDestroy(stream);
        return st;
    }
    *exec = (ExecContext){.stream = stream, .handles = h};
    return CDL_OK;
}

static void gpu_close(ExecContext *exec)
{
    GpuHandles *h = exec->handles;
    if (h)
        destroy_handles(h);
    if (exec->stream)
        cudaStreamDestroy((cudaStream_t)exec->stream);
    exec->handles = exec->stream = NULL;
}

/* Device memory, zeroed; NULL when the device has not enough or count * size overflows. */
static void *gpu_alloc(size_t count, size_t size)
{
    void *p = NULL;
    if (size && count > (size_t)-1 / size)
        return NULL;
    const size_t bytes = count * size > 0 ? count * size : 1;
    if (cudaMalloc(&p, bytes) != cudaSuccess)
        return NULL;
    if (cudaMemset(p, 0, bytes) != cudaSuccess) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void gpu_free(void *p)
{
    if (p)
        cudaFree(p);
}

static void gpu_zero(void *p, size_t bytes, const ExecContext *exec)
{
    cudaMemsetAsync(p, 0, bytes, (cudaStream_t)exec->stream);
}

/* Host-device copies of buffers of the net, synchronous (cudaMemcpy orders them after the work
 * queued on the stream only once the stream is synced: the net syncs before it reads). */
static void gpu_upload(void *device, const void *host, size_t bytes)
{
    cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
}

static void gpu_download(void *host, const void *device, size_t bytes)
{
    cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
}

/* Pinned host memory, zeroed: the device copies from it directly (and asynchronously, where
 * pageable memory would be staged by the driver and the copy synchronous). */
static void *gpu_alloc_host(size_t count, size_t size)
{
    void *p = NULL;
    if (size && count > (size_t)-1 / size)
        return NULL;
    const size_t bytes = count * size > 0 ? count * size : 1;
    if (cudaMallocHost(&p, bytes) != cudaSuccess)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

static void gpu_free_host(void *p)
{
    if (p)
        cudaFreeHost(p);
}

/* The copy stream waits for the passes queued so far (they may still read the device's input and
 * labels, which the copies overwrite), copies, and marks the slot's event, which the net's stream
 * waits for before its next pass: no host sync. */
static void gpu_upload_staged(const StagedCopy *copies, int n, int slot, const ExecContext *exec)
{
    GpuHandles *h = exec->handles;
    cudaStream_t stream = (cudaStream_t)exec->stream;
    gpu_note_exec(exec, cudaEventRecord(h->passes_queued, stream), "cudaEventRecord (upload)");
    gpu_note_exec(exec, cudaStreamWaitEvent(h->copy_stream, h->passes_queued, 0),
                  "cudaStreamWaitEvent (upload)");
    for (int i = 0; i < n; i++)
        gpu_note_exec(exec,
                      cudaMemcpyAsync(copies[i].device, copies[i].host, copies[i].bytes,
                                      cudaMemcpyHostToDevice, h->copy_stream),
                      "cudaMemcpyAsync (upload)");
    gpu_note_exec(exec, cudaEventRecord(h->staged[slot], h->copy_stream),
                  "cudaEventRecord (upload)");
    gpu_note_exec(exec, cudaStreamWaitEvent(stream, h->staged[slot], 0),
                  "cudaStreamWaitEvent (upload)");
}

static void gpu_wait_staged(int slot, const ExecContext *exec)
{
    GpuHandles *h = exec->handles;
    gpu_note_exec(exec, cudaEventSynchronize(h->staged[slot]), "cudaEventSynchronize (upload)");
}

static int gpu_sync(const ExecContext *exec, Error *e)
{
    const cudaError_t err = cudaStreamSynchronize((cudaStream_t)exec->stream);
    GpuHandles *h = exec->handles;
    if (h->error != cudaSuccess)
        return error_set(e, CDL_ERUNTIME, "GPU: %s failed: %s", h->failed,
                         cudaGetErrorString(h->error));
    if (err != cudaSuccess)
        return error_set(e, CDL_ERUNTIME, "GPU: %s", cudaGetErrorString(err));
    return CDL_OK;
}

/* The device's clock for profiling: an event recorded on the stream, waited for, and its time
 * after an origin event whose host time was taken when it completed. The events' elapsed time
 * is a float of milliseconds: the origin moves up every second so that it keeps microseconds. */
static double gpu_clock_s(const ExecContext *exec)
{
    GpuHandles *h = exec->handles;
    cudaStream_t stream = (cudaStream_t)exec->stream;
    if (!h->clock_origin) {
        if (cudaEventCreate(&h->clock_origin) != cudaSuccess ||
            cudaEventCreate(&h->clock_mark) != cudaSuccess) {
            gpu_note_exec(exec, cudaGetLastError(), "cudaEventCreate (profiling)");
            if (h->clock_origin)
                cudaEventDestroy(h->clock_origin);
            h->clock_origin = NULL;
            return time_now_s();
        }
        cudaEventRecord(h->clock_origin, stream);
        cudaEventSynchronize(h->clock_origin);
        h->clock_origin_s = time_now_s();
    }
    float ms = 0;
    gpu_note_exec(exec, cudaEventRecord(h->clock_mark, stream), "cudaEventRecord (profiling)");
    gpu_note_exec(exec, cudaEventSynchronize(h->clock_mark), "cudaEventSynchronize (profiling)");
    gpu_note_exec(exec, cudaEventElapsedTime(&ms, h->clock_origin, h->clock_mark),
                  "cudaEventElapsedTime (profiling)");
    const double now_s = h->clock_origin_s + 1e-3 * (double)ms;
    if (ms > 1000.0f) { /* the mark becomes the origin */
        cudaEvent_t old = h->clock_origin;
        h->clock_origin = h->clock_mark;
        h->clock_mark = old;
        h->clock_origin_s = now_s;
    }
    return now_s;
}

/* The device's slots of the losses of a step of `parts` passes, made at the first step of more
 * passes than any before (not inside a capture: allocating is not captured), and kept when fewer
 * are asked (an evaluation's one pass between training steps): a captured step's graphs hold
 * their address. */
static int make_loss_slots(GpuHandles *h, int parts, Error *e)
{
    if (parts <= h->loss_slots_made) {
        h->loss_parts = parts;
        return CDL_OK;
    }
    cudaFree(h->pass_losses);
    free(h->host_pass_losses);
    h->pass_losses = h->host_pass_losses = NULL;
    h->loss_parts = h->loss_slots_made = 0;
    if (cudaMalloc((void **)&h->pass_losses, (size_t)parts * sizeof *h->pass_losses) !=
            cudaSuccess ||
        !(h->host_pass_losses = malloc((size_t)parts * sizeof *h->host_pass_losses)))
        return error_set(e, CDL_ERUNTIME, "GPU: no memory for the step's losses");
    h->loss_parts = h->loss_slots_made = parts;
    return CDL_OK;
}

/* The loss layers add pass part's losses to its slot, zeroed first on the stream (in a capture,
 * at each replay). */
static void begin_loss_slot(const ExecContext *exec, int part)
{
    GpuHandles *h = exec->handles;
    h->loss_slot = h->pass_losses + part;
    gpu_note_exec(exec, cudaMemsetAsync(h->loss_slot, 0, sizeof *h->loss_slot, exec->stream),
                  "loss slot reset");
}

static int gpu_keep_loss(const ExecContext *exec, int part, int parts, Error *e)
{
    const int st = make_loss_slots(exec->handles, parts, e);
    if (!st)
        begin_loss_slot(exec, part);
    return st;
}

/* Thread-local capture: the loader's threads never touch CUDA, and a call of this thread that
 * would wait (a download, a sync) breaks the capture, which capture_end then reports. The graphs
 * and the passes' losses are made for a step of `parts` passes at its first (before the capture:
 * allocating is not captured). */
static int gpu_capture_begin(const ExecContext *exec, int part, int parts, Error *e)
{
    GpuHandles *h = exec->handles;
    int st = make_loss_slots(h, parts, e);
    if (st)
        return st;
    if (parts != h->graph_parts) {
        drop_graphs(h);
        if (!(h->graphs = calloc((size_t)parts, sizeof *h->graphs)))
            return error_set(e, CDL_ERUNTIME, "GPU: no memory for the step's graphs");
        h->graph_parts = parts;
    }
    const cudaError_t err =
        cudaStreamBeginCapture((cudaStream_t)exec->stream, cudaStreamCaptureModeThreadLocal);
    if (err != cudaSuccess)
        return error_set(e, CDL_ERUNTIME, "GPU: cudaStreamBeginCapture: %s",
                         cudaGetErrorString(err));
    h->capturing = 1;
    begin_loss_slot(exec, part);
    return CDL_OK;
}

static int gpu_capture_end(const ExecContext *exec, int part, Error *e)
{
    GpuHandles *h = exec->handles;
    cudaGraph_t graph = NULL;
    cudaError_t err = cudaStreamEndCapture((cudaStream_t)exec->stream, &graph);
    h->capturing = 0;
    if (h->error != cudaSuccess)
        return error_set(e, CDL_ERUNTIME, "GPU: the step could not be captured: %s failed: %s",
                         h->failed, cudaGetErrorString(h->error));
    if (err != cudaSuccess)
        return error_set(e, CDL_ERUNTIME, "GPU: the step could not be captured: %s",
                         cudaGetErrorString(err));
    cudaGraphExec_t instance = NULL;
    err = cudaGraphInstantiate(&instance, graph, 0);
    cudaGraphDestroy(graph);
    if (err != cudaSuccess)
        return error_set(e, CDL_ERUNTIME, "GPU: cudaGraphInstantiate: %s", cudaGetErrorString(err));
    if (h->graphs[part])
        cudaGraphExecDestroy(h->graphs[part]);
    h->graphs[part] = instance;
    return CDL_OK;
}

/* The pass's values go up on the stream, before its graph, from memory that outlives the copy
 * (a copy from pageable memory has read it when it returns). No wait. */
static int gpu_replay(const ExecContext *exec, int part, const UpdateRule *step, uint64_t draw_id,
                      uint64_t images_seen, Error *e)
{
    GpuHandles *h = exec->handles;
    cudaStream_t stream = (cudaStream_t)exec->stream;
    if (part >= h->graph_parts || !h->graphs[part])
        return error_set(e, CDL_ERUNTIME, "GPU: no graph was captured for pass %d to replay",
                         part + 1);
    h->loss_parts = h->graph_parts; /* an evaluation since the capture used one slot */
    h->step_host = (GpuStepValues){.draw_id = draw_id,
                                   .images_seen = images_seen,
                                   .lr = step->lr,
                                   .step_size = step->step_size,
                                   .bias2_sqrt = step->bias2_sqrt};
    gpu_note_exec(exec,
                  cudaMemcpyAsync(h->step, &h->step_host, sizeof h->step_host,
                                  cudaMemcpyHostToDevice, stream),
                  "step values upload");
    gpu_note_exec(exec, cudaGraphLaunch(h->graphs[part], stream), "cudaGraphLaunch");
    return CDL_OK;
}

/* The step's outcome: one download of the passes' losses, one of the skip flag (when asked),
 * one wait; the losses summed in pass order, in float32, as an eager step on the host sums them. */
static int gpu_step_outcome(const ExecContext *exec, float *loss, int *updated, Error *e)
{
    GpuHandles *h = exec->handles;
    cudaStream_t stream = (cudaStream_t)exec->stream;
    float skip = 1;
    gpu_note_exec(exec,
                  cudaMemcpyAsync(h->host_pass_losses, h->pass_losses,
                                  (size_t)h->loss_parts * sizeof *h->host_pass_losses,
                                  cudaMemcpyDeviceToHost, stream),
                  "loss download");
    if (updated)
        gpu_note_exec(
            exec,
            cudaMemcpyAsync(&skip, &h->step->skip, sizeof skip, cudaMemcpyDeviceToHost, stream),
            "loss download");
    h->loss_slot = NULL;
    h->skip_on_device = 0;
    const int st = gpu_sync(exec, e);
    *loss = 0;
    for (int pass = 0; pass < h->loss_parts; pass++)
        *loss += h->host_pass_losses[pass];
    if (updated)
        *updated = skip == 0.0f;
    return st;
}

const BackendOps gpu_backend = {
    .kind = CDL_BACKEND_GPU,
    .name = "GPU",
    .host_visible = 0,
    .open = gpu_open,
    .close = gpu_close,
    .kernels = gpu_kernels,
    .slab = &gpu_slab_kernels,
    .alloc = gpu_alloc,
    .free = gpu_free,
    .zero = gpu_zero,
    .upload = gpu_upload,
    .download = gpu_download,
    .alloc_host = gpu_alloc_host,
    .free_host = gpu_free_host,
    .upload_staged = gpu_upload_staged,
    .wait_staged = gpu_wait_staged,
    .sync = gpu_sync,
    .clock_s = gpu_clock_s,
    .keep_loss = gpu_keep_loss,
    .capture_begin = gpu_capture_begin,
    .capture_end = gpu_capture_end,
    .replay = gpu_replay,
    .step_outcome = gpu_step_outcome,
};
