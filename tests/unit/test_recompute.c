/* The memory plan (core/net_memory.h: buffers shared by liveness, activations in place) and
 * gradient checkpointing ([net] recompute_every, checkpoint=1): a net laid out by the plan, with
 * or without recomputing its segments in backward, gives bit-identical gradients, running
 * statistics and, after K optimizer steps, weights to the same net with every buffer its own
 * ([net] memory_plan=0, no recompute), in a smaller activation slab: an image net with
 * convolution, batch norm, shortcut, route, max pooling and dropout, and a sequence net with
 * attention (and its dropout), layernorm and a tied output, with segments cut anywhere (inside
 * blocks, so shortcuts and routes reach across them), at block starts, and with frozen layers;
 * and the sequence net in the split passes the trainer runs it as, whose later passes reuse what
 * the first derived from the weights (kept memory, which the plan must lend to nothing). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/net.h"
#include "core/net_split.h"
#include "train/optimizer.h"
#include "train/trainer.h"

/* The [net] section (its %s takes more keys), then the layers: "@" marks where checkpoint=1 may
 * go (the net without recompute drops the marks), "!" where freeze=1 may. */
static const char *image_net =
    "[net]\nbatch=8\nsubdivisions=2\nwidth=8\nheight=8\nchannels=3\nlearning_rate=0.05\n"
    "momentum=0.9\n%s\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\nactivation=mish\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n@\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\ngroups=2\nactivation=leaky\n!\n"
    "[shortcut]\nfrom=-3\n[maxpool]\nsize=2\nstride=2\n@\n"
    "[convolutional]\nfilters=2\nsize=1\nbatch_normalize=1\nactivation=relu\n"
    "[route]\nlayers=-1,-2\n[dropout]\nprobability=0.3\n@\n"
    "[convolutional]\nfilters=3\nsize=3\npad=1\nbatch_normalize=1\nactivation=logistic\n"
    "[shortcut]\nfrom=-4\n[connected]\noutput=5\nbatch_normalize=1\nactivation=linear\n"
    "[softmax]\n";

static const char *sequence_net =
    "[net]\nbatch=4\nsubdivisions=2\nseq=8\nvocab=16\noptimizer=adamw\nlearning_rate=0.01\n%s\n"
    "[embedding]\noutput=16\n[positional]\n"
    "[layernorm]\n@\n[attention]\nheads=2\ndropout=0.2\n[shortcut]\nfrom=-3\n"
    "[layernorm]\n[linear]\noutput=32\nactivation=gelu\n[dropout]\nprobability=0.2\n"
    "[linear]\noutput=16\n[shortcut]\nfrom=-5\n"
    "[layernorm]\n@\n[attention]\nheads=2\n[shortcut]\nfrom=-3\n"
    "[layernorm]\n[linear]\ntie=1\n[softmax]\n";

/* Builds tmpl (with gradients) and resizes it for a mini-batch: net_keys in [net], each "@"
 * replaced by mark and each "!" by freeze. */
static int build(Net *net, const char *tmpl, const char *net_keys, const char *mark,
                 const char *freeze, Error *e)
{
    char text[4096], filled[4096];
    snprintf(text, sizeof text, tmpl, net_keys);
    size_t at = 0;
    for (const char *c = text; *c && at + 32 < sizeof filled; c++) {
        const char *put = *c == '@' ? mark : *c == '!' ? freeze : NULL;
        if (put)
            at += (size_t)snprintf(filled + at, sizeof filled - at, "%s", put);
        else
            filled[at++] = *c;
    }
    filled[at] = 0;
    int st = net_build_from_text(net, filled, "t.cfg", 1, 7, e);
    return st ? st : net_resize(net, net->hyper.batch / net->hyper.subdivisions, 0, e);
}

/* Fills the input and labels of mini-batch sub: pixels in [0, 1), or token ids. */
static void fill(Net *net, int sub)
{
    const size_t n = (size_t)net->batch * shape_size(net->in_shape);
    for (size_t i = 0; i < n; i++)
        net->input[i] = net->seq ? (float)((i * 7 + (size_t)sub * 3) % (size_t)net->vocab)
                                 : (float)((i * 37 + (size_t)sub * 11) % 101) / 101.0f;
    const int labels = net->batch * net_labels_per_sample(net);
    for (int i = 0; i < labels; i++)
        net->labels[i] = (i * 5 + sub) % net->classes;
}

