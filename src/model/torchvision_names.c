/* torchvision's state-dict names for a zoo net's tensors (the layouts in torchvision_names.h):
 * the family read from the net's structure; ResNet, VGG, DenseNet and Inception v3 here, the
 * others in torchvision_names_mobile.c and _transformer.c. */
#include "model/torchvision_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_vgg(TorchNames *t, const Net *net, Error *e)
{
    const int last = tv_last_conv(net);
    int n = 0;
    for (int i = 0; i <= last; i++) {
        const Layer *l = &net->layers[i];
        if (tv_is_conv(l)) {
            char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
            snprintf(module, sizeof module, "features.%d", n);
            snprintf(norm, sizeof norm, "features.%d", n + 1);
            tv_add_layer(t, l, module, norm);
            n += 1 + tv_has_norm(l) + (l->activation != CDL_ACT_LINEAR);
        } else if (l->n_params)
            return tv_unexpected(net, l, t->family, "a layer with tensors among the convolutions",
                                 e);
        else
            n++;
    }
    return tv_add_classifier(t, net, last + 1, e);
}

/* The next layer with tensors after layer i, or NULL. */
static const Layer *next_with_tensors(const Net *net, int i)
{
    for (int j = i + 1; j < net->n_layers; j++)
        if (net->layers[j].n_params)
            return &net->layers[j];
    return NULL;
}

/* DenseNet: features.conv0/norm0 the stem; a [batchnorm] before a convolution with batch norm
 * starts dense layer features.denseblockB.denselayerK (from 1): it is norm1, that convolution
 * conv1/norm2, the bias-free one after it conv2; a [batchnorm] before a convolution without
 * batch norm is features.transitionB.norm, that convolution .conv, and ends block B; a
 * [batchnorm] before the [connected] is features.norm5, the [connected] classifier. */
static int name_densenet(TorchNames *t, const Net *net, Error *e)
{
    char name[TORCH_NAME_MAX];
    int block = 1, dense_layer = 0, stem = 1, conv2 = 0, transition = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i], *next = next_with_tensors(net, i);
        if (!l->n_params)
            continue;
        if (stem) {
            if (!tv_is_conv(l) || !tv_has_norm(l))
                return tv_unexpected(net, l, t->family, "not the stem convolution with batch norm",
                                     e);
            tv_add_layer(t, l, "features.conv0", "features.norm0");
            stem = 0;
        } else if (tv_is_batchnorm(l)) {
            if (next && tv_is_connected(next)) {
                tv_add_batch_norm(t, l, "features.norm5");
            } else if (next && tv_is_conv(next) && tv_has_norm(next)) {
                snprintf(name, sizeof name, "features.denseblock%d.denselayer%d.norm1", block,
                         ++dense_layer);
                tv_add_batch_norm(t, l, name);
            } else if (next && tv_is_conv(next)) {
                snprintf(name, sizeof name, "features.transition%d.norm", block);
                tv_add_batch_norm(t, l, name);
                transition = 1;
            } else {
                return tv_unexpected(
                    net, l, t->family,
                    "a [batchnorm] before neither a convolution nor the classifier", e);
            }
        } else if (tv_is_connected(l)) {
            tv_add_layer(t, l, "classifier", "classifier");
        } else if (transition) {
            snprintf(name, sizeof name, "features.transition%d.conv", block++);
            tv_add_layer(t, l, name, name);
            transition = dense_layer = 0;
        } else if (tv_has_norm(l) && dense_layer && !conv2) {
            char norm[TORCH_NAME_MAX];
            snprintf(name, sizeof name, "features.denseblock%d.denselayer%d.conv1", block,
                     dense_layer);
            snprintf(norm, sizeof norm, "features.denseblock%d.denselayer%d.norm2", block,
                     dense_layer);
            tv_add_layer(t, l, name, norm);
            conv2 = 1;
        } else if (!tv_has_norm(l) && conv2) {
            snprintf(name, sizeof name, "features.denseblock%d.denselayer%d.conv2", block,
                     dense_layer);
            tv_add_layer(t, l, name, name);
            conv2 = 0;
        } else {
            return tv_unexpected(net, l, t->family, "a layer out of a dense layer's order", e);
        }
    }
    return CDL_OK;
}

/* Inception v3: the layers with tensors take torchvision_inception_module's names in order. */
static int name_inception(TorchNames *t, const Net *net, Error *e)
{
    int k = 0, fc;
    char path[TORCH_NAME_MAX - 8], conv[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (!l->n_params)
            continue;
        if (!torchvision_inception_module(k++, path, sizeof path, &fc))
            return tv_unexpected(net, l, t->family, "a layer with tensors after the fc", e);
        if (fc && !tv_is_connected(l))
            return tv_unexpected(net, l, t->family, "not the [connected] layer of an fc", e);
        if (!fc && (!tv_is_conv(l) || !tv_has_norm(l)))
            return tv_unexpected(net, l, t->family,
                                 "not a convolution with batch norm (a BasicConv2d)", e);
        snprintf(conv, sizeof conv, fc ? "%s" : "%s.conv", path);
        snprintf(norm, sizeof norm, fc ? "%s" : "%s.bn", path);
        tv_add_layer(t, l, conv, norm);
    }
    if (torchvision_inception_module(k, path, sizeof path, &fc))
        return error_set(e, CDL_EUSAGE,
                         "%s: the layers with tensors end before torchvision inception_v3's "
                         "module %s",
                         net->cfg.path, path);
    return CDL_OK;
}

