/* A network: the ordered layers built from a cfg, the hyper-parameters of its [net]
 * section, and the slabs holding parameters, gradients, state and activations. */
#ifndef CDL_NET_H
#define CDL_NET_H

#include <stdint.h>

#include "core/layer.h"
#include "io/cfg.h"

/* Size limits that keep index arithmetic in range and refuse absurd allocations: the values of
 * one image in any layer (input included), a convolution's weights or im2col columns, and all
 * parameters together are at most NET_MAX_FLOATS floats; the activations of a mini-batch at
 * most NET_MAX_BATCH_FLOATS. */
#define NET_MAX_FLOATS ((size_t)1 << 28)
#define NET_MAX_BATCH_FLOATS ((size_t)1 << 30)

struct Profiler; /* util/profiler.h */

/* The [net] section's settings of the net itself (defaults in docs/config.md): how a step splits
 * its batch and how batch norm counts. The optimizer's and the schedule's keys are training's
 * (train/train_settings.h). */
typedef struct Hyper {
    int batch;        /* images per optimizer step */
    int subdivisions; /* batch is processed as `subdivisions` mini-batches */
    /* split_passes=1 (the default): training may run a mini-batch as smaller passes
     * (core/net_split.h); 0: one pass each */
    int split_passes;
    float bn_momentum, bn_eps;
    int bn_darknet; /* 1: batch norm as darknet's: sqrt(var) + 1e-6, unbiased in training */
    int sync_bn;    /* 1: batch statistics over every rank of a data-parallel run */
} Hyper;

