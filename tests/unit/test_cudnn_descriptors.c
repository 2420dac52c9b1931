/* cuDNN's view of every [convolutional] is cdl's (cuda/conv_cudnn.h): for each convolution of
 * the zoo's cfgs (sizes 1, 3, 5, 7; strides 1 and 2; padded or not; depthwise) and of a few
 * shapes the zoo lacks (grouped but not depthwise, odd sizes, padding wider than the kernel
 * reaches), in each precision (fp32, bf16, tf32, fp16), the descriptors conv_cudnn_describe sets
 * give cuDNN's output dimensions (cudnnGetConvolution2dForwardOutputDim) equal to the layer's
 * out_shape, the tensor and filter descriptors read back as the layer's shapes in the
 * precision's data type (float32; BFLOAT16, HALF in bf16, fp16), and the convolution descriptor
 * as cross-correlation with cdl's padding and strides, no dilation, the group count, float32
 * compute type and the precision's math type (FMA in fp32, tensor ops in the others); in each
 * layout of input and output (NCHW, NHWC, and either NHWC with the other NCHW) and each layout
 * cuDNN may run them in (NHWC where one side is, NCHW always): every descriptor in cuDNN's layout
 * (packed NHWC strides and a KRSC filter, or NCHW and KCRS), the tensors transposed (those whose
 * layout is not cuDNN's) and the workspace the rounded, KRSC and transposed copies take. The
 * choice of cuDNN's layout (conv_cudnn_plan), driven by a fake answer to "which passes have an
 * algorithm", for every combination of tensor layouts, passes needed and passes found in each
 * layout: NHWC where a tensor is and it offers every pass needed, else NCHW where that does, else
 * the error; c described, chosen, sized and named for the layout taken. cuDNN's
 * descriptor calls need no driver: this runs against the real libcudnn in a GPU=1 build, on any
 * machine. The passes themselves (cudnnCreate on) need a device: scripts/gpu-check.sh's
 * test_backend_ops compares them with the CPU. Skipped in other builds, after checking there that
 * [net] gpu_engine= is a known key of every build. */
#include <glob.h>
#include <stdio.h>
#include <string.h>

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

/* The tensors of l transposed for cuDNN's layout nhwc: those whose layout is another (the
 * weights are OIHW, NCHW's). */
static int expected_moves(const Layer *l, int nhwc)
{
    return (l->in_channels_last[0] != nhwc ? CUDNN_X : 0) |
           (l->channels_last != nhwc ? CUDNN_Y : 0) | (nhwc ? CUDNN_W : 0);
}

/* c's transposes of l's tensors, each way, are those of cuDNN's layout c->nhwc: none for a
 * tensor already in it; else x and y as [BATCH][channels][plane] matrices where the source (l's
 * tensor on the way to cuDNN, cuDNN's on the way back) is channels-first, [BATCH][plane]
 * [channels] where it is channels-last; the OIHW weights as [filters][c/groups][taps] to KRSC. */
static int transposes_are(const ConvCudnn *c, const Layer *l)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape, out = l->out_shape;
    const struct {
        CudnnTensor t;
        int nhwc, outer, channels, plane;
    } tensors[] = {
        {CUDNN_X, l->in_channels_last[0], BATCH, in.c, in.h * in.w},
        {CUDNN_Y, l->channels_last, BATCH, out.c, out.h * out.w},
        {CUDNN_W, 0, cv->filters, in.c / cv->groups, cv->win.size_h * cv->win.size_w},
    };
    int ok = 1;
    for (int i = 0; i < 3 * 2; i++) {
        const int to_cudnn = i % 2, moved = tensors[i / 2].nhwc != c->nhwc;
        const int from_nhwc = to_cudnn ? tensors[i / 2].nhwc : c->nhwc;
        const int channels = tensors[i / 2].channels, plane = tensors[i / 2].plane;
        const CudnnTranspose r = conv_cudnn_transpose(c, l, tensors[i / 2].t, to_cudnn);
        ok &= moved ? r.outer == tensors[i / 2].outer && r.rows == (from_nhwc ? plane : channels) &&
                          r.columns == (from_nhwc ? channels : plane)
                    : r.outer == 0;
    }
    return ok;
}

