/* Token-by-token inference (forward_at, the cached step of generation) on the GPU backend gives
 * the rows the GPU's whole-sequence forward gives, layer by layer (and with 16-bit activations
 * under bf16 and fp16, at the output): [embedding], [positional], [layernorm], [linear] (tie=1
 * included), [softmax], [attention] (its key/value cache, 16-bit under bf16 and fp16) and [rnn],
 * [lstm], [gru] (their state; under bf16 and fp16 too, their outputs 16-bit), as
 * test_layers_seq.c and test_attention.c check it on the CPU; and beam search's reordering of
 * [attention]'s cache and the recurrent layers' state on the device (gather_samples), as
 * test_seq2seq.c and test_recurrent.c check it on the CPU.
 * Skipped in a build without the GPU backend (GPU=1 runs it on the device, GPU=sim on the
 * simulator). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/net.h"

#define SEQ(batch, seq, inputs, vocab)                                                             \
    "[net]\nbatch=" #batch "\nseq=" #seq "\ninputs=" #inputs "\nvocab=" #vocab "\n"

/* float32's unit roundoff */
#define FP32_U 0x1p-24

/* forward and forward_at compute each row from the same values by the same formulas, but the
 * products over batch rows (forward_at) and over batch * T rows (forward) may take other cuBLAS
 * kernels, and attention's row kernel sums q.k and the weighted values in its own order where the
 * forward's strided products sum in theirs: the sums of k terms differ by round-off, about
 * u sqrt(k) of their size for terms of random sign (test_backend_ops.c's derivation), passed on
 * through the layers in quadrature. So tol = 8 u sqrt(sum over the layers of their largest sum,
 * the larger of a sample's input and output sizes): 8 for the largest of many elements (4
 * standard deviations) and two orders' errors. */
static double forward_at_tolerance(const Net *net)
{
    double k = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        k += fmax((double)shape_size(l->in_shape), (double)shape_size(l->out_shape));
    }
    return 8.0 * FP32_U * sqrt(k);
}

/* n floats of device memory at x, in a malloc'd host copy, after the net's passes. */
static float *download(Net *net, const float *x, size_t n)
{
    float *c = malloc(n * sizeof *c);
    Error err = {0};
    if (net_sync(net, &err)) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        check_failures++;
    }
    net->backend->download(c, x, n * sizeof *c);
    return c;
}

/* Random ids below vocab (one outside it) or N(0, 1) features, uploaded as the net's input. */
static void upload_input(Net *net, uint64_t seed)
{
    const size_t n = (size_t)net->batch * shape_size(net->in_shape);
    const int ids = net->layers[0].type->reads_token_ids;
    float *x = malloc(n * sizeof *x);
    Rng rng;
    rng_seed(&rng, seed, 0);
    for (size_t i = 0; i < n; i++)
        x[i] = ids ? (float)rng_below(&rng, (uint32_t)net->vocab) : rng_normal(&rng);
    if (ids)
        x[3] = -1; /* an id outside the vocab: a zero row */
    net->backend->upload(net->input, x, n * sizeof *x);
    free(x);
}

/* Builds text on the GPU (inference), runs the forward over whole sequences, then a forward over
 * other inputs (a stale cache every row must overwrite) and every layer's output set to NaN, then
 * forward_at for t = 0 .. T-1 over the first inputs: every layer's output must be the first
 * forward's, within tolerance (0: the same bits). */
static void check_forward_at(const char *name, const char *text, int exact)
{
    Net net;
    Error err = {0};
    if (net_build_from_text_on(&net, text, name, 0, 5, (NetPlacement){CDL_BACKEND_GPU, 0}, &err) ||
        net_resize(&net, net.hyper.batch, 0, &err)) {
        fprintf(stderr, "FAIL %s: %s\n", name, err.msg);
        check_failures++;
        return;
    }
    CHECK(net_can_forward_at(&net));
    net.train = 0;
    upload_input(&net, 1);
    net_forward(&net);
    float *want[16];
    size_t n[16];
    CHECK(net.n_layers <= 16);
    for (int i = 0; i < net.n_layers && i < 16; i++) {
        n[i] = (size_t)net.batch * shape_size(net.layers[i].out_shape);
        want[i] = download(&net, net.layers[i].out, n[i]);
    }
    upload_input(&net, 2);
    net_forward(&net);
    for (int i = 0; i < net.n_layers && i < 16; i++) {
        float *nan = malloc(n[i] * sizeof *nan);
        for (size_t k = 0; k < n[i]; k++)
            nan[k] = NAN;
        net.backend->upload(net.layers[i].out, nan, n[i] * sizeof *nan);
        free(nan);
    }
    upload_input(&net, 1);
    for (int t = 0; t < net.seq; t++)
        net_forward_at(&net, 0, t);
    const double tol = exact ? 0 : forward_at_tolerance(&net);
    double worst = 0;
    for (int i = 0; i < net.n_layers && i < 16; i++) {
        float *got = download(&net, net.layers[i].out, n[i]);
        const double e = check_rel_error(got, want[i], n[i]);
        worst = fmax(worst, e);
        if (!(e <= tol))
            fprintf(stderr,
                    "FAIL %s: layer %d [%s] forward_at differs from forward by %.3g > %.3g\n", name,
                    i, net.layers[i].type->name, e, tol);
        CHECK(e <= tol);
        free(got);
        free(want[i]);
    }
    printf("gpu forward_at, %s: largest relative difference %.3g (tolerance %.3g)\n", name, worst,
           tol);
    net_free(&net);
}

