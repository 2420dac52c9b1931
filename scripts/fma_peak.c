/* The machine's fp32 FMA peak, measured: each of N OpenMP threads runs independent chains of
 * fused multiply-adds on the widest vectors the CPU has (512-bit with AVX-512 F, else 256-bit;
 * enough accumulators to cover the FMA latency times the FMA units: 2 units x 4-5 cycles on Zen
 * and Intel cores) and the GFLOP/s of all together is printed (an FMA on W floats counts 2W
 * FLOP). A CPU whose AVX-512 FMAs are split into two 256-bit halves (Zen 4) or which has one
 * 512-bit FMA unit gets about the 256-bit figure either way. scripts/bench-cpu.sh compiles
 * and runs it.
 * Build: cc -O3 -mavx2 -mfma -fopenmp scripts/fma_peak.c -o fma_peak
 * Usage: fma_peak THREADS [SECONDS]   (default 0.5 s) -> prints GFLOP/s */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

enum { CHAINS = 12, INNER = 1000 };

/* Runs CHAINS x INNER x reps FMAs of 8 floats; returns a sum so the compiler keeps them. */
static float fma_chains_256(long reps)
{
    __m256 acc[CHAINS];
    for (int c = 0; c < CHAINS; c++)
        acc[c] = _mm256_set1_ps(0.001f * (float)c);
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (long r = 0; r < reps; r++)
        for (int i = 0; i < INNER; i++)
            for (int c = 0; c < CHAINS; c++)
                acc[c] = _mm256_fmadd_ps(acc[c], a, b);
    __m256 s = acc[0];
    for (int c = 1; c < CHAINS; c++)
        s = _mm256_add_ps(s, acc[c]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0];
}

/* The same with FMAs of 16 floats, called only where the CPU has AVX-512 F. */
__attribute__((target("avx512f"))) static float fma_chains_512(long reps)
{
    __m512 acc[CHAINS];
    for (int c = 0; c < CHAINS; c++)
        acc[c] = _mm512_set1_ps(0.001f * (float)c);
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (long r = 0; r < reps; r++)
        for (int i = 0; i < INNER; i++)
            for (int c = 0; c < CHAINS; c++)
                acc[c] = _mm512_fmadd_ps(acc[c], a, b);
    __m512 s = acc[0];
    for (int c = 1; c < CHAINS; c++)
        s = _mm512_add_ps(s, acc[c]);
    return _mm512_reduce_add_ps(s);
}

int main(int argc, char **argv)
{
    const int threads = argc > 1 ? atoi(argv[1]) : 1;
    const double seconds = argc > 2 ? atof(argv[2]) : 0.5;
    if (threads < 1 || seconds <= 0) {
        fprintf(stderr, "usage: fma_peak THREADS [SECONDS]\n");
        return 2;
    }
    omp_set_num_threads(threads);
    const int wide = __builtin_cpu_supports("avx512f");
    float (*const fma_chains)(long) = wide ? fma_chains_512 : fma_chains_256;
    const double flop_per_fma = wide ? 32.0 : 16.0;
    /* Calibrate the repetitions to about the time asked for on one thread. */
    long reps = 100;
    double t = 0;
    for (;;) {
        const double t0 = omp_get_wtime();
        volatile float sink = fma_chains(reps);
        (void)sink;
        t = omp_get_wtime() - t0;
        if (t > seconds / 4)
            break;
        reps *= 2;
    }
    reps = (long)(reps * seconds / t) + 1;
    double best = 0;
    for (int trial = 0; trial < 3; trial++) {
        double sum = 0;
        const double t0 = omp_get_wtime();
#pragma omp parallel reduction(+ : sum)
        sum += fma_chains(reps);
        const double elapsed = omp_get_wtime() - t0;
        const double gflops =
            flop_per_fma * CHAINS * INNER * (double)reps * threads / elapsed / 1e9;
        if (gflops > best)
            best = gflops;
        volatile double sink = sum; /* keeps the chains' results alive */
        (void)sink;
    }
    printf("%.1f\n", best);
    return 0;
}
