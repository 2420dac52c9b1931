/* Every engine and backend against the CPU reference, as ggml's test-backend-ops: one table of
 * cases (a cfg snippet of one layer family or a block of the zoo's cfgs, with the [net] shape and
 * batch), each run in training (forward, backward onto gradients that are not zero, then the
 * training net's inference forward) and in inference (a net without gradients: a forward, a
 * second of the same weights, one after new running statistics, one after new weights), on every
 * engine
 * of the engine table that is built and changes how the case computes, against the same net on
 * its base engine: the reference (engine=ref winograd=0, float32), or for the bf16 engines the
 * rounding reference (engine=ref precision=bf16), itself compared with the float32 reference.
 * Both nets come from the same seed (their
 * parameter and statistics slabs must be equal bit for bit) and run the same input, labels,
 * output gradient and random draws; the outputs, the loss, the input gradient, every parameter
 * gradient and the change of the running statistics must agree within the engine's tolerance
 * (engine_tolerance: derived below, relative to the reference tensor's largest magnitude). A
 * failure names the case, engine, mode, tensor, worst index, both values and the tolerance; the
 * binary exits non-zero. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/dnnl_conv.h"
#include "check.h"
#include "core/net.h"
#include "data/boxes.h"
#include "layers/maxpool.h"
#include "layers/recurrent.h"
#include "layers/region.h"
#include "layers/yolo.h"

/* ---- the cases ---- */

typedef struct OpCase {
    const char *name;
    const char *net;  /* [net] keys: batch and the input's shape (seq, vocab, inputs) */
    const char *body; /* the layers */
    /* An engine that must apply to the case where it is built (its layers run there): a case it
     * leaves on the reference fails instead of being skipped. NULL: none. */
    const char *must_run_on;
} OpCase;

#define IMAGE(batch, c, h, w) "batch=" #batch "\nchannels=" #c "\nheight=" #h "\nwidth=" #w "\n"
/* A sequence net of token ids (an [embedding] first) or of inputs features a token. */
#define TOKENS(batch, seq, vocab) "batch=" #batch "\nseq=" #seq "\nvocab=" #vocab "\n"
#define FEATURES(batch, seq, inputs) "batch=" #batch "\nseq=" #seq "\ninputs=" #inputs "\n"
/* A sequence-to-sequence net's input row: source then seq values (token ids where read so). */
#define PAIRS(batch, source, seq) "batch=" #batch "\nsource=" #source "\nseq=" #seq "\ninputs=1\n"

/* The "gpu nhwc" residual cases' head: a 1x1 convolution, the global [avgpool] reading NHWC, a
 * classifier. */
#define NHWC_HEAD                                                                                  \
    "[convolutional]\nfilters=5\nsize=1\nactivation=logistic\n[avgpool]\n"                         \
    "[connected]\noutput=4\nactivation=linear\n[softmax]\n"
/* The "gpu nhwc" residual case's layers after its two convolutions. */
#define RESIDUAL_BN_HEAD                                                                           \
    "[shortcut]\nfrom=-2\nactivation=tanh\n[batchnorm]\nactivation=linear\n" NHWC_HEAD
#define CONV(filters, size, stride, pad, groups, bn, act)                                          \
    "[convolutional]\nfilters=" #filters "\nsize=" #size "\nstride=" #stride "\npad=" #pad         \
    "\ngroups=" #groups "\nbatch_normalize=" #bn "\nactivation=" #act "\n"

#define MAXPOOL_2 "[maxpool]\nsize=2\nstride=2\n"
#define UPSAMPLE_2 "[upsample]\nstride=2\n"
#define ROUTE(layers) "[route]\nlayers=" layers "\n"
#define REGION_SOFTMAX "[region]\nanchors=1,1.5, 2.5,2\nnum=2\nclasses=4\nsoftmax=1\nbias_match=1\n"
/* a [yolo] head of the yolov3-tiny-style case: anchors mask (a string) of its four, 2 classes */
#define YOLO_HEAD(mask)                                                                            \
    "[yolo]\nmask=" mask "\nanchors=2,3, 4,5, 7,6, 10,12\nnum=4\nclasses=2\nignore_thresh=0.2\n"
/* the same whose loss never compares a predicted box's IoU (matching_reads_predictions) */
#define YOLO_HEAD_ANCHORED(mask)                                                                   \
    "[yolo]\nmask=" mask "\nanchors=2,3, 4,5, 7,6, 10,12\nnum=4\nclasses=2\nignore_thresh=1\n"     \
    "truth_thresh=1\n"

/* A case of a 3x3 tanh conv of filters outputs, then layers (named what) as the net's output. */
#define AS_OUTPUT(what, image, filters, layers)                                                    \
    {                                                                                              \
        "gpu 16-bit: conv, " what " as the output", image,                                         \
            CONV(filters, 3, 1, 1, 1, 1, tanh) layers, NULL                                        \
    }

/* test_dnnl_conv's single convolutions: [net] and [convolutional] keys, engine "dnnl" required */
#define DNNL_CONV(c, h, w, filters, size, stride, pad, padding, groups, bn, act)                   \
    IMAGE(3, c, h, w),                                                                             \
        "[convolutional]\nfilters=" #filters "\nsize=" #size "\nstride=" #stride "\npad=" #pad     \
        "\npadding=" #padding "\ngroups=" #groups "\nbatch_normalize=" #bn "\nactivation=" #act    \
        "\n",                                                                                      \
        "dnnl"

/* The keys are those the parsers in src/layers/ read; the shapes are small and odd (channels
 * not multiples of 8, maps that leave partial tiles and windows, 1x1 maps) and the blocks are
 * those of the cfgs in cfg/. */
