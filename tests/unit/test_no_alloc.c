/* The training step allocates nothing: malloc, calloc and realloc are counted (through
 * glibc's __libc_* entry points) across trainer_step calls after two warm-up steps, which
 * let OpenMP and OpenBLAS set up their own buffers. Skipped under AddressSanitizer, which
 * owns malloc. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "train/trainer.h"

#ifndef __SANITIZE_ADDRESS__
extern void *__libc_malloc(size_t bytes);
extern void *__libc_calloc(size_t count, size_t bytes);
extern void *__libc_realloc(void *p, size_t bytes);

static int counting;
static long allocations;

void *malloc(size_t bytes)
{
    if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
        __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
    return __libc_malloc(bytes);
}

void *calloc(size_t count, size_t bytes)
{
    if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
        __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
    return __libc_calloc(count, bytes);
}

void *realloc(void *p, size_t bytes)
{
    if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
        __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
    return __libc_realloc(p, bytes);
}

static const char *cfg_text =
    "[net]\nbatch=8\nsubdivisions=2\nwidth=8\nheight=8\nchannels=3\nmomentum=0.9\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\nactivation=mish\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\ngroups=2\nactivation=leaky\n"
    "[shortcut]\nfrom=-2\n[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=2\nsize=1\nactivation=relu\n[route]\nlayers=-1,-2\n"
    "[dropout]\nprobability=0.3\n[connected]\noutput=5\nbatch_normalize=1\nactivation=linear\n"
    "[softmax]\n";

static void test_training_step_allocates_nothing(void)
{
    Net net;
    Error e = {0};
    if (net_build_from_text(&net, cfg_text, "t.cfg", 1, 3, &e) || net_resize(&net, 4, 0, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return;
    }
    Dataset data = {.n = 8, .c = 3, .h = 8, .w = 8, .scale = 1.0f / 255, .classes = 5};
    data.pixels = malloc(8 * 3 * 64);
    data.labels = malloc(8 * sizeof *data.labels);
    int order[8];
    for (int i = 0; i < 8 * 3 * 64; i++)
        data.pixels[i] = (uint8_t)(i * 37);
    for (int i = 0; i < 8; i++) {
        data.labels[i] = i % 5;
        order[i] = 7 - i;
    }
    float *velocity = calloc(net.n_params, sizeof *velocity);
    net.train = 1;
    for (int step = 0; step < 2; step++)
        trainer_step(&net, velocity, &data, order, 0.01f);
    __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
    for (int step = 0; step < 3; step++)
        trainer_step(&net, velocity, &data, order, 0.01f);
    __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
    CHECK(allocations == 0);
    free(velocity);
    dataset_free(&data);
    net_free(&net);
}
#endif

int main(void)
{
#ifdef __SANITIZE_ADDRESS__
    printf("test_no_alloc: skipped (AddressSanitizer replaces malloc)\n");
    return 0;
#else
    test_training_step_allocates_nothing();
    return check_report("test_no_alloc");
#endif
}
