/* The public API's model inspection (cdl.h): the net's summary, each layer's type, output
 * shape, parameters, FLOPs, inputs and cfg settings, and the activation memory of training. */
#include "cdl.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/layer_quant.h"
#include "cdl_model.h"
#include "core/net_split.h"

_Static_assert(CDL_LAYER_MAX_INPUTS == LAYER_MAX_INPUTS, "cdl.h's input count follows core's");

void cdl_model_get_summary(const cdl_model *model, cdl_model_summary *summary)
{
    const Net *net = &model->net;
    double flops = 0;
    for (int i = 0; i < net->n_layers; i++)
        flops += net->layers[i].flops;
    *summary = (cdl_model_summary){
        .c = net->in_shape.c,
        .h = net->in_shape.h,
        .w = net->in_shape.w,
        .batch = net->hyper.batch,
        .subdivisions = net->hyper.subdivisions,
        .seq = net->seq > 0 ? net->seq : 0,
        .source = net->source,
        .vocab = net->seq > 0 ? net->vocab : 0,
        .n_layers = net->n_layers,
        .params = net->n_params,
        .state = net->n_state,
        .flops = flops,
        .step = model->meta.step,
        .train_pass = net_training_pass(net, omp_get_max_threads()),
        .channels_last = net->channels_last,
    };
}

void cdl_model_layer_info(const cdl_model *model, int index, cdl_layer_info *info)
{
    const Layer *l = &model->net.layers[index];
    size_t params = 0;
    for (int k = 0; k < l->n_params; k++)
        params += l->params[k].trainable ? l->params[k].count : 0;
    *info = (cdl_layer_info){
        .type = l->type->name,
        .activation = activation_name(l->activation),
        .c = l->out_shape.c,
        .h = l->out_shape.h,
        .w = l->out_shape.w,
        .params = params,
        .flops = l->flops,
        .n_inputs = l->n_inputs,
        .n_settings = model->net.cfg.sections[index + 1].n_entries,
        .int8 = l->quant ? 1 + l->quant->static_input : 0,
        .engine = l->engine,
        .channels_last = l->channels_last,
    };
    for (int k = 0; k < l->n_inputs; k++)
        info->inputs[k] = l->inputs[k];
}

void cdl_model_layer_setting(const cdl_model *model, int index, int k, const char **key,
                             const char **value)
{
    const CfgEntry *entry = &model->net.cfg.sections[index + 1].entries[k];
    *key = entry->key;
    *value = entry->value;
}

/* Builds a copy of net where it runs (its cfg with its vocabulary and precision), for training
 * when want_grads, and measures its slab. */
static int activation_bytes(const Net *net, int want_grads, size_t *bytes, Error *e)
{
    Net copy;
    int st =
        api_net_copy_on(net, (NetPlacement){net->backend->kind, net->device}, want_grads, &copy, e);
    if (st)
        return st;
    const int pass = want_grads ? net_training_pass(&copy, omp_get_max_threads())
                                : copy.hyper.batch / copy.hyper.subdivisions;
    st = net_activation_bytes(&copy, pass, bytes, e);
    net_free(&copy);
    return st;
}

int cdl_model_training_activation_bytes(const cdl_model *model, size_t *bytes, char *err,
                                        size_t err_size)
{
    Error e = {0};
    *bytes = 0;
    return activation_bytes(&model->net, 1, bytes, &e) ? api_report(&e, err, err_size) : CDL_OK;
}

int cdl_model_inference_activation_bytes(const cdl_model *model, size_t *bytes, char *err,
                                         size_t err_size)
{
    Error e = {0};
    *bytes = 0;
    return activation_bytes(&model->net, 0, bytes, &e) ? api_report(&e, err, err_size) : CDL_OK;
}
