/* cuDNN's view of every [convolutional] is cdl's (cuda/conv_cudnn.h): for each convolution of
 * the zoo's cfgs (sizes 1, 3, 5, 7; strides 1 and 2; padded or not; depthwise) and of a few
 * shapes the zoo lacks (grouped but not depthwise, odd sizes, padding wider than the kernel
 * reaches), in each precision (fp32, bf16, tf32, fp16), the descriptors conv_cudnn_describe sets
 * give cuDNN's output dimensions (cudnnGetConvolution2dForwardOutputDim) equal to the layer's
 * out_shape, the tensor and filter descriptors read back as the layer's shapes in the
 * precision's data type (float32; BFLOAT16, HALF in bf16, fp16), and the convolution descriptor
 * as cross-correlation with cdl's padding and strides, no dilation, the group count, float32
 * compute type and the precision's math type (FMA in fp32, tensor ops in the others); in each
 * layout of input and output (NCHW, NHWC, and either NHWC with the other NCHW): every descriptor
 * NCHW, or NHWC (packed NHWC strides, the filter KRSC) wherever one side is, and the workspace
 * the rounded, KRSC and transposed copies take. cuDNN's
 * descriptor calls need no driver: this runs against the real libcudnn in a GPU=1 build, on any
 * machine. The passes themselves (cudnnCreate on) need a device: scripts/gpu-check.sh's
 * test_backend_ops compares them with the CPU. Skipped in other builds, after checking there that
 * [net] gpu_engine= is a known key of every build. */
#include <glob.h>
#include <stdio.h>

#include "check.h"
#include "core/net.h"
#include "layers/convolutional.h"
#include "layers/families.h"
#if defined(CDL_GPU) && !defined(CDL_GPU_SIM)
#include "conv_cudnn.h"
#endif

#define BATCH 3