/* Builds text on the GPU for inference in precision p (its storage planned for p); 0 when built,
 * else a failure reported. */
static int build_in_precision(Net *net, const char *name, const char *text, GemmPrecision p)
{
    Error err = {0};
    if (net_build_from_text_on(net, text, name, 0, 5, (NetPlacement){CDL_BACKEND_GPU, 0}, &err)) {
        fprintf(stderr, "FAIL %s: %s\n", name, err.msg);
        check_failures++;
        return 1;
    }
    net_set_precision(net, p);
    if (net_resize(net, net->hyper.batch, 0, &err)) {
        fprintf(stderr, "FAIL %s: %s\n", name, err.msg);
        check_failures++;
        net_free(net);
        return 1;
    }
    return 0;
}

/* The same in precision p (bf16 or fp16), where every layer but the last keeps its output in 16
 * bits (core/net_storage.h): a row's sums in forward_at differ from the forward's by float32
 * round-off, and a stored value that falls near a rounding boundary can round to the neighbouring
 * 16-bit value, 2u of itself (u = 2^-8 bf16, 2^-11 fp16), which the layers after it pass on with
 * gains about 1: the last layer's rows (float32, the net's output) agree within forward_at's
 * tolerance plus 2u for each of the S stored tensors (test_backend_ops' 16-bit term), of the
 * largest value. Every layer's output is set to NaN in every type (all bits set) before the cached
 * step. */
static void check_forward_at_16bit(const char *name, const char *text, GemmPrecision p)
{
    Net net;
    if (build_in_precision(&net, name, text, p))
        return;
    int stored = 0;
    for (int i = 0; i < net.n_layers; i++)
        stored += net.layers[i].storage != ELEM_F32;
    CHECK(stored == net.n_layers - 1);
    net.train = 0;
    upload_input(&net, 1);
    net_forward(&net);
    const Layer *last = &net.layers[net.n_layers - 1];
    const size_t n = (size_t)net.batch * shape_size(last->out_shape);
    float *want = download(&net, last->out, n);
    upload_input(&net, 2);
    net_forward(&net);
    for (int i = 0; i < net.n_layers; i++) {
        const size_t bytes = (size_t)net.batch * shape_size(net.layers[i].out_shape) *
                             elem_bytes(net.layers[i].storage);
        unsigned char *nan = malloc(bytes);
        memset(nan, 0xff, bytes);
        net.backend->upload(net.layers[i].out, nan, bytes);
        free(nan);
    }
    upload_input(&net, 1);
    for (int t = 0; t < net.seq; t++)
        net_forward_at(&net, 0, t);
    float *got = download(&net, last->out, n);
    const double u = p == GEMM_BF16 ? 0x1p-8 : 0x1p-11;
    const double e = check_rel_error(got, want, n),
                 tol = forward_at_tolerance(&net) + 2.0 * u * stored;
    if (!(e <= tol))
        fprintf(stderr, "FAIL %s: forward_at's output differs from forward's by %.3g > %.3g\n",
                name, e, tol);
    CHECK(e <= tol);
    printf("gpu forward_at, %s: largest relative difference %.3g (tolerance %.3g, %d tensors in 16 "
           "bits)\n",
           name, e, tol, stored);
    free(want), free(got);
    net_free(&net);
}

/* Three samples of other inputs through a whole forward; then their caches move on the device
 * (sample k gets sample from[k]'s, through scratch from the backend's alloc: device memory) with
 * their input rows, and the cached step of row t gives the last layer's forward row t of sample
 * from[k], within forward_at's tolerance: the keys and values (a recurrent layer's outputs and
 * saved values) of rows < t moved with the sample, one sample's cache to two and the first's
 * replaced by the last's. */
