/* The public API (cdl.h): a trainer built from a cfg learns a separable toy problem,
 * saves a checkpoint, and a model loaded from it predicts the right classes; opening models,
 * predicting on .npy tensors, their layer information, exports and the augmentation preview. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/cdl.h"
#include "check.h"
#include "io/npy.h"
#include "util/rng.h"

#define SIDE 6
#define BATCH 16

/* Class 0: bright left half; class 1: bright right half; plus noise. */
static void make_image(Rng *rng, int label, float *img)
{
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            img[y * SIDE + x] =
                ((x < SIDE / 2) == (label == 0) ? 0.8f : 0.2f) + 0.1f * (rng_uniform(rng) - 0.5f);
}

/* A conv, connected and softmax classifier of SIDE x SIDE grey images into 2 classes. */
static void write_toy_cfg(const char *path)
{
    FILE *f = fopen(path, "w");
    fprintf(f,
            "[net]\nbatch=%d\nsubdivisions=2\nwidth=%d\nheight=%d\nchannels=1\n"
            "learning_rate=0.1\n[convolutional]\nfilters=4\nsize=3\npad=1\n"
            "batch_normalize=1\nactivation=relu\n[connected]\noutput=2\nactivation=linear\n"
            "[softmax]\n",
            BATCH, SIDE, SIDE);
    fclose(f);
}

static void test_trainer_learns_and_model_predicts(const char *dir)
{
    char cfg_path[512], model_path[512], err[1024];
    snprintf(cfg_path, sizeof cfg_path, "%s/toy.cfg", dir);
    snprintf(model_path, sizeof model_path, "%s/toy.cdl", dir);
    write_toy_cfg(cfg_path);
    cdl_trainer *t;
    CHECK(cdl_trainer_from_cfg(cfg_path, 3, &t, err, sizeof err) == 0);
    CHECK(cdl_trainer_batch(t) == BATCH);
    float images[BATCH * SIDE * SIDE];
    int labels[BATCH];
    Rng rng;
    rng_seed(&rng, 9, 0);
    float first_loss = 0, last_loss = 0;
    for (int step = 0; step < 30; step++) {
        for (int b = 0; b < BATCH; b++) {
            labels[b] = (int)rng_below(&rng, 2);
            make_image(&rng, labels[b], images + b * SIDE * SIDE);
        }
        last_loss = cdl_trainer_step(t, images, labels);
        first_loss = step == 0 ? last_loss : first_loss;
    }
    CHECK(last_loss < 0.2f * first_loss);
    CHECK(cdl_trainer_save(t, model_path, err, sizeof err) == 0);
    cdl_trainer_free(t);

    cdl_model *m;
    CHECK(cdl_model_load(model_path, &m, err, sizeof err) == 0);
    int c, h, w;
    cdl_model_input_shape(m, &c, &h, &w);
    CHECK(c == 1 && h == SIDE && w == SIDE && cdl_model_classes(m) == 2);
    CHECK(cdl_model_class_name(m, 0) == NULL);
    int correct = 0;
    for (int i = 0; i < 20; i++) {
        float probs[2];
        make_image(&rng, i % 2, images);
        cdl_model_predict(m, images, probs);
        correct += (probs[1] > probs[0]) == (i % 2);
        CHECK(probs[0] + probs[1] > 0.999f && probs[0] + probs[1] < 1.001f);
    }
    CHECK(correct == 20);
    float probs[2];
    CHECK(cdl_model_predict_file(m, cfg_path, probs, err, sizeof err) == 1);
    CHECK_CONTAINS(err, "toy.cfg: not a PNG or JPEG image");
    cdl_model_free(m);
    unlink(cfg_path);
    unlink(model_path);
}

/* cdl_model_open: a cfg with overrides and a seed (the same seed, the same model), a checkpoint
 * (refusing overrides), for training, and the errors the commands print. */
