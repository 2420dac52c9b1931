/* Greedy decoding, sampling and beam search with a sequence-to-sequence net: the input row, the
 * encoder once, the decoder per token. */
#include "train/decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/text_pairs.h"
#include "layers/attention.h"
#include "layers/embedding.h"
#include "layers/families.h"
#include "util/hash_table.h"

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

/* Runs the decoder for row t of the committed input: the cached step or all its rows. */
static void decoder_forward(Net *net, int first, int t, int use_cache)
{
    if (use_cache)
        net_forward_at(net, first, t);
    else
        net_forward_from(net, first);
}

int decode_greedy(Net *net, int first, const int32_t *const *sources, const int *n_sources, int n,
                  int bos, int eos, const DecodeOptions *o, int32_t *out, int *n_out,
                  double *log_probs, Error *e)
{
    if (net->train || n < 1 || n > net->batch)
        return error_set(e, CDL_EUSAGE,
                         "decoding needs a net in inference mode sized for the %d sources", n);
    for (int k = 0; k < n; k++) {
        n_out[k] = 0;
        if (log_probs)
            log_probs[k] = 0;
        if (n_sources[k] < 1 || n_sources[k] > net->source)
            return error_set(e, CDL_EUSAGE, "the source has %d tokens: the net reads 1 to %d",
                             n_sources[k], net->source);
    }
    float *weights = malloc(2 * (size_t)net->classes * sizeof *weights);
    if (!weights)
        return error_set(e, CDL_ERUNTIME, "out of memory");
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
            const float *p = probs + ((size_t)k * seq + (size_t)t) * net->classes;
            Rng rng;
            const uint64_t source_key =
                fnv1a_add(FNV1A_START, sources[k], (size_t)n_sources[k] * sizeof *sources[k]);
            rng_seed(&rng, o->seed, fnv1a_add(source_key, &t, sizeof t));
            const int id = sample_token(p, net->classes, &o->sample, &rng, weights);
            if (log_probs)
                log_probs[k] += log((double)p[id]);
            if (id == eos)
                continue;
            out[(size_t)k * seq + (size_t)n_out[k]++] = id;
            running = 1;
        }
        if (!running || t + 1 == net->seq)
            break;
        fill_input(net, sources, n_sources, n, bos, out, n_out);
        decoder_forward(net, first, t + 1, o->use_cache);
    }
    net->labels = saved_labels;
    free(weights);
    return CDL_OK;
}

/* A candidate of a beam step: hypothesis `from` extended by token `id`, its sum of
 * log-probabilities. */
typedef struct BeamCandidate {
    double score;
    int from, id;
} BeamCandidate;

/* Inserts c into best [*n] (at most cap, best first; ties keep the earlier arrival). */
static void keep_best(BeamCandidate *best, int *n, int cap, BeamCandidate c)
{
    int at = *n < cap ? (*n)++ : cap;
    if (at == cap && !(c.score > best[cap - 1].score))
        return;
    if (at == cap)
        at = cap - 1;
    while (at > 0 && c.score > best[at - 1].score) {
        best[at] = best[at - 1];
        at--;
    }
    best[at] = c;
}

