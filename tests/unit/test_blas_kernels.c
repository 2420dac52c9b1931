/* blas_choose_kernels (backend/cpu/blas_kernels.c): on an OpenBLAS that fell back to its Prescott
 * kernels (forced here, as Debian's 0.3.21 does on CPUs it does not know), cdl switches it to
 * the kernels of the CPU's instruction set, and sgemm still gives the product. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/blas_kernels.h"
#include "backend/cpu/gemm.h"
#include "check.h"

extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

/* OpenBLAS as it starts on an unknown CPU: its Prescott kernels. */
static void fall_back_to_prescott(void)
{
    setenv("OPENBLAS_CORETYPE", "Prescott", 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
}

/* gemm against a double-precision triple loop on [m][k] x [k][n] with either operand
 * transposed in memory, sizes past the kernels' register blocks and odd leading dimensions. */
static void test_gemm_gives_the_product(void)
{
    enum { M = 37, N = 45, K = 70, LD = 73 };
    Rng rng;
    rng_seed(&rng, 11, 0);
    float *a = malloc(sizeof(float) * K * LD), *b = malloc(sizeof(float) * K * LD),
          *c = malloc(sizeof(float) * M * LD);
    for (int i = 0; i < K * LD; i++) {
        a[i] = rng_uniform(&rng) - 0.5f;
        b[i] = rng_uniform(&rng) - 0.5f;
    }
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            gemm(ta, tb, M, N, K, 1.0f, a, LD, b, LD, 0.0f, c, LD);
            double worst = 0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int k = 0; k < K; k++)
                        s += (double)(ta ? a[k * LD + i] : a[i * LD + k]) *
                             (tb ? b[j * LD + k] : b[k * LD + j]);
                    worst = fmax(worst, fabs(s - c[i * LD + j]));
                }
            CHECK(worst < 1e-5);
        }
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    __builtin_cpu_init();
    const int dynamic = gotoblas_dynamic_init && gotoblas_dynamic_quit;
    if (dynamic && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        fall_back_to_prescott();
        CHECK(strcmp(openblas_get_corename(), "Prescott") == 0);
        CHECK(blas_choose_kernels() == 1);
        CHECK(strcmp(openblas_get_corename(), "Prescott") != 0);
        CHECK(blas_choose_kernels() == 1); /* once: the same answer, nothing redone */
    } else {
        fprintf(stderr, "test_blas_kernels: no DYNAMIC_ARCH OpenBLAS or no AVX2: kernels kept\n");
        CHECK(blas_choose_kernels() == 0);
    }
    test_gemm_gives_the_product();
    return check_report("test_blas_kernels");
}
