/* A GPU training step waits for the device once: its loss layers keep their losses on the device
 * and the host reads them with the step's one wait at its end (BackendOps.keep_loss, and
 * capture_begin under --cuda-graph), for a yolov3-tiny-style net of two [yolo] heads in steps of
 * two passes, where each head once waited per pass. The losses are those the passes' forwards give
 * when each loss layer downloads its own (the eager step's before), and the graphs' are the eager
 * step's, bit for bit. In precision=fp16 the eager step's unscaling keeps its finite flag on the
 * device too, read with the losses, where it once waited for it: the losses, weights, loss scale
 * and skipped steps are those of the steps that waited, bit for bit. An evaluation's or a
 * prediction's pass waits once too, for its loss and output together, the library's
 * cdl_model_predict's among them. The waits and copies are
 * counted by the CUDA simulator's runtime (cuda/sim/counters.h): skipped in other builds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#ifdef CDL_GPU_SIM
#include <math.h>
#include <unistd.h>

#include "api/cdl.h"
#include "core/net.h"
#include "data/boxes.h"
#include "sim/counters.h"
#include "train/loss_scale.h"
#include "train/optimizer.h"
#include "train/train_settings.h"
#include "train/trainer.h"

/* yolov3-tiny's shape at 32x32: a head on the 8x8 map, a second after a [route], an [upsample]
 * and a [route] of two layers on the 16x16 one; two passes a step. */
#define NET_HEAD                                                                                   \
    "[net]\nbatch=4\nsubdivisions=2\nwidth=32\nheight=32\nchannels=3\nlearning_rate=0.001\n"       \
    "optimizer=adam\n"
#define NET_LAYERS                                                                                 \
    "[convolutional]\nfilters=8\nsize=3\npad=1\nactivation=leaky\n"                                \
    "[maxpool]\nsize=2\nstride=2\n"                                                                \
    "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=leaky\n"                               \
    "[maxpool]\nsize=2\nstride=2\n"                                                                \
    "[convolutional]\nfilters=12\nsize=1\nactivation=linear\n"                                     \
    "[yolo]\nmask=2,3\nanchors=6,6, 10,10, 14,14, 20,20\nclasses=1\nnum=4\nmax=4\n"                \
    "ignore_thresh=0.3\n"                                                                          \
    "[route]\nlayers=-3\n"                                                                         \
    "[convolutional]\nfilters=8\nsize=1\nactivation=leaky\n"                                       \
    "[upsample]\nstride=2\n"                                                                       \
    "[route]\nlayers=-1,2\n"                                                                       \
    "[convolutional]\nfilters=12\nsize=1\nactivation=linear\n"                                     \
    "[yolo]\nmask=0,1\nanchors=6,6, 10,10, 14,14, 20,20\nclasses=1\nnum=4\nmax=4\n"                \
    "ignore_thresh=0.3\n"
#define NET_TEXT NET_HEAD NET_LAYERS
#define NET_TEXT_FP16 NET_HEAD "precision=fp16\n" NET_LAYERS
#define SEED 5
#define STEPS 4
#define PASSES 2

/* What the run saw at each step: the host's waits for the net's stream and the copies back since
 * the step before, the step's loss and the steps fp16's loss scaling skipped so far; and how it
 * ended: the weights, the loss scale and the optimizer's update count. */
typedef struct StepLog {
    CudaSimCounts since[STEPS];
    float loss[STEPS];
    uint64_t skipped[STEPS];
    CudaSimCounts last;
    int steps;
    float *weights; /* [n_weights] */
    size_t n_weights;
    LossScale scale;
    uint64_t updates;
} StepLog;

static CudaSimCounts counts_since(CudaSimCounts now, CudaSimCounts then)
{
    return (CudaSimCounts){now.stream_syncs - then.stream_syncs, now.event_syncs - then.event_syncs,
                           now.device_to_host_copies - then.device_to_host_copies};
}

static void log_step(void *ctx, const StepReport *r)
{
    StepLog *log = ctx;
    const CudaSimCounts now = cuda_sim_counts();
    if (log->steps < STEPS) {
        log->since[log->steps] = counts_since(now, log->last);
        log->loss[log->steps] = r->loss;
        log->skipped[log->steps] = r->skipped_steps;
    }
    log->steps++;
    log->last = now;
}