/* The workspace a convolution l in precision p needs (conv_cudnn.h): cuDNN's own (cudnn_bytes),
 * then the rounded copy of w (in fp32 none), of a float32 x and of a float32 dy (y's slot, which
 * also takes a 16-bit y meant for a float32 output), and in bf16 and fp16 the 16-bit result of a
 * float32 gradient, dw always and dx where the input is float32. With NHWC descriptors (nhwc)
 * the KRSC copy of w and dw always; the copies of x, y and dx where l's layout of them is not
 * cuDNN's. */
static size_t expected_scratch(const Layer *l, GemmPrecision p, int nhwc, size_t cudnn_bytes)
{
    const size_t bytes = p == GEMM_FP32 || p == GEMM_TF32 ? 4 : 2;
    const size_t x = (size_t)BATCH * shape_size(l->in_shape);
    const size_t y = (size_t)BATCH * shape_size(l->out_shape);
    const size_t w = l->params[CONV_WEIGHTS].count;
    const int rounding = p != GEMM_FP32, in_16bit = p == GEMM_BF16 || p == GEMM_FP16;
    const int x_f32 = l->in_storage[0] == ELEM_F32, y_f32 = l->storage == ELEM_F32;
    const int x_moved = l->in_channels_last[0] != nhwc, y_moved = l->channels_last != nhwc;
    const size_t dw = in_16bit || nhwc ? w : 0;
    const size_t dx = (in_16bit && x_f32) || x_moved ? x : 0;
    return padded(cudnn_bytes, 1) + padded(rounding || nhwc ? w : 0, bytes) +
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

/* Filter descriptor f is of type, in cuDNN's layout nhwc (KRSC, else KCRS), l's weights. */
static int filter_is(cudnnFilterDescriptor_t f, cudnnDataType_t type, const Layer *l, int nhwc)
{
    const Conv *cv = l->priv;
    cudnnDataType_t got;
    cudnnTensorFormat_t format;
    int k = 0, c_per_group = 0, r = 0, s = 0;
    return cudnnGetFilter4dDescriptor(f, &got, &format, &k, &c_per_group, &r, &s) ==
               CUDNN_STATUS_SUCCESS &&
           got == type && format == (nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW) &&
           k == cv->filters && c_per_group == l->in_shape.c / cv->groups && r == cv->win.size_h &&
           s == cv->win.size_w;
}

/* The layouts a convolution's input and output are checked in: NCHW both, NHWC both, and the
 * mixed ones (the net's first convolution: NCHW input; the last before a reader without NHWC
 * kernels: NCHW output), whose other tensor is transposed to cuDNN's layout (conv_cudnn.h). */
static const int layouts[][2] = {{0, 0}, {1, 1}, {0, 1}, {1, 0}}; /* input, output NHWC */
#define N_LAYOUTS (int)(sizeof layouts / sizeof layouts[0])

/* Every convolution of net in each precision, layout of its tensors and layout cuDNN may run it
 * in (NHWC where a tensor is, NCHW always): cuDNN's output dimensions and the descriptors'
 * shapes, types, layouts and math are cdl's. Returns the convolutions checked (times the
 * precisions and tensor layouts; each with both of cuDNN's layouts where it may take both). */
static int check_net_convolutions(const Net *net, const char *name)
{
    int checked = 0;
    for (int i = 0; i < net->n_layers * 4 * N_LAYOUTS * 2; i++) {
        const int nhwc = i % 2; /* cuDNN's layout */
        const GemmPrecision p = precisions[i / 2 % 4];
        const int *layout = layouts[i / 2 / 4 % N_LAYOUTS];
        Layer layer = net->layers[i / 2 / 4 / N_LAYOUTS];
        const Layer *l = &layer;
        if (l->type != &convolutional_layer || (nhwc && !layout[0] && !layout[1]))
            continue;
        layer.precision = p;
        layer.in_channels_last[0] = layout[0];
        layer.channels_last = layout[1];
        const Conv *cv = l->priv;
        ConvCudnn c = {0};
        Error e = {0};
        const int st = conv_cudnn_describe(&c, l, BATCH, nhwc, &e);
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
        CHECK(conv_cudnn_moves(&c, l) == expected_moves(l, nhwc));
        CHECK(transposes_are(&c, l));
        CHECK(filter_is(c.w, expected_type(p), l, nhwc));

        /* the weights cuDNN reads are the layer's, all of them (KRSC: the Nd variant agrees) */
        const int k = cv->filters, c_per_group = in.c / cv->groups, r = cv->win.size_h,
                  s = cv->win.size_w;
        CHECK((size_t)k * c_per_group * r * s == l->params[CONV_WEIGHTS].count);
        cudnnDataType_t type;
        cudnnTensorFormat_t format;
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
        CHECK(conv_cudnn_scratch_bytes(&c, l) == expected_scratch(l, p, nhwc, 0));
        if (c.type != ELEM_F32) {
            layer.in_storage[0] = layer.storage = c.type;
            CHECK(conv_cudnn_scratch_bytes(&c, l) == expected_scratch(l, p, nhwc, 0));
        }
        /* 16-bit tensors in cuDNN's layout: the weights' copy and their gradient, nothing else */
        if (c.type != ELEM_F32 && layout[0] == nhwc && layout[1] == nhwc)
            CHECK(expected_scratch(l, p, nhwc, 0) ==
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
    /* the zoo holds hundreds (resnet50 alone 53), each in four precisions and the layouts
     * (seven pairs of tensor layouts and cuDNN's) */
    CHECK(checked > 4 * (2 * N_LAYOUTS - 1) * 200);
    printf("test_cudnn_descriptors: %d zoo convolutions x 4 precisions x %d layouts of the tensors "
           "and cuDNN\n",
           checked / 4 / (2 * N_LAYOUTS - 1), 2 * N_LAYOUTS - 1);
}

/* A fake cuDNN for conv_cudnn_plan: the passes it offers in each layout (index: nhwc), the
 * workspace and forward algorithm it answers there, and the layouts it was asked in. */
typedef struct FakeCudnn {
    CudnnPasses offers[2];
    int asked[2];
} FakeCudnn;

static const size_t fake_bytes[2] = {1000, 70000}; /* NCHW's, NHWC's: told apart by the plan */

static int fake_ask(ConvCudnn *c, const Layer *l, void *arg, CudnnPasses *found, Error *e)
{
    (void)l, (void)e;
    FakeCudnn *fake = arg;
    fake->asked[c->nhwc]++;
    *found = fake->offers[c->nhwc];
    c->workspace_bytes = fake_bytes[c->nhwc];
    c->fwd = c->nhwc ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
                     : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    return CDL_OK;
}

/* The three passes of bits (forward 1, input gradient 2, weight gradient 4). */
static CudnnPasses passes_of(int bits)
{
    return (CudnnPasses){bits & 1, (bits >> 1) & 1, (bits >> 2) & 1};
}

/* The first pass of needs that found lacks, as conv_cudnn_plan's error names it; NULL: none. */
static const char *missing_pass(CudnnPasses needs, CudnnPasses found)
{
    return needs.forward && !found.forward ? "its forward"
           : needs.data && !found.data     ? "its input gradient"
           : needs.filter && !found.filter ? "its weight gradient"
                                           : NULL;
}

/* conv_cudnn_plan on convolution l0 for every precision, layout of its input and output, set of
 * passes needed (the forward always) and sets of passes cuDNN offers in NHWC and in NCHW: NHWC
 * taken where a tensor is NHWC and it offers every pass needed, else NCHW where it does (asked
 * only then), else the error naming the pass NCHW lacks; c then described in the layout taken,
 * the tensors of the other layout transposed, that layout's workspace and algorithm, the engine
 * "cudnn-nchw" where it falls back, and planned for exactly that. One ConvCudnn throughout, as a
 * layer keeps its own over resizes. */
static void check_plans(const Layer *l0, const char *name)
{
    int plans = 0, fallbacks = 0, refusals = 0;
    for (int pi = 0; pi < 4; pi++) {
        ConvCudnn c = {0};
        for (int i = 0; i < N_LAYOUTS * 4 * 8 * 8; i++) {
            const int *layout = layouts[i % N_LAYOUTS];
            const CudnnPasses needs = passes_of(1 | (i / N_LAYOUTS % 4) << 1);
            FakeCudnn fake = {
                .offers = {passes_of(i / N_LAYOUTS / 4 % 8), passes_of(i / N_LAYOUTS / 32)}};
            Layer layer = *l0;
            const Layer *l = &layer;
            layer.precision = precisions[pi];
            layer.in_channels_last[0] = layout[0];
            layer.channels_last = layout[1];
            const int tensors_nhwc = layout[0] || layout[1];
            const int nhwc_ok = tensors_nhwc && !missing_pass(needs, fake.offers[1]);
            const int nchw_ok = !missing_pass(needs, fake.offers[0]);
            Error e = {0};
            const int st = conv_cudnn_plan(&c, l, BATCH, needs, fake_ask, &fake, &e);
            /* NHWC asked exactly where a tensor is, NCHW where NHWC is not taken */
            CHECK(fake.asked[1] == tensors_nhwc && fake.asked[0] == !nhwc_ok);
            if (!nhwc_ok && !nchw_ok) {
                refusals++;
                CHECK(st == CDL_ERUNTIME && c.batch == 0);
                CHECK_CONTAINS(e.msg, "no deterministic direct algorithm");
                CHECK_CONTAINS(e.msg, missing_pass(needs, fake.offers[0]));
                CHECK(!conv_cudnn_planned(&c, l, BATCH, needs));
                continue;
            }
            CHECK(st == CDL_OK);
            if (st) {
                fprintf(stderr, "%s: %s\n", name, e.msg);
                continue;
            }
            const int nhwc = nhwc_ok;
            fallbacks += tensors_nhwc && !nhwc;
            plans++;
            CHECK(c.nhwc == nhwc && c.batch == BATCH);
            CHECK(tensor_is(c.x, expected_type(layer.precision), BATCH, l->in_shape, nhwc));
            CHECK(tensor_is(c.y, expected_type(layer.precision), BATCH, l->out_shape, nhwc));
            CHECK(filter_is(c.w, expected_type(layer.precision), l, nhwc));
            CHECK(conv_cudnn_moves(&c, l) == expected_moves(l, nhwc));
            CHECK(transposes_are(&c, l));
            CHECK(transposes_are(&c, l));
            CHECK(c.workspace_bytes == fake_bytes[nhwc]);
            CHECK(c.fwd == (nhwc ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
                                 : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM));
            CHECK(conv_cudnn_scratch_bytes(&c, l) ==
                  expected_scratch(l, layer.precision, nhwc, fake_bytes[nhwc]));
            CHECK(
                !strcmp(conv_cudnn_engine(&c, l), tensors_nhwc && !nhwc ? "cudnn-nchw" : "cudnn"));
            /* planned for this batch, these passes and layouts only */
            CHECK(conv_cudnn_planned(&c, l, BATCH, needs));
            CHECK(!conv_cudnn_planned(&c, l, BATCH + 1, needs));
            CHECK(!conv_cudnn_planned(&c, l, BATCH, passes_of(1 | (i / N_LAYOUTS % 4 ^ 3) << 1)));
            layer.channels_last = !layer.channels_last;
            CHECK(!conv_cudnn_planned(&c, l, BATCH, needs));
        }
        conv_cudnn_release(&c);
    }
    /* every outcome reached in every precision */
    CHECK(plans > 0 && fallbacks > 0 && refusals > 0);
    CHECK(plans + refusals == 4 * N_LAYOUTS * 4 * 8 * 8);
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
        CHECK(check_net_convolutions(&net, layers[i]) == 4 * (2 * N_LAYOUTS - 1));
        check_plans(&net.layers[0], layers[i]);
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
