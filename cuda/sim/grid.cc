// Runs a simulated launch (grid.h): blocks one after another on the calling OS thread, each
// block's threads as fibers scheduled round-robin. A thread runs until it waits at a barrier or
// a warp collective, or returns; the last to arrive completes the barrier or collective and
// goes on. A round in which no thread can go on is a deadlock: on a GPU
// the block would hang or compute garbage, so the simulator aborts and says who waits where.
#include "grid.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector_functions.h>

#include <vector>

__thread cuda_sim::Thread *cuda_sim_self;
__thread uint3 cuda_sim_block_idx;
__thread uint3 cuda_sim_block_dim;
__thread uint3 cuda_sim_grid_dim;

namespace cuda_sim {

namespace {

struct Warp {
    unsigned existing;  // lanes this block has (the last warp may be partial)
    unsigned waiting;   // lanes waiting in a collective
    unsigned exited;    // lanes whose thread has returned
    unsigned mask[32];
    unsigned char op[32];
    unsigned char src[32];
    alignas(16) unsigned char value[32][kWarpValueBytes];
    alignas(16) unsigned char result[32][kWarpValueBytes];
};

struct Block {
    const Launch *launch;
    Thread *threads;
    int nthreads;
    std::vector<Warp> warps;
    Fiber scheduler;                 // the OS thread's own context
    std::vector<Fiber *> free_fibers; // stacks not held by a started thread, last freed on top
    Thread *returned;                // the thread whose return switched to the scheduler
    int barrier_arrived;
    unsigned barrier_generation;
    const char *barrier_file;
    int barrier_line;
    std::vector<unsigned char> shared; // dynamic shared memory
};

__thread Block *current_block;

const char *warp_op_name(int op)
{
    static const char *names[] = {"__syncwarp",    "__shfl_sync",   "__shfl_up_sync",
                                  "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync",
                                  "__any_sync",    "__all_sync"};
    return op >= 0 && op < (int)(sizeof names / sizeof *names) ? names[op] : "?";
}

[[noreturn]] void block_abort(const Block *b, const char *what)
{
    const uint3 bi = cuda_sim_block_idx;
    fprintf(stderr, "cuda sim: kernel %s, block (%u,%u,%u): %s\n", b->launch->kernel_name, bi.x,
            bi.y, bi.z, what);
    fflush(stderr);
    abort();
}

bool runnable(const Block *b, const Thread *t);
void start(Block *b, Thread *t);

// Switches from waiting thread t straight to the next lane of its warp that can go on (a warp
// collective costs one switch per lane), or to the scheduler when none can.
void yield(Thread *t)
{
    Block *b = current_block;
    Thread *lanes = b->threads + t->warp * 32;
    const Warp &w = b->warps[t->warp];
    const unsigned live = w.existing & ~w.exited & ~(1u << t->lane);
    // Lanes after t first, then those before it: round-robin order.
    const unsigned after = t->lane == 31 ? 0 : live & (~0u << (t->lane + 1));
    for (unsigned m : {after, live & ~after})
        for (; m; m &= m - 1) {
            Thread *next = &lanes[__builtin_ctz(m)];
            if (!runnable(b, next))
                continue;
            if (next->waiting == NOT_STARTED)
                start(b, next);
            cuda_sim_self = next;
            fiber_switch(t->fiber, next->fiber);
            return;
        }
    fiber_switch(t->fiber, &b->scheduler);
}

void thread_entry()
{
    Block *b = current_block;
    Thread *t = cuda_sim_self;
    fiber_started();
    b->launch->body(b->launch->ctx);
    t->waiting = DONE;
    b->warps[t->warp].exited |= 1u << t->lane;
    b->returned = t; // its stack is freed once the scheduler runs on its own
    fiber_exit(t->fiber, &b->scheduler);
}

// Prints every waiting thread's place, grouped, and aborts.
[[noreturn]] void report_deadlock(Block *b)
{
    int at_barrier = 0, done = 0;
    for (int i = 0; i < b->nthreads; i++) {
        at_barrier += b->threads[i].waiting == AT_BARRIER;
        done += b->threads[i].waiting == DONE;
    }
    const uint3 bi = cuda_sim_block_idx;
    fprintf(stderr, "cuda sim: kernel %s, block (%u,%u,%u): deadlock\n", b->launch->kernel_name,
            bi.x, bi.y, bi.z);
    for (size_t w = 0; w < b->warps.size(); w++) {
        const Warp &wp = b->warps[w];
        for (int lane = 0; lane < 32; lane++) {
            if (!(wp.waiting >> lane & 1))
                continue;
            const unsigned missing = wp.mask[lane] & wp.existing & ~wp.waiting;
            fprintf(stderr,
                    "  warp %zu: lane %d waits in %s(mask 0x%08x); lanes 0x%08x of the mask never "
                    "arrived (0x%08x returned)\n",
                    w, lane, warp_op_name(wp.op[lane]), wp.mask[lane], missing,
                    missing & wp.exited);
            break; // one line per warp
        }
    }
    char what[640];
    if (at_barrier)
        snprintf(what, sizeof what, "__syncthreads at %s:%d reached by %d of %d threads (%d returned)",
                 b->barrier_file, b->barrier_line, at_barrier, b->nthreads, done);
    else
        snprintf(what, sizeof what, "%d of %d threads returned, the others wait in warp collectives",
                 done, b->nthreads);
    block_abort(b, what);
}

// Whether resuming t would let it go on (a waiting thread is not switched to in vain).
bool runnable(const Block *b, const Thread *t)
{
    switch (t->waiting) {
    case AT_BARRIER:
        return b->barrier_generation != t->barrier_generation;
    case AT_WARP:
        return !(b->warps[t->warp].waiting >> t->lane & 1);
    case DONE:
        return false;
    default:
        return true;
    }
}

// Gives t a stack from the pool, to start at thread_entry.
void start(Block *b, Thread *t)
{
    t->fiber = b->free_fibers.back();
    b->free_fibers.pop_back();
    fiber_prepare(t->fiber, thread_entry, (int)b->free_fibers.size());
    t->waiting = RUNNING;
}

// Runs t (and the lanes it switches to) until one returns or none of its warp can go on. A
// thread that returns gives its stack back: threads that never wait all run on the same few
// stacks, which stay in the L1 cache.
void resume(Block *b, Thread *t)
{
    if (t->waiting == NOT_STARTED)
        start(b, t);
    cuda_sim_self = t;
    b->returned = nullptr;
    fiber_switch(&b->scheduler, t->fiber);
    if (b->returned)
        b->free_fibers.push_back(b->returned->fiber);
}

// Warp by warp: a warp's lanes run round-robin until each has returned or waits at
// __syncthreads, so that the 32 stacks of a warp's shuffles stay in the L1 cache; then the next
// warp. A round of the block in which no thread could go on is a deadlock.
void run_block(Block *b)
{
    b->barrier_arrived = 0;
    b->barrier_generation = 0;
    for (Warp &w : b->warps) {
        w.waiting = 0;
        w.exited = 0;
    }
    if (!b->shared.empty()) // uninitialised on a GPU: NaN bits make a read before a write show
        memset(b->shared.data(), 0xff, b->shared.size());
    for (int i = 0; i < b->nthreads; i++)
        b->threads[i].waiting = NOT_STARTED;
    for (bool live = true; live;) {
        bool any_ran = false;
        live = false;
        for (size_t w = 0; w < b->warps.size(); w++) {
            Thread *lanes = b->threads + w * 32;
            const Warp &warp = b->warps[w];
            for (bool warp_ran = true; warp_ran;) {
                warp_ran = false;
                for (unsigned m = warp.existing & ~warp.exited; m; m &= m - 1) {
                    Thread *t = &lanes[__builtin_ctz(m)];
                    if (!runnable(b, t))
                        continue;
                    resume(b, t);
                    warp_ran = any_ran = true;
                }
            }
            live |= (warp.existing & ~warp.exited) != 0;
        }
        if (live && !any_ran)
            report_deadlock(b);
    }
    cuda_sim_self = nullptr;
}

} // namespace

void run_grid(const Launch &launch)
{
    Block b;
    fiber_of_this_thread(&b.scheduler);
    b.launch = &launch;
    b.nthreads = (int)(launch.block.x * launch.block.y * launch.block.z);
    b.barrier_file = "";
    b.barrier_line = 0;
    b.shared.resize(launch.shared_bytes);
    b.warps.resize((b.nthreads + 31) / 32);
    for (size_t w = 0; w < b.warps.size(); w++) {
        const int lanes = b.nthreads - (int)w * 32;
        b.warps[w].existing = lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1;
    }
    Fiber *fibers = fiber_pool(b.nthreads);
    for (int i = b.nthreads - 1; i >= 0; i--)
        b.free_fibers.push_back(&fibers[i]);
    std::vector<Thread> threads(b.nthreads);
    for (int i = 0; i < b.nthreads; i++) {
        Thread &t = threads[i];
        t.thread_idx.x = i % launch.block.x;
        t.thread_idx.y = i / launch.block.x % launch.block.y;
        t.thread_idx.z = i / (launch.block.x * launch.block.y);
        t.lane = i % 32;
        t.warp = i / 32;
        t.fiber = nullptr;
    }
    b.threads = threads.data();

    Block *outer_block = current_block;
    Thread *outer_self = cuda_sim_self;
    const uint3 outer_idx = cuda_sim_block_idx, outer_dim = cuda_sim_block_dim,
                outer_grid = cuda_sim_grid_dim;
    current_block = &b;
    cuda_sim_block_dim = make_uint3(launch.block.x, launch.block.y, launch.block.z);
    cuda_sim_grid_dim = make_uint3(launch.grid.x, launch.grid.y, launch.grid.z);
    for (unsigned z = 0; z < launch.grid.z; z++)
        for (unsigned y = 0; y < launch.grid.y; y++)
            for (unsigned x = 0; x < launch.grid.x; x++) {
                cuda_sim_block_idx = make_uint3(x, y, z);
                run_block(&b);
            }
    current_block = outer_block;
    cuda_sim_self = outer_self;
    cuda_sim_block_idx = outer_idx;
    cuda_sim_block_dim = outer_dim;
    cuda_sim_grid_dim = outer_grid;
}

void syncthreads(const char *file, int line)
{
    Block *b = current_block;
    Thread *t = cuda_sim_self;
    if (b->barrier_arrived == 0) {
        b->barrier_file = file;
        b->barrier_line = line;
    } else if (line != b->barrier_line ||
               (file != b->barrier_file && strcmp(file, b->barrier_file) != 0)) {
        char what[1024];
        snprintf(what, sizeof what,
                 "a thread reaches __syncthreads at %s:%d while %d wait at the one at %s:%d",
                 file, line, b->barrier_arrived, b->barrier_file, b->barrier_line);
        block_abort(b, what);
    }
    if (++b->barrier_arrived == b->nthreads) {
        b->barrier_arrived = 0;
        b->barrier_generation++;
        return;
    }
    t->barrier_generation = b->barrier_generation;
    t->waiting = AT_BARRIER;
    while (b->barrier_generation == t->barrier_generation)
        yield(t);
    t->waiting = RUNNING;
}

namespace {

// Computes every participating lane's result; called by the lane that completes the collective.
void warp_complete(Warp *w, unsigned participants, WarpOp op)
{
    if (op == WARP_SYNC)
        return;
    if (op == WARP_BALLOT || op == WARP_ANY || op == WARP_ALL) {
        unsigned ballot = 0;
        for (int lane = 0; lane < 32; lane++)
            if (participants >> lane & 1) {
                int pred;
                memcpy(&pred, w->value[lane], sizeof pred);
                ballot |= (unsigned)(pred != 0) << lane;
            }
        const unsigned result = op == WARP_BALLOT ? ballot
                                : op == WARP_ANY  ? (unsigned)(ballot != 0)
                                                  : (unsigned)(ballot == participants);
        for (int lane = 0; lane < 32; lane++)
            if (participants >> lane & 1)
                memcpy(w->result[lane], &result, sizeof result);
        return;
    }
    for (int lane = 0; lane < 32; lane++) {
        if (!(participants >> lane & 1))
            continue;
        const unsigned src = w->src[lane];
        if (src < 32 && (participants >> src & 1))
            memcpy(w->result[lane], w->value[src], kWarpValueBytes);
        else // reading a lane outside the collective is undefined: all-ones bits, NaN for floats
            memset(w->result[lane], 0xff, kWarpValueBytes);
    }
}

} // namespace

const void *warp_collective(WarpOp op, unsigned mask, const void *value, size_t bytes,
                            unsigned src_lane)
{
    Block *b = current_block;
    Thread *t = cuda_sim_self;
    Warp *w = &b->warps[t->warp];
    const unsigned me = 1u << t->lane;
    if (!(mask & me)) {
        char what[160];
        snprintf(what, sizeof what, "%s: lane %u calls it with a mask (0x%08x) that leaves it out",
                 warp_op_name(op), t->lane, mask);
        block_abort(b, what);
    }
    w->mask[t->lane] = mask;
    w->op[t->lane] = (unsigned char)op;
    w->src[t->lane] = (unsigned char)(src_lane < 32 ? src_lane : 255);
    if (bytes == kWarpValueBytes) // shuffle() pads every value to 16 bytes: one fixed-size copy
        memcpy(w->value[t->lane], value, kWarpValueBytes);
    else if (bytes)
        memcpy(w->value[t->lane], value, bytes);
    w->waiting |= me;
    const unsigned participants = mask & w->existing;
    if ((w->waiting & participants) == participants) {
        bool uniform = true;
        for (int lane = 0; lane < 32; lane++)
            if ((participants >> lane & 1) && (w->mask[lane] != mask || w->op[lane] != op))
                uniform = false;
        if (uniform) {
            warp_complete(w, participants, op);
            w->waiting &= ~participants;
            return w->result[t->lane];
        }
    }
    t->waiting = AT_WARP;
    while (w->waiting & me)
        yield(t);
    t->waiting = RUNNING;
    return w->result[t->lane];
}

void *dynamic_shared()
{
    return current_block->shared.data();
}

} // namespace cuda_sim
