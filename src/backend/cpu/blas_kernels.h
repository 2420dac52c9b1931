/* OpenBLAS's kernel choice on CPUs it does not know (blas_kernels.c). */
#ifndef CDL_BLAS_KERNELS_H
#define CDL_BLAS_KERNELS_H

/* Once per process, before its first sgemm: when OpenBLAS fell back to its Prescott kernels on
 * a CPU with AVX2 + FMA or AVX-512 and OPENBLAS_CORETYPE is unset, switches it to the kernels of
 * that instruction set (Haswell, or SkylakeX with AVX-512). Returns 1 when it
 * did so, else 0. Call it while no other thread is in OpenBLAS or reading the environment
 * (cdl_set_threads does, at every command's start). */
int blas_choose_kernels(void);

#endif
