/* Fuzz target: CSV files, both kinds: pixel rows (scikit-learn digits, dataset_load) and
 * `path,label` lines of image files (source_csv_open, labels as indices or class names). */
#include "data/dataset.h"
#include "data/source_files.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    const char *path = fuzz_write_file("fuzz.csv", data, size);
    Dataset d;
    Error e;
    if (dataset_load(path, NULL, &d, &e) == CDL_OK)
        dataset_free(&d);
    static char *const names[3] = {"cat", "dog", "bird"};
    SampleSource s;
    if (source_csv_open(&s, path, names, 3, &e) == CDL_OK)
        source_free(&s);
    return 0;
}
