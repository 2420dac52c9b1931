/* CDL_HOST_DEVICE marks a function that host code and CUDA kernels both call, so that the CPU and
 * the GPU compute a rule from one source (the detection losses, layers/yolo_loss_rules.h): under
 * nvcc it is __host__ __device__; elsewhere (a C compiler, and the GPU simulator, whose device
 * code is host code) nothing. */
#ifndef CDL_HOST_DEVICE_H
#define CDL_HOST_DEVICE_H

#ifdef __CUDACC__
#define CDL_HOST_DEVICE __host__ __device__
#else
#define CDL_HOST_DEVICE
#endif

#endif
