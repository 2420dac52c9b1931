/* [convolutional] on oneDNN (backend/cpu/dnnl_conv.h), the engine of [net] engine=dnnl, or
 * engine=auto where dnnl_conv_preferred says so for the layer's shape (conv.c chooses): the
 * convolution reorders the same NCHW tensors to and from its blocked layouts: forward with the bias
 * fused (and relu or leaky too when there is no batch norm), backward data, and backward weights
 * with the bias gradient; batch norm and the other activations stay as on the reference. oneDNN's
 * blocked copies of the tensors and its scratchpad are in the net's shared scratch buffer (resize
 * raises the layer's scratch to what they need); its reorders add the gradients (the += contract).
 * A layer falls back to the reference when oneDNN has only its slow reference implementation for it
 * ("ref:any"). In precision=bf16 the layer runs on oneDNN (DnnlConvDesc.bf16: x, w and dy rounded)
 * on its bf16 kernels where they outrun its float32 ones, else on those on rounded copies. In an
 * inference net (no gradients) batch norm's running statistics are folded into the weights and
 * bias (batchnorm_fold; once for the forwards of the same weights, ConvDnnl.w_packed), so that
 * oneDNN applies them with relu, leaky or relu6 fused as without batch norm; and the input and
 * output pass in oneDNN's blocked layout nChw8c where the forward's are that and the neighbours
 * take it too (conv_dnnl_layout, Layer.blocked: net_resize decides), in inference forwards only.
 * Built without oneDNN (make DNNL=0), dnnl_conv_prepare fails and no layer comes here.
 *
 *   in [batch][c][h][w] -> out [batch][filters][out_h][out_w]
 */
#include <string.h>

#include "backend/cpu/bias_norm.h"
#include "backend/cpu/conv.h"
#include "backend/cpu/cpu_options.h"

/* An inference forward's Winograd twin of dn->dc (prepared), where [net] winograd=1 asks for
 * it and oneDNN has Winograd kernels for the shape: a 3x3 stride-1 one-group float32
 * convolution of whole 16-channel blocks in and out (so that it takes and gives the layouts
 * dn->dc does); dn->wino released otherwise. */
static void conv_dnnl_winograd_prepare(ConvDnnl *dn, const DnnlConvDesc *d, int asked)
{
    Error ignored = {0};
    DnnlConvDesc w = *d;
    w.winograd_inference = 1;
    if (!asked || d->backward || d->data_grad || d->bf16 || !dnnl_conv_is_3x3_stride1(d) ||
        d->groups != 1 || d->in_c % 16 || d->out_c % 16 || !dnnl_conv_lanes_native() ||
        dnnl_conv_prepare(&dn->wino, &w, &ignored) ||
        !strstr(dn->wino.impl[DNNL_CONV_FWD], "wino") ||
        dnnl_conv_blocked(&dn->wino, DNNL_CONV_X_BLOCKED) !=
            dnnl_conv_blocked(&dn->dc, DNNL_CONV_X_BLOCKED) ||
        dnnl_conv_blocked(&dn->wino, DNNL_CONV_Y_BLOCKED) !=
            dnnl_conv_blocked(&dn->dc, DNNL_CONV_Y_BLOCKED))
        dnnl_conv_release(&dn->wino);
}

DnnlConvDesc conv_dnnl_desc(const Layer *l, int batch, ActivationKind act, int fused)
{
    const Conv *cv = l->priv;
    const Shape in = l->in_shape, out = l->out_shape;
    return (DnnlConvDesc){
        .batch = batch,
        .in_c = in.c,
        .in_h = in.h,
        .in_w = in.w,
        .out_c = out.c,
        .out_h = out.h,
        .out_w = out.w,
        .win = cv->win,
        .groups = cv->groups,
        .eltwise = fused,
        .act = act,
    };
}

