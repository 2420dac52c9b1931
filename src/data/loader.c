/* The parallel data loader. Mini-batch k of an epoch holds positions [k*batch, (k+1)*batch)
 * of that epoch's order; workers claim whole mini-batches in order, fill ring slot
 * k % slots, and the consumer takes them back in order, so the output never depends on
 * which worker made a batch. A worker never runs more than `prefetch` batches ahead of the
 * consumer, which bounds memory whatever the dataset size.
 *
 * Each batch is copied once on its way to the caller's buffer: samples that only need copying
 * (an in-memory dataset without augmentation) are gathered straight into it by the caller's
 * thread, without workers, since a ring slot would add a second copy of the same cost; the
 * others are decoded and augmented by the workers into a slot, which loader_next copies out. */
#include "data/loader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/mosaic.h"

/* One ready (or being filled) mini-batch. */
typedef struct Slot {
    float *x;     /* [batch][out_c][out_h][out_w] */
    int *y;       /* [batch] */
    float *truth; /* [batch][truth_boxes][TRUTH_FLOATS], or NULL without truth_boxes */
    int index;    /* mini-batch index within the epoch */
    int n, ready, status, skipped;
    size_t sample_floats; /* out_c * this mini-batch's out_h * out_w (LoaderOptions.batch_size) */
    Error error;
} Slot;

typedef struct Worker {
    Loader *loader;
    AugmentScratch scratch;
    pthread_t thread;
} Worker;

struct Loader {
    const SampleSource *src;
    AugmentConfig aug;
    LoaderOptions opt;
    size_t sample_floats;  /* out_c * out_h * out_w */
    size_t sample_truth;   /* truth_boxes * TRUTH_FLOATS */
    int batches;           /* per epoch (this rank's) */
    int ranks;             /* LoaderOptions.ranks, at least 1 */
    int *order;            /* [src->n]: the epoch's sample order */
    int epoch;             /* the epoch being produced */
    const Dataset *direct; /* in-memory samples that only need copying, else NULL */

    Slot *slots; /* [n_slots]; none without workers */
    int n_slots;
    Worker *workers; /* [opt.workers]; without workers, workers[0] serves the caller */
    int n_threads;   /* started worker threads */

    pthread_mutex_t mutex;
    pthread_cond_t work_cond;  /* a batch can be claimed, or quit */
    pthread_cond_t ready_cond; /* a slot became ready */
    pthread_cond_t idle_cond;  /* no worker is filling a slot */
    int started;               /* an epoch has been started */
    int next_claim;            /* next mini-batch a worker takes */
    int next_take;             /* next mini-batch loader_next returns */
    int busy;                  /* workers filling a slot */
    int quit;
    int skipped; /* replaced samples in the batches taken since the epoch started */
    /* Bumped by loader_start_epoch and loader_close: a worker whose claim is older drops
     * its batch (checked between samples, so restarting never waits for a whole batch). */
    atomic_uint generation;
};

/* The shuffled order of a training epoch: the same permutation the trainer has always
 * used, so checkpoints from before the loader resume identically. */
static void epoch_order(int *order, int n, uint64_t seed, int epoch)
{
    Rng rng;
    rng_seed(&rng, seed, 0x5eed0000u + (uint64_t)epoch);
    for (int i = 0; i < n; i++)
        order[i] = i;
    rng_shuffle(&rng, order, n);
}

/* Reads the sample at position pos of the epoch order into img, *label and (given) its truth
 * boxes, and its index into *index. With skip_bad an unreadable sample (image or label file) is
 * replaced by the next readable position (wrapping) and counted in *skipped. */
static int read_sample(Loader *l, int pos, Image *img, int *label, float *truth, int *index,
                       int *skipped, Error *e)
{
    const SampleSource *s = l->src;
    for (int tried = 0; tried < s->n; tried++) {
        *index = l->order[(pos + tried) % s->n];
        int st = s->read(s, *index, img, label, e);
        if (!st && truth && (st = s->read_boxes(s, *index, truth, l->opt.truth_boxes, e)))
            image_free(img);
        if (!st) {
            *skipped += tried > 0;
            return CDL_OK;
        }
        if (!l->opt.skip_bad)
            return st;
    }
    error_prefix(e, CDL_ERUNTIME, "no sample of the dataset can be read (the last: ");
    error_append(e, CDL_ERUNTIME, ")");
    return CDL_ERUNTIME;
}