static const OpCase cases[] = {
    /* every convolution configuration the cfgs use (kernel, stride, padding, groups and
     * depthwise, with and without batch norm, each activation oneDNN's fusion treats apart) at
     * batch 3 on small odd maps: oneDNN's blocked layouts (channels padded where not a multiple of
     * 8) and its plain ones; every one of them runs on oneDNN where it is built */
    {"resnet*_cifar, cifar_small: first layer", DNNL_CONV(3, 9, 7, 8, 3, 1, 1, 0, 1, 1, relu)},
    {"resnet*: 3x3 body, before the shortcut", DNNL_CONV(8, 9, 7, 8, 3, 1, 1, 0, 1, 1, linear)},
    {"resnet*: 3x3 stride 2", DNNL_CONV(8, 9, 7, 16, 3, 2, 1, 0, 1, 1, relu)},
    {"resnet*: 1x1 stride 2 projection", DNNL_CONV(8, 9, 7, 16, 1, 2, 0, 0, 1, 1, linear)},
    {"resnet50: 1x1 bottleneck", DNNL_CONV(8, 9, 7, 4, 1, 1, 0, 0, 1, 1, relu)},
    {"mobilenetv2: 1x1 expansion", DNNL_CONV(8, 9, 7, 16, 1, 1, 0, 0, 1, 1, relu6)},
    {"mobilenetv2: 1x1 projection", DNNL_CONV(8, 9, 7, 8, 1, 1, 0, 0, 1, 1, linear)},
    {"resnet18/34/50: 7x7 stride 2 stem", DNNL_CONV(3, 17, 15, 8, 7, 2, 1, 0, 1, 1, relu)},
    {"mobilenetv2: depthwise 3x3", DNNL_CONV(8, 9, 7, 8, 3, 1, 1, 0, 8, 1, relu6)},
    {"mobilenetv2: depthwise 3x3 stride 2", DNNL_CONV(8, 9, 7, 8, 3, 2, 1, 0, 8, 1, relu6)},
    {"depthwise with 2 filters per channel", DNNL_CONV(8, 9, 7, 16, 3, 1, 1, 0, 8, 1, relu6)},
    {"grouped (groups=2)", DNNL_CONV(8, 9, 7, 12, 3, 1, 1, 0, 2, 1, leaky)},
    {"darknet19, cifar_darknet: 3x3 leaky", DNNL_CONV(8, 9, 7, 8, 3, 1, 1, 0, 1, 1, leaky)},
    {"darknet19: size=1 pad=1 (padding 0)", DNNL_CONV(8, 9, 7, 8, 1, 1, 1, 0, 1, 1, leaky)},
    {"vgg16, lenet: no batch norm, relu fused", DNNL_CONV(3, 9, 7, 8, 3, 1, 1, 0, 1, 0, relu)},
    {"lenet: 5x5 pad=1 (padding 2)", DNNL_CONV(3, 11, 9, 6, 5, 1, 1, 0, 1, 0, relu)},
    {"lenet: 5x5 unpadded", DNNL_CONV(3, 11, 9, 6, 5, 1, 0, 0, 1, 0, relu)},
    {"darknet19, cifar_darknet: 1x1 classifier, bias",
     DNNL_CONV(8, 9, 7, 10, 1, 1, 1, 0, 1, 0, linear)},
    {"cifar_darknet: 1x1 leaky, bias, fused", DNNL_CONV(8, 9, 7, 8, 1, 1, 1, 0, 1, 0, leaky)},
    {"darknet's default activation, grouped, bias",
     DNNL_CONV(8, 9, 7, 8, 3, 1, 1, 0, 2, 0, logistic)},
    {"odd: stride 3, padding 2, uneven windows", DNNL_CONV(8, 10, 8, 8, 3, 3, 0, 2, 1, 1, linear)},
    {"densenet121: bias-free 3x3 (bias=0)", IMAGE(3, 8, 9, 7),
     "[convolutional]\nfilters=8\nsize=3\npad=1\nbias=0\nactivation=linear\n", "dnnl"},
    {"densenet121: bias-free 1x1, relu fused", IMAGE(3, 8, 9, 7),
     "[convolutional]\nfilters=16\nsize=1\nbias=0\nactivation=relu\n", "dnnl"},
    /* non-square kernels (Inception v3's factorised convolutions: size=h,w, stride and padding
     * per axis), on oneDNN and on the reference's im2col (never Winograd, the depthwise loops or
     * the few-channel kernel, which take square windows) */
    {"inception_v3: 1x7 same, bn relu", IMAGE(3, 8, 9, 7),
     "[convolutional]\nfilters=8\nsize=1,7\npadding=0,3\nbatch_normalize=1\nbias=0\n"
     "activation=relu\n",
     "dnnl"},
    {"inception_v3: 7x1 same, bn relu", IMAGE(3, 8, 9, 7),
     "[convolutional]\nfilters=8\nsize=7,1\npadding=3,0\nbatch_normalize=1\nbias=0\n"
     "activation=relu\n",
     "dnnl"},
    {"inception_v3: 1x3 and 3x1 (pad=1), 16 channels (not Winograd)", IMAGE(3, 16, 6, 5),
     "[convolutional]\nfilters=16\nsize=1,3\npad=1\nbatch_normalize=1\nactivation=relu\n"
     "[convolutional]\nfilters=16\nsize=3,1\npad=1\nbatch_normalize=1\nactivation=relu\n",
     "dnnl"},
    {"non-square strides 2,1 and padding 1,2, bias leaky", IMAGE(3, 5, 11, 8),
     "[convolutional]\nfilters=6\nsize=3,5\nstride=2,1\npadding=1,2\nactivation=leaky\n", "dnnl"},
    {"non-square grouped and depthwise (im2col, not the depthwise loops)", IMAGE(2, 8, 7, 9),
     "[convolutional]\nfilters=8\nsize=1,3\nstride=1,2\npadding=0,1\ngroups=2\n"
     "batch_normalize=1\nactivation=linear\n"
     "[convolutional]\nfilters=8\nsize=3,1\npadding=1,0\ngroups=8\nactivation=relu\n",
     "dnnl"},
    /* Winograd's (3x3 same, 16 or more channels and filters, maps of 4 or more a side), odd
     * channel counts, 1x1 maps, the smooth activations */
    {"conv 3x3 same 16->16 bn leaky", IMAGE(2, 16, 8, 6), CONV(16, 3, 1, 1, 1, 1, leaky),
     "winograd"},
    {"conv 3x3 same 16->24 relu, bias", IMAGE(2, 16, 5, 7), CONV(24, 3, 1, 1, 1, 0, relu),
     "winograd"},
    {"conv 3x3 same stack 16->24->16 (Winograd's input gradients)", IMAGE(3, 16, 8, 12),
     CONV(24, 3, 1, 1, 1, 1, leaky) CONV(16, 3, 1, 1, 1, 0, relu), "winograd"},
    /* an inference net's Winograd layers fold the batch norm into their weights and apply the
     * bias and activation in the output transform (the others after it), a residual sum too
     * where the shortcut is fused into them; batch 1 and more, odd and even maps */
    {"conv 3x3 same 16->16 bn relu, 15x15, batch 1", IMAGE(1, 16, 15, 15),
     CONV(16, 3, 1, 1, 1, 1, relu), "winograd"},
    {"conv 3x3 same 16->16 bn relu6, 14x14", IMAGE(2, 16, 14, 14), CONV(16, 3, 1, 1, 1, 1, relu6),
     "winograd"},
    {"conv 3x3 same 16->24 bn linear, 7x9", IMAGE(3, 16, 7, 9), CONV(24, 3, 1, 1, 1, 1, linear),
     "winograd"},
    {"conv 3x3 same 16->16 bn logistic (activation after)", IMAGE(2, 16, 6, 5),
     CONV(16, 3, 1, 1, 1, 1, logistic), "winograd"},
    {"conv 3x3 same 16->16 bias leaky, 15x15, batch 1", IMAGE(1, 16, 15, 15),
     CONV(16, 3, 1, 1, 1, 0, leaky), "winograd"},
    {"conv 3x3 same 16->16 bias-free linear", IMAGE(2, 16, 5, 6),
     "[convolutional]\nfilters=16\nsize=3\npad=1\nbias=0\nactivation=linear\n", "winograd"},
    {"winograd residual block, shortcut relu fused, 15x15", IMAGE(2, 16, 15, 15),
     CONV(16, 3, 1, 1, 1, 1, relu) CONV(16, 3, 1, 1, 1, 1, relu)
         CONV(16, 3, 1, 1, 1, 1,
              linear) "[shortcut]\nfrom=-3\nactivation=relu\n" CONV(8, 1, 1, 0, 1, 0, linear),
     "winograd"},
    {"winograd residual block, shortcut leaky fused, 14x14, batch 1", IMAGE(1, 16, 14, 14),
     CONV(16, 3, 1, 1, 1, 1, relu) CONV(16, 3, 1, 1, 1, 0, linear) "[shortcut]\nfrom=-2\n"
                                                                   "activation=leaky\n",
     "winograd"},
    {"winograd residual blocks, shortcuts relu6 and linear fused", IMAGE(3, 16, 8, 7),
     CONV(16, 3, 1, 1, 1, 1, relu)
         CONV(16, 3, 1, 1, 1, 1,
              linear) "[shortcut]\nfrom=-2\n"
                      "activation=relu6\n" CONV(16, 3, 1, 1, 1, 1,
                                                linear) "[shortcut]\nfrom=-2\nactivation=linear\n",
     "winograd"},
    {"conv 5->7 3x3 bn tanh (odd channels)", IMAGE(3, 5, 6, 5), CONV(7, 3, 1, 1, 1, 1, tanh), NULL},
    {"conv 3x3 on 1x1 maps 8->8 bn elu", IMAGE(3, 8, 1, 1), CONV(8, 3, 1, 1, 1, 1, elu), NULL},
    {"conv 3x3 bn gelu", IMAGE(2, 4, 6, 5), CONV(8, 3, 1, 1, 1, 1, gelu), NULL},
    {"conv 3x3 bn swish", IMAGE(2, 4, 6, 5), CONV(8, 3, 1, 1, 1, 1, swish), NULL},
    {"conv 3x3 bn mish", IMAGE(2, 4, 6, 5), CONV(8, 3, 1, 1, 1, 1, mish), NULL},
    {"conv 3x3 bn hardswish", IMAGE(2, 4, 6, 5), CONV(8, 3, 1, 1, 1, 1, hardswish), NULL},
    {"conv 3x3 bn hardsigmoid", IMAGE(2, 4, 6, 5), CONV(8, 3, 1, 1, 1, 1, hardsigmoid), NULL},
    /* the other families */
    {"connected 18->5 linear", IMAGE(3, 2, 3, 3), "[connected]\noutput=5\nactivation=linear\n",
     NULL},
    {"connected bn leaky", IMAGE(4, 3, 2, 2),
     "[connected]\noutput=6\nbatch_normalize=1\nactivation=leaky\n", NULL},
    {"conv then connected", IMAGE(2, 8, 6, 6),
     CONV(16, 3, 2, 1, 1, 1, leaky) "[connected]\noutput=7\nactivation=tanh\n", NULL},
    /* leaky before the batch norm: a bias right before it has no gradient (0 up to round-off) */
    {"batchnorm after conv", IMAGE(3, 8, 5, 6), CONV(16, 3, 1, 1, 1, 0, leaky) "[batchnorm]\n",
     NULL},
    {"maxpool 2x2/2 after conv", IMAGE(2, 8, 9, 7),
     CONV(16, 3, 1, 1, 1, 1, relu) "[maxpool]\nsize=2\nstride=2\n", NULL},
    {"maxpool 3x3/2 padding=2 (darknet)", IMAGE(2, 8, 11, 13),
     CONV(16, 3, 1, 1, 1, 1, relu) "[maxpool]\nsize=3\nstride=2\npadding=2\n", NULL},
    {"maxpool 2x2/1 (darknet's padding 1)", IMAGE(2, 8, 7, 6),
     CONV(16, 3, 1, 1, 1, 1, leaky) "[maxpool]\nsize=2\nstride=1\n", NULL},
    {"avgpool after conv", IMAGE(2, 8, 7, 5), CONV(16, 3, 1, 1, 1, 1, relu) "[avgpool]\n", NULL},
    {"shortcut residual block", IMAGE(2, 3, 6, 5),
     CONV(16, 3, 1, 1, 1, 0, relu)
         CONV(16, 3, 1, 1, 1, 1,
              linear) "[shortcut]\nfrom=-2\nactivation=linear\n" CONV(8, 1, 1, 0, 1, 0, linear),
     NULL},
    {"shortcut relu over a 1x1 bottleneck", IMAGE(2, 8, 7, 6),
     CONV(16, 3, 1, 1, 1, 1, relu) CONV(8, 1, 1, 0, 1, 1, relu)
         CONV(16, 3, 1, 1, 1, 1,
              linear) "[shortcut]\nfrom=-3\nactivation=relu\n" CONV(8, 1, 1, 0, 1, 0, linear),
     NULL},
    /* engine=auto's inference on AVX2: the stride-1 3x3 layers on 14x14 maps on Winograd, the
     * 1x1 and stride-2 ones on oneDNN (dnnl_conv_inference_preferred), the layouts changing
     * between them, the shortcut not fused; a stride-1 3x3 layer on the 7x7 map on oneDNN (64
     * channels: training's rule puts the 3x3 layers on oneDNN too) */
    {"resnet blocks on 14x14 then 7x7 maps, engines mixed in inference", IMAGE(2, 16, 14, 14),
     CONV(64, 1, 1, 0, 1, 1, relu) CONV(64, 3, 1, 1, 1, 1, relu)
         CONV(64, 3, 1, 1, 1, 1, linear) "[shortcut]\nfrom=-3\nactivation=relu\n" CONV(
             24, 3, 2, 1, 1, 1, relu) CONV(24, 3, 1, 1, 1, 1, linear) "[shortcut]\nfrom=-2\n",
     "auto"},
    {"shortcut of other sizes, alpha, beta", IMAGE(2, 4, 8, 8),
     CONV(8, 3, 1, 1, 1, 1, leaky)
         CONV(6, 3, 2, 1, 1, 1, leaky) "[shortcut]\nfrom=-2\nalpha=0.5\nbeta=2\nactivation=leaky\n",
     NULL},
    {"route of two layers", IMAGE(2, 4, 7, 6),
     CONV(8, 3, 1, 1, 1, 1, relu)
         CONV(16, 1, 1, 0, 1, 1, relu) "[route]\nlayers=-1,-2\n" CONV(8, 1, 1, 0, 1, 0, linear),
     NULL},
    {"softmax loss after connected", IMAGE(3, 2, 4, 4),
     "[connected]\noutput=6\nactivation=linear\n[softmax]\n", NULL},
    {"softmax label_smoothing and [cost] after conv and avgpool", IMAGE(3, 3, 5, 5),
     CONV(10, 3, 1, 1, 1, 1, leaky) "[avgpool]\n[softmax]\nlabel_smoothing=0.1\n[cost]\n", NULL},
    {"dropout after conv", IMAGE(2, 4, 6, 6),
     CONV(8, 3, 1, 1, 1, 1, relu) "[dropout]\nprobability=0.5\n" CONV(6, 1, 1, 0, 1, 0, linear),
     NULL},
    {"upsample after conv", IMAGE(2, 4, 5, 4),
     CONV(8, 3, 1, 1, 1, 1, leaky) "[upsample]\nstride=2\n" CONV(4, 3, 1, 1, 1, 0, linear), NULL},
    {"reorg after conv", IMAGE(2, 4, 6, 8),
     CONV(8, 3, 1, 1, 1, 1, leaky) "[reorg]\nstride=2\n" CONV(4, 1, 1, 0, 1, 0, linear), NULL},
    {"squeeze-excitation (avgpool, 1x1 convs, scale_channels)", IMAGE(2, 3, 6, 5),
     CONV(8, 3, 1, 1, 1, 1, hardswish) "[avgpool]\n" CONV(4, 1, 1, 0, 1, 0, relu)
         CONV(8, 1, 1, 0, 1, 0, hardsigmoid) "[scale_channels]\nfrom=-4\n",
     NULL},
    {"shufflenet unit (grouped 1x1, shuffle, depthwise)", IMAGE(2, 4, 5, 6),
     CONV(6, 1, 1, 0, 2, 1, relu) "[shuffle]\ngroups=2\n" CONV(6, 3, 1, 1, 6, 1, linear), NULL},
    {"pad (asymmetric, value) around a strided conv", IMAGE(2, 3, 6, 5),
     "[pad]\nleft=1\nright=2\nbottom=1\nvalue=0.5\n" CONV(
         8, 3, 2, 0, 1, 1, leaky) "[pad]\npadding=1\n" CONV(4, 3, 1, 0, 1, 0, linear),
     NULL},
    /* ConvNeXt's block: depthwise 7x7, LayerNorm2d, 1x1 up (gelu) and down, layer scale, drop
     * path (a draw per sample, the CPU's keys on the device), the residual sum */
    {"convnext block (layernorm channels=1, layer_scale, drop_path)", IMAGE(3, 4, 6, 5),
     CONV(8, 3, 1, 1, 1, 0, linear)
         CONV(8, 7, 1, 1, 8, 0, linear) "[layernorm]\nchannels=1\n" CONV(32, 1, 1, 0, 1, 0, gelu)
             CONV(8, 1, 1, 0, 1, 0, linear) "[layer_scale]\ninit=0.5\n"
                                            "[drop_path]\nprobability=0.5\n[shortcut]\nfrom=-7\n",
     NULL},
    /* DenseNet's dense layer: batch norm and relu on a concatenation no convolution wrote, then
     * 1x1 and 3x3 convs, the new channels routed onto the old */
    {"densenet layer ([batchnorm] relu on a route, 1x1, 3x3, route)", IMAGE(3, 4, 5, 6),
     CONV(6, 3, 1, 1, 1, 0, linear) "[batchnorm]\nactivation=relu\n" CONV(8, 1, 1, 0, 1, 1, relu)
         CONV(4, 3, 1, 1, 1, 0, linear) "[route]\nlayers=0,-1\n"
                                        "[batchnorm]\nactivation=relu\n",
     NULL},
    /* swish's derivative reads its input: l->pre is a buffer of its own */
    {"[batchnorm] swish on the net input", IMAGE(2, 3, 5, 4),
     "[batchnorm]\nactivation=swish\n" CONV(4, 3, 1, 1, 1, 0, linear), NULL},
    /* a vision transformer's embedding: patches to token rows, class token, position embedding */
    {"vit embedding (patch conv, tokens with class token and positions, layernorm)",
     IMAGE(2, 3, 8, 12),
     "[convolutional]\nfilters=8\nsize=4\nstride=4\nactivation=linear\n[tokens]\n"
     "class_token=1\npositional=1\n[layernorm]\neps=0.000001\n",
     NULL},
    /* torchvision's EncoderBlock on those tokens, then the class token's head */
    {"vit block (attention on token rows of an image net, mlp, select_token, head)",
     IMAGE(2, 3, 8, 12),
     "[convolutional]\nfilters=8\nsize=4\nstride=4\nactivation=linear\n[tokens]\n"
     "class_token=1\npositional=1\n[layernorm]\n[attention]\nheads=2\ncausal=0\n"
     "[shortcut]\nfrom=1\n[layernorm]\n[linear]\noutput=16\nactivation=gelu\n[linear]\n"
     "output=8\n[shortcut]\nfrom=4\n[select_token]\n[connected]\noutput=5\n"
     "activation=linear\n[softmax]\n",
     NULL},
    {"crop (random windows, flip) before conv", IMAGE(3, 3, 9, 8),
     "[crop]\ncrop_height=6\ncrop_width=5\nflip=1\n" CONV(8, 3, 1, 1, 1, 1, relu), NULL},
    /* resnet's blocks: a downsampling block with [route] back to its input and the 1x1/2
     * projection, both shortcuts fused into the convolution before them on oneDNN, every output
     * between them in nChw8c */
    {"resnet blocks with route and projection", IMAGE(3, 3, 9, 10),
     CONV(16, 3, 1, 1, 1, 1, relu) CONV(16, 1, 1, 0, 1, 1, leaky) CONV(16, 3, 1, 1, 1, 0, leaky)
         CONV(16, 3, 1, 1, 1, 1, linear) "[shortcut]\nfrom=-3\nactivation=relu\n" CONV(32, 3, 2, 1,
                                                                                       1, 1, relu)
             CONV(32, 3, 1, 1, 1, 1, linear) "[route]\nlayers=-3\n" CONV(
                 32, 1, 2, 0, 1, 1, linear) "[shortcut]\nfrom=-3\nactivation=relu\n"
                                            "[route]\nlayers=-1,-5\n[avgpool]\n",
     NULL},
    {"resnet stem through pooling", IMAGE(2, 3, 11, 13),
     CONV(16, 3, 1, 1, 1, 1, relu) "[maxpool]\nsize=3\nstride=2\npadding=2\n" CONV(16, 3, 1, 1, 1,
                                                                                   1, relu)
         CONV(16, 3, 1, 1, 1, 1, linear) "[shortcut]\nfrom=-3\nactivation=relu\n[maxpool]\nsize="
                                         "2\nstride=1\n" CONV(16, 1, 1, 0, 1, 0,
                                                              linear) "[avgpool]\n",
     NULL},
    {"mobilenetv2 inverted residual", IMAGE(2, 3, 7, 7),
     CONV(8, 3, 1, 1, 1, 1, relu6) CONV(16, 1, 1, 0, 1, 1, relu6) CONV(16, 3, 1, 1, 16, 1, relu6)
         CONV(8, 1, 1, 0, 1, 1, linear) "[shortcut]\nfrom=-4\nactivation=linear\n",
     NULL},
    /* sequence families */
    {"linear gelu and layernorm", FEATURES(2, 5, 6),
     "[linear]\noutput=12\nactivation=gelu\n[layernorm]\n[linear]\noutput=6\n", NULL},
    {"layer_scale and drop_path on tokens", FEATURES(3, 5, 6),
     "[linear]\noutput=6\n[layer_scale]\ninit=0.5\n[drop_path]\nprobability=0.4\n"
     "[shortcut]\nfrom=-3\n",
     NULL},
    {"attention heads=2 causal", FEATURES(2, 6, 8), "[attention]\nheads=2\n", NULL},
    {"attention causal=0", FEATURES(2, 5, 8), "[attention]\nheads=2\ncausal=0\n", NULL},
    {"attention dropout", FEATURES(2, 6, 8), "[attention]\nheads=2\ndropout=0.25\n", NULL},
    /* layer 1 (3 rows of 8) is the memory, layer 3 (6 rows of 8) the query */
    {"attention source= (cross-attention)", FEATURES(2, 6, 16),
     "[linear]\noutput=16\n[maxpool]\nsize=1\nstride=2\n[route]\nlayers=0\n[linear]\noutput=8\n"
     "[attention]\nheads=2\nsource=1\n",
     NULL},
    /* cross-attention's dropout: a mask [T][S] per (sample, head), the CPU's draws on the GPU */
    {"attention source= (cross-attention) dropout", FEATURES(2, 6, 16),
     "[linear]\noutput=16\n[maxpool]\nsize=1\nstride=2\n[route]\nlayers=0\n[linear]\noutput=8\n"
     "[attention]\nheads=2\nsource=1\ndropout=0.25\n",
     NULL},
    /* key_padding= in a sequence-to-sequence net of 4 source and 4 target rows, through a linear
     * and a pool to 4 rows of 8 (layer 1): the input's N(0,1) values are the ids, the negative
     * ones padding (some rows all of it); self-attention bidirectional over the source's keys,
     * causal over the target's, then cross-attention from layer 1 over the source's */
    {"attention key_padding=source", PAIRS(3, 4, 4),
     "[linear]\noutput=16\n[maxpool]\nsize=1\nstride=2\n"
     "[attention]\nheads=2\ncausal=0\nkey_padding=source\n",
     NULL},
    {"attention key_padding=target causal, cross-attention key_padding=source", PAIRS(3, 4, 4),
     "[linear]\noutput=16\n[maxpool]\nsize=1\nstride=2\n"
     "[attention]\nheads=2\nkey_padding=target\n"
     "[attention]\nheads=2\nsource=1\nkey_padding=source\n",
     NULL},
    /* the same with dropout in both: the key-padded self-attention on the GPU's cross-attention
     * kernels, and the cross-attention */
    {"attention key_padding=target causal dropout, cross-attention key_padding=source dropout",
     PAIRS(3, 4, 4),
     "[linear]\noutput=16\n[maxpool]\nsize=1\nstride=2\n"
     "[attention]\nheads=2\nkey_padding=target\ndropout=0.2\n"
     "[attention]\nheads=2\nsource=1\nkey_padding=source\ndropout=0.25\n",
     NULL},
    /* an encoder-decoder's embeddings: the source's 4 ids, then the target's 5 through the
     * source's table (share=0), a cross-attention over the source, the head tied to the table */
    {"embedding part=source, part=target share=0, tie=1", PAIRS(3, 4, 5) "vocab=7\n",
     "[embedding]\noutput=8\npart=source\n[embedding]\noutput=8\npart=target\nshare=0\n"
     "[attention]\nheads=2\nsource=0\n[linear]\ntie=1\n[softmax]\n",
     NULL},
    {"rnn", FEATURES(2, 5, 6), "[rnn]\noutput=7\n", NULL},
    {"lstm", FEATURES(2, 5, 6), "[lstm]\noutput=7\n", NULL},
    {"gru", FEATURES(2, 5, 6), "[gru]\noutput=7\n", NULL},
    {"gpt block (embedding, positional, tie=1)", TOKENS(2, 6, 11),
     "[embedding]\noutput=8\n[positional]\n[layernorm]\n[attention]\nheads=2\n"
     "[shortcut]\nfrom=-3\n[layernorm]\n[linear]\noutput=16\nactivation=gelu\n"
     "[linear]\noutput=8\n[shortcut]\nfrom=-4\n[layernorm]\n[linear]\ntie=1\n[softmax]\n",
     NULL},
    {"char lstm (embedding, lstm, softmax)", TOKENS(2, 6, 9),
     "[embedding]\noutput=6\n[lstm]\noutput=8\n[linear]\n[softmax]\n", NULL},
    /* the families without parameters on the net input, before layers the GPU has (connected,
     * softmax, avgpool): every one of them runs on the gpu row without a convolution */
    {"maxpool 2x2/2 on the input", IMAGE(2, 3, 9, 7),
     "[maxpool]\nsize=2\nstride=2\n[connected]\noutput=5\nactivation=linear\n[softmax]\n", NULL},
    /* the second maxpool writes a fresh input delta (Layer.in_delta_fresh); its windows tie (the
     * first one's overlapping windows repeat maxima), but tied values here share one source, so
     * the gradients cannot tell which one a backend picks */
    {"maxpool 3x3/2 padding=2, then 2x2/1 (fresh delta)", IMAGE(2, 3, 11, 13),
     "[maxpool]\nsize=3\nstride=2\npadding=2\n[maxpool]\nsize=2\nstride=1\n[avgpool]\n"
     "[softmax]\n",
     NULL},
    {"maxpool 3x3/3 padding=0, a whole-map window (global)", IMAGE(3, 4, 6, 6),
     "[maxpool]\nsize=3\nstride=3\npadding=0\n[maxpool]\nsize=2\nstride=2\npadding=0\n"
     "[connected]\noutput=3\nactivation=linear\n[softmax]\n",
     NULL},
    /* four equal values per window (copies of one input: the argmax's choice is invisible in the
     * gradients, as above) */
    {"upsample then maxpool 2x2/2", IMAGE(2, 3, 4, 5),
     "[upsample]\nstride=2\n[maxpool]\nsize=2\nstride=2\n[connected]\noutput=4\n"
     "activation=linear\n[softmax]\n",
     NULL},
    {"upsample stride -2 scale 0.25 (darknet's summing downsample)", IMAGE(2, 3, 4, 6),
     "[upsample]\nstride=-2\nscale=0.25\n[connected]\noutput=5\nactivation=tanh\n", NULL},
    {"upsample stride 3 scale 0.5", IMAGE(2, 2, 3, 2),
     "[upsample]\nstride=3\nscale=0.5\n[connected]\noutput=5\nactivation=tanh\n", NULL},
    {"shortcut of equal shapes, alpha, beta, leaky", IMAGE(2, 3, 6, 5),
     "[maxpool]\nsize=2\nstride=1\n[maxpool]\nsize=3\nstride=1\n"
     "[shortcut]\nfrom=-2\nalpha=0.5\nbeta=2\nactivation=leaky\n"
     "[connected]\noutput=4\nactivation=linear\n[softmax]\n",
     NULL},
    /* from=-1 adds a layer to itself: one delta written, then added to */
    {"shortcut of one layer twice, logistic", IMAGE(2, 2, 5, 4),
     "[maxpool]\nsize=2\nstride=1\n[shortcut]\nfrom=-1\nbeta=-0.5\nactivation=logistic\n"
     "[connected]\noutput=3\nactivation=linear\n",
     NULL},
    /* darknet's mappings: a larger `from` read with stride 2 into fewer channels, then a smaller
     * one spread every 2 outputs */
    {"shortcut from larger and smaller maps, other channels", IMAGE(2, 3, 8, 8),
     "[maxpool]\nsize=2\nstride=1\n[maxpool]\nsize=2\nstride=2\n[route]\nlayers=-1,-1\n"
     "[shortcut]\nfrom=-3\nalpha=0.5\nbeta=2\nactivation=leaky\n[upsample]\nstride=2\n"
     "[shortcut]\nfrom=-4\nactivation=linear\n[connected]\noutput=5\nactivation=linear\n"
     "[softmax]\n",
     NULL},
    {"route of three layers, one named twice", IMAGE(2, 3, 6, 7),
     "[maxpool]\nsize=2\nstride=1\n[maxpool]\nsize=3\nstride=1\n"
     "[route]\nlayers=-1,0,-2\n[avgpool]\n[softmax]\n",
     NULL},
    {"route of channel groups (yolov4-tiny's CSP split)", IMAGE(2, 8, 6, 5),
     "[maxpool]\nsize=2\nstride=1\n[route]\nlayers=-1\ngroups=2\ngroup_id=1\n"
     "[route]\nlayers=-1,-2\ngroups=4\ngroup_id=2\n[avgpool]\n[softmax]\n",
     NULL},
    {"dropout on the input, then after maxpool", IMAGE(3, 3, 6, 5),
     "[dropout]\nprobability=0.3\n[maxpool]\nsize=2\nstride=2\n[dropout]\nprobability=0.5\n"
     "[connected]\noutput=4\nactivation=linear\n[softmax]\n",
     NULL},
    {"scale_channels by an avgpool, tanh", IMAGE(2, 3, 5, 4),
     "[maxpool]\nsize=1\n[avgpool]\n[scale_channels]\nfrom=0\nactivation=tanh\n"
     "[connected]\noutput=4\nactivation=linear\n[softmax]\n",
     NULL},
    {"shuffle groups=3 on the input", IMAGE(2, 6, 3, 4),
     "[shuffle]\ngroups=3\n[connected]\noutput=5\nactivation=linear\n[softmax]\n", NULL},
    {"pad on the input", IMAGE(2, 3, 4, 3),
     "[pad]\ntop=2\nleft=1\nvalue=-0.5\n[connected]\noutput=5\nactivation=linear\n[softmax]\n",
     NULL},
    {"reorg stride 2 on the input", IMAGE(2, 8, 6, 4),
     "[reorg]\nstride=2\n[connected]\noutput=5\nactivation=linear\n[softmax]\n", NULL},
    {"crop (random windows, flip) on the input", IMAGE(3, 3, 9, 8),
     "[crop]\ncrop_height=6\ncrop_width=5\nflip=1\n[maxpool]\nsize=2\nstride=2\n"
     "[connected]\noutput=4\nactivation=linear\n[softmax]\n",
     NULL},
    {"crop noadjust=1, no flip", IMAGE(2, 2, 7, 6),
     "[crop]\ncrop_height=4\ncrop_width=6\nnoadjust=1\n[connected]\noutput=3\n"
     "activation=linear\n",
     NULL},
    {"softmax and [cost] after connected", IMAGE(3, 2, 3, 3),
     "[connected]\noutput=6\nactivation=linear\n[softmax]\n[cost]\n", NULL},
    /* 16-bit activations on the GPU under bf16 and fp16 (core/net_storage.h): each family that
     * stores them reading float32 (the net input) and 16 bits, and writing 16 bits and float32
     * (the net's output, or for a reader without 16-bit kernels); the tolerance's 16-bit term is
     * engine_tolerance's */
    {"gpu 16-bit: maxpool 2x2/2 into maxpool 1x1, then connected", IMAGE(2, 3, 8, 7),
     "[maxpool]\nsize=2\nstride=2\n[maxpool]\nsize=1\nstride=1\n[connected]\noutput=5\n"
     "activation=linear\n",
     NULL},
    {"gpu 16-bit: avgpool 3x3/1 padding 1 into global avgpool, then connected", IMAGE(2, 4, 6, 5),
     "[avgpool]\nsize=3\nstride=1\npadding=1\n[avgpool]\n[connected]\noutput=3\n"
     "activation=linear\n",
     NULL},
    /* without kinks, so that the gradients are compared too: every output but the loss's input in
     * 16 bits, the activations' inputs float32 (a buffer of their own) or 16-bit (in place) */
    {"gpu 16-bit: conv bn tanh, conv bias, [batchnorm] swish, conv bn logistic, avgpools, softmax",
     IMAGE(4, 3, 7, 6),
     CONV(8, 3, 1, 1, 1, 1, tanh)
         CONV(8, 3, 2, 1, 1, 0, linear) "[batchnorm]\nactivation=swish\n" CONV(
             6, 1, 1, 0, 1, 1, logistic) "[avgpool]\nsize=2\nstride=1\n[avgpool]\n"
                                         "[connected]\noutput=4\nactivation=linear\n[softmax]\n",
     NULL},
    {"gpu 16-bit: residual blocks (shortcut same shape, then of other sizes, alpha, beta)",
     IMAGE(2, 4, 8, 7),
     CONV(8, 3, 1, 1, 1, 1, tanh) CONV(8, 3, 1, 1, 1, 1, linear) "[shortcut]\nfrom=-2\n" CONV(
         6, 3, 2, 1, 1, 1, swish) "[shortcut]\nfrom=-2\nalpha=0.5\nbeta=2\n"
                                  "activation=logistic\n" CONV(4, 1, 1, 0, 1, 0, linear),
     NULL},
    /* a [yolo] head's output is float32 (the loss reads it): the route's inputs are 16-bit,
     * 16-bit, float32 (the head's loss matches on anchors alone: thresholds of 1) */
    {"gpu 16-bit: route (groups) of two 16-bit inputs and a [yolo] head's float32 output",
     IMAGE(2, 4, 6, 5),
     CONV(8, 3, 1, 1, 1, 1, tanh) CONV(14, 3, 1, 1, 1, 1, tanh) YOLO_HEAD_ANCHORED(
         "0,1") "[route]\nlayers=0,1,2\ngroups=2\ngroup_id=1\n" CONV(4, 1, 1, 0, 1, 0, linear),
     NULL},
    /* the index maps and [scale_channels] between 16-bit layers, each reading and writing 16 bits:
     * a squeeze-excitation's scaling, a shuffle, a pad, a random crop, darknet's summing downsample
     * and a reorg (a net without kinks, so that the gradients are compared too) */
    {"gpu 16-bit: shuffle, pad, crop, scale_channels, upsample -2, upsample 2, reorg, conv",
     IMAGE(2, 4, 8, 7),
     CONV(8, 3, 1, 1, 1, 1, tanh) "[shuffle]\ngroups=4\n[pad]\ntop=1\nleft=2\nvalue=-0.5\n"
                                  "[crop]\ncrop_height=8\ncrop_width=8\nflip=1\n[avgpool]\n"
                                  "[scale_channels]\nfrom=-2\nactivation=tanh\n"
                                  "[upsample]\nstride=-2\nscale=0.25\n[upsample]\nstride=2\n"
                                  "[reorg]\nstride=2\n" CONV(4, 1, 1, 0, 1, 0, linear),
     NULL},
    /* each of those reading 16 bits and writing the float32 net output */
    AS_OUTPUT("shuffle", IMAGE(2, 4, 4, 3), 8, "[shuffle]\ngroups=2\n"),
    AS_OUTPUT("pad", IMAGE(2, 4, 4, 3), 5, "[pad]\nbottom=2\nright=1\nvalue=0.25\n"),
    AS_OUTPUT("crop", IMAGE(3, 4, 7, 6), 5, "[crop]\ncrop_height=4\ncrop_width=5\nflip=1\n"),
    AS_OUTPUT("reorg", IMAGE(2, 4, 4, 6), 8, "[reorg]\nstride=2\n"),
    AS_OUTPUT("upsample stride 3 scale 0.5", IMAGE(2, 4, 3, 2), 5,
              "[upsample]\nstride=3\nscale=0.5\n"),
    AS_OUTPUT("avgpool, scale_channels logistic", IMAGE(2, 4, 4, 3), 5,
              "[avgpool]\n[scale_channels]\nfrom=-2\nactivation=logistic\n"),
    /* the detection heads reading 16 bits and writing their input gradients in 16 bits, their
     * losses matching on anchors and truths alone (matching_reads_predictions), every layer
     * before them 16-bit: a yolov3-tiny of two heads, its route and upsample; a yolov2's
     * passthrough (reorg, route) into [region] */
    {"gpu 16-bit: yolov3-tiny-style (conv tanh, two [yolo] heads, route, upsample)",
     IMAGE(2, 3, 8, 8),
     CONV(6, 3, 1, 1, 1, 1, tanh) CONV(8, 3, 2, 1, 1, 1, tanh) CONV(14, 1, 1, 0, 1, 0, linear)
         YOLO_HEAD_ANCHORED("2,3") ROUTE("-3") UPSAMPLE_2 ROUTE("-1,0")
             CONV(14, 1, 1, 0, 1, 0, linear) YOLO_HEAD_ANCHORED("0,1"),
     NULL},
    {"gpu 16-bit: yolov2-style (conv tanh, reorg, route, [region] softmax bias_match thresh=1)",
     IMAGE(2, 3, 8, 8),
     CONV(4, 3, 1, 1, 1, 1, tanh) CONV(8, 3, 2, 1, 1, 1,
                                       tanh) ROUTE("-2") "[reorg]\nstride=2\n" ROUTE("-1,-3")
         CONV(18, 1, 1, 0, 1, 0,
              linear) "[region]\nanchors=1,1.5, 2.5,2\nnum=2\nclasses=4\nsoftmax=1\nbias_match=1\n"
                      "thresh=1\n",
     NULL},
    /* [layernorm] over an image's channels (its strided rows), [dropout] and [softmax] reading and
     * writing 16 bits, [cost] reading them */
    {"gpu 16-bit: layernorm channels=1, dropout, softmax, cost", IMAGE(2, 3, 5, 4),
     CONV(6, 3, 1, 1, 1, 0, tanh) "[layernorm]\nchannels=1\n[dropout]\nprobability=0.3\n" CONV(
         4, 1, 1, 0, 1, 0, linear) "[avgpool]\n[softmax]\n[cost]\n",
     NULL},
    /* bidirectional attention with dropout between 16-bit layers: its input, output and their
     * gradients in 16 bits (and, on every GPU row, attention's dropout after another layer, whose
     * work the net once sized without the dropped weights) */
    {"gpu 16-bit: linear, attention causal=0 dropout, layernorm, dropout, linear, softmax",
     FEATURES(2, 6, 8),
     "[linear]\noutput=8\nactivation=tanh\n[attention]\nheads=2\ncausal=0\ndropout=0.25\n"
     "[layernorm]\n[dropout]\nprobability=0.2\n[linear]\noutput=5\n[softmax]\n",
     NULL},
    /* the recurrent layers reading and writing 16 bits (their recurrence float32 inside), [lstm]
     * on the per-step path and on the fused one ("char lstm": the fused one reading the
     * [embedding]'s table) */
    {"gpu 16-bit: linear tanh, rnn tanh, lstm, gru, linear, softmax", FEATURES(2, 5, 6),
     "[linear]\noutput=6\nactivation=tanh\n[rnn]\noutput=7\nactivation=tanh\n[lstm]\noutput=7\n"
     "[gru]\noutput=5\n[linear]\noutput=4\n[softmax]\n",
     NULL},
    {"gpu 16-bit: embedding, lstm fused=0, lstm, linear, softmax", TOKENS(2, 6, 9),
     "[embedding]\noutput=6\n[lstm]\noutput=8\nfused=0\n[lstm]\noutput=6\n[linear]\n[softmax]\n",
     NULL},
    /* cross-attention with dropout between 16-bit layers: its input, the memory, its output and
     * their gradients in 16 bits */
    {"gpu 16-bit: linear, cross-attention dropout, layernorm, linear, softmax", FEATURES(2, 6, 16),
     "[linear]\noutput=16\nactivation=tanh\n[maxpool]\nsize=1\nstride=2\n[route]\nlayers=0\n"
     "[linear]\noutput=8\nactivation=tanh\n[attention]\nheads=2\nsource=1\ndropout=0.25\n"
     "[layernorm]\n[linear]\noutput=5\n[softmax]\n",
     NULL},
    /* causal self-attention with key padding and dropout, then a key-padded cross-attention,
     * between 16-bit layers (the rows of "attention key_padding=target causal, ..."): inputs,
     * outputs and gradients in 16 bits, as qkv, P and the heads inside */
    {"gpu 16-bit: linear, attention causal key_padding dropout, cross-attention key_padding, "
     "layernorm, linear, softmax",
     PAIRS(3, 4, 4),
     "[linear]\noutput=16\n[maxpool]\nsize=1\nstride=2\n[linear]\noutput=8\nactivation=tanh\n"
     "[attention]\nheads=2\nkey_padding=target\ndropout=0.2\n"
     "[attention]\nheads=2\nsource=1\nkey_padding=source\n[layernorm]\n[linear]\noutput=5\n"
     "[softmax]\n",
     NULL},
    /* a vision transformer's token rows: [tokens] reading the float32 net input and writing 16
     * bits, [layer_scale] 16 bits both sides, [select_token] writing the float32 net output; then
     * the same after a convolution, every output but the loss's input in 16 bits */
    {"gpu 16-bit: tokens (class token, positions) of the net input, layer_scale, select_token",
     IMAGE(2, 3, 2, 3),
     "[tokens]\nclass_token=1\npositional=1\n[layer_scale]\ninit=0.5\n[select_token]\n", NULL},
    {"gpu 16-bit: conv, tokens, layer_scale, layernorm, select_token, connected, softmax",
     IMAGE(2, 3, 8, 12),
     "[convolutional]\nfilters=8\nsize=4\nstride=4\nactivation=linear\n[tokens]\n"
     "class_token=1\npositional=1\n[layer_scale]\ninit=0.5\n[layernorm]\n[select_token]\n"
     "[connected]\noutput=5\nactivation=linear\n[softmax]\n",
     NULL},
    /* channels-last chains (the "gpu nhwc" rows): a convolution reading the NCHW net input into
     * NHWC, NHWC to NHWC (a 1x1 one taking its input as its columns), NHWC into NCHW for a
     * reader without NHWC kernels */
    {"gpu nhwc: conv 3x3 bn relu, conv 1x1 bn, conv 3x3 stride 2 bias, connected",
     IMAGE(3, 3, 7, 6),
     CONV(8, 3, 1, 1, 1, 1, tanh) CONV(6, 1, 1, 0, 1, 1, swish)
         CONV(5, 3, 2, 1, 1, 0, logistic) "[connected]\noutput=4\nactivation=linear\n[softmax]\n",
     NULL},
    /* a residual block all NHWC: the same-shape [shortcut] and [batchnorm] (NHWC where all their
     * inputs and readers are), a global [avgpool] reading NHWC */
    {"gpu nhwc: conv, conv, shortcut, batchnorm, conv, global avgpool, connected",
     IMAGE(3, 3, 6, 7),
     CONV(8, 3, 1, 1, 1, 1, tanh) CONV(8, 3, 1, 1, 1, 1, linear) RESIDUAL_BN_HEAD, NULL},
    /* [maxpool] NHWC to NHWC between convolutions, then NHWC to NCHW for [connected] */
    {"gpu nhwc: conv, maxpool 2x2/2, conv, maxpool 3x3/1, connected", IMAGE(2, 3, 8, 9),
     CONV(6, 3, 1, 1, 1, 1, tanh) "[maxpool]\nsize=2\nstride=2\n" CONV(
         5, 3, 1, 1, 1, 0, logistic) "[maxpool]\nsize=3\nstride=1\n[connected]\noutput=4\n"
                                     "activation=linear\n[softmax]\n",
     NULL},
    /* chains through the grouped families: a depthwise convolution (two filters a channel) of the
     * NCHW net input into NHWC, a depthwise 3x3 bn, a pointwise 1x1 and a same-shape shortcut
     * (mobilenetv2's inverted residual), a grouped stride-2 convolution into NCHW */
    {"gpu nhwc: depthwise of the input, depthwise bn, pointwise, shortcut, grouped, connected",
     IMAGE(2, 3, 7, 6),
     CONV(6, 3, 1, 1, 3, 1, tanh) CONV(6, 3, 1, 1, 6, 1, swish)
         CONV(6, 1, 1, 0, 1, 1, linear) "[shortcut]\nfrom=-3\n" CONV(
             4, 3, 2, 1, 2, 0, logistic) "[connected]\noutput=4\nactivation=linear\n[softmax]\n",
     NULL},
    /* a squeeze-excitation block (efficientnet, mobilenet_v3): global [avgpool], two 1x1
     * convolutions, [scale_channels] of the NHWC map, then a grouped 1x1 */
    {"gpu nhwc: conv, depthwise, SE (avgpool, conv, conv, scale_channels), grouped 1x1",
     IMAGE(2, 4, 6, 5),
     CONV(8, 3, 1, 1, 1, 1, tanh)
         CONV(8, 3, 1, 1, 8, 1, swish) "[avgpool]\n" CONV(4, 1, 1, 0, 1, 0, swish)
             CONV(8, 1, 1, 0, 1, 0, logistic) "[scale_channels]\nfrom=-4\n" CONV(
                 6, 1, 1, 0, 2, 1, tanh) "[connected]\noutput=3\nactivation=linear\n",
     NULL},
    /* yolov3-tiny's neck: [upsample] NHWC to NHWC into a [route] with an earlier NHWC map; a
     * summing downsample (stride -2) reading NHWC and writing NCHW for [connected] */
    {"gpu nhwc: conv, maxpool, conv, upsample 2, route, conv, upsample -2, connected",
     IMAGE(2, 3, 8, 6),
     CONV(6, 3, 1, 1, 1, 1, tanh) MAXPOOL_2 CONV(5, 3, 1, 1, 1, 1, tanh) UPSAMPLE_2 ROUTE("-1,0")
         CONV(4, 1, 1, 0, 1, 0, tanh) "[upsample]\nstride=-2\nscale=0.5\n"
                                      "[connected]\noutput=3\nactivation=linear\n",
     NULL},
    /* the windowed [avgpool] NHWC to NHWC (padded, stride 1), then NHWC to NCHW (2x2/2); a
     * [shuffle] NHWC to NHWC and a [route] of a channel group (shufflenet's split) */
    {"gpu nhwc: conv, avgpool 3x3/1 pad 1, conv, shuffle, route group, avgpool 2x2/2, connected",
     IMAGE(2, 3, 7, 8),
     CONV(8, 3, 1, 1, 1, 1, tanh) "[avgpool]\nsize=3\nstride=1\npadding=1\n" CONV(
         8, 1, 1, 0, 1, 1,
         swish) "[shuffle]\ngroups=2\n"
                "[route]\nlayers=-1\ngroups=2\n"
                "group_id=1\n" CONV(6, 3, 1, 1, 2, 0,
                                    tanh) "[avgpool]\nsize=2\nstride=2\n[connected]\noutput=3\n"
                                          "activation=linear\n",
     NULL},
    /* the same families reading NCHW and writing NHWC: a [shuffle] of the net input, an
     * [upsample] of a [pad]'s output (no NHWC kernels) */
    {"gpu nhwc: shuffle of the input, avgpool 2x2/1 pad 1, conv, pad, upsample 2, grouped conv",
     IMAGE(2, 4, 5, 4),
     "[shuffle]\ngroups=2\n[avgpool]\nsize=2\nstride=1\npadding=1\n" CONV(
         6, 3, 1, 1, 1, 1, tanh) "[pad]\nbottom=1\nright=2\n" UPSAMPLE_2
         CONV(4, 3, 2, 1, 2, 0, tanh) "[connected]\noutput=3\nactivation=linear\n",
     NULL},
    /* a ConvNeXt block: [layernorm] channels=1 and [layer_scale] along an NHWC image's channels
     * (each pixel's channels adjacent), a depthwise 5x5, the inverted bottleneck, the shortcut */
    {"gpu nhwc: conv, layernorm channels=1, depthwise 5x5, layernorm, 1x1s, layer_scale, shortcut",
     IMAGE(2, 3, 8, 8),
     "[convolutional]\nfilters=8\nsize=2\nstride=2\nactivation=linear\n[layernorm]\n"
     "channels=1\n" CONV(8, 5, 1, 1, 8, 0, linear) "[layernorm]\nchannels=1\n" CONV(16, 1, 1, 0, 1,
                                                                                    0, gelu)
         CONV(8, 1, 1, 0, 1, 0, linear) "[layer_scale]\ninit=0.5\n"
                                        "[shortcut]\nfrom=-6\n" CONV(4, 1, 1, 0, 1, 0,
                                                                     tanh) "[connected]\noutput=3\n"
                                                                           "activation=linear\n",
     NULL},
    /* [dropout] NHWC to NHWC between convolutions, in training: its mask in the NHWC layout, each
     * value (b, h, w, c) drawn at its NCHW index (b, c, h, w), so the forward and the gradients are
     * the CPU's (c, h and w all differ, so a transposed draw would show) */
    {"gpu nhwc: conv, dropout, conv", IMAGE(2, 3, 6, 7),
     CONV(8, 3, 1, 1, 1, 1, tanh) "[dropout]\nprobability=0.4\n" CONV(5, 3, 1, 1, 1, 0, linear),
     NULL},
    /* EfficientNet's residual (cfg/efficientnet_b0.cfg): a 1x1 bn projection, [drop_path] (a draw
     * per sample, either layout) and the same-shape [shortcut], all NHWC */
    {"gpu nhwc: conv, conv 1x1 bn, drop_path, shortcut, conv, global avgpool, connected",
     IMAGE(3, 3, 6, 7),
     CONV(8, 3, 1, 1, 1, 1, swish) CONV(
         8, 1, 1, 0, 1, 1, linear) "[drop_path]\nprobability=0.5\n[shortcut]\nfrom=-3\n" NHWC_HEAD,
     NULL},
    /* the GPU's convolution family (cuda/convolutional.c, cuda/bias_norm.c): shapes, stages and
     * settings the cases above leave out, in nets of families the GPU runs */
    {"gpu: conv 3x3 stride 2 bn leaky, odd map", IMAGE(3, 5, 9, 8), CONV(6, 3, 2, 1, 1, 1, leaky),
     NULL},
    {"gpu: conv 5x5 stride 2 padding=2 bias logistic", IMAGE(2, 3, 11, 10),
     "[convolutional]\nfilters=4\nsize=5\nstride=2\npadding=2\nactivation=logistic\n", NULL},
    {"gpu: conv 3x3 bn logistic", IMAGE(2, 4, 6, 7), CONV(6, 3, 1, 1, 1, 1, logistic), NULL},
    {"gpu: grouped (groups=3) stride 2 bn relu", IMAGE(2, 6, 7, 7), CONV(9, 3, 2, 1, 3, 1, relu),
     NULL},
    {"gpu: depthwise stride 2, bias, linear", IMAGE(2, 8, 7, 9), CONV(8, 3, 2, 1, 8, 0, linear),
     NULL},
    {"gpu: 1x7 then 7x1 same, bn relu (inception_v3)", IMAGE(2, 3, 8, 9),
     "[convolutional]\nfilters=5\nsize=1,7\npadding=0,3\nbatch_normalize=1\nbias=0\n"
     "activation=relu\n[convolutional]\nfilters=4\nsize=7,1\npadding=3,0\n"
     "batch_normalize=1\nbias=0\nactivation=relu\n",
     NULL},
    {"gpu: 3x1 stride 1,2 padding 1,0, bias tanh", IMAGE(2, 3, 9, 10),
     "[convolutional]\nfilters=4\nsize=3,1\nstride=1,2\npadding=1,0\nactivation=tanh\n", NULL},
    /* 3 images of 1.4M column floats: chunks of 2 and 1 images (CONV_GPU_CHUNK_FLOATS) */
    {"gpu: conv over several workspace chunks", IMAGE(3, 16, 96, 96), CONV(8, 3, 1, 1, 1, 1, leaky),
     NULL},
    {"gpu: [batchnorm] on the net input", IMAGE(3, 4, 5, 3), "[batchnorm]\n", NULL},
    /* a bias-free convolution's stage copies to l->pre (tanh) or leaves l->out as it is */
    {"gpu: bias-free conv 3x3 tanh, then linear (bias=0)", IMAGE(2, 3, 6, 5),
     "[convolutional]\nfilters=4\nsize=3\npad=1\nbias=0\nactivation=tanh\n"
     "[convolutional]\nfilters=3\nsize=1\nbias=0\nactivation=linear\n",
     NULL},
    {"gpu: avgpool 3x3 stride 1 padding 1 (inception_v3), then 3x3 stride 2", IMAGE(2, 3, 7, 6),
     CONV(4, 3, 1, 1, 1, 0, tanh) "[avgpool]\nsize=3\nstride=1\npadding=1\n[avgpool]\nsize=3\n"
                                  "stride=2\npadding=1\n",
     NULL},
    {"gpu: densenet121's transition", IMAGE(2, 3, 6, 4),
     CONV(4, 3, 1, 1, 1, 0, linear) "[batchnorm]\nactivation=relu\n[convolutional]\nfilters=2\n"
                                    "size=1\nbias=0\nactivation=linear\n[upsample]\nstride=-2\n"
                                    "scale=0.25\n",
     NULL},
    {"gpu: [batchnorm] between convolutions", IMAGE(2, 3, 6, 5),
     CONV(8, 3, 1, 1, 1, 0, linear) "[batchnorm]\n" CONV(4, 1, 1, 0, 1, 0, relu), NULL},
    {"gpu: connected bn linear", IMAGE(5, 2, 2, 3),
     "[connected]\noutput=7\nbatch_normalize=1\nactivation=linear\n", NULL},
    /* swish's derivative reads its input: l->pre is a buffer of its own */
    {"gpu: connected bn swish", IMAGE(4, 3, 2, 2),
     "[connected]\noutput=6\nbatch_normalize=1\nactivation=swish\n", NULL},
    {"gpu: bn_darknet=1 bn_momentum bn_eps",
     "bn_darknet=1\nbn_momentum=0.01\nbn_eps=0.001\n" IMAGE(2, 4, 5, 6),
     CONV(8, 3, 1, 1, 1, 1, leaky) "[batchnorm]\n", NULL},
    /* a frozen layer's batch norm runs on its running statistics, untouched, in training */
    {"gpu: frozen conv before a trained one", IMAGE(2, 4, 6, 6),
     CONV(8, 3, 1, 1, 1, 1, leaky) "freeze=1\n" CONV(6, 3, 1, 1, 1, 1, relu), NULL},
    /* the first segment (layers 0 and 1) is replayed before its backward: no second update of the
     * running statistics */
    {"gpu: gradient checkpointing replays batch norm", IMAGE(2, 4, 6, 6),
     CONV(8, 3, 1, 1, 1, 1, relu) "checkpoint=1\n" CONV(8, 3, 1, 1, 1, 1, leaky)
         CONV(6, 1, 1, 0, 1, 1, linear) "checkpoint=1\n",
     NULL},
    {"gpu: tiny fashion net (conv bn leaky, conv s2, avgpool, connected, softmax)",
     IMAGE(4, 1, 12, 12),
     CONV(8, 3, 1, 1, 1, 1, leaky)
         CONV(16, 3, 2, 1, 1, 0,
              relu) "[avgpool]\n[connected]\noutput=10\nactivation=linear\n[softmax]\n",
     NULL},
    /* the detection losses on truth boxes (fill_truth: 2 to 5 a sample, one of a class out of
     * range): [yolo] alone on the input (its input gradient is -delta / divisor), every key of
     * its loss, and a yolov3-tiny-style net of two heads */
    {"yolo: mse, 2 of 3 anchors, ignore_thresh and truth_thresh", IMAGE(3, 16, 5, 6),
     "[yolo]\nmask=0,2\nanchors=1,1.5, 2.5,2, 4,3.5\nnum=3\nclasses=3\nignore_thresh=0.1\n"
     "truth_thresh=0.3\n",
     NULL},
    {"yolo: giou, scale_x_y, iou_thresh (several anchors a truth, averaged), max_delta",
     IMAGE(2, 24, 6, 5),
     "[yolo]\nmask=0,1,2\nanchors=1,1.5, 2.5,2, 4,3.5\nnum=3\nclasses=3\niou_loss=giou\n"
     "iou_normalizer=0.07\nscale_x_y=1.05\niou_thresh=0.2\nmax_delta=5\nignore_thresh=0.3\n"
     "label_smooth_eps=0.9\n",
     NULL},
    {"yolo: ciou, focal_loss, label_smooth_eps, iou_thresh_kind=ciou", IMAGE(3, 18, 4, 5),
     "[yolo]\nmask=1,2\nanchors=1,1.5, 2.5,2, 4,3.5\nnum=3\nclasses=4\niou_loss=ciou\n"
     "focal_loss=1\nlabel_smooth_eps=0.1\niou_thresh=0.3\niou_thresh_kind=ciou\n"
     "truth_thresh=0.4\n",
     NULL},
    {"yolo: diou, objectness_smooth, obj_normalizer, max=3", IMAGE(2, 16, 5, 5),
     "[yolo]\nmask=0,1\nanchors=1,1.5, 2.5,2\nnum=2\nclasses=3\niou_loss=diou\n"
     "objectness_smooth=1\nobj_normalizer=0.5\nignore_thresh=0.05\ntruth_thresh=0.25\nmax=3\n",
     NULL},
    {"yolo: iou_loss=iou, cls_normalizer", IMAGE(2, 8, 4, 4),
     "[yolo]\nmask=0\nanchors=2,2\nnum=1\nclasses=3\niou_loss=iou\ncls_normalizer=2\n", NULL},
    {"yolo: new_coords, scale_x_y 2, ciou, counters_per_class, map", IMAGE(3, 16, 5, 6),
     "[yolo]\nmask=0,2\nanchors=1,1.5, 2.5,2, 4,3.5\nnum=3\nclasses=3\nnew_coords=1\n"
     "scale_x_y=2\niou_loss=ciou\nignore_thresh=0.1\ntruth_thresh=0.3\n"
     "counters_per_class=5,20,10\nmap=tests/ref/region_rotate.map\n",
     NULL},
    {"yolo: new_coords mse, counters_per_class, objectness_smooth, cls_normalizer",
     IMAGE(2, 16, 5, 5),
     "[yolo]\nmask=0,1\nanchors=1,1.5, 2.5,2\nnum=2\nclasses=3\nnew_coords=1\n"
     "objectness_smooth=1\ncounters_per_class=8,2,4\ncls_normalizer=0.5\ntruth_thresh=0.25\n"
     "ignore_thresh=0.05\n",
     NULL},
    {"yolov3-tiny-style: two [yolo] heads, route, upsample", IMAGE(2, 3, 16, 16),
     CONV(8, 3, 1, 1, 1, 1, leaky) MAXPOOL_2 CONV(16, 3, 1, 1, 1, 1, leaky)
         MAXPOOL_2 CONV(16, 3, 1, 1, 1, 1, leaky) CONV(14, 1, 1, 0, 1, 0, linear) YOLO_HEAD("2,3")
             ROUTE("-3") CONV(8, 1, 1, 0, 1, 1, leaky) UPSAMPLE_2 ROUTE("-1,2")
                 CONV(14, 1, 1, 0, 1, 0, linear) YOLO_HEAD("0,1"),
     NULL},
    /* [region] (its anchor prior in training, not in inference: fill_truth) */
    {"region: logistic classes, rescore, bias_match, thresh", IMAGE(3, 16, 5, 6),
     "[region]\nanchors=1,1.5, 2.5,2\nnum=2\nclasses=3\nrescore=1\nbias_match=1\nthresh=0.2\n",
     NULL},
    {"region: softmax classes, the four scales, max=3", IMAGE(2, 27, 4, 5),
     "[region]\nanchors=0.8,1, 1.5,2, 3,2.5\nnum=3\nclasses=4\nsoftmax=1\ncoord_scale=2\n"
     "object_scale=5\nnoobject_scale=0.5\nclass_scale=1.5\nmax=3\n",
     NULL},
    {"region: background in the softmax, rescore, map", IMAGE(3, 16, 5, 6),
     "[region]\nanchors=1,1.5, 2.5,2\nnum=2\nclasses=3\nsoftmax=1\nbackground=1\nrescore=1\n"
     "map=tests/ref/region_rotate.map\n",
     NULL},
    {"region: background with logistic classes", IMAGE(2, 16, 4, 5),
     "[region]\nanchors=1,1.5, 2.5,2\nnum=2\nclasses=3\nbackground=1\nthresh=0.2\n", NULL},
    {"yolov2-tiny-style: conv, maxpool, 1x1 conv, [region] softmax", IMAGE(2, 3, 12, 12),
     CONV(8, 3, 1, 1, 1, 1, leaky) MAXPOOL_2 CONV(18, 1, 1, 0, 1, 0, linear) REGION_SOFTMAX, NULL},
};

