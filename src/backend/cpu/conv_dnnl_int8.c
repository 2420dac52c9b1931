/* [convolutional] with int8 weights (l->quant) on oneDNN's int8 kernels (AVX-512 VNNI's brgconv
 * and jit_int8 on Zen 4): conv.c sends a layer here where its input grid is calibrated (static)
 * and the engine says oneDNN. The input is quantized to uint8 on the layer's grid into the
 * primitive's layout (nhwc) by quantize_nhwc, with the own kernels' codes (0..QUANT_CODE_MAX), the
 * int8 weights are reordered once (with the sums the zero point's correction takes), and the
 * primitive scales the int32 sums per channel and applies the bias, a batch norm folded into a
 * scale and a bias per channel, and relu, leaky or relu6, as post-ops, writing float32 nhwc that
 * nhwc_to_nchw (or a reorder) returns to NCHW. The own int8 kernels
 * (conv_int8.c) stay the reference: tests/unit/test_conv_int8_dnnl.c compares the two.
 *
 * In an int8 chain (conv_dnnl_int8_pass_codes, Layer.codes_to: a layer whose output only another
 * such layer reads, directly or through [maxpool]s), the writer's primitive requantizes its output
 * straight onto the reader's input grid (the scales, bias and activation bound divided by its
 * scale, then its zero point added, as post-ops) and writes the uint8 codes in nhwc, which the
 * reader's primitive takes as they are: neither reorders, and no float32 tensor is written
 * between them.
 *
 *   in [batch][c][h][w] (float32; codes [batch][h][w][c] with codes_from)
 *   -> out [batch][filters][out_h][out_w] (float32; codes [batch][out_h][out_w][filters], uint8 on
 *      the chain's grid, with codes_to; float32 [batch][out_h][out_w][filters] with nhwc_to, for a
 *      reader that takes that, conv_dnnl_int8_gives_nhwc)
 *   W  [filters][c][size][size] int8 (LayerQuant.values), one group
 */
#include <string.h>

#include "backend/cpu/bias_norm.h"
#include "backend/cpu/conv.h"
#include "backend/cpu/layer_quant.h"

/* The grid of the codes l writes (l->codes_to set): the input grid of its chain's last layer. */
static QuantParams codes_grid(const Layer *l)
{
    const Layer *end = l->codes_to;
    while (!end->quant)
        end = end->codes_to;
    return end->quant->input;
}

int conv_dnnl_int8_resize(Layer *l, int batch, LayerState *st, Error *e)
{
    Conv *cv = l->priv;
    ConvDnnl *dn = &cv->cpu->dnnl;
    const LayerQuant *q = l->quant;
    const int bn = cv->stage.batch_normalize;
    const ActivationKind act = l->activation;
    const Shape out = l->out_shape;
    const int fused = act == CDL_ACT_RELU || act == CDL_ACT_LEAKY || act == CDL_ACT_RELU6;
    DnnlConvDesc d = conv_dnnl_desc(l, batch, act, fused);
    d.int8 = 1;
    d.x_scale = q->input.scale;
    d.x_zero_point = q->input.zero_point;
    d.w_scales = q->scales;
    d.channel_scale = bn;
    d.x_codes = l->codes_from != NULL;
    if (l->codes_to) {
        d.y_codes = 1;
        d.y_scale = codes_grid(l).scale;
        d.y_zero_point = codes_grid(l).zero_point;
    }
    d.y_nhwc = l->nhwc_to != NULL;
    Error ignored = {0};
    if (dnnl_conv_prepare(&dn->dc, &d, &ignored) ||
        !strncmp(dn->dc.impl[DNNL_CONV_FWD], "ref", 3)) {
        dnnl_conv_release(&dn->dc);
        if (d.x_codes || d.y_codes || d.y_nhwc) /* pass_codes, gives_nhwc made the same */
            return error_set(e, CDL_ERUNTIME,
                             "layer %d [convolutional]: oneDNN refused its int8 chain's primitive",
                             l->index);
        return CDL_OK;
    }
    dn->on = dn->int8 = 1;
    dn->folded = bn;
    dn->fused = fused;
    l->engine = "dnnl";
    const size_t floats = (dn->dc.scratch_bytes + sizeof(float) - 1) / sizeof(float);
    const size_t per_sample = (floats + (size_t)batch - 1) / (size_t)batch;
    if (per_sample > l->scratch_per_sample)
        l->scratch_per_sample = per_sample;
    bias_norm_resize(&cv->stage, batch, st);
    const size_t packed_bytes = dnnl_conv_packed_weights_bytes(&dn->dc);
    dn->w_packed = layer_kept_floats(st, (packed_bytes + sizeof(float) - 1) / sizeof(float));
    dn->w_fold = layer_work_floats(st, bn ? (size_t)out.c : 0);
    dn->a_fold = layer_kept_floats(st, bn ? (size_t)out.c : 0);
    dn->b_fold = layer_kept_floats(st, bn || l->codes_to ? (size_t)out.c : 0);
    return CDL_OK;
}