int conv_dnnl_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    Conv *cv = l->priv;
    ConvCpu *cpu = cv->cpu;
    ConvDnnl *dn = &cpu->dnnl;
    const int backward = l->params[CONV_WEIGHTS].grad != NULL;
    const int bn = cv->stage.batch_normalize;
    const Shape in = l->in_shape, out = l->out_shape;
    dn->folded = bn && !backward;
    const ActivationKind act = dn->sum_act ? (ActivationKind)(dn->sum_act - 1) : l->activation;
    /* the derivatives of relu6 and the smooth ones read their input (l->pre), which a fused
     * forward leaves unwritten: fused in inference only (mobilenet_v3's hardswish and
     * hardsigmoid, efficientnet's and regnet's swish and logistic) */
    const int smooth = act == CDL_ACT_RELU6 || act == CDL_ACT_LOGISTIC || act == CDL_ACT_SWISH ||
                       act == CDL_ACT_HARDSWISH || act == CDL_ACT_HARDSIGMOID;
    dn->fused = (!bn || dn->folded) &&
                (act == CDL_ACT_RELU || act == CDL_ACT_LEAKY || (smooth && !backward));
    DnnlConvDesc d = conv_dnnl_desc(l, batch, act, dn->fused);
    d.bias = (!bn && cv->stage.has_bias) || dn->folded;
    d.sum = dn->sum_act != 0;
    d.backward = d.data_grad = backward;
    d.bf16 = l->precision == GEMM_BF16;
    int rc = dnnl_conv_prepare(&dn->dc, &d, e);
    if (rc)
        return rc;
    for (int k = 0; k < DNNL_CONV_PRIMS; k++)
        if (!strncmp(dn->dc.impl[k], "ref", 3)) {
            dnnl_conv_release(&dn->dc);
            return CDL_OK;
        }
    dn->on = 1;
    l->engine = "dnnl";
    conv_dnnl_winograd_prepare(dn, &d, cpu_options(st->exec)->winograd);
    const size_t scratch = dn->dc.scratch_bytes > dn->wino.scratch_bytes ? dn->dc.scratch_bytes
                                                                         : dn->wino.scratch_bytes;
    const size_t floats = (scratch + sizeof(float) - 1) / sizeof(float);
    const size_t per_sample = (floats + (size_t)batch - 1) / (size_t)batch;
    if (per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
    bias_norm_resize(&cv->stage, batch, st);
    const size_t packed_bytes =
        backward ? 0 : dnnl_conv_packed_weights_bytes(dn->wino.prepared ? &dn->wino : &dn->dc);
    dn->w_packed = layer_kept_floats(st, (packed_bytes + sizeof(float) - 1) / sizeof(float));
    dn->w_fold = layer_work_floats(st, dn->folded ? l->params[CONV_WEIGHTS].count : 0);
    dn->b_fold = packed_bytes ? layer_kept_floats(st, dn->folded ? (size_t)out.c : 0)
                              : layer_work_floats(st, dn->folded ? (size_t)out.c : 0);
    /* a folded layer's training forward (the reference's) rounds into these in bf16 */
    const int bf16_ref = dn->folded && d.bf16;
    cpu->w_rounded = layer_state_floats(st, bf16_ref ? l->params[CONV_WEIGHTS].count : 0);
    cpu->x_rounded = layer_state_floats(
        st, bf16_ref && (cpu->direct || cpu->depthwise) ? (size_t)batch * shape_size(in) : 0);
    return CDL_OK;
}

/* A folded layer on oneDNN with a linear activation, whose output is nChw8c, adds the shortcut's
 * other input and applies relu, leaky, relu6 or nothing after it as post-ops
 * (LayerKernels.fuse_sum). */
int conv_dnnl_fuse_sum(Layer *l, int act)
{
    ConvDnnl *dn = &((Conv *)l->priv)->cpu->dnnl;
    dn->sum_act = 0;
    if (act < 0 || !dn->on || !dn->folded || dn->int8 || l->activation != CDL_ACT_LINEAR ||
        !(l->blocked >> LAYER_OUT_BIT & 1) ||
        (act != CDL_ACT_LINEAR && act != CDL_ACT_RELU && act != CDL_ACT_LEAKY &&
         act != CDL_ACT_RELU6))
        return 0;
    dn->sum_act = act + 1;
    return 1;
}

/* A layer on oneDNN, where the batch norm (folded, or bias_norm's nChw8c kernels in training)
 * and the activation (elementwise) take any layout, takes its input and gives its output in
 * nChw8c where its primitives' own layouts are that (dnnl_conv_blocked: in a training net the
 * backward's dy and dx too), each apart. */
int conv_dnnl_layout(const Layer *l, int k)
{
    const ConvDnnl *dn = &((const Conv *)l->priv)->cpu->dnnl;
    if (!dn->on || (dn->folded && l->blocked >> LAYER_TRAIN_BIT & 1))
        return LAYOUT_PLAIN; /* a folded layer's training forward is the reference's */
    return dnnl_conv_blocked(&dn->dc, k < 0 ? DNNL_CONV_Y_BLOCKED : DNNL_CONV_X_BLOCKED)
               ? LAYOUT_FREE
               : LAYOUT_PLAIN;
}

/* A float32 layer on oneDNN in an inference net gives its output (which: DNNL_CONV_Y_BLOCKED) or
 * takes its input (DNNL_CONV_X_BLOCKED) in nhwc where its forward's primitive has that layout
 * (dnnl_conv_nhwc), unless a [shortcut]'s sum is fused into it (LayerKernels.gives_nhwc,
 * takes_nhwc: a chain of such layers passes nhwc without reorders between them). */