static void check_gathered_caches(const char *name, const char *text, GemmPrecision p)
{
    Net net;
    if (build_in_precision(&net, name, text, p))
        return;
    int stored = 0;
    for (int i = 0; i < net.n_layers; i++)
        stored += net.layers[i].storage != ELEM_F32;
    CHECK(net.batch == 3 && net_can_gather_samples(&net, 0));
    net.train = 0;
    const int from[3] = {2, 0, 0}, t = 4;
    const size_t row = shape_size(net.in_shape),
                 out = shape_size(net.layers[net.n_layers - 1].out_shape);
    float *x = malloc(3 * row * sizeof *x), *moved = malloc(3 * row * sizeof *x);
    Rng rng;
    rng_seed(&rng, 7, 0);
    for (size_t i = 0; i < 3 * row; i++)
        x[i] = net.vocab ? (float)rng_below(&rng, (uint32_t)net.vocab) : rng_normal(&rng);
    net.backend->upload(net.input, x, 3 * row * sizeof *x);
    net_forward(&net);
    float *want = download(&net, net.layers[net.n_layers - 1].out, 3 * out);
    float *scratch =
        net.backend->alloc(net_gather_samples(&net, 0, from, 3, NULL), sizeof *scratch);
    CHECK(scratch != NULL);
    net_gather_samples(&net, 0, from, 3, scratch);
    for (int k = 0; k < 3; k++) /* the samples' input rows, moved as their caches were */
        memcpy(moved + (size_t)k * row, x + (size_t)from[k] * row, row * sizeof *x);
    net.backend->upload(net.input, moved, 3 * row * sizeof *x);
    net_forward_at(&net, 0, t);
    float *got = download(&net, net.layers[net.n_layers - 1].out, 3 * out);
    const size_t per_row = out / (size_t)net.seq;
    float *got_rows = malloc(3 * per_row * sizeof *got_rows),
          *want_rows = malloc(3 * per_row * sizeof *want_rows);
    for (int k = 0; k < 3; k++) {
        memcpy(got_rows + k * per_row, got + k * out + t * per_row, per_row * sizeof *got);
        memcpy(want_rows + k * per_row, want + from[k] * out + t * per_row, per_row * sizeof *want);
    }
    const double u = p == GEMM_BF16 ? 0x1p-8 : p == GEMM_FP16 ? 0x1p-11 : 0.0;
    const double e = check_rel_error(got_rows, want_rows, 3 * per_row),
                 tol = forward_at_tolerance(&net) + 2.0 * u * stored;
    if (!(e <= tol))
        fprintf(stderr, "FAIL %s: row %d after the gather differs by %.3g > %.3g\n", name, t, e,
                tol);
    CHECK(e <= tol);
    printf("gpu gather_samples, %s: largest relative difference %.3g (tolerance %.3g)\n", name, e,
           tol);
    net.backend->free(scratch);
    free(x), free(moved), free(want), free(got), free(got_rows), free(want_rows);
    net_free(&net);
}

/* The key/value cache of [attention] (layer index of text) in precision p is 16-bit: its state
 * (qkv, the heads, P) half the bytes of the same net's in fp32. */
static void check_cache_bytes(const char *name, const char *text, int index, GemmPrecision p)
{
    Net fp32, half;
    if (build_in_precision(&fp32, name, text, GEMM_FP32))
        return;
    if (build_in_precision(&half, name, text, p)) {
        net_free(&fp32);
        return;
    }
    const size_t full = fp32.layers[index].state_bytes, got = half.layers[index].state_bytes;
    CHECK(full > 0 && 2 * got == full);
    printf("gpu attention cache, %s: %zu bytes of state (fp32: %zu)\n", name, got, full);
    net_free(&half);
    net_free(&fp32);
}

