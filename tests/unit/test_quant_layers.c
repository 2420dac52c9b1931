/* int8 layers (backend/cpu/net_quant.h): a quantized convolution (im2col and 1x1 paths), connected
 * and linear layer against its float self within a bound derived from the scales; a calibrated
 * (static) grid; and an int8 checkpoint's round trip, size and refusals.
 *
 * The bound. With dequantized weights w^ = s_w[j] q (|w^ - w| <= s_w[j]/2, symmetric rounding)
 * and inputs x^ = s_x (q - zp) (|x^ - x| <= s_x/2 on a grid spanning x's range; 0, the padding,
 * is exact), an output's int8 value is sum_k w^_k x^_k exactly (integer sums, then one scaling),
 * so per output element j
 *     |y_int8 - y| <= sum_k (|w^_k| s_x/2 + s_w[j]/2 |x_k|)   + float rounding,
 * the rounding bounded by k FLT_EPSILON sum_k |w_k||x_k| (the float product's, and the scaling's).
 * Each sum is itself a forward of the float layer (biases 0) on transformed weights and inputs:
 * |w^| on the constant s_x/2 (0 in the padding, as the layer pads), s_w[j]/2 on |x|, |w| on |x|. */
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/net_quant.h"
#include "check.h"
#include "io/checkpoint_file.h"
#include "model/model_io.h"
#include "util/rng.h"

enum { BATCH = 3 };

static const char *const layers[] = {
    /* 3x3, stride 2, padded: im2col columns; 20 filters: a partial second panel */
    "[net]\nbatch=3\nwidth=9\nheight=9\nchannels=3\n"
    "[convolutional]\nfilters=20\nsize=3\nstride=2\npad=1\nactivation=linear\n",
    /* 1x1, stride 1: the input is its own column matrix; k = 5, not a multiple of 4 */
    "[net]\nbatch=3\nwidth=4\nheight=4\nchannels=5\n"
    "[convolutional]\nfilters=7\nsize=1\nactivation=linear\n",
    /* 1x7 and 3x1 windows with strides per axis (Inception v3's): kdim 3 * 7 = 21 */
    "[net]\nbatch=3\nwidth=9\nheight=7\nchannels=3\n"
    "[convolutional]\nfilters=6\nsize=1,7\nstride=2,1\npadding=0,3\nactivation=linear\n",
    "[net]\nbatch=3\nwidth=6\nheight=8\nchannels=4\n"
    "[convolutional]\nfilters=5\nsize=3,1\nstride=1,2\npadding=1,0\nactivation=linear\n",
    "[net]\nbatch=3\nwidth=3\nheight=3\nchannels=2\n[connected]\noutput=11\nactivation=linear\n",
    /* 5 rows of 13 values per sample */
    "[net]\nbatch=3\nwidth=13\nheight=5\nchannels=1\n[linear]\noutput=9\n",
};

static int build(const char *text, Net *net)
{
    Error e = {0};
    int st = net_build_from_text(net, text, "q.cfg", 0, 7, &e);
    st = st ? st : net_resize(net, BATCH, 0, &e);
    if (st)
        fprintf(stderr, "build: %s\n", e.msg);
    CHECK(st == 0);
    return st;
}

static size_t in_count(const Net *net)
{
    return (size_t)BATCH * shape_size(net->in_shape);
}
static size_t out_count(const Net *net)
{
    return (size_t)BATCH * shape_size(net->layers[0].out_shape);
}

/* Layer 0's output for input x (copied in), into y. */
static void forward(Net *net, const float *x, float *y)
{
    memcpy(net->input, x, in_count(net) * sizeof *x);
    net_forward(net);
    memcpy(y, net->layers[0].out, out_count(net) * sizeof *y);
}

/* Gives layer 0 int8 weights (from its float ones) and resizes for them. */
static int quantize_layer0(Net *net)
{
    Error e = {0};
    unsigned char which[1] = {1};
    int st = net_quant_alloc(net, which, &e);
    if (!st) {
        net_quant_from_float(net);
        net_quant_prepare(net);
        st = net_resize(net, BATCH, 0, &e);
    }
    if (st)
        fprintf(stderr, "quantize: %s\n", e.msg);
    CHECK(st == 0);
    return st;
}