#define N_CASES (sizeof cases / sizeof cases[0])

/* ---- the engines ---- */

#define BF16_REF 5  /* engines[]'s "bf16" row */
#define TF32_REF 9  /* "tf32" */
#define FP16_REF 10 /* "fp16" */

/* How a net is configured to compute. Row 0 is the reference the others are compared with. */
typedef struct Engine {
    const char *name;
    /* The backend whose kernels run the net (net_build_from_text_on); run_engine skips, as not
     * applicable, a case with a family (or a configuration of one) that has no kernels there. */
    Backend backend;
    const char *keys;        /* its [net] keys */
    GemmPrecision precision; /* of its products: which tolerance (engine_tolerance) */
    int base;                /* the row it is compared with (an earlier one) */
    int (*built)(void);      /* NULL: in every build; else 1 where it runs (build and CPU) */
    /* 1 when the engine computes the built net (of either mode) otherwise than the reference:
     * a case it leaves on the reference's kernels is skipped as not applicable. */
    int (*applies)(const Net *net);
    int must_apply; /* some case must apply, else the engine's selection is broken */
} Engine;

/* 1 when l runs on engine or a variant of it, "engine-..." (cuDNN's "cudnn-nchw": NCHW
 * descriptors for channels-last tensors, cuda/conv_cudnn.h). */
