// The simulated CUDA runtime: the cudart subset cdl uses, with CUDA's own declarations
// (cuda_runtime_api.h) so that code calling it builds unchanged. One device ("cdl simulator",
// described as an sm_90 part); device memory is host memory; every stream runs its work at once,
// in order; stream capture records launches, copies and fills into a graph that cudaGraphLaunch
// replays; the calls that a capture forbids are refused as CUDA refuses them and break the capture.
// As in CUDA, a stream that waits for an event recorded on a capturing stream joins its capture
// (the graph forks there), and every stream so joined must be waited for by the capture again
// before it ends (else cudaErrorStreamCaptureUnjoined). The host queues work in an order every
// stream's dependencies allow, so the graph here is that order: one list, replayed in it.
#include "runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "counters.h"
#include "grid.h"

struct CUgraph_st {
    std::vector<cuda_sim::StreamOp> ops;
};
struct CUgraphExec_st {
    std::vector<cuda_sim::StreamOp> ops;
};
struct CUstream_st {
    unsigned flags = cudaStreamDefault;
    bool capturing = false;
    bool capture_broken = false;
    cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
    std::thread::id capture_thread;
    CUgraph_st *graph = nullptr;
    // A capture's streams: origin is the one that began it (itself for that one); joined, on the
    // origin, those that joined it since. queued counts the work recorded on this stream in the
    // capture, waited_for how much of it the capture has waited for since (an event after it).
    CUstream_st *origin = nullptr;
    std::vector<CUstream_st *> joined;
    size_t queued = 0, waited_for = 0;
};
struct CUevent_st {
    unsigned flags = cudaEventDefault;
    bool recorded = false;
    double ms = 0.0;
    // Recorded on a capturing stream: that stream and how much of its capture's work came before.
    CUstream_st *captured_on = nullptr;
    size_t captured_after = 0;
};

