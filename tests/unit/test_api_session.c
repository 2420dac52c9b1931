/* The public API's training side (cdl.h): a session trains cfg/digits.cfg for an epoch with
 * step and epoch reports, evaluates, saves, resumes, runs a few steps then the rest; the checkpoint
 * evaluates alike through cdl_model_evaluate; bench and profile time a model opened for training.
 * Run from the repository root. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api/cdl.h"
#include "check.h"

typedef struct Seen {
    int steps, logged, epochs, messages;
    uint64_t last_step, total_steps;
    cdl_epoch_report epoch;
    char message[256];
} Seen;

static void on_step(void *ctx, const cdl_step_report *r)
{
    Seen *s = ctx;
    s->steps++;
    s->logged += r->logged;
    s->last_step = r->step;
    s->total_steps = r->total_steps;
}

static void on_epoch(void *ctx, const cdl_epoch_report *r)
{
    Seen *s = ctx;
    s->epochs++;
    s->epoch = *r;
}

static void on_message(void *ctx, const char *line)
{
    Seen *s = ctx;
    s->messages++;
    snprintf(s->message, sizeof s->message, "%s", line);
}

/* A stop query (cdl_run_options.stop_requested) that asks at its second call. */
static int stop_at_second_poll(void *ctx)
{
    int *polls = ctx;
    return ++*polls >= 2;
}

static void test_session_trains_evaluates_saves_resumes(const char *dir)
{
    char out[512], saved[512], err[1024];
    snprintf(out, sizeof out, "%s/digits.cdl", dir);
    snprintf(saved, sizeof saved, "%s/saved.cdl", dir);
    Seen seen = {0};
    const char *const set[] = {"net.batch=64"};
    const cdl_session_options o = {.cfg_path = "cfg/digits.cfg",
                                   .overrides = set,
                                   .n_overrides = 1,
                                   .seed = 3,
                                   .out_path = out,
                                   .on_message = on_message,
                                   .message_ctx = &seen};
    cdl_session *s;
    CHECK(cdl_session_create(&o, &s, err, sizeof err) == 0);
    const cdl_data_options data = {0, 0};
    CHECK(cdl_session_attach_data(s, NULL, &data, err, sizeof err) == 0);
    cdl_session_info info;
    cdl_session_get_info(s, &info);
    CHECK(!strcmp(info.data_path, "cfg/digits.data") && !strcmp(info.checkpoint_path, out));
    CHECK(info.batch == 64 && info.seq == 0 && info.samples > 64 && info.done_steps == 0);
    CHECK(info.steps_per_epoch == info.samples / 64 && info.default_epochs == 20);
    const cdl_run_options one = {.epochs = 1, .log_every = 5};
    const cdl_callbacks cb = {on_step, on_epoch, &seen};
    CHECK(cdl_session_run(s, &one, &cb, err, sizeof err) == 0);
    CHECK(seen.steps == info.steps_per_epoch && seen.last_step == seen.total_steps);
    CHECK(seen.logged == info.steps_per_epoch / 5 + (info.steps_per_epoch % 5 != 0));
    CHECK(seen.epochs == 1 && seen.epoch.epoch == 1 && seen.epoch.validated);
    CHECK(!strcmp(seen.epoch.checkpoint, out) && seen.epoch.valid_top1 > 0.5);
    cdl_eval_result r;
    CHECK(cdl_session_evaluate(s, &r, err, sizeof err) == 0);
    CHECK(r.classes == 10 && r.confusion && !r.per_token && r.samples > 0);
    CHECK_NEAR(r.top1, seen.epoch.valid_top1, 1e-12);
    CHECK(cdl_session_save(s, saved, err, sizeof err) == 0);
    cdl_session_free(s);

    cdl_model *m;
    CHECK(cdl_model_load(saved, &m, err, sizeof err) == 0);
    const char *recorded = cdl_model_data_path(m); /* absolute, to be found from anywhere */
    CHECK(recorded[0] == '/' && strlen(recorded) > 16 &&
          !strcmp(recorded + strlen(recorded) - 16, "/cfg/digits.data"));
    cdl_eval_result again;
    CHECK(cdl_model_evaluate(m, NULL, &data, &again, err, sizeof err) == 0);
    CHECK_NEAR(again.top1, r.top1, 1e-12);
    CHECK_NEAR(cdl_eval_class_accuracy(&again, 3), cdl_eval_class_accuracy(&r, 3), 1e-12);
    cdl_eval_result_free(&again);
    cdl_eval_result_free(&r);
    cdl_model_free(m);

    const cdl_session_options resume = {
        .resume_path = saved, .on_message = on_message, .message_ctx = &seen};
    CHECK(cdl_session_create(&resume, &s, err, sizeof err) == 0);
    CHECK(cdl_session_attach_data(s, NULL, &data, err, sizeof err) == 0);
    cdl_session_get_info(s, &info);
    CHECK(info.done_steps == (uint64_t)info.steps_per_epoch && info.done_epochs == 1);
    CHECK(!strcmp(info.checkpoint_path, saved));
    seen.messages = 0;
    CHECK(cdl_session_run(s, &one, &cb, err, sizeof err) == 0);
    CHECK(seen.messages == 1);
    CHECK_CONTAINS(seen.message, "already has 1 epochs; nothing to do");
    const cdl_run_options three_steps = {.epochs = 2, .steps = 3};
    seen.steps = seen.epochs = 0;
    CHECK(cdl_session_run(s, &three_steps, &cb, err, sizeof err) == 0);
    CHECK(seen.steps == 3 && seen.epochs == 1 && seen.epoch.stopped && seen.epoch.epoch == 2);
    cdl_session_get_info(s, &info);
    CHECK(info.done_steps == (uint64_t)info.steps_per_epoch + 3 && info.done_epochs == 1);
    int polls = 0;
    const cdl_run_options asked = {
        .epochs = 2, .stop_requested = stop_at_second_poll, .stop_ctx = &polls};
    seen.steps = seen.epochs = 0;
    CHECK(cdl_session_run(s, &asked, &cb, err, sizeof err) == 0);
    CHECK(seen.steps == 2 && seen.epochs == 1 && polls == 2);
    CHECK(seen.epoch.stopped && seen.epoch.interrupted && !seen.epoch.validated);
    cdl_session_get_info(s, &info);
    CHECK(info.done_steps == (uint64_t)info.steps_per_epoch + 5 && info.done_epochs == 1);
    const cdl_run_options two = {.epochs = 2};
    seen.steps = 0;
    CHECK(cdl_session_run(s, &two, &cb, err, sizeof err) == 0);
    CHECK(seen.steps == info.steps_per_epoch - 5 && seen.epoch.epoch == 2 && !seen.epoch.stopped);
    CHECK(!seen.epoch.interrupted && seen.epoch.validated);
    cdl_session_free(s);
    unlink(out);
    unlink(saved);
}