static int engine_is(const Layer *l, const char *engine)
{
    const size_t n = strlen(engine);
    return l->engine && !strncmp(l->engine, engine, n) &&
           (l->engine[n] == '\0' || l->engine[n] == '-');
}

static int any_engine(const Net *net, const char *engine)
{
    for (int i = 0; i < net->n_layers; i++)
        if (engine_is(&net->layers[i], engine))
            return 1;
    return 0;
}

static int always(const Net *net)
{
    (void)net;
    return 1;
}

static int on_winograd(const Net *net)
{
    return any_engine(net, "wino");
}

static int on_dnnl(const Net *net)
{
    return any_engine(net, "dnnl");
}

static int on_dnnl_or_winograd(const Net *net)
{
    return on_dnnl(net) || on_winograd(net);
}

/* Blocked layouts exist where oneDNN's blocks are the build's: not in the sanitizer build (no
 * -march) on an AVX-512 CPU, nor without oneDNN. */
static int blocked_built(void)
{
    return dnnl_conv_lanes_native();
}

/* oneDNN runs bf16 convolutions on its bf16 kernels, or on its float32 ones in a build for
 * AVX-512; not on an AVX2 CPU, where precision=bf16 leaves them to the rounding reference. */
static int dnnl_bf16_built(void)
{
    return dnnl_conv_built() && dnnl_conv_bf16_runs();
}