typedef struct Net {
    Cfg cfg; /* kept for error messages and checkpoints */
    /* The backend the net was built for: its slabs (params, grads, state, activations, input,
     * input_delta, the workspace) are that backend's memory, allocated with its BackendOps, and
     * every layer's kernels are its (Layer.kernels). Host code reads device slabs only through
     * backend->download. */
    const BackendOps *backend;
    int device; /* the backend's device the net runs on (0 on the CPU) */
    Hyper hyper;
    Shape in_shape;
    /* The in_shape net_resize sized the buffers for: net_set_size takes no larger height or
     * width. */
    Shape sized_in;
    /* Sequence nets ([net] seq=T, darknet's time_steps): tokens per sample, 0 for image nets.
     * The input is then [batch][1][T][inputs] (inputs=1: token ids as floats, read by
     * [embedding]) and there is one label per token, the id of the token that follows. */
    int seq;
    /* Sequence to sequence ([net] source=S, docs/text.md): each sample's input row holds S
     * source token ids, then the seq=T target ids; the labels are the T target positions'. 0: a
     * net of one sequence. */
    int source;
    /* The rows the layers compute at (net_set_rows): a sequence-to-sequence net's mini-batch at
     * the length of its longest source (rows_source <= source) and target (rows_target <= seq);
     * source and seq, the sizes its memory is planned for, outside a training pass. */
    int rows_source, rows_target;
    int vocab; /* [net] vocab=: distinct tokens (training on text sets it; else 256) */
    Layer *layers;
    int n_layers;
    /* [net] precision=fp32|bf16|tf32|fp16: the numerics of every layer's convolutions and matrix
     * products (Layer.precision); net_set_precision changes it. */
    GemmPrecision precision;
    int classes; /* output size of the last layer (per token in a sequence net) */

    /* Slabs: one allocation each. */
    float *params; /* trainable parameters */
    float *grads;  /* gradients, same layout as params */
    size_t n_params;
    float *state; /* non-trainable (running statistics) */
    size_t n_state;

    int batch; /* mini-batch the activations are sized for (0: none yet) */
    int train; /* 1: training mode (batch statistics, dropout) */
    /* Layers [0, train_from) are frozen: freeze=1 (or darknet's stopbackward=1) on layer
     * train_from-1, the last such key wins. They run in inference mode even in training
     * (net_forward hands them a StepContext with train 0: batch norm uses and keeps its running
     * statistics, dropout passes through), net_backward neither runs nor feeds them (their
     * deltas stay unused) and the optimizer leaves their parameters alone. 0: none. */
    int train_from;
    int want_grads; /* gradient slab and delta buffers exist */
    /* Gradient checkpointing, as torch.utils.checkpoint (training nets only; 0 segments in a net
     * without gradients): [net] recompute_every=N starts a segment at every N-th layer (0, N,
     * 2N, ...) and checkpoint=1 on a layer starts one there; layers before the first segment are
     * in none. net_backward runs each segment's forward again (StepContext.replay) just before its
     * backward, the last segment's excepted, whose activations are still there; in between, the
     * memory plan lends the memory of a segment's buffers that no other segment reads to others. */
    int recompute_every;
    int n_segments;
    /* [net] memory_plan: 1 (the default) lays the slab out by liveness (core/net_memory.h), 0
     * gives every buffer its own memory. */
    int memory_plan;
    /* [net] channels_last=1 (the CLI's --channels-last): keep activations NHWC where the backend's
     * kernels take them so (Layer.channels_last, core/net_channels_last.h); 0, the default, and
     * on the CPU, whose kernels take none: all NCHW. */
    int channels_last;
    /* 1: net_backward ran since the last net_forward (which sets it to 0). */
    int backward_ran;
    /* Slab holding the layers' out/delta/pre and private per-batch state (Layer.state_floats
     * floats, Layer.state_bytes bytes; LayerKernels.resize), placed by the memory plan: buffers
     * that are never live at the same time share memory. */
    float *activations;
    size_t activation_bytes; /* the slab's size */
    float *input;            /* [batch][in_shape] */
    float *input_delta;      /* [batch][in_shape] dL/d(input), only when requested */
    int *labels;             /* [batch][net_labels_per_sample] */
    /* Truth boxes of the detection losses (StepContext.truth on the CPU): [batch][truth_boxes][5]
     * floats in host memory that the caller owns and fills before a forward (net_set_truth);
     * NULL: none. */
    float *truth;
    int truth_boxes;
    /* On a backend that is not host visible, for a net with detection losses: the device's copy
     * of truth, which the layers read, and two staging slots of pinned host memory beside
     * staged_input's, into which net_commit_batch copies truth and from which it queues the
     * upload with the input's (same shape as truth; NULL otherwise). */
    float *device_truth;
    float *staged_truth[2];
    /* Where the layers' kernels run (core/backend.h): the shared workspace, and on a GPU the
     * stream and library handles. */
    ExecContext exec;
    /* Host copies of the input, labels and output on a backend that is not host-visible
     * (net_host_input); NULL on the CPU. The input and labels are staged in two slots of the
     * backend's pinned memory (BackendOps.alloc_host) that take turns: host code fills slot
     * host_slot while the device may still copy the last batch from the other one. host_input and
     * host_labels are the slot's buffers; host_slot_ready is 1 once the slot's last copy to the
     * device has finished (BackendOps.wait_staged), so host code may write it. */
    float *host_input, *host_output;
    int *host_labels;
    float *staged_input[2];
    int *staged_labels[2];
    int host_slot;
    int host_slot_ready;

    /* Loss scaling: each sample's loss is divided by loss_divisor, the whole
     * optimizer batch, so accumulated mini-batch gradients equal the full batch's. */
    float loss_divisor;
    /* The factor of the loss layers' input gradients (StepContext.grad_scale): fp16's loss scale
     * in training (train/loss_scale.h), 1 otherwise. */
    float grad_scale;
    float loss; /* summed over the last forward's mini-batch, already divided */
    uint64_t seed;
    uint64_t step; /* optimizer steps taken */
    /* Images trained on before the current step (the trainer keeps it; StepContext.images_seen
     * adds the step's mini-batches so far). */
    uint64_t images_seen;
    /* Identifies the current forward pass (step * subdivisions + mini-batch): with seed
     * it fixes every random draw (dropout masks), whatever the thread count. */
    uint64_t draw_id;
    /* A data-parallel run (train/dist.h; NULL: one process): this rank's first sample in the
     * global mini-batch (StepContext.sample_offset), and reduce_grads 1 in the last mini-batch
     * of a step, whose net_backward reports each finished layer to collective->grads_ready. */
    const Collective *collective;
    int sample_offset;
    int reduce_grads;
    /* 1 while the trainer runs a training step's passes after its first (train/trainer.c): the
     * optimizer has not moved the weights since the step's first pass (StepContext.same_weights).
     * 0 outside a step of several passes. */
    int later_pass;
    /* 1 after an inference-mode forward of a net without gradients, until net_resize or
     * net_weights_changed: its weights and batch-norm statistics are those of that forward, so
     * the next one may reuse what the layers derived from them (StepContext.same_weights: oneDNN's
     * folded and reordered weights). A training-mode forward (its running statistics move)
     * clears it. */
    int weights_kept;
    /* Passes each of the cfg's subdivisions runs as in training (core/net_split.h; 1: one): the
     * trainer's passes hold hyper.batch / subdivisions / split samples, net_resize's batch. */
    int split;
    /* When set, net_forward and net_backward time every layer into it (util/profiler.h);
     * NULL (the default): no profiling. Not owned by the net. */
    struct Profiler *profiler;
    /* One allocation holding every quantized layer's LayerQuant and int8 tensors
     * (backend/cpu/net_quant.h); NULL in a float net. */
    void *quant_slab;
} Net;

