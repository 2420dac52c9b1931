/* Error chaining: error_prefix and error_append put context around a callee's message, set
 * the code, cut a message past the capacity in its middle (its reason is at the end), and
 * accept a NULL Error. */
#include <string.h>

#include "check.h"
#include "util/error.h"

static void test_prefix_and_append_wrap_the_message(void)
{
    Error e = {0};
    error_set(&e, CDL_EUSAGE, "t.cfg:3: bad value");
    CHECK(error_prefix(&e, CDL_EUSAGE, "%s: ", "x.data") == CDL_EUSAGE);
    CHECK(!strcmp(e.msg, "x.data: t.cfg:3: bad value"));
    CHECK(error_append(&e, CDL_ERUNTIME, " (%d)", 7) == CDL_ERUNTIME);
    CHECK(!strcmp(e.msg, "x.data: t.cfg:3: bad value (7)"));
    CHECK(e.code == CDL_ERUNTIME);
}

static void test_long_messages_keep_start_and_end(void)
{
    Error e = {0};
    memset(e.msg, 'm', sizeof e.msg - 1);
    error_prefix(&e, CDL_ERUNTIME, "p: ");
    CHECK(strlen(e.msg) == sizeof e.msg - 1);
    CHECK(!strncmp(e.msg, "p: mmm", 6));
    error_append(&e, CDL_ERUNTIME, "tail");
    const size_t n = strlen(e.msg);
    CHECK(n == sizeof e.msg - 1 && !strcmp(e.msg + n - 5, "mtail") && strstr(e.msg, " [...] "));
}

/* A path of 3000 characters: its start, then the reason, whole. */
static void test_long_path_keeps_its_reason(void)
{
    char path[3001];
    memset(path, 'd', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = '\0';
    Error e = {0};
    error_set(&e, CDL_ERUNTIME, "%s: cannot open data file: No such file or directory", path);
    CHECK(!strncmp(e.msg, "/ddd", 4));
    CHECK_CONTAINS(e.msg, "ddd [...] ddd");
    CHECK_CONTAINS(e.msg, "ddd: cannot open data file: No such file or directory");
}

static void test_null_error_returns_the_code(void)
{
    CHECK(error_prefix(NULL, CDL_EUSAGE, "p: ") == CDL_EUSAGE);
    CHECK(error_append(NULL, CDL_ERUNTIME, "s") == CDL_ERUNTIME);
}

int main(void)
{
    test_prefix_and_append_wrap_the_message();
    test_long_messages_keep_start_and_end();
    test_long_path_keeps_its_reason();
    test_null_error_returns_the_code();
    return check_report("test_error");
}
