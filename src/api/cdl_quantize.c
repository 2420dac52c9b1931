/* int8 inference in the public API (cdl.h): quantizing a model's weights (with an optional
 * calibration of its convolutions' input grids on a dataset), saving a model, and timing
 * inference forwards. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/net_quant.h"
#include "cdl.h"
#include "cdl_model.h"
#include "data/data_config.h"
#include "data/loader.h"
#include "util/rng.h"
#include "util/timer.h"

enum { DEFAULT_CALIBRATION_BATCHES = 10 };

/* Runs the model's forward on the first o->batches training mini-batches of o->calibrate_data
 * with every quantized convolution observing its input's range, then fixes each one's grid on
 * the range seen. */
static int calibrate(cdl_model *m, const cdl_quantize_options *o, cdl_quantize_result *r, Error *e)
{
    Net *net = &m->net;
    const int batch = net->hyper.batch / net->hyper.subdivisions;
    const int batches = o->batches > 0 ? o->batches : DEFAULT_CALIBRATION_BATCHES;
    DataConfig dc = {0};
    SampleSource train = {0}, valid = {0};
    Loader *loader = NULL;
    int *labels = malloc((size_t)batch * sizeof *labels);
    int st = labels ? CDL_OK : error_set(e, CDL_ERUNTIME, "out of memory");
    st = st ? st : data_config_load(o->calibrate_data, &dc, e);
    if (!st && net->seq > 0)
        st = error_set(e, CDL_EUSAGE, "--calibrate: text models quantize dynamically only");
    st = st ? st : data_config_open_sources(&dc, &train, &valid, e);
    if (!st) {
        const LoaderOptions lo = {.batch = batch,
                                  .workers = o->workers,
                                  .prefetch = LOADER_PREFETCH_PER_WORKER * (o->workers + 1),
                                  .train = 0};
        AugmentConfig aug;
        st = net_augment(net, &aug, e);
        st = st ? st : loader_open(&loader, &train, &aug, &lo, e);
    }
    st = st ? st : api_model_reserve(m, batch, e);
    st = st ? st : loader_start_epoch(loader, 0, 0, e);
    for (int i = 0; i < net->n_layers; i++)
        if (net->layers[i].quant && net->layers[i].type->quant_calibrated)
            net->layers[i].quant->observe = 1;
    for (int k = 0; !st && k < batches && k < loader_batches_per_epoch(loader); k++) {
        int n;
        st = loader_next(loader, net->input, labels, NULL, &n, e);
        if (st || n == 0)
            break;
        net->batch = n;
        net_forward(net);
        r->calibration_images += n;
    }
    for (int i = 0; i < net->n_layers; i++) {
        LayerQuant *q = net->layers[i].quant;
        if (!q || !q->observe)
            continue;
        q->observe = 0;
        if (!st && q->seen) {
            q->static_input = 1;
            q->input = quant_params_u8(q->seen_min, q->seen_max);
            r->calibrated++;
        }
    }
    loader_close(loader);
    source_free(&train);
    source_free(&valid);
    data_config_free(&dc);
    free(labels);
    return st;
}

static int quantize(cdl_model *m, const cdl_quantize_options *o, cdl_quantize_result *r, Error *e)
{
    Net *net = &m->net;
    if (net_is_quantized(net))
        return error_set(e, CDL_EUSAGE, "the model is already int8 (quantized)");
    if (net->want_grads)
        return error_set(e, CDL_EUSAGE, "quantizing needs a model opened for inference");
    unsigned char *which = calloc((size_t)net->n_layers, 1);
    if (!which)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        const int p = net_layer_quantizable(l);
        which[i] = p >= 0;
        r->layers += p >= 0;
        r->int8_weights += p >= 0 ? l->params[p].count : 0;
    }
    int st = r->layers ? CDL_OK
                       : error_set(e, CDL_EUSAGE,
                                   "the model has no convolution, connected or linear layer to "
                                   "quantize");
    st = st ? st : net_quant_alloc(net, which, e);
    free(which);
    if (st)
        return st;
    net_quant_from_float(net);
    net_quant_prepare(net);
    /* The layers' resize takes the int8 work: size the activations again, and once more after a
     * calibration, whose grids let convolutions run on oneDNN's int8 kernels (made with them). */
    const int capacity = m->capacity;
    m->capacity = 0;
    st = api_model_reserve(m, capacity, e);
    st = st ? st : o && o->calibrate_data ? calibrate(m, o, r, e) : CDL_OK;
    if (st || !r->calibrated)
        return st;
    m->capacity = 0;
    return api_model_reserve(m, capacity, e);
}

int cdl_model_quantize(cdl_model *model, const cdl_quantize_options *options,
                       cdl_quantize_result *result, char *err, size_t err_size)
{
    Error e = {0};
    memset(result, 0, sizeof *result);
    return quantize(model, options, result, &e) ? api_report(&e, err, err_size) : CDL_OK;
}

int cdl_model_is_quantized(const cdl_model *model)
{
    return net_is_quantized(&model->net);
}

int cdl_model_save(const cdl_model *model, const char *path, char *err, size_t err_size)
{
    Error e = {0};
    return model_save(path, &model->net, NULL, &model->meta, &e) ? api_report(&e, err, err_size)
                                                                 : CDL_OK;
}

/* Random inputs in [0, 1) (token ids below the vocabulary for a sequence net), a fixed seed,
 * committed to the net's backend. */
static void random_inputs(Net *net, int batch)
{
    Rng rng;
    rng_seed(&rng, 1, 0);
    const size_t n = (size_t)batch * shape_size(net->in_shape);
    float *input = net_host_input(net);
    for (size_t i = 0; i < n; i++)
        input[i] =
            net->seq > 0 ? (float)(int)(rng_uniform(&rng) * (float)net->vocab) : rng_uniform(&rng);
    net_commit_batch(net);
}

int api_inference_setup(cdl_model *m, int batch, Error *e)
{
    Net *net = &m->net;
    if (net->want_grads)
        return error_set(e, CDL_EUSAGE, "timing inference needs a model opened for inference");
    batch = batch > 0 ? batch : net->hyper.batch / net->hyper.subdivisions;
    int st = api_model_reserve(m, batch, e);
    if (st)
        return st;
    net->batch = batch;
    net->train = 0;
    random_inputs(net, batch);
    return CDL_OK;
}

static int bench_inference(cdl_model *m, const cdl_timing_options *o, cdl_bench_result *r, Error *e)
{
    Net *net = &m->net;
    int st = api_inference_setup(m, o->batch, e);
    if (st)
        return st;
    for (int i = 0; i < o->warmup; i++)
        net_forward(net);
    st = net_sync(net, e); /* a device's queue empty: the clock starts with the forwards */
    const double start = time_now_s();
    for (int i = 0; i < o->steps; i++)
        net_forward(net);
    st = st ? st : net_sync(net, e); /* and stops when they are done */
    const double elapsed_s = time_now_s() - start;
    if (st)
        return st;
    *r = (cdl_bench_result){.batch = net->batch,
                            .seq = net->seq > 0 ? net->seq : 0,
                            .images_per_s = (double)net->batch * o->steps / elapsed_s,
                            .ms_per_step = 1e3 * elapsed_s / o->steps,
                            .activation_bytes = net->activation_bytes};
    return CDL_OK;
}

int cdl_model_bench_inference(cdl_model *model, const cdl_timing_options *options,
                              cdl_bench_result *result, char *err, size_t err_size)
{
    Error e = {0};
    memset(result, 0, sizeof *result);
    return bench_inference(model, options, result, &e) ? api_report(&e, err, err_size) : CDL_OK;
}
