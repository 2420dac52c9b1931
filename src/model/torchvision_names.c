/* torchvision's state-dict names for a zoo net's tensors (the layouts in torchvision_names.h). */
#include "model/torchvision_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_conv(const Layer *l)
{
    return l->type->darknet_weights == DARKNET_CONVOLUTIONAL;
}

static int is_connected(const Layer *l)
{
    return l->type->darknet_weights == DARKNET_CONNECTED;
}

static int param_index(const Layer *l, const char *name)
{
    for (int k = 0; k < l->n_params; k++)
        if (!strcmp(l->params[k].name, name))
            return k;
    return -1;
}

static int is_batchnorm(const Layer *l)
{
    return l->type->darknet_weights == DARKNET_BATCHNORM;
}

static int has_norm(const Layer *l)
{
    return param_index(l, "scales") >= 0;
}

/* A convolution whose filters see fewer channels than its input has. */
static int is_grouped(const Layer *l)
{
    return is_conv(l) && l->params[0].dims[1] != l->in_shape.c;
}

/* [shortcut] (two inputs) and [route] back past the previous layer. */
static int is_shortcut(const Layer *l)
{
    return l->n_inputs >= 2;
}

static int is_route_back(const Layer *l)
{
    return !l->n_params && l->n_inputs == 1 && l->inputs[0] != l->index - 1;
}

static int same_shape(Shape a, Shape b)
{
    return a.c == b.c && a.h == b.h && a.w == b.w;
}

/* Appends one tensor; names has room for every tensor the net can have. */
static void add(TorchNames *t, int layer, int param, const char *prefix, const char *suffix)
{
    TorchTensor *x = &t->tensors[t->n_tensors++];
    snprintf(x->name, sizeof x->name, "%s.%s", prefix, suffix);
    x->layer = layer;
    x->param = param;
}

static void add_batch_norm(TorchNames *t, const Layer *l, const char *norm);

/* Layer i's tensors: module is the convolution's or linear's name, norm its batch norm's. */
static void add_layer(TorchNames *t, const Layer *l, const char *module, const char *norm)
{
    add(t, l->index, param_index(l, "weights"), module, "weight");
    if (!has_norm(l)) {
        if (param_index(l, "biases") >= 0)
            add(t, l->index, param_index(l, "biases"), module, "bias");
        return;
    }
    add_batch_norm(t, l, norm);
}

/* Layer l's batch norm (a convolution's, or a [batchnorm]) as BatchNorm2d norm. */
static void add_batch_norm(TorchNames *t, const Layer *l, const char *norm)
{
    add(t, l->index, param_index(l, "scales"), norm, "weight");
    add(t, l->index, param_index(l, "biases"), norm, "bias");
    add(t, l->index, param_index(l, "rolling_mean"), norm, "running_mean");
    add(t, l->index, param_index(l, "rolling_variance"), norm, "running_var");
    add(t, l->index, -1, norm, "num_batches_tracked");
}

static int unexpected(const Net *net, const Layer *l, const char *family, const char *why, Error *e)
{
    return error_set(e, CDL_EUSAGE,
                     "%s: layer %d [%s]: %s in torchvision's %s layout, so its tensors have no "
                     "torchvision names",
                     net->cfg.path, l->index, l->type->name, why, family);
}

/* classifier.N from the first layer after the last convolution on. */
static int add_classifier(TorchNames *t, const Net *net, int from, Error *e)
{
    int n = 0;
    for (int i = from; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        char module[TORCH_NAME_MAX];
        if (is_connected(l)) {
            snprintf(module, sizeof module, "classifier.%d", n);
            add_layer(t, l, module, module);
            n += 1 + (l->activation != CDL_ACT_LINEAR);
        } else if (l->n_params)
            return unexpected(net, l, t->family,
                              "a layer with tensors after the last "
                              "convolution that is not [connected]",
                              e);
        else if (same_shape(l->in_shape, l->out_shape))
            n++; /* dropout */
    }
    return CDL_OK;
}

static int last_conv(const Net *net)
{
    int last = -1;
    for (int i = 0; i < net->n_layers; i++)
        if (is_conv(&net->layers[i]))
            last = i;
    return last;
}

