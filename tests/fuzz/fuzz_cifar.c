/* Fuzz target: a CIFAR binary batch, its variant told by size (cifar_detect) and loaded as
 * CIFAR-10 and as CIFAR-100 (cifar_load). */
#include "data/cifar.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    const char *path = fuzz_write_file("batch.bin", data, size);
    const int detected = cifar_detect(path);
    if (detected != 0 && detected != 10 && detected != 100)
        fuzz_fail("cifar_detect returned %d", detected);
    static const int variants[2] = {10, 100};
    for (int k = 0; k < 2; k++) {
        Dataset d;
        Error e;
        if (cifar_load(path, variants[k], 0, &d, &e) == CDL_OK)
            dataset_free(&d);
    }
    return 0;
}
