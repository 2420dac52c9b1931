/* The training loop. Every random choice derives from (seed, epoch) or (seed, step), so a
 * run resumed from a checkpoint at any step continues exactly as the uninterrupted run. */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "train/ema.h"
#include "train/eta.h"
#include "util/profiler.h"
#include "util/timer.h"

/* 1 when every parameter of l is finite (net_values_finite: an error path). */
static int params_finite(Net *net, const Layer *l)
{
    for (int k = 0; k < l->n_params; k++)
        if (!net_values_finite(net, l->params[k].data, l->params[k].count))
            return 0;
    return 1;
}

/* The error of a forward whose loss is not finite: which layer's output went first. updated: the
 * step's update has run since (a backend that reads the losses at the step's end), so the
 * parameters tell nothing, and the outputs are the step's last pass's. */
static int nonfinite_loss(Net *net, int updated, Error *e)
{
    const int i = net_first_nonfinite_output(net);
    char where[160];
    if (i < 0)
        snprintf(where, sizeof where, "the input batch holds non-finite values");
    else if (i == net->n_layers)
        snprintf(where, sizeof where, "every layer's output is finite");
    else
        snprintf(where, sizeof where, "layer %d [%s] produced the first non-finite output%s", i,
                 net->layers[i].type->name,
                 updated || params_finite(net, &net->layers[i])
                     ? ""
                     : " (its parameters are not finite)");
    return error_set(e, CDL_ERUNTIME, "step %llu: the loss is not finite; %s",
                     (unsigned long long)net->step + 1, where);
}

/* The passes of a step: each of the cfg's subdivisions as net->split passes of net->batch samples
 * (core/net_split.h). Pass `pass` of a subdivision takes its samples from part * batch on, with
 * the subdivision's draw id and the sample offset moved that far, so that every sample gets the
 * window, crop and dropout mask it gets in an unsplit pass. Sets them up and commits the pass's
 * batch, filled by fill; first_sample: the step's sample offset. fit_rows: a sequence-to-sequence
 * net computes the pass at the length of its longest pair (net_fit_rows; the step's end restores
 * the sized rows). */
static int begin_pass(Net *net, int pass, int first_sample, BatchFill fill, void *ctx, int fit_rows,
                      Error *e)
{
    const int split = net->split;
    net->draw_id = net->step * (uint64_t)net->hyper.subdivisions + (uint64_t)(pass / split);
    net->sample_offset = first_sample + pass % split * net->batch;
    net->later_pass = pass > 0;
    const int st = fill(net, pass, ctx, e);
    if (!st && fit_rows)
        net_fit_rows(net);
    if (!st)
        net_commit_batch(net);
    return st;
}

/* Runs the passes of a step, summing their losses into loss; on a backend that keeps them on the
 * device until the step's end (BackendOps.keep_loss), its step_outcome sums them instead. */
static int run_passes(Net *net, BatchFill fill, void *ctx, Dist *dist, float *loss, Error *e)
{
    const int count = net->hyper.subdivisions * net->split, first_sample = net->sample_offset;
    const int fit_rows = net_can_set_rows(net);
    const BackendOps *be = net->backend;
    *loss = 0;
    for (int pass = 0; pass < count; pass++) {
        int st = begin_pass(net, pass, first_sample, fill, ctx, fit_rows, e);
        if (!st && be->keep_loss)
            st = be->keep_loss(&net->exec, pass, count, e);
        if (st)
            return st;
        net_forward(net);
        *loss += net->loss;
        if (!isfinite(net->loss))
            return nonfinite_loss(net, 0, e);
        net->reduce_grads = dist && pass == count - 1;
        net_backward(net);
        net->reduce_grads = 0;
    }
    return CDL_OK;
}

/* Ends a step that failed before its outcome was read: the loss layers download their losses
 * again (the step's failure is the one reported). */
static void abandon_kept_losses(Net *net)
{
    Error unused;
    float loss;
    net->backend->step_outcome(&net->exec, &loss, NULL, &unused);
}

