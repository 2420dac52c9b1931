/* Model checkpoints: every tensor, the velocity and the metadata survive a round trip;
 * a checkpoint whose tensor table disagrees with its cfg is refused. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/checkpoint_file.h"
#include "io/model_io.h"

static const char *cfg_text = "[net]\nbatch=4\nwidth=6\nheight=6\nchannels=2\n"
                              "[convolutional]\nfilters=3\nsize=3\npad=1\nbatch_normalize=1\n"
                              "activation=leaky\n[maxpool]\nsize=2\nstride=2\n"
                              "[connected]\noutput=4\nactivation=linear\n[softmax]\n";

static int build(Net *net, uint64_t seed)
{
    Error e = {0};
    if (net_build_from_text(net, cfg_text, "m.cfg", 1, seed, &e)) {
        fprintf(stderr, "build: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static void test_round_trip_keeps_tensors_velocity_and_meta(const char *dir)
{
    Net net, back;
    Error e = {0};
    CHECK(build(&net, 5) == 0);
    for (size_t i = 0; i < net.n_state; i++)
        net.state[i] = 0.25f * (float)i;
    float *velocity = malloc(net.n_params * sizeof *velocity);
    for (size_t i = 0; i < net.n_params; i++)
        velocity[i] = (float)i - 7.5f;
    char *names[] = {"cat", "dog", "bird", "fish"};
    ModelMeta meta = {.seed = 5,
                      .step = 123,
                      .epochs_done = 3,
                      .steps_per_epoch = 41,
                      .epochs_planned = 9,
                      .names = names,
                      .n_names = 4,
                      .valid_accuracy = 0.5,
                      .valid_loss = 1.25};
    strcpy(meta.data_path, "x.data");
    char path[512];
    snprintf(path, sizeof path, "%s/m.cdl", dir);
    CHECK(model_save(path, &net, velocity, &meta, &e) == CDL_OK);

    float *velocity_back = NULL;
    ModelMeta meta_back;
    CHECK(model_load(path, &back, 1, &velocity_back, &meta_back, &e) == CDL_OK);
    CHECK(back.n_params == net.n_params && back.n_state == net.n_state);
    CHECK(!memcmp(back.params, net.params, net.n_params * sizeof *net.params));
    CHECK(!memcmp(back.state, net.state, net.n_state * sizeof *net.state));
    CHECK(!memcmp(velocity_back, velocity, net.n_params * sizeof *velocity));
    CHECK(meta_back.seed == 5 && meta_back.step == 123 && meta_back.epochs_done == 3);
    CHECK(meta_back.steps_per_epoch == 41 && meta_back.epochs_planned == 9);
    CHECK(meta_back.n_names == 4 && !strcmp(meta_back.names[2], "bird"));
    CHECK(meta_back.valid_accuracy == 0.5 && meta_back.valid_loss == 1.25);
    CHECK(!strcmp(meta_back.data_path, "x.data"));
    CHECK(back.n_layers == 4 && back.layers[0].out_shape.c == 3);

    /* Inference loads need no velocity and no gradients. */
    Net infer;
    ModelMeta meta_infer;
    CHECK(model_load(path, &infer, 0, NULL, &meta_infer, &e) == CDL_OK);
    CHECK(infer.grads == NULL);
    CHECK(!memcmp(infer.params, net.params, net.n_params * sizeof *net.params));
    model_meta_free(&meta_infer);
    net_free(&infer);

    model_meta_free(&meta_back);
    free(velocity_back);
    net_free(&back);
    free(velocity);
    net_free(&net);
    unlink(path);
}

static void test_checkpoint_without_velocity_resumes_from_zero(const char *dir)
{
    Net net, back;
    Error e = {0};
    CHECK(build(&net, 1) == 0);
    ModelMeta meta = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/nv.cdl", dir);
    CHECK(model_save(path, &net, NULL, &meta, &e) == CDL_OK);
    float *velocity = NULL;
    CHECK(model_load(path, &back, 1, &velocity, &meta, &e) == CDL_OK);
    int zeros = 1;
    for (size_t i = 0; i < back.n_params; i++)
        zeros &= velocity[i] == 0.0f;
    CHECK(zeros);
    free(velocity);
    model_meta_free(&meta);
    net_free(&back);
    net_free(&net);
    unlink(path);
}

static void test_tensor_table_mismatch_is_refused(const char *dir)
{
    Net net, back;
    Error e = {0};
    CHECK(build(&net, 1) == 0);
    ModelMeta meta = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/bad.cdl", dir);
    CHECK(model_save(path, &net, NULL, &meta, &e) == CDL_OK);
    /* Rewrite the container with a cfg whose convolution has 4 filters. */
    cJSON *h;
    void *blob;
    size_t bytes;
    CHECK(checkpoint_file_read(path, &h, &blob, &bytes, &e) == CDL_OK);
    char *text = strdup(cfg_text);
    *strstr(text, "filters=3") = '\0';
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "%sfilters=4%s", text, strstr(cfg_text, "filters=3") + 9);
    cJSON_ReplaceItemInObject(h, "cfg", cJSON_CreateString(cfg));
    CHECK(checkpoint_file_write(path, h, blob, bytes, &e) == CDL_OK);
    CHECK(model_load(path, &back, 0, NULL, &meta, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "bad.cdl: tensor table does not match its cfg at layer 0");
    free(text);
    free(blob);
    cJSON_Delete(h);
    net_free(&net);
    unlink(path);
}

/* Out-of-range header counts (a hand-edited header) load as 0, not as an undefined cast. */
static void test_out_of_range_counts_load_as_zero(const char *dir)
{
    Net net, back;
    Error e = {0};
    CHECK(build(&net, 1) == 0);
    ModelMeta meta = {.epochs_done = 2, .steps_per_epoch = 3, .epochs_planned = 4};
    char path[512];
    snprintf(path, sizeof path, "%s/counts.cdl", dir);
    CHECK(model_save(path, &net, NULL, &meta, &e) == CDL_OK);
    cJSON *h;
    void *blob;
    size_t bytes;
    CHECK(checkpoint_file_read(path, &h, &blob, &bytes, &e) == CDL_OK);
    cJSON_ReplaceItemInObject(h, "epochs_done", cJSON_CreateNumber(1e300));
    cJSON_ReplaceItemInObject(h, "steps_per_epoch", cJSON_CreateNumber(-1e300));
    cJSON_ReplaceItemInObject(h, "epochs_planned", cJSON_CreateNumber(4294967296.0));
    CHECK(checkpoint_file_write(path, h, blob, bytes, &e) == CDL_OK);
    CHECK(model_load(path, &back, 0, NULL, &meta, &e) == CDL_OK);
    CHECK(meta.epochs_done == 0 && meta.steps_per_epoch == 0 && meta.epochs_planned == 0);
    model_meta_free(&meta);
    net_free(&back);
    free(blob);
    cJSON_Delete(h);
    net_free(&net);
    unlink(path);
}

int main(void)
{
    char dir[] = "/tmp/cdl-model-io-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_round_trip_keeps_tensors_velocity_and_meta(dir);
    test_checkpoint_without_velocity_resumes_from_zero(dir);
    test_tensor_table_mismatch_is_refused(dir);
    test_out_of_range_counts_load_as_zero(dir);
    rmdir(dir);
    return check_report("test_model_io");
}
