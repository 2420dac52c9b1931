/* Profiling: time statistics, trace-event recording limits, net_forward/net_backward timing
 * every layer in order on the profiler's clock, and the Chrome trace file format. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/net.h"
#include "util/atomic_file.h"
#include "util/profiler.h"
#include "util/trace.h"

static void test_layer_times_give_mean_sample_std_min_max(void)
{
    Profiler p;
    Error e = {0};
    CHECK(profiler_init(&p, 2, 0, &e) == CDL_OK);
    const double d[3] = {1.0, 2.0, 4.0};
    for (int i = 0; i < 3; i++)
        profiler_layer(&p, 0, 1, PROFILE_BACKWARD, 10.0, 10.0 + d[i]);
    const double mean = (d[0] + d[1] + d[2]) / 3;
    const double var = ((d[0] - mean) * (d[0] - mean) + (d[1] - mean) * (d[1] - mean) +
                        (d[2] - mean) * (d[2] - mean)) /
                       2;
    CHECK(p.backward[1].count == 3);
    CHECK(p.forward[1].count == 0 && p.backward[0].count == 0);
    CHECK_NEAR(time_stat_mean_s(&p.backward[1]), mean, 1e-12);
    CHECK_NEAR(time_stat_std_s(&p.backward[1]), sqrt(var), 1e-12);
    CHECK_NEAR(p.backward[1].min_s, 1.0, 1e-12);
    CHECK_NEAR(p.backward[1].max_s, 4.0, 1e-12);
    CHECK(time_stat_std_s(&p.forward[1]) == 0 && time_stat_mean_s(&p.forward[1]) == 0);
    profiler_reset(&p);
    CHECK(p.backward[1].count == 0 && p.backward[1].sum_s == 0);
    profiler_free(&p);
}

static void test_events_are_kept_only_while_tracing_and_up_to_capacity(void)
{
    Profiler p;
    Error e = {0};
    CHECK(profiler_init(&p, 1, 2, &e) == CDL_OK);
    profiler_name_layer(&p, 0, "convolutional");
    profiler_layer(&p, 5, 0, PROFILE_FORWARD, p.origin_s, p.origin_s + 1);
    CHECK(p.n_events == 0 && p.dropped == 0);
    CHECK(p.forward[0].count == 1); /* statistics do not depend on tracing */
    p.tracing = 1;
    profiler_layer(&p, 7, 0, PROFILE_FORWARD, p.origin_s + 0.5, p.origin_s + 0.75);
    profiler_step(&p, 7, p.origin_s + 0.25, p.origin_s + 1.25);
    profiler_layer(&p, 7, 0, PROFILE_BACKWARD, p.origin_s + 1, p.origin_s + 2);
    CHECK(p.n_events == 2 && p.dropped == 1);
    CHECK(!strcmp(p.events[0].name, "0 convolutional") && !strcmp(p.events[0].cat, "forward"));
    CHECK_NEAR(p.events[0].start_us, 0.5e6, 1e-3);
    CHECK_NEAR(p.events[0].dur_us, 0.25e6, 1e-3);
    CHECK(p.events[0].step == 8 && p.events[0].layer == 0); /* numbered from 1 */
    CHECK(!strcmp(p.events[1].name, "step") && !strcmp(p.events[1].cat, "step"));
    CHECK(p.events[1].layer == -1 && p.step.count == 1);
    profiler_free(&p);
}

static const char *net_text = "[net]\nbatch=2\nwidth=4\nheight=4\nchannels=1\n"
                              "[convolutional]\nfilters=2\nsize=3\npad=1\nactivation=relu\n"
                              "[maxpool]\nsize=2\nstride=2\n"
                              "[connected]\noutput=3\nactivation=linear\n[softmax]\n";

