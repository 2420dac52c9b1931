/* Classifier evaluation. */
#include "train/evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "train/bleu.h"
#include "train/chrf.h"
#include "train/decode.h"
#include "train/net_keys.h"

/* Rank of the true class among the outputs (0 = predicted). */
static int rank_of(const float *p, int classes, int truth)
{
    int rank = 0;
    for (int k = 0; k < classes; k++)
        rank += p[k] > p[truth] || (p[k] == p[truth] && k < truth);
    return rank;
}

/* Adds the mini-batch of n samples whose outputs out [n][classes] the net just computed into r's
 * counts. */
static void tally(Net *net, const float *out, int n, EvalResult *r, int *top1, int *top5)
{
    const int *labels = net_batch_labels(net);
    for (int i = 0; i < n; i++) {
        const float *p = out + (size_t)i * (size_t)net->classes;
        int truth = labels[i], best = 0;
        for (int k = 1; k < net->classes; k++)
            best = p[k] > p[best] ? k : best;
        r->confusion[truth * r->classes + best]++;
        int rank = rank_of(p, net->classes, truth);
        *top1 += rank == 0;
        *top5 += rank < 5;
    }
}

int evaluate(Net *net, const SampleSource *src, const EvalOptions *opt, EvalResult *r, Error *e)
{
    memset(r, 0, sizeof *r);
    if (src->classes > net->classes)
        return error_set(e, CDL_EUSAGE,
                         "dataset has labels up to %d but the model outputs %d classes",
                         src->classes - 1, net->classes);
    const LoaderOptions lo = {.batch = net->batch,
                              .workers = opt->workers,
                              .prefetch = LOADER_PREFETCH_PER_WORKER * opt->workers,
                              .skip_bad = opt->skip_bad};
    Loader *loader;
    AugmentConfig aug;
    int st = net_augment(net, &aug, e);
    st = st ? st : loader_open(&loader, src, &aug, &lo, e);
    st = st ? st : loader_start_epoch(loader, 0, 0, e);
    if (st) {
        loader_close(loader);
        return st;
    }
    r->classes = net->classes;
    r->confusion = calloc((size_t)r->classes * (size_t)r->classes, sizeof *r->confusion);
    if (!r->confusion) {
        loader_close(loader);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    const int saved_train = net->train, saved_batch = net->batch;
    const float saved_divisor = net->loss_divisor;
    net->train = 0;
    net->loss_divisor = 1;
    double loss = 0;
    int top1 = 0, top5 = 0;
    for (int b = 0; b < loader_batches_per_epoch(loader) && !st; b++) {
        int n;
        st = loader_next(loader, net_host_input(net), net_host_labels(net), NULL, &n, e);
        if (st)
            break;
        net->batch = n;
        net_commit_batch(net);
        const float *out = net_forward_to_host(net, e);
        if (!out) {
            st = CDL_ERUNTIME;
            break;
        }
        loss += net->loss;
        tally(net, out, n, r, &top1, &top5);
    }
    r->skipped = loader_skipped(loader);
    loader_close(loader);
    net->train = saved_train;
    net->batch = saved_batch;
    net->loss_divisor = saved_divisor;
    if (st) {
        eval_result_free(r);
        return st;
    }
    r->samples = src->n;
    r->loss = loss / src->n;
    r->top1 = (double)top1 / src->n;
    r->top5 = (double)top5 / src->n;
    return CDL_OK;
}

/* Fills the net's input and labels with samples first .. first + net->batch - 1 of a set. */
typedef void (*TokenBatchFill)(const void *set, size_t first, Net *net);

/* A sequence net over `samples` samples of set in mini-batches (fill): the summed loss into *loss
 * and the next-token figures into r. A sequence-to-sequence net computes each mini-batch at its
 * longest pair's rows, as training does (net_fit_rows: the output and labels [batch][rows]).
 * Fails only where the device's passes do. */
static int evaluate_tokens(Net *net, size_t samples, TokenBatchFill fill, const void *set,
                           double *loss, EvalResult *r, Error *e)
{
    const int saved_train = net->train;
    const float saved_divisor = net->loss_divisor;
    const int fit_rows = net_can_set_rows(net);
    net->train = 0;
    net->loss_divisor = 1;
    *loss = 0;
    long tokens = 0, top1 = 0, top5 = 0;
    const float *out = NULL;
    for (size_t first = 0; first < samples; first += (size_t)net->batch) {
        fill(set, first, net);
        if (fit_rows)
            net_fit_rows(net);
        net_commit_batch(net);
        if (!(out = net_forward_to_host(net, e)))
            break;
        *loss += net->loss;
        const int *labels = net_batch_labels(net);
        const int rows = fit_rows ? net->rows_target : net->seq;
        for (int i = 0; i < net->batch * rows; i++) {
            const int truth = labels[i];
            if (truth < 0 || truth >= net->classes)
                continue;
            const int rank = rank_of(out + (size_t)i * (size_t)net->classes, net->classes, truth);
            tokens++;
            top1 += rank == 0;
            top5 += rank < 5;
        }
    }
    if (fit_rows)
        net_set_rows(net, net->source, net->seq);
    net->train = saved_train;
    net->loss_divisor = saved_divisor;
    if (!out)
        return CDL_ERUNTIME;
    r->per_token = 1;
    r->classes = net->classes;
    r->samples = (int)tokens;
    r->loss = *loss / (double)tokens;
    r->top1 = (double)top1 / (double)tokens;
    r->top5 = (double)top5 / (double)tokens;
    return CDL_OK;
}

static void fill_windows(const void *set, size_t first, Net *net)
{
    text_fill_in_order(set, first, net->batch, net->seq, net->in_shape.w > 1 ? net->in_shape.w : 0,
                       net_host_input(net), net_host_labels(net));
}

int evaluate_text(Net *net, const TokenStream *valid, EvalResult *r, Error *e)
{
    memset(r, 0, sizeof *r);
    const size_t windows = text_windows(valid, net->seq);
    if (!windows)
        return error_set(e, CDL_EUSAGE, "the validation text holds %zu tokens, fewer than seq=%d+1",
                         valid->n, net->seq);
    double loss;
    const int st = evaluate_tokens(net, windows, fill_windows, valid, &loss, r, e);
    if (st)
        return st;
    const size_t bytes = valid->token_bytes ? text_predicted_bytes(valid, 0, windows, net->seq) : 0;
    r->bits_per_byte = bytes ? loss / M_LN2 / (double)bytes : 0;
    return CDL_OK;
}

/* The validation pairs of tp in the order of their length (text_pairs_sort_by_length), so that a
 * mini-batch's pairs are of similar length and few of its rows are padding. */
typedef struct SortedPairs {
    const TextPairs *tp;
    TextPair *pairs; /* [tp->valid.n] */
} SortedPairs;

static void fill_pairs(const void *set, size_t first, Net *net)
{
    const SortedPairs *sorted = set;
    const size_t n = sorted->tp->valid.n;
    for (int b = 0; b < net->batch; b++) {
        const size_t i = first + (size_t)b;
        text_pairs_fill(sorted->tp, i < n ? &sorted->pairs[i] : NULL, b, net->source, net->seq,
                        net_host_input(net), net_host_labels(net));
    }
}

/* Greedy decoding of every pair of valid, net->batch at a time: r->decoded, r->exact_match,
 * and the corpus BLEU and chrF of the decoded targets' text against the pairs' (vocab's). */
static int decode_pairs(Net *net, const TextPairs *tp, const TextVocab *vocab, EvalResult *r,
                        Error *e)
{
    int first;
    int st = decode_first_layer(net, &first, e);
    if (st)
        return st;
    const int batch = net->batch, seq = net->seq;
    const int32_t **sources = malloc((size_t)batch * sizeof *sources);
    int *lengths = malloc((size_t)batch * sizeof *lengths), *n_out = malloc(batch * sizeof *n_out);
    int32_t *out = malloc((size_t)batch * (size_t)seq * sizeof *out);
    const size_t text_bytes = (size_t)seq * TEXT_TOKEN_MAX_BYTES + 1;
    char *hypothesis = malloc(text_bytes), *reference = malloc(text_bytes);
    if (!sources || !lengths || !n_out || !out || !hypothesis || !reference)
        st = error_set(e, CDL_ERUNTIME, "out of memory");
    BleuStats bleu = {0};
    ChrfStats chrf = {0};
    const int saved_train = net->train;
    net->train = 0;
    size_t exact = 0;
    const DecodeOptions cached = {.use_cache = 1};
    for (size_t start = 0; start < tp->valid.n && !st; start += (size_t)batch) {
        const size_t left = tp->valid.n - start;
        const int n = left < (size_t)batch ? (int)left : batch;
        const TextPair *p = tp->valid.pairs + start;
        for (int k = 0; k < n; k++) {
            sources[k] = tp->ids + p[k].source;
            lengths[k] = p[k].n_source;
        }
        st = decode_greedy(net, first, sources, lengths, n, tp->bos, tp->eos, &cached, out, n_out,
                           NULL, e);
        for (int k = 0; k < n && !st; k++) {
            const int32_t *decoded = out + (size_t)k * (size_t)seq;
            exact += n_out[k] == p[k].n_target &&
                     !memcmp(decoded, tp->ids + p[k].target, (size_t)p[k].n_target * sizeof *out);
            text_vocab_decode_ids(vocab, decoded, n_out[k], hypothesis);
            text_vocab_decode_ids(vocab, tp->ids + p[k].target, p[k].n_target, reference);
            if (bleu_add(&bleu, hypothesis, reference) || chrf_add(&chrf, hypothesis, reference))
                st = error_set(e, CDL_ERUNTIME, "out of memory");
        }
    }
    net->train = saved_train;
    r->decoded = (int)tp->valid.n;
    r->exact_match = (double)exact / (double)tp->valid.n;
    r->bleu = bleu_score(&bleu);
    r->chrf = chrf_score(&chrf);
    free(hypothesis);
    free(reference);
    free(sources);
    free(lengths);
    free(n_out);
    free(out);
    return st;
}

int evaluate_pairs(Net *net, const TextPairs *pairs, const TextVocab *vocab, EvalResult *r,
                   Error *e)
{
    memset(r, 0, sizeof *r);
    if (!pairs->valid.n)
        return error_set(e, CDL_EUSAGE, "no validation pairs fit the net");
    const size_t n = pairs->valid.n;
    const SortedPairs sorted = {pairs, malloc(n * sizeof *sorted.pairs)};
    if (!sorted.pairs)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    memcpy(sorted.pairs, pairs->valid.pairs, n * sizeof *sorted.pairs);
    text_pairs_sort_by_length(sorted.pairs, n);
    double loss;
    const int st = evaluate_tokens(net, n, fill_pairs, &sorted, &loss, r, e);
    free(sorted.pairs);
    return st ? st : vocab ? decode_pairs(net, pairs, vocab, r, e) : CDL_OK;
}

double eval_class_accuracy(const EvalResult *r, int c)
{
    int total = 0;
    for (int k = 0; k < r->classes; k++)
        total += r->confusion[c * r->classes + k];
    return total ? (double)r->confusion[c * r->classes + c] / total : 0;
}

void eval_result_free(EvalResult *r)
{
    free(r->confusion);
    r->confusion = NULL;
}
