/* Greedy decoding and beam search through the public API: a source sentence to its target text
 * with a sequence-to-sequence model (train/decode.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cdl.h"
#include "cdl_model.h"
#include "data/text_pairs.h"
#include "train/decode.h"

int cdl_model_is_seq2seq(const cdl_model *model)
{
    return model->net.source > 0 && model->meta.vocab.n > 0;
}

int api_mark_id(const cdl_model *model, const char *mark, int *id, Error *e)
{
    int32_t ids[2];
    size_t n;
    const int st = text_vocab_encode(&model->meta.vocab, mark, 1, ids, &n, "the model", e);
    *id = ids[0];
    return st;
}

/* Usage errors before anything runs: a model of another kind, or one whose decoder cannot run
 * alone; *first, *bos and *eos for decode_greedy. */
static int check_model(const cdl_model *model, int *first, int *bos, int *eos, Error *e)
{
    int st = cdl_model_is_seq2seq(model)
                 ? CDL_OK
                 : error_set(e, CDL_EUSAGE,
                             "%s is not a sequence-to-sequence model: --source needs one trained "
                             "on paired text ([net] source=S, a type=pairs dataset)",
                             model->origin);
    st = st ? st : decode_first_layer(&model->net, first, e);
    st = st ? st : api_mark_id(model, TEXT_PAIR_BOS, bos, e);
    return st ? st : api_mark_id(model, TEXT_PAIR_EOS, eos, e);
}

/* source's ids into ids (room for strlen(source)), *n their count: a character outside the
 * vocabulary, no token or more than the net's source rows is a usage error. */
static int encode_source(const cdl_model *model, const char *source, int32_t *ids, int *n, Error *e)
{
    size_t count = 0;
    const int st =
        text_vocab_encode(&model->meta.vocab, source, strlen(source), ids, &count, "the source", e);
    *n = (int)count;
    if (!st && (count < 1 || count > (size_t)model->net.source))
        return error_set(e, CDL_EUSAGE, "the source has %zu tokens: the net reads 1 to %d", count,
                         model->net.source);
    return st;
}

int cdl_model_check_source(const cdl_model *model, const char *source, char *err, size_t err_size)
{
    Error e = {0};
    int first, bos, eos, n;
    int32_t *ids = malloc((strlen(source) + 1) * sizeof *ids);
    int st = ids ? check_model(model, &first, &bos, &eos, &e)
                 : error_set(&e, CDL_ERUNTIME, "out of memory");
    st = st ? st : encode_source(model, source, ids, &n, &e);
    free(ids);
    return st ? api_report(&e, err, err_size) : CDL_OK;
}

