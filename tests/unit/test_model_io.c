/* Model checkpoints: every tensor, the optimizer state, the EMA and the metadata survive a round
 * trip; inference loads the EMA; a checkpoint whose tensor table disagrees with its cfg, whose
 * optimizer state is of another kind than its cfg's optimizer, or whose class list does not name
 * its outputs, is refused. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/checkpoint_file.h"
#include "model/model_io.h"

static const char *cfg_text = "[net]\nbatch=4\nwidth=6\nheight=6\nchannels=2\n"
                              "[convolutional]\nfilters=3\nsize=3\npad=1\nbatch_normalize=1\n"
                              "activation=leaky\n[maxpool]\nsize=2\nstride=2\n"
                              "[connected]\noutput=4\nactivation=linear\n[softmax]\n";

/* Builds cfg_text with net_keys ("key=value\n" lines) added to its [net] section. */
static int build_with(Net *net, const char *net_keys, uint64_t seed)
{
    Error e = {0};
    char text[1024];
    snprintf(text, sizeof text, "[net]\n%s%s", net_keys, cfg_text + strlen("[net]\n"));
    if (net_build_from_text(net, text, "m.cfg", 1, seed, &e)) {
        fprintf(stderr, "build: %s\n", e.msg);
        return -1;
    }
    return 0;
}

static int build(Net *net, uint64_t seed)
{
    return build_with(net, "", seed);
}

/* Fills v [n] with distinct values from first on. */
static void fill_distinct(float *v, size_t n, float first)
{
    for (size_t i = 0; i < n; i++)
        v[i] = first + 0.25f * (float)i;
}

static void test_round_trip_keeps_tensors_optimizer_ema_and_meta(const char *dir)
{
    Net net, back;
    Error e = {0};
    Optimizer opt, opt_back;
    CHECK(build_with(&net, "optimizer=adam\nema=0.5\n", 5) == 0);
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    CHECK(opt.slab_floats == 2 * net.n_params && opt.ema != NULL);
    fill_distinct(net.state, net.n_state, 1);
    fill_distinct(opt.slab, opt.slab_floats, -7.5f);
    fill_distinct(opt.ema, net.n_params + net.n_state, 100);
    opt.steps = 77;
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
    CHECK(model_save(path, &net, &opt, &meta, &e) == CDL_OK);

    ModelMeta meta_back;
    CHECK(model_load(path, &back, 1, &opt_back, &meta_back, &e) == CDL_OK);
    CHECK(back.n_params == net.n_params && back.n_state == net.n_state);
    CHECK(!memcmp(back.params, net.params, net.n_params * sizeof *net.params));
    CHECK(!memcmp(back.state, net.state, net.n_state * sizeof *net.state));
    CHECK(opt_back.kind == CDL_OPT_ADAM && opt_back.steps == 77);
    CHECK(opt_back.slab_floats == opt.slab_floats &&
          !memcmp(opt_back.slab, opt.slab, opt.slab_floats * sizeof *opt.slab));
    CHECK(opt_back.ema && !memcmp(opt_back.ema, opt.ema, (net.n_params + net.n_state) * 4));
    CHECK(meta_back.seed == 5 && meta_back.step == 123 && meta_back.epochs_done == 3);
    CHECK(meta_back.steps_per_epoch == 41 && meta_back.epochs_planned == 9);
    CHECK(meta_back.n_names == 4 && !strcmp(meta_back.names[2], "bird"));
    CHECK(meta_back.valid_accuracy == 0.5 && meta_back.valid_loss == 1.25);
    CHECK(!strcmp(meta_back.data_path, "x.data"));
    CHECK(back.n_layers == 4 && back.layers[0].out_shape.c == 3);

    model_meta_free(&meta_back);
    optimizer_free(&opt_back);
    net_free(&back);
    optimizer_free(&opt);
    net_free(&net);
    unlink(path);
}

static void test_inference_load_takes_the_ema_weights(const char *dir)
{
    Net net, infer;
    Error e = {0};
    Optimizer opt;
    CHECK(build_with(&net, "ema=0.9\n", 2) == 0);
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    fill_distinct(opt.ema, net.n_params + net.n_state, 3);
    ModelMeta meta = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/ema.cdl", dir);
    CHECK(model_save(path, &net, &opt, &meta, &e) == CDL_OK);
    CHECK(model_load(path, &infer, 0, NULL, &meta, &e) == CDL_OK);
    CHECK(infer.grads == NULL);
    CHECK(!memcmp(infer.params, opt.ema, net.n_params * sizeof *net.params));
    CHECK(!memcmp(infer.state, opt.ema + net.n_params, net.n_state * sizeof *net.state));
    model_meta_free(&meta);
    net_free(&infer);
    optimizer_free(&opt);
    net_free(&net);
    unlink(path);
}

static void test_inference_load_without_ema_takes_the_weights(const char *dir)
{
    Net net, infer;
    Error e = {0};
    Optimizer opt;
    CHECK(build(&net, 4) == 0);
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    CHECK(opt.kind == CDL_OPT_SGD && opt.slab_floats == net.n_params && opt.ema == NULL);
    fill_distinct(opt.slab, opt.slab_floats, 3);
    ModelMeta meta = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/plain.cdl", dir);
    CHECK(model_save(path, &net, &opt, &meta, &e) == CDL_OK);
    CHECK(model_load(path, &infer, 0, NULL, &meta, &e) == CDL_OK);
    CHECK(!memcmp(infer.params, net.params, net.n_params * sizeof *net.params));
    model_meta_free(&meta);
    net_free(&infer);
    optimizer_free(&opt);
    net_free(&net);
    unlink(path);
}