/* trainer_step_with, its gradients summed over the ranks of dist (NULL: one process). On a backend
 * that keeps the losses on the device (BackendOps.keep_loss), the host waits for the device once,
 * at the step's end, for the losses and fp16's unscaling outcome (as a step of CUDA graphs does):
 * a loss that is not finite is then found after the update, and under dist summed over the ranks
 * after it as well; net->loss is then the step's. */
static int step_once(Net *net, Optimizer *opt, BatchFill fill, void *ctx, float lr, Dist *dist,
                     float *loss, Error *e)
{
    const int first_sample = net->sample_offset;
    const int kept = net->backend->keep_loss != NULL;
    net->grad_scale = opt->loss_scale.scale;
    int st = run_passes(net, fill, ctx, dist, loss, e);
    net_set_rows(net, net->source, net->seq);
    net->sample_offset = first_sample;
    net->later_pass = 0;
    if (!st && dist)
        st = kept ? dist_queue_step(dist, 0, e) : dist_finish_step(dist, loss, e);
    if (st) {
        net_zero_grads(net);
        if (kept)
            abandon_kept_losses(net);
        return st;
    }
    const int finite = loss_scale_unscale(&opt->loss_scale, net);
    if (finite)
        optimizer_step(opt, net, lr); /* finite < 0: it reads the outcome on the device */
    net->step++;
    if (!kept)
        return net_sync(net, e);
    int updated = 1;
    if ((st = net->backend->step_outcome(&net->exec, loss, finite < 0 ? &updated : NULL, e)))
        return st;
    if (finite < 0) {
        loss_scale_record(&opt->loss_scale, updated);
        opt->steps -= !updated;
    }
    net->loss = *loss;
    if (dist && (st = dist_sum_loss(dist, loss, e)))
        return st;
    return isfinite(*loss) ? CDL_OK : nonfinite_loss(net, 1, e);
}

/* CDL_EUSAGE naming what of the run a step captured as a CUDA graph cannot hold yet: whatever
 * needs the host inside a step (a download, a draw id, a value that changes from step to step).
 * The loss must be one that sums on the device: a [softmax]'s (which [cost] may follow), or the
 * detection layers' (reads_truth: [yolo], [region]), with or without a [softmax] beside them:
 * each adds its loss into the pass's slot (gpu_add_loss), in layer order as the eager step does. */
static int graph_refusal(const Net *net, Error *e)
{
    const char *not_yet = "--cuda-graph does not capture %s yet (train without it)";
    if (!net->backend->capture_begin)
        return error_set(e, CDL_EUSAGE,
                         "--cuda-graph captures a GPU's training step: it needs --gpu");
    int losses = 0, detection = 0;
    for (int i = 0; i < net->n_layers; i++) {
        losses += net->layers[i].type->is_loss;
        detection += net->layers[i].type->reads_truth;
    }
    if (!detection && losses != 1)
        return error_set(e, CDL_EUSAGE, not_yet, "a net without a [softmax] loss");
    return CDL_OK;
}

/* Records pass `pass` of a step (of passes in all) as its graph: forward and backward, and after
 * the last pass the gradients' sum over the ranks of dist (when not NULL: its collectives are
 * recorded too), fp16's unscaling and the update, recorded but not applied (the replay applies
 * them). */
static int capture_pass(Net *net, Optimizer *opt, int pass, int passes, float lr, Dist *dist,
                        Error *e)
{
    const BackendOps *be = net->backend;
    const int last = pass == passes - 1;
    int st = be->capture_begin(&net->exec, pass, passes, e);
    if (st)
        return st;
    net_forward(net);
    net->reduce_grads = dist && last;
    net_backward(net);
    net->reduce_grads = 0;
    if (last && dist && (st = dist_queue_step(dist, 1, e))) {
        be->capture_end(&net->exec, pass, NULL); /* ended: the collective's error is the one */
        return st;
    }
    if (last) {
        if (opt->loss_scale.enabled)
            be->slab->unscale(net->grads, net->n_params, 1.0f / opt->loss_scale.scale, &net->exec);
        optimizer_step(opt, net, lr);
        opt->steps--;
    }
    return be->capture_end(&net->exec, pass, e);
}