/* Transforms img (sample `index`) into out [out_c][out_h][out_w]: a copy when nothing
 * changes it, else augment_train (or a mosaic of it, data/mosaic.h) with draws seeded by (seed,
 * epoch, index), or augment_eval; boxes (NULL: none) are the sample's, which a mosaic replaces by
 * its own, and placed says where they go. */
static int transform_sample(Loader *l, Worker *w, const AugmentConfig *aug, const Image *img,
                            int index, float *boxes, float *out, BoxPlacement *placed, Error *e)
{
    if (augment_is_identity(aug, img->c, img->h, img->w)) {
        memcpy(out, img->data, (size_t)img->c * img->h * img->w * sizeof *out);
        *placed = box_placement_identity();
        return CDL_OK;
    }
    if (l->opt.train) {
        Rng rng;
        augment_seed(&rng, l->opt.seed, l->epoch, index);
        return augment_train_mosaic(aug, l->src, img, boxes, boxes ? l->opt.truth_boxes : 0, &rng,
                                    &w->scratch, out, placed, e);
    }
    return augment_eval(aug, img, &w->scratch, out, placed)
               ? error_set(e, CDL_ERUNTIME, "out of memory augmenting a sample")
               : CDL_OK;
}

/* Fills x [n][...], y [n] and (with truth_boxes) truth [n][...] with mini-batch k at its size
 * (*sample_floats per image), stopping early (its content is then dropped by the caller) when the
 * loader restarts under generation. */
static int fill_batch(Loader *l, Worker *w, int k, unsigned generation, float *x, int *y,
                      float *truth, int *n, size_t *sample_floats, int *skipped, Error *e)
{
    AugmentConfig aug = l->aug;
    if (l->opt.batch_size)
        l->opt.batch_size(l->opt.batch_size_ctx, l->epoch, k, &aug.out_w, &aug.out_h);
    *sample_floats = (size_t)aug.out_c * (size_t)aug.out_h * (size_t)aug.out_w;
    const int first = (k * l->ranks + l->opt.rank) * l->opt.batch, left = l->src->n - first;
    *n = left < l->opt.batch ? left : l->opt.batch;
    *skipped = 0;
    if (l->direct) {
        dataset_fill_batch(l->direct, l->order + first, *n, x, y);
        return CDL_OK;
    }
    for (int i = 0; i < *n; i++) {
        if (atomic_load(&l->generation) != generation)
            return CDL_OK;
        Image img = {0};
        int index;
        BoxPlacement placed;
        float *boxes = l->opt.truth_boxes ? truth + (size_t)i * l->sample_truth : NULL;
        int st = read_sample(l, first + i, &img, &y[i], boxes, &index, skipped, e);
        st = st ? st
                : transform_sample(l, w, &aug, &img, index, boxes, x + (size_t)i * *sample_floats,
                                   &placed, e);
        image_free(&img);
        if (st)
            return st;
        if (boxes)
            boxes_place(boxes, l->opt.truth_boxes, &placed);
    }
    return CDL_OK;
}

static int can_claim(const Loader *l)
{
    return l->started && l->next_claim < l->batches && l->next_claim < l->next_take + l->n_slots;
}

static void *worker_main(void *arg)
{
    Worker *w = arg;
    Loader *l = w->loader;
    pthread_mutex_lock(&l->mutex);
    while (!l->quit) {
        if (!can_claim(l)) {
            pthread_cond_wait(&l->work_cond, &l->mutex);
            continue;
        }
        const int k = l->next_claim++;
        const unsigned generation = atomic_load(&l->generation);
        Slot *slot = &l->slots[k % l->n_slots];
        l->busy++;
        pthread_mutex_unlock(&l->mutex);
        int n, skipped;
        size_t sample_floats;
        int st = fill_batch(l, w, k, generation, slot->x, slot->y, slot->truth, &n, &sample_floats,
                            &skipped, &slot->error);
        pthread_mutex_lock(&l->mutex);
        if (atomic_load(&l->generation) == generation) {
            slot->index = k;
            slot->n = n;
            slot->sample_floats = sample_floats;
            slot->status = st;
            slot->skipped = skipped;
            slot->ready = 1;
            pthread_cond_broadcast(&l->ready_cond);
        }
        if (--l->busy == 0)
            pthread_cond_broadcast(&l->idle_cond);
    }
    pthread_mutex_unlock(&l->mutex);
    return NULL;
}

int loader_batches_per_epoch(const Loader *l)
{
    return l->batches;
}

int loader_skipped(const Loader *l)
{
    return l->skipped;
}

const SampleSource *loader_source(const Loader *l)
{
    return l->src;
}

