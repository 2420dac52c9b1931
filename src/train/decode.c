/* Greedy decoding of a sequence-to-sequence net: the input row, the encoder once, the decoder per
 * token. */
#include "train/decode.h"

#include "data/text_pairs.h"
#include "layers/attention.h"
#include "layers/embedding.h"
#include "layers/families.h"

/* Whether layer l reads the target rows of the net input: their [embedding], or an attention
 * masking their padding. */
static int reads_target(const Net *net, const Layer *l)
{
    if (l->type == &embedding_layer)
        return ((const Embedding *)l->priv)->first_row == net->source;
    const Attention *a = l->priv;
    return l->type == &attention_layer && a->key_padding && a->pad_first == net->source;
}

int decode_first_layer(const Net *net, int *first, Error *e)
{
    if (net->source <= 0)
        return error_set(e, CDL_EUSAGE,
                         "--source needs a sequence-to-sequence model ([net] source=S, trained "
                         "on paired text)");
    if (!net_can_forward_at(net))
        return error_set(e, CDL_EUSAGE,
                         "greedy decoding keeps the encoder's outputs between tokens: every layer "
                         "needs a cached step (forward_at) and no gradient checkpointing");
    *first = -1;
    for (int i = 0; i < net->n_layers && *first < 0; i++)
        if (net->layers[i].type == &embedding_layer && reads_target(net, &net->layers[i]))
            *first = i;
    for (int i = 0; i < net->n_layers; i++)
        if (reads_target(net, &net->layers[i]) && (*first < 0 || i < *first))
            return error_set(e, CDL_EUSAGE,
                             "layer %d reads the target rows before the target's [embedding]: "
                             "the decoder must start with it",
                             i);
    return *first < 0 ? error_set(e, CDL_EUSAGE, "the net has no [embedding] part=target") : CDL_OK;
}

/* The whole batch's input (text_pairs_input_row per sample; the samples past n all padding), as
 * net_commit_batch asks, committed. */
static void fill_input(Net *net, const int32_t *const *sources, const int *n_sources, int n,
                       int bos, const int32_t *out, const int *n_out)
{
    float *x = net_host_input(net);
    for (int b = 0; b < net->batch; b++)
        text_pairs_input_row(b < n ? sources[b] : NULL, b < n ? n_sources[b] : 0, bos,
                             b < n ? out + (size_t)b * (size_t)net->seq : NULL,
                             b < n ? n_out[b] : -1, net->source, net->seq,
                             x + (size_t)b * (size_t)(net->source + net->seq));
    net_commit_batch(net);
}

static int most_probable(const float *p, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        best = p[i] > p[best] ? i : best;
    return best;
}

int decode_greedy(Net *net, int first, const int32_t *const *sources, const int *n_sources, int n,
                  int bos, int eos, int32_t *out, int *n_out, Error *e)
{
    if (net->train || n < 1 || n > net->batch)
        return error_set(e, CDL_EUSAGE,
                         "decoding needs a net in inference mode sized for the %d sources", n);
    for (int k = 0; k < n; k++) {
        n_out[k] = 0;
        if (n_sources[k] < 1 || n_sources[k] > net->source)
            return error_set(e, CDL_EUSAGE, "the source has %d tokens: the net reads 1 to %d",
                             n_sources[k], net->source);
    }
    int *saved_labels = net->labels;
    net->labels = NULL; /* no loss */
    fill_input(net, sources, n_sources, n, bos, out, n_out);
    net_forward(net);
    const size_t seq = (size_t)net->seq;
    for (int t = 0; t < net->seq; t++) {
        int running = 0;
        const float *probs = net_host_output(net);
        for (int k = 0; k < n; k++) {
            if (n_out[k] != t) /* finished at an earlier row */
                continue;
            const int id =
                most_probable(probs + ((size_t)k * seq + (size_t)t) * net->classes, net->classes);
            if (id == eos)
                continue;
            out[(size_t)k * seq + (size_t)n_out[k]++] = id;
            running = 1;
        }
        if (!running || t + 1 == net->seq)
            break;
        fill_input(net, sources, n_sources, n, bos, out, n_out);
        net_forward_from(net, first);
    }
    net->labels = saved_labels;
    return CDL_OK;
}
