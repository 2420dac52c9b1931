/* Zeroed, cache-line-aligned allocations (util/cache_lines.h): calloc'd with a line to spare,
 * the block's own address kept just before the aligned start. */
#include "util/cache_lines.h"

#include <stdint.h>
#include <stdlib.h>

void *zeroed_lines(size_t count, size_t size)
{
    const size_t spare = CACHE_LINE_BYTES + sizeof(void *);
    if (size && count > (SIZE_MAX - spare) / size)
        return NULL;
    unsigned char *block = calloc(1, count * size + spare);
    if (!block)
        return NULL;
    const uintptr_t first = (uintptr_t)(block + sizeof(void *));
    unsigned char *at =
        block + sizeof(void *) + (CACHE_LINE_BYTES - first % CACHE_LINE_BYTES) % CACHE_LINE_BYTES;
    ((void **)at)[-1] = block;
    return at;
}

void free_lines(void *at)
{
    if (at)
        free(((void **)at)[-1]);
}
