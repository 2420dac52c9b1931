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
 * the error; c described, chosen, sized and named for the layout taken. Every batch norm of the
 * zoo (a convolution's or a [batchnorm]) described for cuDNN's spatial batch norm
 * (cuda/bn_cudnn.h) in float32, bf16 and fp16, NCHW and NHWC: the tensor descriptor over the
 * layer's output, cudnnDeriveBNTensorDescriptor's float32 [channels] parameters; and the rule of
 * where it runs there (bn_cudnn_refusal) over its inputs. cuDNN's
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
#include "bn_cudnn.h"
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

/* check (a net, its cfg's path) over every zoo cfg's net, built on the CPU: the sum of what it
 * returns. */
static int check_zoo(int (*check)(const Net *net, const char *name))
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
        checked += check(&net, g.gl_pathv[i]);
        net_free(&net);
    }
    globfree(&g);
    return checked;
}

/* Every zoo cfg's convolutions. */
static void test_zoo_convolutions_match_cudnn(void)
{
    const int checked = check_zoo(check_net_convolutions);
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
            const char *engine = tensors_nhwc && !nhwc ? "cudnn-nchw" : "cudnn";
            CHECK(!strcmp(conv_cudnn_engine(&c, l, 0), engine));
            /* its batch norm on cdl's kernels: the same name with "-bn-ref" */
            CHECK(!strncmp(conv_cudnn_engine(&c, l, 1), engine, strlen(engine)) &&
                  !strcmp(conv_cudnn_engine(&c, l, 1) + strlen(engine), "-bn-ref"));
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

/* The batch norm of l (a convolution's stage or a [batchnorm]), NULL where it has none. */
static const BiasNorm *batch_norm_of(const Layer *l)
{
    const BiasNorm *bn = l->type == &convolutional_layer ? &((const Conv *)l->priv)->stage
                         : l->type == &batchnorm_layer   ? l->priv
                                                         : NULL;
    return bn && bn->batch_normalize ? bn : NULL;
}

/* Descriptor t read back is cuDNN's batch-norm parameters of channels values: float32 (the
 * statistics' type whatever x's), 1 x channels x 1 x 1, the channels contiguous. */
static int bn_params_are(cudnnTensorDescriptor_t t, int channels)
{
    cudnnDataType_t got;
    int n, c, h, w, ns, cs, hs, ws;
    return cudnnGetTensor4dDescriptor(t, &got, &n, &c, &h, &w, &ns, &cs, &hs, &ws) ==
               CUDNN_STATUS_SUCCESS &&
           got == CUDNN_DATA_FLOAT && n == 1 && c == channels && h == 1 && w == 1 && cs == 1;
}

/* Every batch norm of net (its convolutions' and its [batchnorm]s') described for cuDNN in each
 * precision's tensor type (Layer.storage's 16-bit one in bf16 and fp16) and each layout: x as
 * BATCH x channels x spatial x 1 of that type, packed in that layout, over the layer's whole
 * output; the parameters' descriptor cudnnDeriveBNTensorDescriptor derives from it cdl's
 * [channels] float32 vectors; the scratch one tensor of the type. Returns the batch norms checked
 * (times the precisions and layouts). */
static int check_net_batch_norms(const Net *net, const char *name)
{
    int checked = 0;
    for (int i = 0; i < net->n_layers * 4 * 2; i++) {
        const Layer *l = &net->layers[i / 8];
        const BiasNorm *bn = batch_norm_of(l);
        const GemmPrecision p = precisions[i / 2 % 4];
        const ElemType type = precision_storage(p);
        const int nhwc = i % 2;
        if (!bn)
            continue;
        CHECK(bn->channels == l->out_shape.c && bn->spatial == l->out_shape.h * l->out_shape.w);
        BnCudnn c = {0};
        Error e = {0};
        const int st = bn_cudnn_describe(&c, l, BATCH, bn->channels, bn->spatial, type, nhwc, &e);
        CHECK(st == CDL_OK);
        if (st) {
            fprintf(stderr, "%s layer %d: %s\n", name, l->index, e.msg);
            bn_cudnn_release(&c);
            continue;
        }
        CHECK(tensor_is(c.x, expected_type(p), BATCH, (Shape){bn->channels, bn->spatial, 1}, nhwc));
        CHECK(bn_params_are(c.params, bn->channels));
        CHECK(c.batch == BATCH && c.type == type && c.nhwc == nhwc);
        CHECK(bn_cudnn_scratch_bytes(BATCH, bn->channels, bn->spatial, type) ==
              (size_t)BATCH * shape_size(l->out_shape) * (type == ELEM_F32 ? 4 : 2));
        bn_cudnn_release(&c);
        CHECK(c.x == NULL && c.params == NULL && c.batch == 0);
        checked++;
    }
    return checked;
}

/* Every zoo cfg's batch norms. */
static void test_zoo_batch_norms_match_cudnn(void)
{
    const int checked = check_zoo(check_net_batch_norms);
    /* resnet50 alone has 53 */
    CHECK(checked > 4 * 2 * 200);
    printf("test_cudnn_descriptors: %d zoo batch norms x 4 precisions x 2 layouts\n", checked / 8);
}

/* bn_cudnn_refusal over its inputs: cuDNN for cdl's default meaning over one type of float32 or
 * fp16 tensors with at least two values a channel, a batch up to 65535 and fewer than 2^31
 * values; each other input refused with its reason. */
static void test_bn_fallback_rule(void)
{
    const float min_eps = (float)CUDNN_BN_MIN_EPSILON;
    const ElemType F = ELEM_F32, B = ELEM_BF16, H = ELEM_FP16;
    /* darknet, eps, batch, channels, spatial, x, y, dy: NULL (cuDNN) or a word of the reason */
    const struct {
        BnCudnnCase k;
        const char *why;
    } cases[] = {
        {{0, 1e-5f, BATCH, 16, 49, F, F, F}, NULL},
        {{0, 1e-5f, BATCH, 16, 49, H, H, H}, NULL},
        {{1, 1e-5f, BATCH, 16, 49, F, F, F}, "bn_darknet=1"},
        {{0, min_eps, BATCH, 16, 49, F, F, F}, NULL},
        {{0, min_eps - 1e-6f, BATCH, 16, 49, F, F, F}, "CUDNN_BN_MIN_EPSILON"},
        {{0, 1e-5f, BATCH, 16, 49, B, B, B}, "bf16"},
        /* fp16 storage with an activation: the stage writes a float32 pre-activation */
        {{0, 1e-5f, BATCH, 16, 49, H, F, H}, "different types"},
        {{0, 1e-5f, BATCH, 16, 49, F, F, H}, "different types"},
        {{0, 1e-5f, 1, 16, 1, F, F, F}, "one value per channel"},
        {{0, 1e-5f, 1, 16, 2, F, F, F}, NULL},
        {{0, 1e-5f, 2, 16, 1, F, F, F}, NULL},
        {{0, 1e-5f, 65535, 1, 1, F, F, F}, NULL},
        {{0, 1e-5f, 65536, 1, 1, F, F, F}, "65535"},
        {{0, 1e-5f, 65535, 1024, 64, F, F, F}, "2^31 - 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *got = bn_cudnn_refusal(&cases[i].k);
        const char *why = cases[i].why;
        const int ok = why ? got && strstr(got, why) : !got;
        CHECK(ok);
        if (!ok)
            fprintf(stderr, "bn_cudnn_refusal case %zu: %s, expected %s%s\n", i,
                    got ? got : "cuDNN", why ? "a reason with " : "cuDNN", why ? why : "");
    }
    /* every triple of types: cuDNN exactly where x, y and dy are one type, float32 or fp16 */
    const ElemType types[] = {F, B, H};
    for (int i = 0; i < 27; i++) {
        BnCudnnCase t = cases[0].k;
        t.x = types[i % 3];
        t.y = types[i / 3 % 3];
        t.dy = types[i / 9];
        CHECK((bn_cudnn_refusal(&t) == NULL) == (t.x == t.y && t.x == t.dy && t.x != ELEM_BF16));
    }
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
    test_zoo_batch_norms_match_cudnn();
    test_bn_fallback_rule();
#else
    printf("test_cudnn_descriptors: descriptors skipped (cuDNN is in GPU=1 builds only)\n");
#endif
    return check_report("test_cudnn_descriptors");
}