static void test_checkpoint_without_optimizer_state_resumes_from_zero(const char *dir)
{
    Net net, back;
    Error e = {0};
    CHECK(build_with(&net, "optimizer=adamw\n", 1) == 0);
    ModelMeta meta = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/nv.cdl", dir);
    CHECK(model_save(path, &net, NULL, &meta, &e) == CDL_OK);
    Optimizer opt;
    CHECK(model_load(path, &back, 1, &opt, &meta, &e) == CDL_OK);
    CHECK(opt.kind == CDL_OPT_ADAMW && opt.steps == 0 && opt.slab_floats == 2 * back.n_params);
    int zeros = 1;
    for (size_t i = 0; i < opt.slab_floats; i++)
        zeros &= opt.slab[i] == 0.0f;
    CHECK(zeros);
    optimizer_free(&opt);
    model_meta_free(&meta);
    net_free(&back);
    net_free(&net);
    unlink(path);
}

/* Checkpoints from before the optimizer record flagged SGD velocity with "has_velocity". */
static void test_older_checkpoint_with_velocity_resumes_its_sgd_state(const char *dir)
{
    Net net, back;
    Error e = {0};
    CHECK(build(&net, 1) == 0);
    Optimizer sgd;
    CHECK(optimizer_init(&sgd, &net, &e) == CDL_OK);
    fill_distinct(sgd.slab, sgd.slab_floats, 2);
    ModelMeta meta = {.step = 9};
    char path[512];
    snprintf(path, sizeof path, "%s/old.cdl", dir);
    CHECK(model_save(path, &net, &sgd, &meta, &e) == CDL_OK);
    cJSON *h;
    void *blob;
    size_t bytes;
    CHECK(checkpoint_file_read(path, &h, &blob, &bytes, &e) == CDL_OK);
    cJSON_DeleteItemFromObject(h, "optimizer");
    cJSON_DeleteItemFromObject(h, "ema_floats");
    cJSON_AddBoolToObject(h, "has_velocity", 1);
    CHECK(checkpoint_file_write(path, h, blob, bytes, &e) == CDL_OK);
    Optimizer opt;
    CHECK(model_load(path, &back, 1, &opt, &meta, &e) == CDL_OK);
    CHECK(opt.kind == CDL_OPT_SGD && opt.steps == 9);
    CHECK(opt.slab && !memcmp(opt.slab, sgd.slab, sgd.slab_floats * sizeof *sgd.slab));
    optimizer_free(&opt);
    model_meta_free(&meta);
    net_free(&back);
    free(blob);
    cJSON_Delete(h);
    optimizer_free(&sgd);
    net_free(&net);
    unlink(path);
}

static void test_optimizer_state_of_another_kind_is_refused(const char *dir)
{
    Net net, back;
    Error e = {0};
    CHECK(build_with(&net, "optimizer=adam\n", 1) == 0);
    /* SGD state (n_params floats) saved beside a cfg that says adam. */
    Optimizer sgd = {.kind = CDL_OPT_SGD, .slab_floats = net.n_params};
    sgd.slab = calloc(net.n_params, sizeof *sgd.slab);
    ModelMeta meta = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/kind.cdl", dir);
    CHECK(model_save(path, &net, &sgd, &meta, &e) == CDL_OK);
    Optimizer opt;
    CHECK(model_load(path, &back, 1, &opt, &meta, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "kind.cdl: its optimizer state is sgd's but its cfg says optimizer=adam");
    CHECK(opt.slab == NULL);
    /* Inference needs no optimizer state: it loads. */
    CHECK(model_load(path, &back, 0, NULL, &meta, &e) == CDL_OK);
    model_meta_free(&meta);
    net_free(&back);
    free(sgd.slab);
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

/* A class list longer than the outputs (issue 43: an edited header) is refused, not shown beside
 * the wrong outputs; a shorter one (a dataset with fewer classes than the net's outputs) loads. */
static void test_class_names_must_fit_the_outputs(const char *dir)
{
    Net net, back;
    Error e = {0};
    CHECK(build(&net, 1) == 0);
    char *names[] = {"cat", "dog", "bird", "fish", "frog"};
    ModelMeta meta = {.names = names, .n_names = 5}, loaded;
    char path[512];
    snprintf(path, sizeof path, "%s/names.cdl", dir);
    CHECK(model_save(path, &net, NULL, &meta, &e) == CDL_OK);
    CHECK(model_load(path, &back, 0, NULL, &loaded, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "names.cdl: the header names 5 classes but the model has only 4 outputs");
    meta.n_names = 3;
    CHECK(model_save(path, &net, NULL, &meta, &e) == CDL_OK);
    CHECK(model_load(path, &back, 0, NULL, &loaded, &e) == CDL_OK);
    CHECK(loaded.n_names == 3 && !strcmp(loaded.names[2], "bird"));
    model_meta_free(&loaded);
    net_free(&back);
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
    test_round_trip_keeps_tensors_optimizer_ema_and_meta(dir);
    test_inference_load_takes_the_ema_weights(dir);
    test_inference_load_without_ema_takes_the_weights(dir);
    test_checkpoint_without_optimizer_state_resumes_from_zero(dir);
    test_older_checkpoint_with_velocity_resumes_its_sgd_state(dir);
    test_optimizer_state_of_another_kind_is_refused(dir);
    test_tensor_table_mismatch_is_refused(dir);
    test_out_of_range_counts_load_as_zero(dir);
    test_class_names_must_fit_the_outputs(dir);
    rmdir(dir);
    return check_report("test_model_io");
}