namespace
{

thread_local cudaError_t last_error = cudaSuccess;
std::mutex state_mutex; // guards the tables below (the simulator itself is single-threaded)
std::map<void *, size_t> device_allocations, host_allocations;
std::map<const void *, int> kernel_shared_limits;
std::vector<CUstream_st *> capturing_streams;
CUstream_st legacy_stream;
// counters.h's counts (atomic: the loader's threads never call CUDA, but a test's might)
std::atomic<long long> stream_syncs{0}, event_syncs{0}, device_to_host_copies{0};

cudaError_t fail(cudaError_t err)
{
    return cuda_sim::record_error(err);
}

CUstream_st *stream_of(cudaStream_t s)
{
    return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread ? &legacy_stream : s;
}

// A call that capture mode `mode` forbids breaks every capture it concerns: global-mode ones
// from any thread, thread-local ones from their own thread. Returns whether one was broken.
bool break_unsafe_captures()
{
    std::lock_guard<std::mutex> lock(state_mutex);
    bool broke = false;
    for (CUstream_st *s : capturing_streams) {
        const bool concerned = s->capture_mode == cudaStreamCaptureModeGlobal ||
                               (s->capture_mode == cudaStreamCaptureModeThreadLocal &&
                                s->capture_thread == std::this_thread::get_id());
        if (concerned) {
            s->capture_broken = true;
            broke = true;
        }
    }
    return broke;
}

// A synchronous copy or fill runs on the legacy stream, which waits for every blocking stream:
// a relaxed-mode capture on a blocking stream would gain an implicit dependency.
bool break_implicit_captures()
{
    std::lock_guard<std::mutex> lock(state_mutex);
    bool broke = false;
    for (CUstream_st *s : capturing_streams) {
        bool blocking = !(s->flags & cudaStreamNonBlocking);
        for (const CUstream_st *j : s->joined)
            blocking = blocking || !(j->flags & cudaStreamNonBlocking);
        if (blocking) {
            s->capture_broken = true;
            broke = true;
        }
    }
    return broke;
}

// Whether the capture stream s takes part in was broken (it is its origin's).
bool capture_broken(const CUstream_st *s)
{
    return s->origin->capture_broken;
}

// Ends the part of stream s (capturing) in its capture: it runs its work at once again.
void leave_capture(CUstream_st *s)
{
    s->capturing = false;
    s->graph = nullptr;
    s->origin = nullptr;
    s->joined.clear();
    s->queued = s->waited_for = 0;
}

bool any_capture()
{
    std::lock_guard<std::mutex> lock(state_mutex);
    return !capturing_streams.empty();
}

cudaError_t refuse_during_capture()
{
    if (break_unsafe_captures())
        return fail(cudaErrorStreamCaptureUnsupported);
    return cudaSuccess;
}

// For synchronous cudaMemcpy / cudaMemset.
cudaError_t refuse_sync_transfer()
{
    if (break_unsafe_captures())
        return fail(cudaErrorStreamCaptureUnsupported);
    if (break_implicit_captures())
        return fail(cudaErrorStreamCaptureImplicit);
    return cudaSuccess;
}

double now_ms()
{
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

bool valid_kind(cudaMemcpyKind kind)
{
    return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault;
}

} // namespace

namespace cuda_sim
{

cudaError_t record_error(cudaError_t err)
{
    if (err != cudaSuccess)
        last_error = err;
    return err;
}

cudaError_t stream_submit(cudaStream_t stream, StreamOp op)
{
    CUstream_st *s = stream_of(stream);
    if (s->capturing) {
        if (capture_broken(s))
            return cudaErrorStreamCaptureInvalidated;
        s->graph->ops.push_back(std::move(op));
        s->queued++;
        return cudaSuccess;
    }
    if (s == &legacy_stream && any_capture() && break_implicit_captures())
        return cudaErrorStreamCaptureImplicit;
    return op();
}

size_t max_dynamic_shared_bytes(const void *kernel)
{
    std::lock_guard<std::mutex> lock(state_mutex);
    auto it = kernel_shared_limits.find(kernel);
    return it == kernel_shared_limits.end() ? 48 * 1024 : (size_t)it->second;
}

cudaError_t launch_config_error(const void *kernel, dim3 grid, dim3 block, size_t shared_bytes)
{
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
        grid.z > 65535 || threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 ||
        block.z > 64)
        return cudaErrorInvalidConfiguration;
    if (shared_bytes > max_dynamic_shared_bytes(kernel))
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

} // namespace cuda_sim

extern "C" {

cudaError_t cudaGetLastError(void)
{
    const cudaError_t err = last_error;
    last_error = cudaSuccess;
    return err;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

const char *cudaGetErrorName(cudaError_t err)
{
    switch (err) {
#define NAME(e)                                                                                    \
    case e:                                                                                        \
        return #e;
        NAME(cudaSuccess)
        NAME(cudaErrorInvalidValue)
        NAME(cudaErrorMemoryAllocation)
        NAME(cudaErrorInvalidConfiguration)
        NAME(cudaErrorInvalidMemcpyDirection)
        NAME(cudaErrorInvalidDevice)
        NAME(cudaErrorInvalidResourceHandle)
        NAME(cudaErrorNotReady)
        NAME(cudaErrorStreamCaptureUnsupported)
        NAME(cudaErrorStreamCaptureInvalidated)
        NAME(cudaErrorStreamCaptureWrongThread)
        NAME(cudaErrorStreamCaptureImplicit)
        NAME(cudaErrorStreamCaptureMerge)
        NAME(cudaErrorStreamCaptureUnmatched)
        NAME(cudaErrorStreamCaptureUnjoined)
        NAME(cudaErrorIllegalState)
#undef NAME
    default:
        return "cudaErrorUnknown";
    }
}

// CUDA's own wording for the errors the simulator returns.
const char *cudaGetErrorString(cudaError_t err)
{
    switch (err) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection:
        return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case cudaErrorNotReady:
        return "device not ready";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureWrongThread:
        return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorStreamCaptureImplicit:
        return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorStreamCaptureMerge:
        return "operation would result in a merge of two independent capture sequences";
    case cudaErrorStreamCaptureUnmatched:
        return "the capture was not initiated in this stream";
    case cudaErrorStreamCaptureUnjoined:
        return "capturing stream has unjoined work";
    case cudaErrorIllegalState:
        return "the operation is not permitted in the current state";
    default:
        return "unrecognized error code";
    }
}

// The devices the simulator shows: CDL_GPUSIM_DEVICES (1 to 16), else 1. They are one: every
// device's memory is the process's, its work the same fibers; only the number is simulated, for
// the code that picks a device (a rank's, under mpirun).
static int device_count()
{
    const char *env = getenv("CDL_GPUSIM_DEVICES");
    const int n = env ? atoi(env) : 1;
    return n >= 1 && n <= 16 ? n : 1;
}

static thread_local int current_device = 0;

cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return fail(cudaErrorInvalidValue);
    *count = device_count();
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (device < 0 || device >= device_count())
        return fail(cudaErrorInvalidDevice);
    current_device = device;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return fail(cudaErrorInvalidValue);
    *device = current_device;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    if (!version)
        return fail(cudaErrorInvalidValue);
    *version = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version)
{
    return cudaRuntimeGetVersion(version);
}

// An H100-like sm_90 part, so that code sizing grids from the properties sizes them plausibly.
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (!prop)
        return fail(cudaErrorInvalidValue);
    if (device < 0 || device >= device_count())
        return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "cdl simulator");
    prop->major = 9;
    prop->minor = 0;
    prop->totalGlobalMem = (size_t)80 << 30;
    prop->sharedMemPerBlock = 48 * 1024;
    prop->sharedMemPerBlockOptin = 227 * 1024;
    prop->sharedMemPerMultiprocessor = 228 * 1024;
    prop->regsPerBlock = 65536;
    prop->regsPerMultiprocessor = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->maxThreadsDim[0] = 1024;
    prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 0x7fffffff;
    prop->maxGridSize[1] = 65535;
    prop->maxGridSize[2] = 65535;
    prop->multiProcessorCount = 132;
    prop->l2CacheSize = 50 << 20;
    prop->totalConstMem = 64 * 1024;
    prop->memoryBusWidth = 5120;
    prop->concurrentKernels = 1;
    prop->unifiedAddressing = 1;
    prop->managedMemory = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
    if (!value)
        return fail(cudaErrorInvalidValue);
    if (device != 0)
        return fail(cudaErrorInvalidDevice);
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    switch (attr) {
    case cudaDevAttrMultiProcessorCount:
        *value = p.multiProcessorCount;
        break;
    case cudaDevAttrMaxThreadsPerBlock:
        *value = p.maxThreadsPerBlock;
        break;
    case cudaDevAttrWarpSize:
        *value = p.warpSize;
        break;
    case cudaDevAttrComputeCapabilityMajor:
        *value = p.major;
        break;
    case cudaDevAttrComputeCapabilityMinor:
        *value = p.minor;
        break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
        *value = (int)p.sharedMemPerBlock;
        break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
        *value = (int)p.sharedMemPerBlockOptin;
        break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
        *value = p.maxThreadsPerMultiProcessor;
        break;
    default:
        return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value)
{
    if (!func)
        return fail(cudaErrorInvalidDeviceFunction);
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || value > 227 * 1024)
            return fail(cudaErrorInvalidValue);
        std::lock_guard<std::mutex> lock(state_mutex);
        kernel_shared_limits[func] = value;
    }
    return cudaSuccess;
}