int decode_beam(Net *net, int first, const int32_t *source, int n_source, int beam,
                float length_penalty, int bos, int eos, const DecodeOptions *o, int32_t *out,
                int *n_out, double *log_prob, Error *e)
{
    const int seq = net->seq, classes = net->classes;
    if (beam < 1 || beam > net->batch)
        return error_set(e, CDL_EUSAGE, "a beam of %d needs a net sized for %d samples", beam,
                         beam);
    if (beam == 1) /* one hypothesis: decode_greedy's, the most probable token (or a draw) */
        return decode_greedy(net, first, &source, &n_source, 1, bos, eos, o, out, n_out, log_prob,
                             e);
    if (n_source < 1 || n_source > net->source)
        return error_set(e, CDL_EUSAGE, "the source has %d tokens: the net reads 1 to %d", n_source,
                         net->source);
    const SampleOptions *s = &o->sample;
    if (sample_draws(s) || s->top_k > 0 || (s->top_p > 0 && s->top_p < 1))
        return error_set(e, CDL_EUSAGE,
                         "--temperature, --top-k and --top-p draw one target per source: not "
                         "with --beam %d, which keeps the %d most probable hypotheses",
                         beam, beam);
    const int use_cache = o->use_cache && net_can_gather_samples(net, first);
    /* the live hypotheses' tokens [beam][seq] (and the next step's), their scores, the rows'
     * sources, the candidates, the hypotheses each row extends (this step's and the next's) and
     * the decoder caches' scratch for moving rows */
    int32_t *tokens = malloc(2 * (size_t)beam * (size_t)seq * sizeof *tokens);
    double *scores = malloc(2 * (size_t)beam * sizeof *scores);
    const int32_t **sources = malloc((size_t)beam * sizeof *sources);
    int *n_sources = malloc((size_t)beam * sizeof *n_sources);
    int *lengths = malloc((size_t)beam * sizeof *lengths);
    BeamCandidate *best = malloc(2 * (size_t)beam * sizeof *best);
    int *from = malloc(2 * (size_t)beam * sizeof *from);
    float *scratch = NULL;
    if (from && use_cache) {
        for (int k = 0; k < beam; k++)
            from[k] = k;
        scratch = net->backend->alloc(net_gather_samples(net, first, from, beam, NULL) + 1,
                                      sizeof *scratch);
    }
    if (!tokens || !scores || !sources || !n_sources || !lengths || !best || !from ||
        (use_cache && !scratch)) {
        free(tokens), free(scores), free(sources), free(n_sources), free(lengths), free(best);
        free(from), net->backend->free(scratch);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    int32_t *next_tokens = tokens + (size_t)beam * (size_t)seq;
    double *next_scores = scores + beam, best_finished = -INFINITY, best_sum = 0;
    int *next_from = from + beam;
    for (int k = 0; k < beam; k++) {
        sources[k] = source;
        n_sources[k] = n_source;
    }
    int *saved_labels = net->labels;
    net->labels = NULL; /* no loss */
    int live = 1;
    scores[0] = 0;
    *n_out = 0;
    for (int t = 0; t < seq && live > 0; t++) {
        /* every row reads the source (the encoder runs once, for all of them); the rows past the
         * live ones hold BOS alone */
        for (int k = 0; k < beam; k++)
            lengths[k] = k < live ? t : 0;
        fill_input(net, sources, n_sources, beam, bos, tokens, lengths);
        if (t == 0)
            net_forward(net);
        else
            decoder_forward(net, first, t, use_cache);
        const float *probs = net_host_output(net);
        int n_best = 0;
        for (int k = 0; k < live; k++) {
            const float *p = probs + ((size_t)k * (size_t)seq + (size_t)t) * (size_t)classes;
            for (int id = 0; id < classes; id++)
                if (p[id] > 0)
                    keep_best(best, &n_best, 2 * beam,
                              (BeamCandidate){scores[k] + log((double)p[id]), k, id});
        }
        int next_live = 0;
        for (int c = 0; c < n_best && next_live < beam; c++) {
            const BeamCandidate *b = &best[c];
            const int ends = b->id == eos || t + 1 == seq;
            const int length = b->id == eos ? t : t + 1;
            if (ends) {
                const double finished = b->score / pow((double)t + 1, (double)length_penalty);
                if (finished > best_finished) {
                    best_finished = finished;
                    best_sum = b->score;
                    memcpy(out, tokens + (size_t)b->from * (size_t)seq, (size_t)t * sizeof *out);
                    if (b->id != eos)
                        out[t] = b->id;
                    *n_out = length;
                }
                continue;
            }
            int32_t *to = next_tokens + (size_t)next_live * (size_t)seq;
            memcpy(to, tokens + (size_t)b->from * (size_t)seq, (size_t)t * sizeof *to);
            to[t] = b->id;
            next_from[next_live] = b->from;
            next_scores[next_live++] = b->score;
        }
        /* A live hypothesis's sum only falls: the best score it can still reach is its sum over
         * the most favourable length (T with a penalty >= 0, its next one below 0). */
        const double reach = pow(length_penalty >= 0 ? (double)seq : (double)t + 2, length_penalty);
        live = 0;
        for (int k = 0; k < next_live; k++)
            if (next_scores[k] / reach > best_finished) {
                memcpy(tokens + (size_t)live * (size_t)seq, next_tokens + (size_t)k * (size_t)seq,
                       (size_t)seq * sizeof *tokens);
                from[live] = next_from[k];
                scores[live++] = next_scores[k];
            }
        if (use_cache && live > 0) /* each row's cache becomes its hypothesis's parent's */
            net_gather_samples(net, first, from, live, scratch);
    }
    net->labels = saved_labels;
    if (log_prob)
        *log_prob = best_sum;
    free(tokens), free(scores), free(sources), free(n_sources), free(lengths), free(best);
    free(from), net->backend->free(scratch);
    return CDL_OK;
}
