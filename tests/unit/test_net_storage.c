/* Which layer outputs a net keeps in 16 bits (core/net_storage.h): on the GPU under bf16 and fp16
 * where the layer's family and every reader's take them (the detection heads only read them), never
 * the net's output, never on the CPU; each layer's in_storage its inputs' writers'. The values
 * those tensors hold are test_backend_ops's. */
#include "check.h"
#include "core/net.h"
#include "core/net_memory.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CONV(filters, act)                                                                         \
    "[convolutional]\nfilters=" #filters "\nsize=3\npad=1\nbatch_normalize=1\nactivation=" #act "\n"

/* cfg/digits.cfg's shape: conv, maxpool, conv, connected, softmax. */
static const char *const digits = "[net]\nbatch=2\nwidth=8\nheight=8\nchannels=1\n" CONV(
    4, leaky) "[maxpool]\nsize=2\nstride=2\n" CONV(4, leaky) "[connected]\noutput=3\nactivation="
                                                             "linear\n[softmax]\n";

/* A conv read by a [yolo] head, whose output stays float32, and a [shortcut] that adds the two;
 * the net ends with a conv. */
static const char *const mixed = "[net]\nbatch=2\nwidth=6\nheight=5\nchannels=2\n" CONV(
    7, tanh) "[yolo]\nmask=0\nanchors=2,3\n"
             "num=1\nclasses=2\n[shortcut]\nfrom=0\n" CONV(4, linear);

/* yolov3-tiny's shape: two [yolo] heads, the second after a [route], an [upsample] and a [route]
 * of two layers. */
static const char *const two_heads = "[net]\nbatch=2\nwidth=8\nheight=8\nchannels=3\n" CONV(
    6,
    leaky) "[maxpool]\nsize=2\n"
           "stride=2\n[convolutional]\nfilters=14\nsize=1\nactivation=linear\n"
           "[yolo]\nmask=2,3\nanchors=2,3, 4,5, 7,6, 10,12\nnum=4\nclasses=2\n[route]\nlayers=-3\n"
           "[upsample]\nstride=2\n[route]\nlayers=-1,0\n[convolutional]\nfilters=14\nsize=1\n"
           "activation=linear\n[yolo]\nmask=0,1\nanchors=2,3, 4,5, 7,6, 10,12\nnum=4\nclasses=2\n";

/* Builds text on backend b in precision p, resized for training; 0 when built. */
static int build(Net *net, const char *text, Backend b, GemmPrecision p)
{
    Error e = {0};
    if (net_build_from_text_on(net, text, "storage.cfg", 1, 1, (NetPlacement){b, 0}, &e)) {
        fprintf(stderr, "FAIL: cannot build: %s\n", e.msg);
        check_failures++;
        return 1;
    }
    net_set_precision(net, p);
    if (net_resize(net, net->hyper.batch, 1, &e)) {
        fprintf(stderr, "FAIL: cannot resize: %s\n", e.msg);
        check_failures++;
        net_free(net);
        return 1;
    }
    return 0;
}

/* 1 when the layers' storage is want [n_layers] and each in_storage its writer's. */
static int storage_is(const Net *net, const ElemType *want)
{
    int ok = 1;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        ok = ok && l->storage == want[i];
        for (int k = 0; k < l->n_inputs; k++)
            ok = ok && l->in_storage[k] ==
                           (l->inputs[k] < 0 ? ELEM_F32 : net->layers[l->inputs[k]].storage);
    }
    return ok;
}

static void test_cpu_keeps_float32(void)
{
    static const ElemType all_f32[5] = {ELEM_F32, ELEM_F32, ELEM_F32, ELEM_F32, ELEM_F32};
    Net net;
    if (build(&net, digits, CDL_BACKEND_CPU, GEMM_BF16))
        return;
    CHECK(storage_is(&net, all_f32));
    net_free(&net);
}

static void test_gpu_digits(void)
{
    const GemmPrecision precisions[] = {GEMM_FP32, GEMM_TF32, GEMM_BF16, GEMM_FP16};
    for (size_t i = 0; i < sizeof precisions / sizeof precisions[0]; i++) {
        const ElemType h = precision_storage(precisions[i]);
        /* the softmax reads [connected]'s output in 16 bits; the net's output is float32 */
        const ElemType want[5] = {h, h, h, h, ELEM_F32};
        Net net;
        if (build(&net, digits, CDL_BACKEND_GPU, precisions[i]))
            return;
        CHECK(storage_is(&net, want));
        CHECK(net.layers[0].in_storage[0] == ELEM_F32); /* the net input */
        net_free(&net);
    }
}

static void test_gpu_float32_beside_16bit_input(void)
{
    /* conv 0 is read by [yolo] (which reads 16 bits) and the shortcut: bf16; the shortcut reads
     * it and the head's float32 output and writes bf16 for the last conv, whose output is the
     * net's */
    static const ElemType want[4] = {ELEM_BF16, ELEM_F32, ELEM_BF16, ELEM_F32};
    Net net;
    if (build(&net, mixed, CDL_BACKEND_GPU, GEMM_BF16))
        return;
    CHECK(storage_is(&net, want));
    /* back to float32: the next resize plans again */
    net_set_precision(&net, GEMM_FP32);
    Error e = {0};
    CHECK(net_resize(&net, net.hyper.batch, 1, &e) == 0);
    CHECK(net.layers[2].storage == ELEM_F32);
    net_free(&net);
}

