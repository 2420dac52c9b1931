/* The training progress bar (src/cli/progress.c): its line fits the terminal's width, never
 * wrapping; and the ETA estimator (src/train/eta.c): right within 20% after the first 10% of
 * an epoch whose first steps are a slow warm-up. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/progress.h"
#include "train/eta.h"

/* bar_at: the narrowest of the widths at which the line has its bar. */
static void check_widths(const Progress *p, const cdl_step_report *r, int bar_at)
{
    const int widths[] = {40, 80, 200, 12, 1};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        char line[PROGRESS_LINE_MAX];
        const int n = progress_format_bar(line, sizeof line, widths[i], p, r);
        CHECK(n == (int)strlen(line));
        CHECK(n <= widths[i] - 1 || (widths[i] <= 1 && n == 0));
        CHECK(!strchr(line, '\n') && !strchr(line, '\r'));
        if (widths[i] >= 40)
            CHECK_CONTAINS(line, "epoch 3/10 ");
        if (widths[i] >= 80)
            CHECK_CONTAINS(line, "ETA 1:01:05");
        if (widths[i] >= 200)
            CHECK_CONTAINS(line, " lr 0.001 ");
        if (widths[i] >= bar_at)
            CHECK_CONTAINS(line, "[");
        if (widths[i] == 200) /* wide: the bar stops growing, the whole line is there */
            CHECK(strlen(strchr(line, '[')) - strlen(strchr(line, ']')) == PROGRESS_BAR_MAX + 1);
    }
}

static void test_bar_widths(void)
{
    Progress p = {.tty = 1, .epochs = 10};
    cdl_step_report r = {.step = 1234,
                         .epoch = 2,
                         .step_in_epoch = 234,
                         .steps_per_epoch = 469,
                         .loss = 2.3025851f,
                         .lr = 0.001f,
                         .images_per_s = 12345.6,
                         .eta_s = 3665,
                         .elapsed_s = 12};
    check_widths(&p, &r, 80);
    p.tokens_per_sample = 128; /* tok/s and a large loss: a longer line, lr and rate dropped */
    r.loss = 12345.678f;
    check_widths(&p, &r, 80);
    char line80[PROGRESS_LINE_MAX];
    progress_format_bar(line80, sizeof line80, 80, &p, &r);
    CHECK(!strstr(line80, "tok/s") && strstr(line80, "["));
    char line[PROGRESS_LINE_MAX];
    progress_format_bar(line, sizeof line, 200, &p, &r);
    CHECK_CONTAINS(line, "tok/s");
}

static void test_width_from_columns(void)
{
    /* fd -1 is no terminal: $COLUMNS, else 80 */
    setenv("COLUMNS", "57", 1);
    CHECK(progress_width(-1) == 57);
    setenv("COLUMNS", "wide", 1);
    CHECK(progress_width(-1) == 80);
    unsetenv("COLUMNS");
    CHECK(progress_width(-1) == 80);
}

/* A warm-up of 3 steps 20x slower than the rest, then steps of 0.1 s +-10% (a fixed
 * pseudo-random pattern): from 10% of a 1000-step epoch on, every estimate of the time left
 * is within 20% of the truth. The run's plain mean (what the ETA was before) is 55% off at
 * 10%. */
static void test_eta_after_warmup(void)
{
    enum { STEPS = 1000 };
    static double step_s[STEPS];
    unsigned seed = 1;
    for (int i = 0; i < STEPS; i++) {
        seed = seed * 1103515245u + 12345u;
        step_s[i] = i < 3 ? 2.0 : 0.1 * (0.9 + 0.2 * (double)(seed >> 16 & 0x7fff) / 0x7fff);
    }
    Eta eta;
    eta_init(&eta);
    CHECK(eta_left_s(&eta, 10) == 0);
    double done_s = 0, worst = 0;
    for (int i = 0; i < STEPS; i++) {
        eta_add(&eta, step_s[i]);
        done_s += step_s[i];
        if (i + 1 < STEPS / 10 || i + 1 == STEPS)
            continue;
        double truth = 0;
        for (int j = i + 1; j < STEPS; j++)
            truth += step_s[j];
        const double err = fabs(eta_left_s(&eta, (uint64_t)(STEPS - i - 1)) - truth) / truth;
        if (err > worst)
            worst = err;
        if (i + 1 == STEPS / 10) /* the old estimate, the run's mean step time, is far off */
            CHECK(fabs(done_s / (i + 1) * (STEPS - i - 1) - truth) / truth > 0.5);
    }
    CHECK(worst < 0.2);
    /* during the warm-up: the mean so far */
    eta_init(&eta);
    eta_add(&eta, 2.0);
    eta_add(&eta, 1.0);
    CHECK_NEAR(eta_step_s(&eta), 1.5, 1e-12);
}

int main(void)
{
    test_bar_widths();
    test_width_from_columns();
    test_eta_after_warmup();
    return check_report("test_progress");
}
