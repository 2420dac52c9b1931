/* Fuzz target: JPEG decoding (image_load, EXIF orientation included) and conversion to a net's
 * input (fuzz_image). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t soi[2] = {0xFF, 0xD8};
    return fuzz_image(data, size, soi, sizeof soi);
}
