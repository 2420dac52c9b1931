/* Liveness packing (core/liveness.h) and the net's memory plan (core/net_memory.h): buffers live
 * at the same time never overlap, buffers that are not share memory, and a planned net takes less
 * than one with memory_plan=0, inference less than training, with activations in place where
 * their derivative reads only the output; a second backward after one forward gives the first
 * one's gradients, with the plan (which replays the forward the first consumed) and without. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/net.h"
#include "core/net_memory.h"
#include "util/rng.h"

static int overlap(const LiveBuffer *a, const LiveBuffer *b)
{
    return a->bytes && b->bytes && a->offset < b->offset + b->bytes &&
           b->offset < a->offset + a->bytes;
}

static int meet(const LiveBuffer *a, const LiveBuffer *b)
{
    for (int i = 0; i < a->n_spans; i++)
        for (int j = 0; j < b->n_spans; j++)
            if (a->spans[i].first <= b->spans[j].last && b->spans[j].first <= a->spans[i].last)
                return 1;
    return 0;
}

static void test_disjoint_spans_share_and_meeting_ones_do_not(void)
{
    LiveBuffer b[4] = {
        {.bytes = 100, .spans = {{0, 1}}, .n_spans = 1},
        {.bytes = 100, .spans = {{2, 3}}, .n_spans = 1},
        {.bytes = 50, .spans = {{1, 2}}, .n_spans = 1},
        {.bytes = 10, .spans = {{0, 0}, {3, 3}}, .n_spans = 2},
    };
    int work[8];
    const size_t total = liveness_pack(b, 4, 64, work);
    CHECK(b[0].offset == 0 && b[1].offset == 0); /* [0,1] and [2,3] take the same memory */
    CHECK(b[2].offset == 128);                   /* meets both: after them, aligned */
    CHECK(b[3].offset == 128); /* meets 0 and 1 through its two spans, 2 through neither */
    CHECK(total == 192);
}

static void test_random_buffers_never_overlap_while_live(void)
{
    enum { N = 300 };
    LiveBuffer b[N];
    int work[2 * N];
    Rng rng;
    rng_seed(&rng, 5, 0);
    size_t sum = 0;
    for (int i = 0; i < N; i++) {
        const int first = (int)(rng_uniform(&rng) * 100), len = (int)(rng_uniform(&rng) * 20);
        b[i] = (LiveBuffer){.bytes = 1 + (size_t)(rng_uniform(&rng) * 5000),
                            .spans = {{first, first + len}, {first + len + 10, first + len + 12}},
                            .n_spans = 1 + (i % 2)};
        sum += b[i].bytes;
    }
    const size_t total = liveness_pack(b, N, 16, work);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        bad += b[i].offset % 16 != 0 || b[i].offset + b[i].bytes > total;
        for (int j = i + 1; j < N; j++)
            bad += meet(&b[i], &b[j]) && overlap(&b[i], &b[j]);
    }
    CHECK(bad == 0);
    CHECK(total < sum);
}

static const char *net_text =
    "[net]\nbatch=4\nwidth=8\nheight=8\nchannels=3\n%s\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\nactivation=gelu\n"
    "[shortcut]\nfrom=-2\nactivation=leaky\n[maxpool]\nsize=2\nstride=2\n"
    "[connected]\noutput=5\nactivation=linear\n[softmax]\n";

static void build(Net *net, int want_grads, const char *keys)
{
    char text[1024];
    snprintf(text, sizeof text, net_text, keys);
    Error e = {0};
    CHECK(net_build_from_text(net, text, "t.cfg", want_grads, 1, &e) == CDL_OK);
    CHECK(net_resize(net, 4, 0, &e) == CDL_OK);
}

static void test_plan_shares_and_runs_activations_in_place(void)
{
    Net off, train, infer;
    build(&off, 1, "memory_plan=0");
    build(&train, 1, "");
    build(&infer, 0, "");
    CHECK(infer.activation_bytes < train.activation_bytes);
    CHECK(train.activation_bytes < off.activation_bytes);
    /* relu and leaky derive from their output; gelu reads its input, kept in training only. */
    CHECK(train.layers[0].pre == train.layers[0].out && train.layers[2].pre == train.layers[2].out);
    CHECK(train.layers[1].pre != train.layers[1].out && infer.layers[1].pre == infer.layers[1].out);
    CHECK(off.layers[0].pre != off.layers[0].out);
    net_free(&off);
    net_free(&train);
    net_free(&infer);
}

/* Two backwards after one forward, from the same last delta, give the same bits: with
 * memory_plan=0 the backward reads the forward's buffers without changing them; under the plan
 * (keys "") the second replays the forward whose outputs the first let deltas overwrite. */
static void check_backward_repeats(const char *keys)
{
    Net net;
    build(&net, 1, keys);
    Rng rng;
    rng_seed(&rng, 9, 0);
    for (size_t i = 0; i < (size_t)net.batch * shape_size(net.in_shape); i++)
        net.input[i] = rng_normal(&rng);
    net.train = 1;
    net_forward(&net);
    Layer *last = &net.layers[net.n_layers - 1];
    const size_t out_n = (size_t)net.batch * shape_size(last->out_shape), n = net.n_params;
    float *seed = malloc(out_n * sizeof *seed), *grads[2];
    for (size_t i = 0; i < out_n; i++)
        seed[i] = rng_normal(&rng);
    for (int r = 0; r < 2; r++) {
        memcpy(last->delta, seed, out_n * sizeof *seed);
        net_zero_grads(&net);
        net_backward(&net);
        grads[r] = malloc(n * sizeof *grads[r]);
        memcpy(grads[r], net.grads, n * sizeof *grads[r]);
    }
    CHECK(n > 0 && !memcmp(grads[0], grads[1], n * sizeof *grads[0]));
    free(grads[0]);
    free(grads[1]);
    free(seed);
    net_free(&net);
}

int main(void)
{
    test_disjoint_spans_share_and_meeting_ones_do_not();
    test_random_buffers_never_overlap_while_live();
    test_plan_shares_and_runs_activations_in_place();
    check_backward_repeats("memory_plan=0");
    check_backward_repeats("");
    check_backward_repeats("recompute_every=2");
    return check_report("test_liveness");
}
