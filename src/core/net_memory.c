/* The memory plan of a net's activation slab (core/net_memory.h): the timeline of a pass, each
 * layer's buffers on it, then liveness_pack. */
#include "core/net_memory.h"

#include <stdlib.h>

int net_pre_in_place(const Net *net, const Layer *l)
{
    return net->memory_plan && l->activation != CDL_ACT_LINEAR &&
           (!net->want_grads || l->index < net->train_from ||
            !activation_backward_reads_input(l->activation));
}

/* When each layer's forward, replayed forward and backward run (-1: they do not): the step
 * numbers of a pass, as net_forward and net_backward order them. */
typedef struct Timeline {
    int *forward, *replay, *backward;
    int end; /* the pass's last step */
} Timeline;

static void build_timeline(const Net *net, Timeline *t)
{
    const int n = net->n_layers;
    int step = 0;
    for (int i = 0; i < n; i++) {
        t->forward[i] = step++;
        t->replay[i] = t->backward[i] = -1;
    }
    /* net_backward: segment by segment from the last; each but the last segment replayed. */
    for (int last = n - 1; net->want_grads && last >= net->train_from;) {
        int first = last;
        while (first > 0 && net->layers[first - 1].segment == net->layers[last].segment)
            first--;
        const int segment = net->layers[last].segment;
        if (segment >= 0 && segment < net->n_segments - 1)
            for (int i = first; i <= last; i++)
                t->replay[i] = step++;
        for (int i = last; i >= first && i >= net->train_from; i--)
            t->backward[i] = step++;
        last = first - 1;
    }
    t->end = step - 1;
}

/* A buffer written by layer i's forward and, when it is replayed, again by its replay: one span
 * per write, each reaching (so far) only that step. */
static void written_by(LiveBuffer *b, const Timeline *t, int i, size_t bytes)
{
    b->bytes = bytes;
    b->n_spans = 1;
    b->spans[0] = (LiveSpan){t->forward[i], t->forward[i]};
    if (t->replay[i] >= 0)
        b->spans[b->n_spans++] = (LiveSpan){t->replay[i], t->replay[i]};
}

/* Extends the span of the write a read at step s sees (the latest write at or before s). */
static void read_at(LiveBuffer *b, int s)
{
    if (s < 0)
        return;
    LiveSpan *span = &b->spans[b->n_spans > 1 && s >= b->spans[1].first ? 1 : 0];
    span->last = s > span->last ? s : span->last;
}

static void whole_pass(LiveBuffer *b, const Timeline *t)
{
    b->n_spans = 1;
    b->spans[0] = (LiveSpan){0, t->end};
}

static void plan_layer(const Net *net, int i, int batch, const Timeline *t, LiveBuffer *b)
{
    const Layer *l = &net->layers[i];
    const size_t count = (size_t)batch * shape_size(l->out_shape), n = count * sizeof(float);
    const size_t stored = count * elem_bytes(l->storage); /* the output and its gradient */
    const int has_delta = net->want_grads && i >= net->train_from;
    const int bwd = t->backward[i];
    written_by(&b[NET_BUF_OUT], t, i, stored);
    if (l->sum_from) /* written by that layer's forward (a fused residual sum) */
        b[NET_BUF_OUT].spans[0].first = t->forward[l->sum_from->index];
    written_by(&b[NET_BUF_PRE], t, i,
               l->activation != CDL_ACT_LINEAR && !net_pre_in_place(net, l) ? n : 0);
    written_by(&b[NET_BUF_STATE_FLOATS], t, i, l->state_floats * sizeof(float));
    written_by(&b[NET_BUF_STATE_BYTES], t, i, l->state_bytes);
    if (l->activation != CDL_ACT_LINEAR || !l->type->backward_ignores_output)
        read_at(&b[NET_BUF_OUT], bwd);
    for (int k = NET_BUF_PRE; k <= NET_BUF_STATE_BYTES; k++)
        read_at(&b[k], bwd);
    written_by(&b[NET_BUF_WORK], t, i, l->work_floats * sizeof(float));
    if (bwd >= 0)
        b[NET_BUF_WORK].spans[b[NET_BUF_WORK].n_spans++] = (LiveSpan){bwd, bwd};
    b[NET_BUF_KEPT].bytes = l->kept_floats * sizeof(float);
    whole_pass(&b[NET_BUF_KEPT], t);
    /* Its readers: their forward and replay, their backward unless it ignores its inputs. */
    for (int j = i + 1; j < net->n_layers; j++)
        for (int k = 0; k < net->layers[j].n_inputs; k++)
            if (net->layers[j].inputs[k] == i) {
                read_at(&b[NET_BUF_OUT], t->forward[j]);
                read_at(&b[NET_BUF_OUT], t->replay[j]);
                if (!net->layers[j].type->backward_ignores_inputs)
                    read_at(&b[NET_BUF_OUT], t->backward[j]);
            }
    const int last = i == net->n_layers - 1;
    /* The last layer's output, and every detection layer's (detections read them after the pass).
     */
    if (last || l->type->reads_truth)
        read_at(&b[NET_BUF_OUT], t->end);
    if (net_can_forward_at(net))
        for (int k = NET_BUF_OUT; k <= NET_BUF_STATE_BYTES; k++)
            if (k != NET_BUF_DELTA)
                read_at(&b[k], t->end);
    b[NET_BUF_DELTA].bytes = has_delta ? stored : 0;
    b[NET_BUF_DELTA].n_spans = 1;
    if (has_delta && last)
        b[NET_BUF_DELTA].spans[0] = (LiveSpan){0, t->end};
    else if (has_delta)
        b[NET_BUF_DELTA].spans[0] =
            (LiveSpan){t->backward[l->last_reader >= 0 ? l->last_reader : i], bwd};
    if (!net->memory_plan)
        for (int k = 0; k < NET_BUFFERS; k++)
            whole_pass(&b[k], t);
}

int net_memory_plan(const Net *net, int batch, LiveBuffer *buffers, size_t *bytes, Error *e)
{
    const int n = net->n_layers, n_buffers = n * NET_BUFFERS;
    int *ints = malloc((3 * (size_t)n + 2 * (size_t)n_buffers) * sizeof *ints);
    if (!ints)
        return error_set(e, CDL_ERUNTIME, "out of memory planning the activations");
    Timeline t = {ints, ints + n, ints + 2 * n, 0};
    build_timeline(net, &t);
    for (int i = 0; i < n; i++)
        plan_layer(net, i, batch, &t, buffers + (size_t)i * NET_BUFFERS);
    *bytes = liveness_pack(buffers, n_buffers, NET_BUFFER_ALIGN, ints + 3 * n);
    free(ints);
    return CDL_OK;
}
