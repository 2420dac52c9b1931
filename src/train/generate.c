/* Token-by-token generation: context bookkeeping, the cached and uncached forward. */
#include "train/generate.h"

#include <stdlib.h>
#include <string.h>

/* Writes token id at row t of the net's input: its id, or a one-hot row when the net takes
 * one-hot tokens (inputs = vocabulary). */
static void set_input_token(Net *net, int t, int id)
{
    const int width = net->in_shape.w;
    float *row = net_host_input(net) + (size_t)t * (size_t)width;
    if (width == 1) {
        row[0] = (float)id;
        return;
    }
    memset(row, 0, (size_t)width * sizeof *row);
    if (id >= 0 && id < width)
        row[id] = 1.0f;
}

/* Full forward over ctx[0..len): the rows past len keep whatever they hold (causal layers never
 * read them for rows < len). */
static void forward_context(Net *net, const int32_t *ctx, int len)
{
    for (int t = 0; t < len; t++)
        set_input_token(net, t, ctx[t]);
    net_commit_batch(net);
    net_forward(net);
}

/* Refuses a net or prompt generation cannot start from. */
static int check_start(const Net *net, size_t n_prompt, Error *e)
{
    if (net->seq <= 0 || net->batch != 1)
        return error_set(e, CDL_EUSAGE, "generation needs a sequence net sized for one sample");
    if (!n_prompt)
        return error_set(e, CDL_EUSAGE, "the prompt is empty: it needs at least one token");
    return CDL_OK;
}

int generate_next_probs(Net *net, const int32_t *prompt, size_t n_prompt, float *probs, Error *e)
{
    const int st = check_start(net, n_prompt, e);
    if (st)
        return st;
    const int len = n_prompt < (size_t)net->seq ? (int)n_prompt : net->seq;
    const int saved_train = net->train;
    int *saved_labels = net->labels;
    net->train = 0;
    net->labels = NULL; /* no loss */
    forward_context(net, prompt + n_prompt - (size_t)len, len);
    memcpy(probs, net_host_output(net) + (size_t)(len - 1) * (size_t)net->classes,
           (size_t)net->classes * sizeof *probs);
    net->labels = saved_labels;
    net->train = saved_train;
    return CDL_OK;
}

int generate_tokens(Net *net, const int32_t *prompt, size_t n_prompt, const GenerateOptions *o,
                    TokenSink sink, void *sink_ctx, Error *e)
{
    const int seq = net->seq;
    const int st = check_start(net, n_prompt, e);
    if (st)
        return st;
    const int cached = o->use_cache && net_can_forward_at(net);
    int32_t *ctx = malloc((size_t)seq * sizeof *ctx);
    float *weights = malloc(2 * (size_t)net->classes * sizeof *weights);
    if (!ctx || !weights) {
        free(ctx);
        free(weights);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    int len = n_prompt < (size_t)seq ? (int)n_prompt : seq;
    memcpy(ctx, prompt + n_prompt - (size_t)len, (size_t)len * sizeof *ctx);
    const int saved_train = net->train;
    net->train = 0;
    int *saved_labels = net->labels;
    net->labels = NULL; /* no loss */
    forward_context(net, ctx, len);
    const size_t row = (size_t)net->classes;
    for (int i = 0; i < o->tokens; i++) {
        Rng rng;
        rng_seed(&rng, o->seed, 0x6e0000000000ull ^ (uint64_t)i);
        const int id = sample_token(net_host_output(net) + (size_t)(len - 1) * row, net->classes,
                                    &o->sample, &rng, weights);
        sink(sink_ctx, id);
        if (i + 1 == o->tokens)
            break;
        if (len == seq) { /* full: keep the last half, with or without the cache alike */
            const int keep = seq / 2 > 0 ? seq / 2 : 1;
            memmove(ctx, ctx + (seq - keep), (size_t)keep * sizeof *ctx);
            len = keep;
            if (cached)
                forward_context(net, ctx, len);
        }
        ctx[len++] = id;
        if (cached) {
            /* the whole context: the host's input is double-buffered (net_commit_batch) */
            for (int t = 0; t < len; t++)
                set_input_token(net, t, ctx[t]);
            net_commit_batch(net);
            net_forward_at(net, 0, len - 1);
        } else {
            forward_context(net, ctx, len);
        }
    }
    net->labels = saved_labels;
    net->train = saved_train;
    free(ctx);
    free(weights);
    return CDL_OK;
}
