/* The training loop. Every random choice derives from (seed, epoch) or (seed, step), so a
 * run resumed from a checkpoint at any step continues exactly as the uninterrupted run. */
#include "train/trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/sgd.h"
#include "util/timer.h"

/* The sample order of one epoch. */
static void epoch_order(int *perm, int n, uint64_t seed, int epoch)
{
    Rng rng;
    rng_seed(&rng, seed, 0x5eed0000u + (uint64_t)epoch);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    rng_shuffle(&rng, perm, n);
}

float trainer_step_with(Net *net, float *velocity, BatchFill fill, void *ctx, float lr)
{
    const int subdivisions = net->hyper.subdivisions;
    float loss = 0;
    for (int sub = 0; sub < subdivisions; sub++) {
        fill(net, sub, ctx);
        net->draw_id = net->step * (uint64_t)subdivisions + (uint64_t)sub;
        net_forward(net);
        loss += net->loss;
        net_backward(net);
    }
    sgd_step(net, velocity, lr);
    net->step++;
    return loss;
}

typedef struct DatasetBatches {
    const Dataset *data;
    const int *order;
} DatasetBatches;

static void fill_from_dataset(Net *net, int sub, void *ctx)
{
    const DatasetBatches *b = ctx;
    dataset_fill_batch(b->data, b->order + (size_t)sub * (size_t)net->batch, net->batch, net->input,
                       net->labels);
}

float trainer_step(Net *net, float *velocity, const Dataset *train, const int *perm, float lr)
{
    DatasetBatches batches = {train, perm};
    return trainer_step_with(net, velocity, fill_from_dataset, &batches, lr);
}

static int end_epoch(Net *net, const float *velocity, const Dataset *valid, const TrainPlan *plan,
                     ModelMeta *meta, int epoch, double loss_sum, int steps,
                     const TrainCallbacks *cb, double images_per_s, double elapsed_s, Error *e)
{
    EvalResult result = {0};
    int st = CDL_OK;
    if (valid) {
        st = evaluate(net, valid, &result, e);
        if (st)
            return st;
        meta->valid_accuracy = result.top1;
        meta->valid_loss = result.loss;
    }
    meta->step = net->step;
    meta->epochs_done = epoch + 1;
    st = model_save(plan->out_path, net, velocity, meta, e);
    if (!st && cb && cb->on_epoch) {
        EpochReport r = {epoch + 1,
                         net->step,
                         steps ? loss_sum / steps : 0,
                         valid ? &result : NULL,
                         images_per_s,
                         elapsed_s,
                         plan->out_path};
        cb->on_epoch(cb->ctx, &r);
    }
    eval_result_free(&result);
    return st;
}

int train_run(Net *net, float *velocity, const Dataset *train, const Dataset *valid,
              const TrainPlan *plan, ModelMeta *meta, const TrainCallbacks *cb, Error *e)
{
    const int batch = net->hyper.batch;
    const int steps_per_epoch = train->n / batch;
    if (steps_per_epoch < 1)
        return error_set(e, CDL_EUSAGE, "the training set has %d samples, fewer than batch=%d",
                         train->n, batch);
    if (train->c != net->in_shape.c || train->h != net->in_shape.h || train->w != net->in_shape.w)
        return error_set(
            e, CDL_EUSAGE, "the training images are %dx%dx%d (CxHxW) but the net takes %dx%dx%d",
            train->c, train->h, train->w, net->in_shape.c, net->in_shape.h, net->in_shape.w);
    if (train->classes > net->classes)
        return error_set(e, CDL_EUSAGE,
                         "the training labels go up to %d but the net outputs %d classes",
                         train->classes - 1, net->classes);
    int *perm = malloc((size_t)train->n * sizeof *perm);
    if (!perm)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    meta->steps_per_epoch = steps_per_epoch;
    meta->epochs_planned = plan->epochs;
    net->train = 1;
    net->step = meta->step;
    net->loss_divisor = (float)batch;
    const uint64_t total = (uint64_t)plan->epochs * (uint64_t)steps_per_epoch;
    const uint64_t first = net->step;
    const double start = time_now_s();
    double loss_sum = 0;
    int loss_steps = 0, st = CDL_OK, ordered_epoch = -1;
    while (net->step < total && !st) {
        const int epoch = (int)(net->step / (uint64_t)steps_per_epoch);
        const int pos = (int)(net->step % (uint64_t)steps_per_epoch);
        if (epoch != ordered_epoch) {
            epoch_order(perm, train->n, meta->seed, epoch);
            ordered_epoch = epoch;
        }
        const float lr = net_learning_rate(&net->hyper, net->step);
        const float loss =
            trainer_step(net, velocity, train, perm + (size_t)pos * (size_t)batch, lr);
        if (!isfinite(loss)) {
            st = error_set(e, CDL_ERUNTIME,
                           "step %llu: the loss is not finite (%g); stopped, the last checkpoint "
                           "(%s) is kept",
                           (unsigned long long)net->step, loss, plan->out_path);
            break;
        }
        loss_sum += loss;
        loss_steps++;
        const double elapsed = time_now_s() - start;
        const double steps_per_s = (double)(net->step - first) / (elapsed > 0 ? elapsed : 1e-9);
        if (cb && cb->on_step) {
            StepReport r = {net->step,
                            total,
                            epoch,
                            pos + 1,
                            steps_per_epoch,
                            loss,
                            lr,
                            steps_per_s * batch,
                            (double)(total - net->step) / steps_per_s,
                            elapsed};
            cb->on_step(cb->ctx, &r);
        }
        if (pos + 1 == steps_per_epoch) {
            st = end_epoch(net, velocity, valid, plan, meta, epoch, loss_sum, loss_steps, cb,
                           steps_per_s * batch, elapsed, e);
            loss_sum = 0;
            loss_steps = 0;
        }
    }
    free(perm);
    return st;
}
