/* What the simulated CUDA runtime (runtime.cc) counts of the host's traffic with the device, for
 * tests that bound it (tests/unit/test_gpu_step_syncs.c): C, so that C tests read it too. */
#ifndef CDL_CUDA_SIM_COUNTERS_H
#define CDL_CUDA_SIM_COUNTERS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Counts since the process started. */
typedef struct CudaSimCounts {
    /* cudaStreamSynchronize and cudaDeviceSynchronize calls that waited (not refused in a capture)
     */
    long long stream_syncs;
    /* cudaEventSynchronize calls (the staging buffers' waits for their copies, the profiler's
     * clock) */
    long long event_syncs;
    /* device-to-host copies run (cudaMemcpy, cudaMemcpyAsync; a graph's at each replay) */
    long long device_to_host_copies;
} CudaSimCounts;

CudaSimCounts cuda_sim_counts(void);

#ifdef __cplusplus
}
#endif

#endif