/* The pass's images, uniform in [0, 1), and one box a sample, from the pass's draw id. */
static int fill_pass(Net *net, int pass, void *ctx, Error *e)
{
    (void)pass, (void)ctx, (void)e;
    Rng rng;
    rng_seed(&rng, SEED, net->draw_id);
    float *input = net_host_input(net);
    for (size_t i = 0; i < (size_t)net->batch * shape_size(net->in_shape); i++)
        input[i] = rng_uniform(&rng);
    const int boxes = net_truth_boxes(net);
    memset(net->truth, 0, (size_t)net->batch * (size_t)boxes * TRUTH_FLOATS * sizeof *net->truth);
    for (int b = 0; b < net->batch; b++) {
        float *box = net->truth + (size_t)b * (size_t)boxes * TRUTH_FLOATS;
        box[TRUTH_X] = 0.3f + 0.4f * rng_uniform(&rng);
        box[TRUTH_Y] = 0.3f + 0.4f * rng_uniform(&rng);
        box[TRUTH_W] = 0.2f + 0.3f * rng_uniform(&rng);
        box[TRUTH_H] = 0.2f + 0.3f * rng_uniform(&rng);
        box[TRUTH_CLASS] = 0;
    }
    return CDL_OK;
}

static int save_nothing(void *ctx, const char *path, const Net *net, const Optimizer *opt,
                        const ModelMeta *meta, Error *e)
{
    (void)ctx, (void)path, (void)net, (void)opt, (void)meta, (void)e;
    return CDL_OK;
}

/* The net of cfg text on the GPU, sized for its passes, with its truth buffer; 1 on failure
 * (reported). */
static int build_gpu_net(Net *net, const char *text, float **truth)
{
    Error e = {0};
    if (net_build_from_text_on(net, text, "tiny.cfg", 1, SEED, (NetPlacement){CDL_BACKEND_GPU, 0},
                               &e) ||
        net_resize(net, net->hyper.batch / net->hyper.subdivisions, 0, &e)) {
        fprintf(stderr, "FAIL: %s\n", e.msg);
        CHECK(0);
        return 1;
    }
    *truth =
        calloc((size_t)net->batch * (size_t)net_truth_boxes(net) * TRUTH_FLOATS, sizeof **truth);
    net_set_truth(net, *truth);
    return 0;
}

/* The first step's loss as the eager step computed it before: each pass's forward on the first
 * weights, each [yolo] downloading its cost, summed over the passes in float32. */
static float first_step_loss_downloaded(void)
{
    Net net;
    float *truth;
    if (build_gpu_net(&net, NET_TEXT, &truth))
        return 0;
    net.train = 1;
    net.loss_divisor = (float)net.hyper.batch;
    const CudaSimCounts before = cuda_sim_counts();
    float loss = 0;
    for (int pass = 0; pass < PASSES; pass++) {
        net.draw_id = (uint64_t)pass;
        Error e = {0};
        fill_pass(&net, pass, NULL, &e);
        net_commit_batch(&net);
        net_forward(&net);
        loss += net.loss;
    }
    /* the old way: a wait and a copy per head and pass */
    const CudaSimCounts spent = counts_since(cuda_sim_counts(), before);
    CHECK(spent.stream_syncs == 2 * PASSES && spent.device_to_host_copies == 2 * PASSES);
    net_set_truth(&net, NULL);
    net_free(&net);
    free(truth);
    return loss;
}

/* A run of the steps: the net of cfg text on the GPU, its truth buffer and its optimizer. */
typedef struct Run {
    Net net;
    float *truth;
    Optimizer opt;
} Run;

/* Starts a run of cfg text from the seed's weights, log cleared; loss_scale: fp16's first loss
 * scale (0: the optimizer's). 1 on failure (reported). */
static int run_start(Run *r, const char *text, float loss_scale, StepLog *log)
{
    memset(log, 0, sizeof *log);
    if (build_gpu_net(&r->net, text, &r->truth))
        return 1;
    Error e = {0};
    CHECK(optimizer_init(&r->opt, &r->net, &e) == CDL_OK);
    if (loss_scale > 0)
        r->opt.loss_scale.scale = loss_scale;
    log->last = cuda_sim_counts();
    return 0;
}