/* The detection heads read 16 bits (LayerKernels.reads_16bit) and keep their outputs in float32
 * (their losses read them): every other layer of a yolov3-tiny, [route] and [upsample] among
 * them, stores 16 bits. */
static void test_gpu_detection_heads_read_16bit(void)
{
    const ElemType h = ELEM_BF16, f = ELEM_F32;
    const ElemType want[9] = {h, h, h, f, h, h, h, h, f};
    Net net;
    if (build(&net, two_heads, CDL_BACKEND_GPU, GEMM_BF16))
        return;
    CHECK(net.n_layers == 9);
    CHECK(storage_is(&net, want));
    net_free(&net);
}

/* A vision transformer's token rows: [tokens], [layer_scale] and [select_token] keep theirs in 16
 * bits, as the convolution before them and the head after them do. */
static void test_gpu_token_rows(void)
{
    static const char *const vit =
        "[net]\nbatch=2\nwidth=8\nheight=8\nchannels=3\n[convolutional]\nfilters=8\nsize=4\n"
        "stride=4\nactivation=linear\n[tokens]\nclass_token=1\npositional=1\n[layer_scale]\n"
        "[select_token]\n[connected]\noutput=3\nactivation=linear\n[softmax]\n";
    static const ElemType want[6] = {ELEM_FP16, ELEM_FP16, ELEM_FP16,
                                     ELEM_FP16, ELEM_FP16, ELEM_F32};
    Net net;
    if (build(&net, vit, CDL_BACKEND_GPU, GEMM_FP16))
        return;
    CHECK(storage_is(&net, want));
    net_free(&net);
}

/* net_first_nonfinite_output reads a 16-bit output as 16-bit values: a NaN weight of the second
 * conv shows first in its bf16 output, not in the float32 words two bf16 values would make. */
static void test_gpu_nonfinite_16bit_output_is_found(void)
{
    Net net;
    if (build(&net, digits, CDL_BACKEND_GPU, GEMM_BF16))
        return;
    const size_t n = (size_t)net.batch * shape_size(net.in_shape);
    float *x = net_host_input(&net);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 7) / 7.0f;
    int *labels = net_host_labels(&net);
    for (int b = 0; b < net.batch; b++)
        labels[b] = b % 3;
    net_commit_batch(&net);
    net_forward(&net);
    CHECK(net_first_nonfinite_output(&net) == net.n_layers);
    const float nan = NAN;
    net.backend->upload(net.layers[2].params[0].data + 5, &nan, sizeof nan);
    net_forward(&net);
    CHECK(net.layers[2].storage == ELEM_BF16);
    CHECK(net_first_nonfinite_output(&net) == 2);
    net_free(&net);
}

/* Bytes a buffer of `bytes` takes in the slab: from a line to a line (NET_BUFFER_ALIGN). */
static size_t on_lines(size_t bytes)
{
    return (bytes + NET_BUFFER_ALIGN - 1) / NET_BUFFER_ALIGN * NET_BUFFER_ALIGN;
}

/* The memory plan gives a 16-bit output and its gradient 2 bytes an element: with memory_plan=0,
 * where every buffer has its own memory, digits' slab in bf16 and fp16 is float32's less what its
 * 16-bit tensors save, line by line; planned, it shrinks too. */
static void test_gpu_16bit_slots_are_half_sized(void)
{
    static const char *const texts[] = {"memory_plan=0\n", ""};
    for (int planned = 0; planned < 2; planned++) {
        char text[1024];
        snprintf(text, sizeof text, "[net]\n%s%s", texts[planned], digits + strlen("[net]\n"));
        Net net;
        if (build(&net, text, CDL_BACKEND_GPU, GEMM_FP32))
            return;
        const size_t float32_slab = net.activation_bytes;
        net_free(&net);
        const GemmPrecision halves[] = {GEMM_BF16, GEMM_FP16};
        for (int h = 0; h < 2; h++) {
            if (build(&net, text, CDL_BACKEND_GPU, halves[h]))
                return;
            size_t saved = 0;
            for (int i = 0; i < net.n_layers; i++) {
                const Layer *l = &net.layers[i];
                const size_t count = (size_t)net.batch * shape_size(l->out_shape);
                const int buffers = 1 + (net.want_grads && i >= net.train_from);
                if (l->storage != ELEM_F32)
                    saved += (size_t)buffers * (on_lines(count * 4) - on_lines(count * 2));
            }
            CHECK(saved > 0);
            if (planned)
                CHECK(net.activation_bytes < float32_slab);
            else
                CHECK(net.activation_bytes == float32_slab - saved);
            printf("digits at batch %d, %s, memory_plan=%d: slab %zu bytes, float32's %zu (16-bit "
                   "tensors save %zu unplanned)\n",
                   net.batch, h ? "fp16" : "bf16", planned, net.activation_bytes, float32_slab,
                   saved);
            net_free(&net);
        }
    }
}

int main(void)
{
    test_cpu_keeps_float32();
    if (backend_find(CDL_BACKEND_GPU)) {
        test_gpu_digits();
        test_gpu_float32_beside_16bit_input();
        test_gpu_token_rows();
        test_gpu_detection_heads_read_16bit();
        test_gpu_nonfinite_16bit_output_is_found();
        test_gpu_16bit_slots_are_half_sized();
    } else
        printf("test_net_storage: no GPU backend in this build: its cases skipped\n");
    return check_report("test_net_storage");
}
