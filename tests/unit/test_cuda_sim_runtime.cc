/* The CUDA simulator's runtime shim (cuda/sim/runtime.cc): the simulated device, memory and
 * copies, events, the last-error protocol, and stream capture: a replayed graph computes what
 * the same work computed eagerly, and the calls a capture forbids are refused as CUDA refuses
 * them and break the capture; a second stream forked into a capture by an event and joined back
 * records its work into the same graph, and one left unjoined fails the capture. */
#include <stdlib.h>

#include "cuda_sim_test.h"

__global__ void affine_kernel(float *x, float a, float b, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = a * x[i] + b;
}

static void test_one_simulated_device(void)
{
    int count = 0;
    CHECK_CUDA(cudaGetDeviceCount(&count));
    CHECK(count == 1);
    cudaDeviceProp p;
    CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
    CHECK(strcmp(p.name, "cdl simulator") == 0);
    CHECK(p.major == 9 && p.minor == 0 && p.warpSize == 32 && p.maxThreadsPerBlock == 1024);
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_STATUS(cudaSetDevice(1), cudaErrorInvalidDevice);
    CHECK_STATUS(cudaGetLastError(), cudaErrorInvalidDevice);
    CHECK_STATUS(cudaGetLastError(), cudaSuccess);
}

static void test_memory_copies_and_fills(void)
{
    const int n = 1000;
    float host[n], back[n];
    for (int i = 0; i < n; i++)
        host[i] = (float)i;
    float *a, *b;
    CHECK_CUDA(cudaMalloc((void **)&a, n * sizeof *a));
    CHECK_CUDA(cudaMalloc((void **)&b, n * sizeof *b));
    CHECK((uintptr_t)a % 256 == 0);
    CHECK_CUDA(cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, a, sizeof host, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(back, b, sizeof back, cudaMemcpyDeviceToHost));
    CHECK(memcmp(back, host, sizeof host) == 0);
    CHECK_CUDA(cudaMemset(b, 0, sizeof host));
    CHECK_CUDA(cudaMemcpy(back, b, sizeof back, cudaMemcpyDefault));
    CHECK(back[0] == 0.0f && back[n - 1] == 0.0f);
    CHECK_STATUS(cudaMemcpy(back, b, sizeof back, (cudaMemcpyKind)7),
                 cudaErrorInvalidMemcpyDirection);
    CHECK_STATUS(cudaFree(host), cudaErrorInvalidValue);
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(nullptr));
    float *pinned;
    CHECK_CUDA(cudaMallocHost((void **)&pinned, 64));
    CHECK_CUDA(cudaFreeHost(pinned));
    cudaGetLastError();
}

static void test_streams_run_in_order_and_events_time(void)
{
    const int n = 300;
    cudaStream_t s;
    cudaEvent_t start, end;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&end));
    float *x;
    CHECK_CUDA(cudaMalloc((void **)&x, n * sizeof *x));
    CHECK_CUDA(cudaEventRecord(start, s));
    CHECK_CUDA(cudaMemsetAsync(x, 0, n * sizeof *x, s));
    CUDA_LAUNCH(affine_kernel, 3, 128, 0, s, x, 2.0f, 1.0f, n);
    CUDA_LAUNCH(affine_kernel, 3, 128, 0, s, x, 2.0f, 1.0f, n);
    CHECK_CUDA(cudaEventRecord(end, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK(x[0] == 3.0f && x[n - 1] == 3.0f);
    float ms = -1.0f;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, end));
    CHECK(ms >= 0.0f);
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(end));
    CHECK_CUDA(cudaStreamDestroy(s));
    cudaFree(x);
}

/* The step captured and compared: copy the input in, three affine maps, copy the result out. */
static void enqueue_step(float *out, float *work, const float *in, int n, cudaStream_t s)
{
    cudaMemcpyAsync(work, in, n * sizeof *work, cudaMemcpyDeviceToDevice, s);
    for (int k = 0; k < 3; k++)
        CUDA_LAUNCH(affine_kernel, (n + 127) / 128, 128, 0, s, work, 1.5f, (float)k, n);
    cudaMemsetAsync(work, 0, sizeof *work, s); /* a fill, captured too */
    cudaMemcpyAsync(out, work, n * sizeof *out, cudaMemcpyDeviceToDevice, s);
}

