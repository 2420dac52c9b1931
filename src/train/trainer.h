/* The training loop: epochs of shuffled mini-batches from a Loader, gradient accumulation
 * over subdivisions, optimizer steps, per-epoch evaluation and checkpoints. */
#ifndef CDL_TRAINER_H
#define CDL_TRAINER_H

#include "core/net.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "train/dist.h"
#include "train/evaluate.h"
#include "train/model_meta.h"
#include "train/multi_scale.h"
#include "train/optimizer.h"

typedef struct StepReport {
    uint64_t step, total_steps;         /* step just finished (1-based) and the run's total */
    int epoch;                          /* 0-based epoch the step belongs to */
    int step_in_epoch, steps_per_epoch; /* 1-based position */
    float loss, lr;
    float avg_loss;      /* darknet's running average of the loss (0.9 avg + 0.1 loss) */
    uint64_t images;     /* samples trained on so far (ModelMeta.samples_seen) */
    double images_per_s; /* over the training time since the run (or resume) started, without
                            the evaluations and checkpoints between epochs */
    double eta_s;        /* estimated seconds until the last step (train/eta.h) */
    double elapsed_s;
    float loss_scale;       /* fp16's loss scale after the step (train/loss_scale.h); 0: none */
    uint64_t skipped_steps; /* steps fp16's loss scaling skipped so far */
    int width, height;      /* multi-scale training: the input size the step trained at; else 0 */
    int resized;            /* 1: the first step at that size (TrainPlan.multi_scale) */
} StepReport;

typedef struct EpochReport {
    int epoch; /* 1-based number of epochs now done */
    uint64_t step;
    double train_loss;       /* mean over the epoch's steps */
    int skipped;             /* unreadable training samples replaced this epoch (skip_bad) */
    const EvalResult *valid; /* NULL when there is no validation set */
    double images_per_s, elapsed_s;
    const char *checkpoint; /* path just written */
    int stopped;     /* 1: the run stopped inside this epoch (plan->time_limit_s, stop_step or
                        stop_requested) */
    int interrupted; /* 1: it stopped after this step because plan->stop_requested asked */
    int ranks;       /* processes of the run (TrainPlan.dist); images_per_s counts all of theirs */
    /* This rank's gradient allreduce over the epoch: time blocked after backward, and time the
     * buckets were in flight while backward still ran (dist.h DistStats). */
    double allreduce_wait_s, allreduce_hidden_s;
} EpochReport;

typedef struct TrainCallbacks {
    void (*on_step)(void *ctx, const StepReport *r);
    void (*on_epoch)(void *ctx, const EpochReport *r);
    void *ctx;
} TrainCallbacks;

/* Writes the checkpoint at path atomically (model_save_checkpoint of model/model_io.h): net,
 * opt's state and meta, which the trainer has just updated. */
typedef int (*CheckpointSave)(void *ctx, const char *path, const Net *net, const Optimizer *opt,
                              const ModelMeta *meta, Error *e);

typedef struct TrainPlan {
    int epochs;           /* run until this many epochs are done */
    const char *out_path; /* checkpoint written after every epoch */
    EvalOptions valid;    /* how the validation set is read */
    /* > 0: stop after the step during which this many seconds of training passed (the
     * evaluations and checkpoints between epochs not counted), then evaluate and save as at the
     * end of an epoch (the schedule keeps its planned length). */
    double time_limit_s;
    CheckpointSave save_checkpoint; /* writes out_path after every epoch (required) */
    void *save_ctx;                 /* its ctx */
    uint64_t stop_step; /* > 0: stop after this step (1-based), evaluating and saving alike */
    /* NULL, or asked after every step and after every checkpoint: non-zero stops the run there
     * (on every rank when one rank's says so), after saving a checkpoint as at the time limit
     * but without the evaluation inside an epoch; a resumed run continues it as if uninterrupted.
     * For a SIGINT handler's flag: it must only read, and be cheap. */
    int (*stop_requested)(void *ctx);
    void *stop_ctx;
    /* A data-parallel run (dist_open on the net; NULL: one process): every step's gradients
     * and loss are summed over the ranks, each sample's loss divided by batch * ranks; only rank
     * 0 evaluates, saves and reports epochs. */
    Dist *dist;
    /* 1: every step after the run's first (eager, to warm the libraries up) is one CUDA graph,
     * captured at the second step (and again should the net's buffers move) and replayed
     * (BackendOps.capture_begin): the same losses as without. A run it cannot hold yet is
     * refused with CDL_EUSAGE (train_run says which). */
    int cuda_graph;
    /* Multi-scale training (train/multi_scale.h; NULL or MULTI_SCALE_OFF: the cfg's size): each
     * step runs at multi_scale_size's size for it, the net resized before (net_set_size: a net
     * planned for the largest size) and back to the cfg's size for evaluation and checkpoints.
     * train_run fills its total_steps (max_batches, else the run's steps), steps_per_epoch and
     * passes_per_step; the loader's batch_size reads them from its first epoch on. */
    MultiScale *multi_scale;
} TrainPlan;

/* Fills net->input and net->labels with pass `pass` (0..subdivisions x Net.split - 1) of a step:
 * the net->batch samples from pass x net->batch on of the step's; net->draw_id and
 * net->sample_offset are already the pass's. A non-zero status (with e filled) abandons the
 * step. */
typedef int (*BatchFill)(Net *net, int pass, void *ctx, Error *e);