/* Ends a run, keeping what it leaves in log: the weights downloaded, the loss scale and the
 * updates run. */
static void run_end(Run *r, StepLog *log)
{
    Net *net = &r->net;
    log->n_weights = net->n_params;
    log->weights = malloc(net->n_params * sizeof *log->weights);
    net->backend->download(log->weights, net->params, net->n_params * sizeof *log->weights);
    log->scale = r->opt.loss_scale;
    log->updates = r->opt.steps;
    optimizer_free(&r->opt);
    net_set_truth(net, NULL);
    net_free(net);
    free(r->truth);
}

/* STEPS steps of train_run from the seed's weights of cfg text, eagerly or as CUDA graphs. */
static void train_steps(const char *text, int cuda_graph, float loss_scale, StepLog *log)
{
    Run r;
    if (run_start(&r, text, loss_scale, log))
        return;
    Error e = {0};
    ModelMeta meta = {.seed = SEED};
    const TrainSource source = {STEPS * PASSES, NULL, fill_pass, NULL, NULL};
    const TrainPlan plan = {.epochs = 1,
                            .out_path = "unused.cdl",
                            .save_checkpoint = save_nothing,
                            .cuda_graph = cuda_graph};
    const TrainCallbacks cb = {log_step, NULL, log};
    const int st = train_run(&r.net, &r.opt, &source, NULL, &plan, &meta, &cb, &e);
    CHECK(st == CDL_OK);
    if (st)
        fprintf(stderr, "FAIL: %s\n", e.msg);
    CHECK(log->steps == STEPS);
    run_end(&r, log);
}

/* The same steps of cfg text as the eager step ran them before the losses stayed on the device:
 * each [yolo] downloading its loss and fp16's unscaling waiting for its flag, trainer.c's
 * step_once otherwise. */
static void train_steps_waiting(const char *text, float loss_scale, StepLog *log)
{
    Run r;
    if (run_start(&r, text, loss_scale, log))
        return;
    Net *net = &r.net;
    Error e = {0};
    net->train = 1;
    net->loss_divisor = (float)net->hyper.batch * (float)net_labels_per_sample(net);
    for (int step = 0; step < STEPS; step++) {
        const float lr = train_learning_rate(&r.opt.settings, net->step, STEPS);
        net->grad_scale = r.opt.loss_scale.scale;
        float loss = 0;
        for (int pass = 0; pass < PASSES; pass++) {
            net->draw_id = net->step * (uint64_t)PASSES + (uint64_t)pass;
            net->sample_offset = 0;
            net->later_pass = pass > 0;
            fill_pass(net, pass, NULL, &e);
            net_commit_batch(net);
            net_forward(net);
            loss += net->loss;
            net_backward(net);
        }
        net->later_pass = 0;
        if (loss_scale_unscale(&r.opt.loss_scale, net))
            optimizer_step(&r.opt, net, lr);
        net->step++;
        CHECK(net_sync(net, &e) == CDL_OK);
        log_step(log, &(StepReport){.loss = loss, .skipped_steps = r.opt.loss_scale.skipped});
    }
    run_end(&r, log);
}

static int same_weights(const StepLog *a, const StepLog *b)
{
    return a->weights && b->weights && a->n_weights == b->n_weights &&
           !memcmp(a->weights, b->weights, a->n_weights * sizeof *a->weights);
}

/* float32: every step waits for the net's stream once and copies its losses back once; a step of
 * graphs (all but the first, eager) also copies fp16's skip flag, which it does not use in
 * float32. The staging buffers' waits for their copies (events, one a pass) are not the
 * stream's. */