// Device memory: 256-byte aligned host memory of exactly the size asked (so ASan sees a read
// one past the end), filled with 0xff bytes (NaN for floats) because a GPU's is uninitialised,
// so a read before a write shows.
cudaError_t cudaMalloc(void **ptr, size_t bytes)
{
    if (!ptr)
        return fail(cudaErrorInvalidValue);
    const cudaError_t refused = refuse_during_capture();
    if (refused != cudaSuccess)
        return refused;
    *ptr = nullptr;
    if (bytes == 0)
        return cudaSuccess;
    void *p = nullptr;
    if (posix_memalign(&p, 256, bytes) != 0)
        return fail(cudaErrorMemoryAllocation);
    memset(p, 0xff, bytes);
    std::lock_guard<std::mutex> lock(state_mutex);
    device_allocations[p] = bytes;
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr)
{
    const cudaError_t refused = refuse_during_capture();
    if (refused != cudaSuccess)
        return refused;
    if (!ptr)
        return cudaSuccess;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        if (!device_allocations.erase(ptr))
            return fail(cudaErrorInvalidValue);
    }
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t bytes)
{
    if (!ptr)
        return fail(cudaErrorInvalidValue);
    const cudaError_t refused = refuse_during_capture();
    if (refused != cudaSuccess)
        return refused;
    void *p = nullptr;
    if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0)
        return fail(cudaErrorMemoryAllocation);
    std::lock_guard<std::mutex> lock(state_mutex);
    host_allocations[p] = bytes;
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *ptr)
{
    const cudaError_t refused = refuse_during_capture();
    if (refused != cudaSuccess)
        return refused;
    if (!ptr)
        return cudaSuccess;
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        if (!host_allocations.erase(ptr))
            return fail(cudaErrorInvalidValue);
    }
    free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    if (!valid_kind(kind))
        return fail(cudaErrorInvalidMemcpyDirection);
    if (bytes && (!dst || !src))
        return fail(cudaErrorInvalidValue);
    return fail(cuda_sim::stream_submit(stream, [dst, src, bytes, kind]() {
        if (bytes)
            memmove(dst, src, bytes);
        if (kind == cudaMemcpyDeviceToHost)
            device_to_host_copies++;
        return cudaSuccess;
    }));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    const cudaError_t refused = refuse_sync_transfer();
    if (refused != cudaSuccess)
        return refused;
    return cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream)
{
    if (bytes && !dst)
        return fail(cudaErrorInvalidValue);
    return fail(cuda_sim::stream_submit(stream, [dst, value, bytes]() {
        if (bytes)
            memset(dst, value, bytes);
        return cudaSuccess;
    }));
}

