/* cdl doctor's CUDA report (GPU=1 and GPU=sim builds): runtime, driver, cuDNN, cuBLAS, NCCL and
 * the devices. A machine without a driver gets "no driver", never a failure; the simulator reports
 * itself as the device, cuBLAS as its OpenBLAS shim and no cuDNN (it has none). */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#ifndef CDL_GPU_SIM
#include <cudnn.h>
#endif

#include "api/cdl_doctor.h"

/* cuBLAS's version, asked without a handle (cublasGetProperty needs no driver). */
static void cublas_version(char *out, size_t size)
{
#ifdef CDL_GPU_SIM
    snprintf(out, size, "simulated over OpenBLAS");
#else
    int major = 0, minor = 0, patch = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
        cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
        cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS)
        snprintf(out, size, "unknown (cublasGetProperty failed)");
    else
        snprintf(out, size, "%d.%d.%d", major, minor, patch);
#endif
}

void doctor_gpu(cdl_doctor_report *r)
{
#ifndef CDL_GPU_SIM
    r->cudnn_built = CUDNN_VERSION;
    r->cudnn = (int)cudnnGetVersion();
#endif
    cublas_version(r->cublas, sizeof r->cublas);
    /* No build links NCCL yet (multi-GPU training is MPI's on the CPU). */
    snprintf(r->nccl, sizeof r->nccl, "not linked");
    if (cudaRuntimeGetVersion(&r->cuda_runtime) != cudaSuccess)
        r->cuda_runtime = 0;
    if (cudaDriverGetVersion(&r->cuda_driver) != cudaSuccess || r->cuda_driver == 0) {
        r->cuda_driver = 0;
        snprintf(r->gpu, sizeof r->gpu, "no driver");
        return;
    }
    int n = 0;
    const cudaError_t st = cudaGetDeviceCount(&n);
    if (st == cudaErrorNoDevice || (st == cudaSuccess && n == 0)) {
        snprintf(r->gpu, sizeof r->gpu, "no device");
        return;
    }
    if (st != cudaSuccess) {
        snprintf(r->gpu, sizeof r->gpu, "%s",
                 st == cudaErrorInsufficientDriver ? "no driver" : cudaGetErrorString(st));
        return;
    }
    snprintf(r->gpu, sizeof r->gpu, "%d device%s", n, n == 1 ? "" : "s");
    for (int i = 0; i < n && r->n_devices < CDL_DOCTOR_DEVICES; i++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess)
            continue;
        cdl_gpu_device *d = &r->devices[r->n_devices++];
        snprintf(d->name, sizeof d->name, "%.127s", p.name);
        d->major = p.major;
        d->minor = p.minor;
        d->memory_gib = (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
    }
}
