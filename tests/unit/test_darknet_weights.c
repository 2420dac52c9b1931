/* darknet .weights: the byte layout cdl writes, the round trip, the header variants darknet
 * reads (int32 `seen`, transposed connected weights), and the refusal of files that do not
 * fit the cfg. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/net.h"
#include "model/darknet_weights.h"

/* conv+BN, grouped conv without BN, [batchnorm], connected+BN, connected: every layout. */
static const char *const CFG_TEXT = "[net]\nbatch=2\nwidth=4\nheight=4\nchannels=2\n"
                                    "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                                    "batch_normalize=1\nactivation=leaky\n"
                                    "[maxpool]\nsize=2\nstride=2\n"
                                    "[convolutional]\nfilters=4\nsize=1\ngroups=2\n"
                                    "[batchnorm]\n"
                                    "[connected]\noutput=3\nbatch_normalize=1\n"
                                    "[connected]\noutput=2\n"
                                    "[softmax]\n";

static char path[64];

static int build(Net *net, const char *text)
{
    Error e = {0};
    int st = net_build_from_text(net, text, "t.cfg", 0, 7, &e);
    if (st)
        fprintf(stderr, "cannot build: %s\n", e.msg);
    CHECK(st == CDL_OK);
    return st;
}

/* Every tensor value distinct (variances positive); a [batchnorm] keeps its zero shift. */
static void fill_distinct(Net *net)
{
    for (size_t i = 0; i < net->n_params; i++)
        net->params[i] = 0.001f * (float)(i + 1);
    for (size_t i = 0; i < net->n_state; i++)
        net->state[i] = 0.5f + 0.01f * (float)i;
    memset(layer_param(&net->layers[3], "biases")->data, 0, 4 * sizeof(float));
}

static long file_size(const char *p)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

static void write_bytes(const char *p, const void *data, size_t n)
{
    FILE *f = fopen(p, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n);
    if (f)
        fclose(f);
}

/* The whole file at p (malloc'd), its size in *n. */
static unsigned char *read_all(const char *p, size_t *n)
{
    long size = file_size(p);
    unsigned char *data = malloc(size > 0 ? (size_t)size : 1);
    FILE *f = fopen(p, "rb");
    *n = f && data && fread(data, 1, (size_t)size, f) == (size_t)size ? (size_t)size : 0;
    if (f)
        fclose(f);
    return data;
}

static void test_save_writes_darknets_header_and_layer_order(void)
{
    Net net;
    if (build(&net, CFG_TEXT))
        return;
    fill_distinct(&net);
    Error e = {0};
    CHECK(darknet_weights_save(&net, path, 1234, &e) == CDL_OK);
    size_t n;
    unsigned char *data = read_all(path, &n);
    CHECK(n == 20 + 4 * (net.n_params + net.n_state - 4)); /* less [batchnorm]'s shift */
    int32_t version[3];
    uint64_t seen;
    memcpy(version, data, 12);
    memcpy(&seen, data + 12, 8);
    CHECK(version[0] == 0 && version[1] == 2 && version[2] == 0 && seen == 1234);
    /* Layer 0 (conv + BN): biases, scales, rolling_mean, rolling_variance, weights. */
    const char *conv[] = {"biases", "scales", "rolling_mean", "rolling_variance", "weights"};
    size_t at = 20;
    for (int k = 0; k < 5; k++) {
        const Param *p = layer_param(&net.layers[0], conv[k]);
        CHECK(!memcmp(data + at, p->data, p->count * 4));
        at += p->count * 4;
    }
    /* Layer 2 (conv, no BN): biases, weights; layer 3 ([batchnorm]): scales, mean, variance. */
    const char *later[] = {"biases", "weights", "scales", "rolling_mean", "rolling_variance"};
    for (int k = 0; k < 5; k++) {
        const Param *p = layer_param(&net.layers[k < 2 ? 2 : 3], later[k]);
        CHECK(!memcmp(data + at, p->data, p->count * 4));
        at += p->count * 4;
    }
    /* Layer 4 (connected + BN): biases, weights, then the batch-norm values. */
    const char *fc[] = {"biases", "weights", "scales", "rolling_mean", "rolling_variance"};
    for (int k = 0; k < 5; k++) {
        const Param *p = layer_param(&net.layers[4], fc[k]);
        CHECK(!memcmp(data + at, p->data, p->count * 4));
        at += p->count * 4;
    }
    free(data);
    net_free(&net);
}

static void test_round_trip_restores_every_tensor_and_turns_on_darknet_batch_norm(void)
{
    Net saved, loaded;
    if (build(&saved, CFG_TEXT) || build(&loaded, CFG_TEXT))
        return;
    fill_distinct(&saved);
    layer_param(&loaded.layers[3], "biases")->data[1] = 5.0f; /* darknet has no such shift */
    Error e = {0};
    DarknetHeader h;
    CHECK(darknet_weights_save(&saved, path, 99, &e) == CDL_OK);
    CHECK(darknet_weights_load(&loaded, path, &h, &e) == CDL_OK);
    CHECK(h.major == 0 && h.minor == 2 && h.seen == 99);
    CHECK(!memcmp(saved.params, loaded.params, saved.n_params * sizeof(float)));
    CHECK(!memcmp(saved.state, loaded.state, saved.n_state * sizeof(float)));
    CHECK(loaded.hyper.bn_darknet == 1);
    char *text = cfg_to_text(&loaded.cfg);
    CHECK_CONTAINS(text, "bn_darknet=1"); /* so checkpoints of the net keep it */
    free(text);
    net_free(&saved);
    net_free(&loaded);
}