/* A step as CUDA graphs, one per pass: each pass's batch uploaded, its graph (captured at the
 * first step it runs, and again when what it holds changed) replayed with the step's lr, bias
 * corrections and the pass's draw id (dropout's masks), the losses downloaded once the step
 * finished and, with dist, summed over the ranks as step_once sums them (a sequence-to-sequence
 * net's passes padded to its sized rows: a graph holds one shape). A profiled step
 * (net->profiler) records each replay as one event, from the device's clock before its launch to
 * after it: a graph's layers cannot be timed apart. fp16's unscaling decides on the device
 * whether the update runs; the loss scale's bookkeeping follows here. A non-finite loss is found
 * only after the step, which the replay has applied. */
static int step_graphed(Net *net, Optimizer *opt, BatchFill fill, void *ctx, float lr, Dist *dist,
                        StepGraph *g, float *loss, Error *e)
{
    const BackendOps *be = net->backend;
    const int passes = net->hyper.subdivisions * net->split, first_sample = net->sample_offset;
    net->grad_scale = opt->loss_scale.scale;
    const UpdateRule rule = optimizer_next_rule(opt, lr);
    int st = CDL_OK, capture = 0;
    for (int pass = 0; pass < passes && !st; pass++) {
        if ((st = begin_pass(net, pass, first_sample, fill, ctx, 0, e)))
            break;
        const StepGraph now = {net->activations,  net->input,          net->labels,
                               net->device_truth, net->exec.workspace, net->params,
                               net->grads,        opt->slab,           net->grad_scale};
        if (pass == 0 && memcmp(&now, g, sizeof now)) {
            capture = 1;
            *g = now;
        }
        Profiler *profiler = net->profiler; /* its clock waits: not inside a capture */
        net->profiler = NULL;
        if (capture)
            st = capture_pass(net, opt, pass, passes, lr, dist, e);
        net->profiler = profiler;
        const double start_s = profiler ? profiler_now_s(profiler) : 0;
        st = st ? st
                : be->replay(&net->exec, pass, &rule, net->draw_id, net_pass_images_seen(net), e);
        if (!st && profiler)
            profiler_graph(profiler, net->step, pass, start_s, profiler_now_s(profiler));
    }
    net->sample_offset = first_sample;
    net->later_pass = 0;
    int updated = 0;
    if (st)
        abandon_kept_losses(net);
    if (st || (st = be->step_outcome(&net->exec, loss, &updated, e))) {
        *g = (StepGraph){0}; /* captured again at the next step */
        return st;
    }
    net->loss = *loss;
    if (dist && (st = dist_sum_loss(dist, loss, e)))
        return st;
    if (!isfinite(*loss))
        return error_set(e, CDL_ERUNTIME,
                         "step %llu: the loss is not finite (the step ran whole as CUDA graphs: "
                         "train without --cuda-graph to find the layer)",
                         (unsigned long long)net->step + 1);
    if (opt->loss_scale.enabled)
        loss_scale_record(&opt->loss_scale, updated);
    opt->steps += updated;
    net->step++;
    return CDL_OK;
}

int trainer_step_with(Net *net, Optimizer *opt, BatchFill fill, void *ctx, float lr, float *loss,
                      Error *e)
{
    return step_once(net, opt, fill, ctx, lr, NULL, loss, e);
}

int step_runner_check(const StepRunner *r, const Net *net, Error *e)
{
    return r->cuda_graph ? graph_refusal(net, e) : CDL_OK;
}

int step_runner_step(StepRunner *r, Net *net, Optimizer *opt, BatchFill fill, void *ctx, float lr,
                     Dist *dist, float *loss, Error *e)
{
    const int st = r->ready ? step_graphed(net, opt, fill, ctx, lr, dist, &r->graph, loss, e)
                            : step_once(net, opt, fill, ctx, lr, dist, loss, e);
    r->ready = r->cuda_graph;
    return st;
}

int trainer_fill_from_dataset(Net *net, int sub, void *ctx, Error *e)
{
    (void)e;
    const DatasetBatches *b = ctx;
    dataset_fill_batch(b->data, b->order + (size_t)sub * (size_t)net->batch, net->batch,
                       net_host_input(net), net_host_labels(net));
    return CDL_OK;
}