static void test_graph_replay_equals_eager(void)
{
    const int n = 500;
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    float *in, *work, *eager, *replayed;
    CHECK_CUDA(cudaMalloc((void **)&in, n * sizeof *in));
    CHECK_CUDA(cudaMalloc((void **)&work, n * sizeof *work));
    CHECK_CUDA(cudaMalloc((void **)&eager, n * sizeof *eager));
    CHECK_CUDA(cudaMalloc((void **)&replayed, n * sizeof *replayed));
    for (int i = 0; i < n; i++)
        in[i] = 0.25f * i - 7.0f;
    enqueue_step(eager, work, in, n, s);
    CHECK_CUDA(cudaMemset(replayed, 0, n * sizeof *replayed));

    cudaGraph_t graph = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    CHECK_CUDA(cudaStreamIsCapturing(s, &status));
    CHECK(status == cudaStreamCaptureStatusActive);
    enqueue_step(replayed, work, in, n, s);
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK(graph != nullptr);
    CHECK(replayed[0] == 0.0f && replayed[n - 1] == 0.0f); /* captured work has not run */

    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK(memcmp(replayed, eager, n * sizeof *eager) == 0);
    /* A replay reads the buffers as they are then, as on a GPU. */
    for (int i = 0; i < n; i++)
        in[i] = -in[i];
    enqueue_step(eager, work, in, n, s);
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK(memcmp(replayed, eager, n * sizeof *eager) == 0);
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaStreamDestroy(s));
    cudaFree(in);
    cudaFree(work);
    cudaFree(eager);
    cudaFree(replayed);
}

/* Begins a capture on s, makes the forbidden call (which must fail with `want`), and checks
 * that the capture is broken: later work is refused and EndCapture gives no graph. */
static void check_capture_broken_by(cudaStream_t s, cudaStreamCaptureMode mode,
                                    cudaError_t (*forbidden)(cudaStream_t), cudaError_t want)
{
    CHECK_CUDA(cudaStreamBeginCapture(s, mode));
    CHECK_STATUS(forbidden(s), want);
    cudaStreamCaptureStatus status;
    CHECK_CUDA(cudaStreamIsCapturing(s, &status));
    CHECK(status == cudaStreamCaptureStatusInvalidated);
    CHECK_STATUS(cudaMemsetAsync(nullptr, 0, 0, s), cudaErrorStreamCaptureInvalidated);
    cudaGraph_t graph = (cudaGraph_t)&graph;
    CHECK_STATUS(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    CHECK(graph == nullptr);
    CHECK_CUDA(cudaStreamIsCapturing(s, &status));
    CHECK(status == cudaStreamCaptureStatusNone);
    cudaGetLastError();
}

static float capture_scratch[4];

static cudaError_t sync_memcpy(cudaStream_t)
{
    return cudaMemcpy(capture_scratch, capture_scratch + 2, 2 * sizeof(float),
                      cudaMemcpyHostToHost);
}

static cudaError_t sync_memset(cudaStream_t)
{
    return cudaMemset(capture_scratch, 0, sizeof capture_scratch);
}

static cudaError_t stream_sync(cudaStream_t s)
{
    return cudaStreamSynchronize(s);
}

static cudaError_t device_sync(cudaStream_t)
{
    return cudaDeviceSynchronize();
}

static cudaError_t malloc_call(cudaStream_t)
{
    void *p = nullptr;
    return cudaMalloc(&p, 16);
}

static void test_capture_refuses_what_cuda_refuses(void)
{
    cudaStream_t s;
    CHECK_CUDA(cudaStreamCreate(&s));
    check_capture_broken_by(s, cudaStreamCaptureModeGlobal, sync_memcpy,
                            cudaErrorStreamCaptureUnsupported);
    check_capture_broken_by(s, cudaStreamCaptureModeGlobal, sync_memset,
                            cudaErrorStreamCaptureUnsupported);
    check_capture_broken_by(s, cudaStreamCaptureModeThreadLocal, sync_memcpy,
                            cudaErrorStreamCaptureUnsupported);
    check_capture_broken_by(s, cudaStreamCaptureModeRelaxed, stream_sync,
                            cudaErrorStreamCaptureUnsupported);
    check_capture_broken_by(s, cudaStreamCaptureModeGlobal, device_sync,
                            cudaErrorStreamCaptureUnsupported);
    check_capture_broken_by(s, cudaStreamCaptureModeGlobal, malloc_call,
                            cudaErrorStreamCaptureUnsupported);
    /* A relaxed capture allows cudaMalloc, but a synchronous copy on the legacy stream would
     * depend on the capturing blocking stream. */
    check_capture_broken_by(s, cudaStreamCaptureModeRelaxed, sync_memcpy,
                            cudaErrorStreamCaptureImplicit);
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    void *p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 16));
    cudaGraph_t graph = nullptr;
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK(graph != nullptr);
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaFree(p));
    /* The legacy default stream cannot be captured. */
    CHECK_STATUS(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal),
                 cudaErrorStreamCaptureUnsupported);
    CHECK_CUDA(cudaStreamDestroy(s));
    cudaGetLastError();
}

