/* The exponential moving average of the weights ([net] ema=): it starts from the weights,
 * moves by shadow = d*shadow + (1-d)*w after every step (running statistics included), is off
 * by default, and is what the validation during training measures. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "model/model_io.h"
#include "train/ema.h"
#include "train/net_keys.h"
#include "train/trainer.h"

/* Conv with batch norm (running statistics in the state slab), connected, softmax. */
static const char *cfg_format =
    "[net]\nbatch=4\nwidth=4\nheight=4\nchannels=2\nlearning_rate=0.1\nema=%s\n"
    "[convolutional]\nfilters=3\nsize=3\npad=1\nbatch_normalize=1\nactivation=leaky\n"
    "[connected]\noutput=3\nactivation=linear\n[softmax]\n";

static int build(Net *net, const char *ema)
{
    Error e = {0};
    char text[512];
    snprintf(text, sizeof text, cfg_format, ema);
    if (net_build_from_text(net, text, "ema.cfg", 1, 7, &e) || net_resize(net, 4, 0, &e)) {
        fprintf(stderr, "FAIL build: %s\n", e.msg);
        check_failures++;
        return -1;
    }
    for (size_t i = 0; i < 4 * shape_size(net->in_shape); i++)
        net->input[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    for (int b = 0; b < 4; b++)
        net->labels[b] = b % 3;
    net->train = 1;
    return 0;
}

/* w [ema_floats] = the net's parameters then its state. */
static void weights_of(const Net *net, float *w)
{
    memcpy(w, net->params, net->n_params * sizeof *w);
    memcpy(w + net->n_params, net->state, net->n_state * sizeof *w);
}

static void step(Net *net, Optimizer *opt)
{
    net_forward(net);
    net_backward(net);
    optimizer_step(opt, net, 0.1f);
    net->step++;
}

static void test_ema_moves_towards_the_weights_after_every_step(void)
{
    Net net;
    if (build(&net, "0.75"))
        return;
    Error e = {0};
    Optimizer opt;
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK && opt.ema != NULL);
    const size_t n = ema_floats(&net);
    CHECK(n == net.n_params + net.n_state && net.n_state > 0);
    float *expect = malloc(n * sizeof *expect), *w = malloc(n * sizeof *w);
    weights_of(&net, expect); /* the shadow starts as the weights */
    CHECK(!memcmp(opt.ema, expect, n * sizeof *expect));
    for (int s = 0; s < 3; s++) {
        step(&net, &opt);
        weights_of(&net, w);
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            expect[i] = 0.75f * expect[i] + 0.25f * w[i];
            worst = fmax(worst, fabs(opt.ema[i] - expect[i]));
        }
        CHECK(worst <= 1e-6);
    }
    /* The shadow lags: it is not the weights themselves. */
    CHECK(memcmp(opt.ema, w, n * sizeof *w) != 0);
    free(expect);
    free(w);
    optimizer_free(&opt);
    net_free(&net);
}

static void test_ema_is_off_by_default(void)
{
    Net net;
    Error e = {0};
    CHECK(net_build_from_text(&net, "[net]\nwidth=1\nheight=1\nchannels=2\n[softmax]\n", "t.cfg", 1,
                              1, &e) == CDL_OK);
    Optimizer opt;
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    CHECK(opt.settings.ema == 0.0f);
    CHECK(opt.ema == NULL);
    optimizer_free(&opt);
    net_free(&net);
}

static void test_ema_swap_exchanges_and_restores(void)
{
    Net net;
    if (build(&net, "0.5"))
        return;
    Error e = {0};
    Optimizer opt;
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    step(&net, &opt);
    const size_t n = ema_floats(&net);
    float *raw = malloc(n * sizeof *raw), *shadow = malloc(n * sizeof *shadow);
    weights_of(&net, raw);
    memcpy(shadow, opt.ema, n * sizeof *shadow);
    ema_swap(opt.ema, &net);
    float *now = malloc(n * sizeof *now);
    weights_of(&net, now);
    CHECK(!memcmp(now, shadow, n * sizeof *now) && !memcmp(opt.ema, raw, n * sizeof *raw));
    ema_swap(opt.ema, &net);
    weights_of(&net, now);
    CHECK(!memcmp(now, raw, n * sizeof *now) && !memcmp(opt.ema, shadow, n * sizeof *raw));
    free(raw);
    free(shadow);
    free(now);
    optimizer_free(&opt);
    net_free(&net);
}

/* train_run's validation reports the EMA's loss, which differs from the raw weights'. */
static void test_validation_during_training_measures_the_ema(void)
{
    Net net;
    if (build(&net, "0.9"))
        return;
    Error e = {0};
    Dataset data = {.n = 16, .c = 2, .h = 4, .w = 4, .max_value = 255, .classes = 3};
    data.pixels = malloc(16 * 32);
    data.labels = malloc(16 * sizeof *data.labels);
    for (int i = 0; i < 16 * 32; i++)
        data.pixels[i] = (uint8_t)(i * 53 + i / 7);
    for (int i = 0; i < 16; i++)
        data.labels[i] = i % 3;
    SampleSource src;
    CHECK(source_from_dataset(&src, &data, &e) == CDL_OK);
    LoaderOptions lo = {.batch = 4, .seed = 7, .train = 1, .drop_last = 1};
    Loader *loader;
    AugmentConfig aug;
    CHECK(net_augment(&net, &aug, &e) == CDL_OK);
    CHECK(loader_open(&loader, &src, &aug, &lo, &e) == CDL_OK);
    Optimizer opt;
    CHECK(optimizer_init(&opt, &net, &e) == CDL_OK);
    char out[] = "/tmp/cdl_ema_XXXXXX";
    close(mkstemp(out));
    ModelMeta meta = {.seed = 7};
    TrainPlan plan = {.epochs = 2, .out_path = out, .save_checkpoint = model_save_checkpoint};
    const TrainSource train = train_source_loader(loader);
    const ValidSet valid = {&src, NULL, NULL};
    CHECK(train_run(&net, &opt, &train, &valid, &plan, &meta, NULL, &e) == CDL_OK);
    EvalOptions eo = {0, 0};
    EvalResult raw, averaged;
    CHECK(evaluate(&net, &src, &eo, &raw, &e) == CDL_OK);
    ema_swap(opt.ema, &net);
    CHECK(evaluate(&net, &src, &eo, &averaged, &e) == CDL_OK);
    CHECK(meta.valid_loss == averaged.loss);
    CHECK(meta.valid_loss != raw.loss);
    eval_result_free(&raw);
    eval_result_free(&averaged);
    unlink(out);
    loader_close(loader);
    source_free(&src);
    optimizer_free(&opt);
    net_free(&net);
}

int main(void)
{
    test_ema_moves_towards_the_weights_after_every_step();
    test_ema_is_off_by_default();
    test_ema_swap_exchanges_and_restores();
    test_validation_during_training_measures_the_ema();
    return check_report("test_ema");
}
