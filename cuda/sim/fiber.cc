// Fibers for the CUDA simulator (fiber.h): stacks from mmap with a guard page, a 20-instruction
// x86-64 context switch, and ASan's fiber annotations so that SAN=1 sees each stack switch.
#include "fiber.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define CUDA_SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUDA_SIM_ASAN 1
#endif
#endif
#ifdef CUDA_SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "the CUDA simulator's context switch is written for x86-64 (add one, or use ucontext)"
#endif

// cuda_sim_switch(void **save_sp, void *new_sp): pushes the System V callee-saved registers,
// saves rsp, loads the other stack and pops its registers. mxcsr and the x87 control word are
// not switched: kernels do not change them.
asm(R"(
    .text
    .globl cuda_sim_switch
    .type cuda_sim_switch, @function
cuda_sim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cuda_sim_switch, .-cuda_sim_switch
)");
extern "C" void cuda_sim_switch(void **save_sp, void *new_sp);

namespace cuda_sim {

#ifdef CUDA_SIM_ASAN
static const size_t kStackBytes = 256 * 1024; // ASan's redzones make frames several times larger
#else
static const size_t kStackBytes = 64 * 1024;
#endif

void fiber_prepare(Fiber *f, void (*entry)(), int color)
{
#ifdef CUDA_SIM_ASAN
    // The previous fiber on this stack never returned from its entry: clear the poison of the
    // frames it left at the top (deeper frames returned, and unpoisoned themselves).
    const size_t top_bytes = 16 * 1024;
    __asan_unpoison_memory_region(f->stack + f->stack_bytes - top_bytes, top_bytes);
#endif
    uintptr_t top = (uintptr_t)(f->stack + f->stack_bytes) - (uintptr_t)(color % 64) * 64;
    top &= ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = nullptr;          // entry's return address: it never returns
    *--sp = (void *)entry;    // where cuda_sim_switch's ret goes (rsp % 16 == 8 there, as after a call)
    for (int i = 0; i < 6; i++)
        *--sp = nullptr;      // rbp (0 ends frame-pointer walks), rbx, r12-r15
    f->sp = sp;
    f->asan_fake_stack = nullptr;
}

void fiber_of_this_thread(Fiber *f)
{
    pthread_attr_t attr;
    void *bottom = nullptr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &bottom, &size);
        pthread_attr_destroy(&attr);
    }
    f->stack = (char *)bottom;
    f->stack_bytes = size;
}

void fiber_switch(Fiber *from, Fiber *to)
{
#ifdef CUDA_SIM_ASAN
    __sanitizer_start_switch_fiber(&from->asan_fake_stack, to->stack, to->stack_bytes);
    cuda_sim_switch(&from->sp, to->sp);
    __sanitizer_finish_switch_fiber(from->asan_fake_stack, nullptr, nullptr);
#else
    cuda_sim_switch(&from->sp, to->sp);
#endif
}

void fiber_exit(Fiber *from, Fiber *to)
{
#ifdef CUDA_SIM_ASAN
    __sanitizer_start_switch_fiber(nullptr, to->stack, to->stack_bytes);
#endif
    cuda_sim_switch(&from->sp, to->sp);
    abort(); // a finished fiber is never resumed
}

void fiber_started()
{
#ifdef CUDA_SIM_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
}

Fiber *fiber_pool(int n)
{
    static thread_local std::vector<Fiber> pool;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    while ((int)pool.size() < n) {
        char *mem = (char *)mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (mem == MAP_FAILED) {
            fprintf(stderr, "cuda sim: cannot map a %zu-byte fiber stack\n", kStackBytes);
            abort();
        }
        mprotect(mem, page, PROT_NONE); // a stack overflow faults instead of corrupting a neighbour
        Fiber f;
        f.stack = mem + page;
        f.stack_bytes = kStackBytes;
        pool.push_back(f);
    }
    return pool.data();
}

} // namespace cuda_sim
