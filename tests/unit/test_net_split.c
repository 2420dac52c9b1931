/* Training passes smaller than the mini-batch (core/net_split.h, train/trainer.c): which nets
 * split and how far, and that a split step trains what the unsplit one does: the same loss and,
 * after three optimizer steps, the same weights within float rounding (the gradients are summed
 * in another order; SGD, which does not magnify a rounding of a near-zero gradient as Adam's
 * first steps do), with attention and [dropout] masks drawn per sample, layers that keep
 * packed copies of their weights between passes (StepContext.same_weights), and subdivisions. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/net.h"
#include "core/net_split.h"
#include "train/optimizer.h"
#include "train/trainer.h"

/* A transformer block whose widest output, 128 tokens x 512 features, takes 512 KiB a sample
 * with its gradient (%d: batch, %s: more [net] keys). */
static const char *wide_net =
    "[net]\nbatch=%d\nseq=128\nvocab=8\n%s\n"
    "[embedding]\noutput=32\n[positional]\n[layernorm]\n[attention]\nheads=2\n[shortcut]\n"
    "from=-3\n[linear]\noutput=512\nactivation=gelu\n[linear]\noutput=32\n[linear]\ntie=1\n"
    "[softmax]\n";

static int split_of(const char *tmpl, int batch, const char *keys, int threads)
{
    char text[2048];
    snprintf(text, sizeof text, tmpl, batch, keys);
    Net net;
    Error e = {0};
    if (net_build_from_text(&net, text, "t.cfg", 1, 7, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return -1;
    }
    const int split = net_training_split(&net, threads);
    net_free(&net);
    return split;
}

/* Passes of the fewest samples that hold 1 MiB a thread of the widest layer: 2 samples a
 * thread, a divisor of the mini-batch; nothing to split in nets of other layers or in image nets,
 * or with split_passes=0. */
static void test_split_rule(void)
{
    CHECK(split_of(wide_net, 8, "", 1) == 4);
    CHECK(split_of(wide_net, 8, "", 2) == 2);
    CHECK(split_of(wide_net, 8, "", 3) == 1); /* 6 samples: 8, the first divisor past */
    CHECK(split_of(wide_net, 12, "", 2) == 3);
    CHECK(split_of(wide_net, 1, "", 1) == 1);
    CHECK(split_of(wide_net, 8, "split_passes=0", 1) == 1);
    CHECK(split_of(wide_net, 16, "subdivisions=2", 1) == 4); /* of 8-sample mini-batches */
    static const char *lstm = "[net]\nbatch=%d\nseq=128\nvocab=8\n%s\n[embedding]\noutput=512\n"
                              "[lstm]\noutput=512\n[linear]\noutput=8\n[softmax]\n";
    CHECK(split_of(lstm, 8, "", 1) == 1);
    static const char *image = "[net]\nbatch=%d\nwidth=64\nheight=64\nchannels=64\n%s\n"
                               "[connected]\noutput=10\n[softmax]\n";
    CHECK(split_of(image, 8, "", 1) == 1);
}

/* Token ids and next-token labels of sample g of the step's mini-batch. */
static int token_of(int g, int t, int vocab)
{
    return (g * 7 + t * 3 + (g * t) % 5) % vocab;
}

/* BatchFill: the samples pass * batch onwards of a fixed mini-batch of subdivision-wide steps. */
static int fill_pass(Net *net, int pass, void *ctx, Error *e)
{
    (void)ctx, (void)e;
    for (int b = 0; b < net->batch; b++) {
        const int g = pass * net->batch + b;
        for (int t = 0; t < net->seq; t++) {
            net->input[(size_t)b * net->seq + t] = (float)token_of(g, t, net->vocab);
            net->labels[(size_t)b * net->seq + t] = token_of(g, t + 1, net->vocab);
        }
    }
    return CDL_OK;
}

static const char *small_net =
    "[net]\nbatch=8\nsubdivisions=%d\nseq=16\nvocab=12\nlearning_rate=0.01\nmomentum=0.9\n"
    "[embedding]\noutput=16\n[positional]\n[layernorm]\n[attention]\nheads=2\ndropout=0.2\n"
    "[shortcut]\nfrom=-3\n[layernorm]\n[linear]\noutput=32\nactivation=gelu\n[dropout]\n"
    "probability=0.2\n[linear]\noutput=16\n[shortcut]\nfrom=-5\n[layernorm]\n[linear]\ntie=1\n"
    "[softmax]\n";

/* Builds small_net with gradients, in split passes of each of its subdivisions. */
static int build_split(Net *net, Optimizer *opt, int subdivisions, int split, Error *e)
{
    char text[2048];
    snprintf(text, sizeof text, small_net, subdivisions);
    int st = net_build_from_text(net, text, "t.cfg", 1, 7, e);
    st = st ? st : net_resize_split(net, split, e);
    st = st ? st : optimizer_init(opt, net, e);
    net->train = 1;
    return st;
}

/* A step of net as the trainer took it before passes were split or kept packed weights: every
 * forward from the weights as they are. */
static void plain_step(Net *net, Optimizer *opt)
{
    for (int sub = 0; sub < net->hyper.subdivisions; sub++) {
        fill_pass(net, sub, NULL, NULL);
        net->draw_id = net->step * (uint64_t)net->hyper.subdivisions + (uint64_t)sub;
        net_forward(net);
        net_backward(net);
    }
    optimizer_step(opt, net, 0.01f);
    net->step++;
}

/* Three steps of small_net in subdivisions x split passes, and in one pass each, against
 * plain_step's. */
static void check_split_trains_the_same(int subdivisions, int split)
{
    Net plain, one, many;
    Optimizer plain_opt, one_opt, many_opt;
    Error e = {0};
    if (build_split(&plain, &plain_opt, subdivisions, 1, &e) ||
        build_split(&one, &one_opt, subdivisions, 1, &e) ||
        build_split(&many, &many_opt, subdivisions, split, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return;
    }
    for (int step = 0; step < 3; step++) {
        float one_loss, many_loss;
        CHECK(trainer_step_with(&one, &one_opt, fill_pass, NULL, 0.01f, &one_loss, &e) == CDL_OK);
        CHECK(trainer_step_with(&many, &many_opt, fill_pass, NULL, 0.01f, &many_loss, &e) ==
              CDL_OK);
        CHECK_NEAR(many_loss, one_loss, 1e-5 * fabs(one_loss));
        plain_step(&plain, &plain_opt);
    }
    CHECK(!memcmp(one.params, plain.params, plain.n_params * sizeof *plain.params));
    CHECK(many.step == 3 && many.later_pass == 0 && many.sample_offset == 0);
    CHECK(check_rel_error(many.params, one.params, one.n_params) < 1e-6);
    optimizer_free(&plain_opt);
    optimizer_free(&one_opt);
    optimizer_free(&many_opt);
    net_free(&plain);
    net_free(&one);
    net_free(&many);
}

static void test_split_trains_the_same(void)
{
    check_split_trains_the_same(1, 2);
    check_split_trains_the_same(1, 4);
    check_split_trains_the_same(1, 8);
    check_split_trains_the_same(2, 2);
}

int main(void)
{
    test_split_rule();
    test_split_trains_the_same();
    return check_report("net_split");
}
