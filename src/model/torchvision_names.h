/* torchvision's state-dict names for the tensors of a zoo cfg laid out as torchvision's model
 * (cfg/resnet18, resnet34, resnet50 and their _cifar variants, vgg16, mobilenetv2,
 * mobilenet_v3_small and _large, efficientnet_b0, shufflenet_v2_x1_0, regnet_y_400mf,
 * convnext_tiny, vit_b_16, densenet121, inception_v3).
 *
 * The family is read from the net's structure: a [batchnorm] layer makes it a DenseNet, a
 * [tokens] class token a ViT; grouped
 * convolutions make it MobileNetV2, or with other layers with tensors (layer norms, layer
 * scales) ConvNeXt, or with convolutions without batch norm (squeeze-excitation's) MobileNetV3,
 * EfficientNet when the stem's activation is swish, RegNet with a [route] back to a block's
 * input, or with [route]s concatenating channels ShuffleNetV2; such [route]s without grouped
 * convolutions make it Inception v3; a [shortcut] makes it a ResNet,
 * convolutions and connected layers alone a VGG. Weighted layers map in order, as
 * scripts/zoo_vs_torchvision.py checks their computation:
 *   ResNet       the first convolution is conv1/bn1; each [shortcut] closes a block, whose
 *                convolutions are convK/bnK and, after a [route] back to the block input,
 *                downsample.0/downsample.1; a block with a downsample starts the next stage
 *                (layer1.0 of a bottleneck net has one too); the connected layer is fc.
 *   VGG          features.N (N counts torchvision's Sequential: a convolution, its batch norm
 *                and its activation one each, a pooling one), then classifier.N (a connected
 *                layer and its activation one each, a layer keeping its shape, dropout, one).
 *   MobileNetV2  features.0 is the stem (features.0.0 conv, .1 norm); a linear convolution
 *                closes each inverted residual features.N, whose convolutions before it are
 *                conv.K.0/conv.K.1 and the linear one conv.K/conv.K+1; a convolution after the
 *                last block is features.N.0/.1; then classifier.N as VGG's.
 *   MobileNetV3  features.0 is the stem (.0 conv, .1 norm); each block features.N.block ends at
 *                its linear convolution; in it a convolution with batch norm is K.0/K.1, the two
 *                of squeeze-excitation K.fc1 and K.fc2 (K counting the block's modules); the
 *                convolution after the last block is features.N.0/.1; classifier.N as VGG's.
 *   EfficientNet as MobileNetV3 with blocks features.S.I.block: a block that does not add its
 *                input (no [shortcut] after its linear convolution) starts stage S.
 *   ShuffleNetV2 conv1.0/.1 the first convolution, conv5.0/.1 the last, fc; between them units
 *                stageS.I each closed by a concatenation: one of five convolutions starts a
 *                stage (from stage2), its first two branch1.0/.1 and .2/.3; a unit's last three
 *                are branch2.0/.1, .3/.4, .5/.6.
 *   RegNet       stem.0/.1; blocks trunk_output.blockS.blockS-I closed by a residual [shortcut]:
 *                a convolution before a [route] back to the block input is proj.0/.1 and starts
 *                stage S; the block's convolutions with batch norm are f.a, f.b, f.c (.0/.1),
 *                squeeze-excitation's f.se.fc1 and f.se.fc2; then fc.
 *   ConvNeXt     features.0.0/.1 the stem convolution and layer norm; blocks features.S.I from
 *                a depthwise convolution to their [shortcut]: layer_scale, block.0 (the
 *                depthwise convolution), block.2 (layer norm), block.3 and block.5 (the 1x1
 *                convolutions, named in torch's Linear shape); a layer norm and convolution
 *                between stages features.S.0/.1; after the blocks classifier.0 (layer norm) and
 *                classifier.2 (the [connected]).
 *   ViT          class_token and encoder.pos_embedding the [tokens]' tensors, conv_proj the
 *                convolution before it; then blocks of five layers with tensors (layer norm,
 *                attention, layer norm, linear, linear): encoder.layers.encoder_layer_N.ln_1,
 *                self_attention.in_proj_weight/in_proj_bias/out_proj.weight/out_proj.bias, ln_2,
 *                mlp.0, mlp.3; the last layer norm encoder.ln, the [connected] heads.head.
 *   DenseNet     features.conv0/norm0 the stem; a [batchnorm] before a convolution with batch
 *                norm starts features.denseblockB.denselayerK: norm1, then conv1/norm2 and the
 *                bias-free conv2; a [batchnorm] before a convolution without batch norm is
 *                features.transitionB.norm and that convolution .conv, closing block B; the
 *                [batchnorm] before the [connected] features.norm5, the [connected] classifier.
 *   Inception v3 the stem's Conv2d_1a_3x3 to Conv2d_4a_3x3, then blocks Mixed_5b to Mixed_7c and
 *                AuxLogits (after Mixed_6e), each BasicConv2d in torch's order (InceptionA's
 *                branch1x1, branch5x5_1, _2, branch3x3dbl_1 to _3, branch_pool; B's, C's, D's
 *                and E's likewise: the cfg's branches in the order torch defines them) as
 *                NAME.conv/NAME.bn; the auxiliary [connected] AuxLogits.fc, the last one fc.
 * A convolution's weights are P.weight; with batch norm its scales, biases, rolling_mean and
 * rolling_variance are B.weight, B.bias, B.running_mean, B.running_var (torch also keeps
 * B.num_batches_tracked, an I64 scalar); without, its biases are P.bias. A [layernorm]'s scales
 * and biases are its weight and bias. */
#ifndef CDL_TORCHVISION_NAMES_H
#define CDL_TORCHVISION_NAMES_H

#include "core/net.h"

#define TORCH_NAME_MAX 64

/* One state-dict entry: layer `layer`'s params[param], or (param -1) a batch norm's
 * num_batches_tracked. n_dims 0: torch's shape is the Param's; else dims[0..n_dims), the same
 * values in another shape (ConvNeXt's Linear [out][in] where cdl has a 1x1 convolution's
 * [out][in][1][1]). */
typedef struct TorchTensor {
    char name[TORCH_NAME_MAX];
    int layer, param;
    int n_dims;
    int64_t dims[PARAM_MAX_DIMS];
} TorchTensor;

/* The state dict of a net, in torch's order (a module's weight, then its norm's weight, bias,
 * running_mean, running_var, num_batches_tracked). */
typedef struct TorchNames {
    const char *family; /* "resnet", "vgg", "mobilenetv2", "mobilenet_v3", "efficientnet",
                           "shufflenet", "vit", "regnet",
                           "convnext", "densenet" */
    TorchTensor *tensors;
    int n_tensors;
    int head_layer; /* the last layer with parameters: a changed head keeps its initial values */
} TorchNames;

/* Names net's tensors. A net of none of the families, or one whose layers do not follow its
 * family's layout, is refused (CDL_EUSAGE) naming the layer. Free with torchvision_names_free,
 * even after a failure. */
int torchvision_names(const Net *net, TorchNames *names, Error *e);
void torchvision_names_free(TorchNames *names);

/* Inception v3's module k (from 0) with tensors, in torch's order, into path
 * ("Mixed_6b.branch7x7_2", "AuxLogits.fc"), *fc 1 for a Linear (else a BasicConv2d); 0 past the
 * last. */
int torchvision_inception_module(int k, char *path, size_t bytes, int *fc);

#endif