static int check_options(const SampleSource *src, const AugmentConfig *aug,
                         const LoaderOptions *opt, Error *e)
{
    if (opt->truth_boxes < 0 || (opt->truth_boxes > 0 && !src->read_boxes))
        return error_set(e, CDL_EUSAGE,
                         "loader: a detection net reads truth boxes, which this dataset has not "
                         "(a darknet list with label files, or a COCO JSON, has)");
    if (aug->mosaic && opt->train && opt->truth_boxes == 0)
        return error_set(e, CDL_EUSAGE,
                         "[net] mosaic=1 needs a detection net (one that reads truth boxes)");
    if (opt->batch < 1 || opt->workers < 0 || (opt->workers > 0 && opt->prefetch < 1))
        return error_set(e, CDL_EUSAGE,
                         "loader: batch (%d) and prefetch (%d) must be at least 1, workers (%d) "
                         "at least 0",
                         opt->batch, opt->prefetch, opt->workers);
    if (src->n < 1)
        return error_set(e, CDL_EUSAGE, "loader: the dataset has no samples");
    if (opt->ranks > 1 && (!opt->drop_last || opt->rank < 0 || opt->rank >= opt->ranks))
        return error_set(e, CDL_EUSAGE,
                         "loader: rank %d of %d needs drop_last and 0 <= rank < ranks", opt->rank,
                         opt->ranks);
    if (opt->drop_last && src->n < opt->batch * (opt->ranks > 1 ? opt->ranks : 1))
        return error_set(e, CDL_EUSAGE, "the dataset has %d samples, fewer than a mini-batch of %d",
                         src->n, opt->batch);
    return opt->truth_boxes > 0 ? augment_check_boxes(aug, e) : CDL_OK;
}

/* Allocates the order, the ring slots and the workers' state (threads start later). */
static int allocate(Loader *l, Error *e)
{
    const int n_workers = l->opt.workers > 0 ? l->opt.workers : 1;
    l->order = malloc((size_t)l->src->n * sizeof *l->order);
    l->workers = calloc((size_t)n_workers, sizeof *l->workers);
    if (!l->order || !l->workers)
        return error_set(e, CDL_ERUNTIME, "loader: out of memory");
    for (int i = 0; i < n_workers; i++)
        l->workers[i].loader = l;
    if (l->opt.workers == 0)
        return CDL_OK;
    l->n_slots = l->opt.prefetch;
    l->slots = calloc((size_t)l->n_slots, sizeof *l->slots);
    if (!l->slots)
        return error_set(e, CDL_ERUNTIME, "loader: out of memory");
    for (int i = 0; i < l->n_slots; i++) {
        l->slots[i].x = malloc((size_t)l->opt.batch * l->sample_floats * sizeof(float));
        l->slots[i].y = malloc((size_t)l->opt.batch * sizeof(int));
        l->slots[i].truth =
            l->sample_truth ? malloc((size_t)l->opt.batch * l->sample_truth * sizeof(float)) : NULL;
        if (!l->slots[i].x || !l->slots[i].y || (l->sample_truth && !l->slots[i].truth))
            return error_set(e, CDL_ERUNTIME,
                             "loader: out of memory for %d prefetched mini-batches of %d",
                             l->n_slots, l->opt.batch);
    }
    return CDL_OK;
}

int loader_open(Loader **out, const SampleSource *src, const AugmentConfig *aug,
                const LoaderOptions *opt, Error *e)
{
    *out = NULL;
    int st = check_options(src, aug, opt, e);
    if (st)
        return st;
    Loader *l = calloc(1, sizeof *l);
    if (!l)
        return error_set(e, CDL_ERUNTIME, "loader: out of memory");
    l->src = src;
    l->aug = *aug;
    l->opt = *opt;
    l->sample_floats = (size_t)aug->out_c * (size_t)aug->out_h * (size_t)aug->out_w;
    l->sample_truth = (size_t)opt->truth_boxes * TRUTH_FLOATS;
    l->ranks = opt->ranks > 1 ? opt->ranks : 1;
    l->batches =
        opt->drop_last ? src->n / (opt->batch * l->ranks) : (src->n + opt->batch - 1) / opt->batch;
    const Dataset *d = source_dataset(src);
    l->direct = d && !opt->batch_size && augment_is_identity(aug, d->c, d->h, d->w) ? d : NULL;
    if (l->direct)
        l->opt.workers = 0;
    atomic_init(&l->generation, 0);
    pthread_mutex_init(&l->mutex, NULL);
    pthread_cond_init(&l->work_cond, NULL);
    pthread_cond_init(&l->ready_cond, NULL);
    pthread_cond_init(&l->idle_cond, NULL);
    st = allocate(l, e);
    for (int i = 0; !st && i < l->opt.workers; i++) {
        if (pthread_create(&l->workers[i].thread, NULL, worker_main, &l->workers[i]))
            st = error_set(e, CDL_ERUNTIME, "loader: cannot start worker thread %d", i + 1);
        else
            l->n_threads++;
    }
    if (st) {
        loader_close(l);
        return st;
    }
    *out = l;
    return CDL_OK;
}

