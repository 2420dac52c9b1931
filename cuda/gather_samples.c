/* Beam search's moves of the GPU layers' per-sample caches (gather_samples.h): device copies. */
#include "gather_samples.h"

#include "gpu.h"

size_t gpu_gather_sample_blocks(const ExecContext *exec, void *x, size_t bytes, const int *from,
                                int n, float *scratch)
{
    const size_t floats = ((size_t)n * bytes + sizeof *scratch - 1) / sizeof *scratch;
    if (!scratch)
        return floats;
    cudaStream_t stream = (cudaStream_t)exec->stream;
    char *blocks = x, *moved = (char *)scratch;
    for (int k = 0; k < n; k++)
        if (from[k] != k)
            gpu_note_exec(exec,
                          cudaMemcpyAsync(moved + (size_t)k * bytes,
                                          blocks + (size_t)from[k] * bytes, bytes,
                                          cudaMemcpyDeviceToDevice, stream),
                          "beam search's cache gather");
    for (int k = 0; k < n; k++)
        if (from[k] != k)
            gpu_note_exec(exec,
                          cudaMemcpyAsync(blocks + (size_t)k * bytes, moved + (size_t)k * bytes,
                                          bytes, cudaMemcpyDeviceToDevice, stream),
                          "beam search's cache gather");
    return floats;
}
