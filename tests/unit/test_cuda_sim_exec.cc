/* The CUDA simulator's execution model (cuda/sim/): barriers, warp shuffles and votes against
 * CUDA's definitions, __shared__ per block, dynamic shared memory, atomics across blocks, the
 * built-in indices of 3-D launches, launch errors, and the aborts that name a __syncthreads
 * not reached by all threads or a warp collective a lane left. Prints the time per million
 * threads (information, never asserted). */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cuda_sim_test.h"

/* Each phase every thread writes its slot from its neighbours' values of the phase before: a
 * thread that ran past a barrier early would read a value of the wrong phase. */
__global__ void neighbour_phases_kernel(int *out, int phases)
{
    __shared__ int s[256];
    const int t = threadIdx.x, n = blockDim.x;
    s[t] = t;
    __syncthreads();
    for (int p = 0; p < phases; p++) {
        const int v = s[(t + 1) % n] + 2 * s[(t + n - 1) % n];
        __syncthreads();
        s[t] = v % 1000003;
        __syncthreads();
    }
    out[t] = s[t];
}

static void test_barrier_orders_phases(void)
{
    const int n = 256, phases = 5;
    int *out;
    CHECK_CUDA(cudaMalloc((void **)&out, n * sizeof *out));
    CUDA_LAUNCH(neighbour_phases_kernel, 1, n, 0, 0, out, phases);
    CHECK_CUDA(cuda_launch_error());
    std::vector<int> s(n), next(n);
    for (int t = 0; t < n; t++)
        s[t] = t;
    for (int p = 0; p < phases; p++) {
        for (int t = 0; t < n; t++)
            next[t] = (s[(t + 1) % n] + 2 * s[(t + n - 1) % n]) % 1000003;
        s = next;
    }
    int wrong = 0;
    for (int t = 0; t < n; t++)
        wrong += out[t] != s[t];
    CHECK(wrong == 0);
    cudaFree(out);
}

enum { SHFL_IDX, SHFL_UP, SHFL_DOWN, SHFL_XOR };

/* out[t] = the shuffle of value 1000 * warp + lane, by op with offset k and width. */
__global__ void shuffle_kernel(int *out, int op, int k, int width)
{
    const int t = threadIdx.x, v = 1000 * (t / 32) + t % 32;
    int r = 0;
    if (op == SHFL_IDX)
        r = __shfl_sync(0xffffffffu, v, k, width);
    else if (op == SHFL_UP)
        r = __shfl_up_sync(0xffffffffu, v, k, width);
    else if (op == SHFL_DOWN)
        r = __shfl_down_sync(0xffffffffu, v, k, width);
    else
        r = __shfl_xor_sync(0xffffffffu, v, k, width);
    out[t] = r;
}

/* CUDA's definitions (Programming Guide, warp shuffle functions): lanes form segments of width;
 * idx reads lane k mod width of its segment; up reads lane - k and down lane + k, keeping its
 * own value where that leaves the segment; xor reads lane ^ k, keeping its own value where that
 * lies in a later segment. */
static int shuffle_expected(int op, int lane, int k, int width)
{
    const int first = lane / width * width, last = first + width - 1;
    int src = lane;
    if (op == SHFL_IDX)
        src = first + k % width;
    else if (op == SHFL_UP)
        src = lane - k >= first ? lane - k : lane;
    else if (op == SHFL_DOWN)
        src = lane + k <= last ? lane + k : lane;
    else
        src = (lane ^ k) <= last ? lane ^ k : lane;
    return src;
}

static void test_shuffles_match_definition(void)
{
    const int n = 64;
    int *out;
    CHECK_CUDA(cudaMalloc((void **)&out, n * sizeof *out));
    const int widths[] = {32, 16, 8, 2};
    const int offsets[] = {0, 1, 3, 5, 16, 31};
    int wrong = 0, cases = 0;
    for (int op = SHFL_IDX; op <= SHFL_XOR; op++)
        for (int width : widths)
            for (int k : offsets) {
                CUDA_LAUNCH(shuffle_kernel, 1, n, 0, 0, out, op, k, width);
                for (int t = 0; t < n; t++) {
                    const int want = 1000 * (t / 32) + shuffle_expected(op, t % 32, k, width);
                    if (out[t] != want && wrong++ < 5)
                        fprintf(stderr, "FAIL shuffle op %d width %d k %d lane %d: %d, want %d\n",
                                op, width, k, t, out[t], want);
                }
                cases++;
            }
    CHECK(cases == 4 * 4 * 6);
    CHECK(wrong == 0);
    cudaFree(out);
}

