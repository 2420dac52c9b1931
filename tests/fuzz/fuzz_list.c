/* Fuzz target: a darknet list of image paths, labelled by the class names occurring in each path
 * (source_list_open), then split for validation (source_files_split). */
#include "data/source_files.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    const char *path = fuzz_write_file("fuzz.list", data, size);
    static char *const names[4] = {"cat", "dog", "rain", "train"};
    SampleSource s, held_out;
    Error e;
    if (source_list_open(&s, path, names, 4, &e))
        return 0;
    const char *first = NULL;
    if (source_ambiguous_labels(&s, &first) > 0 && !first)
        fuzz_fail("ambiguous labels counted without a first path");
    if (s.n >= 2 && source_files_split(&s, 0.5f, 1, &held_out, &e) == CDL_OK)
        source_free(&held_out);
    source_free(&s);
    return 0;
}
