/* Timing in the public API (cdl.h): whole training steps (bench) and each layer's share of
 * them or of inference forwards (profile) on random data, and the data loader alone. */
#include <stdlib.h>
#include <string.h>

#include "cdl.h"
#include "cdl_model.h"
#include "data/data_config.h"
#include "data/loader.h"
#include "train/step_trace.h"
#include "train/timing_run.h"
#include "util/timer.h"

static int setup(cdl_model *m, const cdl_timing_options *o, TimingRun *t, Error *e)
{
    memset(t, 0, sizeof *t);
    if (!m->net.want_grads)
        return error_set(e, CDL_EUSAGE, "timing training steps needs a model opened for training");
    m->capacity = 0; /* timing_run_setup resizes the activations */
    return timing_run_setup(t, &m->net, &m->opt, o->batch, o->cuda_graph, e);
}

/* The first failure of t's steps (TimingRun.status) into e, else CDL_OK. */
static int step_failure(const TimingRun *t, Error *e)
{
    if (t->status)
        *e = t->error;
    return t->status;
}

static int bench(cdl_model *m, const cdl_timing_options *o, cdl_bench_result *r, Error *e)
{
    TimingRun t;
    int st = setup(m, o, &t, e);
    if (!st) {
        for (int i = 0; i < o->warmup; i++)
            timing_run_step(&t);
        st = net_sync(&m->net, e); /* a device's queue empty: the clock starts with the steps */
        const double start = time_now_s();
        for (int i = 0; i < o->steps; i++)
            timing_run_step(&t);
        st = st ? st : net_sync(&m->net, e); /* and stops when they are done */
        const double elapsed_s = time_now_s() - start;
        st = st ? st : step_failure(&t, e);
        const Net *net = &m->net;
        *r = (cdl_bench_result){.batch = net->hyper.batch,
                                .seq = net->seq > 0 ? net->seq : 0,
                                .images_per_s = (double)net->hyper.batch * o->steps / elapsed_s,
                                .ms_per_step = 1e3 * elapsed_s / o->steps,
                                .loss = net->loss,
                                .activation_bytes = net->activation_bytes};
    }
    timing_run_free(&t);
    return st;
}

int cdl_model_bench(cdl_model *model, const cdl_timing_options *options, cdl_bench_result *result,
                    char *err, size_t err_size)
{
    Error e = {0};
    memset(result, 0, sizeof *result);
    return bench(model, options, result, &e) ? api_report(&e, err, err_size) : CDL_OK;
}

static cdl_time_stat time_stat_ms(const TimeStat *t)
{
    return (cdl_time_stat){1e3 * time_stat_mean_s(t), 1e3 * time_stat_std_s(t), 1e3 * t->min_s,
                           1e3 * t->max_s};
}

/* Forward + backward FLOPs of one sample (the forward's alone in an inference net).
 * Convolution and connected layers do a GEMM of the forward's size for the weight gradient
 * and another for the input gradient (skipped for the net input); every other layer's
 * backward costs about what its forward does. */
static double sample_step_flops(Net *net, const Layer *l)
{
    if (!net->want_grads)
        return l->flops;
    const int gemm = l->type->gemm_bound;
    if (!gemm)
        return 2 * l->flops;
    return (net_layer_input_delta(net, l, 0) ? 3 : 2) * l->flops;
}

/* Samples per timed step: a training step's, or an inference forward's. */
static int profile_batch(const Net *net)
{
    return net->want_grads ? net->hyper.batch : net->batch;
}

static cdl_layer_profile layer_cost(Net *net, const Profiler *prof, int i)
{
    const Layer *l = &net->layers[i];
    cdl_layer_profile c = {.type = l->type->name,
                           .out_c = l->out_shape.c,
                           .out_h = l->out_shape.h,
                           .out_w = l->out_shape.w,
                           .forward = time_stat_ms(&prof->forward[i]),
                           .backward = time_stat_ms(&prof->backward[i]),
                           .engine = l->engine};
    const double passes = net->want_grads ? net->hyper.subdivisions * net->split : 1;
    c.flops = sample_step_flops(net, l) * profile_batch(net);
    c.step_ms = (c.forward.mean_ms + c.backward.mean_ms) * passes;
    c.share = c.step_ms / (1e3 * time_stat_mean_s(&prof->step));
    c.gflops_per_s = c.step_ms > 0 ? c.flops / (c.step_ms * 1e6) : 0;
    for (int k = 0; k < l->n_params; k++)
        c.params += l->params[k].trainable ? l->params[k].count : 0;
    /* The buffers net_resize gives the layer: output, delta, and pre-activations unless the
     * activation runs in place (each counted whole, though the memory plan may share it). */
    const size_t planes = 1 + (size_t)(l->delta != NULL) + (size_t)(l->pre && l->pre != l->out);
    c.activation_bytes = planes * (size_t)net->batch * shape_size(l->out_shape) * sizeof(float);
    return c;
}

