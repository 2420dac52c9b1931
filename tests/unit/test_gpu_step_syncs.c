/* A GPU training step waits for the device once: its loss layers keep their losses on the device
 * and the host reads them with the step's one wait at its end (BackendOps.keep_loss, and
 * capture_begin under --cuda-graph), for a yolov3-tiny-style net of two [yolo] heads in steps of
 * two passes, where each head once waited per pass. The losses are those the passes' forwards give
 * when each loss layer downloads its own (the eager step's before), and the graphs' are the eager
 * step's, bit for bit. The waits and copies are counted by the CUDA simulator's runtime
 * (cuda/sim/counters.h): skipped in other builds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#ifdef CDL_GPU_SIM
#include "core/net.h"
#include "data/boxes.h"
#include "sim/counters.h"
#include "train/optimizer.h"
#include "train/trainer.h"

/* yolov3-tiny's shape at 32x32: a head on the 8x8 map, a second after a [route], an [upsample]
 * and a [route] of two layers on the 16x16 one; two passes a step. */
#define NET_TEXT                                                                                   \
    "[net]\nbatch=4\nsubdivisions=2\nwidth=32\nheight=32\nchannels=3\nlearning_rate=0.001\n"       \
    "optimizer=adam\n"                                                                             \
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
#define SEED 5
#define STEPS 4
#define PASSES 2

/* What the run saw at each step: the host's waits for the net's stream and the copies back since
 * the step before, and the step's loss. */
typedef struct StepLog {
    CudaSimCounts since[STEPS];
    float loss[STEPS];
    CudaSimCounts last;
    int steps;
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

/* The net on the GPU, sized for its passes, with its truth buffer; 1 on failure (reported). */
static int build_gpu_net(Net *net, float **truth)
{
    Error e = {0};
    if (net_build_from_text_on(net, NET_TEXT, "tiny.cfg", 1, SEED,
                               (NetPlacement){CDL_BACKEND_GPU, 0}, &e) ||
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
    if (build_gpu_net(&net, &truth))
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

/* STEPS steps of train_run from the seed's weights, eagerly or as CUDA graphs. */
static void train_steps(int cuda_graph, StepLog *log)
{
    Net net;
    float *truth;
    memset(log, 0, sizeof *log);
    if (build_gpu_net(&net, &truth))
        return;
    Error e = {0};
    Optimizer opt;
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    ModelMeta meta = {.seed = SEED};
    const TrainSource source = {STEPS * PASSES, NULL, fill_pass, NULL, NULL};
    const TrainPlan plan = {.epochs = 1,
                            .out_path = "unused.cdl",
                            .save_checkpoint = save_nothing,
                            .cuda_graph = cuda_graph};
    const TrainCallbacks cb = {log_step, NULL, log};
    log->last = cuda_sim_counts();
    const int st = train_run(&net, &opt, &source, NULL, &plan, &meta, &cb, &e);
    CHECK(st == CDL_OK);
    if (st)
        fprintf(stderr, "FAIL: %s\n", e.msg);
    CHECK(log->steps == STEPS);
    optimizer_free(&opt);
    net_set_truth(&net, NULL);
    net_free(&net);
    free(truth);
}

int main(void)
{
    const float before = first_step_loss_downloaded();
    StepLog eager, graphed;
    train_steps(0, &eager);
    train_steps(1, &graphed);
    /* Every step waits for the net's stream once and copies its losses back once; a step of
     * graphs (all but the first, eager) also copies fp16's skip flag, which it does not use in
     * float32. The staging buffers' waits for their copies (events, one a pass) are not the
     * stream's. */
    for (int s = 0; s < STEPS; s++) {
        CHECK(eager.since[s].stream_syncs == 1);
        CHECK(eager.since[s].device_to_host_copies == 1);
        CHECK(graphed.since[s].stream_syncs == 1);
        CHECK(graphed.since[s].device_to_host_copies == (s == 0 ? 1 : 2));
        CHECK(eager.loss[s] == graphed.loss[s]);
        CHECK(eager.loss[s] > 0);
    }
    CHECK(eager.loss[0] == before);
    printf("per step: %lld wait, %lld copy back, %lld staging waits; step 1's loss %.9g as "
           "downloaded per head (%.9g)\n",
           eager.since[1].stream_syncs, eager.since[1].device_to_host_copies,
           eager.since[1].event_syncs, eager.loss[0], before);
    return check_report("test_gpu_step_syncs");
}
#else
int main(void)
{
    printf("test_gpu_step_syncs: skipped (counts the CUDA simulator's waits: make GPU=sim)\n");
    return 0;
}
#endif
