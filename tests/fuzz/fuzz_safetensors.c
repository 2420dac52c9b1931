/* Fuzz target: safetensors files: the header checked against the file (safetensors_open) and
 * every float tensor of at most FUZZ_NET_MAX_FLOATS values read as float32. */
#include <stdlib.h>

#include "fuzz.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    const char *path = fuzz_write_file("fuzz.safetensors", data, size);
    Safetensors st;
    Error e;
    if (safetensors_open(&st, path, &e) == CDL_OK) {
        for (int i = 0; i < st.n_tensors; i++) {
            const SafetensorsTensor *t = &st.tensors[i];
            if (safetensors_find(&st, t->name) != t)
                fuzz_fail("tensor %d '%s' is not found by its name", i, t->name);
            if (!safetensors_is_float(t) || t->count > FUZZ_NET_MAX_FLOATS)
                continue;
            float *out = malloc((size_t)t->count * sizeof *out + 1);
            if (out && safetensors_read_f32(&st, t, out, &e))
                fuzz_fail("tensor '%s' was accepted by open but not read: %s", t->name, e.msg);
            free(out);
        }
    }
    safetensors_close(&st);
    return 0;
}
