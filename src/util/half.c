/* binary16 to binary32 (see half.h). */
#include "util/half.h"

#include <math.h>
#include <string.h>

float half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f)
        bits = sign | 0x7f800000u | mant << 13;
    else if (exp)
        bits = sign | (exp + 112) << 23 | mant << 13;
    else if (!mant)
        bits = sign;
    else {
        const float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
