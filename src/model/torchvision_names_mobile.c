/* torchvision's names in the mobile families: MobileNetV2, MobileNetV3, EfficientNet,
 * ShuffleNetV2, RegNet (torchvision_names.h). */
#include <stdio.h>

#include "model/torchvision_layout.h"

/* One inverted residual (or the stem, or the last 1x1 convolution): the convolutions convs[],
 * features.N. */
static void add_mobilenet_block(TorchNames *t, const Net *net, const int *convs, int n, int block)
{
    char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
    const Layer *last = &net->layers[convs[n - 1]];
    const int closed = last->activation == CDL_ACT_LINEAR && block > 0;
    for (int k = 0; k < n; k++) {
        const Layer *l = &net->layers[convs[k]];
        if (!closed) /* Conv2dNormActivation */
            snprintf(module, sizeof module, "features.%d.0", block);
        else if (k < n - 1)
            snprintf(module, sizeof module, "features.%d.conv.%d.0", block, k);
        else
            snprintf(module, sizeof module, "features.%d.conv.%d", block, k);
        if (!closed)
            snprintf(norm, sizeof norm, "features.%d.1", block);
        else if (k < n - 1)
            snprintf(norm, sizeof norm, "features.%d.conv.%d.1", block, k);
        else
            snprintf(norm, sizeof norm, "features.%d.conv.%d", block, k + 1);
        tv_add_layer(t, l, module, norm);
    }
}

int tv_name_mobilenet(TorchNames *t, const Net *net, Error *e)
{
    const int last = tv_last_conv(net);
    int convs[8], n = 0, block = 0;
    for (int i = 0; i <= last; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !tv_is_conv(l))
            return tv_unexpected(net, l, t->family, "a layer with tensors among the convolutions",
                                 e);
        if (!tv_is_conv(l))
            continue;
        if (n == (int)(sizeof convs / sizeof convs[0]))
            return tv_unexpected(net, l, t->family, "a block of more than 8 convolutions", e);
        convs[n++] = i;
        /* the stem, and each block up to its linear projection */
        if (block == 0 || l->activation == CDL_ACT_LINEAR || i == last) {
            add_mobilenet_block(t, net, convs, n, block++);
            n = 0;
        }
    }
    return tv_add_classifier(t, net, last + 1, e);
}

/* The layer after a block's projection (layer i), past a [drop_path], is a [shortcut]: the block
 * adds its input. */
static int block_adds_input(const Net *net, int i)
{
    for (int j = i + 1; j < net->n_layers; j++) {
        const Layer *l = &net->layers[j];
        if (tv_is_shortcut(l))
            return 1;
        if (l->n_params || !tv_same_shape(l->in_shape, l->out_shape))
            return 0;
    }
    return 0;
}

/* MobileNetV3 (features.N) and EfficientNet (features.S.I, staged): blocks of convolutions up to
 * a linear one, each convolution with batch norm block.K.0/.1 and squeeze-excitation's two
 * block.K.fc1/fc2; the stem before them and the convolution after them are features.N.0/.1. */
int tv_name_se_blocks(TorchNames *t, const Net *net, int staged, Error *e)
{
    const int last = tv_last_conv(net);
    int feature = 0, in_stage = 0, k = 0, fc = 0;
    char block[TORCH_NAME_MAX] = "";
    for (int i = 0; i <= last; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !tv_is_conv(l))
            return tv_unexpected(net, l, t->family, "a layer with tensors among the convolutions",
                                 e);
        if (!tv_is_conv(l))
            continue;
        char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
        if (i == 0 || i == last) { /* the stem and the last convolution: Conv2dNormActivation */
            if (i == last) {
                feature++;
                in_stage = 0;
            }
            snprintf(module, sizeof module, "features.%d.0", feature);
            snprintf(norm, sizeof norm, "features.%d.1", feature);
            tv_add_layer(t, l, module, norm);
            continue;
        }
        if (!block[0]) { /* a block starts; one that does not add its input starts a stage */
            int adds = 0;
            for (int j = i; j <= last && !adds; j++)
                if (tv_is_conv(&net->layers[j]) && tv_has_norm(&net->layers[j]) &&
                    net->layers[j].activation == CDL_ACT_LINEAR) {
                    adds = block_adds_input(net, j);
                    break;
                }
            if (!staged || !adds) {
                feature++;
                in_stage = 0;
            } else {
                in_stage++;
            }
            if (staged)
                snprintf(block, sizeof block, "features.%d.%d.block", feature, in_stage);
            else
                snprintf(block, sizeof block, "features.%d.block", feature);
            k = fc = 0;
        }
        if (tv_has_norm(l)) {
            snprintf(module, sizeof module, "%s.%d.0", block, k);
            snprintf(norm, sizeof norm, "%s.%d.1", block, k++);
        } else { /* squeeze-excitation: fc1 then fc2 */
            snprintf(module, sizeof module, "%s.%d.fc%d", block, k, ++fc);
            snprintf(norm, sizeof norm, "%s", module);
            if (fc == 2) {
                k++;
                fc = 0;
            }
        }
        tv_add_layer(t, l, module, norm);
        if (tv_has_norm(l) && l->activation == CDL_ACT_LINEAR)
            block[0] = '\0'; /* the projection closes the block */
    }
    return tv_add_classifier(t, net, last + 1, e);
}

