/* Sequence-to-sequence nets ([net] source=S): [embedding] part= and share=, [attention]
 * key_padding=, the tied head on the target's embedding; gradient checks with padded samples,
 * zero weights on masked keys, cfg errors, and the PyTorch nn.Transformer fixtures
 * tests/ref/seq2seq and seq2seq_norm_first (scripts/ref/make_seq2seq.py). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "data/text_pairs.h"
#include "gradcheck.h"
#include "layers/attention.h"
#include "ref_fixture.h"
#include "ref_net.h"
#include "train/decode.h"
#include "train/evaluate.h"

/* [net] of batch 3, 4 source and 5 target tokens of a 7-token vocabulary, then `layers`. */
#define PAIR_NET(layers) "[net]\nbatch=3\nsource=4\nseq=5\ninputs=1\nvocab=7\n" layers

/* A post-norm encoder layer over the source (layers 0-4; 4 is the memory) and a decoder layer over
 * the target (5-12) with the target's embedding `target_keys`, causal self-attention and
 * cross-attention, both masked, and a tied head (13-14). */
#define ENCODER_DECODER(target_keys)                                                               \
    PAIR_NET("[embedding]\noutput=8\npart=source\n[positional]\n"                                  \
             "[attention]\nheads=2\ncausal=0\nkey_padding=source\n[shortcut]\nfrom=-2\n"           \
             "[layernorm]\n"                                                                       \
             "[embedding]\noutput=8\npart=target\n" target_keys "[positional]\n"                   \
             "[attention]\nheads=2\nkey_padding=target\n[shortcut]\nfrom=-2\n[layernorm]\n"        \
             "[attention]\nheads=2\nsource=4\nkey_padding=source\n[shortcut]\nfrom=-2\n"           \
             "[layernorm]\n[linear]\ntie=1\n[softmax]\n")

/* The unit roundoff of precision p's operands: bf16's 8 significant bits, tf32's and fp16's 11. */
static double operand_unit(GemmPrecision p)
{
    return p == GEMM_FP32 ? 0x1p-24 : p == GEMM_BF16 ? 0x1p-8 : 0x1p-11;
}

