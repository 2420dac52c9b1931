/* The two ways a name read from a file is made safe to write (util/utf8.h, issue 43): escaped
 * into one printable line (cfg comments, the terminal), or repaired into valid UTF-8 (JSON). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/utf8.h"

static void test_escape_keeps_text_and_escapes_controls_and_bad_bytes(void)
{
    char out[64];
    CHECK(!strcmp(utf8_escape_line("caf\xC3\xA9\tok", out, sizeof out), "caf\xC3\xA9\tok"));
    CHECK(!strcmp(utf8_escape_line("a\nb\x1B[2J\x7F", out, sizeof out), "a\\x0Ab\\x1B[2J\\x7F"));
    /* a byte of invalid UTF-8, a C1 control (U+009B, a terminal's CSI) and a truncated form */
    CHECK(!strcmp(utf8_escape_line("x\xFFy\xC2\x9Bz\xE2\x82", out, sizeof out),
                  "x\\xFFy\\xC2\\x9Bz\\xE2\\x82"));
    /* cut before an escape that does not fit, never in the middle of one */
    CHECK(!strcmp(utf8_escape_line("ab\ncd", out, 6), "ab"));
    CHECK(!strcmp(utf8_escape_line("abcdef", out, 4), "abc"));
}

static void test_valid_copy_replaces_each_bad_byte(void)
{
    char *copy = NULL;
    CHECK(utf8_valid_copy("caf\xC3\xA9 \x1B", &copy) == 0 && copy == NULL);
    CHECK(utf8_valid_copy("a\xFF\xFE"
                          "b",
                          &copy) == 1);
    CHECK(copy && !strcmp(copy, "a\xEF\xBF\xBD\xEF\xBF\xBD"
                                "b"));
    free(copy);
    CHECK(utf8_valid_copy("\xED\xA0\x80", &copy) == 1); /* a surrogate: 3 bad bytes */
    CHECK(copy && !strcmp(copy, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
    free(copy);
}

int main(void)
{
    test_escape_keeps_text_and_escapes_controls_and_bad_bytes();
    test_valid_copy_replaces_each_bad_byte();
    return check_report("test_utf8_names");
}