/* Shuffles move any type of up to 16 bytes: a double and a struct. */
struct Pair {
    float a;
    int b;
};

__global__ void shuffle_types_kernel(double *d, Pair *p)
{
    const int t = threadIdx.x;
    d[t] = __shfl_down_sync(0xffffffffu, 0.5 * t, 1);
    p[t] = __shfl_xor_sync(0xffffffffu, Pair{1.5f * t, -t}, 3);
}

static void test_shuffles_move_any_type(void)
{
    double *d;
    Pair *p;
    CHECK_CUDA(cudaMalloc((void **)&d, 32 * sizeof *d));
    CHECK_CUDA(cudaMalloc((void **)&p, 32 * sizeof *p));
    CUDA_LAUNCH(shuffle_types_kernel, 1, 32, 0, 0, d, p);
    int wrong = 0;
    for (int t = 0; t < 32; t++) {
        wrong += d[t] != 0.5 * (t < 31 ? t + 1 : t);
        wrong += p[t].a != 1.5f * (t ^ 3) || p[t].b != -(t ^ 3);
    }
    CHECK(wrong == 0);
    cudaFree(d);
    cudaFree(p);
}

/* votes[3 * t + 0..2]: ballot, any, all of predicates that differ per test. */
__global__ void vote_kernel(unsigned *votes, int which)
{
    const int lane = threadIdx.x % 32;
    const int pred = which == 0 ? lane % 3 == 0 : which == 1 ? 0 : 1;
    votes[3 * threadIdx.x + 0] = __ballot_sync(0xffffffffu, pred);
    votes[3 * threadIdx.x + 1] = __any_sync(0xffffffffu, pred);
    votes[3 * threadIdx.x + 2] = __all_sync(0xffffffffu, pred);
}

static void test_votes_match_definition(void)
{
    unsigned *v;
    CHECK_CUDA(cudaMalloc((void **)&v, 3 * 64 * sizeof *v));
    const unsigned ballots[] = {0x49249249u, 0u, 0xffffffffu};
    const unsigned any[] = {1, 0, 1}, all[] = {0, 0, 1};
    for (int which = 0; which < 3; which++) {
        CUDA_LAUNCH(vote_kernel, 1, 64, 0, 0, v, which);
        int wrong = 0;
        for (int t = 0; t < 64; t++)
            wrong += v[3 * t] != ballots[which] || v[3 * t + 1] != any[which] ||
                     v[3 * t + 2] != all[which];
        CHECK(wrong == 0);
    }
    cudaFree(v);
}

/* A partial mask: the lower half-warp votes and shuffles among itself while the upper half does
 * the same among itself. */
__global__ void half_warp_kernel(unsigned *out)
{
    const int lane = threadIdx.x;
    const unsigned mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
    const unsigned ballot = __ballot_sync(mask, lane % 2);
    out[lane] = ballot;
    out[32 + lane] = __shfl_xor_sync(mask, (unsigned)lane, 8);
}

static void test_partial_masks_form_separate_groups(void)
{
    unsigned *out;
    CHECK_CUDA(cudaMalloc((void **)&out, 64 * sizeof *out));
    CUDA_LAUNCH(half_warp_kernel, 1, 32, 0, 0, out);
    int wrong = 0;
    for (int lane = 0; lane < 32; lane++) {
        wrong += out[lane] != (lane < 16 ? 0x0000aaaau : 0xaaaa0000u);
        wrong += out[32 + lane] != (unsigned)(lane ^ 8);
    }
    CHECK(wrong == 0);
    cudaFree(out);
}