void loader_close(Loader *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mutex);
    l->quit = 1;
    atomic_fetch_add(&l->generation, 1);
    pthread_cond_broadcast(&l->work_cond);
    pthread_mutex_unlock(&l->mutex);
    for (int i = 0; i < l->n_threads; i++)
        pthread_join(l->workers[i].thread, NULL);
    const int n_workers = l->opt.workers > 0 ? l->opt.workers : 1;
    for (int i = 0; l->workers && i < n_workers; i++)
        augment_scratch_free(&l->workers[i].scratch);
    for (int i = 0; l->slots && i < l->n_slots; i++) {
        free(l->slots[i].x);
        free(l->slots[i].y);
        free(l->slots[i].truth);
    }
    pthread_cond_destroy(&l->work_cond);
    pthread_cond_destroy(&l->ready_cond);
    pthread_cond_destroy(&l->idle_cond);
    pthread_mutex_destroy(&l->mutex);
    free(l->slots);
    free(l->workers);
    free(l->order);
    free(l);
}

int loader_start_epoch(Loader *l, int epoch, int first, Error *e)
{
    if (epoch < 0 || first < 0 || first > l->batches)
        return error_set(e, CDL_EUSAGE, "loader: cannot start epoch %d at mini-batch %d of %d",
                         epoch, first, l->batches);
    pthread_mutex_lock(&l->mutex);
    atomic_fetch_add(&l->generation, 1);
    while (l->busy > 0)
        pthread_cond_wait(&l->idle_cond, &l->mutex);
    if (l->opt.train)
        epoch_order(l->order, l->src->n, l->opt.seed, epoch);
    else
        for (int i = 0; i < l->src->n; i++)
            l->order[i] = i;
    for (int i = 0; i < l->n_slots; i++)
        l->slots[i].ready = 0;
    l->epoch = epoch;
    l->next_claim = l->next_take = first;
    l->skipped = 0;
    l->started = 1;
    pthread_cond_broadcast(&l->work_cond);
    pthread_mutex_unlock(&l->mutex);
    return CDL_OK;
}

int loader_next(Loader *l, float *x, int *y, float *truth, int *n, Error *e)
{
    *n = 0;
    if (!l->started || l->next_take >= l->batches)
        return error_set(e, CDL_EUSAGE, "loader: no mini-batch left (%d of %d taken this epoch)",
                         l->next_take, l->batches);
    if (l->opt.workers == 0) {
        int skipped;
        size_t sample_floats;
        Error error = {0};
        const unsigned generation = atomic_load(&l->generation);
        int st = fill_batch(l, &l->workers[0], l->next_take++, generation, x, y, truth, n,
                            &sample_floats, &skipped, &error);
        l->skipped += skipped;
        return st ? error_set(e, st, "%s", error.msg) : CDL_OK;
    }
    Slot *slot = &l->slots[l->next_take % l->n_slots];
    pthread_mutex_lock(&l->mutex);
    while (!slot->ready || slot->index != l->next_take)
        pthread_cond_wait(&l->ready_cond, &l->mutex);
    pthread_mutex_unlock(&l->mutex);
    /* The slot stays ours until next_take moves past it, so copy without the lock. */
    const int st = slot->status;
    *n = slot->n;
    if (st && e)
        *e = slot->error;
    else if (!st) {
        memcpy(x, slot->x, (size_t)slot->n * slot->sample_floats * sizeof *x);
        memcpy(y, slot->y, (size_t)slot->n * sizeof *y);
        if (l->sample_truth)
            memcpy(truth, slot->truth, (size_t)slot->n * l->sample_truth * sizeof *truth);
    }
    pthread_mutex_lock(&l->mutex);
    slot->ready = 0;
    l->skipped += slot->skipped;
    l->next_take++;
    pthread_cond_broadcast(&l->work_cond);
    pthread_mutex_unlock(&l->mutex);
    return st;
}