static int name_vgg(TorchNames *t, const Net *net, Error *e)
{
    const int last = last_conv(net);
    int n = 0;
    for (int i = 0; i <= last; i++) {
        const Layer *l = &net->layers[i];
        if (is_conv(l)) {
            char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
            snprintf(module, sizeof module, "features.%d", n);
            snprintf(norm, sizeof norm, "features.%d", n + 1);
            add_layer(t, l, module, norm);
            n += 1 + has_norm(l) + (l->activation != CDL_ACT_LINEAR);
        } else if (l->n_params)
            return unexpected(net, l, t->family, "a layer with tensors among the convolutions", e);
        else
            n++;
    }
    return add_classifier(t, net, last + 1, e);
}

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
        add_layer(t, l, module, norm);
    }
}

static int name_mobilenet(TorchNames *t, const Net *net, Error *e)
{
    const int last = last_conv(net);
    int convs[8], n = 0, block = 0;
    for (int i = 0; i <= last; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !is_conv(l))
            return unexpected(net, l, t->family, "a layer with tensors among the convolutions", e);
        if (!is_conv(l))
            continue;
        if (n == (int)(sizeof convs / sizeof convs[0]))
            return unexpected(net, l, t->family, "a block of more than 8 convolutions", e);
        convs[n++] = i;
        /* the stem, and each block up to its linear projection */
        if (block == 0 || l->activation == CDL_ACT_LINEAR || i == last) {
            add_mobilenet_block(t, net, convs, n, block++);
            n = 0;
        }
    }
    return add_classifier(t, net, last + 1, e);
}

/* The layer after a block's projection (layer i), past a [drop_path], is a [shortcut]: the block
 * adds its input. */
static int block_adds_input(const Net *net, int i)
{
    for (int j = i + 1; j < net->n_layers; j++) {
        const Layer *l = &net->layers[j];
        if (is_shortcut(l))
            return 1;
        if (l->n_params || !same_shape(l->in_shape, l->out_shape))
            return 0;
    }
    return 0;
}

/* MobileNetV3 (features.N) and EfficientNet (features.S.I, staged): blocks of convolutions up to
 * a linear one, each convolution with batch norm block.K.0/.1 and squeeze-excitation's two
 * block.K.fc1/fc2; the stem before them and the convolution after them are features.N.0/.1. */
static int name_se_blocks(TorchNames *t, const Net *net, int staged, Error *e)
{
    const int last = last_conv(net);
    int feature = 0, in_stage = 0, k = 0, fc = 0;
    char block[TORCH_NAME_MAX] = "";
    for (int i = 0; i <= last; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !is_conv(l))
            return unexpected(net, l, t->family, "a layer with tensors among the convolutions", e);
        if (!is_conv(l))
            continue;
        char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
        if (i == 0 || i == last) { /* the stem and the last convolution: Conv2dNormActivation */
            if (i == last) {
                feature++;
                in_stage = 0;
            }
            snprintf(module, sizeof module, "features.%d.0", feature);
            snprintf(norm, sizeof norm, "features.%d.1", feature);
            add_layer(t, l, module, norm);
            continue;
        }
        if (!block[0]) { /* a block starts; one that does not add its input starts a stage */
            int adds = 0;
            for (int j = i; j <= last && !adds; j++)
                if (is_conv(&net->layers[j]) && has_norm(&net->layers[j]) &&
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
        if (has_norm(l)) {
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
        add_layer(t, l, module, norm);
        if (has_norm(l) && l->activation == CDL_ACT_LINEAR)
            block[0] = '\0'; /* the projection closes the block */
    }
    return add_classifier(t, net, last + 1, e);
}

/* [route] concatenating several inputs' channels (not [shortcut]'s or [scale_channels]' sum or
 * product, which keep the channel count). */
static int is_concat(const Layer *l)
{
    return l->n_inputs >= 2 && !l->n_params && l->out_shape.c > l->in_shape.c;
}

/* ShuffleNetV2: conv1, then units stageS.I, each closed by the concatenation of its two halves: a
 * unit of five convolutions (the first of a stage) has branch1.0/.1 and .2/.3 first, every unit
 * branch2.0/.1, .3/.4 and .5/.6; then conv5 and fc. */
static int name_shufflenet(TorchNames *t, const Net *net, Error *e)
{
    static const int branch1[] = {0, 2}, branch2[] = {0, 3, 5};
    const int last = last_conv(net);
    int unit[5], n = 0, stage = 1, in_stage = 0, first = -1;
    for (int i = 0; i <= last; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !is_conv(l))
            return unexpected(net, l, t->family, "a layer with tensors among the convolutions", e);
        if (is_conv(l) && first < 0) {
            add_layer(t, l, "conv1.0", "conv1.1");
            first = i;
        } else if (is_conv(l) && i == last) {
            add_layer(t, l, "conv5.0", "conv5.1");
        } else if (is_conv(l)) {
            if (n == 5)
                return unexpected(net, l, t->family, "a unit of more than 5 convolutions", e);
            unit[n++] = i;
        } else if (is_concat(l)) {
            if (n != 3 && n != 5)
                return unexpected(net, l, t->family, "a unit of neither 3 nor 5 convolutions", e);
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
                add_layer(t, &net->layers[unit[k]], module, norm);
            }
            in_stage++;
            n = 0;
        }
    }
    int fc = 0;
    for (int i = last + 1; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && fc++)
            return unexpected(net, l, t->family, "a second [connected] (torchvision has one, fc)",
                              e);
        if (l->n_params)
            add_layer(t, l, "fc", "fc");
    }
    return CDL_OK;
}