/* Builds layers from a parsed cfg (takes ownership of *cfg on success). Parameters are
 * initialised from seed. want_grads allocates the gradient slab (training). */
int net_build(Net *net, Cfg *cfg, int want_grads, uint64_t seed, Error *e);
void net_free(Net *net);
/* Parses cfg text (path names it in messages) and builds the net. */
int net_build_from_text(Net *net, const char *text, const char *path, int want_grads, uint64_t seed,
                        Error *e);
/* Where a net is built: a backend and its device (0 on the CPU). */
typedef struct NetPlacement {
    Backend backend;
    int device;
} NetPlacement;

/* As net_build and net_build_from_text, on a backend: fail with "FILE:LINE: layer N [type] has no
 * GPU implementation" at the first layer whose family has no kernels there, or when this build
 * lacks the backend or the device is not there. (The other net_build* build on the CPU.) */
int net_build_on(Net *net, Cfg *cfg, int want_grads, uint64_t seed, NetPlacement where, Error *e);
int net_build_from_text_on(Net *net, const char *text, const char *path, int want_grads,
                           uint64_t seed, NetPlacement where, Error *e);
/* Rebuilds net at where from its cfg with its weights, step and precision (not resized: a
 * net_resize follows), freeing the old one; on failure net is left as it was. */
int net_move_to(Net *net, NetPlacement where, Error *e);
/* Copies the parameters and running statistics of from into to, two nets of one cfg on any
 * backends (through download or upload where one is a device's). */
int net_copy_weights(Net *to, const Net *from, Error *e);
/* As net_build_from_text, but every parameter and running statistic is left zero instead of
 * initialised (seed still drives the net's random draws): for a caller that fills them all
 * next, as loading a checkpoint does. */
int net_build_from_text_uninitialised(Net *net, const char *text, const char *path, int want_grads,
                                      uint64_t seed, Error *e);
/* Loads the cfg file at path, applies the "SECTION.key=value" overrides in order, builds. */
int net_build_from_file(Net *net, const char *path, const char *const *overrides, int n_overrides,
                        int want_grads, uint64_t seed, Error *e);

/* Sizes activations and the layers' private state for a mini-batch of `batch` samples and
 * binds every layer's in[] and in_delta[] (allocates; not in the step).
 * want_input_delta also allocates net->input_delta (gradient checks). */
int net_resize(Net *net, int batch, int want_input_delta, Error *e);
/* *bytes = the size of the activation slab net_resize would allocate for batch, even one it
 * refuses as too large (measures the layers' state: call it on a net that is not resized, or
 * net_resize it after). */
int net_activation_bytes(Net *net, int batch, size_t *bytes, Error *e);
/* *bytes = what net_resize(net, batch, 0) allocates for a net with gradients when want_grads
 * (activations, deltas, layer state, input, labels, scratch), without allocating, and
 * *scratch_bytes of it the layers' shared scratch (which an engine may leave partly untouched);
 * fails as net_resize does when a mini-batch that large is refused. A net built without gradients
 * has no recomputed segments: measure a training step on one built with them. */
int net_batch_bytes(Net *net, int batch, int want_grads, size_t *bytes, size_t *scratch_bytes,
                    Error *e);

/* Names each layer's expected engine again (Layer.engine, as after parse), where what chooses it
 * changed since: int8 weights and their input grids read from a checkpoint. */
void net_name_engines(Net *net);
/* Sets the precision of the net and of every layer (Layer.precision); a net_resize must follow
 * before the next pass (layers in bf16, tf32 or fp16 take rounded copies of their operands at
 * resize). */
void net_set_precision(Net *net, GemmPrecision precision);
/* *precision = the precision called name ("fp32", "bf16", "tf32", "fp16"); CDL_EUSAGE when there
 * is none. */
int net_precision_from_name(const char *name, GemmPrecision *precision);
/* "fp32, bf16, tf32, fp16": the names net_precision_from_name takes, for messages. */
const char *net_precision_names(void);

