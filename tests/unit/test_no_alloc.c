/* The training step allocates nothing: malloc, calloc and realloc are counted (through
 * glibc's __libc_* entry points) across trainer_step calls after two warm-up steps, which
 * let OpenMP and OpenBLAS set up their own buffers (the net uses AdamW with gradient clipping,
 * an EMA and label smoothing: every part of the step; once more with recompute_every, whose
 * backward recomputes segments; and in precision=bf16, whose layers round their operands into
 * memory taken at resize), then again with a profiler recording a trace, and across the
 * steps of train_run fed by a data loader or by text windows (every sequence layer family;
 * there OpenBLAS's own allocations inside sgemm, which its 0.3.21 makes for some matrix shapes,
 * are counted apart and only reported, as are oneDNN's inside dnnl_primitive_execute
 * (engine=dnnl convolutions: its 2.6 C API copies each call's arguments into a
 * std::unordered_map, a few small nodes per call; its data buffers, the scratchpads, are the
 * net's); and int8 inference forwards (`cdl quantize`'s layers). Skipped under
 * AddressSanitizer, which owns malloc. */
#include <dlfcn.h>
#include <execinfo.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/dnnl_conv.h"
#include "backend/cpu/net_quant.h"
#include "check.h"
#include "model/model_io.h"
#include "train/net_keys.h"
#include "train/trainer.h"
#include "util/profiler.h"

#ifndef __SANITIZE_ADDRESS__
extern void *__libc_malloc(size_t bytes);
extern void *__libc_calloc(size_t count, size_t bytes);
extern void *__libc_realloc(void *p, size_t bytes);

static int counting;
static long allocations;
/* Allocations made by OpenBLAS itself inside an sgemm call (0.3.21's small-matrix kernels and
 * its threaded driver allocate per call for some shapes): counted apart, reported, not ours. */
static long blas_allocations;
/* Allocations made inside oneDNN's dnnl_primitive_execute (operator new for its argument map). */
static long dnnl_allocations;

static int in_library(void *address, const char *name)
{
    Dl_info where;
    return dladdr(address, &where) && where.dli_fname && strstr(where.dli_fname, name);
}

/* 1 when libdnnl is on the stack of an allocation made from libstdc++ (operator new). */
static int from_dnnl(void)
{
    static __thread int walking; /* backtrace may allocate */
    if (walking)
        return 0;
    walking = 1;
    void *frames[8];
    const int n = backtrace(frames, 8);
    int dnnl = 0;
    for (int i = 0; i < n && !dnnl; i++)
        dnnl = in_library(frames[i], "libdnnl");
    walking = 0;
    return dnnl;
}

/* Counts one allocation made from the code at caller. */
static void count_allocation(void *caller)
{
    if (!__atomic_load_n(&counting, __ATOMIC_RELAXED))
        return;
    const int blas = in_library(caller, "libopenblas");
    const int dnnl = !blas && in_library(caller, "libstdc++") && from_dnnl();
    __atomic_add_fetch(blas   ? &blas_allocations
                       : dnnl ? &dnnl_allocations
                              : &allocations,
                       1, __ATOMIC_RELAXED);
}

void *malloc(size_t bytes)
{
    count_allocation(__builtin_return_address(0));
    return __libc_malloc(bytes);
}

void *calloc(size_t count, size_t bytes)
{
    count_allocation(__builtin_return_address(0));
    return __libc_calloc(count, bytes);
}

void *realloc(void *p, size_t bytes)
{
    count_allocation(__builtin_return_address(0));
    return __libc_realloc(p, bytes);
}

