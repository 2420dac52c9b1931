/* The pieces torchvision_names*.c name a zoo net's tensors with: what a layer is in torchvision's
 * terms, appending a tensor's state-dict name, and each family's naming (its own file). */
#ifndef CDL_TORCHVISION_LAYOUT_H
#define CDL_TORCHVISION_LAYOUT_H

#include "model/torchvision_names.h"

/* What layer l is: a convolution, a [connected], a [batchnorm]; one with batch norm (scales); a
 * convolution whose filters see fewer channels than its input has; a layer of two inputs or more
 * ([shortcut]'s sum, [route]'s concatenation); a [route] back past the previous layer; a [route]
 * concatenating channels (not a sum or product, which keep the channel count). */
int tv_is_conv(const Layer *l);
int tv_is_connected(const Layer *l);
int tv_is_batchnorm(const Layer *l);
int tv_has_norm(const Layer *l);
int tv_is_grouped(const Layer *l);
int tv_is_shortcut(const Layer *l);
int tv_is_route_back(const Layer *l);
int tv_is_concat(const Layer *l);
/* The index of l's param named name, -1: none. */
int tv_param_index(const Layer *l, const char *name);
int tv_same_shape(Shape a, Shape b);
/* The index of net's last convolution, -1: none. */
int tv_last_conv(const Net *net);

/* Appends one tensor, prefix.suffix (t has room for every tensor the net can have). */
void tv_add(TorchNames *t, int layer, int param, const char *prefix, const char *suffix);
/* Appends one tensor under a name of its own (no module prefix). */
void tv_add_named(TorchNames *t, int layer, int param, const char *name);
/* Appends layer l's param named param under prefix.suffix in torch's shape dims[0..n_dims). */
void tv_add_reshaped(TorchNames *t, const Layer *l, const char *param, const char *prefix,
                     const char *suffix, int n_dims, const int64_t *dims);
/* Layer l's batch norm (a convolution's, or a [batchnorm]) as BatchNorm2d norm. */
void tv_add_batch_norm(TorchNames *t, const Layer *l, const char *norm);
/* Layer l's tensors: module is the convolution's or linear's name, norm its batch norm's. */
void tv_add_layer(TorchNames *t, const Layer *l, const char *module, const char *norm);
/* A [layernorm]'s scales and biases as prefix.weight and prefix.bias. */
void tv_add_norm(TorchNames *t, const Layer *l, const char *prefix);
/* classifier.N from layer `from` (the first after the last convolution) on. */
int tv_add_classifier(TorchNames *t, const Net *net, int from, Error *e);
/* Refuses net (CDL_EUSAGE): layer l is not in family's layout, because why. */
int tv_unexpected(const Net *net, const Layer *l, const char *family, const char *why, Error *e);

/* Each family's naming (torchvision_names.h says the layouts); 0 or a refusal naming the layer.
 * torchvision_names_mobile.c: */
int tv_name_mobilenet(TorchNames *t, const Net *net, Error *e);
int tv_name_se_blocks(TorchNames *t, const Net *net, int staged, Error *e);
int tv_name_shufflenet(TorchNames *t, const Net *net, Error *e);
int tv_name_regnet(TorchNames *t, const Net *net, Error *e);
/* torchvision_names_transformer.c: */
int tv_name_vit(TorchNames *t, const Net *net, Error *e);
int tv_name_convnext(TorchNames *t, const Net *net, Error *e);

#endif
