/* How many passes a sequence net's training mini-batch runs as (core/net_split.h). */
#include "core/net_split.h"

/* A layer's output and its gradient per pass and thread, at most: half the L2 of a core of the
 * Intel Xeon (Emerald Rapids) cdl is measured on, all of a Zen 4's. gpt_tiny's widest layer, the
 * MLP's 512 features over 128 tokens, takes 512 KiB a sample: at 1 thread passes of 2 of its 32
 * samples train 1.09x to 1.13x the tokens a second of one pass of 32 (7 alternating runs), where
 * passes of 4 gained 1.06x; at 2 threads passes of 4 are as fast as one pass (0.996x; passes of
 * 2, 0.984x): the pass's samples are split over the threads, each with its own L2. */
#define NET_SPLIT_PASS_BYTES (1u << 20)

int net_training_split(const Net *net, int threads)
{
    if (net->seq <= 0 || !net->hyper.split_passes)
        return 1;
    const int batch = net->hyper.batch / net->hyper.subdivisions;
    size_t widest = 0; /* bytes of a layer's output and gradient per sample */
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        if (!l->type->splits_batch)
            return 1;
        const size_t bytes = 2 * shape_size(l->out_shape) * sizeof(float);
        widest = bytes > widest ? bytes : widest;
    }
    size_t per_thread = widest ? NET_SPLIT_PASS_BYTES / widest : (size_t)batch;
    per_thread = per_thread > 1 ? per_thread : 1;
    const size_t want = per_thread * (size_t)(threads > 1 ? threads : 1);
    int pass = 1; /* the smallest divisor of batch of at least want samples */
    while (pass < batch && ((size_t)pass < want || batch % pass))
        pass++;
    return batch / pass;
}

int net_training_pass(const Net *net, int threads)
{
    return net->hyper.batch / net->hyper.subdivisions / net_training_split(net, threads);
}

int net_resize_split(Net *net, int split, Error *e)
{
    net->split = split;
    return net_resize(net, net->hyper.batch / net->hyper.subdivisions / split, 0, e);
}