/* A CPU build keeps gpu_engine for the GPU: a known key, its value checked. */
static void test_gpu_engine_is_a_known_key(void)
{
    const char *body = "width=8\nheight=8\nchannels=2\n[convolutional]\nfilters=2\nsize=3\n";
    char text[256];
    Net net;
    Error e = {0};
    snprintf(text, sizeof text, "[net]\ngpu_engine=ref\n%s", body);
    CHECK(net_build_from_text(&net, text, "t.cfg", 1, 1, &e) == CDL_OK);
    net_free(&net);
    snprintf(text, sizeof text, "[net]\ngpu_engine=cuda\n%s", body);
    CHECK(net_build_from_text(&net, text, "t.cfg", 1, 1, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "t.cfg:2");
    CHECK_CONTAINS(e.msg, "expected one of cudnn, ref");
}

#if defined(CDL_GPU) && !defined(CDL_GPU_SIM)
static const GemmPrecision precisions[] = {GEMM_FP32, GEMM_BF16, GEMM_TF32, GEMM_FP16};
static const char *const precision_names[] = {"fp32", "bf16", "tf32", "fp16"}; /* GemmPrecision */

/* cuDNN's data type of x, y and w in precision p (conv_cudnn.h). */
static cudnnDataType_t expected_type(GemmPrecision p)
{
    return p == GEMM_BF16   ? CUDNN_DATA_BFLOAT16
           : p == GEMM_FP16 ? CUDNN_DATA_HALF
                            : CUDNN_DATA_FLOAT;
}

/* n values of bytes each, as conv_cudnn places them in the workspace: 256-aligned. */
static size_t padded(size_t n, size_t bytes)
{
    return (n * bytes + 255) / 256 * 256;
}

/* The workspace a convolution l in precision p needs beyond cuDNN's own (conv_cudnn.h): the
 * rounded copy of w (in fp32 none), of a float32 x and of a float32 dy (y's slot, which also
 * takes a 16-bit y meant for a float32 output), and in bf16 and fp16 the 16-bit result of a
 * float32 gradient, dw always and dx where the input is float32. With NHWC descriptors (nhwc)
 * the KRSC copy of w and dw always, and the NHWC copies of an NCHW x, y and dx. */
static size_t expected_scratch(const Layer *l, GemmPrecision p, int nhwc)
{
    const size_t bytes = p == GEMM_FP32 || p == GEMM_TF32 ? 4 : 2;
    const size_t x = (size_t)BATCH * shape_size(l->in_shape);
    const size_t y = (size_t)BATCH * shape_size(l->out_shape);
    const size_t w = l->params[CONV_WEIGHTS].count;
    const int rounding = p != GEMM_FP32, in_16bit = p == GEMM_BF16 || p == GEMM_FP16;
    const int x_f32 = l->in_storage[0] == ELEM_F32, y_f32 = l->storage == ELEM_F32;
    const int x_moved = nhwc && !l->in_channels_last[0], y_moved = nhwc && !l->channels_last;
    const size_t dw = in_16bit || nhwc ? w : 0;
    const size_t dx = (in_16bit && x_f32) || x_moved ? x : 0;
    return padded(rounding || nhwc ? w : 0, bytes) +
           padded((rounding && x_f32) || x_moved ? x : 0, bytes) +
           padded((rounding && y_f32) || y_moved ? y : 0, bytes) + padded(dx > dw ? dx : dw, bytes);
}

/* Tensor descriptor t read back: shape n x ch x h x w of type, packed in layout nhwc
 * (NHWC strides) or NCHW. */
static int tensor_is(cudnnTensorDescriptor_t t, cudnnDataType_t type, int n, Shape s, int nhwc)
{
    cudnnDataType_t got;
    int gn, gc, gh, gw, ns, cs, hs, ws;
    if (cudnnGetTensor4dDescriptor(t, &got, &gn, &gc, &gh, &gw, &ns, &cs, &hs, &ws) !=
        CUDNN_STATUS_SUCCESS)
        return 0;
    const int packed =
        nhwc ? cs == 1 && ws == s.c && hs == s.w * s.c : ws == 1 && hs == s.w && cs == s.h * s.w;
    return got == type && gn == n && gc == s.c && gh == s.h && gw == s.w && packed &&
           ns == s.c * s.h * s.w;
}

/* The layouts a convolution's input and output are checked in: NCHW both, NHWC both, and the
 * mixed ones (the net's first convolution: NCHW input; the last before a reader without NHWC
 * kernels: NCHW output), which cuDNN gets NHWC with the NCHW tensor transposed (conv_cudnn.h). */
static const int layouts[][2] = {{0, 0}, {1, 1}, {0, 1}, {1, 0}}; /* input, output NHWC */
#define N_LAYOUTS (int)(sizeof layouts / sizeof layouts[0])

/* Every convolution of net in each precision and layout: cuDNN's output dimensions and the
 * descriptors' shapes, types, layouts and math are cdl's. Returns the convolutions checked (times
 * the precisions and layouts). */
static int check_net_convolutions(const Net *net, const char *name)
{
    int checked = 0;
    for (int i = 0; i < net->n_layers * 4 * N_LAYOUTS; i++) {
        const GemmPrecision p = precisions[i % 4];
        const int *layout = layouts[i / 4 % N_LAYOUTS];
        Layer layer = net->layers[i / 4 / N_LAYOUTS];
        const Layer *l = &layer;
        if (l->type != &convolutional_layer)
            continue;
        layer.precision = p;
        layer.in_channels_last[0] = layout[0];
        layer.channels_last = layout[1];
        /* cuDNN's layout: NHWC wherever the input or output is */
        const int nhwc = layout[0] || layout[1];
        const Conv *cv = l->priv;
        ConvCudnn c = {0};
        Error e = {0};
        const int st = conv_cudnn_describe(&c, l, BATCH, &e);
        CHECK(st == CDL_OK);
        if (st) {
            fprintf(stderr, "%s: %s\n", name, e.msg);
            conv_cudnn_release(&c);
            continue;
        }
        int n = 0, ch = 0, h = 0, w = 0;
        CHECK(cudnnGetConvolution2dForwardOutputDim(c.conv, c.x, c.w, &n, &ch, &h, &w) ==
              CUDNN_STATUS_SUCCESS);
        const Shape out = l->out_shape, in = l->in_shape;
        const int same = n == BATCH && ch == out.c && h == out.h && w == out.w;
        CHECK(same);
        if (!same)
            fprintf(stderr,
                    "%s layer %d %s (size %dx%d stride %d,%d padding %d,%d groups %d, in "
                    "%dx%dx%d): cuDNN %dx%dx%dx%d, cdl %dx%dx%dx%d\n",
                    name, l->index, precision_names[p], cv->win.size_h, cv->win.size_w,
                    cv->win.stride_h, cv->win.stride_w, cv->win.pad_h, cv->win.pad_w, cv->groups,
                    in.c, in.h, in.w, n, ch, h, w, BATCH, out.c, out.h, out.w);

        CHECK(tensor_is(c.y, expected_type(p), BATCH, out, nhwc));
        CHECK(tensor_is(c.x, expected_type(p), BATCH, in, nhwc));
        CHECK(c.nhwc == nhwc);

        cudnnDataType_t type;
        cudnnTensorFormat_t format;
        int k = 0, c_per_group = 0, r = 0, s = 0;
        CHECK(cudnnGetFilter4dDescriptor(c.w, &type, &format, &k, &c_per_group, &r, &s) ==
              CUDNN_STATUS_SUCCESS);
        CHECK(type == expected_type(p) &&
              format == (nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW) && k == cv->filters &&
              c_per_group == in.c / cv->groups && r == cv->win.size_h && s == cv->win.size_w);
        /* the weights cuDNN reads are the layer's, all of them (KRSC: the Nd variant agrees) */
        CHECK((size_t)k * c_per_group * r * s == l->params[CONV_WEIGHTS].count);
        int nd = 0, dims[4] = {0};
        CHECK(cudnnGetFilterNdDescriptor(c.w, 4, &type, &format, &nd, dims) ==
                  CUDNN_STATUS_SUCCESS &&
              nd == 4 && format == (nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW) && dims[0] == k &&
              dims[1] == c_per_group && dims[2] == r && dims[3] == s);

        int groups = 0;
        cudnnMathType_t math;
        CHECK(cudnnGetConvolutionGroupCount(c.conv, &groups) == CUDNN_STATUS_SUCCESS);
        CHECK(groups == cv->groups);
        CHECK(cudnnGetConvolutionMathType(c.conv, &math) == CUDNN_STATUS_SUCCESS);
        CHECK(math == (p == GEMM_FP32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
        /* cross-correlation over cdl's window, float32 sums in every precision */
        int pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w;
        cudnnConvolutionMode_t mode;
        cudnnDataType_t compute;
        CHECK(cudnnGetConvolution2dDescriptor(c.conv, &pad_h, &pad_w, &stride_h, &stride_w,
                                              &dilation_h, &dilation_w, &mode,
                                              &compute) == CUDNN_STATUS_SUCCESS);
        CHECK(pad_h == cv->win.pad_h && pad_w == cv->win.pad_w && stride_h == cv->win.stride_h &&
              stride_w == cv->win.stride_w && dilation_h == 1 && dilation_w == 1 &&
              mode == CUDNN_CROSS_CORRELATION && compute == CUDNN_DATA_FLOAT);
        CHECK(c.precision == p && c.type == precision_storage(p));
        /* the workspace beyond cuDNN's (none chosen here), with the net's float32 tensors and,
         * in bf16 and fp16, with 16-bit stored ones */
        CHECK(conv_cudnn_scratch_bytes(&c, l) == expected_scratch(l, p, nhwc));
        if (c.type != ELEM_F32) {
            layer.in_storage[0] = layer.storage = c.type;
            CHECK(conv_cudnn_scratch_bytes(&c, l) == expected_scratch(l, p, nhwc));
        }
        /* 16-bit tensors in cuDNN's layout: the weights' copy and their gradient, nothing else */
        if (c.type != ELEM_F32 && layout[0] == layout[1])
            CHECK(expected_scratch(l, p, nhwc) ==
                  2 * padded(cv->win.size_h * cv->win.size_w * (size_t)cv->filters * in.c /
                                 cv->groups,
                             2));
        conv_cudnn_release(&c);
        checked++;
    }
    return checked;
}

/* Every zoo cfg's convolutions. */
static void test_zoo_convolutions_match_cudnn(void)
{
    glob_t g = {0};
    int checked = 0;
    CHECK(glob("cfg/*.cfg", 0, NULL, &g) == 0 && g.gl_pathc > 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        Net net;
        Error e = {0};
        const int st = net_build_from_file(&net, g.gl_pathv[i], NULL, 0, 0, 1, &e);
        CHECK(st == CDL_OK);
        if (st) {
            fprintf(stderr, "%s\n", e.msg);
            continue;
        }
        checked += check_net_convolutions(&net, g.gl_pathv[i]);
        net_free(&net);
    }
    globfree(&g);
    /* the zoo holds hundreds (resnet50 alone 53), each in four precisions and the layouts */
    CHECK(checked > 4 * N_LAYOUTS * 200);
    printf("test_cudnn_descriptors: %d zoo convolutions x 4 precisions x %d layouts\n",
           checked / 4 / N_LAYOUTS, N_LAYOUTS);
}

/* Shapes the zoo lacks, each a net of one convolution over an odd-sized input. */
static void test_other_shapes_match_cudnn(void)
{
    static const char *const layers[] = {
        "filters=6\nsize=3\nstride=1\npad=1\ngroups=2\n",      /* grouped, not depthwise */
        "filters=4\nsize=5\nstride=2\npad=1\n",                /* 5x5 strided */
        "filters=4\nsize=5\nstride=2\npadding=2\n",            /* explicit padding */
        "filters=8\nsize=7\nstride=2\npadding=3\ngroups=4\n",  /* 7x7 grouped */
        "filters=4\nsize=1\nstride=2\npadding=1\n",            /* padding beyond a 1x1 kernel */
        "filters=12\nsize=3\nstride=2\npadding=0\ngroups=4\n", /* depthwise x3 */
        "filters=3\nsize=2\nstride=1\n",                       /* even size, no padding */
    };
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "[net]\nwidth=13\nheight=11\nchannels=4\n[convolutional]\n%s",
                 layers[i]);
        Net net;
        Error e = {0};
        const int st = net_build_from_text(&net, text, "t.cfg", 0, 1, &e);
        CHECK(st == CDL_OK);
        if (st) {
            fprintf(stderr, "%s: %s\n", layers[i], e.msg);
            continue;
        }
        CHECK(check_net_convolutions(&net, layers[i]) == 4 * N_LAYOUTS);
        net_free(&net);
    }
}
#endif

int main(void)
{
    test_gpu_engine_is_a_known_key();
#if defined(CDL_GPU) && !defined(CDL_GPU_SIM)
    test_zoo_convolutions_match_cudnn();
    test_other_shapes_match_cudnn();
#else
    printf("test_cudnn_descriptors: descriptors skipped (cuDNN is in GPU=1 builds only)\n");
#endif
    return check_report("test_cudnn_descriptors");
}
