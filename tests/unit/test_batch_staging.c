/* The GPU net's batch upload (net_commit_batch): the input and labels staged in two host buffers
 * that take turns, copied on the backend's copy stream. Several batches committed in a row each
 * reach the forward that follows their commit, also when host code fills the next batch before it
 * reads the outputs (the overlap the double buffer is for), the labels included, and the buffers
 * net_host_input and net_host_labels return alternate. Skipped in a build without the GPU backend
 * (GPU=1 runs it on the device, GPU=sim on the simulator). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/backend.h"
#include "core/net.h"

/* float32's unit roundoff */
#define FP32_U 0x1p-24

#define NET_TEXT                                                                                   \
    "[net]\nbatch=4\nchannels=2\nheight=2\nwidth=3\n"                                              \
    "[connected]\noutput=5\nactivation=linear\n[softmax]\n"
#define BATCHES 5

/* Batch b's input, N(0, 1) from a seed of its own, and labels b + i mod classes: every batch's
 * outputs differ from every other's by O(1). */
static void write_batch(Net *net, int b, float *input, int *labels)
{
    const size_t n = (size_t)net->batch * shape_size(net->in_shape);
    Rng rng;
    rng_seed(&rng, 100 + (uint64_t)b, 0);
    check_fill_normal(input, n, &rng);
    for (int i = 0; i < net->batch; i++)
        labels[i] = (b + i) % net->classes;
}

/* The device's labels after the passes queued so far, equal to want [batch]. */
static int device_labels_are(Net *net, const int *want)
{
    Error err = {0};
    int got[64];
    if (net_sync(net, &err)) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        return 0;
    }
    net->backend->download(got, net->labels, (size_t)net->batch * sizeof *got);
    return !memcmp(got, want, (size_t)net->batch * sizeof *got);
}

int main(void)
{
    if (!backend_find(CDL_BACKEND_GPU)) {
        printf("test_batch_staging: skipped (no GPU backend in this build)\n");
        return 0;
    }
    Net gpu, cpu;
    Error err = {0};
    if (net_build_from_text_on(&gpu, NET_TEXT, "staging", 0, 7, (NetPlacement){CDL_BACKEND_GPU, 0},
                               &err) ||
        net_build_from_text(&cpu, NET_TEXT, "staging", 0, 7, &err) ||
        net_copy_weights(&gpu, &cpu, &err) || net_resize(&gpu, gpu.hyper.batch, 0, &err) ||
        net_resize(&cpu, cpu.hyper.batch, 0, &err)) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        return 1;
    }
    gpu.train = cpu.train = 0;
    gpu.loss_divisor = cpu.loss_divisor = 1;
    const size_t out_n = (size_t)gpu.batch * (size_t)gpu.classes;
    /* A connected layer sums 12 products, in cuBLAS's order on the GPU and BLAS's on the CPU, and
     * softmax's exp differs by a few units in the last place between them: far below the O(1)
     * difference between two batches' outputs that this test tells apart. */
    const double tol = 64 * FP32_U;
    float *want = malloc(out_n * sizeof *want);
    int labels[BATCHES][4];

    /* Batch 0 written; then each pass commits batch b, queues its forward, writes batch b + 1
     * into the other buffers, and only then reads batch b's outputs and labels. */
    float *input = net_host_input(&gpu);
    int *host_labels = net_host_labels(&gpu);
    write_batch(&gpu, 0, input, labels[0]);
    memcpy(host_labels, labels[0], sizeof labels[0]);
    for (int b = 0; b < BATCHES; b++) {
        /* two buffers, in turn */
        CHECK(input == gpu.staged_input[b % 2] && host_labels == gpu.staged_labels[b % 2]);
        write_batch(&cpu, b, net_host_input(&cpu), net_host_labels(&cpu));
        net_commit_batch(&cpu);
        net_forward(&cpu);
        memcpy(want, net_host_output(&cpu), out_n * sizeof *want);

        net_commit_batch(&gpu);
        net_forward(&gpu);
        float *next_input = net_host_input(&gpu);
        int *next_labels = net_host_labels(&gpu);
        CHECK(next_input != input && next_labels != host_labels);
        if (b + 1 < BATCHES) {
            write_batch(&gpu, b + 1, next_input, labels[b + 1]);
            memcpy(next_labels, labels[b + 1], sizeof labels[b + 1]);
        }
        const double e = check_rel_error(net_host_output(&gpu), want, out_n);
        if (!(e <= tol))
            fprintf(stderr, "FAIL: batch %d: the GPU's outputs differ from the CPU's by %.3g\n", b,
                    e);
        CHECK(e <= tol);
        CHECK(!memcmp(net_batch_labels(&gpu), labels[b], sizeof labels[b]));
        CHECK(!memcmp(net_batch_labels(&cpu), labels[b], sizeof labels[b]));
        CHECK(device_labels_are(&gpu, labels[b]));
        input = next_input;
        host_labels = next_labels;
    }

    /* A second forward after one commit sees the same batch (the device keeps its copy), and a
     * resize starts the turns again from fresh buffers. */
    const float *again = net_host_output(&gpu);
    CHECK(check_rel_error(again, want, out_n) <= tol);
    net_forward(&gpu);
    CHECK(check_rel_error(net_host_output(&gpu), want, out_n) <= tol);
    CHECK(!net_resize(&gpu, 2, 0, &err));
    CHECK(net_host_input(&gpu) == gpu.staged_input[0]);
    CHECK(net_host_labels(&gpu) == gpu.staged_labels[0]);

    free(want);
    net_free(&gpu);
    net_free(&cpu);
    return check_report("test_batch_staging");
}