/* Appends one tensor under a name of its own (no module prefix). */
static void add_named(TorchNames *t, int layer, int param, const char *name)
{
    TorchTensor *x = &t->tensors[t->n_tensors++];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->layer = layer;
    x->param = param;
}

/* VisionTransformer: class_token, conv_proj, encoder.pos_embedding, then per encoder block
 * (layer norm, attention, layer norm, linear, linear) ln_1, self_attention, ln_2, mlp.0, mlp.3,
 * then encoder.ln and heads.head; torch's state-dict order. */
static int name_vit(TorchNames *t, const Net *net, Error *e)
{
    /* the layers with tensors after [tokens], in order, and what each must hold */
    static const char *const block_param[] = {"scales", "out_weights", "scales", "weights",
                                              "weights"};
    int tokens = -1, conv = -1;
    for (int i = 0; i < net->n_layers && tokens < 0; i++) {
        if (param_index(&net->layers[i], "class_token") >= 0)
            tokens = i;
        else if (is_conv(&net->layers[i]))
            conv = i;
    }
    const Layer *tl = &net->layers[tokens];
    if (conv < 0 || param_index(tl, "positional") < 0)
        return unexpected(net, tl, t->family,
                          "a class token needs a patch convolution before it and a position "
                          "embedding",
                          e);
    add_named(t, tokens, param_index(tl, "class_token"), "class_token");
    add_layer(t, &net->layers[conv], "conv_proj", "conv_proj");
    add_named(t, tokens, param_index(tl, "positional"), "encoder.pos_embedding");
    int weighted[1024], n = 0;
    for (int i = tokens + 1; i < net->n_layers; i++)
        if (net->layers[i].n_params) {
            if (n == (int)(sizeof weighted / sizeof weighted[0]))
                return unexpected(net, &net->layers[i], t->family, "a layer past 1024", e);
            weighted[n++] = i;
        }
    if (n < 2 || (n - 2) % 5)
        return unexpected(net, tl, t->family,
                          "not followed by blocks of 5 layers with tensors, a layer norm and a "
                          "head",
                          e);
    for (int k = 0; k < n - 2; k++) {
        const Layer *l = &net->layers[weighted[k]];
        if (param_index(l, block_param[k % 5]) < 0)
            return unexpected(net, l, t->family, "out of an encoder block's order", e);
        /* the block's tensors: the cdl name and torch's name after encoder_layer_N. */
        static const char *const tensors[5][4][2] = {
            {{"scales", "ln_1.weight"}, {"biases", "ln_1.bias"}},
            {{"weights", "self_attention.in_proj_weight"},
             {"biases", "self_attention.in_proj_bias"},
             {"out_weights", "self_attention.out_proj.weight"},
             {"out_biases", "self_attention.out_proj.bias"}},
            {{"scales", "ln_2.weight"}, {"biases", "ln_2.bias"}},
            {{"weights", "mlp.0.weight"}, {"biases", "mlp.0.bias"}},
            {{"weights", "mlp.3.weight"}, {"biases", "mlp.3.bias"}},
        };
        for (int j = 0; j < 4 && tensors[k % 5][j][0]; j++) {
            char name[TORCH_NAME_MAX];
            snprintf(name, sizeof name, "encoder.layers.encoder_layer_%d.%s", k / 5,
                     tensors[k % 5][j][1]);
            add_named(t, l->index, param_index(l, tensors[k % 5][j][0]), name);
        }
    }
    const Layer *ln = &net->layers[weighted[n - 2]], *head = &net->layers[weighted[n - 1]];
    if (param_index(ln, "scales") < 0 || !is_connected(head))
        return unexpected(net, head, t->family, "not encoder.ln then the [connected] head", e);
    add_named(t, ln->index, param_index(ln, "scales"), "encoder.ln.weight");
    add_named(t, ln->index, param_index(ln, "biases"), "encoder.ln.bias");
    add_layer(t, head, "heads.head", "heads.head");
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
static int name_regnet(TorchNames *t, const Net *net, Error *e)
{
    static const char *const normed[][2] = {
        {"f.a.0", "f.a.1"}, {"f.b.0", "f.b.1"}, {"f.c.0", "f.c.1"}};
    static const char *const excitation[] = {"f.se.fc1", "f.se.fc2"};
    char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
    int stage = 0, in_stage = 0, k = 0, se = 0, fc = 0, stem = -1, start = -1;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !is_conv(l) && !is_connected(l))
            return unexpected(net, l, t->family, "a layer with tensors in a block", e);
        if (is_conv(l) && stem < 0) {
            add_layer(t, l, "stem.0", "stem.1");
            stem = i;
            continue;
        }
        if (is_connected(l)) {
            if (fc++)
                return unexpected(net, l, t->family,
                                  "a second [connected] (torchvision has one, fc)", e);
            add_layer(t, l, "fc", "fc");
            continue;
        }
        if (l->n_inputs >= 2 && same_shape(l->in_shape, l->out_shape)) { /* the block's sum */
            start = -1;
            continue;
        }
        if (!is_conv(l))
            continue;
        if (start < 0) { /* a block starts: with a projection, a stage */
            int proj = 0;
            for (int j = i + 1; j < net->n_layers && !proj && !is_conv(&net->layers[j]); j++)
                proj = is_route_back(&net->layers[j]);
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
                add_layer(t, l, module, norm);
                continue;
            }
        }
        if (has_norm(l) ? k == 3 : se == 2)
            return unexpected(net, l, t->family, "a block of more convolutions than RegNet's", e);
        regnet_name(module, stage, in_stage, has_norm(l) ? normed[k][0] : excitation[se]);
        regnet_name(norm, stage, in_stage, has_norm(l) ? normed[k][1] : excitation[se]);
        if (has_norm(l))
            k++;
        else
            se++;
        add_layer(t, l, module, norm);
    }
    return CDL_OK;
}