static void test_model_open(const char *dir)
{
    char cfg_path[512], model_path[512], err[1024];
    snprintf(cfg_path, sizeof cfg_path, "%s/open.cfg", dir);
    snprintf(model_path, sizeof model_path, "%s/open.cdl", dir);
    write_toy_cfg(cfg_path);
    cdl_trainer *t;
    CHECK(cdl_trainer_from_cfg(cfg_path, 5, &t, err, sizeof err) == 0);
    CHECK(cdl_trainer_save(t, model_path, err, sizeof err) == 0);
    cdl_trainer_free(t);
    CHECK(cdl_is_checkpoint(model_path) && !cdl_is_checkpoint(cfg_path) &&
          !cdl_is_checkpoint("/nonexistent/x.cdl"));

    const char *const overrides[] = {"net.width=8", "1.output=3"};
    cdl_open_options o = {.overrides = overrides, .n_overrides = 2, .seed = 7, .batch = 1};
    cdl_model *a, *b;
    CHECK(cdl_model_open(cfg_path, &o, &a, err, sizeof err) == 0);
    CHECK(cdl_model_open(cfg_path, &o, &b, err, sizeof err) == 0);
    int c, h, w;
    cdl_model_input_shape(a, &c, &h, &w);
    CHECK(c == 1 && h == SIDE && w == 8 && cdl_model_classes(a) == 3);
    float image[SIDE * 8], pa[3], pb[3];
    for (int i = 0; i < SIDE * 8; i++)
        image[i] = (float)(i % 5) / 5;
    cdl_model_predict(a, image, pa);
    cdl_model_predict(b, image, pb);
    CHECK(pa[0] == pb[0] && pa[1] == pb[1] && pa[2] == pb[2]);
    cdl_model_free(a);
    cdl_model_free(b);

    CHECK(cdl_model_open(model_path, NULL, &a, err, sizeof err) == 0);
    cdl_model_input_shape(a, &c, &h, &w);
    CHECK(w == SIDE && cdl_model_classes(a) == 2);
    cdl_model_free(a);
    const cdl_open_options train = {.for_training = 1};
    CHECK(cdl_model_open(model_path, &train, &a, err, sizeof err) == 0);
    cdl_model_free(a);
    CHECK(cdl_model_open(cfg_path, &train, &a, err, sizeof err) == 0);
    cdl_model_free(a);

    CHECK(cdl_model_open(model_path, &o, &a, err, sizeof err) == 2 && a == NULL);
    CHECK_CONTAINS(err, "--set applies to cfg files, not checkpoints");
    CHECK(cdl_model_open("/nonexistent/x.cdl", NULL, &a, err, sizeof err) == 1 && a == NULL);
    CHECK_CONTAINS(err, "/nonexistent/x.cdl: cannot open model or config");
    const cdl_open_options as_checkpoint = {.kind = CDL_OPEN_CHECKPOINT};
    CHECK(cdl_model_open(cfg_path, &as_checkpoint, &a, err, sizeof err) == 2 && a == NULL);
    CHECK_CONTAINS(err, "open.cfg: a cfg file, not a cdl checkpoint: train it first");
    const char *const bad[] = {"net.nosuchkey=1"};
    const cdl_open_options bad_set = {.overrides = bad, .n_overrides = 1};
    CHECK(cdl_model_open(cfg_path, &bad_set, &a, err, sizeof err) == 2 && a == NULL);
    CHECK_CONTAINS(err, "nosuchkey");
    unlink(cfg_path);
    unlink(model_path);
}

/* Reads a PNG's width and height from its IHDR chunk; 0 when path is not one. */
static int png_size(const char *path, unsigned *w, unsigned *h)
{
    unsigned char b[24];
    FILE *f = fopen(path, "rb");
    const int ok = f && fread(b, 1, sizeof b, f) == sizeof b && b[1] == 'P' && b[2] == 'N';
    if (f)
        fclose(f);
    if (!ok)
        return 0;
    *w = (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19];
    *h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
    return 1;
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fclose(f);
    return n;
}