/* Every source's ids in one allocation (*all, freed by the caller): ids[k] and n_ids[k]. */
static int encode_sources(const cdl_model *model, const char *const *sources, int n, int32_t **all,
                          const int32_t **ids, int *n_ids, Error *e)
{
    size_t bytes = 0;
    for (int k = 0; k < n; k++)
        bytes += strlen(sources[k]);
    if (!(*all = malloc((bytes + 1) * sizeof **all)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    size_t at = 0;
    for (int k = 0; k < n; k++) {
        const int st = encode_source(model, sources[k], *all + at, &n_ids[k], e);
        if (st)
            return st;
        ids[k] = *all + at;
        at += (size_t)n_ids[k];
    }
    return CDL_OK;
}

/* targets [n]: row k of out [n][seq], its first tokens[k] ids, as text and ids, with its
 * log-probability and score, and source k's ids [n_ids[k]]. */
static int fill_targets(const cdl_model *model, const int32_t *out, const int *tokens,
                        const double *log_probs, float length_penalty,
                        const int32_t *const *source_ids, const int *n_ids, int n,
                        cdl_target *targets, Error *e)
{
    const int seq = model->net.seq;
    for (int k = 0; k < n; k++) {
        cdl_target *t = &targets[k];
        const int32_t *ids = out + (size_t)k * (size_t)seq;
        t->text = malloc((size_t)tokens[k] * TEXT_TOKEN_MAX_BYTES + 1);
        t->ids = malloc(((size_t)tokens[k] + 1) * sizeof *t->ids);
        t->source_ids = malloc((size_t)n_ids[k] * sizeof *t->source_ids);
        if (!t->text || !t->ids || !t->source_ids)
            return error_set(e, CDL_ERUNTIME, "out of memory");
        memcpy(t->source_ids, source_ids[k], (size_t)n_ids[k] * sizeof *t->source_ids);
        t->source_tokens = n_ids[k];
        text_vocab_decode_ids(&model->meta.vocab, ids, tokens[k], t->text);
        memcpy(t->ids, ids, (size_t)tokens[k] * sizeof *t->ids);
        t->tokens = tokens[k];
        t->log_prob = log_probs[k];
        const int length = tokens[k] < seq ? tokens[k] + 1 : tokens[k]; /* the end mark came */
        t->score = log_probs[k] / pow((double)length, (double)length_penalty);
    }
    return CDL_OK;
}

/* Every source's target into out [n][seq], tokens [n] and log_probs [n]: greedy in one batch,
 * or beam search one source after another. */
static int decode_all(cdl_model *model, const int32_t *const *ids, const int *n_ids, int n,
                      const cdl_decode_options *o, int first, int bos, int eos, int32_t *out,
                      int *tokens, double *log_probs, Error *e)
{
    Net *net = &model->net;
    const DecodeOptions how = {{o->temperature, o->top_k, o->top_p}, o->seed, !o->no_cache};
    const int rows = o->beam > 1 ? o->beam : n;
    int st = api_model_reserve(model, rows, e);
    if (st)
        return st;
    const int saved_train = net->train;
    net->batch = rows;
    net->train = 0;
    if (o->beam <= 1)
        st = decode_greedy(net, first, ids, n_ids, n, bos, eos, &how, out, tokens, log_probs, e);
    for (int k = 0; k < n && o->beam > 1 && !st; k++)
        st = decode_beam(net, first, ids[k], n_ids[k], o->beam, o->length_penalty, bos, eos, &how,
                         out + (size_t)k * (size_t)net->seq, &tokens[k], &log_probs[k], e);
    net->train = saved_train;
    return st;
}

void cdl_targets_free(cdl_target *targets, int n)
{
    for (int k = 0; k < n; k++) {
        free(targets[k].text);
        free(targets[k].ids);
        free(targets[k].source_ids);
        targets[k].text = NULL;
        targets[k].ids = NULL;
        targets[k].source_ids = NULL;
    }
}

int cdl_model_decode_batch(cdl_model *model, const char *const *sources, int n,
                           const cdl_decode_options *options, cdl_target *targets, char *err,
                           size_t err_size)
{
    Error e = {0};
    const cdl_decode_options greedy = {.beam = 1, .length_penalty = 1.0f};
    const cdl_decode_options *o = options ? options : &greedy;
    if (n > 0)
        memset(targets, 0, (size_t)n * sizeof *targets);
    int first = 0, bos = 0, eos = 0;
    const size_t rows = n > 0 ? (size_t)n : 1;
    int32_t *all = NULL, *out = malloc(rows * (size_t)model->net.seq * sizeof *out);
    const int32_t **ids = malloc(rows * sizeof *ids);
    int *n_ids = malloc(rows * sizeof *n_ids), *tokens = malloc(rows * sizeof *tokens);
    double *log_probs = malloc(rows * sizeof *log_probs);
    int st = n < 1 ? error_set(&e, CDL_EUSAGE, "decoding needs at least one source")
             : o->beam < 1
                 ? error_set(&e, CDL_EUSAGE, "--beam %d: a beam holds 1 or more targets", o->beam)
             : !out || !ids || !n_ids || !tokens || !log_probs
                 ? error_set(&e, CDL_ERUNTIME, "out of memory")
                 : check_model(model, &first, &bos, &eos, &e);
    st = st ? st : encode_sources(model, sources, n, &all, ids, n_ids, &e);
    st = st ? st : decode_all(model, ids, n_ids, n, o, first, bos, eos, out, tokens, log_probs, &e);
    st = st ? st
            : fill_targets(model, out, tokens, log_probs, o->length_penalty, ids, n_ids, n, targets,
                           &e);
    free(all);
    free(out);
    free(ids);
    free(n_ids);
    free(tokens);
    free(log_probs);
    if (!st)
        return CDL_OK;
    cdl_targets_free(targets, n);
    return api_report(&e, err, err_size);
}

int cdl_model_decode(cdl_model *model, const char *source, char **target, int *tokens, char *err,
                     size_t err_size)
{
    cdl_target t;
    const int st = cdl_model_decode_batch(model, &source, 1, NULL, &t, err, err_size);
    *target = st ? NULL : t.text;
    *tokens = st ? 0 : t.tokens;
    if (!st) {
        free(t.ids);
        free(t.source_ids);
    }
    return st;
}
