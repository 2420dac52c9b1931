/* A net with int8 weights (`cdl quantize`): which layers can be quantized, the net-owned slab
 * of their int8 tensors, and turning float weights into them.
 *
 * A quantized net runs inference only: model_load refuses to train one, and a quantized
 * checkpoint stores each quantized layer's int8 values and scales instead of its float
 * weights (model/model_io.h). */
#ifndef CDL_CORE_NET_QUANT_H
#define CDL_CORE_NET_QUANT_H

#include "backend/cpu/layer_quant.h"
#include "core/net.h"

/* The index in l->params of the weights l can run in int8, or -1 (LayerType.quant_weights). */
int net_layer_quantizable(const Layer *l);
/* 1 when some layer has int8 weights. */
int net_is_quantized(const Net *net);

/* Gives each layer i with quantize[i] set (it must be quantizable) a LayerQuant, all in one
 * allocation (net->quant_slab), inputs dynamic; values and scales are left zero for the caller
 * to fill (net_quant_from_float, or a checkpoint's), then net_quant_prepare. */
int net_quant_alloc(Net *net, const unsigned char *quantize, Error *e);
/* Quantizes every quantized layer's float weights into its values and scales. */
void net_quant_from_float(Net *net);
/* After values and scales are set: packs them for qgemm and writes the dequantized weights
 * into the float Params. */
void net_quant_prepare(Net *net);

#endif
