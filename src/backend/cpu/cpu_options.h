/* The [net] keys the CPU backend reads (docs/config.md, docs/engines.md): which kernels its
 * convolutions run on and in which layouts a training net keeps its tensors. */
#ifndef CDL_CPU_OPTIONS_H
#define CDL_CPU_OPTIONS_H

#include "core/backend.h"
#include "io/cfg.h"

/* engine=: the own im2col + OpenBLAS reference, oneDNN (backend/cpu/dnnl_conv.h), or per layer
 * the one a fixed shape rule expects to be faster (dnnl_conv_preferred). */
typedef enum CpuEngine { CPU_ENGINE_REF, CPU_ENGINE_DNNL, CPU_ENGINE_AUTO } CpuEngine;

typedef struct CpuOptions {
    CpuEngine engine;
    int engine_given;       /* 1: the cfg names it (bf16 convolutions go to oneDNN unless ref) */
    int winograd;           /* winograd=0|1: 3x3 same convolutions on backend/cpu/winograd.h */
    int winograd_min_tiles; /* a mini-batch with fewer 2x2 output tiles in a layer trains it on
                               im2col (WINOGRAD_TRAINING_TILES) */
    /* dnnl_train_blocked=0|1 (default 1 in a build for AVX-512): a net with gradients keeps its
     * activations and their gradients in nChw8c (nChw16c with AVX-512) between the layers that
     * take it, as inference nets always do; 0: all plain in training */
    int train_blocked;
} CpuOptions;

/* Reads the keys from cfg's [net] section (its first), checking each with "FILE:LINE: ...";
 * with warn, notes in cfg's warnings what this build cannot do (engine=dnnl without oneDNN). */
int cpu_options_read(Cfg *cfg, int warn, CpuOptions *o, Error *e);

/* The options of the net whose passes exec runs (the CPU's ExecContext.handles). */
static inline const CpuOptions *cpu_options(const ExecContext *exec)
{
    return (const CpuOptions *)exec->handles;
}

#endif
