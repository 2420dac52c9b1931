/* int8 weights of a net (backend/cpu/net_quant.h). */
#include "backend/cpu/net_quant.h"

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/qgemm_cols.h"

int net_layer_quantizable(const Layer *l)
{
    return l->type->quant_weights ? l->type->quant_weights(l) : -1;
}

int net_is_quantized(const Net *net)
{
    return net->quant_slab != NULL;
}

/* Rounds n up to a multiple of 64 (the alignment of every piece of the slab). */
static size_t aligned64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* Bytes of layer l's LayerQuant and tensors. */
static size_t layer_bytes(int channels, int k)
{
    return aligned64(sizeof(LayerQuant)) + aligned64((size_t)channels * k) +
           aligned64((size_t)channels * sizeof(float)) +
           aligned64(qgemm_packed_bytes(channels, k)) +
           aligned64((size_t)channels * sizeof(int32_t)) +
           aligned64(qgemm_cols_weight_bytes(channels, k));
}

int net_quant_alloc(Net *net, const unsigned char *quantize, Error *e)
{
    size_t bytes = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        const int p = quantize[i] ? net_layer_quantizable(l) : -1;
        if (quantize[i] && p < 0)
            return error_set(e, CDL_ERUNTIME, "layer %d [%s] cannot hold int8 weights", i,
                             l->type->name);
        if (p >= 0) {
            const Param *w = &l->params[p];
            if (w->count / (size_t)w->dims[0] > QGEMM_MAX_K)
                return error_set(e, CDL_ERUNTIME,
                                 "layer %d [%s]: %zu weights per output channel, int8 sums "
                                 "hold at most %d",
                                 i, l->type->name, w->count / (size_t)w->dims[0], QGEMM_MAX_K);
            bytes += layer_bytes((int)w->dims[0], (int)(w->count / (size_t)w->dims[0]));
        }
    }
    unsigned char *at = aligned_alloc(64, bytes ? bytes : 64);
    if (!at)
        return error_set(e, CDL_ERUNTIME, "out of memory for int8 weights (%zu bytes)", bytes);
    memset(at, 0, bytes);
    free(net->quant_slab);
    net->quant_slab = at;
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        l->quant = NULL;
        if (!quantize[i])
            continue;
        const int p = net_layer_quantizable(l);
        const int channels = (int)l->params[p].dims[0];
        const int k = (int)(l->params[p].count / (size_t)channels);
        LayerQuant *q = (LayerQuant *)at;
        at += aligned64(sizeof *q);
        *q = (LayerQuant){.param = p, .channels = channels, .k = k};
        q->values = (int8_t *)at;
        at += aligned64((size_t)channels * k);
        q->scales = (float *)at;
        at += aligned64((size_t)channels * sizeof(float));
        q->packed = (int8_t *)at;
        at += aligned64(qgemm_packed_bytes(channels, k));
        q->row_sums = (int32_t *)at;
        at += aligned64((size_t)channels * sizeof(int32_t));
        q->padded = (int8_t *)at;
        at += aligned64(qgemm_cols_weight_bytes(channels, k));
        q->matrix = (QMatrix){channels, k, q->packed, q->row_sums, q->padded, q->scales};
        l->quant = q;
    }
    return CDL_OK;
}

void net_quant_from_float(Net *net)
{
    for (int i = 0; i < net->n_layers; i++) {
        LayerQuant *q = net->layers[i].quant;
        if (q)
            quantize_weights_s8(net->layers[i].params[q->param].data, q->channels, q->k, q->values,
                                q->scales);
    }
}

void net_quant_prepare(Net *net)
{
    for (int i = 0; i < net->n_layers; i++) {
        LayerQuant *q = net->layers[i].quant;
        if (!q)
            continue;
        qgemm_pack(q->values, q->channels, q->k, q->packed, q->row_sums);
        qgemm_cols_pack(q->values, q->channels, q->k, q->padded);
        float *w = net->layers[i].params[q->param].data;
        for (int j = 0; j < q->channels; j++)
            for (int g = 0; g < q->k; g++)
                w[(size_t)j * q->k + g] = q->scales[j] * (float)q->values[(size_t)j * q->k + g];
    }
}