/* The float layer's output with weights f(j, k) (channel j's k-th weight), biases 0, on x. */
static void transformed_forward(Net *net, int p,
                                float (*f)(const float *w, const float *s, int j, size_t i),
                                const float *w, const float *scales, const float *x, float *y)
{
    Param *wp = &net->layers[0].params[p];
    const size_t per_channel = wp->count / (size_t)wp->dims[0];
    for (size_t i = 0; i < wp->count; i++)
        wp->data[i] = f(w, scales, (int)(i / per_channel), i);
    Param *b = layer_param(&net->layers[0], "biases");
    if (b)
        memset(b->data, 0, b->count * sizeof *b->data);
    forward(net, x, y);
}

static float abs_weight(const float *w, const float *s, int j, size_t i)
{
    (void)s, (void)j;
    return fabsf(w[i]);
}
static float half_scale(const float *w, const float *s, int j, size_t i)
{
    (void)w, (void)i;
    return s[j] / 2;
}

static void test_layer_within_derived_bound(const char *text)
{
    Net fp, q, aux;
    if (build(text, &fp) || build(text, &q) || build(text, &aux))
        return;
    const int p = net_layer_quantizable(&q.layers[0]);
    CHECK(p >= 0);
    const Param *w = &fp.layers[0].params[p];
    const size_t nx = in_count(&fp), ny = out_count(&fp),
                 per_channel = w->count / (size_t)w->dims[0];
    float *x = malloc(nx * sizeof *x), *ax = malloc(nx * sizeof *ax), *hx = malloc(nx * sizeof *hx);
    float *y = malloc(ny * sizeof *y), *yq = malloc(ny * sizeof *yq), *b1 = malloc(ny * sizeof *b1),
          *b2 = malloc(ny * sizeof *b2), *b3 = malloc(ny * sizeof *b3);
    Rng rng;
    rng_seed(&rng, 3, 0);
    for (size_t i = 0; i < nx; i++) /* asymmetric: [-1, 2) */
        x[i] = 3 * rng_uniform(&rng) - 1;
    forward(&fp, x, y);
    quantize_layer0(&q);
    forward(&q, x, yq);

    float lo, hi;
    quant_range(x, nx, &lo, &hi);
    const QuantParams xq = quant_params_u8(lo, hi);
    for (size_t i = 0; i < nx; i++) {
        ax[i] = fabsf(x[i]);
        hx[i] = xq.scale / 2;
    }
    const LayerQuant *lq = q.layers[0].quant;
    transformed_forward(&aux, p, abs_weight, q.layers[0].params[p].data, NULL, hx, b1);
    transformed_forward(&aux, p, half_scale, NULL, lq->scales, ax, b2);
    transformed_forward(&aux, p, abs_weight, w->data, NULL, ax, b3);
    double worst = 0, max_err = 0;
    int over = 0;
    for (size_t i = 0; i < ny; i++) {
        const double bound = b1[i] + b2[i] + (double)per_channel * FLT_EPSILON * b3[i];
        const double err = fabs((double)yq[i] - y[i]);
        over += err > bound;
        worst = err / bound > worst ? err / bound : worst;
        max_err = err > max_err ? err : max_err;
    }
    printf("%s: max |error| %.3g, at most %.2f of the bound\n", q.layers[0].type->name, max_err,
           worst);
    CHECK(over == 0);
    CHECK(max_err > 0); /* the int8 path ran */

    /* A static grid equal to this batch's dynamic one gives the same outputs. */
    q.layers[0].quant->static_input = 1;
    q.layers[0].quant->input = xq;
    float *ys = malloc(ny * sizeof *ys);
    forward(&q, x, ys);
    CHECK(!memcmp(ys, yq, ny * sizeof *ys));
    free(ys);
    free(x), free(ax), free(hx), free(y), free(yq), free(b1), free(b2), free(b3);
    net_free(&fp), net_free(&q), net_free(&aux);
}

static long file_bytes(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fclose(f);
    return n;
}

/* Saved and loaded, an int8 model holds the same int8 tensors, grids and outputs; its file is
 * about a quarter of the float one (1 byte a weight instead of 4, plus a scale per channel). */