static void test_fp32_steps_wait_once(void)
{
    const float before = first_step_loss_downloaded();
    StepLog eager, graphed;
    train_steps(NET_TEXT, 0, 0, &eager);
    train_steps(NET_TEXT, 1, 0, &graphed);
    for (int s = 0; s < STEPS; s++) {
        CHECK(eager.since[s].stream_syncs == 1);
        CHECK(eager.since[s].device_to_host_copies == 1);
        CHECK(graphed.since[s].stream_syncs == 1);
        CHECK(graphed.since[s].device_to_host_copies == (s == 0 ? 1 : 2));
        CHECK(eager.loss[s] == graphed.loss[s]);
        CHECK(eager.loss[s] > 0);
    }
    CHECK(eager.loss[0] == before);
    CHECK(same_weights(&eager, &graphed));
    printf("float32, per step: %lld wait, %lld copy back, %lld staging waits; step 1's loss %.9g "
           "as downloaded per head (%.9g)\n",
           eager.since[1].stream_syncs, eager.since[1].device_to_host_copies,
           eager.since[1].event_syncs, eager.loss[0], before);
    free(eager.weights);
    free(graphed.weights);
}

/* fp16 from a loss scale of FP16_FIRST_SCALE, two doublings above the default, at which this net's
 * first gradients overflow fp16, so that the run has skipped steps (the scale halved) and updated
 * ones: the eager step waits once and copies back its losses and the skip flag, where it waited
 * 2 * PASSES + 2 times (each head, the unscaling, the step's end); losses, skipped steps, loss
 * scale and weights as the waiting steps' and the graphs', bit for bit. */
#define FP16_FIRST_SCALE (4 * LOSS_SCALE_INIT)
static void test_fp16_steps_wait_once(void)
{
    StepLog waiting, eager, graphed;
    train_steps_waiting(NET_TEXT_FP16, FP16_FIRST_SCALE, &waiting);
    train_steps(NET_TEXT_FP16, 0, FP16_FIRST_SCALE, &eager);
    train_steps(NET_TEXT_FP16, 1, FP16_FIRST_SCALE, &graphed);
    for (int s = 0; s < STEPS; s++) {
        CHECK(waiting.since[s].stream_syncs == 2 * PASSES + 2);
        CHECK(eager.since[s].stream_syncs == 1);
        CHECK(eager.since[s].device_to_host_copies == 2);
        CHECK(graphed.since[s].stream_syncs == 1);
        CHECK(eager.loss[s] == waiting.loss[s] && eager.loss[s] == graphed.loss[s]);
        CHECK(eager.skipped[s] == waiting.skipped[s] && eager.skipped[s] == graphed.skipped[s]);
    }
    CHECK(eager.skipped[0] == 1 && eager.skipped[STEPS - 1] < STEPS); /* both kinds of step */
    CHECK(eager.scale.scale == waiting.scale.scale && eager.scale.scale == graphed.scale.scale);
    CHECK(eager.scale.skipped == waiting.scale.skipped);
    CHECK(eager.updates == waiting.updates && eager.updates == graphed.updates);
    CHECK(same_weights(&eager, &waiting) && same_weights(&eager, &graphed));
    printf("fp16, per step: %lld wait, %lld copies back (before: %lld waits); %llu of %d steps "
           "skipped, loss scale %g\n",
           eager.since[1].stream_syncs, eager.since[1].device_to_host_copies,
           waiting.since[1].stream_syncs, (unsigned long long)eager.scale.skipped, STEPS,
           eager.scale.scale);
    free(waiting.weights);
    free(eager.weights);
    free(graphed.weights);
}

/* A classifier for evaluation's and prediction's pass: its [softmax] computes a loss from the
 * batch's labels. */
#define CLASSIFIER_TEXT                                                                            \
    "[net]\nbatch=4\nwidth=8\nheight=8\nchannels=3\n"                                              \
    "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=leaky\n"                                \
    "[avgpool]\n[connected]\noutput=5\nactivation=linear\n[softmax]\n"
#define CLASSES 5

/* The batch's images, uniform in [0, 1), and labels b % CLASSES, committed. */
static void commit_classifier_batch(Net *net)
{
    Rng rng;
    rng_seed(&rng, SEED, 0);
    float *input = net_host_input(net);
    for (size_t i = 0; i < (size_t)net->batch * shape_size(net->in_shape); i++)
        input[i] = rng_uniform(&rng);
    int *labels = net_host_labels(net);
    for (int b = 0; b < net->batch; b++)
        labels[b] = b % CLASSES;
    net_commit_batch(net);
}