static void test_an_explicit_bn_darknet_is_kept(void)
{
    char text[1024];
    snprintf(text, sizeof text, "[net]\nbn_darknet=0\n%s", CFG_TEXT + strlen("[net]\n"));
    Net net;
    if (build(&net, text))
        return;
    Error e = {0};
    CHECK(darknet_weights_save(&net, path, 0, &e) == CDL_OK);
    CHECK(darknet_weights_load(&net, path, NULL, &e) == CDL_OK);
    CHECK(net.hyper.bn_darknet == 0);
    net_free(&net);
}

static void test_old_header_and_transposed_connected_weights_are_read(void)
{
    /* Version 0.1.0 stores `seen` as an int32; major 1001 additionally stores connected
     * weights [inputs][outputs]. */
    const char *text = "[net]\nwidth=3\nheight=1\nchannels=1\n[connected]\noutput=2\n";
    for (int major = 0; major <= 1001; major += 1001) {
        Net net;
        if (build(&net, text))
            return;
        const int32_t header[4] = {major, 1, 0, 77};
        const float biases[2] = {0.5f, -0.5f};
        /* weights [out=2][in=3] = {{1,2,3},{4,5,6}}, stored transposed for major 1001 */
        const float rows[6] = {1, 2, 3, 4, 5, 6}, columns[6] = {1, 4, 2, 5, 3, 6};
        unsigned char file[16 + 8 + 24];
        memcpy(file, header, 16);
        memcpy(file + 16, biases, 8);
        memcpy(file + 24, major ? columns : rows, 24);
        write_bytes(path, file, sizeof file);
        Error e = {0};
        DarknetHeader h;
        CHECK(darknet_weights_load(&net, path, &h, &e) == CDL_OK);
        CHECK(h.seen == 77 && h.major == major);
        CHECK(!memcmp(layer_param(&net.layers[0], "weights")->data, rows, 24));
        CHECK(!memcmp(layer_param(&net.layers[0], "biases")->data, biases, 8));
        net_free(&net);
    }
}

/* Loads path into a net of CFG_TEXT and checks the refusal. */
static void expect_refused(const char *needle)
{
    Net net;
    if (build(&net, CFG_TEXT))
        return;
    Error e = {0};
    CHECK(darknet_weights_load(&net, path, NULL, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, needle);
    net_free(&net);
}

static void test_files_that_do_not_fit_the_cfg_are_refused_naming_the_layer(void)
{
    Net net;
    if (build(&net, CFG_TEXT))
        return;
    fill_distinct(&net);
    Error e = {0};
    CHECK(darknet_weights_save(&net, path, 0, &e) == CDL_OK);
    size_t n;
    unsigned char *data = read_all(path, &n);
    /* Layer 0 holds 4 * (4 * 4 + 72) = 352 bytes after the 20-byte header: cutting the file
     * at 400 ends it inside layer 2 (layer 1, maxpool, has nothing). */
    write_bytes(path, data, 400);
    expect_refused(path);
    expect_refused("the data ends inside layer 2 [convolutional] of t.cfg");
    write_bytes(path, data, 10);
    expect_refused("too short for a darknet .weights header");
    unsigned char *longer = calloc(n + 8, 1);
    memcpy(longer, data, n);
    write_bytes(path, longer, n + 8);
    expect_refused("8 bytes more than the layers of t.cfg need (the last with tensors is layer 5 "
                   "[connected])");
    /* A negative variance (layer 0's first) is what a shifted layout reads. */
    const float negative = -1.0f;
    memcpy(data + 20 + 12 * 4, &negative, 4);
    write_bytes(path, data, n);
    expect_refused("layer 0 [convolutional]: rolling_variance[0] = -1 is not a valid value");
    free(longer);
    free(data);
    net_free(&net);
}

static void test_a_batchnorm_with_a_shift_cannot_be_saved(void)
{
    Net net;
    if (build(&net, CFG_TEXT))
        return;
    fill_distinct(&net);
    layer_param(&net.layers[3], "biases")->data[2] = 0.25f;
    Error e = {0};
    CHECK(darknet_weights_save(&net, path, 0, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "layer 3 [batchnorm]: its shift (biases) is not zero");
    net_free(&net);
}

static void test_a_bias_free_convolution_cannot_be_saved(void)
{
    Net net;
    if (build(&net, "[net]\nbatch=1\nchannels=1\nheight=4\nwidth=4\n[convolutional]\nfilters=2\n"
                    "size=3\nbias=0\nactivation=linear\n"))
        return;
    Error e = {0};
    remove(path); /* the earlier tests' file: the refused save writes none */
    CHECK(darknet_weights_save(&net, path, 0, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg,
                   "layer 0 [convolutional]: darknet .weights have no bias-free layer (bias=0)");
    FILE *f = fopen(path, "rb");
    CHECK(!f);
    if (f)
        fclose(f);
    net_free(&net);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/cdl_test_darknet_%d.weights", (int)getpid());
    test_save_writes_darknets_header_and_layer_order();
    test_round_trip_restores_every_tensor_and_turns_on_darknet_batch_norm();
    test_an_explicit_bn_darknet_is_kept();
    test_old_header_and_transposed_connected_weights_are_read();
    test_files_that_do_not_fit_the_cfg_are_refused_naming_the_layer();
    test_a_batchnorm_with_a_shift_cannot_be_saved();
    test_a_bias_free_convolution_cannot_be_saved();
    remove(path);
    return check_report("darknet_weights");
}