/* ShuffleNetV2: conv1, then units stageS.I, each closed by the concatenation of its two halves: a
 * unit of five convolutions (the first of a stage) has branch1.0/.1 and .2/.3 first, every unit
 * branch2.0/.1, .3/.4 and .5/.6; then conv5 and fc. */
int tv_name_shufflenet(TorchNames *t, const Net *net, Error *e)
{
    static const int branch1[] = {0, 2}, branch2[] = {0, 3, 5};
    const int last = tv_last_conv(net);
    int unit[5], n = 0, stage = 1, in_stage = 0, first = -1;
    for (int i = 0; i <= last; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !tv_is_conv(l))
            return tv_unexpected(net, l, t->family, "a layer with tensors among the convolutions",
                                 e);
        if (tv_is_conv(l) && first < 0) {
            tv_add_layer(t, l, "conv1.0", "conv1.1");
            first = i;
        } else if (tv_is_conv(l) && i == last) {
            tv_add_layer(t, l, "conv5.0", "conv5.1");
        } else if (tv_is_conv(l)) {
            if (n == 5)
                return tv_unexpected(net, l, t->family, "a unit of more than 5 convolutions", e);
            unit[n++] = i;
        } else if (tv_is_concat(l)) {
            if (n != 3 && n != 5)
                return tv_unexpected(net, l, t->family, "a unit of neither 3 nor 5 convolutions",
                                     e);
            if (n == 5) {
                stage++;
                in_stage = 0;
            }
            for (int k = 0; k < n; k++) {
                const int b1 = n == 5 && k < 2, at = b1 ? branch1[k] : branch2[k - (n == 5) * 2];
                char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
                snprintf(module, sizeof module, "stage%d.%d.branch%d.%d", stage, in_stage,
                         b1 ? 1 : 2, at);
                snprintf(norm, sizeof norm, "stage%d.%d.branch%d.%d", stage, in_stage, b1 ? 1 : 2,
                         at + 1);
                tv_add_layer(t, &net->layers[unit[k]], module, norm);
            }
            in_stage++;
            n = 0;
        }
    }
    int fc = 0;
    for (int i = last + 1; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && fc++)
            return tv_unexpected(net, l, t->family,
                                 "a second [connected] (torchvision has one, fc)", e);
        if (l->n_params)
            tv_add_layer(t, l, "fc", "fc");
    }
    return CDL_OK;
}

/* trunk_output.blockS.blockS-I.SUFFIX, a RegNet block's tensor name. */
static void regnet_name(char out[TORCH_NAME_MAX], int stage, int index, const char *suffix)
{
    snprintf(out, TORCH_NAME_MAX, "trunk_output.block%d.block%d-%d.%s", stage, stage, index,
             suffix);
}

/* RegNet: stem.0/.1, then blocks trunk_output.blockS.blockS-I, each closed by a residual sum (a
 * [shortcut] of two inputs of its shape; [scale_channels] reads a 1x1 map): a convolution before
 * a [route] back to the block input is proj.0/.1 and starts stage S; after it, the convolutions
 * with batch norm are f.a, f.b and f.c (.0 conv, .1 norm), squeeze-excitation's f.se.fc1 and
 * f.se.fc2; then fc. */
int tv_name_regnet(TorchNames *t, const Net *net, Error *e)
{
    static const char *const normed[][2] = {
        {"f.a.0", "f.a.1"}, {"f.b.0", "f.b.1"}, {"f.c.0", "f.c.1"}};
    static const char *const excitation[] = {"f.se.fc1", "f.se.fc2"};
    char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
    int stage = 0, in_stage = 0, k = 0, se = 0, fc = 0, stem = -1, start = -1;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !tv_is_conv(l) && !tv_is_connected(l))
            return tv_unexpected(net, l, t->family, "a layer with tensors in a block", e);
        if (tv_is_conv(l) && stem < 0) {
            tv_add_layer(t, l, "stem.0", "stem.1");
            stem = i;
            continue;
        }
        if (tv_is_connected(l)) {
            if (fc++)
                return tv_unexpected(net, l, t->family,
                                     "a second [connected] (torchvision has one, fc)", e);
            tv_add_layer(t, l, "fc", "fc");
            continue;
        }
        if (l->n_inputs >= 2 && tv_same_shape(l->in_shape, l->out_shape)) { /* the block's sum */
            start = -1;
            continue;
        }
        if (!tv_is_conv(l))
            continue;
        if (start < 0) { /* a block starts: with a projection, a stage */
            int proj = 0;
            for (int j = i + 1; j < net->n_layers && !proj && !tv_is_conv(&net->layers[j]); j++)
                proj = tv_is_route_back(&net->layers[j]);
            if (proj || !stage) {
                stage++;
                in_stage = 0;
            } else {
                in_stage++;
            }
            start = i;
            k = se = 0;
            if (proj) {
                regnet_name(module, stage, in_stage, "proj.0");
                regnet_name(norm, stage, in_stage, "proj.1");
                tv_add_layer(t, l, module, norm);
                continue;
            }
        }
        if (tv_has_norm(l) ? k == 3 : se == 2)
            return tv_unexpected(net, l, t->family, "a block of more convolutions than RegNet's",
                                 e);
        regnet_name(module, stage, in_stage, tv_has_norm(l) ? normed[k][0] : excitation[se]);
        regnet_name(norm, stage, in_stage, tv_has_norm(l) ? normed[k][1] : excitation[se]);
        if (tv_has_norm(l))
            k++;
        else
            se++;
        tv_add_layer(t, l, module, norm);
    }
    return CDL_OK;
}
