/* Every layer family's meaning (LayerType), one per cfg section name: layers/registry.c looks
 * them up by name, each backend's kernel table (backend/cpu/cpu_backend.c) by family. */
#ifndef CDL_FAMILIES_H
#define CDL_FAMILIES_H

#include "core/layer.h"

extern const LayerType convolutional_layer, connected_layer, batchnorm_layer, maxpool_layer,
    avgpool_layer, dropout_layer, drop_path_layer, shortcut_layer, route_layer, softmax_layer,
    crop_layer, cost_layer, reorg_layer, upsample_layer, embedding_layer, positional_layer,
    layernorm_layer, linear_layer, attention_layer, rnn_layer, lstm_layer, gru_layer,
    scale_channels_layer, shuffle_layer, pad_layer, yolo_layer, layer_scale_layer, tokens_layer,
    select_token_layer, region_layer;

#endif
