/* Fuzz target: the JSON Lines log reader of `cdl plot` (plot_log_read). */
#include <string.h>

#include "cli/plot_log.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    const char *path = fuzz_write_file("fuzz.jsonl", data, size);
    Run run;
    Error e;
    memset(&run, 0, sizeof run);
    plot_log_read(path, &run, &e);
    plot_run_free(&run);
    return 0;
}
