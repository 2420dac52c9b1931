// The CUDA simulator's kernel launch (CUDA_LAUNCH under CDL_GPU_SIM): checks the configuration
// as CUDA does, copies the arguments converted to the kernel's parameter types (as a launch and
// a graph capture do), and runs the grid in its stream's order or records it into a capture.
#ifndef CDL_CUDA_SIM_LAUNCHER_H
#define CDL_CUDA_SIM_LAUNCHER_H

#include <stddef.h>

#include <tuple>
#include <type_traits>
#include <utility>

#include "grid.h"
#include "runtime.h"

namespace cuda_sim
{

// cudaErrorInvalidConfiguration for an empty or oversized grid or block, cudaErrorInvalidValue
// for more dynamic shared memory than the kernel's limit (cudaFuncSetAttribute), else success.
cudaError_t launch_config_error(const void *kernel, dim3 grid, dim3 block, size_t shared_bytes);

template <typename... P, typename... A>
void launch(const char *name, void (*kernel)(P...), dim3 grid, dim3 block, size_t shared_bytes,
            cudaStream_t stream, A &&...args)
{
    static_assert(sizeof...(P) == sizeof...(A), "CUDA_LAUNCH: wrong number of kernel arguments");
    const cudaError_t bad = launch_config_error((const void *)kernel, grid, block, shared_bytes);
    if (bad != cudaSuccess) {
        record_error(bad);
        return;
    }
    struct Call {
        void (*kernel)(P...);
        std::tuple<std::decay_t<P>...> params;
    };
    Call call{kernel, std::tuple<std::decay_t<P>...>(std::forward<A>(args)...)};
    auto run = [name, grid, block, shared_bytes, call]() mutable {
        Launch launch{name,
                      grid,
                      block,
                      shared_bytes,
                      [](void *ctx) {
                          Call *c = (Call *)ctx;
                          std::apply(c->kernel, c->params); // each thread its own copy
                      },
                      &call};
        run_grid(launch);
        return cudaSuccess;
    };
    const cudaError_t err = stream_submit(stream, run);
    if (err != cudaSuccess)
        record_error(err);
}

} // namespace cuda_sim

// cudaFuncSetAttribute on a kernel itself, as cuda_runtime.h's template offers under nvcc.
template <typename T> cudaError_t cudaFuncSetAttribute(T *kernel, cudaFuncAttribute attr, int value)
{
    return cudaFuncSetAttribute((const void *)kernel, attr, value);
}

#endif