float trainer_step(Net *net, Optimizer *opt, const Dataset *train, const int *perm, float lr)
{
    DatasetBatches batches = {train, perm};
    float loss;
    trainer_step_with(net, opt, trainer_fill_from_dataset, &batches, lr, &loss, NULL);
    return loss;
}

/* Takes the next mini-batch of the loader (ctx) into the net: its truth boxes too, into
 * net->truth, when the loader reads them. */
static int fill_from_loader(Net *net, int sub, void *ctx, Error *e)
{
    (void)sub;
    int n;
    const int st = loader_next(ctx, net_host_input(net), net_host_labels(net), net->truth, &n, e);
    if (!st && n != net->batch)
        return error_set(e, CDL_EUSAGE,
                         "the loader gives mini-batches of %d samples but the net takes %d", n,
                         net->batch);
    return st;
}

static int loader_start(void *ctx, int epoch, int first, Error *e)
{
    return loader_start_epoch(ctx, epoch, first, e);
}

static int loader_skipped_count(const void *ctx)
{
    return loader_skipped(ctx);
}

TrainSource train_source_loader(Loader *loader)
{
    return (TrainSource){loader_batches_per_epoch(loader), loader_start, fill_from_loader,
                         loader_skipped_count, loader};
}

static int fill_from_text(Net *net, int sub, void *ctx, Error *e)
{
    (void)sub, (void)e;
    const TextBatches *b = ctx;
    if (b->pairs) {
        text_pairs_fill_random(b->pairs, b->seed, net->draw_id, net->sample_offset, net->batch,
                               net->source, net->seq, net_host_input(net), net_host_labels(net));
        return CDL_OK;
    }
    text_fill_random(b->stream, b->seed, net->draw_id, net->sample_offset, net->batch, net->seq,
                     net->in_shape.w > 1 ? net->in_shape.w : 0, net_host_input(net),
                     net_host_labels(net));
    return CDL_OK;
}

TrainSource train_source_text(TextBatches *batches, const Net *net)
{
    /* an epoch of R ranks holds as many windows as one of a process with R times the batch */
    const size_t samples =
        batches->pairs ? batches->pairs->train.n : text_windows(batches->stream, net->seq);
    const size_t batches_per_epoch = samples / ((size_t)net->batch * (size_t)dist_size());
    return (TrainSource){batches_per_epoch > INT32_MAX ? INT32_MAX : (int)batches_per_epoch, NULL,
                         fill_from_text, NULL, batches};
}

int train_evaluate(Net *net, const Optimizer *opt, const ValidSet *valid, const EvalOptions *o,
                   EvalResult *r, Error *e)
{
    /* The EMA is what eval and predict will use: measure it. */
    if (opt->ema)
        ema_swap(opt->ema, net);
    int st = valid->images  ? evaluate(net, valid->images, o, r, e)
             : valid->pairs ? evaluate_pairs(net, valid->pairs, NULL, r, e)
                            : evaluate_text(net, valid->tokens, r, e);
    if (opt->ema)
        ema_swap(opt->ema, net);
    return st;
}

/* Evaluates valid (when given), saves the checkpoint and reports the epoch; r arrives with
 * the epoch's training figures filled in. */
static int end_epoch(Net *net, const Optimizer *opt, const ValidSet *valid, const TrainPlan *plan,
                     ModelMeta *meta, const TrainCallbacks *cb, EpochReport *r, Error *e)
{
    EvalResult result = {0};
    int st = CDL_OK;
    if (dist_rank() != 0) /* rank 0 evaluates, saves and reports for the run */
        return CDL_OK;
    /* Interrupted inside an epoch: save at once (the resumed run evaluates at the epoch's end). */
    if (valid && (valid->images || valid->tokens || valid->pairs) &&
        !(r->interrupted && r->stopped)) {
        st = train_evaluate(net, opt, valid, &plan->valid, &result, e);
        if (st)
            return st;
        meta->valid_accuracy = result.top1;
        meta->valid_loss = result.loss;
        r->valid = &result;
    }
    meta->step = net->step;
    meta->epochs_done = r->stopped ? r->epoch - 1 : r->epoch;
    st = plan->save_checkpoint(plan->save_ctx, plan->out_path, net, opt, meta, e);
    r->step = net->step;
    r->checkpoint = plan->out_path;
    if (!st && cb && cb->on_epoch)
        cb->on_epoch(cb->ctx, r);
    r->valid = NULL;
    eval_result_free(&result);
    return st;
}

