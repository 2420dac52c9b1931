/* What a layer is in torchvision's terms, and appending tensors' state-dict names
 * (torchvision_layout.h). */
#include "model/torchvision_layout.h"

#include <stdio.h>
#include <string.h>

int tv_is_conv(const Layer *l)
{
    return l->type->darknet_weights == DARKNET_CONVOLUTIONAL;
}

int tv_is_connected(const Layer *l)
{
    return l->type->darknet_weights == DARKNET_CONNECTED;
}

int tv_param_index(const Layer *l, const char *name)
{
    for (int k = 0; k < l->n_params; k++)
        if (!strcmp(l->params[k].name, name))
            return k;
    return -1;
}

int tv_is_batchnorm(const Layer *l)
{
    return l->type->darknet_weights == DARKNET_BATCHNORM;
}

int tv_has_norm(const Layer *l)
{
    return tv_param_index(l, "scales") >= 0;
}

int tv_is_grouped(const Layer *l)
{
    return tv_is_conv(l) && l->params[0].dims[1] != l->in_shape.c;
}

int tv_is_shortcut(const Layer *l)
{
    return l->n_inputs >= 2;
}

int tv_is_route_back(const Layer *l)
{
    return !l->n_params && l->n_inputs == 1 && l->inputs[0] != l->index - 1;
}

int tv_is_concat(const Layer *l)
{
    return l->n_inputs >= 2 && !l->n_params && l->out_shape.c > l->in_shape.c;
}

int tv_same_shape(Shape a, Shape b)
{
    return a.c == b.c && a.h == b.h && a.w == b.w;
}

int tv_last_conv(const Net *net)
{
    int last = -1;
    for (int i = 0; i < net->n_layers; i++)
        if (tv_is_conv(&net->layers[i]))
            last = i;
    return last;
}

void tv_add(TorchNames *t, int layer, int param, const char *prefix, const char *suffix)
{
    TorchTensor *x = &t->tensors[t->n_tensors++];
    snprintf(x->name, sizeof x->name, "%s.%s", prefix, suffix);
    x->layer = layer;
    x->param = param;
}

void tv_add_named(TorchNames *t, int layer, int param, const char *name)
{
    TorchTensor *x = &t->tensors[t->n_tensors++];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->layer = layer;
    x->param = param;
}

void tv_add_reshaped(TorchNames *t, const Layer *l, const char *param, const char *prefix,
                     const char *suffix, int n_dims, const int64_t *dims)
{
    tv_add(t, l->index, tv_param_index(l, param), prefix, suffix);
    TorchTensor *x = &t->tensors[t->n_tensors - 1];
    x->n_dims = n_dims;
    memcpy(x->dims, dims, (size_t)n_dims * sizeof *dims);
}

void tv_add_batch_norm(TorchNames *t, const Layer *l, const char *norm)
{
    tv_add(t, l->index, tv_param_index(l, "scales"), norm, "weight");
    tv_add(t, l->index, tv_param_index(l, "biases"), norm, "bias");
    tv_add(t, l->index, tv_param_index(l, "rolling_mean"), norm, "running_mean");
    tv_add(t, l->index, tv_param_index(l, "rolling_variance"), norm, "running_var");
    tv_add(t, l->index, -1, norm, "num_batches_tracked");
}

void tv_add_layer(TorchNames *t, const Layer *l, const char *module, const char *norm)
{
    tv_add(t, l->index, tv_param_index(l, "weights"), module, "weight");
    if (!tv_has_norm(l)) {
        if (tv_param_index(l, "biases") >= 0)
            tv_add(t, l->index, tv_param_index(l, "biases"), module, "bias");
        return;
    }
    tv_add_batch_norm(t, l, norm);
}

void tv_add_norm(TorchNames *t, const Layer *l, const char *prefix)
{
    tv_add(t, l->index, tv_param_index(l, "scales"), prefix, "weight");
    tv_add(t, l->index, tv_param_index(l, "biases"), prefix, "bias");
}

int tv_unexpected(const Net *net, const Layer *l, const char *family, const char *why, Error *e)
{
    return error_set(e, CDL_EUSAGE,
                     "%s: layer %d [%s]: %s in torchvision's %s layout, so its tensors have no "
                     "torchvision names",
                     net->cfg.path, l->index, l->type->name, why, family);
}

int tv_add_classifier(TorchNames *t, const Net *net, int from, Error *e)
{
    int n = 0;
    for (int i = from; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        char module[TORCH_NAME_MAX];
        if (tv_is_connected(l)) {
            snprintf(module, sizeof module, "classifier.%d", n);
            tv_add_layer(t, l, module, module);
            n += 1 + (l->activation != CDL_ACT_LINEAR);
        } else if (l->n_params)
            return tv_unexpected(net, l, t->family,
                                 "a layer with tensors after the last "
                                 "convolution that is not [connected]",
                                 e);
        else if (tv_same_shape(l->in_shape, l->out_shape))
            n++; /* dropout */
    }
    return CDL_OK;
}
