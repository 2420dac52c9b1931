/* What a file is (util/file_kind.h), and class names checked against a checkpoint's
 * (train/model_meta.h): the two checks behind the messages a new user meets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "train/model_meta.h"
#include "util/file_kind.h"

static char dir[] = "/tmp/cdl_test_data_checks_XXXXXX";

/* Writes n bytes to dir/name and returns that path (static storage, one at a time). */
static const char *write_file(const char *name, const void *bytes, size_t n)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
    return path;
}

static void test_kinds(void)
{
    CHECK(file_kind(write_file("a.png", "\x89PNG\r\n\x1a\n\0\0", 10), NULL) == FILE_KIND_PNG);
    CHECK(file_kind(write_file("a.jpg", "\xFF\xD8\xFF\xE0", 4), NULL) == FILE_KIND_JPEG);
    CHECK(file_kind(write_file("a.gz", "\x1F\x8B\x08\0", 4), NULL) == FILE_KIND_GZIP);
    CHECK(file_kind(write_file("a.cdl", "CDLCKPT\0\1\0\0\0", 12), NULL) == FILE_KIND_CHECKPOINT);
    const char cfg[] = "\xEF\xBB\xBF# a comment\n; another\n\n  [net]\nbatch=1\n";
    CHECK(file_kind(write_file("a.txt", cfg, sizeof cfg - 1), NULL) == FILE_KIND_CFG);
    const char text[] = "EMMA\n\nBy Jane Austen [1815]\n";
    CHECK(file_kind(write_file("book", text, sizeof text - 1), NULL) == FILE_KIND_TEXT);
    const char bin[] = "ab\0cd";
    CHECK(file_kind(write_file("x.bin", bin, 5), NULL) == FILE_KIND_BINARY);
    CHECK(file_kind(write_file("m.onnx", bin, 5), NULL) == FILE_KIND_ONNX);
    CHECK(file_kind(write_file("m.weights", bin, 5), NULL) == FILE_KIND_WEIGHTS);
    /* safetensors: header length 2, then "{}" */
    CHECK(file_kind(write_file("m.st", "\2\0\0\0\0\0\0\0{}", 10), NULL) == FILE_KIND_SAFETENSORS);
    CHECK(file_kind(write_file("empty", "", 0), NULL) == FILE_KIND_EMPTY);
    CHECK(file_kind(dir, NULL) == FILE_KIND_DIRECTORY);
    int err_no = 0;
    CHECK(file_kind("/nonexistent/cdl/file", &err_no) == FILE_KIND_MISSING);
    CHECK(err_no != 0);
}

static void test_not_checkpoint_advice(void)
{
    char out[600];
    CHECK(file_kind_not_checkpoint(FILE_KIND_CFG, "x.cfg", out, sizeof out) == CDL_EUSAGE);
    CHECK(!strcmp(out, "a cfg file, not a cdl checkpoint: train it first (`cdl train x.cfg`)"));
    CHECK(file_kind_not_checkpoint(FILE_KIND_ONNX, "m.onnx", out, sizeof out) == CDL_EUSAGE);
    CHECK_CONTAINS(out, "import it first (`cdl import m.onnx`)");
    CHECK(file_kind_not_checkpoint(FILE_KIND_BINARY, "b", out, sizeof out) == CDL_ERUNTIME);
    CHECK(!strcmp(out, "not a cdl checkpoint (bad magic)"));
}

static void test_names(void)
{
    char *trained[12] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n11"};
    ModelMeta meta = {.names = trained, .n_names = 12};
    Error e = {0};
    CHECK(model_meta_check_names(&meta, trained, 12, "m.cdl", "d.data", &e) == CDL_OK);
    ModelMeta none = {0};
    CHECK(model_meta_check_names(&none, trained, 3, "m.cdl", "d.data", &e) == CDL_OK);
    char *renamed[12] = {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "x7", "n8", "n9", "n10", "n11"};
    CHECK(model_meta_check_names(&meta, renamed, 12, "m.cdl", "d.data", &e) == CDL_EUSAGE);
    CHECK(!strcmp(e.msg, "d.data: its 12 classes (n0, n1, n2, n3, n4, n5, ..., n10, n11) are not "
                         "the 12 classes m.cdl was trained on (n0, n1, n2, n3, n4, n5, ..., n10, "
                         "n11): the first difference is class 7 ('x7' here, 'n7' there)"));
    CHECK(model_meta_check_names(&meta, trained, 3, "m.cdl", "d.data", &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "its 3 classes (n0, n1, n2) are not the 12 classes m.cdl");
    CHECK_CONTAINS(e.msg, "the first difference is class 3 (none here, 'n3' there)");
    ModelMeta short_meta = {.names = trained, .n_names = 2};
    CHECK(model_meta_check_names(&short_meta, trained, 3, "m.cdl", "d.data", &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "the first difference is class 2 ('n2' here, none there)");
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    test_kinds();
    test_not_checkpoint_advice();
    test_names();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd))
        return 1;
    return check_report("test_data_checks");
}