/* The gradients of one step's mini-batches, as trainer_step accumulates them. */
static void accumulate(Net *net)
{
    for (int sub = 0; sub < net->hyper.subdivisions; sub++) {
        fill(net, sub);
        net->draw_id = net->step * (uint64_t)net->hyper.subdivisions + (uint64_t)sub;
        net_forward(net);
        net_backward(net);
    }
}

static int same(const float *a, const float *b, size_t n)
{
    return !memcmp(a, b, n * sizeof *a);
}

/* net_keys (and marks) against the same net with memory_plan=0 and without recompute (both with
 * freeze at "!"): gradients and running statistics after one step, weights and statistics after
 * 3 optimizer steps, a smaller slab. */
static void check_same_training(const char *tmpl, const char *net_keys, const char *mark,
                                const char *freeze)
{
    Net plain, ckpt;
    Error e = {0};
    if (build(&plain, tmpl, "memory_plan=0", "", freeze, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return;
    }
    if (build(&ckpt, tmpl, net_keys, mark, freeze, &e)) {
        fprintf(stderr, "FAIL setup (%s %s): %s\n", net_keys, mark, e.msg);
        check_failures++;
        net_free(&plain);
        return;
    }
    CHECK(ckpt.n_segments > 1 || (!*mark && !strstr(net_keys, "recompute_every")));
    CHECK(ckpt.activation_bytes < plain.activation_bytes);
    plain.train = ckpt.train = 1;
    accumulate(&plain);
    accumulate(&ckpt);
    CHECK(plain.loss == ckpt.loss);
    CHECK(same(plain.grads, ckpt.grads, plain.n_params));
    CHECK(same(plain.state, ckpt.state, plain.n_state)); /* moved once per forward */
    Optimizer po, co;
    CHECK(optimizer_init(&po, &plain, &e) == CDL_OK && optimizer_init(&co, &ckpt, &e) == CDL_OK);
    optimizer_step(&po, &plain, 0.05f);
    optimizer_step(&co, &ckpt, 0.05f);
    for (int k = 0; k < 2; k++) {
        accumulate(&plain);
        accumulate(&ckpt);
        optimizer_step(&po, &plain, 0.05f);
        optimizer_step(&co, &ckpt, 0.05f);
    }
    CHECK(same(plain.params, ckpt.params, plain.n_params));
    CHECK(same(plain.state, ckpt.state, plain.n_state));
    CHECK(same(net_output(&plain), net_output(&ckpt),
               (size_t)plain.batch * shape_size(plain.layers[plain.n_layers - 1].out_shape)));
    optimizer_free(&po);
    optimizer_free(&co);
    net_free(&plain);
    net_free(&ckpt);
}

static void test_image_net(void)
{
    check_same_training(image_net, "", "", "");
    for (int every = 1; every <= 5; every++) {
        char key[64];
        snprintf(key, sizeof key, "recompute_every=%d", every);
        check_same_training(image_net, key, "", "");
    }
    check_same_training(image_net, "", "checkpoint=1", "");
    check_same_training(image_net, "recompute_every=4", "checkpoint=1", "");
}

static void test_sequence_net(void)
{
    check_same_training(sequence_net, "", "", "");
    check_same_training(sequence_net, "recompute_every=2", "", "");
    check_same_training(sequence_net, "recompute_every=3", "", "");
    check_same_training(sequence_net, "", "checkpoint=1", "");
}

/* BatchFill: pass `pass` of a step as fill makes mini-batch `pass`. */
static int fill_pass(Net *net, int pass, void *ctx, Error *e)
{
    (void)ctx, (void)e;
    fill(net, pass);
    return CDL_OK;
}

/* The sequence net trained as the trainer trains it, each mini-batch in two passes (the second
 * reuses the packed weights of the first, StepContext.same_weights): with the plan and segments
 * it gives the weights it gives with every buffer its own, bit for bit. */
static void check_same_split_training(const char *net_keys, const char *mark)
{
    Net plain, ckpt;
    Optimizer po, co;
    Error e = {0};
    if (build(&plain, sequence_net, "memory_plan=0", "", "", &e) ||
        build(&ckpt, sequence_net, net_keys, mark, "", &e) || net_resize_split(&plain, 2, &e) ||
        net_resize_split(&ckpt, 2, &e) || optimizer_init(&po, &plain, &e) ||
        optimizer_init(&co, &ckpt, &e)) {
        fprintf(stderr, "FAIL setup (%s %s): %s\n", net_keys, mark, e.msg);
        check_failures++;
        return;
    }
    plain.train = ckpt.train = 1;
    for (int step = 0; step < 3; step++) {
        float plain_loss, ckpt_loss;
        CHECK(trainer_step_with(&plain, &po, fill_pass, NULL, 0.01f, &plain_loss, &e) == CDL_OK);
        CHECK(trainer_step_with(&ckpt, &co, fill_pass, NULL, 0.01f, &ckpt_loss, &e) == CDL_OK);
        CHECK(plain_loss == ckpt_loss);
    }
    CHECK(same(plain.params, ckpt.params, plain.n_params));
    optimizer_free(&po);
    optimizer_free(&co);
    net_free(&plain);
    net_free(&ckpt);
}

static void test_sequence_net_in_split_passes(void)
{
    check_same_split_training("", "");
    check_same_split_training("recompute_every=2", "");
    check_same_split_training("recompute_every=3", "");
    check_same_split_training("", "checkpoint=1");
}

/* Layers 0-2 frozen (inference mode, no backward): segments below, across and above it. */
static void test_frozen_layers(void)
{
    check_same_training(image_net, "", "", "freeze=1");
    check_same_training(image_net, "recompute_every=2", "", "freeze=1");
    check_same_training(image_net, "recompute_every=4", "", "freeze=1");
    check_same_training(image_net, "", "checkpoint=1", "freeze=1");
}

/* A network without gradients recomputes nothing: its segments are dropped. */
static void test_inference_net_keeps_every_buffer(void)
{
    Net a, b;
    Error e = {0};
    char text[4096];
    snprintf(text, sizeof text, image_net, "recompute_every=2");
    for (char *m; (m = strpbrk(text, "@!"));)
        *m = ' ';
    CHECK(net_build_from_text(&a, text, "t.cfg", 0, 7, &e) == CDL_OK);
    snprintf(text, sizeof text, image_net, "");
    for (char *m; (m = strpbrk(text, "@!"));)
        *m = ' ';
    CHECK(net_build_from_text(&b, text, "t.cfg", 0, 7, &e) == CDL_OK);
    CHECK(a.n_segments == 0);
    CHECK(net_resize(&a, 4, 0, &e) == CDL_OK && net_resize(&b, 4, 0, &e) == CDL_OK);
    CHECK(a.activation_bytes == b.activation_bytes);
    size_t measured = 0;
    net_free(&a);
    CHECK(net_build_from_text(&a, text, "t.cfg", 1, 7, &e) == CDL_OK);
    CHECK(net_activation_bytes(&a, 4, &measured, &e) == CDL_OK);
    CHECK(net_resize(&a, 4, 0, &e) == CDL_OK && a.activation_bytes == measured);
    net_free(&a);
    net_free(&b);
}

/* The non-finite diagnosis names the same layer with and without recompute, though the
 * segments' outputs are gone by then. */
static void test_nonfinite_diagnosis(void)
{
    Net plain, ckpt;
    Error e = {0};
    if (build(&plain, image_net, "", "", "", &e) ||
        build(&ckpt, image_net, "recompute_every=2", "", "", &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return;
    }
    Net *nets[] = {&plain, &ckpt};
    int found[2];
    for (int k = 0; k < 2; k++) {
        Net *n = nets[k];
        n->train = 1;
        Param *w = layer_param(&n->layers[8], "weights");
        w->data[0] = NAN; /* layer 8 [convolutional]: its output goes non-finite */
        fill(n, 0);
        net_forward(n);
        CHECK(!isfinite(n->loss));
        found[k] = net_first_nonfinite_output(n);
    }
    CHECK(found[0] == 8 && found[1] == 8);
    net_free(&plain);
    net_free(&ckpt);
}

int main(void)
{
    test_image_net();
    test_sequence_net();
    test_sequence_net_in_split_passes();
    test_frozen_layers();
    test_inference_net_keeps_every_buffer();
    test_nonfinite_diagnosis();
    return check_report("test_recompute");
}
