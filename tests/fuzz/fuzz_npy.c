/* Fuzz target: .npy files (the arrays `cdl predict` takes): the header parsed and checked against
 * the file, the values read as float32; an accepted array's count is its shape's product. */
#include "fuzz.h"
#include "io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    const char *path = fuzz_write_file("fuzz.npy", data, size);
    NpyArray a;
    Error e;
    if (npy_read(path, &a, &e) == CDL_OK) {
        size_t count = 1;
        for (int k = 0; k < a.n_dims; k++)
            count *= (size_t)a.dims[k];
        if (count != a.count || (a.count && !a.data))
            fuzz_fail("an accepted array of %zu values holds %zu by its shape", a.count, count);
    }
    npy_array_free(&a);
    return 0;
}
