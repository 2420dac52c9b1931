/* The public API (cdl.h): a trainer built from a cfg learns a separable toy problem,
 * saves a checkpoint, and a model loaded from it predicts the right classes. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cdl.h"
#include "check.h"
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

static void test_trainer_learns_and_model_predicts(const char *dir)
{
    char cfg_path[512], model_path[512], err[1024];
    snprintf(cfg_path, sizeof cfg_path, "%s/toy.cfg", dir);
    snprintf(model_path, sizeof model_path, "%s/toy.cdl", dir);
    FILE *f = fopen(cfg_path, "w");
    fprintf(f,
            "[net]\nbatch=%d\nsubdivisions=2\nwidth=%d\nheight=%d\nchannels=1\n"
            "learning_rate=0.1\n[convolutional]\nfilters=4\nsize=3\npad=1\n"
            "batch_normalize=1\nactivation=relu\n[connected]\noutput=2\nactivation=linear\n"
            "[softmax]\n",
            BATCH, SIDE, SIDE);
    fclose(f);
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

static void test_errors_are_reported_with_codes(void)
{
    char err[1024];
    cdl_model *m;
    cdl_trainer *t;
    CHECK(cdl_model_load("/nonexistent/x.cdl", &m, err, sizeof err) == 1 && m == NULL);
    CHECK_CONTAINS(err, "/nonexistent/x.cdl");
    CHECK(cdl_trainer_from_cfg("/nonexistent/x.cfg", 1, &t, err, sizeof err) == 2 && t == NULL);
    CHECK_CONTAINS(err, "/nonexistent/x.cfg: cannot open config");
}

int main(void)
{
    char dir[] = "/tmp/cdl-api-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_trainer_learns_and_model_predicts(dir);
    test_errors_are_reported_with_codes();
    rmdir(dir);
    return check_report("test_api");
}