/* The toy cfg's summary and layers, as `cdl info` prints them, and its exports. */
static void test_layer_info_and_export(const char *dir)
{
    char cfg_path[512], out[600], err[1024];
    snprintf(cfg_path, sizeof cfg_path, "%s/info.cfg", dir);
    write_toy_cfg(cfg_path);
    const cdl_open_options inspect = {.seed = 1};
    cdl_model *m;
    CHECK(cdl_model_open(cfg_path, &inspect, &m, err, sizeof err) == 0);
    cdl_model_summary sum;
    cdl_model_get_summary(m, &sum);
    CHECK(sum.c == 1 && sum.h == SIDE && sum.w == SIDE && sum.batch == BATCH &&
          sum.subdivisions == 2 && sum.seq == 0 && sum.n_layers == 3 && sum.step == 0);
    /* conv: 3x3x1x4 weights, 4 biases, 4 scales (+ 4 means, 4 variances); connected: 144x2 + 2 */
    CHECK(sum.params == 44 + 290 && sum.state == 8);
    cdl_layer_info l;
    cdl_model_layer_info(m, 0, &l);
    CHECK(!strcmp(l.type, "convolutional") && !strcmp(l.activation, "relu"));
    CHECK(l.c == 4 && l.h == SIDE && l.w == SIDE && l.params == 44);
    CHECK(l.flops == 2.0 * 9 * 4 * SIDE * SIDE && l.n_inputs == 1 && l.inputs[0] == -1);
    CHECK(l.n_settings == 5);
    const char *key, *value;
    cdl_model_layer_setting(m, 0, 0, &key, &value);
    CHECK(!strcmp(key, "filters") && !strcmp(value, "4"));
    cdl_model_layer_setting(m, 0, 4, &key, &value);
    CHECK(!strcmp(key, "activation") && !strcmp(value, "relu"));
    cdl_model_layer_info(m, 1, &l);
    CHECK(!strcmp(l.type, "connected") && !strcmp(l.activation, "linear"));
    CHECK(l.c == 2 && l.h == 1 && l.w == 1 && l.params == 290 && l.flops == 2.0 * 144 * 2);
    CHECK(l.n_inputs == 1 && l.inputs[0] == 0 && l.n_settings == 2);
    cdl_model_layer_info(m, 2, &l);
    CHECK(!strcmp(l.type, "softmax") && l.params == 0 && l.inputs[0] == 1);

    snprintf(out, sizeof out, "%s/info.onnx", dir);
    CHECK(cdl_model_export_onnx(m, "info", out, 0, CDL_ONNX_OPSET_DEFAULT, 0, err, sizeof err) ==
          0);
    CHECK(file_size(out) > 0 && cdl_onnx_ir_version(CDL_ONNX_OPSET_DEFAULT) == 7);
    unlink(out);
    CHECK(cdl_model_export_onnx(m, "info", "/nonexistent/x.onnx", 0, 13, 0, err, sizeof err) == 1);
    CHECK_CONTAINS(err, "/nonexistent/x.onnx");
    snprintf(out, sizeof out, "%s/info.weights", dir);
    CHECK(cdl_model_export_darknet(m, out, err, sizeof err) == 0);
    /* the header (3 int32 and a uint64), then every parameter and running statistic */
    CHECK(file_size(out) == 20 + 4 * (44 + 290 + 8));
    unlink(out);
    snprintf(out, sizeof out, "%s/npy", dir);
    CHECK(cdl_model_export_npy(m, out, err, sizeof err) == 0);
    char npy[1024];
    snprintf(npy, sizeof npy, "%s/layer1.weights.npy", out);
    CHECK(file_size(npy) > 4 * 288);
    DIR *d = opendir(out);
    for (struct dirent *ent; d && (ent = readdir(d));) {
        if (ent->d_name[0] == '.')
            continue;
        snprintf(npy, sizeof npy, "%s/%s", out, ent->d_name);
        unlink(npy);
    }
    if (d)
        closedir(d);
    rmdir(out);
    cdl_model_free(m);

    /* 5 tiles of 8x8, zoomed 2x, 3 per row, 2-pixel gaps: 2 + 3 * 18 wide, 2 + 2 * 18 high */
    const cdl_open_options digits = {.seed = 1, .kind = CDL_OPEN_CFG};
    CHECK(cdl_model_open("cfg/digits.cfg", &digits, &m, err, sizeof err) == 0);
    const cdl_augment_grid_options g = {.n = 5, .cols = 3, .zoom = 2, .seed = 1};
    snprintf(out, sizeof out, "%s/grid.png", dir);
    CHECK(cdl_model_write_augment_grid(m, "cfg/digits.data", &g, out, err, sizeof err) == 0);
    unsigned w, h;
    CHECK(png_size(out, &w, &h) && w == 56 && h == 38);
    unlink(out);
    CHECK(cdl_model_write_augment_grid(m, "/nonexistent/x.data", &g, out, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "/nonexistent/x.data");
    cdl_model_free(m);
    unlink(cfg_path);
}

/* cdl_model_predict_npy: each row of an (n, c, h, w) .npy file gives what cdl_model_predict
 * gives it after the cfg's mean/std; another shape is a usage error naming the file; and
 * cdl_model_outputs_probabilities tells a softmax's outputs from a net's raw ones. */
static void test_predict_npy(const char *dir)
{
    char cfg_path[512], raw_path[512], npy_path[512], err[1024];
    snprintf(cfg_path, sizeof cfg_path, "%s/npy.cfg", dir);
    snprintf(raw_path, sizeof raw_path, "%s/raw.cfg", dir);
    snprintf(npy_path, sizeof npy_path, "%s/x.npy", dir);
    write_toy_cfg(cfg_path);
    const char *const norm[] = {"net.mean=0.5", "net.std=0.25"};
    const cdl_open_options o = {.overrides = norm, .n_overrides = 2, .seed = 3, .batch = 1};
    cdl_model *m;
    CHECK(cdl_model_open(cfg_path, &o, &m, err, sizeof err) == 0);
    CHECK(cdl_model_outputs_probabilities(m) == 1);
    float rows[3][SIDE * SIDE];
    Rng rng;
    rng_seed(&rng, 4, 0);
    for (int k = 0; k < 3; k++)
        make_image(&rng, k % 2, rows[k]);
    const int64_t dims[4] = {3, 1, SIDE, SIDE};
    Error e = {0};
    CHECK(npy_write(npy_path, &rows[0][0], 4, dims, &e) == 0);
    CHECK(cdl_is_npy_file(npy_path) && !cdl_is_npy_file(cfg_path));
    float *probs;
    int n;
    CHECK(cdl_model_predict_npy(m, npy_path, &probs, &n, err, sizeof err) == 0 && n == 3);
    for (int k = 0; k < 3 && n == 3; k++) {
        float x[SIDE * SIDE], p[2];
        for (int i = 0; i < SIDE * SIDE; i++)
            x[i] = (rows[k][i] - 0.5f) / 0.25f;
        cdl_model_predict(m, x, p);
        /* one sample or three in a pass: the same sums, up to float32 rounding */
        CHECK_NEAR(probs[2 * k], p[0], 1e-6);
        CHECK_NEAR(probs[2 * k + 1], p[1], 1e-6);
    }
    free(probs);
    const int64_t wrong[4] = {1, 2, SIDE, SIDE};
    CHECK(npy_write(npy_path, &rows[0][0], 4, wrong, &e) == 0);
    CHECK(cdl_model_predict_npy(m, npy_path, &probs, &n, err, sizeof err) == 2 && !probs && !n);
    CHECK_CONTAINS(err, "x.npy: shape (1, 2, 6, 6): expected the net's input (1, 6, 6)");
    cdl_model_free(m);

    FILE *f = fopen(raw_path, "w");
    fprintf(f, "[net]\nwidth=%d\nheight=%d\nchannels=1\n[connected]\noutput=2\n", SIDE, SIDE);
    fclose(f);
    CHECK(cdl_model_from_cfg(raw_path, 1, &m, err, sizeof err) == 0);
    CHECK(cdl_model_outputs_probabilities(m) == 0);
    cdl_model_free(m);
    unlink(cfg_path);
    unlink(raw_path);
    unlink(npy_path);
}

static void test_errors_are_reported_with_codes(void)
{
    char err[1024];
    cdl_model *m;
    cdl_trainer *t;
    CHECK(cdl_model_load("/nonexistent/x.cdl", &m, err, sizeof err) == 1 && m == NULL);
    CHECK_CONTAINS(err, "/nonexistent/x.cdl");
    CHECK(cdl_trainer_from_cfg("/nonexistent/x.cfg", 1, &t, err, sizeof err) == 1 && t == NULL);
    CHECK_CONTAINS(err, "/nonexistent/x.cfg: cannot open config");
}

int main(void)
{
    char dir[] = "/tmp/cdl-api-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_trainer_learns_and_model_predicts(dir);
    test_model_open(dir);
    test_predict_npy(dir);
    test_layer_info_and_export(dir);
    test_errors_are_reported_with_codes();
    rmdir(dir);
    return check_report("test_api");
}
