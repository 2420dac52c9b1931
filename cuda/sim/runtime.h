// What the simulated CUDA runtime (runtime.cc) offers the launcher and the cuBLAS shim: work
// submitted to a stream runs at once (streams are in order and synchronous) or, while the
// stream is being captured, is recorded into the graph to run at each cudaGraphLaunch.
#ifndef CDL_CUDA_SIM_RUNTIME_H
#define CDL_CUDA_SIM_RUNTIME_H

#include <cuda_runtime_api.h>

#include <functional>

namespace cuda_sim
{

using StreamOp = std::function<cudaError_t()>;

// Runs op now, or records it into the capture under way on stream; returns the error to report
// (cudaErrorStreamCaptureInvalidated on a capture that an unsupported call broke).
cudaError_t stream_submit(cudaStream_t stream, StreamOp op);

// Records err for cudaGetLastError / cudaPeekAtLastError (success records nothing).
cudaError_t record_error(cudaError_t err);

// The dynamic shared memory a kernel may ask for: 48 KiB, or what cudaFuncSetAttribute set.
size_t max_dynamic_shared_bytes(const void *kernel);

} // namespace cuda_sim

#endif