int main(void)
{
    if (!backend_find(CDL_BACKEND_GPU)) {
        printf("test_gpu_forward_at: skipped (no GPU backend in this build)\n");
        return 0;
    }
    /* Without products every value comes from the same operations in the same order. */
    check_forward_at("embedding, positional, layernorm",
                     SEQ(2, 5, 1, 11) "[embedding]\noutput=6\n[positional]\n[layernorm]\neps=0.5\n",
                     1);
    check_forward_at("the per-token stack, tied output",
                     SEQ(2, 5, 1, 11) "[embedding]\noutput=6\n[positional]\n[layernorm]\n"
                                      "[linear]\noutput=8\nactivation=gelu\n[linear]\noutput=6\n"
                                      "[linear]\ntie=1\n[softmax]\n",
                     0);
    check_forward_at("attention heads=2 between the token layers",
                     SEQ(3, 9, 1, 13) "[embedding]\noutput=8\n[positional]\n[layernorm]\n"
                                      "[attention]\nheads=2\n[layernorm]\n[linear]\ntie=1\n",
                     0);
    /* Dropout acts in training only: forward and forward_at alike leave it out. */
    check_forward_at("attention heads=4 dropout=0.5 on features",
                     SEQ(2, 70, 8, 0) "[attention]\nheads=4\ndropout=0.5\n", 0);
    check_forward_at("attention heads=1 staged=1", SEQ(2, 7, 6, 0) "[attention]\nstaged=1\n", 0);
    /* The recurrent layers' state: step t from the out and saved rows of the steps before. */
    check_forward_at("rnn relu", SEQ(2, 5, 6, 0) "[rnn]\noutput=7\nactivation=relu\n", 0);
    check_forward_at("gru", SEQ(3, 6, 5, 0) "[gru]\noutput=9\n", 0);
    check_forward_at("char lstm: embedding, lstm, linear",
                     SEQ(2, 6, 1, 9) "[embedding]\noutput=6\n[lstm]\noutput=8\n[linear]\n", 0);
    check_forward_at("lstm fused=0", SEQ(2, 4, 3, 0) "[lstm]\noutput=5\nfused=0\n", 0);
    /* A GPT block with dropout (the identity in inference), every output but the softmax's in
     * 16 bits */
#define GPT_16BIT                                                                                  \
    SEQ(3, 9, 1, 13)                                                                               \
    "[embedding]\noutput=8\n[positional]\n[layernorm]\n[attention]\nheads=2\n"                     \
    "[shortcut]\nfrom=-3\n[layernorm]\n[linear]\noutput=16\nactivation=gelu\n"                     \
    "[linear]\noutput=8\n[dropout]\nprobability=0.3\n[shortcut]\nfrom=-5\n"                        \
    "[layernorm]\n[linear]\ntie=1\n[softmax]\n"
    check_forward_at_16bit("gpt block, bf16 activations", GPT_16BIT, GEMM_BF16);
    check_forward_at_16bit("gpt block, fp16 activations", GPT_16BIT, GEMM_FP16);
    /* the attention's cache (qkv) 16-bit, as its P and heads: half the bytes; beam search moves
     * its 16-bit rows */
    check_cache_bytes("gpt block, bf16", GPT_16BIT, 3, GEMM_BF16);
    check_cache_bytes("gpt block, fp16", GPT_16BIT, 3, GEMM_FP16);
    check_gathered_caches("gpt block, bf16 activations", GPT_16BIT, GEMM_BF16);
    check_gathered_caches("gpt block, fp16 activations", GPT_16BIT, GEMM_FP16);
    /* the recurrent layers' state float32 inside, their outputs 16-bit */
#define RECURRENT_16BIT                                                                            \
    SEQ(2, 6, 1, 9)                                                                                \
    "[embedding]\noutput=6\n[lstm]\noutput=8\n[gru]\noutput=6\n[rnn]\noutput=5\n"                  \
    "activation=tanh\n[linear]\n"
    check_forward_at_16bit("embedding, lstm, gru, rnn, bf16 activations", RECURRENT_16BIT,
                           GEMM_BF16);
    check_forward_at_16bit("embedding, lstm, gru, rnn, fp16 activations", RECURRENT_16BIT,
                           GEMM_FP16);
    check_gathered_caches("attention heads=2 between the token layers",
                          SEQ(3, 9, 1, 13) "[embedding]\noutput=8\n[positional]\n[layernorm]\n"
                                           "[attention]\nheads=2\n[layernorm]\n[linear]\ntie=1\n",
                          GEMM_FP32);
    check_gathered_caches("char lstm",
                          SEQ(3, 6, 1, 9) "[embedding]\noutput=6\n[lstm]\noutput=8\n"
                                          "[linear]\n",
                          GEMM_FP32);
    check_gathered_caches("gru on features", SEQ(3, 6, 5, 0) "[gru]\noutput=9\n", GEMM_FP32);
    check_gathered_caches("rnn on features", SEQ(3, 6, 5, 0) "[rnn]\noutput=7\nactivation=relu\n",
                          GEMM_FP32);
    /* the recurrent layers' float32 state moved, their 16-bit outputs rounded from it again */
    check_gathered_caches("embedding, lstm, gru, rnn, bf16 activations",
                          SEQ(3, 6, 1, 9) "[embedding]\noutput=6\n[lstm]\noutput=8\n[gru]\n"
                                          "output=6\n[rnn]\noutput=5\nactivation=tanh\n[linear]\n",
                          GEMM_BF16);
    return check_report("test_gpu_forward_at");
}
