/* The default thread count (cdl_threads.c): the free cores within the usable ones, at least 1,
 * and OMP_NUM_THREADS when the user set it. */
#include <omp.h>
#include <stdlib.h>

#include "api/cdl.h"
#include "check.h"

static void test_threads_follow_the_free_cores(void)
{
    CHECK(cdl_threads_from_load(2, 2, 0.0) == 2);  /* a quiet machine: every core */
    CHECK(cdl_threads_from_load(2, 2, 0.4) == 2);  /* a short burst elsewhere */
    CHECK(cdl_threads_from_load(2, 2, 1.0) == 1);  /* a busy loop holds one core */
    CHECK(cdl_threads_from_load(2, 2, 11.0) == 1); /* overloaded: still one */
    CHECK(cdl_threads_from_load(8, 8, 2.6) == 5);
    CHECK(cdl_threads_from_load(2, 8, 1.0) == 2); /* load elsewhere than our 2 cores */
}

static void test_the_environment_and_an_explicit_count_win(void)
{
    setenv("OMP_NUM_THREADS", "3", 1);
    CHECK(cdl_threads_default() == 3);
    setenv("OMP_NUM_THREADS", "lots", 1); /* not a count: the load decides */
    const int n = cdl_threads_default();
    CHECK(n >= 1 && n <= omp_get_num_procs());
    CHECK(cdl_set_threads(1) == 1 && omp_get_max_threads() == 1);
    unsetenv("OMP_NUM_THREADS");
}

int main(void)
{
    test_threads_follow_the_free_cores();
    test_the_environment_and_an_explicit_count_win();
    return check_report("test_threads");
}
