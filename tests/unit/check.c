/* Failure counters shared by the CHECK macros. */
#include "check.h"

int check_failures, check_count;

int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}
