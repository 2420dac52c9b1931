/* The GPU part of cdl_doctor, defined in cuda/doctor_gpu.c in a GPU=1 build (the one file
 * that calls CUDA and cuDNN); other builds say "not built". */
#ifndef CDL_DOCTOR_H
#define CDL_DOCTOR_H

#include "cdl.h"

/* Fills r's gpu, cuda_*, cudnn* and devices fields. */
void doctor_gpu(cdl_doctor_report *r);

#endif