static int dnnl_bf16_blocked_built(void)
{
    return blocked_built() && dnnl_conv_bf16_runs();
}

/* A build with the GPU backend (it runs on a device, or on the simulator of GPU=sim). */
static int gpu_built(void)
{
    return backend_find(CDL_BACKEND_GPU) != NULL;
}

/* dnnl_train_blocked changes only nets with gradients: inference nets always plan layouts. */
static int training_blocked(const Net *net)
{
    for (int i = 0; net->want_grads && i < net->n_layers; i++)
        if (net->layers[i].blocked >> LAYER_OUT_BIT & 1)
            return 1;
    return 0;
}

/* 1 when a detection loss of net decides something from its predictions: [yolo]'s
 * ignore_thresh and truth_thresh and [region]'s thresh compare a predicted box's IoU, and
 * [region] without bias_match picks a truth's anchor by its predicted shape (thresholds of 1 or
 * more, which no IoU passes, and bias_match decide from the anchors and truths alone). */
static int matching_reads_predictions(const Net *net)
{
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (l->type == layer_type_find("yolo")) {
            const Yolo *yo = l->priv;
            if (yo->ignore_thresh < 1.0f || yo->truth_thresh < 1.0f)
                return 1;
        }
        if (l->type == layer_type_find("region")) {
            const Region *r = l->priv;
            if (!r->bias_match || r->thresh < 1.0f)
                return 1;
        }
    }
    return 0;
}

