/* Shared check for cfg texts that must be refused. */
#include "cfg_errors.h"

#include <stdio.h>

#include "check.h"
#include "core/net.h"

void expect_cfg_error(const char *text, const char *needle)
{
    Net net;
    Error e = {0};
    int st = net_build_from_text(&net, text, "t.cfg", 1, 1, &e);
    CHECK(st == CDL_EUSAGE);
    if (st == CDL_OK) {
        fprintf(stderr, "  built, but expected the error '%s'\n", needle);
        net_free(&net);
    } else {
        CHECK_CONTAINS(e.msg, needle);
    }
}
