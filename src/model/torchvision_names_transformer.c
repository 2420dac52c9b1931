/* torchvision's names in ViT and ConvNeXt (torchvision_names.h). */
#include <stdio.h>

#include "model/torchvision_layout.h"

/* VisionTransformer: class_token, conv_proj, encoder.pos_embedding, then per encoder block
 * (layer norm, attention, layer norm, linear, linear) ln_1, self_attention, ln_2, mlp.0, mlp.3,
 * then encoder.ln and heads.head; torch's state-dict order. */
int tv_name_vit(TorchNames *t, const Net *net, Error *e)
{
    /* the layers with tensors after [tokens], in order, and what each must hold */
    static const char *const block_param[] = {"scales", "out_weights", "scales", "weights",
                                              "weights"};
    int tokens = -1, conv = -1;
    for (int i = 0; i < net->n_layers && tokens < 0; i++) {
        if (tv_param_index(&net->layers[i], "class_token") >= 0)
            tokens = i;
        else if (tv_is_conv(&net->layers[i]))
            conv = i;
    }
    const Layer *tl = &net->layers[tokens];
    if (conv < 0 || tv_param_index(tl, "positional") < 0)
        return tv_unexpected(net, tl, t->family,
                             "a class token needs a patch convolution before it and a position "
                             "embedding",
                             e);
    tv_add_named(t, tokens, tv_param_index(tl, "class_token"), "class_token");
    tv_add_layer(t, &net->layers[conv], "conv_proj", "conv_proj");
    tv_add_named(t, tokens, tv_param_index(tl, "positional"), "encoder.pos_embedding");
    int weighted[1024], n = 0;
    for (int i = tokens + 1; i < net->n_layers; i++)
        if (net->layers[i].n_params) {
            if (n == (int)(sizeof weighted / sizeof weighted[0]))
                return tv_unexpected(net, &net->layers[i], t->family, "a layer past 1024", e);
            weighted[n++] = i;
        }
    if (n < 2 || (n - 2) % 5)
        return tv_unexpected(net, tl, t->family,
                             "not followed by blocks of 5 layers with tensors, a layer norm and a "
                             "head",
                             e);
    for (int k = 0; k < n - 2; k++) {
        const Layer *l = &net->layers[weighted[k]];
        if (tv_param_index(l, block_param[k % 5]) < 0)
            return tv_unexpected(net, l, t->family, "out of an encoder block's order", e);
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
            tv_add_named(t, l->index, tv_param_index(l, tensors[k % 5][j][0]), name);
        }
    }
    const Layer *ln = &net->layers[weighted[n - 2]], *head = &net->layers[weighted[n - 1]];
    if (tv_param_index(ln, "scales") < 0 || !tv_is_connected(head))
        return tv_unexpected(net, head, t->family, "not encoder.ln then the [connected] head", e);
    tv_add_named(t, ln->index, tv_param_index(ln, "scales"), "encoder.ln.weight");
    tv_add_named(t, ln->index, tv_param_index(ln, "biases"), "encoder.ln.bias");
    tv_add_layer(t, head, "heads.head", "heads.head");
    return CDL_OK;
}

/* ConvNeXt: features.0.0/.1 the stem convolution and its layer norm; blocks features.S.I from a
 * depthwise convolution to their [shortcut]: layer_scale (torch's [C][1][1]), block.0 the
 * depthwise convolution, block.2 the layer norm, block.3 and block.5 the 1x1 convolutions (torch's
 * Linear [out][in]); a layer norm and a convolution outside the blocks downsample, features.S.0
 * and .1, S counting torch's Sequential (stages at odd S); after the last convolution the layer
 * norm is classifier.0 and the [connected] classifier.2. */
int tv_name_convnext(TorchNames *t, const Net *net, Error *e)
{
    const int last = tv_last_conv(net);
    int feature = 0, in_stage = -1, in_block = 0, k = 0, stem = 1;
    char prefix[TORCH_NAME_MAX - 16]; /* room for .layer_scale, .weight, .bias */
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (tv_is_shortcut(l)) {
            in_block = 0;
            continue;
        }
        if (!l->n_params)
            continue;
        if (tv_is_connected(l)) {
            tv_add_layer(t, l, "classifier.2", "classifier.2");
            continue;
        }
        if (i > last && !in_block) {
            tv_add_norm(t, l, "classifier.0");
            continue;
        }
        if (tv_is_grouped(l) && !in_block) { /* a block starts */
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
            for (int j = i + 1; j < net->n_layers && !tv_is_shortcut(&net->layers[j]); j++) {
                const Layer *s = &net->layers[j];
                if (s->n_params == 1 && !tv_is_conv(s))
                    tv_add_reshaped(t, s, "scales", scale, "layer_scale", 3,
                                    (int64_t[]){s->params[0].dims[0], 1, 1});
            }
        }
        if (in_block) {
            static const int at[] = {0, 2, 3, 5};
            if (l->n_params == 1 && !tv_is_conv(l))
                continue; /* the layer scale, named above */
            if (k == 4)
                return tv_unexpected(net, l, t->family, "a fifth layer with tensors in a block", e);
            snprintf(prefix, sizeof prefix, "features.%d.%d.block.%d", feature, in_stage, at[k]);
            if (k == 1)
                tv_add_norm(t, l, prefix);
            else if (k == 0)
                tv_add_layer(t, l, prefix, prefix);
            else {
                const int64_t *d = l->params[tv_param_index(l, "weights")].dims;
                tv_add_reshaped(t, l, "weights", prefix, "weight", 2, (int64_t[]){d[0], d[1]});
                tv_add(t, l->index, tv_param_index(l, "biases"), prefix, "bias");
            }
            k++;
            continue;
        }
        /* outside the blocks: the stem's convolution and norm, or a downsampling norm and conv */
        if (!tv_is_conv(l) && !stem && feature % 2)
            feature++;
        snprintf(prefix, sizeof prefix, "features.%d.%d", feature,
                 tv_is_conv(l) ? stem ? 0 : 1
                 : stem        ? 1
                               : 0);
        if (tv_is_conv(l))
            tv_add_layer(t, l, prefix, prefix);
        else {
            tv_add_norm(t, l, prefix);
            stem = 0;
        }
    }
    return CDL_OK;
}