/* Builds text as "t.cfg" for its batch, without gradients; prints the message on failure. */
static int build(const char *text, Net *net)
{
    Error e = {0};
    if (net_build_from_text(net, text, "t.cfg", 0, 5, &e) ||
        net_resize(net, net->hyper.batch, 0, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return -1;
    }
    return 0;
}

static void test_gradcheck(void)
{
    gradcheck_cfg("separate embeddings, tied head", ENCODER_DECODER(""));
    gradcheck_cfg("shared embedding, tied head", ENCODER_DECODER("share=0\n"));
    /* dropout on the attention weights, the masked keys' and the others' */
    gradcheck_cfg("dropout in every attention",
                  PAIR_NET("[embedding]\noutput=8\npart=source\n[attention]\nheads=2\ncausal=0\n"
                           "key_padding=source\ndropout=0.2\n[embedding]\noutput=8\n"
                           "part=target\n[attention]\nheads=2\nkey_padding=target\ndropout=0.2\n"
                           "[attention]\nheads=2\nsource=1\nkey_padding=source\ndropout=0.2\n"
                           "[linear]\n[softmax]\n"));
    /* key padding on a self-attention of one head, and cross-attention without it */
    gradcheck_cfg("key padding, one head",
                  PAIR_NET("[embedding]\noutput=4\npart=source\n[attention]\ncausal=0\n"
                           "key_padding=source\n[embedding]\noutput=4\npart=target\n"
                           "[attention]\nsource=1\n[linear]\n[softmax]\n"));
}

/* Shapes: each [embedding] gives its part's rows; the shared one has no weights of its own. */
static void test_shapes(void)
{
    Net net;
    if (build(ENCODER_DECODER("share=0\n"), &net))
        return;
    CHECK(net.in_shape.h == 9);
    CHECK(net.layers[0].out_shape.h == 4);
    CHECK(net.layers[5].out_shape.h == 5);
    CHECK(net.layers[5].n_params == 0);
    CHECK(net.layers[14].out_shape.h == 5 && net.layers[14].out_shape.w == 7);
    net_free(&net);
}

/* The attention weights [batch][H][T][S] of layer l's last forward: sample 0's of the padded key
 * (column `padded`) and of every key after the query (causal) are 0, every row sums to 1. */
static void check_weights(const Net *net, int l, int padded)
{
    const Attention *a = net->layers[l].priv;
    const int t = a->seq, s = a->mem_seq;
    for (int h = 0; h < a->heads; h++)
        for (int i = 0; i < t; i++) {
            const float *p = a->probs + ((size_t)h * t + (size_t)i) * (size_t)s;
            double sum = 0;
            for (int j = 0; j < s; j++) {
                if (j == padded || (a->causal && j > i))
                    CHECK(p[j] == 0.0f);
                else
                    CHECK(p[j] > 0.0f);
                sum += p[j];
            }
            CHECK_NEAR(sum, 1.0, 1e-5);
        }
}

/* Sample 0 of 3 source tokens (the 4th padded) and 4 target tokens (the 5th padded): the padded
 * keys get weight 0 in the encoder's self-attention, the decoder's and the cross-attention. */
static void test_masked_keys_get_no_weight(void)
{
    Net net;
    if (build(ENCODER_DECODER(""), &net))
        return;
    const int rows = net.in_shape.h;
    for (int b = 0; b < net.batch; b++)
        for (int r = 0; r < rows; r++)
            net.input[b * rows + r] = (float)((b + 3 * r) % 7);
    net.input[3] = -1;
    net.input[8] = -1;
    net_forward(&net);
    check_weights(&net, 2, 3);
    check_weights(&net, 7, 4);
    check_weights(&net, 10, 3);
    net_free(&net);
}

/* A cross-attention with dropout=0.5: in inference the output of dropout=0's (the same weights),
 * in training another one, whose probabilities still sum to 1 per row. */
/* Padding before a token (source row 1 of sample 0, row 2 of its target: not the paired text's
 * trailing padding, which the kernels skip whole) is masked key by key: no weight either. */
static void test_padding_between_tokens_gets_no_weight(void)
{
    Net net;
    if (build(ENCODER_DECODER(""), &net))
        return;
    const int rows = net.in_shape.h;
    for (int b = 0; b < net.batch; b++)
        for (int r = 0; r < rows; r++)
            net.input[b * rows + r] = (float)((b + 3 * r) % 7);
    net.input[1] = -1;
    net.input[4 + 2] = -1;
    net_forward(&net);
    check_weights(&net, 2, 1);
    check_weights(&net, 7, 2);
    check_weights(&net, 10, 1);
    net_free(&net);
}

static void test_dropout_only_in_training(void)
{
#define DROPOUT_NET(p)                                                                             \
    PAIR_NET("[embedding]\noutput=8\npart=source\n[embedding]\noutput=8\npart=target\n"            \
             "[attention]\nheads=2\nsource=0\nkey_padding=source\ndropout=" p "\n[linear]\n"       \
             "[softmax]\n")
    Net plain, dropped;
    Error e = {0};
    if (build(DROPOUT_NET("0"), &plain))
        return;
    if (net_build_from_text(&dropped, DROPOUT_NET("0.5"), "t.cfg", 1, 5, &e) ||
        net_resize(&dropped, 3, 0, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        net_free(&plain);
        return;
    }
    const size_t in_n = 3 * 9, out_n = 3 * 5 * 7;
    for (size_t i = 0; i < in_n; i++)
        plain.input[i] = dropped.input[i] = (float)(i % 7);
    net_forward(&plain);
    dropped.train = 0;
    net_forward(&dropped);
    CHECK(!memcmp(net_output(&plain), net_output(&dropped), out_n * sizeof(float)));
    dropped.train = 1;
    memset(dropped.labels, 0xff, 3 * 5 * sizeof *dropped.labels); /* -1: no loss */
    net_forward(&dropped);
    double diff = 0, worst_sum = 0;
    for (size_t i = 0; i < out_n; i++)
        diff = fmax(diff, fabs(net_output(&plain)[i] - net_output(&dropped)[i]));
    for (size_t r = 0; r < out_n / 7; r++) {
        double sum = 0;
        for (int k = 0; k < 7; k++)
            sum += net_output(&dropped)[r * 7 + (size_t)k];
        worst_sum = fmax(worst_sum, fabs(sum - 1));
    }
    CHECK(diff > 1e-3);
    CHECK(worst_sum < 1e-5);
    net_free(&plain);
    net_free(&dropped);
#undef DROPOUT_NET
}

/* The most probable token of row t of sample b's output. */
static int argmax_row(const Net *net, int b, int t)
{
    const float *p = net_output(net) + ((size_t)b * (size_t)net->seq + (size_t)t) * net->classes;
    int best = 0;
    for (int i = 1; i < net->classes; i++)
        best = p[i] > p[best] ? i : best;
    return best;
}

/* Greedy decoding of three sources in one batch, the decoder alone run per token, gives the
 * tokens of a whole forward per token and per source (BOS 5, EOS 6, random weights). */
static void test_decoding_runs_the_encoder_once(void)
{
    Net net;
    if (build(ENCODER_DECODER(""), &net))
        return;
    const int32_t a[] = {1, 2, 3, 4}, b[] = {4, 0}, c[] = {2};
    const int32_t *sources[] = {a, b, c};
    const int n_sources[] = {4, 2, 1};
    int32_t out[3 * 5];
    int n_out[3], first;
    Error e = {0};
    CHECK(decode_first_layer(&net, &first, &e) == CDL_OK && first == 5);
    const DecodeOptions uncached = {.use_cache = 0};
    CHECK(decode_greedy(&net, first, sources, n_sources, 3, 5, 6, &uncached, out, n_out, NULL,
                        &e) == CDL_OK);
    for (int k = 0; k < 3; k++) { /* one sample at a time, every layer for every token */
        float *x = net.input;
        for (size_t i = 0; i < 3 * 9; i++)
            x[i] = -1.0f;
        for (int r = 0; r < n_sources[k]; r++)
            x[r] = (float)sources[k][r];
        x[4] = 5; /* BOS */
        int n = 0;
        for (int t = 0; t < 5; t++) {
            net_forward(&net);
            const int id = argmax_row(&net, 0, t);
            if (id == 6)
                break;
            CHECK(n < n_out[k] && out[k * 5 + n] == id);
            n++;
            if (t + 1 < 5)
                x[4 + t + 1] = (float)id;
        }
        CHECK(n == n_out[k]);
    }
    const int32_t *too_long[] = {a, a};
    const int lengths[] = {4, 5};
    CHECK(decode_greedy(&net, first, too_long, lengths, 2, 5, 6, &uncached, out, n_out, NULL, &e) ==
          CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "the source has 5 tokens: the net reads 1 to 4");
    net_free(&net);
}

/* The log-probability of target [n] after source [n_source] by one whole forward of sample 0
 * (every other sample all padding): its tokens' at their rows, and EOS's after them when the
 * target left a row for it. */
static double teacher_forced_log_prob(Net *net, const int32_t *source, int n_source,
                                      const int32_t *target, int n, int bos, int eos)
{
    const int row = net->source + net->seq;
    float *x = net_host_input(net);
    for (int b = 0; b < net->batch; b++)
        text_pairs_input_row(b ? NULL : source, b ? 0 : n_source, bos, b ? NULL : target,
                             b ? -1 : n, net->source, net->seq, x + (size_t)b * row);
    net_commit_batch(net);
    net_forward(net);
    double sum = 0;
    for (int t = 0; t <= n && t < net->seq; t++)
        sum += log(net_output(net)[(size_t)t * net->classes + (size_t)(t < n ? target[t] : eos)]);
    return sum;
}

/* Whether every sample of the encoder's output (layer memory) is sample 0's: beam search's rows
 * all read its source. */
static int rows_read_one_source(const Net *net, int memory)
{
    const Layer *l = &net->layers[memory];
    const size_t n = shape_size(l->out_shape);
    for (int b = 1; b < net->batch; b++)
        for (size_t i = 0; i < n; i++)
            if (fabsf(l->out[(size_t)b * n + i] - l->out[i]) > 1e-6f)
                return 0;
    return 1;
}

/* Greedy decoding of three padded sources and beam search of three hypotheses (each length
 * penalty) over each source, cached and uncached: the same tokens, and log-probabilities within
 * 1e-5; every beam row reads the source, and the beam's log-probability is a whole forward's of
 * its target (BOS vocab-2, EOS
 * vocab-1, random weights: the targets run long and the beam's hypotheses extend one another's,
 * so its caches move between rows). */
static void check_cache_matches_uncached(const char *name, Net *net)
{
    const int32_t a[] = {1, 2, 3, 4, 0}, b[] = {4, 0}, c[] = {2};
    const int32_t *sources[] = {a, b, c};
    const int n_sources[] = {net->source, 2, 1};
    const int bos = net->vocab - 2, eos = net->vocab - 1, seq = net->seq;
    const DecodeOptions how[2] = {{.use_cache = 0}, {.use_cache = 1}};
    int32_t out[2][3 * 8];
    int n_out[2][3], first;
    double log_probs[2][3];
    Error e = {0};
    CHECK(seq <= 8 && net->batch == 3 && decode_first_layer(net, &first, &e) == CDL_OK);
    for (int cached = 0; cached < 2; cached++)
        CHECK(decode_greedy(net, first, sources, n_sources, 3, bos, eos, &how[cached], out[cached],
                            n_out[cached], log_probs[cached], &e) == CDL_OK);
    for (int k = 0; k < 3; k++) {
        CHECK(n_out[0][k] == n_out[1][k] && n_out[0][k] > 0);
        CHECK(!memcmp(out[0] + k * seq, out[1] + k * seq, (size_t)n_out[0][k] * sizeof **out));
        CHECK(fabs(log_probs[0][k] - log_probs[1][k]) < 1e-5);
    }
    for (int k = 0; k < 3; k++)
        for (float penalty = 0; penalty <= 2; penalty += 1) {
            for (int cached = 0; cached < 2; cached++)
                CHECK(decode_beam(net, first, sources[k], n_sources[k], 3, penalty, bos, eos,
                                  &how[cached], out[cached], n_out[cached], log_probs[cached],
                                  &e) == CDL_OK);
            CHECK(n_out[0][0] == n_out[1][0] && n_out[0][0] > 0);
            CHECK(!memcmp(out[0], out[1], (size_t)n_out[0][0] * sizeof **out));
            CHECK(fabs(log_probs[0][0] - log_probs[1][0]) < 1e-5);
            /* the best hypothesis's score is the model's for its target, whichever row it ran in
             * (every row reads the source) */
            CHECK(rows_read_one_source(net, first - 1));
            CHECK(fabs(log_probs[1][0] - teacher_forced_log_prob(net, sources[k], n_sources[k],
                                                                 out[1], n_out[1][0], bos, eos)) <
                  1e-5);
        }
    if (check_failures)
        fprintf(stderr, "  %s\n", name);
}

/* Sample k's input row x [S + T]: source tokens (k + r) % 5 for r < k + 2, the target rows'
 * tokens (3k + r) % 7 % (vocab - 1); -1 pads the source. */
static void fill_distinct_sample(const Net *net, float *x, int k)
{
    for (int r = 0; r < net->source + net->seq; r++)
        x[r] = r < net->source ? (r < k + 2 ? (float)((k + r) % 5) : -1.0f)
                               : (float)((3 * k + r) % 7 % (net->vocab - 1));
}

/* Three samples of other sources and targets through a whole forward; then their caches move
 * (sample k gets sample from[k]'s) with their input rows, and the cached step of row t of each
 * gives the forward's row t of sample from[k] to tol: self-attention's keys and values and the
 * memory's moved with the sample. */
static void check_gathered_caches(const char *name, Net *net, double tol)
{
    int first;
    Error e = {0};
    CHECK(decode_first_layer(net, &first, &e) == CDL_OK);
    const int from[3] = {2, 0, 0}, t = 3, row = net->source + net->seq;
    const size_t per_sample = (size_t)net->seq * (size_t)net->classes;
    float *x = net_host_input(net), *want = malloc(3 * per_sample * sizeof *want);
    for (int k = 0; k < 3; k++)
        fill_distinct_sample(net, x + (size_t)k * row, k);
    net_commit_batch(net);
    net_forward(net);
    memcpy(want, net_output(net), 3 * per_sample * sizeof *want);
    float *scratch = malloc(net_gather_samples(net, first, from, 3, NULL) * sizeof *scratch);
    net_gather_samples(net, first, from, 3, scratch);
    x = net_host_input(net);
    for (int k = 0; k < 3; k++) /* the samples' input rows, moved as their caches were */
        fill_distinct_sample(net, x + (size_t)k * row, from[k]);
    net_commit_batch(net);
    net_forward_at(net, first, t);
    double worst = 0;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < net->classes; i++) {
            const size_t at = (size_t)t * net->classes + (size_t)i;
            const double d =
                fabs(net_output(net)[k * per_sample + at] - want[from[k] * per_sample + at]);
            worst = d > worst ? d : worst;
        }
    CHECK(worst < tol);
    if (worst >= tol)
        fprintf(stderr, "  %s: moved caches' row %d off by %g (tolerance %g)\n", name, t, worst,
                tol);
    free(scratch);
    free(want);
}

static void test_cached_decoding_matches_uncached(void)
{
    Net net;
    if (!build(ENCODER_DECODER(""), &net)) {
        check_cache_matches_uncached("post-norm", &net);
        check_gathered_caches("post-norm", &net, 1e-5);
        net_free(&net);
    }
    Error e = {0};
    if (net_build_from_file(&net, "tests/ref/seq2seq_norm_first.cfg", NULL, 0, 0, 7, &e) ||
        net_resize(&net, net.hyper.batch, 0, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return;
    }
    check_cache_matches_uncached("norm_first", &net);
    check_gathered_caches("norm_first", &net, 1e-5);
    net_free(&net);
}

/* The cached step in 16-bit precisions (forward_at rounds what the forward rounds): the moved
 * caches' row against the forward's. Its dot products sum in another order than the forward's
 * gemms, so an operand rounded from values a float32 round-off apart may land on the neighbouring
 * 16-bit value, moving a sum by at most u of one term: for the P = 8 weight matrices' and heads'
 * products in quadrature, u sqrt(8) of the output probabilities (at most 1). */
static void test_cached_step_in_16_bits(void)
{
    static const GemmPrecision precisions[] = {GEMM_BF16, GEMM_TF32, GEMM_FP16};
    for (size_t i = 0; i < sizeof precisions / sizeof precisions[0]; i++) {
        Net net;
        Error e = {0};
        if (build(ENCODER_DECODER(""), &net))
            return;
        net_set_precision(&net, precisions[i]);
        if (net_resize(&net, net.hyper.batch, 0, &e)) {
            fprintf(stderr, "FAIL resize: %s\n", e.msg);
            check_failures++;
        } else {
            check_gathered_caches("16-bit", &net, 1e-5 + operand_unit(precisions[i]) * sqrt(8.0));
        }
        net_free(&net);
    }
}

/* Sampled decoding (temperature 1, top_k 4): the draws come from (seed, source, row), so a
 * source gets the same target alone as in a batch of others, cached or not; another seed gives
 * other targets; beam search refuses to sample. */
static void test_sampled_decoding_is_seeded(void)
{
    Net net;
    if (build(ENCODER_DECODER(""), &net))
        return;
    const int32_t a[] = {1, 2, 3, 4}, b[] = {4, 0}, c[] = {2};
    const int32_t *sources[] = {a, b, c};
    const int n_sources[] = {4, 2, 1};
    int32_t out[3][3 * 5];
    int n_out[3][3], first, differ = 0;
    double log_probs[3][3];
    Error e = {0};
    CHECK(decode_first_layer(&net, &first, &e) == CDL_OK);
    const DecodeOptions drawn = {{1.0f, 4, 0}, 11, 1}, uncached = {{1.0f, 4, 0}, 11, 0},
                        reseeded = {{1.0f, 4, 0}, 12, 1};
    CHECK(decode_greedy(&net, first, sources, n_sources, 3, 5, 6, &drawn, out[0], n_out[0],
                        log_probs[0], &e) == CDL_OK);
    CHECK(decode_greedy(&net, first, sources, n_sources, 3, 5, 6, &uncached, out[1], n_out[1],
                        log_probs[1], &e) == CDL_OK);
    CHECK(decode_greedy(&net, first, sources, n_sources, 3, 5, 6, &reseeded, out[2], n_out[2], NULL,
                        &e) == CDL_OK);
    for (int k = 0; k < 3; k++) {
        int32_t alone[5];
        int n_alone;
        CHECK(decode_greedy(&net, first, &sources[k], &n_sources[k], 1, 5, 6, &drawn, alone,
                            &n_alone, NULL, &e) == CDL_OK);
        CHECK(n_alone == n_out[0][k] && n_out[1][k] == n_out[0][k]);
        CHECK(!memcmp(alone, out[0] + 5 * k, (size_t)n_alone * sizeof *alone));
        CHECK(!memcmp(out[1] + 5 * k, out[0] + 5 * k, (size_t)n_alone * sizeof *alone));
        CHECK(fabs(log_probs[0][k] - log_probs[1][k]) < 1e-5);
        differ += n_out[2][k] != n_out[0][k] ||
                  memcmp(out[2] + 5 * k, out[0] + 5 * k, (size_t)n_alone * sizeof *alone);
    }
    CHECK(differ > 0);
    CHECK(decode_beam(&net, first, a, 4, 2, 1.0f, 5, 6, &drawn, out[0], n_out[0], NULL, &e) ==
          CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "not with --beam 2");
    net_free(&net);
}

static void test_cfg_errors(void)
{
    expect_cfg_error("[net]\nbatch=1\nsource=4\ninputs=1\n[embedding]\noutput=4\n",
                     "t.cfg:3: bad value '4' for key 'source' in [net]: source tokens come before "
                     "the target's in a net of token ids: it needs seq=T");
    expect_cfg_error(PAIR_NET("[embedding]\noutput=4\n"),
                     "t.cfg:7: bad value '' for key 'part' in [embedding]: a sequence-to-sequence "
                     "net ([net] source=) embeds the source or the target");
    expect_cfg_error("[net]\nseq=4\ninputs=1\n[embedding]\noutput=4\npart=target\n",
                     "t.cfg:6: bad value 'target' for key 'part' in [embedding]: part= is for "
                     "sequence-to-sequence nets");
    expect_cfg_error(PAIR_NET("[embedding]\noutput=4\npart=source\n[embedding]\noutput=8\n"
                              "part=target\nshare=0\n"),
                     "bad value '0' for key 'share' in [embedding]: layer 0 is not an [embedding] "
                     "of output=8");
    expect_cfg_error(PAIR_NET("[embedding]\noutput=4\npart=source\n[embedding]\noutput=4\n"
                              "part=target\nshare=0\nvocab=9\n"),
                     "t.cfg:14: bad value '9' for key 'vocab' in [embedding]: share= reads layer "
                     "0's table, of its vocab");
    expect_cfg_error(PAIR_NET("[embedding]\noutput=4\npart=source\n[attention]\ncausal=0\n"
                              "key_padding=target\n"),
                     "bad value 'target' for key 'key_padding' in [attention]: the keys are 4 rows "
                     "(the input's) but the target has 5 tokens");
    expect_cfg_error("[net]\nseq=4\ninputs=8\n[attention]\nkey_padding=source\n",
                     "t.cfg:5: bad value 'source' for key 'key_padding' in [attention]: a key "
                     "padding mask needs the source and target of a sequence-to-sequence net");
}

/* ---- cross-attention's strided products against staged=1's OpenBLAS gemms ---- */

/* Sample b's token ids into the net input: the source's first 3b + 1 rows padded away (sample 0
 * a whole source) from its end, and the target's 2b from its end; sample 2's source padded between
 * tokens too (row 1), sample 3's source all padding (no key left: zero weights). */
static void fill_padded_pairs(Net *net)
{
    const int rows = net->in_shape.h, s = net->source, t = net->seq;
    for (int b = 0; b < net->batch; b++) {
        float *ids = net->input + (size_t)b * rows;
        for (int r = 0; r < rows; r++)
            ids[r] = (float)((b + 3 * r) % 11);
        for (int r = s - 3 * b; r < s; r++)
            ids[r] = -1;
        for (int r = s + t - 2 * b; r < s + t; r++)
            ids[r] = -1;
    }
    net->input[2 * rows + 1] = -1;
    for (int r = 0; r < s; r++)
        net->input[3 * rows + r] = -1;
}

/* A training pass in precision prec at `threads` threads of a batch of 4 pairs of S source and T
 * target tokens (fill_padded_pairs) through the encoder's and the decoder's key-padded
 * self-attention, a cross-attention with `keys` (layer 6) and a head, width `width`: forward, then
 * backward from a fixed output gradient. The net is left built for its caller to read and free;
 * 0, or -1. */
static int cross_training_pass(int width, int s, int t, const char *keys, GemmPrecision prec,
                               int threads, Net *net)
{
    char text[1024];
    snprintf(text, sizeof text,
             "[net]\nbatch=4\nsource=%d\nseq=%d\ninputs=1\nvocab=11\n"
             "[embedding]\noutput=%d\npart=source\n[positional]\n"
             "[attention]\nheads=2\ncausal=0\nkey_padding=source\n"
             "[embedding]\noutput=%d\npart=target\n[positional]\n"
             "[attention]\nheads=2\nkey_padding=target\n"
             "[attention]\nsource=2\nkey_padding=source\n%s[linear]\noutput=11\n",
             s, t, width, width, keys);
    omp_set_num_threads(threads);
    Error e = {0};
    if (net_build_from_text(net, text, "t.cfg", 1, 5, &e) ||
        (net_set_precision(net, prec), net_resize(net, 4, 1, &e))) {
        fprintf(stderr, "FAIL build %s: %s\n", keys, e.msg);
        check_failures++;
        return -1;
    }
    fill_padded_pairs(net);
    net->train = 1;
    net->draw_id = 3;
    net_forward(net);
    net_zero_grads(net);
    Layer *last = &net->layers[net->n_layers - 1];
    Rng rng;
    rng_seed(&rng, 77, 8);
    check_fill_normal(last->delta, (size_t)net->batch * shape_size(last->out_shape), &rng);
    net_backward(net);
    return 0;
}

/* The largest relative error (check_rel_error) of got's output and parameter gradients from
 * want's. */
static double worst_error(const Net *got, const Net *want)
{
    const int last = got->n_layers - 1;
    const size_t out_n = (size_t)got->batch * shape_size(got->layers[last].out_shape);
    return fmax(check_rel_error(got->layers[last].out, want->layers[last].out, out_n),
                check_rel_error(got->grads, want->grads, got->n_params));
}

/* The output and every parameter gradient of the net whose cross-attention runs the strided
 * products against the same net's with staged=1 (OpenBLAS gemms), in precision prec, at 1 and 2
 * threads; and two runs give the same bytes. Within 1e-5 relative in fp32 (float32 sums in
 * other orders); in a 16-bit precision the operands that both round from values a float32
 * round-off apart can round to neighbours, each moving a sum by at most u of one of its terms:
 * u of the largest value besides (u = operand_unit). */
static void check_cross_against_staged(int width, int s, int t, const char *keys,
                                       GemmPrecision prec)
{
    char staged[128];
    snprintf(staged, sizeof staged, "%sstaged=1\n", keys);
    const double tol = 1e-5 + (prec == GEMM_FP32 ? 0 : operand_unit(prec));
    for (int threads = 1; threads <= 2; threads++) {
        Net got, again, want;
        if (cross_training_pass(width, s, t, keys, prec, threads, &got))
            return;
        if (cross_training_pass(width, s, t, keys, prec, threads, &again) ||
            cross_training_pass(width, s, t, staged, prec, threads, &want)) {
            net_free(&got);
            return;
        }
        const Layer *last = &got.layers[got.n_layers - 1];
        const size_t out_n = (size_t)got.batch * shape_size(last->out_shape);
        const double worst = worst_error(&got, &want);
        if (!(worst <= tol))
            fprintf(stderr,
                    "FAIL cross-attention %s C=%d S=%d T=%d precision %d, %d threads: %.3g "
                    "relative from staged=1 (tolerance %.3g)\n",
                    keys, width, s, t, (int)prec, threads, worst, tol);
        CHECK(worst <= tol);
        CHECK(!memcmp(last->out, again.layers[got.n_layers - 1].out, out_n * sizeof(float)));
        CHECK(!memcmp(got.grads, again.grads, got.n_params * sizeof(float)));
        net_free(&got);
        net_free(&again);
        net_free(&want);
    }
}

static void test_cross_attention_matches_staged(void)
{
    static const GemmPrecision precisions[] = {GEMM_FP32, GEMM_BF16, GEMM_TF32, GEMM_FP16};
    for (size_t i = 0; i < sizeof precisions / sizeof precisions[0]; i++) {
        const GemmPrecision p = precisions[i];
        check_cross_against_staged(64, 37, 21, "heads=4\n", p); /* D = 16, fewer queries */
        check_cross_against_staged(64, 9, 30, "heads=2\n", p);  /* D = 32 (translate.cfg's) */
        check_cross_against_staged(32, 20, 20, "heads=4\ndropout=0.2\n", p);
    }
}

/* The net of cross_training_pass in a 16-bit precision p against float32: its output and parameter
 * gradients within test_backend_ops' bound, 4 u sqrt(P) of the largest value for the P = 7 weight
 * matrices whose products round (three attention layers' two, the head's), 4 for the operands
 * rounded from values that carry earlier roundings and for attention's products of activations:
 * a sum of k products of operands rounded by up to u errs like a random walk, about u/4 of its
 * largest value at one standard deviation. */
static void check_cross_precision_near_fp32(const char *keys, GemmPrecision p)
{
    const double tol = 4.0 * operand_unit(p) * sqrt(7.0);
    Net got, want;
    if (cross_training_pass(64, 9, 30, keys, p, 2, &got))
        return;
    if (cross_training_pass(64, 9, 30, keys, GEMM_FP32, 2, &want)) {
        net_free(&got);
        return;
    }
    const double worst = worst_error(&got, &want);
    if (!(worst <= tol))
        fprintf(stderr, "FAIL %s precision %d: %.3g relative from fp32 (tolerance %.3g)\n", keys,
                (int)p, worst, tol);
    CHECK(worst <= tol);
    net_free(&got);
    net_free(&want);
}

static void test_cross_attention_precisions_near_fp32(void)
{
    static const GemmPrecision precisions[] = {GEMM_BF16, GEMM_TF32, GEMM_FP16};
    for (size_t i = 0; i < sizeof precisions / sizeof precisions[0]; i++) {
        check_cross_precision_near_fp32("heads=2\n", precisions[i]);
        check_cross_precision_near_fp32("heads=2\nstaged=1\n", precisions[i]);
        check_cross_precision_near_fp32("heads=2\ndropout=0.2\n", precisions[i]);
    }
}

/* ---- evaluation at each mini-batch's rows ---- */

/* The padded path that evaluate_pairs' packed one must equal: the pairs in file order, every
 * mini-batch at the net's full rows; the summed loss, and the target tokens, top-1 and top-5 hits
 * into counts [3]. */
static double padded_eval(Net *net, const TextPairs *tp, long counts[3])
{
    double loss = 0;
    net->loss_divisor = 1;
    for (size_t first = 0; first < tp->valid.n; first += (size_t)net->batch) {
        for (int b = 0; b < net->batch; b++) {
            const size_t i = first + (size_t)b;
            text_pairs_fill(tp, i < tp->valid.n ? &tp->valid.pairs[i] : NULL, b, net->source,
                            net->seq, net_host_input(net), net_host_labels(net));
        }
        net_commit_batch(net);
        net_forward(net);
        loss += net->loss;
        const float *out = net_host_output(net);
        const int *labels = net_batch_labels(net);
        for (int i = 0; i < net->batch * net->seq; i++) {
            if (labels[i] < 0)
                continue;
            const float *p = out + (size_t)i * (size_t)net->classes;
            int rank = 0;
            for (int k = 0; k < net->classes; k++)
                rank += p[k] > p[labels[i]] || (p[k] == p[labels[i]] && k < labels[i]);
            counts[0]++;
            counts[1] += rank == 0;
            counts[2] += rank < 5;
        }
    }
    return loss;
}

/* 11 validation pairs of 1 to 4 source and 0 to 4 target tokens in no order of length (the last
 * mini-batch of 3 holds 2): evaluate_pairs, whose mini-batches are pairs of similar length computed
 * at their longest pair's rows, gives the padded path's loss (to 1e-6 relative) and the same
 * token, top-1 and top-5 counts, and leaves the net at its full rows. */
static void test_eval_at_runtime_rows_matches_padded(void)
{
    Net net;
    if (build(ENCODER_DECODER("share=0\n"), &net))
        return;
    int32_t ids[110];
    TextPair pairs[11];
    for (int i = 0; i < 110; i++)
        ids[i] = (i * 5 + i / 7) % 5;
    for (int i = 0; i < 11; i++)
        pairs[i] = (TextPair){(size_t)i * 10, (size_t)i * 10 + 5, (i * 3) % 4 + 1, (i * 7) % 5};
    const TextPairs tp = {ids, {NULL, 0}, {pairs, 11}, 5, 6, 0};
    long want[3] = {0};
    const double want_loss = padded_eval(&net, &tp, want);
    EvalResult r;
    Error e = {0};
    CHECK(evaluate_pairs(&net, &tp, NULL, &r, &e) == CDL_OK);
    CHECK(r.samples == want[0]);
    CHECK_NEAR(r.loss, want_loss / (double)want[0], 1e-6 * fabs(r.loss));
    CHECK_NEAR(r.top1, (double)want[1] / (double)want[0], 1e-12);
    CHECK_NEAR(r.top5, (double)want[2] / (double)want[0], 1e-12);
    CHECK(net.rows_source == net.source && net.rows_target == net.seq);
    net_free(&net);
}

/* nn.Transformer (one encoder and decoder layer, d_model 16, 2 heads; tests/ref/NAME: seq2seq
 * post-norm, seq2seq_norm_first norm_first=True) between embeddings with positions and a tied
 * head, padded on both sides: the memory, the logits, the probabilities, the loss and every
 * parameter's gradient to 1e-4. */
static void check_nn_transformer(const char *name)
{
    RefFixture f;
    Net net;
    char ref[128], cfg[128];
    snprintf(ref, sizeof ref, "tests/ref/%s.ref", name);
    snprintf(cfg, sizeof cfg, "tests/ref/%s.cfg", name);
    if (ref_fixture_load(ref, &f)) {
        check_failures++;
        return;
    }
    if (ref_net_build(&net, &f, cfg, NULL, 0, 3)) {
        check_failures++;
        ref_fixture_free(&f);
        return;
    }
    net.train = 1;
    net_forward(&net);
    const size_t rows = (size_t)net.batch * (size_t)net.seq;
    ref_expect_close(&f, "out9", net.layers[9].out, (size_t)net.batch * 5 * 16);
    ref_expect_close(&f, "out23", net.layers[23].out, rows * (size_t)net.vocab);
    ref_expect_close(&f, "out24", net.layers[24].out, rows * (size_t)net.vocab);
    ref_expect_close(&f, "loss", &net.loss, 1);
    net_zero_grads(&net);
    net_backward(&net);
    ref_expect_params(&f, &net, "grad.", 1, REF_TRAINABLE_ONLY);
    net_free(&net);
    ref_fixture_free(&f);
}

int main(void)
{
    test_gradcheck();
    test_shapes();
    test_masked_keys_get_no_weight();
    test_padding_between_tokens_gets_no_weight();
    test_dropout_only_in_training();
    test_decoding_runs_the_encoder_once();
    test_cached_decoding_matches_uncached();
    test_cached_step_in_16_bits();
    test_sampled_decoding_is_seeded();
    test_cfg_errors();
    test_cross_attention_matches_staged();
    test_cross_attention_precisions_near_fp32();
    test_eval_at_runtime_rows_matches_padded();
    check_nn_transformer("seq2seq");
    check_nn_transformer("seq2seq_norm_first");
    return check_report("test_seq2seq");
}
