/* Fuzz target: IDX image and label files (raw or gzip) loaded as a dataset (dataset_load), then
 * split and copied into a batch. The input holds both files (fuzz_split: images first). */
#include "data/dataset.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    const uint8_t *images, *labels;
    size_t images_size, labels_size;
    fuzz_split(data, size, &images, &images_size, &labels, &labels_size);
    const char *images_path = fuzz_write_file("images.idx", images, images_size);
    const char *labels_path = fuzz_write_file("labels.idx", labels, labels_size);
    Dataset d, held_out;
    Error e;
    if (dataset_load(images_path, labels_path, &d, &e))
        return 0;
    if (d.n >= 2 && dataset_split_tail(&d, 0.5f, &held_out, &e) == CDL_OK) {
        const size_t sample = (size_t)d.c * d.h * d.w;
        float x[4096];
        int y, first = 0;
        if (sample <= sizeof x / sizeof x[0])
            dataset_fill_batch(&held_out, &first, 1, x, &y);
        dataset_free(&held_out);
    }
    dataset_free(&d);
    return 0;
}
