/* Zeroed memory that starts on a cache line, for the buffers vector kernels stream through. */
#ifndef CDL_CACHE_LINES_H
#define CDL_CACHE_LINES_H

#include <stddef.h>

/* Bytes in a cache line of the CPUs cdl targets (x86-64, arm64). */
#define CACHE_LINE_BYTES 64

/* count items of size bytes, zeroed, at an address that is a multiple of CACHE_LINE_BYTES
 * (malloc's 16 starts every 64-byte vector of a buffer laid out in whole lines across two
 * lines); freed by free_lines. calloc's underneath, so pages nothing touches stay uncommitted.
 * NULL when out of memory or when count * size overflows. */
void *zeroed_lines(size_t count, size_t size);

/* Frees what zeroed_lines returned (NULL: nothing). */
void free_lines(void *at);

#endif
