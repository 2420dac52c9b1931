/* The layer contract: every layer family fills a Layer at parse time and provides
 * the functions of a LayerType, registered by section name in layers/registry.c. */
#ifndef CDL_LAYER_H
#define CDL_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "io/cfg.h"
#include "ops/activation.h"
#include "util/error.h"
#include "util/rng.h"

typedef struct Net Net;
typedef struct OnnxGraph OnnxGraph;

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
    const struct LayerType *type;
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
    float *delta; /* dL/d(out); layers add into their inputs' deltas */
    float *pre;   /* pre-activation values, only when activation is not linear */
    /* Floats of the net's shared scratch buffer this layer needs per batch sample
     * (im2col columns and the like); the net allocates the maximum once. */
    size_t scratch_per_sample;
    void *priv; /* family-specific state, owned by the layer */
} Layer;

typedef struct LayerType {
    const char *name; /* cfg section name */
    /* Reads the section's keys, sets out_shape, activation, params (counts, flags),
     * inputs, flops, scratch_per_sample and priv. in_shape and inputs are preset to
     * the previous layer. Returns CDL_EUSAGE with "FILE:LINE: ..." on a bad cfg. */
    int (*parse)(Layer *l, const Cfg *cfg, CfgSection *s, const Net *net, Error *e);
    /* Initialises parameter values once slabs are assigned (may be NULL). */
    void (*init)(Layer *l, Rng *rng);
    /* (Re)allocates private per-batch buffers; never called inside the training step
     * (may be NULL). */
    int (*resize)(Layer *l, int batch, Error *e);
    void (*forward)(Layer *l, Net *net);
    /* Reads l->delta, adds parameter gradients into params[].grad and input
     * gradients into the inputs' delta buffers (skipped when those are NULL). */
    void (*backward)(Layer *l, Net *net);
    void (*destroy)(Layer *l); /* frees priv (may be NULL) */
    /* Appends the layer's inference graph to g (core/onnx_graph.h): reads its inputs with
     * onnx_input_nchw/onnx_input_flat, declares parameters with onnx_param and writes the
     * value named by onnx_output. NULL: the layer cannot be exported, and `cdl export onnx`
     * says so. Returns CDL_EUSAGE with "layer N [type]: ..." for a configuration ONNX
     * cannot express. */
    int (*export_onnx)(const Layer *l, const Net *net, OnnxGraph *g, Error *e);
    /* Sequence layers (NULL elsewhere): computes row t of l->out for every sample of the batch,
     * in inference mode, from row t of its inputs and what the forward or forward_at calls
     * before left in the layer (its outputs and caches for rows < t): generation extends a
     * sequence one token at a time with it (attention's key/value cache, a recurrent layer's
     * state). Must give the row forward gives, up to the rounding of matrix products over fewer
     * rows (BLAS may sum in another order). */
    void (*forward_at)(Layer *l, Net *net, int t);
} LayerType;

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
/* Shared parse helper for layers with an `activation=` key (default def). */
int layer_parse_activation(Layer *l, const Cfg *cfg, CfgSection *s, ActivationKind def, Error *e);
/* Where a layer with an activation writes its pre-activation values: l->pre when the
 * activation is not linear, else l->out. layer_activate then fills l->out. */
static inline float *layer_activation_input(Layer *l)
{
    return l->pre ? l->pre : l->out;
}
/* l->out = f(l->pre) when the activation is not linear (nothing to do otherwise). */
void layer_activate(Layer *l, int batch);
/* Sequence layers' forward_at: layer_activate on row t ([h = t][w values]) of each sample. */
void layer_activate_row(Layer *l, int batch, int t);
/* Turns l->delta from dL/d(out) into dL/d(pre) in place. */
void layer_activation_backward(Layer *l, int batch);

#endif
