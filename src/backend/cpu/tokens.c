/* [tokens]' CPU kernels (layers/tokens.c has its meaning): the map's planes transposed into
 * token rows, the class token and the position embedding.
 *
 *   in  [batch][C][P]   out [batch][T][C], T = class_token + P
 */
#include "layers/tokens.h"

#include <string.h>

static void tokens_forward(Layer *l, const StepContext *ctx)
{
    const Tokens *t = l->priv;
    const int c = t->channels, p = t->patches, first = t->class_token;
    const float *token = t->token_param >= 0 ? l->params[t->token_param].data : NULL;
    const float *pos = t->pos_param >= 0 ? l->params[t->pos_param].data : NULL;
#pragma omp parallel for schedule(static) if ((size_t)ctx->batch * p * c >= 65536)
    for (int b = 0; b < ctx->batch; b++) {
        const float *in = l->in[0] + (size_t)b * c * p;
        float *out = l->out + (size_t)b * (first + p) * c;
        if (token)
            memcpy(out, token, (size_t)c * sizeof *out);
        for (int i = 0; i < p; i++)
            for (int k = 0; k < c; k++)
                out[(size_t)(first + i) * c + k] = in[(size_t)k * p + i];
        if (pos)
            for (size_t i = 0; i < (size_t)(first + p) * c; i++)
                out[i] += pos[i];
    }
}

/* d in[b][k][i] += delta[b][first + i][k]; d class_token[k] += sum_b delta[b][0][k];
 * d positional[j][k] += sum_b delta[b][j][k]. */
static void tokens_backward(Layer *l, const StepContext *ctx)
{
    const Tokens *t = l->priv;
    const int c = t->channels, p = t->patches, first = t->class_token;
    const size_t row = (size_t)(first + p) * c;
    if (t->token_param >= 0 && l->params[t->token_param].grad) {
        float *g = l->params[t->token_param].grad;
        for (int b = 0; b < ctx->batch; b++)
            for (int k = 0; k < c; k++)
                g[k] += l->delta[(size_t)b * row + k];
    }
    if (t->pos_param >= 0 && l->params[t->pos_param].grad) {
        float *g = l->params[t->pos_param].grad;
        for (int b = 0; b < ctx->batch; b++)
            for (size_t i = 0; i < row; i++)
                g[i] += l->delta[(size_t)b * row + i];
    }
    float *dx = l->in_delta[0];
    if (!dx)
        return;
#pragma omp parallel for schedule(static) if ((size_t)ctx->batch * p * c >= 65536)
    for (int b = 0; b < ctx->batch; b++) {
        const float *d = l->delta + (size_t)b * row + (size_t)first * c;
        float *x = dx + (size_t)b * c * p;
        for (int k = 0; k < c; k++)
            for (int i = 0; i < p; i++)
                x[(size_t)k * p + i] += d[(size_t)i * c + k];
    }
}

/* The family's step on the CPU (backend/cpu/cpu_backend.c looks it up by family). */
const LayerKernels cpu_tokens_kernels = {
    .forward = tokens_forward,
    .backward = tokens_backward,
};