/* precision=bf16 rounds the operands of matrix products: nets with a weight matrix, but those
 * with a detection loss whose matching reads the predictions (matching_reads_predictions): a
 * step that a rounded operand moves a prediction across, changing whole deltas. */
static int has_products(const Net *net)
{
    if (net_truth_boxes(net) && matching_reads_predictions(net))
        return 0;
    for (int i = 0; i < net->n_layers; i++)
        for (int p = 0; p < net->layers[i].n_params; p++)
            if (net->layers[i].params[p].trainable && net->layers[i].params[p].n_dims >= 2)
                return 1;
    return 0;
}

/* A build whose GPU backend has cuDNN (GPU=1; not the simulator of GPU=sim). */
static int cudnn_built(void)
{
#if defined(CDL_GPU) && !defined(CDL_GPU_SIM)
    return gpu_built();
#else
    return 0;
#endif
}

static int on_cudnn(const Net *net)
{
    return any_engine(net, "cudnn");
}

/* 1 when some layer of net keeps its output channels-last (core/net_channels_last.h). */
static int on_channels_last(const Net *net)
{
    for (int i = 0; i < net->n_layers; i++)
        if (net->layers[i].channels_last)
            return 1;
    return 0;
}

static int on_cudnn_with_products(const Net *net)
{
    return on_cudnn(net) && has_products(net);
}

static int on_cudnn_channels_last(const Net *net)
{
    return on_cudnn(net) && on_channels_last(net);
}

static const Engine engines[] = {
    {"ref", CDL_BACKEND_CPU, "engine=ref\nwinograd=0\n", GEMM_FP32, 0, NULL, always, 1},
    {"winograd", CDL_BACKEND_CPU, "engine=ref\nwinograd=1\nwinograd_min_tiles=0\n", GEMM_FP32, 0,
     NULL, on_winograd, 1},
    {"dnnl", CDL_BACKEND_CPU, "engine=dnnl\ndnnl_train_blocked=0\n", GEMM_FP32, 0, dnnl_conv_built,
     on_dnnl, 1},
    {"dnnl blocked", CDL_BACKEND_CPU, "engine=dnnl\ndnnl_train_blocked=1\n", GEMM_FP32, 0,
     blocked_built, training_blocked, 1},
    /* oneDNN, Winograd or the reference layer by layer (dnnl_conv_preferred), with the default
     * Winograd training rule */
    {"auto", CDL_BACKEND_CPU, "engine=auto\n", GEMM_FP32, 0, dnnl_conv_built, on_dnnl_or_winograd,
     1},
    /* the rounding reference: the bf16 rows below are compared with it */
    {"bf16", CDL_BACKEND_CPU, "engine=ref\nwinograd=0\nprecision=bf16\n", GEMM_BF16, 0, NULL,
     has_products, 1},
    /* bf16 layers stay off Winograd today (float32 only): no case applies until they run it */
    {"bf16 winograd", CDL_BACKEND_CPU,
     "engine=ref\nwinograd=1\nwinograd_min_tiles=0\nprecision=bf16\n", GEMM_BF16, BF16_REF, NULL,
     on_winograd, 0},
    {"bf16 dnnl", CDL_BACKEND_CPU, "engine=dnnl\nprecision=bf16\ndnnl_train_blocked=0\n", GEMM_BF16,
     BF16_REF, dnnl_bf16_built, on_dnnl, 1},
    {"bf16 dnnl blocked", CDL_BACKEND_CPU, "engine=dnnl\nprecision=bf16\ndnnl_train_blocked=1\n",
     GEMM_BF16, BF16_REF, dnnl_bf16_blocked_built, training_blocked, 1},
    /* the rounding references of the GPU's other precisions, compared with float32 */
    {"tf32", CDL_BACKEND_CPU, "engine=ref\nwinograd=0\nprecision=tf32\n", GEMM_TF32, 0, NULL,
     has_products, 1},
    {"fp16", CDL_BACKEND_CPU, "engine=ref\nwinograd=0\nprecision=fp16\n", GEMM_FP16, 0, NULL,
     has_products, 1},
    /* the GPU backend (GPU=1 or GPU=sim builds) against the CPU's reference in each precision */
    {"gpu", CDL_BACKEND_GPU, "engine=ref\nwinograd=0\ngpu_engine=ref\n", GEMM_FP32, 0, gpu_built,
     always, 1},
    {"gpu bf16", CDL_BACKEND_GPU, "engine=ref\nwinograd=0\ngpu_engine=ref\nprecision=bf16\n",
     GEMM_BF16, BF16_REF, gpu_built, has_products, 1},
    {"gpu tf32", CDL_BACKEND_GPU, "engine=ref\nwinograd=0\ngpu_engine=ref\nprecision=tf32\n",
     GEMM_TF32, TF32_REF, gpu_built, has_products, 1},
    {"gpu fp16", CDL_BACKEND_GPU, "engine=ref\nwinograd=0\ngpu_engine=ref\nprecision=fp16\n",
     GEMM_FP16, FP16_REF, gpu_built, has_products, 1},
    /* the GPU's own engine with channels_last=1 (core/net_channels_last.h): the cases where some
     * layer keeps NHWC activations, in float32 and with 16-bit storage */
    {"gpu nhwc", CDL_BACKEND_GPU, "engine=ref\nwinograd=0\ngpu_engine=ref\nchannels_last=1\n",
     GEMM_FP32, 0, gpu_built, on_channels_last, 1},
    {"gpu nhwc bf16", CDL_BACKEND_GPU,
     "engine=ref\nwinograd=0\ngpu_engine=ref\nchannels_last=1\nprecision=bf16\n", GEMM_BF16,
     BF16_REF, gpu_built, on_channels_last, 1},
    {"gpu nhwc fp16", CDL_BACKEND_GPU,
     "engine=ref\nwinograd=0\ngpu_engine=ref\nchannels_last=1\nprecision=fp16\n", GEMM_FP16,
     FP16_REF, gpu_built, on_channels_last, 1},
    /* the GPU's convolutions on cuDNN (GPU=1 only: the simulator has no cuDNN), the rest as above
     */
    {"gpu cudnn", CDL_BACKEND_GPU, "engine=ref\nwinograd=0\ngpu_engine=cudnn\n", GEMM_FP32, 0,
     cudnn_built, on_cudnn, 1},
    {"gpu cudnn bf16", CDL_BACKEND_GPU,
     "engine=ref\nwinograd=0\ngpu_engine=cudnn\nprecision=bf16\n", GEMM_BF16, BF16_REF, cudnn_built,
     on_cudnn_with_products, 1},
    {"gpu cudnn tf32", CDL_BACKEND_GPU,
     "engine=ref\nwinograd=0\ngpu_engine=cudnn\nprecision=tf32\n", GEMM_TF32, TF32_REF, cudnn_built,
     on_cudnn_with_products, 1},
    {"gpu cudnn fp16", CDL_BACKEND_GPU,
     "engine=ref\nwinograd=0\ngpu_engine=cudnn\nprecision=fp16\n", GEMM_FP16, FP16_REF, cudnn_built,
     on_cudnn_with_products, 1},
    /* cuDNN's convolutions with channels_last=1: NHWC descriptors (cuda/conv_cudnn.h), in float32
     * and with 16-bit storage */
    {"gpu cudnn nhwc", CDL_BACKEND_GPU,
     "engine=ref\nwinograd=0\ngpu_engine=cudnn\nchannels_last=1\n", GEMM_FP32, 0, cudnn_built,
     on_cudnn_channels_last, 1},
    {"gpu cudnn nhwc bf16", CDL_BACKEND_GPU,
     "engine=ref\nwinograd=0\ngpu_engine=cudnn\nchannels_last=1\nprecision=bf16\n", GEMM_BF16,
     BF16_REF, cudnn_built, on_cudnn_channels_last, 1},
    {"gpu cudnn nhwc fp16", CDL_BACKEND_GPU,
     "engine=ref\nwinograd=0\ngpu_engine=cudnn\nchannels_last=1\nprecision=fp16\n", GEMM_FP16,
     FP16_REF, cudnn_built, on_cudnn_channels_last, 1},
};

#define N_ENGINES (sizeof engines / sizeof engines[0])

/* ---- tolerances ---- */

/* Each tensor is compared relative to the reference tensor's largest magnitude,
 * max |got - want| <= tol * max |want| (check_rel_error's measure); tol is derived so:
 *
 * float32 against float32: the engines compute the same sums in other orders (oneDNN's blocked
 * kernels, Winograd's transforms, other gemm blockings). Each of the k - 1 roundings of a sum of k
 * terms errs by at most u times the partial sum (u = 2^-24); for terms of random sign the partial
 * sums grow as sqrt(j), so the roundings add like a random walk to about u sqrt(k) times the sum's
 * typical size (Higham and Mary's probabilistic bound, lambda sqrt(k) u): about u sqrt(k) of the
 * tensor's largest value. A layer's sums have at most k_l terms, bounded by its input or output
 * size per sample or the batch's pixels (weight gradients, batch norm's statistics). Successive
 * layers pass errors on with gains about 1 (initialised weights keep scales, batch norm
 * normalises them) and add their own, independent ones: in quadrature. So tol = lambda u
 * sqrt(sum_l k_l), lambda = 8: the largest of many elements (4 standard deviations), two engines'
 * errors (sqrt 2), and Winograd's transforms, whose coefficients scale roundings by up to 2.
 * cuDNN's batch norm ("gpu cudnn" rows, cuda/bn_cudnn.h) sums its statistics and its backward's
 * sums in float32 in its own order where the reference sums in double: a sum of the batch's k =
 * batch * h * w values then errs by about u sqrt(k) of itself, the k_l term above (for the
 * all-positive sum of squares too: the partial sums grow as j, their roundings add to u k^1.5 /
 * sqrt 3 against a sum of k). A variance taken as E[x^2] - mean^2 (cuDNN does not document its
 * order) scales that by 1 + mean^2/var, which reaches x_hat halved (through 1/sqrt): within
 * lambda's margin over 4 sqrt(2) while a channel's mean stays within about one standard
 * deviation of 0, as the cases' outputs of weights of both signs do.
 *
 * bf16 against float32: rounding to bf16 (8 significant bits) moves an operand by up to 2^-8 of
 * itself, uniformly at random (standard deviation 2^-8 / sqrt 3). A sum of k products of two
 * rounded operands then errs like a random walk: sqrt(2/3) 2^-8 sqrt(k) times the terms' size,
 * against a largest sum of about 3 sqrt(k) times it, i.e. 2^-8 / 4 of the largest value at one
 * standard deviation, 2^-8 at four. The P weight matrices (products) of a net round
 * independently: tol = lambda 2^-8 sqrt(P) + the float32 tolerance, lambda = 4 for the operands
 * rounded from values that carry earlier layers' errors and for attention's and the recurrent
 * layers' products of activations (two per weight matrix at most). Where the gradient has kinks
 * (has_kinks), bf16's rounding moves values across them and each crossing changes whole terms
 * of the gradient's sums, which no rounding-sized tolerance bounds: those gradients are compared
 * among the bf16 engines only, the forwards and statistics still against float32.
 *
 * tf32 and fp16 (10 mantissa bits: up to 2^-11 of an operand) against float32: the same with
 * 2^-11 for 2^-8.
 *
 * bf16 against bf16 (the rounding reference, "bf16"; tf32 and fp16 against theirs alike): in
 * training both round the same operands to nearest even, so they differ as float32 sums do,
 * plus the format's unit for two things: oneDNN's bias
 * gradient sums dy rounded to bf16 where the reference sums it in float32 (test_bf16), and
 * values that differ by float32 round-off that round to neighbouring bf16 values, which can
 * happen to the operands of each of the P weight matrices' products independently: u sqrt(P)
 * (in quadrature; seen on an AVX2 CPU, whose float32 sums differ from AVX-512's). Inference on
 * oneDNN folds batch norm into the weights before rounding them, so its roundings are not the
 * reference's: inference outputs take the tolerance against float32. */
#define FP32_U 0x1p-24 /* float32's unit roundoff */
#define BF16_U 0x1p-8  /* bf16's */
#define HALF_U 0x1p-11 /* tf32's and fp16's */
#define FP32_LAMBDA 8.0
/* Another backend evaluates exp, tanh and erfc with its own library (CUDA's libdevice: within 2
 * ulp) where the CPU has its own approximations (backend/cpu/activation.c: a few ulp): a value of
 * an activation or softmax differs by up to about 8 ulp between them, independently from layer to
 * layer, so in quadrature over the layers (on top of the sums' round-off above). */
