/* The cfg parser's text rules (issue 14 item 6): a leading UTF-8 byte order mark is skipped, a
 * key given twice is refused naming both lines (a warning when the value repeats), the lenient
 * load of `cdl check` lists every duplicate and unknown key instead of stopping, and messages
 * about a value that --set gave name the assignment (cfg_where). */
#include <stdlib.h>
#include <string.h>

#include "cfg_errors.h"
#include "check.h"
#include "core/net.h"
#include "io/cfg.h"

static void test_bom_is_skipped(void)
{
    Cfg cfg;
    Error e = {0};
    CHECK(cfg_parse_text("\xEF\xBB\xBF[net]\nbatch=2\n", "bom.cfg", &cfg, &e) == CDL_OK);
    CHECK(cfg.n_sections == 1 && !strcmp(cfg.sections[0].name, "net"));
    CHECK(cfg.sections[0].entries[0].line == 2);
    cfg_free(&cfg);
    /* Only at the very start: elsewhere the bytes are the text's. */
    CHECK(cfg_parse_text("[net]\n\xEF\xBB\xBF"
                         "batch=2\n",
                         "mid.cfg", &cfg, &e) == CDL_OK);
    CHECK(cfg_find(&cfg.sections[0], "batch") == NULL);
    cfg_free(&cfg);
}

static void test_duplicates(void)
{
    Cfg cfg;
    Error e = {0};
    CHECK(cfg_parse_text("[net]\nbatch=2\nwidth=8\nbatch=3\n", "d.cfg", &cfg, &e) == CDL_EUSAGE);
    CHECK(!strcmp(
        e.msg, "d.cfg:4: duplicate key 'batch' in [net]: '3' here, '2' at line 2 (give it once)"));
    CHECK(cfg_parse_text("[net]\nbatch=2\nbatch=2\n", "s.cfg", &cfg, &e) == CDL_OK);
    CHECK(cfg.sections[0].n_entries == 1 && cfg.warnings != NULL);
    CHECK_CONTAINS(cfg.warnings, "s.cfg:3: warning: key 'batch' in [net] repeats line 2");
    cfg_free(&cfg);
    /* The same key in two sections is two keys. */
    CHECK(cfg_parse_text("[net]\nbatch=2\n[connected]\nbatch=3\n", "t.cfg", &cfg, &e) == CDL_OK);
    cfg_free(&cfg);
}

static void test_set_is_named(void)
{
    Cfg cfg;
    Error e = {0};
    CHECK(cfg_parse_text("[net]\nbatch=2\n", "o.cfg", &cfg, &e) == CDL_OK);
    CHECK(cfg_apply_override(&cfg, "net.batch=abc", &e) == CDL_OK);
    CHECK(cfg_apply_override(&cfg, "net.width=x", &e) == CDL_OK);
    int v;
    CHECK(cfg_get_int(&cfg, &cfg.sections[0], "batch", 1, &v, &e) == CDL_EUSAGE);
    CHECK(!strcmp(e.msg, "--set net.batch=abc: bad value 'abc' for key 'batch' in [net]: "
                         "expected an integer in -16777216..16777216"));
    CHECK(cfg_get_int(&cfg, &cfg.sections[0], "width", 1, &v, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "--set net.width=x: bad value 'x'");
    CHECK(!strcmp(cfg_where(&cfg, &cfg.sections[0], NULL).text, "o.cfg:1"));
    cfg_free(&cfg);
}

static void test_lenient_lists_every_problem(void)
{
    const char *path = "lenient_test.cfg";
    FILE *f = fopen(path, "w");
    fputs("[net]\nbatch=2\nbatch=3\nwidth=8\nheight=8\nchannels=1\nfoo=1\n\n"
          "[connected]\noutput=2\noutput=4\nbar=1\n\n[softmax]\n",
          f);
    fclose(f);
    Cfg cfg;
    Error e = {0};
    CHECK(cfg_load(path, &cfg, &e) == CDL_EUSAGE);
    CHECK_CONTAINS(e.msg, "lenient_test.cfg:3: duplicate key 'batch'");
    CHECK(cfg_load_lenient(path, &cfg, &e) == CDL_OK);
    CHECK(cfg.problems != NULL);
    CHECK_CONTAINS(cfg.problems, "lenient_test.cfg:3: duplicate key 'batch'");
    CHECK_CONTAINS(cfg.problems, "lenient_test.cfg:11: duplicate key 'output'");
    Net net;
    CHECK(net_build(&net, &cfg, 0, 1, &e) == CDL_OK);
    CHECK_CONTAINS(net.cfg.problems, "lenient_test.cfg:7: unknown key 'foo' in [net]");
    CHECK_CONTAINS(net.cfg.problems, "lenient_test.cfg:12: unknown key 'bar' in [connected]");
    CHECK(net.hyper.batch == 2 && net.classes == 2); /* the first value, as darknet */
    net_free(&net);
    remove(path);
}

/* Integers beyond +-2^24 are refused where they are read (issue 43 item 5): [lstm]
 * output=2147483647 and [convolutional] stride=2147483647 reached signed overflows in the
 * layer's shapes and in im2col. */
static void test_integers_are_bounded(void)
{
    expect_cfg_error("[net]\nbatch=2\nseq=4\nvocab=8\n[embedding]\noutput=4\n[lstm]\n"
                     "output=2147483647\n[linear]\n[softmax]\n",
                     "t.cfg:8: bad value '2147483647' for key 'output' in [lstm]: expected an "
                     "integer in -16777216..16777216");
    expect_cfg_error("[net]\nbatch=2\nwidth=8\nheight=8\nchannels=3\n[convolutional]\n"
                     "filters=2\nsize=3\nstride=2147483647\npad=1\n[connected]\noutput=2\n"
                     "[softmax]\n",
                     "t.cfg:9: bad value '2147483647' for key 'stride' in [convolutional]");
    expect_cfg_error("[net]\nbatch=2\nwidth=8\nheight=8\nchannels=3\nsteps=10,16777217\n"
                     "[connected]\noutput=2\n[softmax]\n",
                     "t.cfg:6: bad value '10,16777217' for key 'steps' in [net]: expected a "
                     "comma-separated list of integers in -16777216..16777216");
    expect_cfg_error("[net]\nbatch=2\nwidth=8\nheight=8\nchannels=3\n[connected]\n"
                     "output=-16777217\n[softmax]\n",
                     "t.cfg:7: bad value '-16777217' for key 'output' in [connected]");
}

int main(void)
{
    test_integers_are_bounded();
    test_bom_is_skipped();
    test_duplicates();
    test_set_is_named();
    test_lenient_lists_every_problem();
    return check_report("test_cfg_text");
}