/* Every block sums its own block index through static shared memory. */
__global__ void shared_per_block_kernel(int *out)
{
    __shared__ int s[128];
    s[threadIdx.x] = blockIdx.x + threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) {
        int sum = 0;
        for (int i = 0; i < (int)blockDim.x; i++)
            sum += s[i];
        out[blockIdx.x] = sum;
    }
}

static void test_shared_memory_is_per_block(void)
{
    const int blocks = 10, n = 128;
    int *out;
    CHECK_CUDA(cudaMalloc((void **)&out, blocks * sizeof *out));
    CUDA_LAUNCH(shared_per_block_kernel, blocks, n, 0, 0, out);
    for (int b = 0; b < blocks; b++)
        CHECK(out[b] == n * b + n * (n - 1) / 2);
    cudaFree(out);
}

/* Reverses each block's slice through dynamic shared memory of blockDim.x floats. */
__global__ void reverse_kernel(float *x)
{
    CUDA_DYNAMIC_SHARED(float, s);
    const int t = threadIdx.x, n = blockDim.x;
    s[t] = x[blockIdx.x * n + t];
    __syncthreads();
    x[blockIdx.x * n + t] = s[n - 1 - t];
}

static void test_dynamic_shared_memory(void)
{
    const int blocks = 3, n = 96;
    float *x;
    CHECK_CUDA(cudaMalloc((void **)&x, blocks * n * sizeof *x));
    for (int i = 0; i < blocks * n; i++)
        x[i] = (float)i;
    CUDA_LAUNCH(reverse_kernel, blocks, n, n * sizeof(float), 0, x);
    CHECK_CUDA(cuda_launch_error());
    int wrong = 0;
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < n; t++)
            wrong += x[b * n + t] != (float)(b * n + n - 1 - t);
    CHECK(wrong == 0);
    /* Over 48 KiB only after cudaFuncSetAttribute, as on a GPU. */
    CUDA_LAUNCH(reverse_kernel, 1, 1, 64 * 1024, 0, x);
    CHECK_STATUS(cuda_launch_error(), cudaErrorInvalidValue);
    CHECK_CUDA(cudaFuncSetAttribute(reverse_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    64 * 1024));
    CUDA_LAUNCH(reverse_kernel, 1, 1, 64 * 1024, 0, x);
    CHECK_CUDA(cuda_launch_error());
    cudaFree(x);
}

__global__ void atomics_kernel(int *count, unsigned *max, float *fsum, int *cas_count,
                               unsigned long long *wide)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(count, 1);
    atomicMax(max, (unsigned)(i * 7919 % 10007));
    atomicAdd(fsum, 0.5f);
    int old = *cas_count, seen;
    while ((seen = atomicCAS(cas_count, old, old + 2)) != old)
        old = seen;
    atomicAdd(wide, 1ull << 33);
}

static void test_atomics_across_blocks(void)
{
    const int blocks = 40, n = 64, total = blocks * n;
    int *count, *cas_count;
    unsigned *max;
    float *fsum;
    unsigned long long *wide;
    CHECK_CUDA(cudaMalloc((void **)&count, sizeof *count));
    CHECK_CUDA(cudaMalloc((void **)&cas_count, sizeof *cas_count));
    CHECK_CUDA(cudaMalloc((void **)&max, sizeof *max));
    CHECK_CUDA(cudaMalloc((void **)&fsum, sizeof *fsum));
    CHECK_CUDA(cudaMalloc((void **)&wide, sizeof *wide));
    CHECK_CUDA(cudaMemset(count, 0, sizeof *count));
    CHECK_CUDA(cudaMemset(cas_count, 0, sizeof *cas_count));
    CHECK_CUDA(cudaMemset(max, 0, sizeof *max));
    CHECK_CUDA(cudaMemset(fsum, 0, sizeof *fsum));
    CHECK_CUDA(cudaMemset(wide, 0, sizeof *wide));
    CUDA_LAUNCH(atomics_kernel, blocks, n, 0, 0, count, max, fsum, cas_count, wide);
    unsigned want_max = 0;
    for (int i = 0; i < total; i++)
        want_max = i * 7919 % 10007 > (int)want_max ? i * 7919 % 10007 : want_max;
    CHECK(*count == total);
    CHECK(*max == want_max);
    CHECK(*fsum == 0.5f * total); /* halves add exactly below 2^24 */
    CHECK(*cas_count == 2 * total);
    CHECK(*wide == (unsigned long long)total << 33);
    cudaFree(count);
    cudaFree(cas_count);
    cudaFree(max);
    cudaFree(fsum);
    cudaFree(wide);
}