#define BACKEND_ULPS 8.0
#define BF16_LAMBDA 4.0

/* The tensors of net that the backend keeps in 16 bits: layers' outputs (and their gradients,
 * Layer.storage), and on the GPU under bf16 and fp16 each [attention]'s qkv, P and heads (and
 * their gradients: engine_tolerance's 16-bit term). */
static int stored_16bit(const Net *net)
{
    int n = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        n += l->storage != ELEM_F32;
        if (net->backend->kind == CDL_BACKEND_GPU && l->type == layer_type_find("attention") &&
            precision_storage(l->precision) != ELEM_F32)
            n += 3;
    }
    return n;
}

/* Convolutions of net that run on cuDNN in bf16 or fp16 (cuda/conv_cudnn.h), whose outputs cuDNN
 * writes in 16 bits. ([batchnorm] on cuDNN reads and writes the layer's own types: no rounding
 * beyond its storage's.) */
static int cudnn_16bit(const Net *net)
{
    int n = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        n += l->type == layer_type_find("convolutional") && engine_is(l, "cudnn") &&
             precision_storage(l->precision) != ELEM_F32;
    }
    return n;
}

/* How many layers l counts as in the tolerance: a recurrent layer ([rnn], [lstm], [gru]) runs its
 * cell T times in sequence, each step's products and activations (its G gates') adding their own
 * roundings to the state the next step reads, as T G layers would; any other layer is one. */
static double sequential_steps(const Layer *l)
{
    if (l->type != layer_type_find("rnn") && l->type != layer_type_find("lstm") &&
        l->type != layer_type_find("gru"))
        return 1;
    const Recurrent *r = l->priv;
    return (double)r->steps * r->cell->gates;
}

/* The tolerance of engine e against base on net (as built for the case and mode), for inference
 * outputs (1) or the training pass's tensors (0); stored the engine's net's 16-bit tensors
 * (stored_16bit), cudnn its convolutions on cuDNN in 16 bits (cudnn_16bit).
 *
 * 16-bit storage (a GPU under bf16 or fp16, core/net_storage.h): every value stored between two
 * layers is rounded to the format, by up to u of itself (u = 2^-8 bf16, 2^-11 fp16), so at most u
 * of the tensor's largest value, which the layers after it pass on with gains about 1; a product
 * that rounds such a value again to the same format can land one unit away from the reference's
 * rounding of the unstored value: 2u a store, added over the stores a tensor passes through (all
 * of the net's outputs in a forward; their gradients too in a training pass's gradients). The
 * families whose kernels round something more stay inside the same 2u: [layernorm]'s backward
 * rounds delta x_hat into its 16-bit delta before the scales' gradient sums it (one u of each
 * term, where its output gradient's store took the other), [softmax]'s backward reads its stored
 * probabilities (u of each, in p - target). [attention] on the GPU keeps qkv, P (and the dropped
 * weights P m) and the heads in 16 bits, and the gradients of the heads and of qkv: each is a
 * value the reference rounds as a product's operand, so a store of it is the reference's rounding
 * up to one unit (the sums' order), and its gradient's likewise; three stores (2u each, both
 * passes) also cover what the GPU rounds where the reference does not: P m rounded from the
 * rounded P (one unit of a weight), the softmax's backward reading the rounded P (u of each term,
 * as [softmax]'s) and the input biases' gradient summing the rounded d(qkv) (u of each term).
 *
 * cuDNN in bf16 and fp16 (the "gpu cudnn" rows) multiplies the reference's rounded operands with
 * float32 sums, but its results are 16-bit tensors: a convolution's output is rounded before its
 * bias or batch norm even where the layer stores it in float32, its input gradient likewise, and
 * its weight gradient always (conv_cudnn.h). The first two are roundings of a value the
 * reference keeps in float32, as a store's: 2u each, added as the stores are (the output in a
 * forward, both in a training pass); the weight gradient's is u of that tensor, passed on to
 * nothing. In tf32 cuDNN multiplies operands rounded to tf32 as the reference's and writes
 * float32: the own engine's tolerance. */
static double engine_tolerance(const Engine *e, const Engine *base, const Net *net, int stored,
                               int cudnn, int inference)
{
    double roundings = 0, products = 0, evaluations = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        const double batch = net->batch;
        double k = fmax((double)shape_size(l->in_shape), (double)shape_size(l->out_shape));
        k = fmax(k, batch * l->in_shape.h * l->in_shape.w);
        k = fmax(k, batch * l->out_shape.h * l->out_shape.w);
        const double steps = sequential_steps(l);
        roundings += k * steps;
        evaluations += steps;
        for (int p = 0; p < l->n_params; p++)
            products += l->params[p].trainable && l->params[p].n_dims >= 2;
    }
    double fp32 = FP32_LAMBDA * FP32_U * sqrt(roundings);
    if (e->backend != base->backend) /* another backend's transcendental functions */
        fp32 += BACKEND_ULPS * FP32_U * sqrt(evaluations);
    const double u = e->precision == GEMM_BF16 ? BF16_U : HALF_U;
    const double rounded = fp32 + BF16_LAMBDA * u * sqrt(fmax(products, 1));
    if (e->precision == GEMM_FP32 && base->precision == GEMM_FP32)
        return fp32;
    const double storage =
        2.0 * u * (stored + cudnn) * (inference ? 1 : 2) + (inference || !cudnn ? 0.0 : u);
    const double neighbours = u * sqrt(fmax(products, 1));
    return storage + (e->precision == base->precision && !inference ? fp32 + neighbours : rounded);
}

/* 1 when the net's gradient jumps where a value crosses a point (relu, leaky and relu6 at 0 and
 * 6, max pooling where two values of a window tie): bf16's rounding moves values across such
 * points, and each crossing changes whole terms of the gradient's sums. */
static int layer_has_kink(const Layer *l)
{
    const ActivationKind a = l->activation;
    /* a window of one value has no ties */
    const int ties = l->type == layer_type_find("maxpool") && ((const Maxpool *)l->priv)->size > 1;
    return a == CDL_ACT_RELU || a == CDL_ACT_LEAKY || a == CDL_ACT_RELU6 || ties;
}

static int has_kinks(const Net *net)
{
    for (int i = 0; i < net->n_layers; i++)
        if (layer_has_kink(&net->layers[i]))
            return 1;
    return 0;
}

/* 1 when a layer with a kink comes after a 16-bit tensor in net: its rounding moves values across
 * the kink as a rounded operand does. */
static int kinks_after_16bit(const Net *net)
{
    int stored = 0;
    for (int i = 0; i < net->n_layers; i++) {
        if (stored && layer_has_kink(&net->layers[i]))
            return 1;
        stored |= net->layers[i].storage != ELEM_F32;
    }
    return 0;
}

/* ---- running a case ---- */

enum { MODE_TRAINING, MODE_INFERENCE };
static const char *const mode_names[] = {"training", "inference"};

#define NET_SEED 5
#define DATA_SEED 77
#define DRAW_ID 7

/* What one run of a case on one engine leaves to compare (malloc'd copies). */
typedef struct Run {
    Net net;
    float *params0, *state0; /* the slabs as built */
    float *out;              /* the last layer's output of the (training or inference) forward */
    float loss;
    float *input_delta;  /* training: dL/d(input) */
    float *grads;        /* training: the gradient slab less what it held before */
    float *state_change; /* training: the statistics slab less what it held before */
    float *eval_out;     /* training: the training net's inference forward after it;
                            inference: the second forward */
    /* inference: the forwards after new running statistics, then new weights too (renew) */
    float *new_stats_out, *new_weights_out;
    float eval_loss;
    size_t in_n, out_n;
    float *truth; /* the detection losses' truth boxes (fill_truth), host memory; NULL: none */
} Run;

static void run_free(Run *r)
{
    free(r->params0), free(r->state0), free(r->out), free(r->input_delta), free(r->grads);
    free(r->state_change), free(r->eval_out), free(r->truth);
    free(r->new_stats_out), free(r->new_weights_out);
    net_free(&r->net);
}

/* n floats of the net's memory at x (on its backend) in a malloc'd host copy; the net's passes
 * are synced first (net_sync). */
static float *copy_of(const Net *net, const float *x, size_t n);

/* Scales the n floats of a slab by scale (variances stay positive), as a load of other weights or
 * statistics would change them, and tells the net (net_weights_changed): what the layers derived
 * from the old ones (folded, transformed, packed) must be made again. */
static void renew(Net *net, float *slab, size_t n, float scale)
{
    float *v = copy_of(net, slab, n);
    for (size_t i = 0; i < n; i++)
        v[i] *= scale;
    net->backend->upload(slab, v, n * sizeof *v);
    free(v);
    net_weights_changed(net);
}

static float *copy_of(const Net *net, const float *x, size_t n)
{
    float *c = malloc((n ? n : 1) * sizeof *c);
    Error err = {0};
    if (net_sync((Net *)net, &err)) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        check_failures++;
    }
    if (n)
        net->backend->download(c, x, n * sizeof *c);
    return c;
}

/* Fills every random thing a pass reads the same way whatever the engine, in host memory then
 * uploaded to the net's backend: the input (token ids below vocab for an [embedding] first, else
 * N(0,1)), the labels, in inference running statistics away from 0 and 1 (means N(0, 0.3^2),
 * variances in [0.5, 1.5)), in training the gradients the backward adds onto (the last layer's
 * output gradient, which a loss ignores, is drawn after the forward: seed_output_delta). */
static void fill_data(Net *net, int mode, Rng *rng)
{
    const BackendOps *be = net->backend;
    const size_t in_n = (size_t)net->batch * shape_size(net->in_shape);
    const size_t n_labels = (size_t)net->batch * (size_t)net_labels_per_sample(net);
    const int token_ids = net->layers[0].type->reads_token_ids;
    float *input = malloc((in_n ? in_n : 1) * sizeof *input);
    int *labels = malloc((n_labels ? n_labels : 1) * sizeof *labels);
    float *state = copy_of(net, net->state, net->n_state);
    for (size_t i = 0; i < in_n; i++)
        input[i] = token_ids ? (float)rng_below(rng, (uint32_t)net->vocab) : rng_normal(rng);
    for (size_t b = 0; b < n_labels; b++)
        labels[b] = (int)rng_below(rng, (uint32_t)net->classes);
    for (int i = 0; mode == MODE_INFERENCE && i < net->n_layers; i++)
        for (int p = 0; p < net->layers[i].n_params; p++) {
            Param *pa = &net->layers[i].params[p];
            const int variance = strstr(pa->name, "variance") != NULL;
            float *at = state + (pa->data - net->state);
            for (size_t j = 0; !pa->trainable && j < pa->count; j++)
                at[j] = variance ? 0.5f + rng_uniform(rng) : 0.3f * rng_normal(rng);
        }
    be->upload(net->input, input, in_n * sizeof *input);
    be->upload(net->labels, labels, n_labels * sizeof *labels);
    be->upload(net->state, state, net->n_state * sizeof *state);
    if (mode == MODE_TRAINING) {
        float *grads = malloc((net->n_params + 1) * sizeof *grads);
        check_fill_normal(grads, net->n_params, rng);
        be->upload(net->grads, grads, net->n_params * sizeof *grads);
        free(grads);
    }
    free(input);
    free(labels);
    free(state);
}

/* The last layer's output gradient, N(0,1) (a loss ignores it), uploaded. */
static void seed_output_delta(Net *net, size_t n, Rng *rng)
{
    float *delta = malloc((n ? n : 1) * sizeof *delta);
    for (size_t i = 0; i < n; i++)
        delta[i] = rng_normal(rng);
    net->backend->upload(net->layers[net->n_layers - 1].delta, delta, n * sizeof *delta);
    free(delta);
}

#define TRUTH_SEED 91

/* A net with detection losses: truth boxes [batch][net_truth_boxes][TRUTH_FLOATS] in host memory,
 * the same on every engine (their own seed), the net pointed at them (net_set_truth) and, on a
 * device, their copy uploaded. Sample b has 2 + b % 4 boxes (at most the slots) of centres in
 * (0.05, 0.95), sizes in (0.05, 0.55) and classes 0 or 1, but its second of a class out of
 * range (skipped by the loss), then zeros (the end of the list). NULL without such layers. The
 * inference mode's passes run as after REGION_PRIOR_IMAGES images, the training mode's before:
 * [region]'s loss without and with its anchor prior. */
static float *fill_truth(Net *net, int mode)
{
    const int slots = net_truth_boxes(net);
    if (!slots)
        return NULL;
    net->images_seen = mode == MODE_INFERENCE ? REGION_PRIOR_IMAGES : 0;
    const size_t n = (size_t)net->batch * (size_t)slots * TRUTH_FLOATS;
    float *truth = calloc(n, sizeof *truth);
    Rng rng;
    rng_seed(&rng, TRUTH_SEED, 1);
    for (int b = 0; b < net->batch; b++)
        for (int t = 0; t < 2 + b % 4 && t < slots; t++) {
            float *f = truth + ((size_t)b * slots + t) * TRUTH_FLOATS;
            f[TRUTH_X] = 0.05f + 0.9f * rng_uniform(&rng);
            f[TRUTH_Y] = 0.05f + 0.9f * rng_uniform(&rng);
            f[TRUTH_W] = 0.05f + 0.5f * rng_uniform(&rng);
            f[TRUTH_H] = 0.05f + 0.5f * rng_uniform(&rng);
            f[TRUTH_CLASS] = t == 1 ? 99.0f : (float)rng_below(&rng, 2);
        }
    net_set_truth(net, truth);
    if (net->device_truth)
        net->backend->upload(net->device_truth, truth, n * sizeof *truth);
    return truth;
}

/* Builds case c on engine e for mode and runs it (Run); 0 when it ran, 1 when the engine does
 * not apply to it (nothing left to free), -1 on a failure (reported). */