static const char *cfg_text =
    "[net]\nbatch=8\nsubdivisions=2\nwidth=8\nheight=8\nchannels=3\noptimizer=adamw\n"
    "clip_grad_norm=0.1\nema=0.9\npolicy=cosine\nwarmup=2\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\nactivation=mish\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\ngroups=2\nactivation=leaky\n"
    "[shortcut]\nfrom=-2\n[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=2\nsize=1\nactivation=relu\n[route]\nlayers=-1,-2\n"
    "[dropout]\nprobability=0.3\n[connected]\noutput=5\nbatch_normalize=1\nactivation=linear\n"
    "[softmax]\nlabel_smoothing=0.1\n";

/* engine=dnnl's training in nChw8c between the layers (16 channels): convolutions, batch norm,
 * max pooling, a shortcut, the average pooling. */
static const char *blocked_cfg_text =
    "[net]\nbatch=8\nsubdivisions=2\nwidth=8\nheight=8\nchannels=3\n"
    "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=linear\n"
    "[shortcut]\nfrom=-2\nactivation=relu\n[avgpool]\n[connected]\noutput=5\nactivation=linear\n"
    "[softmax]\n";

/* net_keys: more [net] keys (recompute_every: segments recomputed in backward). */
/* Two untimed training steps of net on data (in order), then three counted ones: cdl's
 * allocations in those three land in allocations (dnnl_allocations: oneDNN's own). */
static void count_training_steps(Net *net, Optimizer *opt, const Dataset *data, const int *order)
{
    net->train = 1;
    for (int step = 0; step < 2; step++)
        trainer_step(net, opt, data, order, 0.01f);
    allocations = dnnl_allocations = 0;
    __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
    for (int step = 0; step < 3; step++)
        trainer_step(net, opt, data, order, 0.01f);
    __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
}