/* Ends e's message with what became of the checkpoint at path, which training stopped before
 * overwriting. */
static void say_checkpoint_kept(const char *path, Error *e)
{
    if (!e)
        return;
    struct stat sb;
    error_append(e, e->code,
                 stat(path, &sb) ? "; stopped before writing a checkpoint (%s)"
                                 : "; stopped, the last checkpoint (%s) is kept",
                 path);
}

/* *asked = whether plan->stop_requested asks to stop, on any rank of a data-parallel run. */
static int stop_asked(const TrainPlan *plan, int *asked, Error *e)
{
    *asked = plan->stop_requested && plan->stop_requested(plan->stop_ctx);
    return plan->dist && plan->stop_requested ? dist_any(plan->dist, asked, e) : CDL_OK;
}

int train_run(Net *net, Optimizer *opt, const TrainSource *train, const ValidSet *valid,
              const TrainPlan *plan, ModelMeta *meta, const TrainCallbacks *cb, Error *e)
{
    const int batch = net->hyper.batch, passes = net->hyper.subdivisions * net->split;
    const int steps_per_epoch = train->batches_per_epoch / passes;
    if (steps_per_epoch < 1)
        return error_set(e, CDL_EUSAGE, "the training set holds fewer samples than batch=%d",
                         batch);
    meta->steps_per_epoch = steps_per_epoch;
    meta->epochs_planned = plan->epochs;
    MultiScale *ms =
        plan->multi_scale && plan->multi_scale->rule != MULTI_SCALE_OFF ? plan->multi_scale : NULL;
    if (ms && plan->cuda_graph)
        return error_set(e, CDL_EUSAGE,
                         "random= (multi-scale training) changes the input size, which a captured "
                         "CUDA graph cannot; drop --cuda-graph or set random=0");
    net->train = 1;
    net->step = meta->step;
    const int ranks = plan->dist ? dist_size() : 1;
    net->loss_divisor = (float)batch * (float)ranks * (float)net_labels_per_sample(net);
    meta->global_batch = batch * ranks;
    const uint64_t total = (uint64_t)plan->epochs * (uint64_t)steps_per_epoch;
    const uint64_t first = net->step;
    if (ms) {
        /* darknet's max_batches, as the schedule's span (train_settings.h), else the run's */
        ms->total_steps =
            opt->settings.max_batches > 0 ? (uint64_t)opt->settings.max_batches : total;
        ms->steps_per_epoch = steps_per_epoch;
        ms->passes_per_step = passes;
    }
    const double start = time_now_s();
    double loss_sum = 0, paused_s = 0; /* paused: evaluating and saving between epochs */
    float avg_loss = -1;               /* darknet's running average, from the run's first step */
    double last_training_s = 0;
    Eta eta;
    eta_init(&eta);
    int loss_steps = 0, st = CDL_OK, started_epoch = -1;
    int last_w = 0, last_h = 0; /* the last step's size (multi-scale training) */
    StepRunner runner = {.cuda_graph = plan->cuda_graph};
    if ((st = step_runner_check(&runner, net, e)))
        return st;
    while (net->step < total && !st) {
        const int epoch = (int)(net->step / (uint64_t)steps_per_epoch);
        const int pos = (int)(net->step % (uint64_t)steps_per_epoch);
        if (epoch != started_epoch) {
            st = train->start_epoch ? train->start_epoch(train->ctx, epoch, pos * passes, e)
                                    : CDL_OK;
            if (st)
                break;
            started_epoch = epoch;
        }
        const float lr = train_learning_rate(&opt->settings, net->step, total);
        float loss;
        int w = 0, h = 0;
        if (ms) {
            multi_scale_size(ms, net->step, &w, &h);
            if ((st = net_set_size(net, w, h, e)))
                break;
        }
        /* a size other than the last step's (the evaluation between them at the cfg's aside) */
        const int resized = ms && (w != last_w || h != last_h);
        last_w = w;
        last_h = h;
        net->images_seen = meta->samples_seen;
        st = step_runner_step(&runner, net, opt, train->fill, train->ctx, lr, plan->dist, &loss, e);
        if (st && (!isfinite(loss) || plan->dist)) /* a rank's failure stops the whole run */
            say_checkpoint_kept(plan->out_path, e);
        if (st)
            break;
        loss_sum += loss;
        loss_steps++;
        avg_loss = avg_loss < 0 ? loss : 0.9f * avg_loss + 0.1f * loss;
        meta->samples_seen += (uint64_t)meta->global_batch;
        meta->samples_in_epoch =
            pos + 1 < steps_per_epoch ? (uint64_t)(pos + 1) * (uint64_t)meta->global_batch : 0;
        const double elapsed = time_now_s() - start, training_s = elapsed - paused_s;
        const double steps_per_s =
            (double)(net->step - first) / (training_s > 0 ? training_s : 1e-9);
        eta_add(&eta, training_s - last_training_s);
        last_training_s = training_s;
        if (cb && cb->on_step && dist_rank() == 0) {
            StepReport r = {net->step,
                            total,
                            epoch,
                            pos + 1,
                            steps_per_epoch,
                            loss,
                            lr,
                            avg_loss,
                            meta->samples_seen,
                            steps_per_s * batch * ranks,
                            eta_left_s(&eta, total - net->step),
                            elapsed,
                            opt->loss_scale.enabled ? opt->loss_scale.scale : 0.0f,
                            opt->loss_scale.skipped,
                            ms ? net->in_shape.w : 0,
                            ms ? net->in_shape.h : 0,
                            resized};
            cb->on_step(cb->ctx, &r);
        }
        int asked;
        st = stop_asked(plan, &asked, e);
        int stop_now = asked || (plan->time_limit_s > 0 && training_s >= plan->time_limit_s) ||
                       (plan->stop_step > 0 && net->step >= plan->stop_step);
        /* The ranks' clocks differ: they stop at the time limit together. */
        if (!st && plan->dist && plan->time_limit_s > 0)
            st = dist_any(plan->dist, &stop_now, e);
        if (st) { /* the ranks could not agree: one is gone */
            say_checkpoint_kept(plan->out_path, e);
            break;
        }
        if (pos + 1 == steps_per_epoch || stop_now) {
            const DistStats ds = plan->dist ? dist_take_stats(plan->dist) : (DistStats){0, 0};
            EpochReport r = {.epoch = epoch + 1,
                             .train_loss = loss_sum / loss_steps,
                             .skipped = train->skipped ? train->skipped(train->ctx) : 0,
                             .images_per_s = steps_per_s * batch * ranks,
                             .ranks = ranks,
                             .allreduce_wait_s = ds.wait_s,
                             .allreduce_hidden_s = ds.hidden_s,
                             .elapsed_s = elapsed,
                             .stopped = pos + 1 < steps_per_epoch,
                             .interrupted = asked};
            /* The workers prepare the next epoch while this one is evaluated and saved. */
            if (!stop_now && net->step < total && train->start_epoch &&
                !(st = train->start_epoch(train->ctx, epoch + 1, 0, e)))
                started_epoch = epoch + 1;
            const double pause_start = time_now_s();
            if (!st && ms) /* evaluation and the checkpoint at the cfg's size */
                st = net_set_size(net, ms->base_w, ms->base_h, e);
            st = st ? st : end_epoch(net, opt, valid, plan, meta, cb, &r, e);
            paused_s += time_now_s() - pause_start;
            loss_sum = 0;
            loss_steps = 0;
            /* A stop asked for while the epoch was evaluated and saved: the checkpoint is new. */
            if (stop_now || st || net->step >= total)
                break;
            if ((st = stop_asked(plan, &asked, e)))
                say_checkpoint_kept(plan->out_path, e);
            if (st || asked)
                break;
        }
    }
    Error unused; /* the cfg's size, which the net was built at, never fails */
    if (ms)
        net_set_size(net, ms->base_w, ms->base_h, &unused);
    return st;
}