/* Host code's side of a mini-batch (loaders, evaluation, predict, generation): where it writes the
 * input [batch][in_shape] and the labels [batch][net_labels_per_sample], and reads the output
 * [batch][classes]. On a host-visible backend (the CPU) they are the net's own buffers; on a
 * device, host copies that net_resize allocates: net_commit_batch uploads what host code wrote
 * (call it before the forward), net_host_output syncs and downloads the last layer's output.
 *
 * On a device the input and labels are double-buffered: net_commit_batch queues the copies of the
 * buffers host code wrote and returns at once, and net_host_input and net_host_labels return the
 * other pair from then on (waiting, if need be, until the device has finished copying the batch
 * before last from it), so that host code fills the next batch while the device copies and
 * computes this one. So after a commit: (1) those buffers hold an older batch, not the committed
 * one: write the whole next batch, and fetch the pointers again after every commit; (2) host code
 * that reads back the labels of the batch it committed (evaluation's tally) reads
 * net_batch_labels. The forwards after a commit see the committed batch, however many there are
 * (the device keeps its own copy). */
float *net_host_input(Net *net);
int *net_host_labels(Net *net);
void net_commit_batch(Net *net);
/* The labels of the last committed batch as host code wrote them, until the next commit after
 * (the CPU: the net's labels). */
const int *net_batch_labels(const Net *net);
const float *net_host_output(Net *net);
/* net_forward of the committed batch, then net_host_output, with one wait for the device: the loss
 * layers keep their losses on the device (BackendOps.keep_loss) and the one wait brings them into
 * net->loss (as each loss layer's download did: the same value) before the output comes down.
 * NULL on a failure of the passes (CDL_ERUNTIME in e). Evaluation's and prediction's pass. */
const float *net_forward_to_host(Net *net, Error *e);
/* Truth-box slots per sample that the net's detection losses read (Net.truth_boxes): the largest
 * LayerType.truth_boxes of its reads_truth layers; 0 when none reads boxes. */
int net_truth_boxes(const Net *net);
/* Images trained on, the current pass's mini-batch included (StepContext.images_seen): those of
 * the steps before, and the step's passes up to this one (draw_id). */
uint64_t net_pass_images_seen(const Net *net);
/* Points the detection losses at truth [batch][net_truth_boxes][TRUTH_FLOATS] (data/boxes.h),
 * host memory that the caller owns and fills with each mini-batch, before net_commit_batch (NULL:
 * no loss); a CPU's losses read it there, a GPU's the copy net_commit_batch uploads with the
 * batch (Net.device_truth). */
void net_set_truth(Net *net, float *truth);

/* Waits for the passes queued on the net's backend (none on the CPU) and returns the first failure
 * among them (CDL_ERUNTIME). Host code syncs before it downloads what a pass wrote. */
int net_sync(Net *net, Error *e);

/* Runs every layer's forward on net->input (and net->labels for the loss when
 * labels != NULL). Output probabilities are in net->layers[n_layers-1].out. */
void net_forward(Net *net);
/* Says that a net's parameters or running statistics were written since its last forward (a
 * load of weights into an opened model): its next forward derives its packed copies anew. */
void net_weights_changed(Net *net);
/* Runs the backward of layers n_layers-1 down to train_from, zeroing each delta just before
 * the first backward that adds into it (Layer.last_reader); adds into grads. With gradient
 * checkpointing each segment's forward runs again just before its backward: the gradients are
 * bit-identical to those without it. A backward consumes its forward: the memory plan (and
 * checkpointing) lets deltas take the memory of outputs, batch norm's normalised values and
 * pooling's indices once the backward has read them; so a second backward after one forward
 * first replays the whole forward (as checkpointing does, StepContext.replay) and gives the
 * first one's gradients. */
void net_backward(Net *net);
void net_zero_grads(Net *net);

/* The output buffer of layer i's k-th input, or net->input for -1. */
const float *net_layer_input(const Net *net, const Layer *l, int k);
/* The delta buffer of layer i's k-th input (NULL when gradients are not needed: no
 * gradients, a frozen input layer, or the net input without input_delta). */
float *net_layer_input_delta(Net *net, const Layer *l, int k);
/* The output [batch][classes] of the last layer. */
const float *net_output(const Net *net);
/* After a forward: the first layer, in order, whose output [batch][out_shape] holds a NaN or
 * an infinity; -1 when the input [batch][in_shape] already does; n_layers when all is
 * finite. Reads every activation: for diagnosis, not for the training step. Since the memory
 * plan (and gradient checkpointing) lets outputs be overwritten once read, it replays the
 * forward layer by layer (changing no running statistic), checking each output as it is made;
 * only with memory_plan=0 and no segments does it read the forward's outputs as they are. */
int net_first_nonfinite_output(Net *net);
/* 1 when the n floats at x, the net's memory, are all finite (a device's downloaded first: a
 * diagnosis, not the step; 1 when there is no memory to tell). */
int net_values_finite(Net *net, const float *x, size_t n);

