/* How cdl's commands use OpenMP threads: when none are named, OMP_NUM_THREADS when the user set
 * it, else the usable cores less those other processes are running on right now; and how those
 * threads compute (OpenBLAS's kernels, subnormals flushed). */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backend/cpu/blas_kernels.h"
#include "backend/cpu/subnormals.h"
#include "cdl.h"

enum { LOAD_SAMPLES = 8, LOAD_SAMPLE_GAP_US = 2000 };

/* The count of runnable tasks on the machine now, from /proc/loadavg's "R/T" field (it counts
 * the reading thread itself); -1 when unreadable. */
static int runnable_now(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return -1;
    double l1, l5, l15;
    int running = -1, total;
    if (fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total) != 5)
        running = -1;
    fclose(f);
    return running;
}

int cdl_threads_from_load(int cores_usable, int cores_online, double others_running)
{
    const double free_cores = cores_online - others_running;
    int n = (int)floor(free_cores + 0.5);
    if (n > cores_usable)
        n = cores_usable;
    return n < 1 ? 1 : n;
}

int cdl_threads_default(void)
{
    const char *env = getenv("OMP_NUM_THREADS");
    if (env && *env) {
        char *end;
        const long n = strtol(env, &end, 10);
        if (end != env && (*end == '\0' || *end == ',') && n > 0 && n <= 1024)
            return (int)n;
    }
    const int usable = omp_get_num_procs();
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    double sum = 0;
    for (int i = 0; i < LOAD_SAMPLES; i++) {
        const int r = runnable_now();
        if (r < 1)
            return usable;
        sum += r - 1; /* less this thread */
        if (i + 1 < LOAD_SAMPLES)
            nanosleep(&(struct timespec){0, LOAD_SAMPLE_GAP_US * 1000L}, NULL);
    }
    return cdl_threads_from_load(usable, online > 0 ? (int)online : usable, sum / LOAD_SAMPLES);
}

int cdl_set_threads(int threads)
{
    blas_choose_kernels();
    if (threads <= 0)
        threads = cdl_threads_default();
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    subnormals_flush();
    return threads;
}