/* Appends layer l's param named param under prefix.suffix in torch's shape dims[0..n_dims). */
static void add_reshaped(TorchNames *t, const Layer *l, const char *param, const char *prefix,
                         const char *suffix, int n_dims, const int64_t *dims)
{
    add(t, l->index, param_index(l, param), prefix, suffix);
    TorchTensor *x = &t->tensors[t->n_tensors - 1];
    x->n_dims = n_dims;
    memcpy(x->dims, dims, (size_t)n_dims * sizeof *dims);
}

/* A [layernorm]'s scales and biases as prefix.weight and prefix.bias. */
static void add_norm(TorchNames *t, const Layer *l, const char *prefix)
{
    add(t, l->index, param_index(l, "scales"), prefix, "weight");
    add(t, l->index, param_index(l, "biases"), prefix, "bias");
}

/* ConvNeXt: features.0.0/.1 the stem convolution and its layer norm; blocks features.S.I from a
 * depthwise convolution to their [shortcut]: layer_scale (torch's [C][1][1]), block.0 the
 * depthwise convolution, block.2 the layer norm, block.3 and block.5 the 1x1 convolutions (torch's
 * Linear [out][in]); a layer norm and a convolution outside the blocks downsample, features.S.0
 * and .1, S counting torch's Sequential (stages at odd S); after the last convolution the layer
 * norm is classifier.0 and the [connected] classifier.2. */