static int name_resnet(TorchNames *t, const Net *net, Error *e)
{
    const Layer *stem = &net->layers[0];
    if (!tv_is_conv(stem))
        return tv_unexpected(net, stem, t->family, "not the stem convolution", e);
    tv_add_layer(t, stem, "conv1", "bn1");
    int stage = 1, block = 0, start = 1;
    for (int i = 1; i < net->n_layers; i++) {
        if (!tv_is_shortcut(&net->layers[i]))
            continue;
        int downsample = 0;
        for (int j = start; j < i; j++)
            downsample |= tv_is_route_back(&net->layers[j]);
        if (downsample && start > 1) {
            stage++;
            block = 0;
        }
        int k = 0, after_route = 0;
        for (int j = start; j < i; j++) {
            const Layer *l = &net->layers[j];
            char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
            after_route |= tv_is_route_back(l);
            if (l->n_params && !tv_is_conv(l))
                return tv_unexpected(net, l, t->family, "a layer with tensors in a block", e);
            if (!tv_is_conv(l))
                continue;
            if (after_route) {
                snprintf(module, sizeof module, "layer%d.%d.downsample.0", stage, block);
                snprintf(norm, sizeof norm, "layer%d.%d.downsample.1", stage, block);
            } else {
                k++;
                snprintf(module, sizeof module, "layer%d.%d.conv%d", stage, block, k);
                snprintf(norm, sizeof norm, "layer%d.%d.bn%d", stage, block, k);
            }
            tv_add_layer(t, l, module, norm);
        }
        block++;
        start = i + 1;
    }
    int fc = 0;
    for (int i = start; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (tv_is_conv(l))
            return tv_unexpected(net, l, t->family, "a convolution after the last [shortcut]", e);
        if (l->n_params && fc++)
            return tv_unexpected(net, l, t->family,
                                 "a second [connected] (torchvision has one, fc)", e);
        if (l->n_params)
            tv_add_layer(t, l, "fc", "fc");
    }
    return CDL_OK;
}

int torchvision_names(const Net *net, TorchNames *t, Error *e)
{
    memset(t, 0, sizeof *t);
    int grouped = 0, shortcut = 0, unnormed = 0, concat = 0, vit = 0, route_back = 0, densenet = 0,
        max_tensors = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        grouped |= tv_is_grouped(l);
        shortcut |= tv_is_shortcut(l);
        unnormed |= tv_is_conv(l) && !tv_has_norm(l);
        concat |= tv_is_concat(l);
        vit |= tv_param_index(l, "class_token") >= 0;
        route_back |= tv_is_route_back(l);
        densenet |= tv_is_batchnorm(l);
        max_tensors += l->n_params + 1;
    }
    /* ConvNeXt's layer norms and layer scales are its other layers with tensors */
    int others = 0;
    for (int i = 0; i < net->n_layers; i++)
        others |= net->layers[i].n_params && !tv_is_conv(&net->layers[i]) &&
                  !tv_is_connected(&net->layers[i]);
    const int convnext = !vit && others && grouped;
    for (int i = 0; i < net->n_layers && !vit && !convnext && !densenet; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !tv_is_conv(l) && !tv_is_connected(l))
            return error_set(
                e, CDL_EUSAGE,
                "%s: layer %d [%s] has tensors but torchvision's resnet, vgg, "
                "mobilenet, efficientnet and shufflenet have only convolutions, batch norms "
                "and linear layers",
                net->cfg.path, i, l->type->name);
    }
    if (!(t->tensors = calloc((size_t)max_tensors + 1, sizeof *t->tensors)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    if (tv_last_conv(net) < 0)
        return error_set(e, CDL_EUSAGE,
                         "%s: no convolution: not a torchvision resnet, vgg, mobilenet, "
                         "efficientnet or shufflenet layout",
                         net->cfg.path);
    /* squeeze-excitation's convolutions are the only ones without batch norm in a grouped net */
    const int se = grouped && unnormed, regnet = se && route_back,
              efficientnet = se && !regnet && net->layers[0].activation == CDL_ACT_SWISH;
    const int shufflenet = grouped && !se && concat;
    /* Inception's blocks concatenate branches of plain convolutions */
    const int inception = concat && !grouped && !densenet && !vit && !convnext;
    t->family = densenet       ? "densenet"
                : vit          ? "vit"
                : convnext     ? "convnext"
                : regnet       ? "regnet"
                : efficientnet ? "efficientnet"
                : se           ? "mobilenet_v3"
                : shufflenet   ? "shufflenet"
                : grouped      ? "mobilenetv2"
                : inception    ? "inception_v3"
                : shortcut     ? "resnet"
                               : "vgg";
    int st = densenet     ? name_densenet(t, net, e)
             : vit        ? tv_name_vit(t, net, e)
             : convnext   ? tv_name_convnext(t, net, e)
             : regnet     ? tv_name_regnet(t, net, e)
             : se         ? tv_name_se_blocks(t, net, efficientnet, e)
             : shufflenet ? tv_name_shufflenet(t, net, e)
             : grouped    ? tv_name_mobilenet(t, net, e)
             : inception  ? name_inception(t, net, e)
             : shortcut   ? name_resnet(t, net, e)
                          : name_vgg(t, net, e);
    t->head_layer = t->n_tensors ? t->tensors[t->n_tensors - 1].layer : -1;
    return st;
}

void torchvision_names_free(TorchNames *t)
{
    free(t->tensors);
    memset(t, 0, sizeof *t);
}