static void test_training_step_allocates_nothing(const char *net_keys, const char *body)
{
    Net net;
    Error e = {0};
    char text[1024];
    snprintf(text, sizeof text, "[net]\n%s\n%s", net_keys, body + strlen("[net]\n"));
    if (net_build_from_text(&net, text, "t.cfg", 1, 3, &e) || net_resize(&net, 4, 0, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return;
    }
    Dataset data = {.n = 8, .c = 3, .h = 8, .w = 8, .max_value = 255, .classes = 5};
    data.pixels = malloc(8 * 3 * 64);
    data.labels = malloc(8 * sizeof *data.labels);
    int order[8];
    for (int i = 0; i < 8 * 3 * 64; i++)
        data.pixels[i] = (uint8_t)(i * 37);
    for (int i = 0; i < 8; i++) {
        data.labels[i] = i % 5;
        order[i] = 7 - i;
    }
    Optimizer opt;
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    count_training_steps(&net, &opt, &data, order);
    CHECK(allocations == 0);
    printf(
        "test_no_alloc: %s: %ld allocations by cdl, %ld inside dnnl_primitive_execute per step\n",
        net_keys[0] ? net_keys : "no extra keys", allocations, dnnl_allocations / 3);
    /* Profiling and tracing record into buffers allocated up front. */
    Profiler prof;
    CHECK(profiler_init(&prof, net.n_layers, 1000, &e) == CDL_OK);
    prof.tracing = 1;
    net.profiler = &prof;
    __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
    for (int step = 0; step < 3; step++)
        trainer_step(&net, &opt, &data, order, 0.01f);
    __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
    CHECK(allocations == 0 && prof.n_events == 3 * 2 * 2 * (size_t)net.n_layers);
    net.profiler = NULL;
    profiler_free(&prof);
    optimizer_free(&opt);
    dataset_free(&data);
    net_free(&net);
}

/* Counts allocations between the end of one step and the end of the next, from the third step
 * on, except across epoch ends (evaluation and checkpoints may allocate). */
static void count_step_allocations(void *ctx, const StepReport *r)
{
    long *measured = ctx;
    if (r->step >= 3)
        *measured += __atomic_exchange_n(&allocations, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&counting, r->step >= 2 && r->step_in_epoch < r->steps_per_epoch,
                     __ATOMIC_RELAXED);
}

static void test_loader_fed_training_steps_allocate_nothing(void)
{
    for (int workers = 0; workers <= 2; workers += 2) {
        Net net;
        Error e = {0};
        if (net_build_from_text(&net, cfg_text, "t.cfg", 1, 3, &e) || net_resize(&net, 4, 0, &e)) {
            fprintf(stderr, "FAIL setup: %s\n", e.msg);
            check_failures++;
            return;
        }
        Dataset data = {.n = 40, .c = 3, .h = 8, .w = 8, .max_value = 255, .classes = 5};
        data.pixels = malloc(40 * 3 * 64);
        data.labels = malloc(40 * sizeof *data.labels);
        for (int i = 0; i < 40 * 3 * 64; i++)
            data.pixels[i] = (uint8_t)(i * 37);
        for (int i = 0; i < 40; i++)
            data.labels[i] = i % 5;
        SampleSource src;
        source_from_dataset(&src, &data, &e);
        /* In-memory samples without augmentation: copied, whatever the worker count. */
        LoaderOptions opt = {4, workers, 2 * workers, 3, 1, 1, 0, 0, 0, 0, NULL, NULL};
        Loader *loader;
        AugmentConfig aug;
        CHECK(net_augment(&net, &aug, &e) == CDL_OK);
        CHECK(loader_open(&loader, &src, &aug, &opt, &e) == CDL_OK);
        Optimizer optimizer;
        CHECK(optimizer_init(&optimizer, &net, &e) == CDL_OK);
        char out[] = "/tmp/cdl_no_alloc_XXXXXX";
        close(mkstemp(out));
        ModelMeta meta = {.seed = 3};
        TrainPlan plan = {.epochs = 2, .out_path = out, .save_checkpoint = model_save_checkpoint};
        const TrainSource train = train_source_loader(loader);
        long measured = 0;
        TrainCallbacks cb = {count_step_allocations, NULL, &measured};
        allocations = 0;
        CHECK(train_run(&net, &optimizer, &train, NULL, &plan, &meta, &cb, &e) == CDL_OK);
        __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
        CHECK(net.step == 10 && measured == 0);
        unlink(out);
        loader_close(loader);
        source_free(&src);
        optimizer_free(&optimizer);
        net_free(&net);
    }
}

/* A sequence net with every text layer family, trained on random windows of a token stream. */
static const char *text_cfg =
    "[net]\nbatch=4\nsubdivisions=2\nseq=6\nvocab=7\noptimizer=adamw\nclip_grad_norm=1\n"
    "[embedding]\noutput=8\n[positional]\n[layernorm]\n[attention]\nheads=2\ndropout=0.1\n"
    "[shortcut]\nfrom=-3\n[lstm]\noutput=8\n[gru]\noutput=8\n[rnn]\noutput=8\n"
    "[dropout]\nprobability=0.2\n[linear]\noutput=8\nactivation=gelu\n[layernorm]\n"
    "[linear]\ntie=1\n[softmax]\n";

/* A sequence-to-sequence net with every masked attention, dropout in each, trained on pairs. */
static const char *pairs_cfg =
    "[net]\nbatch=4\nsubdivisions=2\nsource=5\nseq=6\nvocab=7\noptimizer=adam\n"
    "[embedding]\noutput=8\npart=source\n[attention]\nheads=2\ncausal=0\nkey_padding=source\n"
    "dropout=0.1\n[embedding]\noutput=8\npart=target\nshare=0\n[attention]\nheads=2\n"
    "key_padding=target\ndropout=0.1\n[attention]\nheads=2\nsource=1\nkey_padding=source\n"
    "dropout=0.1\n[linear]\ntie=1\n[softmax]\n";

/* Builds cfg in precision, sized for mini-batches of 2; -1 (after a failure) when it fails. */
static int build_sequence_net(Net *net, const char *cfg, GemmPrecision precision)
{
    Error e = {0};
    if (net_build_from_text(net, cfg, "t.cfg", 1, 3, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return -1;
    }
    net_set_precision(net, precision);
    if (net_resize(net, 2, 0, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        net_free(net);
        return -1;
    }
    return 0;
}

/* One epoch of train (net's steps counted), in which no step allocates; then frees net. */
static void check_steps_allocate_nothing(Net *net, const TrainSource *train, uint64_t steps,
                                         const char *what)
{
    Error e = {0};
    Optimizer optimizer;
    CHECK(optimizer_init(&optimizer, net, &e) == CDL_OK);
    char out[] = "/tmp/cdl_no_alloc_XXXXXX";
    close(mkstemp(out));
    ModelMeta meta = {.seed = 3};
    TrainPlan plan = {.epochs = 1, .out_path = out, .save_checkpoint = model_save_checkpoint};
    long measured = 0;
    TrainCallbacks cb = {count_step_allocations, NULL, &measured};
    allocations = blas_allocations = 0;
    CHECK(train_run(net, &optimizer, train, NULL, &plan, &meta, &cb, &e) == CDL_OK);
    __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
    CHECK(net->step == steps);
    CHECK(measured == 0);
    printf("test_no_alloc: %s steps: %ld allocations by cdl, %ld inside OpenBLAS's sgemm\n", what,
           measured, blas_allocations);
    unlink(out);
    optimizer_free(&optimizer);
    net_free(net);
}

/* In precision (bf16: every sequence family rounds its operands into memory taken at resize). */
static void test_text_training_steps_allocate_nothing(GemmPrecision precision)
{
    Net net;
    if (build_sequence_net(&net, text_cfg, precision))
        return;
    int32_t ids[200];
    for (int i = 0; i < 200; i++)
        ids[i] = (i * 5 + i / 7) % 7;
    const TokenStream stream = {.ids = ids, .n = 200};
    TextBatches batches = {&stream, 3, NULL};
    const TrainSource train = train_source_text(&batches, &net);
    /* 33 windows of 6 tokens: 16 mini-batches of 2, 8 steps */
    check_steps_allocate_nothing(&net, &train, 8, "text");
}

/* 20 pairs of 1 to 5 source and 1 to 5 target tokens (padded), drawn from buckets of 4 and each
 * mini-batch computed at its longest pair's rows: 10 mini-batches of 2, 5 steps. */
static void test_pair_training_steps_allocate_nothing(void)
{
    Net net;
    if (build_sequence_net(&net, pairs_cfg, GEMM_FP32))
        return;
    int32_t ids[200];
    TextPair pairs[20];
    for (int i = 0; i < 200; i++)
        ids[i] = (i * 5 + i / 7) % 5;
    for (int i = 0; i < 20; i++)
        pairs[i] = (TextPair){(size_t)i * 10, (size_t)i * 10 + 5, i % 5 + 1, (i + 2) % 5 + 1};
    const TextPairs tp = {ids, {pairs, 20}, {NULL, 0}, 5, 6, 4}; /* buckets of 4 pairs */
    TextBatches batches = {NULL, 3, &tp};
    const TrainSource train = train_source_text(&batches, &net);
    check_steps_allocate_nothing(&net, &train, 5, "pairs");
}
/* int8 inference (backend/cpu/net_quant.h): every quantizable layer of an inference net gets int8
 * weights; forwards with inputs quantized dynamically allocate nothing, for a batch spread over
 * the threads by images (4) and one run image by image with threaded products (3); nor do those
 * of calibrated convolutions (on oneDNN's int8 kernels where the CPU has AVX2). */
static void test_int8_inference_allocates_nothing(int calibrated)
{
    static const char *text =
        "[net]\nbatch=4\nwidth=20\nheight=20\nchannels=3\n"
        "[convolutional]\nfilters=20\nsize=3\npad=1\nbatch_normalize=1\nactivation=leaky\n"
        "[convolutional]\nfilters=7\nsize=1\nactivation=relu\n[maxpool]\nsize=2\nstride=2\n"
        "[convolutional]\nfilters=6\nsize=3\nstride=2\ngroups=1\nactivation=linear\n"
        "[connected]\noutput=5\nactivation=linear\n[softmax]\n";
    Net net;
    Error e = {0};
    unsigned char quantize[16] = {0};
    int st = net_build_from_text(&net, text, "q.cfg", 0, 3, &e);
    for (int i = 0; !st && i < net.n_layers; i++)
        quantize[i] = net_layer_quantizable(&net.layers[i]) >= 0;
    st = st ? st : net_quant_alloc(&net, quantize, &e);
    if (!st) {
        net_quant_from_float(&net);
        net_quant_prepare(&net);
    }
    for (int i = 0; !st && calibrated && i < 4; i++)
        if (net.layers[i].quant) {
            net.layers[i].quant->static_input = 1;
            net.layers[i].quant->input = quant_params_u8(-0.5f, 1.6f);
        }
    for (int batch = 4; batch >= 3; batch--) {
        st = st ? st : net_resize(&net, batch, 0, &e);
        if (st) {
            fprintf(stderr, "FAIL setup: %s\n", e.msg);
            check_failures++;
            break;
        }
        for (size_t i = 0; i < (size_t)batch * shape_size(net.in_shape); i++)
            net.input[i] = (float)(i % 23) / 11 - 0.5f;
        net_forward(&net);
        net_forward(&net);
        __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
        for (int step = 0; step < 3; step++)
            net_forward(&net);
        __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
        CHECK(allocations == 0);
    }
    CHECK(net.layers[0].quant && net.layers[1].quant && net.layers[3].quant && net.layers[4].quant);
    if (calibrated && !st)
        CHECK((strcmp(net.layers[0].engine, "dnnl") == 0) ==
              (dnnl_conv_built() && qgemm_has_avx2()));
    net_free(&net);
}

/* engine=dnnl inference (batch norm folded into the weights and bias, activations fused, the
 * 16-channel convolutions passing their activations blocked): the forwards of an inference net
 * allocate nothing in cdl. */
static void test_dnnl_inference_allocates_nothing(void)
{
    static const char *text =
        "[net]\nbatch=4\nwidth=8\nheight=8\nchannels=3\nengine=dnnl\n"
        "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
        "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=leaky\n"
        "[convolutional]\nfilters=16\nsize=1\nbatch_normalize=1\nactivation=mish\n"
        "[shortcut]\nfrom=-3\n[connected]\noutput=5\nactivation=linear\n[softmax]\n";
    Net net;
    Error e = {0};
    if (net_build_from_text(&net, text, "t.cfg", 0, 3, &e) || net_resize(&net, 4, 0, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return;
    }
    for (size_t i = 0; i < 4 * shape_size(net.in_shape); i++)
        net.input[i] = (float)(i % 23) / 11 - 0.5f;
    net.train = 0;
    net_forward(&net);
    __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
    for (int step = 0; step < 3; step++)
        net_forward(&net);
    __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
    CHECK(allocations == 0);
    net_free(&net);
}

/* A winograd inference net on 2 threads at batch 1 (the filters split over the threads, the
 * transformed weights kept between forwards, transformed again after new weights): its
 * forwards allocate nothing. */
static void test_winograd_inference_allocates_nothing(void)
{
    const int threads = omp_get_max_threads();
    omp_set_num_threads(2);
    static const char *text =
        "[net]\nbatch=1\nwidth=8\nheight=8\nchannels=16\nengine=ref\n"
        "[convolutional]\nfilters=32\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
        "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=leaky\n"
        "[connected]\noutput=5\nactivation=linear\n[softmax]\n";
    Net net;
    Error e = {0};
    if (net_build_from_text(&net, text, "t.cfg", 0, 3, &e) || net_resize(&net, 1, 0, &e)) {
        fprintf(stderr, "FAIL winograd setup: %s\n", e.msg);
        check_failures++;
        omp_set_num_threads(threads);
        return;
    }
    CHECK(!strcmp(net.layers[0].engine, "wino") && !strcmp(net.layers[1].engine, "wino"));
    for (size_t i = 0; i < shape_size(net.in_shape); i++)
        net.input[i] = (float)(i % 23) / 11 - 0.5f;
    net.train = 0;
    net_forward(&net);
    __atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
    for (int step = 0; step < 3; step++) {
        net.layers[1].params[0].data[step] += 0.5f;
        net_forward(&net);
    }
    __atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
    CHECK(allocations == 0);
    net_free(&net);
    omp_set_num_threads(threads);
}

/* One image on 2 threads: each convolution's image split over both threads (split_threads in
 * convolutional.c: a same 3x3, one of stride 2 with col2im) allocates nothing either. */
static void test_split_image_step_allocates_nothing(void)
{
    const int threads = omp_get_max_threads();
    omp_set_num_threads(2);
    Net net;
    Error e = {0};
    const char *text =
        "[net]\nbatch=1\nwidth=8\nheight=8\nchannels=3\nwinograd=0\n"
        "[convolutional]\nfilters=64\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
        "[convolutional]\nfilters=64\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
        "[convolutional]\nfilters=64\nsize=3\nstride=2\npad=1\nactivation=relu\n"
        "[connected]\noutput=5\nactivation=linear\n[softmax]\n";
    if (net_build_from_text(&net, text, "t.cfg", 1, 3, &e) || net_resize(&net, 1, 0, &e)) {
        fprintf(stderr, "FAIL split setup: %s\n", e.msg);
        check_failures++;
        omp_set_num_threads(threads);
        return;
    }
    uint8_t pixels[3 * 64];
    int labels[1] = {2}, order[1] = {0};
    for (int i = 0; i < 3 * 64; i++)
        pixels[i] = (uint8_t)(i * 37);
    Dataset data = {.n = 1, .c = 3, .h = 8, .w = 8, .max_value = 255, .classes = 5};
    data.pixels = pixels;
    data.labels = labels;
    Optimizer opt;
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    count_training_steps(&net, &opt, &data, order);
    CHECK(allocations == 0);
    optimizer_free(&opt);
    net_free(&net);
    omp_set_num_threads(threads);
}
#endif

int main(void)
{
#ifdef __SANITIZE_ADDRESS__
    printf("test_no_alloc: skipped (AddressSanitizer replaces malloc)\n");
    return 0;
#else
    void *frame;
    backtrace(&frame, 1); /* its first call loads the unwinder, allocating */
    test_training_step_allocates_nothing("", cfg_text); /* engine=auto */
    test_training_step_allocates_nothing("engine=ref", cfg_text);
    test_training_step_allocates_nothing("engine=ref\nrecompute_every=3", cfg_text);
    test_training_step_allocates_nothing("precision=bf16", cfg_text);
    test_training_step_allocates_nothing("precision=bf16\nrecompute_every=3", cfg_text);
    test_training_step_allocates_nothing("engine=dnnl", cfg_text);
    test_training_step_allocates_nothing("engine=dnnl\ndnnl_train_blocked=1", blocked_cfg_text);
    test_loader_fed_training_steps_allocate_nothing();
    test_text_training_steps_allocate_nothing(GEMM_FP32);
    test_text_training_steps_allocate_nothing(GEMM_BF16);
    test_pair_training_steps_allocate_nothing();
    test_int8_inference_allocates_nothing(0);
    test_int8_inference_allocates_nothing(1);
    test_dnnl_inference_allocates_nothing();
    test_winograd_inference_allocates_nothing();
    test_split_image_step_allocates_nothing();
    return check_report("test_no_alloc");
#endif
}