/* Reads and checks the [net] keys of cfg that are not the net's own: training's
 * (train/train_settings.h), the augmentation of an input of shape in (data/augment.h, read where
 * needed with train/net_keys.h's net_augment) and the CPU backend's (backend/cpu/cpu_options.h).
 * net_build calls it before it refuses an unknown [net] key. Defined above core (train/net_keys.c)
 * and found by linking, as layer_type_find is. */
int net_read_foreign_keys(Cfg *cfg, Shape in, Error *e);

/* A sequence-to-sequence net at a mini-batch's runtime length (core/net_rows.c). */

/* 1 when net_set_rows can shorten the net's rows: a sequence-to-sequence net whose every layer's
 * family computes at fewer rows than it was sized for (LayerType.set_rows). */
int net_can_set_rows(const Net *net);
/* Makes every layer compute source_rows (<= source) rows of the source part and target_rows
 * (<= seq) of the target part per sample, packed: [batch][rows][C] at the start of buffers sized
 * for the maximum; the net input keeps its layout, labels are [batch][target_rows]. Allocates
 * nothing. net_set_rows(net, net->source, net->seq) restores the sized shapes. Only where
 * net_can_set_rows. */
void net_set_rows(Net *net, int source_rows, int target_rows);
/* Fits the rows to the uncommitted mini-batch in net_host_input: the longest source and target
 * (the last id >= 0 of each part, over the samples; at least 1 row each), then packs
 * net_host_labels from [batch][seq] to [batch][rows_target]. The same loss and gradients as the
 * padded batch's, up to rounding. */
void net_fit_rows(Net *net);

/* An image net at a mini-batch's runtime spatial size (core/net_size.c): darknet's multi-scale
 * training (random=1). */

/* 1 when net_set_size can change the net's height and width: an image net whose every layer's
 * family has LayerType.set_size; else 0 with "layer N [type] cannot change its input size" in e. */
int net_can_set_size(const Net *net, Error *e);
/* Makes every layer compute at an input of width w and height h (the channels kept): each layer's
 * shapes derived again (LayerType.set_size), and in a resized net every layer's kernels resized at
 * them inside the memory net_resize planned (net_resize_state), so w and h may not exceed
 * sized_in's: plan for the largest size by calling net_set_size before net_resize. Tensors are
 * [batch][c][h][w] packed at the start of their buffers: host code writes the input at the new
 * size. Not for the training step (oneDNN's and cuDNN's primitives are made again); allocates no
 * activation memory. On failure (CDL_EUSAGE: a layer cannot take that size; CDL_ERUNTIME) the
 * net is left at its old size. Only where net_can_set_size. */
int net_set_size(Net *net, int w, int h, Error *e);
/* Releases and resizes every layer's kernels at the layers' shapes as they are (LayerKernels.
 * release, resize), carving their state where net_resize carved it: CDL_ERUNTIME, and nothing
 * carved, when a layer then needs more state or scratch than net_resize planned. */
int net_resize_state(Net *net, Error *e);

/* Labels per sample: seq in a sequence net, else 1. */
static inline int net_labels_per_sample(const Net *net)
{
    return net->seq > 0 ? net->seq : 1;
}
/* Runs the forward of layers [first, n_layers) only, on the committed input: after a net_forward,
 * the layers before first keep their outputs (a sequence-to-sequence net's encoder, run once while
 * its decoder runs for every new token). Only for a net that keeps every output
 * (net_can_forward_at), whose memory plan lends no layer's buffers to another. */
void net_forward_from(Net *net, int first);
/* 1 when every layer has forward_at (token-by-token generation with caches) and the net keeps
 * what the forward left for it: not with gradient checkpointing, whose segments' buffers are lent
 * to others (the memory plan keeps every output and state of such a net otherwise,
 * core/net_memory.h). */
int net_can_forward_at(const Net *net);
/* Runs the forward_at of layers [first, n_layers) for row t of theirs (inference; see
 * LayerKernels.forward_at): after a net_forward over rows [0, t), the last layer's row t equals a
 * full net_forward's. first > 0: the layers before it keep their outputs (a sequence-to-sequence
 * net's encoder, whose rows are not the decoder's). */
void net_forward_at(Net *net, int first, int t);
/* 1 when every layer of [first, n_layers) that keeps rows can move them between samples
 * (LayerKernels.keeps_rows, gather_samples). */
int net_can_gather_samples(const Net *net, int first);
/* The gather_samples of layers [first, n_layers) (LayerKernels.gather_samples): sample from[k]'s
 * caches to sample k, k < n, through scratch (net->backend->alloc's: the device's memory on a
 * GPU); scratch NULL: returns the floats it needs. */
size_t net_gather_samples(Net *net, int first, const int *from, int n, float *scratch);

#endif