int conv_dnnl_nhwc(const Layer *l, int which)
{
    const ConvDnnl *dn = &((const Conv *)l->priv)->cpu->dnnl;
    return dn->on && !dn->int8 && !dn->sum_act && !dn->wino.prepared &&
           dnnl_conv_nhwc(&dn->dc, which);
}

/* dnnl_conv_forward's and _backward's blocked for this pass (Layer.blocked), and the nhwc
 * hand-offs (Layer.nhwc_to, nhwc_from) that hold in it (layer_nhwc_in). */
static unsigned dnnl_blocked(const Layer *l, const StepContext *ctx)
{
    const unsigned b = layer_blocked(l, ctx);
    const int nhwc_in = layer_nhwc_in(l, ctx),
              nhwc_out = l->nhwc_to && layer_nhwc_in(l->nhwc_to, ctx);
    return (b & 1 || nhwc_in ? DNNL_CONV_X_BLOCKED : 0) |
           (b >> LAYER_OUT_BIT & 1 || nhwc_out ? DNNL_CONV_Y_BLOCKED : 0);
}

int conv_dnnl_forward_runs(const Layer *l, const StepContext *ctx)
{
    const ConvDnnl *dn = &((const Conv *)l->priv)->cpu->dnnl;
    return dn->on && !(dn->folded && ctx->train);
}

/* oneDNN takes float32 x and w in either precision (in bf16 its reorders round them). */
void conv_dnnl_forward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    ConvDnnl *dn = &cv->cpu->dnnl;
    const int batch = ctx->batch;
    const float *x = l->in[0];
    const int bn = cv->stage.batch_normalize && !dn->folded;
    const float *w = l->params[CONV_WEIGHTS].data;
    const Param *biases = bn ? NULL : bias_norm_biases(&cv->stage, l);
    const float *b = biases ? biases->data : NULL;
    /* An inference net's steady primitive (Winograd's where prepared) reads the weights packed in
     * its layout, once per weights; Winograd's transform costs many direct forwards (0.9 s for
     * resnet18's), so the first forward of new weights runs the direct one on them instead, and
     * only a second one of the same weights packs them (a one-image predict never does). */
    DnnlConv *steady = dn->wino.prepared ? &dn->wino : &dn->dc;
    if (!ctx->same_weights)
        dn->packed_ready = 0;
    const int packed = dn->w_packed && (dn->packed_ready || ctx->same_weights || steady == &dn->dc);
    if (dn->folded && !(packed && dn->packed_ready)) {
        const Param *pw = &l->params[CONV_WEIGHTS];
        bias_norm_fold(&cv->stage, l, ctx, w, pw->count / (size_t)cv->filters, dn->w_fold,
                       dn->b_fold);
        w = dn->w_fold;
    }
    b = dn->folded ? dn->b_fold : b;
    unsigned blocked = dnnl_blocked(l, ctx);
    DnnlConv *dc = packed ? steady : &dn->dc;
    if (packed) {
        if (!dn->packed_ready)
            dnnl_conv_pack_weights(steady, w, dn->w_packed);
        dn->packed_ready = 1;
        w = dn->w_packed;
        blocked |= DNNL_CONV_W_PACKED;
    }
    /* with batch norm, its input buffer when its fused pass keeps it (else l->out) */
    float *y = bn          ? bias_norm_product_output(&cv->stage, l, ctx)
               : dn->fused ? l->out
                           : layer_activation_input(l);
    if (dn->sum_act) { /* folded: an inference forward */
        y = l->sum_into->out;
        const size_t n = (size_t)batch * shape_size(l->out_shape);
#pragma omp parallel for schedule(static) if (n > CONV_PARALLEL_MIN)
        for (size_t i = 0; i < n; i += CONV_COPY_BLOCK)
            memcpy(y + i, l->sum_into->in[1] + i,
                   (n - i < CONV_COPY_BLOCK ? n - i : CONV_COPY_BLOCK) * sizeof *y);
    }
    dnnl_conv_forward(dc, x, w, b, y, ctx->exec->workspace, blocked);
    if (bn && bias_norm_forward_activated(&cv->stage, l, ctx, y))
        return;
    if (bn)
        bias_norm_forward(&cv->stage, l, ctx, l->out, layer_activation_input(l));
    if (!dn->fused && !dn->sum_act)
        layer_activate(l, batch);
}

void conv_dnnl_backward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    const int bn = cv->stage.batch_normalize;
    Param *w = &l->params[CONV_WEIGHTS], *b = bn ? NULL : bias_norm_biases(&cv->stage, l);
    dnnl_conv_backward(&cv->cpu->dnnl.dc, l->in[0], l->delta, w->data, l->in_delta[0], w->grad,
                       b ? b->grad : NULL, ctx->exec->workspace, dnnl_blocked(l, ctx),
                       l->in_delta_fresh[0]);
}