/* Each thread of a 3-D launch writes its global linear index once. */
__global__ void indices_kernel(int *hits)
{
    const int bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    atomicAdd(&hits[bx * blockDim.x * blockDim.y * blockDim.z + tx], 1);
}

static void test_3d_indices_cover_the_grid_once(void)
{
    const dim3 grid(3, 2, 2), block(8, 4, 2);
    const int total = 3 * 2 * 2 * 8 * 4 * 2;
    int *hits;
    CHECK_CUDA(cudaMalloc((void **)&hits, total * sizeof *hits));
    CHECK_CUDA(cudaMemset(hits, 0, total * sizeof *hits));
    CUDA_LAUNCH(indices_kernel, grid, block, 0, 0, hits);
    int wrong = 0;
    for (int i = 0; i < total; i++)
        wrong += hits[i] != 1;
    CHECK(wrong == 0);
    cudaFree(hits);
}

__global__ void empty_kernel(int *) {}

static void test_bad_configurations_are_launch_errors(void)
{
    CUDA_LAUNCH(empty_kernel, 1, 1025, 0, 0, nullptr);
    CHECK_STATUS(cuda_launch_error(), cudaErrorInvalidConfiguration);
    CHECK_STATUS(cuda_launch_error(), cudaSuccess); /* reading it cleared it */
    CUDA_LAUNCH(empty_kernel, 0, 32, 0, 0, nullptr);
    CHECK_STATUS(cuda_launch_error(), cudaErrorInvalidConfiguration);
    CUDA_LAUNCH(empty_kernel, 1, dim3(1, 1, 65), 0, 0, nullptr);
    CHECK_STATUS(cuda_launch_error(), cudaErrorInvalidConfiguration);
}

/* Runs fn in a child process; returns its wait status, and its stderr in *err. */
static int run_in_child(void (*fn)(void), std::string *err)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn();
        _exit(0);
    }
    close(fds[1]);
    char buf[4096];
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof buf)) > 0)
        err->append(buf, (size_t)got);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