static void test_round_trip(void)
{
    const char *text = "[net]\nbatch=3\nwidth=20\nheight=20\nchannels=3\n"
                       "[convolutional]\nfilters=8\nsize=3\npad=1\nbatch_normalize=1\n"
                       "activation=relu\n[connected]\noutput=64\nactivation=linear\n[softmax]\n";
    Net net, back;
    Error e = {0};
    ModelMeta meta = {.valid_accuracy = -1, .valid_loss = -1}, meta_back;
    char fp_path[] = "/tmp/cdl_quant_fpXXXXXX", q_path[] = "/tmp/cdl_quant_q8XXXXXX";
    close(mkstemp(fp_path));
    close(mkstemp(q_path));
    if (build(text, &net))
        return;
    CHECK(model_save(fp_path, &net, NULL, &meta, &e) == 0);
    unsigned char which[3] = {1, 1, 0};
    CHECK(net_quant_alloc(&net, which, &e) == 0);
    net_quant_from_float(&net);
    net_quant_prepare(&net);
    net.layers[0].quant->static_input = 1;
    net.layers[0].quant->input = (QuantParams){0.01f, 37};
    CHECK(net_resize(&net, BATCH, 0, &e) == 0);
    CHECK(model_save(q_path, &net, NULL, &meta, &e) == 0);
    const long fp_bytes = file_bytes(fp_path), q_bytes = file_bytes(q_path);
    printf("file: float %ld bytes, int8 %ld bytes (%.3f)\n", fp_bytes, q_bytes,
           (double)q_bytes / fp_bytes);
    CHECK(q_bytes < 0.3 * fp_bytes && q_bytes > 0.2 * fp_bytes);

    const int st = model_load(q_path, &back, 0, NULL, &meta_back, &e);
    if (st)
        fprintf(stderr, "load: %s\n", e.msg);
    CHECK(st == 0);
    if (st)
        return;
    CHECK(net_is_quantized(&back));
    for (int i = 0; i < 2; i++) {
        const LayerQuant *a = net.layers[i].quant, *b = back.layers[i].quant;
        CHECK(b && a->channels == b->channels && a->k == b->k && a->param == b->param);
        CHECK(b && !memcmp(a->values, b->values, (size_t)a->channels * a->k));
        CHECK(b && !memcmp(a->scales, b->scales, (size_t)a->channels * sizeof(float)));
        CHECK(b && a->static_input == b->static_input && a->input.scale == b->input.scale &&
              a->input.zero_point == b->input.zero_point);
    }
    CHECK(back.layers[2].quant == NULL);
    CHECK(net_resize(&back, BATCH, 0, &e) == 0);
    const size_t nx = in_count(&net), ny = (size_t)BATCH * 64;
    for (size_t i = 0; i < nx; i++)
        net.input[i] = back.input[i] = (float)(i % 17) / 17;
    net_forward(&net);
    net_forward(&back);
    CHECK(!memcmp(net.layers[1].out, back.layers[1].out, ny * sizeof(float)));
    net_free(&back);
    model_meta_free(&meta_back);

    /* A "quantized" record that names a layer without int8 weights, or a grid off the uint8
     * range, is refused with the file's name. */
    const char *const edits[][3] = {{"layer", "2", "cannot hold int8 weights"},
                                    {"input_zero_point", "300", "input grid is not valid"}};
    for (int k = 0; k < 2; k++) {
        cJSON *h;
        void *blob;
        size_t blob_bytes;
        CHECK(checkpoint_file_read(q_path, &h, &blob, &blob_bytes, &e) == 0);
        cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(h, "quantized"), 0);
        cJSON_ReplaceItemInObject(first, edits[k][0], cJSON_CreateNumber(atof(edits[k][1])));
        CHECK(checkpoint_file_write(fp_path, h, blob, blob_bytes, &e) == 0);
        cJSON_Delete(h);
        free(blob);
        e = (Error){0};
        CHECK(model_load(fp_path, &back, 0, NULL, &meta_back, &e) == CDL_ERUNTIME);
        CHECK_CONTAINS(e.msg, edits[k][2]);
        CHECK_CONTAINS(e.msg, fp_path);
    }

    /* Refused for training, and saving an optimizer state with it. */
    Optimizer opt;
    e = (Error){0};
    CHECK(model_load(q_path, &back, 1, &opt, &meta_back, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "is an int8 model (cdl quantize)");
    optimizer_free(&opt);
    net_free(&net);
    unlink(fp_path);
    unlink(q_path);
}

int main(void)
{
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
        test_layer_within_derived_bound(layers[i]);
    test_round_trip();
    return check_report("test_quant_layers");
}