/* 1 when l's oneDNN int8 primitive can write its output as reader's input codes and reader's
 * take them (both made, as prepare would make them, on kernels other than the reference): both
 * on oneDNN int8, reader's grid calibrated, l's activation fused or linear. */
int conv_dnnl_int8_pass_codes(const Layer *l, const Layer *reader)
{
    const ConvDnnl *w = &((const Conv *)l->priv)->cpu->dnnl;
    const ConvDnnl *r = &((const Conv *)reader->priv)->cpu->dnnl;
    if (!w->on || !w->int8 || !r->on || !r->int8 || !reader->quant->static_input ||
        !(w->fused || l->activation == CDL_ACT_LINEAR))
        return 0;
    DnnlConvDesc writes = w->dc.desc, reads = r->dc.desc;
    writes.y_codes = reads.x_codes = 1;
    writes.y_scale = reader->quant->input.scale;
    writes.y_zero_point = reader->quant->input.zero_point;
    int ok = 1;
    for (int k = 0; k < 2 && ok; k++) {
        DnnlConv trial = {0};
        Error ignored = {0};
        ok = !dnnl_conv_prepare(&trial, k ? &reads : &writes, &ignored) &&
             strncmp(trial.impl[DNNL_CONV_FWD], "ref", 3);
        dnnl_conv_release(&trial);
    }
    return ok;
}

/* 1 when l's oneDNN int8 primitive can write its float32 output in nhwc, its own layout (made so,
 * on kernels other than the reference). */
int conv_dnnl_int8_gives_nhwc(const Layer *l)
{
    const ConvDnnl *w = &((const Conv *)l->priv)->cpu->dnnl;
    if (!w->on || !w->int8)
        return 0;
    DnnlConvDesc d = w->dc.desc;
    d.y_nhwc = 1;
    DnnlConv trial = {0};
    Error ignored = {0};
    const int ok =
        !dnnl_conv_prepare(&trial, &d, &ignored) && strncmp(trial.impl[DNNL_CONV_FWD], "ref", 3);
    dnnl_conv_release(&trial);
    return ok;
}

/* The weights packed, and batch norm folded (its scale per channel is the fold of weights 1),
 * once for the forwards of the same weights. */
void conv_dnnl_int8_forward(Layer *l, const StepContext *ctx)
{
    Conv *cv = l->priv;
    ConvDnnl *dn = &cv->cpu->dnnl;
    if (!ctx->same_weights)
        dn->packed_ready = 0;
    if (!dn->packed_ready) {
        dnnl_conv_pack_weights(&dn->dc, l->quant->values, dn->w_packed);
        if (dn->folded) {
            for (int j = 0; j < cv->filters; j++)
                dn->w_fold[j] = 1.0f;
            bias_norm_fold(&cv->stage, l, ctx, dn->w_fold, 1, dn->a_fold, dn->b_fold);
        }
        if (l->codes_to) { /* the bias in units of the reader's codes */
            const float *b = dn->folded ? dn->b_fold : l->params[cv->stage.first_param].data;
            const float y_scale = codes_grid(l).scale;
            for (int j = 0; j < cv->filters; j++)
                dn->b_fold[j] = b[j] / y_scale;
        }
        dn->packed_ready = 1;
    }
    const float *b = dn->folded || l->codes_to ? dn->b_fold : l->params[cv->stage.first_param].data;
    void *y = dn->fused ? l->out : layer_activation_input(l);
    dnnl_conv_forward_int8(&dn->dc, l->in[0], dn->w_packed, dn->a_fold, b, y, ctx->exec->workspace);
    if (!dn->fused)
        layer_activate(l, ctx->batch);
}
