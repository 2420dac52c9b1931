/* Timing runs: a net and a batch of random data that bench and profile time steps on. */
#include "train/timing_run.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/net_split.h"
#include "train/trainer.h"
#include "util/rng.h"

/* Fixed so that every run times the same data. */
#define TIMING_SEED 1

/* One optimizer batch of random images and labels, shaped for net. */
static int make_random_dataset(const Net *net, Dataset *d, Error *e)
{
    Rng rng;
    rng_seed(&rng, TIMING_SEED, 0xbe4c0000u);
    d->n = net->hyper.batch;
    d->c = net->in_shape.c;
    d->h = net->in_shape.h;
    d->w = net->in_shape.w;
    d->max_value = 255.0f;
    d->classes = net->classes;
    const size_t n = (size_t)d->n * shape_size(net->in_shape);
    d->pixels = malloc(n);
    d->labels = malloc((size_t)d->n * sizeof *d->labels);
    if (!d->pixels || !d->labels)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    for (size_t i = 0; i < n; i++)
        d->pixels[i] = (uint8_t)rng_below(&rng, 256);
    for (int i = 0; i < d->n; i++)
        d->labels[i] = (int)rng_below(&rng, (uint32_t)net->classes);
    return CDL_OK;
}

/* A sequence-to-sequence net's pairs over the random tokens: each a source of S tokens and a
 * target of T - 1 (with BOS and EOS, token ids 0 and 1), so that every row computes. */
static int make_random_pairs(TimingRun *t, Error *e)
{
    const size_t source = (size_t)t->net->source, seq = (size_t)t->net->seq;
    const size_t n = t->tokens.n / (source + seq);
    TextPair *pairs = malloc((n + 1) * sizeof *pairs);
    if (!pairs)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    for (size_t i = 0; i < n; i++)
        pairs[i] =
            (TextPair){i * (source + seq), i * (source + seq) + source, (int)source, (int)seq - 1};
    t->pairs = (TextPairs){t->tokens.ids, {pairs, n}, {NULL, 0}, 0, 1, 0};
    t->text.pairs = &t->pairs;
    return CDL_OK;
}

/* Random token ids below the net's outputs: as many as windows (or pairs) for a few batches. */
static int make_random_tokens(TimingRun *t, Error *e)
{
    Rng rng;
    rng_seed(&rng, TIMING_SEED, 0x7e4c0000u);
    t->tokens.n = 4 * (size_t)t->net->hyper.batch * (size_t)(t->net->source + t->net->seq + 1);
    if (!(t->tokens.ids = malloc(t->tokens.n * sizeof *t->tokens.ids)))
        return error_set(e, CDL_ERUNTIME, "out of memory");
    for (size_t i = 0; i < t->tokens.n; i++)
        t->tokens.ids[i] = (int32_t)rng_below(&rng, (uint32_t)t->net->classes);
    t->text = (TextBatches){&t->tokens, TIMING_SEED, NULL};
    int st = t->net->source > 0 ? make_random_pairs(t, e) : CDL_OK;
    if (st)
        return st;
    t->text_source = train_source_text(&t->text, t->net);
    return CDL_OK;
}

int timing_run_setup(TimingRun *t, Net *net, Optimizer *opt, long batch, int cuda_graph, Error *e)
{
    memset(t, 0, sizeof *t);
    t->net = net;
    t->opt = opt;
    t->runner.cuda_graph = cuda_graph;
    Hyper *h = &t->net->hyper;
    if (batch > 0) {
        h->batch = (int)batch;
        h->subdivisions = 1;
    }
    t->net->train = 1;
    t->net->loss_divisor = (float)h->batch * (float)net_labels_per_sample(t->net);
    int st = net_resize_split(t->net, net_training_split(t->net, omp_get_max_threads()), e);
    st = st ? st : step_runner_check(&t->runner, t->net, e);
    if (t->net->seq > 0)
        return st ? st : make_random_tokens(t, e);
    st = st ? st : make_random_dataset(t->net, &t->data, e);
    if (!st && !(t->order = malloc((size_t)t->data.n * sizeof *t->order)))
        st = error_set(e, CDL_ERUNTIME, "out of memory");
    for (int i = 0; !st && i < t->data.n; i++)
        t->order[i] = i;
    t->images = (DatasetBatches){&t->data, t->order};
    return st;
}

float timing_run_step(TimingRun *t)
{
    const int text = t->net->seq > 0;
    float loss = 0;
    Error e = {0};
    const int st = step_runner_step(
        &t->runner, t->net, t->opt, text ? t->text_source.fill : trainer_fill_from_dataset,
        text ? t->text_source.ctx : &t->images,
        train_learning_rate(&t->opt->settings, t->net->step, 0), NULL, &loss, &e);
    if (st && isfinite(loss) && !t->status) {
        t->status = st;
        t->error = e;
    }
    return loss;
}

void timing_run_free(TimingRun *t)
{
    dataset_free(&t->data);
    free(t->order);
    free(t->tokens.ids);
    free(t->pairs.train.pairs);
    memset(t, 0, sizeof *t);
}