static int name_convnext(TorchNames *t, const Net *net, Error *e)
{
    const int last = last_conv(net);
    int feature = 0, in_stage = -1, in_block = 0, k = 0, stem = 1;
    char prefix[TORCH_NAME_MAX - 16]; /* room for .layer_scale, .weight, .bias */
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (is_shortcut(l)) {
            in_block = 0;
            continue;
        }
        if (!l->n_params)
            continue;
        if (is_connected(l)) {
            add_layer(t, l, "classifier.2", "classifier.2");
            continue;
        }
        if (i > last && !in_block) {
            add_norm(t, l, "classifier.0");
            continue;
        }
        if (is_grouped(l) && !in_block) { /* a block starts */
            if (in_stage < 0 || feature % 2 == 0) {
                feature++;
                in_stage = 0;
            } else {
                in_stage++;
            }
            in_block = 1;
            k = 0;
            char scale[TORCH_NAME_MAX - 16];
            snprintf(scale, sizeof scale, "features.%d.%d", feature, in_stage);
            /* torch lists the block's layer_scale first: it is the layer before the shortcut */
            for (int j = i + 1; j < net->n_layers && !is_shortcut(&net->layers[j]); j++) {
                const Layer *s = &net->layers[j];
                if (s->n_params == 1 && !is_conv(s))
                    add_reshaped(t, s, "scales", scale, "layer_scale", 3,
                                 (int64_t[]){s->params[0].dims[0], 1, 1});
            }
        }
        if (in_block) {
            static const int at[] = {0, 2, 3, 5};
            if (l->n_params == 1 && !is_conv(l))
                continue; /* the layer scale, named above */
            if (k == 4)
                return unexpected(net, l, t->family, "a fifth layer with tensors in a block", e);
            snprintf(prefix, sizeof prefix, "features.%d.%d.block.%d", feature, in_stage, at[k]);
            if (k == 1)
                add_norm(t, l, prefix);
            else if (k == 0)
                add_layer(t, l, prefix, prefix);
            else {
                const int64_t *d = l->params[param_index(l, "weights")].dims;
                add_reshaped(t, l, "weights", prefix, "weight", 2, (int64_t[]){d[0], d[1]});
                add(t, l->index, param_index(l, "biases"), prefix, "bias");
            }
            k++;
            continue;
        }
        /* outside the blocks: the stem's convolution and norm, or a downsampling norm and conv */
        if (!is_conv(l) && !stem && feature % 2)
            feature++;
        snprintf(prefix, sizeof prefix, "features.%d.%d", feature,
                 is_conv(l) ? stem ? 0 : 1
                 : stem     ? 1
                            : 0);
        if (is_conv(l))
            add_layer(t, l, prefix, prefix);
        else {
            add_norm(t, l, prefix);
            stem = 0;
        }
    }
    return CDL_OK;
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
            if (!is_conv(l) || !has_norm(l))
                return unexpected(net, l, t->family, "not the stem convolution with batch norm", e);
            add_layer(t, l, "features.conv0", "features.norm0");
            stem = 0;
        } else if (is_batchnorm(l)) {
            if (next && is_connected(next)) {
                add_batch_norm(t, l, "features.norm5");
            } else if (next && is_conv(next) && has_norm(next)) {
                snprintf(name, sizeof name, "features.denseblock%d.denselayer%d.norm1", block,
                         ++dense_layer);
                add_batch_norm(t, l, name);
            } else if (next && is_conv(next)) {
                snprintf(name, sizeof name, "features.transition%d.norm", block);
                add_batch_norm(t, l, name);
                transition = 1;
            } else {
                return unexpected(net, l, t->family,
                                  "a [batchnorm] before neither a convolution nor the classifier",
                                  e);
            }
        } else if (is_connected(l)) {
            add_layer(t, l, "classifier", "classifier");
        } else if (transition) {
            snprintf(name, sizeof name, "features.transition%d.conv", block++);
            add_layer(t, l, name, name);
            transition = dense_layer = 0;
        } else if (has_norm(l) && dense_layer && !conv2) {
            char norm[TORCH_NAME_MAX];
            snprintf(name, sizeof name, "features.denseblock%d.denselayer%d.conv1", block,
                     dense_layer);
            snprintf(norm, sizeof norm, "features.denseblock%d.denselayer%d.norm2", block,
                     dense_layer);
            add_layer(t, l, name, norm);
            conv2 = 1;
        } else if (!has_norm(l) && conv2) {
            snprintf(name, sizeof name, "features.denseblock%d.denselayer%d.conv2", block,
                     dense_layer);
            add_layer(t, l, name, name);
            conv2 = 0;
        } else {
            return unexpected(net, l, t->family, "a layer out of a dense layer's order", e);
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
            return unexpected(net, l, t->family, "a layer with tensors after the fc", e);
        if (fc && !is_connected(l))
            return unexpected(net, l, t->family, "not the [connected] layer of an fc", e);
        if (!fc && (!is_conv(l) || !has_norm(l)))
            return unexpected(net, l, t->family,
                              "not a convolution with batch norm (a BasicConv2d)", e);
        snprintf(conv, sizeof conv, fc ? "%s" : "%s.conv", path);
        snprintf(norm, sizeof norm, fc ? "%s" : "%s.bn", path);
        add_layer(t, l, conv, norm);
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
    if (!is_conv(stem))
        return unexpected(net, stem, t->family, "not the stem convolution", e);
    add_layer(t, stem, "conv1", "bn1");
    int stage = 1, block = 0, start = 1;
    for (int i = 1; i < net->n_layers; i++) {
        if (!is_shortcut(&net->layers[i]))
            continue;
        int downsample = 0;
        for (int j = start; j < i; j++)
            downsample |= is_route_back(&net->layers[j]);
        if (downsample && start > 1) {
            stage++;
            block = 0;
        }
        int k = 0, after_route = 0;
        for (int j = start; j < i; j++) {
            const Layer *l = &net->layers[j];
            char module[TORCH_NAME_MAX], norm[TORCH_NAME_MAX];
            after_route |= is_route_back(l);
            if (l->n_params && !is_conv(l))
                return unexpected(net, l, t->family, "a layer with tensors in a block", e);
            if (!is_conv(l))
                continue;
            if (after_route) {
                snprintf(module, sizeof module, "layer%d.%d.downsample.0", stage, block);
                snprintf(norm, sizeof norm, "layer%d.%d.downsample.1", stage, block);
            } else {
                k++;
                snprintf(module, sizeof module, "layer%d.%d.conv%d", stage, block, k);
                snprintf(norm, sizeof norm, "layer%d.%d.bn%d", stage, block, k);
            }
            add_layer(t, l, module, norm);
        }
        block++;
        start = i + 1;
    }
    int fc = 0;
    for (int i = start; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (is_conv(l))
            return unexpected(net, l, t->family, "a convolution after the last [shortcut]", e);
        if (l->n_params && fc++)
            return unexpected(net, l, t->family, "a second [connected] (torchvision has one, fc)",
                              e);
        if (l->n_params)
            add_layer(t, l, "fc", "fc");
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
        grouped |= is_grouped(l);
        shortcut |= is_shortcut(l);
        unnormed |= is_conv(l) && !has_norm(l);
        concat |= is_concat(l);
        vit |= param_index(l, "class_token") >= 0;
        route_back |= is_route_back(l);
        densenet |= is_batchnorm(l);
        max_tensors += l->n_params + 1;
    }
    /* ConvNeXt's layer norms and layer scales are its other layers with tensors */
    int others = 0;
    for (int i = 0; i < net->n_layers; i++)
        others |=
            net->layers[i].n_params && !is_conv(&net->layers[i]) && !is_connected(&net->layers[i]);
    const int convnext = !vit && others && grouped;
    for (int i = 0; i < net->n_layers && !vit && !convnext && !densenet; i++) {
        const Layer *l = &net->layers[i];
        if (l->n_params && !is_conv(l) && !is_connected(l))
            return error_set(
                e, CDL_EUSAGE,
                "%s: layer %d [%s] has tensors but torchvision's resnet, vgg, "
                "mobilenet, efficientnet and shufflenet have only convolutions, batch norms "
                "and linear layers",
                net->cfg.path, i, l->type->name);
    }
    if (!(t->tensors = calloc((size_t)max_tensors + 1, sizeof *t->tensors)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    if (last_conv(net) < 0)
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
             : vit        ? name_vit(t, net, e)
             : convnext   ? name_convnext(t, net, e)
             : regnet     ? name_regnet(t, net, e)
             : se         ? name_se_blocks(t, net, efficientnet, e)
             : shufflenet ? name_shufflenet(t, net, e)
             : grouped    ? name_mobilenet(t, net, e)
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