static void test_net_passes_time_every_layer_in_execution_order(void)
{
    Net net;
    Profiler p;
    Error e = {0};
    if (net_build_from_text(&net, net_text, "t.cfg", 1, 1, &e) || net_resize(&net, 2, 0, &e) ||
        profiler_init(&p, net.n_layers, 2 * (size_t)net.n_layers, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return;
    }
    const int n = net.n_layers;
    net.train = 1;
    net.step = 4;
    net.profiler = &p;
    p.tracing = 1;
    net_forward(&net);
    net_backward(&net);
    for (int i = 0; i < n; i++)
        CHECK(p.forward[i].count == 1 && p.backward[i].count == 1);
    CHECK(p.n_events == 2 * (size_t)n && p.dropped == 0);
    for (size_t k = 0; k < p.n_events; k++) {
        const TraceEvent *ev = &p.events[k];
        const int forward = k < (size_t)n;
        CHECK(ev->layer == (forward ? (int)k : 2 * n - 1 - (int)k));
        CHECK(!strcmp(ev->cat, forward ? "forward" : "backward"));
        CHECK(ev->step == 5 && ev->dur_us >= 0); /* net.step counts from 0, traces from 1 */
        if (k)
            CHECK(ev->start_us >= p.events[k - 1].start_us + p.events[k - 1].dur_us);
    }
    net.profiler = NULL;
    net_forward(&net);
    CHECK(p.forward[0].count == 1);
    profiler_free(&p);
    net_free(&net);
}

/* A clock that advances one second a reading (ctx: the reading count): what a device's clock
 * (BackendOps.clock_s) is to the profiler. */
static double ticking_clock_s(void *ctx)
{
    int *readings = ctx;
    return (double)++*readings;
}

/* Net passes read the profiler's clock, not the host's, twice around each layer: every layer
 * then lasts exactly one tick, and the trace counts from the reading at reset. */
static void test_net_passes_read_the_profilers_own_clock(void)
{
    Net net;
    Profiler p;
    Error e = {0};
    if (net_build_from_text(&net, net_text, "t.cfg", 1, 1, &e) || net_resize(&net, 2, 0, &e) ||
        profiler_init(&p, net.n_layers, 2 * (size_t)net.n_layers, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        check_failures++;
        return;
    }
    int readings = 0;
    p.clock_s = ticking_clock_s;
    p.clock_ctx = &readings;
    profiler_reset(&p); /* origin: reading 1 */
    CHECK(readings == 1 && p.origin_s == 1.0);
    p.tracing = 1;
    net.train = 1;
    net.profiler = &p;
    net_forward(&net);
    net_backward(&net);
    CHECK(readings == 1 + 4 * net.n_layers);
    for (int i = 0; i < net.n_layers; i++) {
        CHECK(p.forward[i].count == 1 && p.forward[i].sum_s == 1.0);
        CHECK(p.backward[i].count == 1 && p.backward[i].sum_s == 1.0);
    }
    CHECK(p.events[0].start_us == 1e6 && p.events[0].dur_us == 1e6);
    profiler_free(&p);
    net_free(&net);
}

/* The file's text (malloc'd), or NULL. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = calloc(1 << 16, 1);
    if (text && fread(text, 1, (1 << 16) - 1, f) == 0)
        text[0] = '\0';
    fclose(f);
    return text;
}

static void test_trace_file_is_chrome_trace_event_json(void)
{
    char path[] = "/tmp/cdl_trace_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    TraceEvent ev[2] = {{"2 \"odd\\name\"", "forward", 1.5, 2.25, 1, 3, 2},
                        {"step", "step", 0, 10, 1, 3, -1}};
    Error e = {0};
    CHECK(trace_write(path, ev, 2, &e) == CDL_OK);
    char *text = read_text(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    CHECK(root != NULL);
    if (root) {
        const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
        CHECK(cJSON_GetArraySize(events) == 2);
        CHECK(!strcmp(cJSON_GetObjectItem(root, "displayTimeUnit")->valuestring, "ms"));
        const cJSON *a = cJSON_GetArrayItem(events, 0), *b = cJSON_GetArrayItem(events, 1);
        CHECK(!strcmp(cJSON_GetObjectItem(a, "name")->valuestring, ev[0].name));
        CHECK(!strcmp(cJSON_GetObjectItem(a, "ph")->valuestring, "X"));
        CHECK_NEAR(cJSON_GetObjectItem(a, "ts")->valuedouble, 1.5, 1e-9);
        CHECK_NEAR(cJSON_GetObjectItem(a, "dur")->valuedouble, 2.25, 1e-9);
        CHECK(cJSON_GetObjectItem(a, "pid") && cJSON_GetObjectItem(a, "tid")->valueint == 1);
        const cJSON *args = cJSON_GetObjectItem(a, "args");
        CHECK(cJSON_GetObjectItem(args, "step")->valueint == 3);
        CHECK(cJSON_GetObjectItem(args, "layer")->valueint == 2);
        CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "args"), "layer") == NULL);
    }
    cJSON_Delete(root);
    free(text);
    unlink(path);
}

static void test_failed_trace_write_names_the_file_and_leaves_no_temporary(void)
{
    char dir[] = "/tmp/cdl_trace_dir_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    TraceEvent ev = {"step", "step", 0, 1, 1, 0, -1};
    Error e = {0};
    CHECK(trace_write(dir, &ev, 1, &e) == CDL_ERUNTIME); /* cannot rename over a directory */
    CHECK(!strncmp(e.msg, dir, strlen(dir)));
    char tmp[sizeof dir + 320];
    atomic_file_temp_path(dir, tmp, sizeof tmp);
    CHECK(access(tmp, F_OK) != 0);
    rmdir(dir);
}

int main(void)
{
    test_layer_times_give_mean_sample_std_min_max();
    test_events_are_kept_only_while_tracing_and_up_to_capacity();
    test_net_passes_time_every_layer_in_execution_order();
    test_net_passes_read_the_profilers_own_clock();
    test_trace_file_is_chrome_trace_event_json();
    test_failed_trace_write_names_the_file_and_leaves_no_temporary();
    return check_report("test_profiler");
}
