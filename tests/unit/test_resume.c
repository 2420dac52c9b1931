/* A checkpoint's progress in the steps of the run resuming it (train/resume.h): epochs done and
 * samples into the next are kept at another global batch or dataset size, a changed dataset
 * restarts the epoch under way, older checkpoints resume as before, and a step that its epochs
 * do not account for is refused. */
#include "check.h"
#include "train/resume.h"

/* The meta of a run of steps_per_epoch steps of global_batch samples, stopped after step. */
static ModelMeta written(uint64_t step, int steps_per_epoch, int global_batch)
{
    return (ModelMeta){.step = step,
                       .steps_per_epoch = steps_per_epoch,
                       .epochs_done = (int)(step / (uint64_t)steps_per_epoch),
                       .global_batch = global_batch,
                       .samples_in_epoch = step % (uint64_t)steps_per_epoch * global_batch,
                       .samples_seen = step * (uint64_t)global_batch};
}

/* The run: 354 epochs of 20 steps of 2 ranks x 16, resumed by 1 process and 3 ranks. */
static void test_other_rank_counts(void)
{
    const ModelMeta m = written(7080, 20, 32);
    ResumePoint p;
    Error e = {0};
    CHECK(resume_point(&m, "r.cdl", 40, 16, 0, &p, &e) == CDL_OK);
    CHECK(p.step == 354 * 40 && p.epochs_done == 354 && !p.epoch_restarts);
    CHECK(resume_point(&m, "r.cdl", 13, 48, 0, &p, &e) == CDL_OK);
    CHECK(p.step == 354 * 13 && p.epochs_done == 354);
}

/* 5 steps of 32 into an epoch are 160 samples: step 10 of 16, step 3 of 48 (rounded down: 16
 * samples seen again), and the last step of an epoch that has fewer. */
static void test_inside_an_epoch(void)
{
    const ModelMeta m = written(2 * 56 + 5, 56, 32);
    ResumePoint p;
    Error e = {0};
    CHECK(resume_point(&m, "r.cdl", 112, 16, 0, &p, &e) == CDL_OK);
    CHECK(p.step == 2 * 112 + 10 && p.samples_in_epoch == 160);
    CHECK(resume_point(&m, "r.cdl", 37, 48, 0, &p, &e) == CDL_OK);
    CHECK(p.step == 2 * 37 + 3);
    CHECK(resume_point(&m, "r.cdl", 4, 32, 0, &p, &e) == CDL_OK);
    CHECK(p.step == 2 * 4 + 3);
}

/* Data that changed: the epochs done are kept, the epoch under way starts over. */
static void test_changed_data(void)
{
    ResumePoint p;
    Error e = {0};
    const ModelMeta inside = written(56 + 5, 56, 32), at_end = written(56, 56, 32);
    CHECK(resume_point(&inside, "r.cdl", 28, 32, 1, &p, &e) == CDL_OK);
    CHECK(p.step == 28 && p.epochs_done == 1 && p.epoch_restarts);
    CHECK(resume_point(&at_end, "r.cdl", 28, 32, 1, &p, &e) == CDL_OK);
    CHECK(p.step == 28 && !p.epoch_restarts);
}

/* A checkpoint before samples were recorded resumes at its step, as it did. */
static void test_older_checkpoint(void)
{
    ModelMeta m = written(3 * 44 + 7, 44, 32);
    m.global_batch = 0;
    m.samples_in_epoch = m.samples_seen = 0;
    ResumePoint p;
    Error e = {0};
    CHECK(resume_point(&m, "old.cdl", 44, 32, 0, &p, &e) == CDL_OK);
    CHECK(p.step == m.step);
}

static void test_damaged_progress(void)
{
    ModelMeta m = written(44, 44, 32);
    m.step = 200;
    ResumePoint p;
    Error e = {0};
    CHECK(resume_point(&m, "d.cdl", 44, 32, 0, &p, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "d.cdl: its progress does not add up: step 200 is not 1 epochs of 44 "
                          "steps and 0 samples of 32 a step");
    m = written(50, 44, 32);
    m.samples_in_epoch = 7;
    CHECK(resume_point(&m, "d.cdl", 44, 32, 0, &p, &e) == CDL_EUSAGE);
}

static void test_data_changes_text(void)
{
    char text[256];
    const DataPrint then = {1438, 359, 11}, same = then, fewer = {719, 359, 12},
                    others = {1438, 359, 13}, unknown = {0, 0, 0};
    data_print_changes(&then, &same, "samples", text, sizeof text);
    CHECK(!strcmp(text, ""));
    data_print_changes(&unknown, &fewer, "samples", text, sizeof text);
    CHECK(!strcmp(text, ""));
    data_print_changes(&then, &fewer, "samples", text, sizeof text);
    CHECK(!strcmp(text, "719 training samples (1438 then)"));
    data_print_changes(&then, &others, "tokens", text, sizeof text);
    CHECK(!strcmp(text, "as many tokens as then, but not the same"));
}

int main(void)
{
    test_other_rank_counts();
    test_inside_an_epoch();
    test_changed_data();
    test_older_checkpoint();
    test_damaged_progress();
    test_data_changes_text();
    return check_report("test_resume");
}