/* One optimizer step: for each subdivision, fill, forward, backward (gradients
 * accumulate); then opt's update at rate lr, and *loss = the batch's mean loss. When a
 * fill fails the step is abandoned before the update (gradients zeroed) with its status.
 * So is it when a mini-batch's loss is not finite (*loss then is not finite either), with
 * CDL_ERUNTIME "step N: the loss is not finite; layer I [TYPE] produced the first non-finite
 * output" (the 1-based step; the layer found by scanning the activations only then). On a GPU,
 * whose step reads its losses once at its end, the error comes after the update instead (the
 * layer found in the step's last pass). */
int trainer_step_with(Net *net, Optimizer *opt, BatchFill fill, void *ctx, float lr, float *loss,
                      Error *e);

/* One optimizer step on samples perm[0..batch) of train: for each subdivision, fill the
 * input, forward, backward (gradients accumulate); then opt's update. Returns the
 * batch's mean loss. Allocates nothing. */
float trainer_step(Net *net, Optimizer *opt, const Dataset *train, const int *perm, float lr);

/* What a captured step's graphs hold: the addresses of the buffers and fp16's loss scale (in the
 * loss layers' and the unscaling's arguments); when one changes, the step is captured again. */
typedef struct StepGraph {
    const void *activations, *input, *labels, *truth, *workspace, *params, *grads, *slab;
    double grad_scale;
} StepGraph;

/* Training steps that may run as CUDA graphs (TrainPlan.cuda_graph, cdl bench --cuda-graph):
 * the first eagerly, so that what the libraries allocate or plan at their first call (cuBLAS's
 * workspace) is done outside a capture; every later one captured at the first it runs (and again
 * should the net's buffers move) and replayed. Zeroed, with cuda_graph set, before the first. */
typedef struct StepRunner {
    int cuda_graph; /* 1: the steps after the first are graphs; 0: every step eager */
    int ready;      /* a step ran: the next one is a graph */
    StepGraph graph;
} StepRunner;

/* CDL_EUSAGE when r asks for graphs that net's steps cannot be yet (naming what), else CDL_OK. */
int step_runner_check(const StepRunner *r, const Net *net, Error *e);
/* One step as trainer_step_with's, its gradients summed over the ranks of dist (NULL: one
 * process), eager or as graphs (r). */
int step_runner_step(StepRunner *r, Net *net, Optimizer *opt, BatchFill fill, void *ctx, float lr,
                     Dist *dist, float *loss, Error *e);

/* The samples order[pass * net->batch ...] of data, as trainer_step fills them (ctx of
 * trainer_fill_from_dataset). */
typedef struct DatasetBatches {
    const Dataset *data;
    const int *order;
} DatasetBatches;
int trainer_fill_from_dataset(Net *net, int pass, void *ctx, Error *e);

/* Where the training mini-batches of an epoch come from. */
typedef struct TrainSource {
    int batches_per_epoch; /* mini-batches of net->batch samples */
    /* Positions the source at mini-batch `first` of `epoch` (NULL: nothing to do). */
    int (*start_epoch)(void *ctx, int epoch, int first, Error *e);
    BatchFill fill;
    int (*skipped)(const void *ctx); /* unreadable samples replaced this epoch (NULL: none) */
    void *ctx;
} TrainSource;

/* A Loader (train=1, drop_last, mini-batches of the net's) as a TrainSource. A loader with
 * truth_boxes (a detection net) fills the net's truth buffer (net_set_truth) as well. */
TrainSource train_source_loader(Loader *loader);

/* Random windows of a token stream (text_data.h) for a sequence net, or random pairs
 * (text_pairs.h) for a sequence-to-sequence net: mini-batch `sub` of step s
 * draws its windows from (seed, s * subdivisions + sub), so a resumed run draws the same (a pass
 * of a split mini-batch draws its part of them: Net.sample_offset). */
typedef struct TextBatches {
    const TokenStream *stream;
    uint64_t seed;
    /* a sequence-to-sequence net's: pairs drawn from pairs->train instead (stream NULL) */
    const TextPairs *pairs;
} TextBatches;
TrainSource train_source_text(TextBatches *batches, const Net *net);

/* The validation set evaluated after every epoch: images, tokens (a sequence net), pairs (a
 * sequence-to-sequence net) or none. */
typedef struct ValidSet {
    const SampleSource *images;
    const TokenStream *tokens;
    const TextPairs *pairs; /* a sequence-to-sequence net's: pairs->valid */
} ValidSet;

/* Evaluates valid (images or tokens; net sized by net_resize) with the EMA of the weights when
 * opt keeps one, as eval and predict will use them. */
int train_evaluate(Net *net, const Optimizer *opt, const ValidSet *valid, const EvalOptions *o,
                   EvalResult *r, Error *e);

/* Trains net (built with gradients, sized for passes of hyper.batch / subdivisions / Net.split)
 * from meta->step up to plan->epochs epochs. A step takes subdivisions x split passes of train,
 * and mini-batches left over at the end of an epoch are dropped. The learning rate follows
 * train_learning_rate over the run's plan->epochs epochs. valid (may be NULL) is evaluated after
 * every epoch, with the EMA of the weights when opt keeps one. opt: set up for net
 * (optimizer_init or model_load). meta is updated and saved with every checkpoint (by
 * plan->save_checkpoint). A non-finite loss stops the run with trainer_step_with's error,
 * followed by "; stopped, the last checkpoint (OUT) is kept" (the file as the last epoch wrote
 * it). */
int train_run(Net *net, Optimizer *opt, const TrainSource *train, const ValidSet *valid,
              const TrainPlan *plan, ModelMeta *meta, const TrainCallbacks *cb, Error *e);

#endif