static int run_engine(const OpCase *c, const Engine *e, int mode, Run *r)
{
    memset(r, 0, sizeof *r);
    char text[4096];
    snprintf(text, sizeof text, "[net]\n%s%s%s", e->keys, c->net, c->body);
    Error err = {0};
    const int train = mode == MODE_TRAINING;
    if (net_build_from_text_on(&r->net, text, c->name, train, NET_SEED,
                               (NetPlacement){e->backend, 0}, &err)) {
        /* a family without kernels on the engine's backend: not applicable */
        if (e->backend != CDL_BACKEND_CPU && strstr(err.msg, "has no GPU implementation"))
            return 1;
        fprintf(stderr, "FAIL %s on %s (%s): cannot build: %s\n", c->name, e->name,
                mode_names[mode], err.msg);
        check_failures++;
        return -1;
    }
    Net *net = &r->net;
    if (net_resize(net, net->hyper.batch, train, &err)) {
        /* as at build: a layer's configuration the backend has no kernels for */
        const int other = e->backend != CDL_BACKEND_CPU && strstr(err.msg, "no GPU implementation");
        if (!other) {
            fprintf(stderr, "FAIL %s on %s (%s): cannot resize: %s\n", c->name, e->name,
                    mode_names[mode], err.msg);
            check_failures++;
        }
        net_free(net);
        return other ? 1 : -1;
    }
    if (!e->applies(net)) {
        net_free(net);
        return 1;
    }
    r->params0 = copy_of(net, net->params, net->n_params);
    r->state0 = copy_of(net, net->state, net->n_state);
    Rng rng;
    rng_seed(&rng, DATA_SEED, 1);
    fill_data(net, mode, &rng);
    r->truth = fill_truth(net, mode);
    float *grads_before = train ? copy_of(net, net->grads, net->n_params) : NULL;
    float *state_before = copy_of(net, net->state, net->n_state);
    const Layer *last = &net->layers[net->n_layers - 1];
    r->in_n = (size_t)net->batch * shape_size(net->in_shape);
    r->out_n = (size_t)net->batch * shape_size(last->out_shape);
    net->train = train;
    net->draw_id = DRAW_ID;
    net->loss_divisor = (float)(net->batch * net_labels_per_sample(net));
    net->loss = 0;
    net_forward(net);
    r->out = copy_of(net, last->out, r->out_n);
    r->loss = net->loss;
    if (train) {
        seed_output_delta(net, r->out_n, &rng);
        net_backward(net);
        r->input_delta = copy_of(net, net->input_delta, r->in_n);
        r->grads = copy_of(net, net->grads, net->n_params);
        for (size_t i = 0; i < net->n_params; i++)
            r->grads[i] -= grads_before[i];
        r->state_change = copy_of(net, net->state, net->n_state);
        for (size_t i = 0; i < net->n_state; i++)
            r->state_change[i] -= state_before[i];
        net->train = 0;
        net->loss = 0;
        net_forward(net);
        r->eval_out = copy_of(net, last->out, r->out_n);
        r->eval_loss = net->loss;
    } else { /* the second forward of the same weights: oneDNN's Winograd twins run from there */
        net->loss = 0;
        net_forward(net);
        r->eval_out = copy_of(net, last->out, r->out_n);
        r->eval_loss = net->loss;
        renew(net, net->state, net->n_state, 0.75f);
        net_forward(net);
        r->new_stats_out = copy_of(net, last->out, r->out_n);
        renew(net, net->params, net->n_params, 0.8f);
        net_forward(net);
        r->new_weights_out = copy_of(net, last->out, r->out_n);
    }
    free(grads_before);
    free(state_before);
    return 0;
}

/* ---- comparing ---- */

typedef struct EngineStats {
    int runs, not_applicable, not_built;
    int kinked;   /* training runs whose gradients were not compared (has_kinks) */
    int stored;   /* runs that kept a layer's output in 16 bits (stored_16bit) */
    double worst; /* largest error / tolerance seen */
    char worst_at[256];
} EngineStats;

static EngineStats stats[N_ENGINES];

/* max |got - want| <= tol * max(max |want|, floor) over n values; on failure prints the worst
 * index. */
static void compare(const char *where, const char *tensor, const float *got, const float *want,
                    size_t n, double tol, double floor, EngineStats *st)
{
    double scale = floor, worst = 0;
    size_t at = 0;
    int nan_mismatch = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs((double)want[i]));
        const double d = fabs((double)got[i] - want[i]);
        if (isnan(got[i]) != isnan(want[i]) || isinf(got[i]) != isinf(want[i])) {
            nan_mismatch = 1;
            at = i;
            break;
        }
        if (d > worst)
            worst = d, at = i;
    }
    check_count++;
    const double bound = tol * scale;
    const double ratio = bound > 0 ? worst / bound : worst > 0 ? INFINITY : 0;
    if (ratio > st->worst) {
        st->worst = ratio;
        snprintf(st->worst_at, sizeof st->worst_at, "%.200s: %.50s", where, tensor);
    }
    if (nan_mismatch || !(worst <= bound)) {
        check_failures++;
        fprintf(stderr,
                "FAIL %s: %s[%zu] = %.9g, reference %.9g: |difference| %.3g > tolerance %.3g "
                "(%.3g x largest |reference| %.3g)\n",
                where, tensor, at, n ? got[at] : 0.0f, n ? want[at] : 0.0f,
                n ? fabs((double)got[at] - want[at]) : 0.0, bound, tol, scale);
    }
}

/* Engine run r against the reference run base of the same case and mode. */
static void compare_runs(const OpCase *c, const Engine *e, int mode, const Run *r, const Run *base,
                         EngineStats *st)
{
    const Engine *be = &engines[e->base];
    char where[256];
    snprintf(where, sizeof where, "%s on %s against %s (%s)", c->name, e->name, be->name,
             mode_names[mode]);
    const Net *bn = &base->net, *n = &r->net;
    /* the same parameters and statistics from the same seed */
    if (n->n_params != bn->n_params || n->n_state != bn->n_state ||
        memcmp(r->params0, base->params0, bn->n_params * sizeof(float)) ||
        memcmp(r->state0, base->state0, bn->n_state * sizeof(float))) {
        fprintf(stderr, "FAIL %s: the parameters built from the seed differ from the reference's\n",
                where);
        check_failures++;
        return;
    }
    const double tol = engine_tolerance(e, be, bn, stored_16bit(n), cudnn_16bit(n), 0);
    const double inference_tol = engine_tolerance(e, be, bn, stored_16bit(n), cudnn_16bit(n), 1);
    st->stored += stored_16bit(n) > 0;
    const double out_tol = mode == MODE_INFERENCE ? inference_tol : tol;
    compare(where, "output", r->out, base->out, base->out_n, out_tol, 0, st);
    const int loss = bn->layers[bn->n_layers - 1].type->is_loss ||
                     (bn->n_layers > 1 && bn->layers[bn->n_layers - 2].type->is_loss) ||
                     net_truth_boxes(bn) > 0;
    if (loss)
        compare(where, "loss", &r->loss, &base->loss, 1, out_tol, 0, st);
    compare(where, mode == MODE_TRAINING ? "inference output after training" : "second output",
            r->eval_out, base->eval_out, base->out_n, inference_tol, 0, st);
    if (loss)
        compare(where, mode == MODE_TRAINING ? "inference loss after training" : "second loss",
                &r->eval_loss, &base->eval_loss, 1, inference_tol, 0, st);
    if (mode != MODE_TRAINING) {
        compare(where, "output after new statistics", r->new_stats_out, base->new_stats_out,
                base->out_n, inference_tol, 0, st);
        compare(where, "output after new weights", r->new_weights_out, base->new_weights_out,
                base->out_n, inference_tol, 0, st);
        return;
    }
    /* bf16 against float32 across kinks: the statistics only, the gradients against "bf16" */
    const int gradients =
        (e->precision == be->precision && !kinks_after_16bit(n)) || !has_kinks(bn);
    st->kinked += !gradients;
    if (gradients && !bn->layers[0].type->reads_token_ids)
        compare(where, "input gradient", r->input_delta, base->input_delta, base->in_n, tol, 0, st);
    for (int i = 0; i < bn->n_layers; i++) {
        const Layer *l = &bn->layers[i];
        /* A layer's gradients sum its output gradient against values of unit scale (normalised
         * inputs, x-hat, ones), so their round-off is that of its largest one even where a
         * tensor's own sum cancels: the scales of a batch norm whose channels a depthwise
         * convolution and another batch norm take one by one (mobilenetv2) have no gradient by
         * scale invariance, up to round-off. */
        double layer_scale = 0;
        for (int p = 0; p < l->n_params; p++)
            for (size_t j = 0; l->params[p].trainable && j < l->params[p].count; j++)
                layer_scale =
                    fmax(layer_scale, fabs(base->grads[l->params[p].grad - bn->grads + j]));
        for (int p = 0; p < l->n_params; p++) {
            const Param *pa = &l->params[p];
            char tensor[128];
            snprintf(tensor, sizeof tensor, "layer %d [%s] %s %s", i, l->type->name, pa->name,
                     pa->trainable ? "gradient" : "change");
            if (pa->trainable && !gradients)
                continue;
            const size_t at =
                pa->trainable ? (size_t)(pa->grad - bn->grads) : (size_t)(pa->data - bn->state);
            compare(where, tensor, (pa->trainable ? r->grads : r->state_change) + at,
                    (pa->trainable ? base->grads : base->state_change) + at, pa->count, tol,
                    pa->trainable ? layer_scale : 0, st);
        }
    }
}

/* A "winograd residual" case's inference net on Winograd fuses its shortcuts into the
 * convolutions before them (Layer.sum_from), as the case's name says. */
static void check_winograd_sums(const OpCase *c, const Engine *e, int mode, const Net *net)
{
    if (mode != MODE_INFERENCE || strcmp(e->name, "winograd") ||
        !strstr(c->name, "winograd residual"))
        return;
    for (int i = 0; i < net->n_layers; i++)
        if (net->layers[i].kernels->plain_sum && !net->layers[i].sum_from) {
            fprintf(stderr, "FAIL %s (inference): the shortcut (layer %d) is not fused\n", c->name,
                    i);
            check_failures++;
        }
}

/* The reference's own run: every convolution on the reference kernels, every layer plain. */
static void check_reference(const OpCase *c, int mode, const Net *net)
{
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if ((l->engine && strcmp(l->engine, "ref")) || l->blocked >> LAYER_OUT_BIT & 1 ||
            l->sum_from) {
            fprintf(stderr, "FAIL %s (%s): the reference runs layer %d on %s%s\n", c->name,
                    mode_names[mode], i, l->engine ? l->engine : "its kernels",
                    l->blocked >> LAYER_OUT_BIT & 1 ? " in nChw8c" : "");
            check_failures++;
        }
    }
}

/* test_backend_ops [TEXT]: every case, or those whose name contains TEXT (then no engine need
 * apply to one). */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    int runs = 0, not_applicable = 0, not_built = 0;
    for (size_t ci = 0; ci < N_CASES; ci++)
        for (int mode = 0; mode < 2 && (!only || strstr(cases[ci].name, only)); mode++) {
            Run run[N_ENGINES];
            int ran[N_ENGINES] = {0};
            for (size_t ei = 0; ei < N_ENGINES; ei++) {
                const Engine *e = &engines[ei];
                if (e->built && !e->built()) {
                    stats[ei].not_built++, not_built++;
                    continue;
                }
                if (!ran[e->base] && ei) { /* its base does not apply: nor does it */
                    stats[ei].not_applicable++, not_applicable++;
                    continue;
                }
                const int st = run_engine(&cases[ci], e, mode, &run[ei]);
                if (st == 1)
                    stats[ei].not_applicable++, not_applicable++;
                if (st == 1 && cases[ci].must_run_on && !strcmp(cases[ci].must_run_on, e->name)) {
                    fprintf(stderr, "FAIL %s (%s): does not run on %s\n", cases[ci].name,
                            mode_names[mode], e->name);
                    check_failures++;
                }
                if (st)
                    continue;
                ran[ei] = 1;
                if (ei == 0) {
                    check_reference(&cases[ci], mode, &run[0].net);
                    continue;
                }
                compare_runs(&cases[ci], e, mode, &run[ei], &run[e->base], &stats[ei]);
                check_winograd_sums(&cases[ci], e, mode, &run[ei].net);
                stats[ei].runs++, runs++;
            }
            for (size_t ei = 0; ei < N_ENGINES; ei++)
                if (ran[ei])
                    run_free(&run[ei]);
        }
    for (size_t ei = 1; ei < N_ENGINES; ei++) {
        const EngineStats *s = &stats[ei];
        if (s->not_built)
            printf("  %-19s not built (or not run on this CPU)\n", engines[ei].name);
        else
            printf("  %-19s against %-4s %3d runs (%d with 16-bit activations), %3d not "
                   "applicable%s; largest error %.3g of its tolerance (%s)\n",
                   engines[ei].name, engines[engines[ei].base].name, s->runs, s->stored,
                   s->not_applicable,
                   s->kinked ? " (gradients of kinked nets left to the bf16 rows)" : "", s->worst,
                   s->worst_at);
        /* the GPU keeps some layers' outputs in bf16 or fp16 (core/net_storage.h) */
        const Engine *e = &engines[ei];
        if (!s->not_built && e->backend != CDL_BACKEND_CPU && !only &&
            precision_storage(e->precision) != ELEM_F32 && s->stored == 0) {
            fprintf(stderr, "FAIL %s: no case keeps an activation in 16 bits\n", e->name);
            check_failures++;
        }
        if (!s->not_built && engines[ei].must_apply && s->runs == 0 && !only) {
            fprintf(stderr, "FAIL %s: no case runs on it (is its selection broken?)\n",
                    engines[ei].name);
            check_failures++;
        }
    }
    printf("test_backend_ops: %d cases x 2 modes x %d engines: %d compared, %d skipped (%d not "
           "applicable, %d not built)\n",
           (int)N_CASES, (int)N_ENGINES - 1, runs, not_applicable + not_built, not_applicable,
           not_built);
    return check_report("test_backend_ops");
}
