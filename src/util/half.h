/* IEEE binary16 (half precision) values, as files store them (safetensors F16, NumPy '<f2'). */
#ifndef CDL_HALF_H
#define CDL_HALF_H

#include <stdint.h>

/* The binary16 value with bits h as float32 (exact: subnormals, infinities and NaNs included). */
float half_to_float(uint16_t h);

#endif
