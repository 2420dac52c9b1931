/* The layer contract: every layer family fills a Layer at parse time and provides
 * the functions of a LayerType, registered by section name in layers/registry.c. */
#ifndef CDL_LAYER_H
#define CDL_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "core/activation.h"
#include "core/backend.h"
#include "core/precision.h"
#include "io/cfg.h"
#include "util/error.h"
#include "util/rng.h"

typedef struct Net Net;
typedef struct OnnxGraph OnnxGraph;
typedef struct LayerQuant LayerQuant; /* backend/cpu/layer_quant.h */

/* Per-sample shape; tensors passed between layers are [batch][c][h][w]. In a sequence net
 * ([net] seq=T, see core/net.h) they are [batch][1][T][features]: c = 1, one row per token
 * (h = T), the token's features along w. */
typedef struct Shape {
    int c, h, w;
} Shape;

static inline size_t shape_size(Shape s)
{
    return (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

/* A named parameter tensor. Trainable ones live in the net's parameter slab and have a
 * gradient in the gradient slab; the others (batch-norm running statistics) live in the
 * state slab, are saved in checkpoints and are not touched by the optimizer. */
#define PARAM_MAX_DIMS 4

typedef struct Param {
    const char *name; /* "weights", "biases", "scales", "rolling_mean", "rolling_variance" */
    /* The natural shape, as PyTorch and ONNX hold the tensor (convolution weights
     * [filters][c/groups][size][size], connected weights [outputs][inputs], ...); count is
     * the product of dims[0..n_dims). */
    int n_dims;
    int64_t dims[PARAM_MAX_DIMS];
    size_t count;
    int trainable;
    int decay; /* weight decay applies (convolution and connected weights only) */
    float *data;
    float *grad; /* NULL unless trainable */
} Param;

#define LAYER_MAX_PARAMS 6
#define LAYER_MAX_INPUTS 16

typedef struct Layer {
    const struct LayerType *type; /* what the layer means */
    /* What computes it: its family's kernels on the net's backend, picked when the net is built
     * (Net.backend). */
    const struct LayerKernels *kernels;
    int index; /* 0-based position among layers ([net] excluded) */
    int line;  /* cfg line of the section header */
    Shape in_shape, out_shape;
    /* Absolute indices of the layers this one reads; -1 means the net input. A plain
     * layer reads its predecessor; route and shortcut read several. */
    int inputs[LAYER_MAX_INPUTS];
    int n_inputs;
    ActivationKind activation;
    Param params[LAYER_MAX_PARAMS];
    int n_params;
    double flops; /* forward multiply-adds x2, per sample */
    /* Buffers owned by the net, sized [batch][out_shape]: */
    float *out;   /* activations */
    float *delta; /* dL/d(out); layers add into their inputs' deltas (in_delta) */
    float *pre;   /* pre-activation values, only when activation is not linear; l->out itself
                     when the activation runs in place (core/net_memory.h) */
    /* Bound by net_resize: in[k] is the output [batch][shape of input k] of the k-th input
     * (net->input for -1) and in_delta[k] its delta, where backward adds dL/d(input k);
     * in_delta[k] is NULL when that gradient is not needed (no gradients, a frozen input
     * layer, the net input without input_delta). Layers read other layers through these only,
     * but for those that fold layer 0's [embedding] into their own products (a [linear] with
     * tie=1, the fused [lstm] right after it): they read its parameters (the lstm its input ids
     * too) and add into its weight gradient, their backward running before its own. */
    const float *in[LAYER_MAX_INPUTS];
    float *in_delta[LAYER_MAX_INPUTS];
    /* Set by net_backward before the backward of a family with writes_input_delta: 1 when this
     * layer is the first to add into in_delta[k] (Layer.last_reader of input k), which the net
     * then leaves unzeroed: the backward writes all of dL/d(input k) there instead of adding. */
    unsigned char in_delta_fresh[LAYER_MAX_INPUTS];
    /* Floats of the net's shared scratch buffer this layer needs per batch sample
     * (im2col columns and the like), set by parse; resize may raise it for the batch it sizes
     * the layer for (oneDNN's scratchpad). The net allocates the maximum once. */
    size_t scratch_per_sample;
    /* Floats and bytes of per-batch private state, floats of work and floats kept between passes,
     * the layer took at the last net_resize (LayerKernels.resize), in the net's activation slab. */
    size_t state_floats, state_bytes, work_floats, kept_floats;
    /* Where net_resize carved that state (LayerState's floats, bytes, work and kept at the
     * layer's first request): net_set_size carves the state of another spatial size there again. */
    float *state_at, *work_at, *kept_at;
    unsigned char *state_bytes_at;
    /* Gradient checkpointing (core/net.h, training nets only): the recomputed segment the layer
     * is in (-1: none). */
    int segment;
    /* The last layer (in order) that reads this one's output, -1: none. Its backward is the first
     * to add into this layer's delta: net_backward zeroes the delta just before it (the memory
     * plan, core/net_memory.h, lends the delta to others before that). */
    int last_reader;
    /* The family's configuration and state, LayerType.priv_size zeroed bytes the net allocates
     * before parse and frees with the net; its per-batch buffers point into the net's
     * activation slab (LayerKernels.resize). NULL when priv_size is 0. */
    void *priv;
    /* int8 weights (`cdl quantize`, backend/cpu/net_quant.h): set, the forward multiplies in int8
     * through qgemm_float; NULL (the default): float. Owned by the net. */
    LayerQuant *quant;
    /* The numerics of the layer's convolutions and matrix products: the net's (Net.precision, set
     * before parse and by net_set_precision). GEMM_BF16, GEMM_TF32 and GEMM_FP16 take their
     * operands rounded to that format (the CPU's gemm_operand, into copies the layer's resize
     * takes from its state; the GPU's gpu_gemm_batched); everything else (bias, normalisation,
     * activation, softmax, loss) computes in float32, the GPU storing the tensors between layers
     * in bf16 or fp16 where storage says. The parameters are float32 either way. */
    GemmPrecision precision;
    /* The element type of out and delta (core/net_storage.h): ELEM_F32 but for a layer whose
     * kernels, and every reader's, take 16-bit tensors (LayerKernels.stores_16bit) under precision
     * bf16 or fp16; in_storage[k] is input k's (its writer's storage; ELEM_F32 for the net input),
     * of in[k] and in_delta[k]. Set by net_resize before the layers' resize. */
    ElemType storage;
    ElemType in_storage[LAYER_MAX_INPUTS];
    /* The layout of out and delta (core/net_channels_last.h): 1 NHWC [batch][h][w][c], where
     * [net] channels_last=1 and the layer's kernels and every reader's take it
     * (LayerKernels.takes_channels_last); 0 NCHW. in_channels_last[k]: input k's (its writer's;
     * 0 for the net input). Set by net_resize before the layers' resize. */
    int channels_last;
    int in_channels_last[LAYER_MAX_INPUTS];
    /* Layers that may run on oneDNN ([net] engine=, core/net.h: convolutions): the kernels their
     * step runs on, "dnnl" or "ref" (the own ones), as parse expects and resize then decides;
     * NULL in the other families (own kernels only). */
    const char *engine;
    /* Which of its tensors the layer's inference forwards (StepContext.train 0) take in oneDNN's
     * blocked layout nChw8c instead of plain NCHW (LayerKernels.layout): bit k input k, bit
     * LAYER_OUT_BIT the output; set by net_resize, 0 (all plain) in the training forwards
     * unless bit LAYER_TRAIN_BIT is set too (a net with gradients: then the layouts hold in
     * every pass, forward and backward, and the deltas share their outputs' layouts; see
     * layer_blocked). */
    unsigned blocked;
    /* A residual sum fused into a convolution (net_resize, LayerKernels.fuse_sum): in the layer
     * whose output only a [shortcut] reads, as that shortcut's first input, sum_into is the
     * shortcut: the layer's inference forwards write the shortcut's output, act(this + its other
     * input), and leave their own unwritten; in the shortcut, sum_from is that layer, and its
     * inference forwards do nothing. NULL: not fused. */
    struct Layer *sum_into;
    const struct Layer *sum_from;
    /* int8 activations between int8 layers (LayerKernels.pass_codes, net_resize): in an inference
     * net, the layer whose output only codes_to reads, as its one input, writes that output as
     * uint8 codes (in the backend's layout), which codes_to reads as they are (its codes_from is
     * the writer): codes of the grid of the chain's last layer's input, the first layer with
     * int8 weights (l->quant) from here along codes_to, the layers before it passing the codes
     * on (LayerKernels.passes_codes); NULL: float32. */
    struct Layer *codes_to;
    const struct Layer *codes_from;
    /* Where no chain is: in an inference net, the layer whose output only nhwc_to reads, as its
     * input 0, writes it in float32 nhwc, [batch][h][w][c] (LayerKernels.gives_nhwc, net_resize),
     * which nhwc_to reads so (takes_nhwc; its nhwc_from is the writer); NULL: plain. */
    struct Layer *nhwc_to;
    const struct Layer *nhwc_from;
} Layer;

#define LAYER_OUT_BIT LAYER_MAX_INPUTS
#define LAYER_TRAIN_BIT (LAYER_MAX_INPUTS + 1)

/* How a layer can take one of its tensors in nChw8c (LayerKernels.layout). */
enum { LAYOUT_PLAIN, LAYOUT_FREE, LAYOUT_TIED };

/* The processes of a data-parallel run (train/dist.c) as the net and its layers see them. */
typedef struct Collective {
    /* Adds every process's buf[0..n) in place, blocking (sync_bn's batch sums). */
    void (*sum)(void *ctx, double *buf, size_t n);
    /* net_backward calls it after layer i's backward in a pass whose gradients are to be
     * reduced (Net.reduce_grads): every gradient of layers >= i is then final. */
    void (*grads_ready)(void *ctx, int layer);
    void *ctx;
} Collective;

/* What one pass of one layer reads beyond the layer itself, built by the net for every
 * forward, backward and forward_at call (core/net.c); nothing in it is owned by the layer. */
typedef struct StepContext {
    int batch; /* samples in the mini-batch: every tensor is [batch][...] */
    int train; /* 1: training mode (batch statistics, dropout, random crops); 0: inference */
    /* Where the kernels run: the net's workspace (at least scratch_per_sample * batch floats),
     * and on a GPU its stream and library handles. */
    const ExecContext *exec;
    /* [batch][labels per sample] class ids of the loss; NULL: no loss is computed. */
    const int *labels;
    /* Truth boxes of the detection losses (families with reads_truth): [batch][truth_boxes]
     * [TRUTH_FLOATS] floats, darknet's net.truth (data/boxes.h), in the backend's memory (on a
     * GPU, Net.device_truth); NULL: no loss is computed. */
    const float *truth;
    int truth_boxes;
    /* Images trained on, this mini-batch's included (darknet's net.seen during the forward):
     * [region]'s early anchor prior. */
    uint64_t images_seen;
    /* Loss layers add sum_b loss_b / loss_divisor into *loss (forward). */
    float *loss;
    float loss_divisor;
    /* Loss layers multiply their input gradients by grad_scale (backward): fp16's loss scale
     * (train/loss_scale.h), 1 otherwise. */
    float grad_scale;
    /* With the layer's index, fixes every random draw of the pass (layer_draw_stream), whatever
     * the thread count: the net's seed and the pass's draw id. */
    uint64_t seed;
    uint64_t draw_id;
    /* Position of sample 0 of this mini-batch in the step's global mini-batch (0 in a single
     * process; rank * batch in a data-parallel run): per-sample draws are keyed by
     * sample_offset + b, so a sample's dropout mask does not depend on which rank holds it. */
    int sample_offset;
    /* Batch norm's statistics over every process's samples (sync_bn=1 in a data-parallel
     * run); NULL: this mini-batch's alone. */
    const Collective *sync_bn;
    /* 1: this forward repeats the layer's forward of the same pass (gradient checkpointing
     * recomputes a segment just before its backward): it must compute the same values and leave
     * nothing else changed (batch norm keeps its running statistics). */
    int replay;
    /* 1: the weights are those of the previous pass (a later pass of a training step of several,
     * Net.later_pass): a layer may reuse what it derived from them in that pass (its packed
     * copies) instead of deriving it again. 0 in every other pass. */
    int same_weights;
    /* The [net] batch-norm settings (core/net.h Hyper): momentum of the running statistics,
     * epsilon, and 1 for darknet's formula (division by sqrt(var) + 1e-6, in training of the
     * unbiased batch variance). */
    float bn_momentum, bn_eps;
    int bn_darknet;
} StepContext;

/* Layer.blocked's bits that hold in a pass of ctx's mode: all of them in inference and in a net
 * with gradients (LAYER_TRAIN_BIT), none in an inference net's training forwards. */
static inline unsigned layer_blocked(const Layer *l, const StepContext *ctx)
{
    return !ctx->train || l->blocked >> LAYER_TRAIN_BIT & 1 ? l->blocked : 0;
}

/* Whether l's input 0 comes in nhwc in a pass of ctx's mode (Layer.nhwc_from): from an int8
 * writer always, from a float32 one in inference only (an inference net's training forward runs
 * a folded convolution on the reference, which writes plain NCHW). The writer's side: the same
 * test on its reader. */
static inline int layer_nhwc_in(const Layer *l, const StepContext *ctx)
{
    return l->nhwc_from && (!ctx->train || l->nhwc_from->quant);
}

/* The beta of a product into in_delta[k] (a family with writes_input_delta): 0, written whole,
 * when the net left it unzeroed (Layer.in_delta_fresh), else 1, added to. */
static inline float layer_input_delta_beta(const Layer *l, int k)
{
    return l->in_delta_fresh[k] ? 0.0f : 1.0f;
}

/* The random stream of layer l in the pass ctx describes: rng_key(ctx->seed, stream) or
 * rng_seed(&r, ctx->seed, stream) draw its dropout masks or crop windows. */
static inline uint64_t layer_draw_stream(const StepContext *ctx, const Layer *l)
{
    return (ctx->draw_id << 16) ^ (uint64_t)l->index;
}

/* Where a layer's per-batch private state goes. net_resize calls LayerKernels.resize twice for
 * each layer: first to measure (floats and bytes NULL: layer_state_floats and
 * layer_state_bytes return NULL and only count), then to carve, with the layer's part of the
 * activation slab (zeroed). Both calls must ask for the same sizes in the same order. The state
 * carries things from a layer's forward to its backward (or to the forward_at calls after it),
 * never from one pass to the next: the memory plan (core/net_memory.h) lends it to other layers'
 * buffers outside that span (between a segment's forward and its replay too, with gradient
 * checkpointing), so a forward writes whatever it or the backward reads later (the zeroed slab is
 * no promise past the first pass). What a layer carries from one pass to the next (what it
 * derives from the weights once a step, StepContext.same_weights) is kept memory instead
 * (layer_kept_floats), which nothing else uses. */
typedef struct LayerState {
    float *floats;           /* NULL when measuring */
    unsigned char *bytes;    /* NULL when measuring */
    float *work;             /* NULL when measuring */
    float *kept;             /* NULL when measuring */
    size_t n_floats;         /* floats taken so far */
    size_t n_bytes;          /* bytes taken so far, each request rounded up to LAYER_STATE_ALIGN */
    size_t n_work;           /* work floats taken so far */
    size_t n_kept;           /* kept floats taken so far */
    const ExecContext *exec; /* the backend's context of the net (its options, on the CPU) */
    int input_grads;         /* the backward writes a gradient of an input (Layer.in_delta) */
    /* The [net] batch-norm settings the passes run with (StepContext.bn_eps, bn_darknet), which
     * decide where a backend runs a batch norm (the GPU's on cuDNN or on its own kernels). */
    float bn_eps;
    int bn_darknet;
} LayerState;

#define LAYER_STATE_ALIGN 16

/* n floats of state (NULL when measuring or n is 0). */
float *layer_state_floats(LayerState *st, size_t n);
/* n bytes of state aligned to LAYER_STATE_ALIGN, for non-float state such as masks and
 * indices (NULL when measuring or n is 0). */
void *layer_state_bytes(LayerState *st, size_t n);
/* n floats of work (NULL when measuring or n is 0): memory the layer uses within one forward or
 * backward call only, nothing written there read by a later call (a backward's partial weight
 * gradients), which the memory plan lends to other buffers between its calls. */
float *layer_work_floats(LayerState *st, size_t n);
/* n floats kept from one pass to the next (NULL when measuring or n is 0): what a layer derives
 * from its weights in a step's first pass and reuses in the later ones (StepContext.same_weights:
 * packed copies), which the memory plan gives to no other buffer. */
float *layer_kept_floats(LayerState *st, size_t n);

/* What a layer family computes on one backend (core/backend.h): its per-batch state, its step and
 * the backend's hooks (layouts, fused sums). A family's meaning (LayerType) is the same on every
 * backend; each backend holds one table per family it runs (backend/cpu/cpu_backend.c), which the
 * net picks once when it builds (Layer.kernels). Every table fills forward and backward. */
/* LayerKernels.takes_channels_last's answer. */
typedef enum ChannelsLastUse {
    CHANNELS_LAST_NEVER,
    CHANNELS_LAST_EITHER,
    CHANNELS_LAST_SAME,
} ChannelsLastUse;

typedef struct LayerKernels {
    /* The engine the backend expects to run l on ("ref", "dnnl", "wino"), named after parse for
     * `cdl info` and profiles (Layer.engine; resize may name another). NULL: the family has one. */
    const char *(*engine)(const Layer *l, const ExecContext *exec);
    /* Takes the per-batch private state of a mini-batch of batch samples from st
     * (layer_state_floats, layer_state_bytes, layer_work_floats, layer_kept_floats) and points
     * priv's buffers at it; parameters are assigned (params[].grad NULL in a net without
     * gradients). Called twice by net_resize (see LayerState), never inside the training step;
     * allocates nothing. Returns CDL_EUSAGE when the batch is too large for the layer (may be NULL:
     * no state). */
    int (*resize)(Layer *l, int batch, LayerState *st, Error *e);
    /* Releases what resize made outside the net's slabs (oneDNN primitives); the net calls it
     * when it frees the layer. NULL: nothing to release. */
    void (*release)(Layer *l);
    /* After every layer's resize, net_resize asks each layer how its inference forwards can take
     * input k (0..n_inputs-1), or with k -1 give its output, in oneDNN's blocked layout nChw8c
     * ([batch][c/8][h][w][8], the same bytes as NCHW: c a multiple of 8): LAYOUT_PLAIN not,
     * LAYOUT_FREE whatever its other tensors' layouts, LAYOUT_TIED only when all its tied tensors
     * are blocked. A layer's output is blocked (Layer.blocked) where its writer and all its
     * readers can take it so, and it is not the net's output. NULL: all plain. */
    int (*layout)(const Layer *l, int k);
    /* 1 when l's output is act(input 0 + input 1) of two inputs of its own shape ([shortcut]
     * with alpha = beta = 1): its input 0's writer may compute it (fuse_sum). NULL: never. */
    int (*plain_sum)(const Layer *l);
    /* Asked by net_resize, before it sizes the layers (their resize then follows it), whether l's
     * inference forwards can write the output of the plain_sum layer that alone reads l, as its
     * input 0: act(l's output + that layer's input 1), all three in the layout of l's output
     * (Layer.blocked: nChw8c or plain NCHW; Layer.sum_into); act -1 asks for no fused sum.
     * Returns 1 when l will. NULL: never. */
    int (*fuse_sum)(Layer *l, int act);
    /* Asked by net_resize after the layers' resize (they then resize again with its answer),
     * whether l's inference forwards can write reader's input, l's output that reader alone reads
     * as its one input, as reader's uint8 input codes, and reader's take them so (Layer.codes_to;
     * reader is of l's family). NULL: never. */
    int (*pass_codes)(const Layer *l, const Layer *reader);
    /* 1 when l's inference forwards can take its one input as uint8 codes and write its output as
     * codes of the same grid, in the layout pass_codes writes (a maximum: quantization keeps the
     * order), so that an int8 chain passes through l (Layer.codes_to). NULL: never. */
    int (*passes_codes)(const Layer *l);
    /* Asked by net_resize with pass_codes: 1 when l's inference forwards can write their output
     * in float32 nhwc (gives_nhwc), or take their input 0 so (takes_nhwc; the others plain), for
     * a writer and its sole reader in no int8 chain (Layer.nhwc_to). NULL: never. */
    int (*gives_nhwc)(const Layer *l);
    int (*takes_nhwc)(const Layer *l);
    /* 1 when forward and backward take each input (in[k], in_delta[k]) and the output (out,
     * delta) in the element types Layer.in_storage[k] and Layer.storage say, float32 or 16-bit
     * (core/precision.h ElemType), in every combination; 0: float32 only, and the net keeps the
     * layer's inputs and output in float32 (core/net_storage.h). */
    int stores_16bit;
    /* 1 for a family whose output stays float32 (the detection heads: their losses and the host
     * read it) but whose forward and backward take each input (in[k], in_delta[k]) in the element
     * type Layer.in_storage[k] says, float32 or 16-bit: its writer may store in 16 bits. */
    int reads_16bit;
    /* Which layouts forward and backward take (Layer.channels_last, in_channels_last): NULL or
     * CHANNELS_LAST_NEVER: NCHW only; CHANNELS_LAST_EITHER: each input and the output NCHW or
     * NHWC, in every combination; CHANNELS_LAST_SAME: NHWC where the inputs and the output all
     * are (an elementwise family). Asked per layer (a configuration may decline) with the net's
     * execution context (the engine its convolutions run on). */
    ChannelsLastUse (*takes_channels_last)(const Layer *l, const ExecContext *exec);
    /* Computes l->out [batch][out_shape] from l->in[] (and l->pre when the activation is not
     * linear); a loss layer adds its loss into *ctx->loss when ctx->labels is set. */
    void (*forward)(Layer *l, const StepContext *ctx);
    /* Reads l->delta, adds parameter gradients into params[].grad and input
     * gradients into l->in_delta[] (skipped where those are NULL). */
    void (*backward)(Layer *l, const StepContext *ctx);
    /* Sequence layers (NULL elsewhere): computes row t of l->out for every sample of the batch,
     * in inference mode, from row t of its inputs and what the forward or forward_at calls
     * before left in the layer (its outputs and caches for rows < t): generation extends a
     * sequence one token at a time with it (attention's key/value cache, a recurrent layer's
     * state). Must give the row forward gives, up to the rounding of matrix products over fewer
     * rows (BLAS may sum in another order). */
    void (*forward_at)(Layer *l, const StepContext *ctx, int t);
    /* 1 when forward_at reads what the calls for earlier rows left in the layer (attention's
     * keys and values, a recurrent state); 0 where it reads row t of its inputs alone. */
    int keeps_rows;
    /* Layers that keep rows (NULL where none can be moved): moves sample from[k]'s cache to
     * sample k for k < n (every from[k] < batch, the samples of the last pass), as beam search
     * keeps hypotheses that extend others, through scratch, memory of the backend's alloc (the
     * device's on a GPU, where the moves are device copies queued on exec's stream). Returns the
     * floats of scratch that needs (scratch NULL: moves nothing). */
    size_t (*gather_samples)(Layer *l, const ExecContext *exec, int batch, const int *from, int n,
                             float *scratch);
} LayerKernels;

/* The order darknet .weights files store a layer's tensors in (io/darknet_weights.c). */
typedef enum DarknetWeightOrder {
    DARKNET_NO_WEIGHTS, /* the layer has no place in a .weights file */
    DARKNET_CONVOLUTIONAL,
    DARKNET_CONNECTED,
    DARKNET_BATCHNORM,
} DarknetWeightOrder;

typedef struct LayerType {
    const char *name; /* cfg section name */
    /* Bytes of l->priv, the family's configuration, allocated (zeroed) by the net before
     * parse; 0: no priv. */
    size_t priv_size;
    /* Reads the section's keys, sets out_shape, activation, params (counts, flags),
     * inputs, flops, scratch_per_sample and fills priv. in_shape and inputs are preset to
     * the previous layer. Returns CDL_EUSAGE with "FILE:LINE: ..." on a bad cfg. */
    int (*parse)(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e);
    /* Initialises parameter values once slabs are assigned (may be NULL). */
    void (*init)(Layer *l, Rng *rng);
    /* Appends the layer's inference graph to g (core/onnx_graph.h): reads its inputs with
     * onnx_input_nchw/onnx_input_flat, declares parameters with onnx_param and writes the
     * value named by onnx_output. NULL: the layer cannot be exported, and `cdl export onnx`
     * says so. In a sequence net, whose values are [N][T][features], only the families with a
     * cached step (cpu.forward_at) are exported. Returns CDL_EUSAGE with "layer N [type]: ..."
     * for a configuration ONNX cannot express. */
    int (*export_onnx)(const Layer *l, const Net *net, OnnxGraph *g, Error *e);
    /* Sequence-to-sequence nets computing a mini-batch at its runtime length (core/net.h
     * net_set_rows): called for every layer in order after the net's rows_source and rows_target
     * changed, it sets l's shapes' rows (h) from its inputs' (the net's for an [embedding]) and
     * whatever its configuration derives from them. The rows never exceed those the layer was
     * sized for: its buffers stay those of net_resize, and its kernels, on every backend, compute
     * over the shapes as they are at the call, [batch][rows][C] packed. NULL: the family computes
     * at its sized shapes only. */
    void (*set_rows)(Layer *l, const Net *net);
    /* Image nets computing a mini-batch at a runtime spatial size (core/net.h net_set_size,
     * darknet's random=1): called for every layer in order after the net's in_shape height and
     * width changed, it sets l's in_shape and out_shape height and width from its inputs' (the
     * net's for input -1) and whatever its configuration derives from them; channels never
     * change. Returns CDL_EUSAGE with "layer N [type]: ..." when the configuration cannot take
     * that size (an empty window, inputs of a [route] that no longer agree). The kernels compute
     * over the shapes as they are, [batch][c][h][w] packed at the start of the buffers sized for
     * the largest size; net_set_size resizes every layer's kernels again at each change. NULL: the
     * family computes at its built size only. */
    int (*set_size)(Layer *l, const Net *net, Error *e);
    /* int8 inference (backend/cpu/net_quant.h): the index in l->params of the weights this layer
     * can run in int8, [channels][k] with channels = dims[0], or -1 when it cannot (a grouped
     * convolution, tied weights). Its forward then uses l->quant when set, and its resize takes
     * the work qgemm_float needs. NULL: the family has no int8 path. */
    int (*quant_weights)(const Layer *l);
    /* 1: `cdl quantize --calibrate` fixes the int8 input grid of this family (convolutions, as
     * PyTorch's static quantization); 0: its input is quantized on each batch's range. */
    int quant_calibrated;

    /* Capabilities: */
    /* 1: the layer is the loss (reads ctx->labels, ignores the delta it is seeded with); it is
     * the last layer, or followed only by a layer with follows_loss. */
    int is_loss;
    /* 1: the layer is a detection loss ([yolo]): it reads ctx->truth, not ctx->labels, may sit
     * anywhere (one per scale), and its backward ignores its delta. */
    int reads_truth;
    /* reads_truth families: the boxes of a sample's truth list the layer reads at most ([yolo]'s
     * max=); every sample gets the largest of the net's layers' slots (net_truth_boxes). */
    int (*truth_boxes)(const Layer *l);
    /* reads_truth families: darknet's jitter= of the layer, the random placement of the
     * detection data (AugmentConfig.box_jitter: the net's last such layer's); NULL: none. */
    float (*box_jitter)(const Layer *l);
    /* reads_truth families: darknet's multi-scale training keys of the layer, *random its
     * random= (0 off, 1 on, F > 1 on with the factor F) and *resize its resize= (0: not given),
     * which the net's last such layer sets for the run (train/multi_scale.h), or with random 0
     * for the training crop (AugmentConfig.box_resize, train/net_keys.h); NULL: none. */
    void (*multi_scale)(const Layer *l, float *random, float *resize);
    /* 1: the layer may only come right after the loss, as the last layer (darknet's [cost]). */
    int follows_loss;
    /* 1: the layer maps token ids (floats holding integers) to rows of params[0], a
     * [vocab][channels] table: its input has no gradient, and [linear] tie=1 borrows the table. */
    int reads_token_ids;
    /* 1: the layer's time goes to matrix products (profiling reports it against gemm speed). */
    int gemm_bound;
    /* 1: the layer works sample by sample, as fast per sample in a pass of any size: no
     * statistics over the pass's samples, no products whose rows are the samples at one time
     * step, per-sample draws keyed by StepContext.sample_offset, parameter gradients added to.
     * A sequence net of such layers alone trains in passes smaller than its mini-batch
     * (core/net_split.h). */
    int splits_batch;
    /* What the backward reads besides l->delta, its state and its parameters, for the memory
     * plan (core/net_memory.h), which reuses a buffer once nothing will read it; the zero default
     * is the safe one. 1: the backward never reads l->in[] (only their deltas, in_delta). */
    int backward_ignores_inputs;
    /* 1: the backward reads l->out only through layer_activation_backward. */
    int backward_ignores_output;
    /* 1: the backward honours Layer.in_delta_fresh, so that the net need not zero the input's
     * delta in a pass of its own (a family of several inputs: where two are one layer, both
     * are marked fresh, and it writes that delta once and adds to it after). */
    int writes_input_delta;
    /* Where darknet .weights files keep the layer's tensors (DARKNET_NO_WEIGHTS: nowhere). */
    DarknetWeightOrder darknet_weights;
} LayerType;

/* 1 when the family can be exported to ONNX. */
static inline int layer_type_exportable(const LayerType *t)
{
    return t->export_onnx != NULL;
}
/* Looks a family up by section name; NULL when unknown. */
const LayerType *layer_type_find(const char *name);
/* "convolutional, connected, ..." for error messages. */
const char *layer_type_names(void);

/* Declares a parameter of shape dims[0..n_dims) (n_dims <= PARAM_MAX_DIMS) during parse;
 * returns its Param. */
Param *layer_add_param(Layer *l, const char *name, int trainable, int decay, int n_dims,
                       const int64_t *dims);
/* The Param named name, or NULL. */
Param *layer_param(Layer *l, const char *name);
/* Every parameter ~ U(-bound, bound), drawn in declaration order: PyTorch's initialisation of
 * nn.Linear and its recurrent layers, with bound = 1/sqrt(fan). */
void layer_init_uniform(Layer *l, Rng *rng, float bound);

/* Returns CDL_EUSAGE with "FILE:LINE: layer N: [S] KEY=VALUE: WHY" at key's line (the
 * section's when absent, value then being the default the parser used). */
int layer_bad_key(const Layer *l, const Cfg *cfg, CfgSection *s, const char *key, int value,
                  const char *why, Error *e);
/* LayerType.set_rows of the families whose output has the rows of their input 0 and nothing
 * derived from them: in_shape.h and out_shape.h become input 0's rows. */
void layer_rows_follow_input(Layer *l, const Net *net);
/* The spatial size input k of l has now (net_set_size): its writer's out_shape, the net's in_shape
 * for input -1. */
Shape layer_input_shape(const Layer *l, const Net *net, int k);
/* LayerType.set_size of the families whose output has the height and width of their input 0:
 * in_shape and out_shape take input 0's. Never fails. */
int layer_size_follow_input(Layer *l, const Net *net, Error *e);
/* Shared parse helper for layers with an `activation=` key (default def). */
int layer_parse_activation(Layer *l, const Cfg *cfg, CfgSection *s, ActivationKind def, Error *e);
/* Shared parse helper for layers that read an earlier layer named by a required key (`from=` of
 * [shortcut], `source=` of [attention]; negative: counted back from this layer): sets *index to
 * its absolute index, or returns CDL_EUSAGE naming the key's line. */
int layer_parse_from(const Layer *l, const Cfg *cfg, CfgSection *s, const char *key, int *index,
                     Error *e);
/* Where a layer with an activation writes its pre-activation values: l->pre when the
 * activation is not linear, else l->out. layer_activate then fills l->out. */
static inline float *layer_activation_input(Layer *l)
{
    return l->pre ? l->pre : l->out;
}

/* The element type of layer_activation_input(l): float32 in a buffer of its own (Layer.pre), the
 * output's (Layer.storage) where it is the output. */
static inline ElemType layer_pre_storage(const Layer *l)
{
    return l->pre && l->pre != l->out ? ELEM_F32 : l->storage;
}

/* The activation step of the families' CPU kernels: defined by the CPU backend
 * (backend/cpu/layer_activation.c), declared here as layer_type_find is, and found by linking. */

/* l->out = f(l->pre) when the activation is not linear (nothing to do otherwise). */
void layer_activate(Layer *l, int batch);
/* Sequence layers' forward_at: layer_activate on row t ([h = t][w values]) of each sample. */
void layer_activate_row(Layer *l, int batch, int t);
/* Turns l->delta from dL/d(out) into dL/d(pre) in place. */
void layer_activation_backward(Layer *l, int batch);

#endif