/* The timed steps' figures, layer by layer. */
static int fill_profile(Net *net, const Profiler *prof, cdl_profile_result *r, Error *e)
{
    if (!(r->layers = calloc((size_t)net->n_layers, sizeof *r->layers)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    r->n_layers = net->n_layers;
    r->batch = profile_batch(net);
    r->passes_per_step = net->want_grads ? net->hyper.subdivisions * net->split : 1;
    r->pass_batch = net->batch;
    r->step = time_stat_ms(&prof->step);
    for (int i = 0; i < net->n_layers; i++) {
        r->layers[i] = layer_cost(net, prof, i);
        r->layers_ms += r->layers[i].step_ms;
    }
    r->images_per_s = r->batch / (r->step.mean_ms / 1e3);
    r->layers_share = r->layers_ms / r->step.mean_ms;
    r->loss = net->loss;
    return CDL_OK;
}

/* Times o->steps calls of run_step(t) after 1 + o->warmup untimed ones into prof (set as the
 * net's, which feeds it each layer's passes), tracing them when o->trace_path is set. */
static int profile_steps(cdl_model *m, const cdl_timing_options *o, void (*run_step)(void *),
                         void *t, Profiler *prof, cdl_profile_result *r, Error *e)
{
    Net *net = &m->net;
    int st = profiler_init_for_net(prof, net, o->trace_path ? (size_t)o->steps : 0, e);
    if (st)
        return st;
    net->profiler = prof;
    for (int i = 0; i < 1 + o->warmup; i++)
        run_step(t);
    profiler_reset(prof);
    prof->tracing = o->trace_path != NULL;
    for (int i = 0; i < o->steps; i++) {
        const double start_s = profiler_now_s(prof);
        const uint64_t step = net->step;
        run_step(t);
        profiler_step(prof, net->want_grads ? step : (uint64_t)i, start_s, profiler_now_s(prof));
    }
    net->profiler = NULL;
    st = net_sync(net, e);
    if (!st && o->trace_path && !(st = trace_write(o->trace_path, prof->events, prof->n_events, e)))
        r->trace_events = prof->n_events;
    return st ? st : fill_profile(net, prof, r, e);
}

static void training_step(void *t)
{
    timing_run_step(t);
}

static void inference_forward(void *net)
{
    net_forward(net);
}

/* A model opened for training times its training steps; one opened for inference its
 * inference forwards (no gradients: oneDNN's folded batch norm, fused sums, blocked layouts). */
static int profile(cdl_model *m, const cdl_timing_options *o, cdl_profile_result *r, Error *e)
{
    Profiler prof = {0};
    int st;
    if (!m->net.want_grads) {
        st = api_inference_setup(m, o->batch, e);
        st = st ? st : profile_steps(m, o, inference_forward, &m->net, &prof, r, e);
    } else {
        TimingRun t;
        st = setup(m, o, &t, e);
        st = st ? st : profile_steps(m, o, training_step, &t, &prof, r, e);
        st = st ? st : step_failure(&t, e);
        timing_run_free(&t);
    }
    profiler_free(&prof);
    return st;
}

int cdl_model_profile(cdl_model *model, const cdl_timing_options *options,
                      cdl_profile_result *result, char *err, size_t err_size)
{
    Error e = {0};
    memset(result, 0, sizeof *result);
    if (profile(model, options, result, &e)) {
        cdl_profile_result_free(result);
        return api_report(&e, err, err_size);
    }
    return CDL_OK;
}

void cdl_profile_result_free(cdl_profile_result *result)
{
    free(result->layers);
    memset(result, 0, sizeof *result);
}

/* Takes every mini-batch of o->epochs epochs; the first one (thread start-up, first reads)
 * is not timed. x: [batch][c][h][w], y: [batch]. */
static int time_loader(Loader *l, const cdl_loader_bench_options *o, float *x, int *y,
                       cdl_loader_bench_result *r, Error *e)
{
    double start = 0;
    for (int epoch = 0; epoch < o->epochs; epoch++) {
        int st = loader_start_epoch(l, epoch, 0, e);
        for (int k = 0; !st && k < loader_batches_per_epoch(l); k++) {
            int n;
            st = loader_next(l, x, y, NULL, &n, e);
            if (epoch == 0 && k == 0)
                start = time_now_s();
            else
                r->images += n;
        }
        if (st)
            return st;
    }
    r->elapsed_s = time_now_s() - start;
    return CDL_OK;
}

static int bench_loader(cdl_model *m, const char *data, const cdl_loader_bench_options *o,
                        cdl_loader_bench_result *r, Error *e)
{
    const Net *net = &m->net;
    DataConfig dc = {0};
    SampleSource train = {0}, valid = {0};
    Loader *loader = NULL;
    float *x = NULL;
    int *y = NULL;
    r->batch = o->batch > 0 ? o->batch : net->hyper.batch / net->hyper.subdivisions;
    int st = data_config_load(data, &dc, e);
    dc.split_seed = o->seed; /* the training images of that seed's split */
    st = st ? st : data_config_open_sources(&dc, &train, &valid, e);
    if (!st) {
        const LoaderOptions opt = {.batch = r->batch,
                                   .workers = o->workers,
                                   .prefetch = LOADER_PREFETCH_PER_WORKER * o->workers,
                                   .seed = o->seed,
                                   .train = 1,
                                   .drop_last = 1};
        AugmentConfig aug;
        st = net_augment(net, &aug, e);
        st = st ? st : loader_open(&loader, &train, &aug, &opt, e);
    }
    if (!st && (!(x = malloc((size_t)r->batch * shape_size(net->in_shape) * sizeof *x)) ||
                !(y = malloc((size_t)r->batch * sizeof *y))))
        st = error_set(e, CDL_ERUNTIME, "out of memory");
    st = st ? st : time_loader(loader, o, x, y, r, e);
    loader_close(loader);
    free(x);
    free(y);
    source_free(&train);
    source_free(&valid);
    data_config_free(&dc);
    return st;
}

int cdl_model_bench_loader(cdl_model *model, const char *data_path,
                           const cdl_loader_bench_options *options, cdl_loader_bench_result *result,
                           char *err, size_t err_size)
{
    Error e = {0};
    memset(result, 0, sizeof *result);
    return bench_loader(model, data_path, options, result, &e) ? api_report(&e, err, err_size)
                                                               : CDL_OK;
}
