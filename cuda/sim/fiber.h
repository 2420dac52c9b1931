// The CUDA simulator's fibers: one small stack per simulated thread, switched cooperatively on
// one OS thread by a hand-written x86-64 context switch (callee-saved registers and the stack
// pointer only, ~5 ns, against swapcontext's signal-mask system call), annotated for ASan.
#ifndef CDL_CUDA_SIM_FIBER_H
#define CDL_CUDA_SIM_FIBER_H

#include <stddef.h>

namespace cuda_sim
{

struct Fiber {
    void *sp = nullptr;     // saved stack pointer while switched out
    char *stack = nullptr;  // lowest usable byte (above the guard page)
    size_t stack_bytes = 0; // usable bytes
    void *asan_fake_stack = nullptr;
};

// The calling OS thread's own stack as a fiber, to switch back to.
void fiber_of_this_thread(Fiber *f);

// Makes `f` start `entry` (which must never return: it switches away for the last time with
// fiber_exit) the next time it is switched to. `color` offsets the stack top so that the tops
// of many fibers do not all fall on the same cache sets.
void fiber_prepare(Fiber *f, void (*entry)(), int color);

// Saves the running context into `from` and resumes `to`; returns when something switches back.
void fiber_switch(Fiber *from, Fiber *to);

// The last switch away from a fiber whose entry has finished (ASan frees its fake stack).
[[noreturn]] void fiber_exit(Fiber *from, Fiber *to);

// Called first thing in a fiber's entry: finishes the switch that started it (ASan).
void fiber_started();

// n fibers with stacks for this OS thread, kept and reused by the next launch (grown as needed).
Fiber *fiber_pool(int n);

} // namespace cuda_sim

#endif