/* Evaluation's and prediction's pass (net_forward_to_host) waits for the device once, where the
 * forward and the output's download (net_forward, net_host_output) waited for the [softmax]'s
 * loss too: the same loss and outputs, bit for bit. */
static void test_inference_pass_waits_once(void)
{
    Net net;
    Error e = {0};
    if (net_build_from_text_on(&net, CLASSIFIER_TEXT, "classifier.cfg", 0, SEED,
                               (NetPlacement){CDL_BACKEND_GPU, 0}, &e) ||
        net_resize(&net, net.hyper.batch, 0, &e)) {
        fprintf(stderr, "FAIL: %s\n", e.msg);
        CHECK(0);
        return;
    }
    net.train = 0;
    net.loss_divisor = 1;
    const size_t n_out = (size_t)net.batch * CLASSES;
    float *before = malloc(n_out * sizeof *before);
    commit_classifier_batch(&net);
    CudaSimCounts start = cuda_sim_counts();
    net_forward(&net);
    memcpy(before, net_host_output(&net), n_out * sizeof *before);
    const CudaSimCounts waited = counts_since(cuda_sim_counts(), start);
    const float loss_before = net.loss;
    commit_classifier_batch(&net);
    start = cuda_sim_counts();
    const float *out = net_forward_to_host(&net, &e);
    const CudaSimCounts spent = counts_since(cuda_sim_counts(), start);
    CHECK(out != NULL);
    CHECK(waited.stream_syncs == 2);
    CHECK(spent.stream_syncs == 1 && spent.device_to_host_copies == 2);
    CHECK(net.loss == loss_before && net.loss > 0);
    CHECK(out && !memcmp(out, before, n_out * sizeof *out));
    printf("inference pass: %lld wait (before: %lld), loss %.9g\n", spent.stream_syncs,
           waited.stream_syncs, net.loss);
    free(before);
    net_free(&net);
}

/* The library's cdl_model_predict of one input on the GPU waits for the device once too, and gives
 * the CPU's probabilities (float32 round-off apart). */
static void test_api_predict_waits_once(void)
{
    char path[] = "/tmp/cdl_predict_syncs_XXXXXX";
    const int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(CLASSIFIER_TEXT, f);
    fclose(f);
    const cdl_open_options how = {.seed = SEED, .batch = 1};
    cdl_model *cpu = NULL, *gpu = NULL;
    char err[512] = "";
    const int opened = !cdl_model_open(path, &how, &cpu, err, sizeof err) &&
                       !cdl_model_open(path, &how, &gpu, err, sizeof err) &&
                       !cdl_model_use_gpu(gpu, 0, err, sizeof err);
    remove(path);
    if (!opened)
        fprintf(stderr, "FAIL: %s\n", err);
    CHECK(opened);
    float input[3 * 8 * 8], on_cpu[CLASSES], on_gpu[CLASSES];
    Rng rng;
    rng_seed(&rng, SEED, 1);
    for (size_t i = 0; i < sizeof input / sizeof *input; i++)
        input[i] = rng_uniform(&rng);
    if (opened) {
        cdl_model_predict(cpu, input, on_cpu);
        cdl_model_predict(gpu, input, on_gpu); /* the first, where cuBLAS sets itself up */
        const CudaSimCounts start = cuda_sim_counts();
        cdl_model_predict(gpu, input, on_gpu);
        const CudaSimCounts spent = counts_since(cuda_sim_counts(), start);
        CHECK(spent.stream_syncs == 1);
        for (int k = 0; k < CLASSES; k++)
            CHECK(fabsf(on_gpu[k] - on_cpu[k]) <= 1e-6f);
        printf("cdl_model_predict on the GPU: %lld wait, %lld copies back\n", spent.stream_syncs,
               spent.device_to_host_copies);
    }
    cdl_model_free(cpu);
    cdl_model_free(gpu);
}

int main(void)
{
    test_inference_pass_waits_once();
    test_api_predict_waits_once();
    test_fp32_steps_wait_once();
    test_fp16_steps_wait_once();
    return check_report("test_gpu_step_syncs");
}
#else
int main(void)
{
    printf("test_gpu_step_syncs: skipped (counts the CUDA simulator's waits: make GPU=sim)\n");
    return 0;
}
#endif
