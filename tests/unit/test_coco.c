/* COCO-style JSON detection labels (data/source_coco.h): the boxes equal those of the same labels
 * as darknet label files, crowd annotations are skipped, categories give the classes in order,
 * and every bad entry is refused naming the file and the annotation's index and id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data/boxes.h"
#include "data/data_config.h"
#include "data/source_coco.h"

static char dir[64];

/* Writes text to dir/name and returns the path (a static buffer per slot). */
static const char *write_file(const char *name, const char *text)
{
    static char paths[4][256];
    static int slot;
    char *path = paths[slot++ % 4];
    snprintf(path, 256, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

/* Three images (ids 10, 3, 7; 64x48, 32x32, 100x50) and two categories (ids 5 "cat", 9 "dog"). */
#define IMAGES                                                                                     \
    "\"images\": [{\"id\": 10, \"file_name\": \"a.png\", \"width\": 64, \"height\": 48},"          \
    " {\"id\": 3, \"file_name\": \"b.png\", \"width\": 32, \"height\": 32},"                       \
    " {\"id\": 7, \"file_name\": \"c.png\", \"width\": 100, \"height\": 50}],"
#define CATEGORIES                                                                                 \
    "\"categories\": [{\"id\": 5, \"name\": \"cat\"}, {\"id\": 9, \"name\": \"dog\"}]"

/* A bbox [x, y, w, h] of a width x height image as a darknet label line, each value the double
 * the conversion computes, written to round-trip. */
static void label_line(char *out, size_t size, int cls, double x, double y, double w, double h,
                       double width, double height)
{
    snprintf(out, size, "%d %.17g %.17g %.17g %.17g\n", cls, (x + w / 2) / width,
             (y + h / 2) / height, w / width, h / height);
}

static void test_json_boxes_equal_darknet_label_files(void)
{
    const char *json = write_file(
        "set.json",
        "{" IMAGES "\"annotations\": ["
        "{\"id\": 1, \"image_id\": 7, \"category_id\": 9, \"bbox\": [10.5, 4, 30, 20.25]},"
        "{\"id\": 2, \"image_id\": 10, \"category_id\": 5, \"bbox\": [0, 0, 64, 48]},"
        "{\"id\": 3, \"image_id\": 7, \"category_id\": 5, \"bbox\": [60, 30, 7, 9],"
        " \"iscrowd\": 0},"
        "{\"id\": 4, \"image_id\": 10, \"category_id\": 9, \"bbox\": [1, 1, 5, 5],"
        " \"iscrowd\": 1},"
        "{\"id\": 5, \"image_id\": 10, \"category_id\": 9, \"bbox\": [33.3, 1.7, 12, 40]}"
        "]," CATEGORIES "}");
    SampleSource s;
    Error e = {0};
    CHECK(source_coco_open(&s, json, 2, &e) == CDL_OK);
    CHECK(s.n == 3 && s.classes == 2 && s.read_boxes);
    CHECK(strstr(s.path(&s, 0), "a.png") && strstr(s.path(&s, 2), "c.png"));
    char a[512], b[512], line[128];
    label_line(a, sizeof a, 0, 0, 0, 64, 48, 64, 48);
    label_line(line, sizeof line, 1, 33.3, 1.7, 12, 40, 64, 48);
    strcat(a, line);
    label_line(b, sizeof b, 1, 10.5, 4, 30, 20.25, 100, 50);
    label_line(line, sizeof line, 0, 60, 30, 7, 9, 100, 50);
    strcat(b, line);
    const char *texts[3] = {a, "", b};
    for (int i = 0; i < 3; i++) {
        float from_json[4][TRUTH_FLOATS], from_text[4][TRUTH_FLOATS];
        int n;
        memset(from_json, 0xff, sizeof from_json);
        CHECK(s.read_boxes(&s, i, &from_json[0][0], 4, &e) == CDL_OK);
        CHECK(boxes_read(write_file("labels.txt", texts[i]), 2, &from_text[0][0], 4, &n, &e) ==
              CDL_OK);
        CHECK(memcmp(from_json, from_text, sizeof from_json) == 0);
    }
    /* max_boxes 1: the first box in the file's order */
    float one[1][TRUTH_FLOATS];
    CHECK(s.read_boxes(&s, 0, &one[0][0], 1, &e) == CDL_OK && one[0][TRUTH_W] == 1.0f);
    source_free(&s);
}

static void test_categories_name_the_classes_in_order(void)
{
    const char *json = write_file("names.json", "{" IMAGES "\"annotations\": []," CATEGORIES "}");
    char **names;
    int n;
    Error e = {0};
    CHECK(coco_category_names(json, &names, &n, &e) == CDL_OK);
    CHECK(n == 2 && !strcmp(names[0], "cat") && !strcmp(names[1], "dog"));
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    /* a .data file naming it: classes and names come from the categories */
    char text[512];
    snprintf(text, sizeof text, "train=%s\n", json);
    const char *data = write_file("coco.data", text);
    DataConfig dc;
    CHECK(data_config_load(data, &dc, &e) == CDL_OK);
    CHECK(dc.classes == 2 && dc.train_kind == DATA_COCO && !strcmp(dc.names[1], "dog"));
    SampleSource train, valid;
    CHECK(data_config_open_sources(&dc, &train, &valid, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "is COCO JSON detection labels, for a detection net");
    dc.boxes = 1;
    CHECK(data_config_open_sources(&dc, &train, &valid, &e) == CDL_OK && train.n == 3);
    source_free(&train);
    source_free(&valid);
    data_config_free(&dc);
}

/* Opens a set whose one annotation is `annotation`, expecting CDL_EUSAGE and message. */
static void check_refused(const char *annotation, const char *message)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{" IMAGES "\"annotations\": [{\"id\": 1, \"image_id\": 3, "
             "\"category_id\": 5, \"bbox\": [1, 1, 2, 2]}, %s]," CATEGORIES "}",
             annotation);
    const char *json = write_file("bad.json", text);
    SampleSource s;
    Error e = {0};
    CHECK(source_coco_open(&s, json, 2, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, json);
    CHECK_CONTAINS(e.msg, message);
}

static void test_bad_annotations_are_refused_naming_index_and_id(void)
{
    check_refused("{\"id\": 33, \"image_id\": 4, \"category_id\": 5, \"bbox\": [1, 1, 2, 2]}",
                  ": annotations[1] (id 33): image_id is no image's id");
    check_refused("{\"id\": 33, \"image_id\": 3, \"category_id\": 1, \"bbox\": [1, 1, 2, 2]}",
                  ": annotations[1] (id 33): category_id is no category's id");
    check_refused("{\"image_id\": 3, \"category_id\": 5, \"bbox\": [1, 1, 2]}",
                  ": annotations[1]: bbox must be [x, y, w, h], four finite numbers");
    check_refused("{\"id\": 8, \"image_id\": 3, \"category_id\": 5, \"bbox\": [1, 1, \"2\", 2]}",
                  "annotations[1] (id 8): bbox must be");
    check_refused("{\"id\": 8, \"image_id\": 3, \"category_id\": 5, \"bbox\": [1, 1, 0, 2]}",
                  "annotations[1] (id 8): bbox w = 0, h = 2: both must be > 0");
    check_refused("{\"id\": 8, \"image_id\": 3, \"category_id\": 5, \"bbox\": [1, 1, 2, -1e400]}",
                  "annotations[1] (id 8): bbox must be [x, y, w, h], four finite numbers");
    check_refused("{\"id\": 8, \"image_id\": 3, \"category_id\": 5, \"bbox\": [31, 5, 4, 4]}",
                  "annotations[1] (id 8): bbox centre (33, 7) is outside the 32x32 image");
    check_refused("{\"id\": 8, \"image_id\": 3, \"category_id\": 5, \"bbox\": [-10, 0, 40, 4]}",
                  "annotations[1] (id 8): bbox 40x4 is larger than the 32x32 image");
}

static void test_bad_images_categories_and_syntax_are_refused(void)
{
    SampleSource s;
    Error e = {0};
    const char *json = write_file(
        "dup.json", "{\"images\": [{\"id\": 1, \"file_name\": \"a.png\", \"width\": 8, "
                    "\"height\": 8}, {\"id\": 1, \"file_name\": \"b.png\", \"width\": 8, "
                    "\"height\": 8}], \"annotations\": []," CATEGORIES "}");
    CHECK(source_coco_open(&s, json, 2, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, ": images[1]: id 1 is also images[0]'s");
    json = write_file("size.json",
                      "{\"images\": [{\"id\": 1, \"file_name\": \"a.png\", "
                      "\"width\": 0, \"height\": 8}], \"annotations\": []," CATEGORIES "}");
    CHECK(source_coco_open(&s, json, 2, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, ": images[0]: needs an integer \"id\"");
    json = write_file("cats.json", "{" IMAGES "\"annotations\": [], \"categories\": [{\"id\": 1, "
                                   "\"name\": \"a\"}, {\"id\": 2}]}");
    CHECK(source_coco_open(&s, json, 2, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, ": categories[1]: needs an integer \"id\" and a string \"name\"");
    json = write_file("classes.json", "{" IMAGES "\"annotations\": []," CATEGORIES "}");
    CHECK(source_coco_open(&s, json, 3, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "holds 2 categories but there are 3 classes");
    json = write_file("syntax.json", "{\n\"images\": [\n{\"id\": 1,,}\n]}");
    CHECK(source_coco_open(&s, json, 2, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "syntax.json:3: not valid JSON");
    json = write_file("none.json", "{" IMAGES CATEGORIES "}");
    CHECK(source_coco_open(&s, json, 2, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, ": no \"annotations\" array");
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/cdl_coco_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    test_json_boxes_equal_darknet_label_files();
    test_categories_name_the_classes_in_order();
    test_bad_annotations_are_refused_naming_index_and_id();
    test_bad_images_categories_and_syntax_are_refused();
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd))
        fprintf(stderr, "could not remove %s\n", dir);
    return check_report("test_coco");
}
