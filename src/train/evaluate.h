/* Evaluation of a classifier on a labelled dataset: loss, top-1/top-5 accuracy,
 * per-class accuracy and the confusion matrix. Samples go through the net's eval-time
 * preprocessing (augment_eval) in a Loader. */
#ifndef CDL_EVALUATE_H
#define CDL_EVALUATE_H

#include "core/net.h"
#include "data/source.h"
#include "data/text_data.h"

typedef struct EvalResult {
    int samples, classes; /* samples are predicted tokens when per_token */
    int per_token;        /* 1: a sequence net's next-token figures (evaluate_text) */
    double loss;          /* mean cross-entropy (nats per token when per_token) */
    double bits_per_byte; /* per_token: the cross-entropy in bits over the predicted tokens'
                             bytes of text (comparable across vocabularies); 0 else */
    double top1, top5;    /* fractions in [0,1] */
    int *confusion;       /* [classes][classes]: row = true class, column = predicted; NULL
                             when per_token */
    int skipped;          /* unreadable samples replaced (skip_bad) */
    /* evaluate_pairs with greedy decoding: the pairs decoded, and the fraction whose greedy
     * target is exactly theirs (0 and 0 when not measured) */
    int decoded;
    double exact_match;
    double bleu, chrf; /* with greedy decoding: sacreBLEU's corpus BLEU and chrF (train/bleu.h,
                          train/chrf.h) of the decoded targets' text, in [0, 100] */
} EvalResult;

typedef struct EvalOptions {
    int workers;  /* loader threads (0: read in the caller's thread) */
    int skip_bad; /* replace unreadable samples (counted) instead of failing */
} EvalOptions;

/* Runs net (eval mode, sized by net_resize) over every sample of src, in order, in
 * mini-batches of net->batch (the last one may be partial); restores net->train and
 * net->batch afterwards. */
int evaluate(Net *net, const SampleSource *src, const EvalOptions *opt, EvalResult *r, Error *e);
/* A sequence net (sized by net_resize) over the windows of valid side by side (text_data.h), in
 * mini-batches of net->batch: the mean cross-entropy per predicted token and the next-token
 * top-1/top-5 accuracy; no confusion matrix. Restores net->train. */
int evaluate_text(Net *net, const TokenStream *valid, EvalResult *r, Error *e);
/* A sequence-to-sequence net over the pairs of pairs->valid (text_pairs.h), as evaluate_text, in
 * mini-batches of pairs of similar length, each computed at its longest pair's rows: the mean
 * cross-entropy per target token (EOS included, padding not) and the top-1/top-5 accuracy of each
 * next target token given the true ones before it; given the vocabulary (NULL: not), also every
 * pair's greedy target (train/decode.h, net->batch at a time) against its own: r->decoded,
 * r->exact_match, and the BLEU and chrF of their text (a net whose decoder cannot run alone is
 * refused). */
int evaluate_pairs(Net *net, const TextPairs *pairs, const TextVocab *vocab, EvalResult *r,
                   Error *e);
void eval_result_free(EvalResult *r);
/* Fraction of class c's samples predicted as c (0 when the class has none). */
double eval_class_accuracy(const EvalResult *r, int c);

#endif
