/* Replays the inputs in tests/fuzz/regressions/ that once crashed cdl or read out of bounds
 * (found by fuzzing, issue 14) through the paths that failed: every cfg/ file is opened for
 * training and, if it opens, trained a step as `cdl bench` does; every darknet_weights/ file is
 * loaded into cfg/digits.cfg. Each must now be refused with a usage error (exit code 2) or, for a
 * valid input that once tripped a sanitizer, run its step cleanly; the issue-14 sequence net is
 * refused by name. Under `make test SAN=1` a regression is also an ASan or UBSan report. Run from
 * the repository root. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "api/cdl.h"
#include "check.h"

#define REGRESSIONS "tests/fuzz/regressions/"

/* Calls replay(path) for every regular file of REGRESSIONS dir; returns how many. */
static int each_file(const char *dir, void (*replay)(const char *path))
{
    char folder[512];
    snprintf(folder, sizeof folder, REGRESSIONS "%s", dir);
    DIR *d = opendir(folder);
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *en; d && (en = readdir(d));) {
        if (en->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", folder, en->d_name);
        replay(path);
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* The open's status (0, or 2 with err naming path); a cfg that opens is benched a step. */
static int open_and_step(const char *path, char *err, size_t size)
{
    const cdl_open_options o = {.seed = 1, .kind = CDL_OPEN_CFG, .for_training = 1};
    cdl_model *m = NULL;
    int st = cdl_model_open(path, &o, &m, err, size);
    if (!st) {
        const cdl_timing_options t = {.steps = 1};
        cdl_bench_result r;
        st = cdl_model_bench(m, &t, &r, err, size);
        cdl_model_free(m);
    }
    fprintf(stderr, "%s: %s\n", path, st ? err : "opened and ran a step");
    return st;
}

static void replay_cfg(const char *path)
{
    char err[1024] = "";
    const int st = open_and_step(path, err, sizeof err);
    CHECK(st == 0 || st == 2);
    if (st)
        CHECK_CONTAINS(err, path);
}

static void replay_darknet_weights(const char *path)
{
    cdl_model *m;
    char err[1024] = "";
    CHECK(cdl_model_from_cfg("cfg/digits.cfg", 1, &m, err, sizeof err) == 0);
    const int st = cdl_model_load_darknet_weights(m, path, err, sizeof err);
    fprintf(stderr, "%s: %s\n", path, st ? err : "loaded");
    CHECK(st == 2);
    CHECK_CONTAINS(err, path);
    cdl_model_free(m);
}

int main(void)
{
    CHECK(each_file("cfg", replay_cfg) >= 1);
    char err[1024] = "";
    CHECK(open_and_step(REGRESSIONS "cfg/seq-with-height.cfg", err, sizeof err) == 2);
    CHECK_CONTAINS(err, "contradicts seq=8");
    /* a padded convolution gives the softmax 3 rows for 2 tokens' labels */
    CHECK(open_and_step(REGRESSIONS "cfg/seq-conv-changes-rows.cfg", err, sizeof err) == 2);
    CHECK_CONTAINS(err, "needs one row per token: its input has 3 rows (height) but the net has "
                        "seq=2 tokens");
    CHECK(each_file("darknet_weights", replay_darknet_weights) >= 1);
    return check_report("test_fuzz_regressions");
}
