/* The table of layer families, keyed by cfg section name. */
#include "layers/families.h"

#include <string.h>

static const LayerType *const layer_types[] = {
    &convolutional_layer, &connected_layer,      &batchnorm_layer,   &maxpool_layer,
    &avgpool_layer,       &dropout_layer,        &shortcut_layer,    &route_layer,
    &softmax_layer,       &crop_layer,           &cost_layer,        &reorg_layer,
    &upsample_layer,      &embedding_layer,      &positional_layer,  &layernorm_layer,
    &linear_layer,        &attention_layer,      &rnn_layer,         &lstm_layer,
    &gru_layer,           &scale_channels_layer, &shuffle_layer,     &pad_layer,
    &yolo_layer,          &drop_path_layer,      &layer_scale_layer, &tokens_layer,
    &select_token_layer,  &region_layer,
};

#define N_LAYER_TYPES (sizeof layer_types / sizeof layer_types[0])

/* darknet spellings that name the same family. */
static const struct {
    const char *alias, *name;
} aliases[] = {{"conv", "convolutional"}, {"connected", "connected"}, {"fc", "connected"},
               {"conn", "connected"},     {"max", "maxpool"},         {"avg", "avgpool"},
               {"soft", "softmax"}};

const LayerType *layer_type_find(const char *name)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(name, aliases[i].alias))
            name = aliases[i].name;
    for (size_t i = 0; i < N_LAYER_TYPES; i++)
        if (!strcmp(layer_types[i]->name, name))
            return layer_types[i];
    return NULL;
}

const char *layer_type_names(void)
{
    return "convolutional, connected, batchnorm, maxpool, avgpool, dropout, shortcut, route, "
           "softmax, crop, cost, reorg, upsample, embedding, positional, layernorm, linear, "
           "attention, rnn, lstm, gru, scale_channels, shuffle, pad, yolo, drop_path, layer_scale, "
           "tokens, select_token";
}
