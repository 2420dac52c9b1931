/* OpenBLAS's kernels for CPUs its detection does not know. Debian's OpenBLAS 0.3.21 (a
 * DYNAMIC_ARCH build) falls back to its Prescott (SSE3) kernels on a CPU model it has no entry
 * for, Intel's family 6 model 207 (Emerald Rapids) among them: there sgemm ran resnet18_cifar's
 * reference convolutions and char_lstm's weight gradients at a third to a half of the speed
 * its SkylakeX-class kernels reach on the same CPU. cdl then picks the kernels the CPU's
 * instruction set calls for, as OPENBLAS_CORETYPE would, unless the user set that variable. */
#include "backend/cpu/blas_kernels.h"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* OpenBLAS's own (re)initialisation of its dynamic dispatch, exported by DYNAMIC_ARCH builds
 * only: weak, so a build for one target links and keeps its kernels. */
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

/* An OpenBLAS core: its name for OPENBLAS_CORETYPE, and the kernel table a build holding it
 * exports. */
typedef struct BlasCore {
    const char *name, *table;
} BlasCore;

/* The core of this CPU's widest float kernels; NULL when nothing better than Prescott's applies. */
static const BlasCore *core_for_cpu(void)
{
    static const BlasCore skylakex = {"SkylakeX", "gotoblas_SKYLAKEX"},
                          haswell = {"Haswell", "gotoblas_HASWELL"};
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return &skylakex; /* Cooperlake's sgemm is SkylakeX's (it adds bf16 kernels cdl
                             does not call), and 0.3.21 reaches it by name only after a
                             "Core not found" */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &haswell;
    return NULL;
}

static int replaced;

static void choose_kernels(void)
{
    const BlasCore *core = core_for_cpu();
    if (!core || getenv("OPENBLAS_CORETYPE") || strcmp(openblas_get_corename(), "Prescott") != 0 ||
        !gotoblas_dynamic_init || !gotoblas_dynamic_quit || !dlsym(RTLD_DEFAULT, core->table))
        return;
    setenv("OPENBLAS_CORETYPE", core->name, 1); /* what gotoblas_dynamic_init reads */
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
    replaced = strcmp(openblas_get_corename(), "Prescott") != 0;
}

int blas_choose_kernels(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, choose_kernels);
    return replaced;
}