static bool child_aborts(void (*fn)(void), std::string *err)
{
    const int status = run_in_child(fn, err);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

/* The bug the simulator exists to catch: a barrier behind an early return. */
__global__ void early_return_kernel(float *x)
{
    if (threadIdx.x >= 224)
        return;
    x[threadIdx.x] = 1.0f;
    __syncthreads();
}

static void launch_early_return(void)
{
    float *x;
    cudaMalloc((void **)&x, 256 * sizeof *x);
    CUDA_LAUNCH(early_return_kernel, dim3(2, 3), 256, 0, 0, x);
}

__global__ void split_barrier_kernel(float *x)
{
    if (threadIdx.x % 2)
        __syncthreads();
    else
        __syncthreads();
    x[threadIdx.x] = 0.0f;
}

static void launch_split_barrier(void)
{
    float *x;
    cudaMalloc((void **)&x, 64 * sizeof *x);
    CUDA_LAUNCH(split_barrier_kernel, 1, 64, 0, 0, x);
}

__global__ void half_warp_returns_kernel(float *x)
{
    if (threadIdx.x < 16)
        return;
    x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

static void launch_half_warp_returns(void)
{
    float *x;
    cudaMalloc((void **)&x, 32 * sizeof *x);
    CUDA_LAUNCH(half_warp_returns_kernel, 1, 32, 0, 0, x);
}

static void test_divergent_barrier_aborts_with_counts(void)
{
    std::string err;
    CHECK(child_aborts(launch_early_return, &err));
    CHECK_CONTAINS(err.c_str(), "kernel early_return_kernel, block (0,0,0)");
    CHECK_CONTAINS(err.c_str(), "reached by 224 of 256 threads (32 returned)");
    CHECK_CONTAINS(err.c_str(), "test_cuda_sim_exec.cc:");
}

static void test_barriers_at_different_lines_abort(void)
{
    std::string err;
    CHECK(child_aborts(launch_split_barrier, &err));
    CHECK_CONTAINS(err.c_str(), "kernel split_barrier_kernel");
    CHECK_CONTAINS(err.c_str(), "while 1 wait at the one at");
}

static void test_lane_missing_from_shuffle_aborts(void)
{
    std::string err;
    CHECK(child_aborts(launch_half_warp_returns, &err));
    CHECK_CONTAINS(err.c_str(), "kernel half_warp_returns_kernel, block (0,0,0): deadlock");
    CHECK_CONTAINS(err.c_str(),
                   "lane 16 waits in __shfl_xor_sync(mask 0xffffffff); lanes 0x0000ffff of the "
                   "mask never arrived (0x0000ffff returned)");
}

#if defined(__SANITIZE_ADDRESS__)
/* Under SAN=1: a kernel reading one past its buffer is caught by ASan, with the kernel on the
 * stack, as on a GPU compute-sanitizer would. */
__global__ void read_past_end_kernel(float *out, const float *in, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i % n] = in[i]; /* i reaches n: the planted bug */
}

static void launch_read_past_end(void)
{
    const int n = 100;
    float *in, *out;
    cudaMalloc((void **)&in, n * sizeof *in);
    cudaMalloc((void **)&out, n * sizeof *out);
    CUDA_LAUNCH(read_past_end_kernel, 1, n + 1, 0, 0, out, in, n);
}

static void test_asan_catches_read_past_end(void)
{
    std::string err;
    const int status = run_in_child(launch_read_past_end, &err);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK_CONTAINS(err.c_str(), "heap-buffer-overflow");
    CHECK_CONTAINS(err.c_str(), "read_past_end_kernel");
}
#endif

/* Timing, printed only: a kernel without barriers, and one block reduction per thread (two
 * barriers and ten shuffles). */
__global__ void axpy_kernel(float *y, const float *x, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] += 2.0f * x[i];
}

__global__ void block_sum_kernel(float *out, const float *x)
{
    __shared__ float warp_sums[32];
    float v = x[blockIdx.x * blockDim.x + threadIdx.x];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0)
        out[blockIdx.x] = v;
    __syncthreads();
}

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void print_timing(void)
{
    const int n = 1 << 20, block = 256;
    float *x, *y;
    CHECK_CUDA(cudaMalloc((void **)&x, n * sizeof *x));
    CHECK_CUDA(cudaMalloc((void **)&y, n * sizeof *y));
    CHECK_CUDA(cudaMemset(x, 0, n * sizeof *x));
    CHECK_CUDA(cudaMemset(y, 0, n * sizeof *y));
    CUDA_LAUNCH(axpy_kernel, n / block, block, 0, 0, y, x, n); /* maps the stacks */
    double t = cpu_ms();
    CUDA_LAUNCH(axpy_kernel, n / block, block, 0, 0, y, x, n);
    const double axpy_ms = cpu_ms() - t;
    t = cpu_ms();
    CUDA_LAUNCH(block_sum_kernel, n / block, block, 0, 0, y, x);
    const double sum_ms = cpu_ms() - t;
    printf("cuda sim: %.0f ms CPU per million threads without barriers, %.0f ms with a block "
           "reduction (2 barriers, 10 shuffles)\n",
           axpy_ms, sum_ms);
    cudaFree(x);
    cudaFree(y);
}

int main(void)
{
    test_barrier_orders_phases();
    test_shuffles_match_definition();
    test_shuffles_move_any_type();
    test_votes_match_definition();
    test_partial_masks_form_separate_groups();
    test_shared_memory_is_per_block();
    test_dynamic_shared_memory();
    test_atomics_across_blocks();
    test_3d_indices_cover_the_grid_once();
    test_bad_configurations_are_launch_errors();
    test_divergent_barrier_aborts_with_counts();
    test_barriers_at_different_lines_abort();
    test_lane_missing_from_shuffle_aborts();
#if defined(__SANITIZE_ADDRESS__)
    test_asan_catches_read_past_end();
#endif
    print_timing();
    return check_report("test_cuda_sim_exec");
}