/* Forks side into a capture on s (an event recorded on s, waited for by side), queues a map on
 * side, and, when join, joins it back (an event recorded on side, waited for by s). */
static void fork_map(float *x, int n, cudaStream_t s, cudaStream_t side, cudaEvent_t fork,
                     cudaEvent_t joined, int join)
{
    CHECK_CUDA(cudaEventRecord(fork, s));
    CHECK_CUDA(cudaStreamWaitEvent(side, fork, 0));
    CUDA_LAUNCH(affine_kernel, (n + 127) / 128, 128, 0, side, x, 2.0f, 0.0f, n);
    if (join) {
        CHECK_CUDA(cudaEventRecord(joined, side));
        CHECK_CUDA(cudaStreamWaitEvent(s, joined, 0));
    }
}

static void test_capture_forks_into_a_stream_and_joins_it(void)
{
    const int n = 200;
    cudaStream_t s, side;
    cudaEvent_t fork, joined;
    CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CHECK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
    float *x;
    CHECK_CUDA(cudaMalloc((void **)&x, n * sizeof *x));
    for (int i = 0; i < n; i++)
        x[i] = (float)i;
    cudaGraph_t graph = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CUDA_LAUNCH(affine_kernel, (n + 127) / 128, 128, 0, s, x, 1.0f, 1.0f, n);  /* x + 1 */
    fork_map(x, n, s, side, fork, joined, 1);                                  /* then * 2 */
    CUDA_LAUNCH(affine_kernel, (n + 127) / 128, 128, 0, s, x, 1.0f, -3.0f, n); /* then - 3 */
    cudaStreamCaptureStatus status;
    CHECK_CUDA(cudaStreamIsCapturing(side, &status));
    CHECK(status == cudaStreamCaptureStatusActive);
    CHECK(x[5] == 5.0f); /* recorded, not run: the side stream's work too */
    CHECK_STATUS(cudaStreamEndCapture(side, &graph), cudaErrorStreamCaptureUnmatched);
    cudaGetLastError();
    /* ending it on side broke the capture: begin again */
    CHECK_STATUS(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    CHECK_CUDA(cudaStreamIsCapturing(side, &status));
    CHECK(status == cudaStreamCaptureStatusNone);
    cudaGetLastError();
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CUDA_LAUNCH(affine_kernel, (n + 127) / 128, 128, 0, s, x, 1.0f, 1.0f, n);
    fork_map(x, n, s, side, fork, joined, 1);
    CUDA_LAUNCH(affine_kernel, (n + 127) / 128, 128, 0, s, x, 1.0f, -3.0f, n);
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK_CUDA(cudaStreamIsCapturing(side, &status));
    CHECK(status == cudaStreamCaptureStatusNone);
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++) /* twice ((x + 1) * 2 - 3) */
        CHECK(x[i] == 2.0f * (2.0f * ((float)i + 1.0f) - 3.0f + 1.0f) - 3.0f);
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    /* the side stream's work never waited for: CUDA's cudaErrorStreamCaptureUnjoined */
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    fork_map(x, n, s, side, fork, joined, 0);
    CHECK_STATUS(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureUnjoined);
    CHECK(graph == nullptr);
    CHECK_CUDA(cudaStreamIsCapturing(side, &status));
    CHECK(status == cudaStreamCaptureStatusNone);
    cudaGetLastError();
    CHECK_CUDA(cudaEventDestroy(fork));
    CHECK_CUDA(cudaEventDestroy(joined));
    CHECK_CUDA(cudaStreamDestroy(side));
    CHECK_CUDA(cudaStreamDestroy(s));
    cudaFree(x);
}

int main(void)
{
    test_one_simulated_device();
    test_memory_copies_and_fills();
    test_streams_run_in_order_and_events_time();
    test_graph_replay_equals_eager();
    test_capture_refuses_what_cuda_refuses();
    test_capture_forks_into_a_stream_and_joins_it();
    return check_report("test_cuda_sim_runtime");
}
