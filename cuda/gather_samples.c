/* Beam search's moves of the GPU layers' per-sample caches (gather_samples.h): device copies. */
#include "gather_samples.h"

#include "gpu.h"

size_t gpu_gather_sample_blocks(const ExecContext *exec, float *x, size_t block, const int *from,
                                int n, float *scratch)
{
    if (!scratch)
        return (size_t)n * block;
    cudaStream_t stream = (cudaStream_t)exec->stream;
    const size_t bytes = block * sizeof *x;
    for (int k = 0; k < n; k++)
        if (from[k] != k)
            gpu_note_exec(exec,
                          cudaMemcpyAsync(scratch + (size_t)k * block, x + (size_t)from[k] * block,
                                          bytes, cudaMemcpyDeviceToDevice, stream),
                          "beam search's cache gather");
    for (int k = 0; k < n; k++)
        if (from[k] != k)
            gpu_note_exec(exec,
                          cudaMemcpyAsync(x + (size_t)k * block, scratch + (size_t)k * block, bytes,
                                          cudaMemcpyDeviceToDevice, stream),
                          "beam search's cache gather");
    return (size_t)n * block;
}