static void test_session_errors(void)
{
    char err[1024];
    cdl_session *s;
    const cdl_session_options missing = {.cfg_path = "/nonexistent/x.cfg"};
    CHECK(cdl_session_create(&missing, &s, err, sizeof err) == 1 && s == NULL);
    CHECK_CONTAINS(err, "/nonexistent/x.cfg: cannot open config");
    const cdl_session_options fresh = {.cfg_path = "cfg/digits.cfg", .seed = 1};
    CHECK(cdl_session_create(&fresh, &s, err, sizeof err) == 0);
    const cdl_run_options one = {.epochs = 1};
    CHECK(cdl_session_run(s, &one, NULL, err, sizeof err) == 2);
    CHECK_CONTAINS(err, "once its data are attached");
    const cdl_data_options data = {0, 0};
    CHECK(cdl_session_attach_data(s, "/nonexistent/x.data", &data, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "/nonexistent/x.data");
    cdl_session_free(s);
}

static void test_bench_and_profile(void)
{
    char err[1024];
    cdl_model *m;
    const cdl_open_options train = {.seed = 1, .for_training = 1};
    CHECK(cdl_model_open("cfg/digits.cfg", &train, &m, err, sizeof err) == 0);
    const cdl_timing_options t = {.batch = 4, .steps = 2, .warmup = 1};
    cdl_bench_result b;
    CHECK(cdl_model_bench(m, &t, &b, err, sizeof err) == 0);
    CHECK(b.batch == 4 && b.seq == 0 && b.images_per_s > 0 && b.ms_per_step > 0);
    cdl_profile_result p;
    CHECK(cdl_model_profile(m, &t, &p, err, sizeof err) == 0);
    CHECK(p.batch == 4 && p.passes_per_step == 1 && p.pass_batch == 4 && p.n_layers > 3);
    CHECK(p.layers && !strcmp(p.layers[0].type, "convolutional") && p.layers[0].params > 0);
    CHECK(p.step.mean_ms > 0 && p.layers_ms > 0 && p.trace_events == 0);
    cdl_profile_result_free(&p);
    cdl_model_free(m);
    CHECK(cdl_model_load("/nonexistent/x.cdl", &m, err, sizeof err) != 0);
    const cdl_open_options infer = {.seed = 1};
    CHECK(cdl_model_open("cfg/digits.cfg", &infer, &m, err, sizeof err) == 0);
    CHECK(cdl_model_bench(m, &t, &b, err, sizeof err) == 2);
    CHECK_CONTAINS(err, "opened for training");
    cdl_model_free(m);
}

int main(void)
{
    char dir[] = "/tmp/cdl-api-session-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    test_session_trains_evaluates_saves_resumes(dir);
    test_session_errors();
    test_bench_and_profile();
    rmdir(dir);
    return check_report("test_api_session");
}
