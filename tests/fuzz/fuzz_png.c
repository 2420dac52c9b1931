/* Fuzz target: PNG decoding (image_load) and conversion to a net's input (fuzz_image). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    return fuzz_image(data, size, signature, sizeof signature);
}
