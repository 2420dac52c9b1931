/* The label audit (detect/det_audit.h) on a dataset of 8 images whose detector finds every object
 * where it is, with three labels corrupted on purpose: a class swapped, a box deleted, a box
 * shifted. Those three must rank first, with their kinds, and nothing else be accused: a
 * truth whose own class outscores a confident other class, and unconfident detections anywhere,
 * are not suspects. */
#include <stdlib.h>

#include "check.h"
#include "detect/det_audit.h"

enum { IMAGES = 8, CLASSES = 3 };

/* A box of image i, object k (two objects per image, apart). */
static Box object_box(int i, int k)
{
    return (Box){0.25f + 0.5f * k, 0.3f + 0.05f * (i % 3), 0.2f + 0.01f * i, 0.25f};
}

typedef struct Set {
    DetBox truths[2 * IMAGES], found[8 * IMAGES];
    int n_truths, n_found;
} Set;

static void add_found(Set *s, int image, int class_id, float score, Box b)
{
    s->found[s->n_found++] = (DetBox){image, class_id, score, b};
}

/* The clean labels and what the detector finds: each object at IoU ~0.9 with score 0.9, a
 * second class at 0.2 on it, and a stray unconfident box per image. Image 5's object 1 is hard:
 * its own class 0.5 and another 0.45. */
static void build(Set *s)
{
    s->n_truths = s->n_found = 0;
    for (int i = 0; i < IMAGES; i++) {
        for (int k = 0; k < 2; k++) {
            const int c = (i + k) % CLASSES;
            const Box b = object_box(i, k);
            s->truths[s->n_truths++] = (DetBox){i, c, 0, b};
            Box near = b;
            near.x += 0.01f;
            const int hard = i == 5 && k == 1;
            add_found(s, i, c, hard ? 0.5f : 0.9f, near);
            add_found(s, i, (c + 1) % CLASSES, hard ? 0.45f : 0.2f, near);
        }
        add_found(s, i, 0, 0.1f, (Box){0.5f, 0.85f, 0.1f, 0.1f});
    }
}

static void test_corrupted_labels_rank_first(void)
{
    Set s;
    build(&s);
    /* image 1, object 0: the class swapped in the label */
    s.truths[2].class_id = (s.truths[2].class_id + 2) % CLASSES;
    /* image 3, object 1: the box shifted by most of its width */
    s.truths[7].box.x += 0.13f;
    /* image 6, object 0: the label deleted */
    for (int t = 12; t + 1 < s.n_truths; t++)
        s.truths[t] = s.truths[t + 1];
    s.n_truths--;

    AuditSuspect *a;
    int n;
    Error e = {0};
    CHECK(det_audit(s.truths, s.n_truths, s.found, s.n_found, 0.25f, &a, &n, &e) == CDL_OK);
    CHECK(n == 3);
    int seen[3] = {0};
    for (int r = 0; r < n && r < 3; r++) {
        if (a[r].kind == AUDIT_CLASS) {
            seen[0]++;
            CHECK(a[r].image == 1 && a[r].truth == 2);
            CHECK(s.found[a[r].detection].class_id == 1 % CLASSES);
            CHECK_NEAR(a[r].suspicion, 0.9, 1e-6); /* 0.9 x (1 - 0): no detection of its class */
        } else if (a[r].kind == AUDIT_BOX) {
            seen[1]++;
            CHECK(a[r].image == 3 && a[r].truth == 7);
            CHECK(a[r].iou > 0 && a[r].iou < 0.5f);
        } else {
            seen[2]++;
            CHECK(a[r].image == 6 && a[r].truth == -1);
            CHECK(s.found[a[r].detection].score == 0.9f);
            CHECK_NEAR(a[r].suspicion, 0.9, 1e-6);
        }
    }
    CHECK(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
    for (int r = 1; r < n; r++)
        CHECK(a[r - 1].suspicion >= a[r].suspicion);
    free(a);
}

static void test_clean_labels_have_no_suspects(void)
{
    Set s;
    build(&s);
    AuditSuspect *a;
    int n;
    Error e = {0};
    CHECK(det_audit(s.truths, s.n_truths, s.found, s.n_found, 0.25f, &a, &n, &e) == CDL_OK);
    CHECK(n == 0);
    free(a);
    /* below the confidence asked for, the class swap accuses nothing */
    s.truths[2].class_id = (s.truths[2].class_id + 2) % CLASSES;
    CHECK(det_audit(s.truths, s.n_truths, s.found, s.n_found, 0.95f, &a, &n, &e) == CDL_OK);
    CHECK(n == 0);
    free(a);
}

int main(void)
{
    test_corrupted_labels_rank_first();
    test_clean_labels_have_no_suspects();
    return check_report("test_det_audit");
}