cudaError_t cudaMemset(void *dst, int value, size_t bytes)
{
    const cudaError_t refused = refuse_sync_transfer();
    if (refused != cudaSuccess)
        return refused;
    return cudaMemsetAsync(dst, value, bytes, nullptr);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags)
{
    if (!stream || (flags & ~1u))
        return fail(cudaErrorInvalidValue);
    *stream = new CUstream_st;
    (*stream)->flags = flags;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    CUstream_st *s = stream_of(stream);
    if (s == &legacy_stream)
        return fail(cudaErrorInvalidResourceHandle);
    if (s->capturing && s->origin != s) // a joined stream: the capture cannot be joined again
        s->origin->capture_broken = true;
    else if (s->capturing) { // CUDA ends such a capture; its graph is lost
        std::lock_guard<std::mutex> lock(state_mutex);
        capturing_streams.erase(std::find(capturing_streams.begin(), capturing_streams.end(), s));
        for (CUstream_st *j : s->joined)
            leave_capture(j);
        delete s->graph;
    }
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    CUstream_st *s = stream_of(stream);
    if (s->capturing) {
        s->origin->capture_broken = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    if (s == &legacy_stream && any_capture() && break_implicit_captures())
        return fail(cudaErrorStreamCaptureImplicit);
    stream_syncs++;
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    CUstream_st *s = stream_of(stream);
    if (s->capturing) {
        s->origin->capture_broken = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    if (any_capture()) {
        std::lock_guard<std::mutex> lock(state_mutex);
        for (CUstream_st *s : capturing_streams)
            s->capture_broken = true;
        return fail(cudaErrorStreamCaptureUnsupported);
    }
    stream_syncs++;
    return cudaSuccess;
}

// Streams run in order at once: everything recorded outside a capture has happened. An event
// recorded in a capture that is under way forks it into stream (which then records its work into
// the same graph), or, waited for inside that capture, joins the work before it back.
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags)
{
    if (!event || flags > cudaEventWaitExternal)
        return fail(!event ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue);
    CUstream_st *s = stream_of(stream), *from = event->captured_on;
    if (!from || !from->capturing)
        return cudaSuccess;
    if (s->capturing && s->origin != from->origin) {
        s->origin->capture_broken = from->origin->capture_broken = true;
        return fail(cudaErrorStreamCaptureMerge);
    }
    if (s == &legacy_stream)
        return fail(cudaErrorStreamCaptureImplicit);
    if (!s->capturing) {
        CUstream_st *origin = from->origin;
        s->capturing = true;
        s->capture_mode = origin->capture_mode;
        s->capture_thread = origin->capture_thread;
        s->graph = origin->graph;
        s->origin = origin;
        s->queued = s->waited_for = 0;
        origin->joined.push_back(s);
    }
    if (from != s && event->captured_after > from->waited_for)
        from->waited_for = event->captured_after;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags)
{
    if (!event)
        return fail(cudaErrorInvalidValue);
    *event = new CUevent_st;
    (*event)->flags = flags;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    if (!event)
        return fail(cudaErrorInvalidResourceHandle);
    delete event;
    return cudaSuccess;
}

// The host time when the stream reaches the event: streams run at once, so the time is that of
// the work before it (captured: of the graph launch's replay).
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    if (!event)
        return fail(cudaErrorInvalidResourceHandle);
    CUstream_st *s = stream_of(stream);
    const cudaError_t err = cuda_sim::stream_submit(stream, [event]() {
        event->recorded = true;
        event->ms = now_ms();
        return cudaSuccess;
    });
    event->captured_on = s->capturing ? s : nullptr;
    event->captured_after = s->capturing ? s->queued : 0;
    return fail(err);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (!event)
        return fail(cudaErrorInvalidResourceHandle);
    event_syncs++;
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    return event ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms)
        return fail(cudaErrorInvalidValue);
    if (!start || !end || (start->flags & cudaEventDisableTiming) ||
        (end->flags & cudaEventDisableTiming))
        return fail(cudaErrorInvalidResourceHandle);
    if (!start->recorded || !end->recorded)
        return fail(cudaErrorInvalidResourceHandle);
    *ms = (float)(end->ms - start->ms);
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode)
{
    CUstream_st *s = stream_of(stream);
    if (s == &legacy_stream)
        return fail(cudaErrorStreamCaptureUnsupported);
    if (s->capturing)
        return fail(cudaErrorIllegalState);
    s->capturing = true;
    s->capture_broken = false;
    s->capture_mode = mode;
    s->capture_thread = std::this_thread::get_id();
    s->graph = new CUgraph_st;
    s->origin = s;
    s->queued = s->waited_for = 0;
    std::lock_guard<std::mutex> lock(state_mutex);
    capturing_streams.push_back(s);
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    CUstream_st *s = stream_of(stream);
    if (!graph)
        return fail(cudaErrorInvalidValue);
    if (!s->capturing)
        return fail(cudaErrorIllegalState);
    if (s->origin != s) { // a joined stream: CUDA ends a capture on the stream that began it
        s->origin->capture_broken = true;
        return fail(cudaErrorStreamCaptureUnmatched);
    }
    if (s->capture_mode == cudaStreamCaptureModeThreadLocal &&
        s->capture_thread != std::this_thread::get_id())
        return fail(cudaErrorStreamCaptureWrongThread);
    {
        std::lock_guard<std::mutex> lock(state_mutex);
        capturing_streams.erase(std::find(capturing_streams.begin(), capturing_streams.end(), s));
    }
    bool unjoined = false;
    for (CUstream_st *j : s->joined) {
        unjoined = unjoined || j->queued > j->waited_for;
        leave_capture(j);
    }
    CUgraph_st *recorded = s->graph;
    const bool broken = s->capture_broken;
    leave_capture(s);
    if (broken || unjoined) {
        delete recorded;
        *graph = nullptr;
        return fail(unjoined && !broken ? cudaErrorStreamCaptureUnjoined
                                        : cudaErrorStreamCaptureInvalidated);
    }
    *graph = recorded;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status)
{
    if (!status)
        return fail(cudaErrorInvalidValue);
    const CUstream_st *s = stream_of(stream);
    *status = !s->capturing       ? cudaStreamCaptureStatusNone
              : capture_broken(s) ? cudaStreamCaptureStatusInvalidated
                                  : cudaStreamCaptureStatusActive;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
    (void)flags;
    if (!exec || !graph)
        return fail(cudaErrorInvalidValue);
    *exec = new CUgraphExec_st;
    (*exec)->ops = graph->ops;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    if (!exec)
        return fail(cudaErrorInvalidValue);
    const CUgraphExec_st *e = exec;
    return fail(cuda_sim::stream_submit(stream, [e]() {
        for (const cuda_sim::StreamOp &op : e->ops) {
            const cudaError_t err = op();
            if (err != cudaSuccess)
                return err;
        }
        return cudaSuccess;
    }));
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    delete graph;
    return cudaSuccess;
}

} // extern "C"

CudaSimCounts cuda_sim_counts(void)
{
    return CudaSimCounts{stream_syncs.load(), event_syncs.load(), device_to_host_copies.load()};
}
