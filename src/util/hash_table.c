/* U64Map and ByteSet: linear probing over power-of-two tables. */
#include "util/hash_table.h"

#include <stdlib.h>
#include <string.h>

/* splitmix64's finaliser: every key bit reaches every slot bit. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t fnv1a_add(uint64_t h, const void *bytes, size_t len)
{
    const unsigned char *b = bytes;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* FNV-1a, then mixed. */
static uint64_t hash_bytes(const char *s, size_t len)
{
    return mix64(fnv1a_add(FNV1A_START, s, len));
}

int32_t u64_map_get(const U64Map *m, uint64_t key)
{
    if (!m->cap)
        return -1;
    for (size_t i = mix64(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->values[i] < 0)
            return -1;
        if (m->keys[i] == key)
            return m->values[i];
    }
}

static int u64_map_grow(U64Map *m)
{
    const size_t cap = m->cap ? 2 * m->cap : 64;
    uint64_t *keys = malloc(cap * sizeof *keys);
    int32_t *values = malloc(cap * sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return -1;
    }
    memset(values, 0xff, cap * sizeof *values);
    for (size_t j = 0; j < m->cap; j++) {
        if (m->values[j] < 0)
            continue;
        size_t i = mix64(m->keys[j]) & (cap - 1);
        while (values[i] >= 0)
            i = (i + 1) & (cap - 1);
        keys[i] = m->keys[j];
        values[i] = m->values[j];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
    return 0;
}

int u64_map_put(U64Map *m, uint64_t key, int32_t value)
{
    if (2 * (m->n + 1) > m->cap && u64_map_grow(m))
        return -1;
    size_t i = mix64(key) & (m->cap - 1);
    while (m->values[i] >= 0 && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    m->n += m->values[i] < 0;
    m->keys[i] = key;
    m->values[i] = value;
    return 0;
}

void u64_map_free(U64Map *m)
{
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* The slot holding s (hash h), or the empty slot where it would go. */
static size_t byte_set_slot(const ByteSet *b, const char *s, size_t len, uint64_t h)
{
    size_t i = h & (b->cap - 1);
    for (;; i = (i + 1) & (b->cap - 1)) {
        const int32_t k = b->slots[i];
        if (k < 0)
            return i;
        if (b->hashes[k] == h && b->offsets[k + 1] - b->offsets[k] == len &&
            (!len || !memcmp(b->bytes + b->offsets[k], s, len)))
            return i;
    }
}

int32_t byte_set_find(const ByteSet *b, const char *s, size_t len)
{
    return b->cap ? b->slots[byte_set_slot(b, s, len, hash_bytes(s, len))] : -1;
}

static int byte_set_grow_slots(ByteSet *b)
{
    const size_t cap = b->cap ? 2 * b->cap : 64;
    int32_t *slots = malloc(cap * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, cap * sizeof *slots);
    for (size_t k = 0; k < b->n; k++) {
        size_t i = b->hashes[k] & (cap - 1);
        while (slots[i] >= 0)
            i = (i + 1) & (cap - 1);
        slots[i] = (int32_t)k;
    }
    free(b->slots);
    b->slots = slots;
    b->cap = cap;
    return 0;
}

/* Room for one more string of len bytes in the arrays. */
static int byte_set_reserve(ByteSet *b, size_t len)
{
    if (b->n + 2 > b->offsets_cap) {
        const size_t cap = b->offsets_cap ? 2 * b->offsets_cap : 64;
        size_t *offsets = realloc(b->offsets, cap * sizeof *offsets);
        if (!offsets)
            return -1;
        b->offsets = offsets;
        uint64_t *hashes = realloc(b->hashes, cap * sizeof *hashes);
        if (!hashes)
            return -1;
        b->hashes = hashes;
        b->offsets_cap = cap;
    }
    const size_t used = b->n ? b->offsets[b->n] : 0;
    if (used + len > b->bytes_cap) {
        size_t cap = b->bytes_cap ? 2 * b->bytes_cap : 1024;
        while (cap < used + len)
            cap *= 2;
        char *bytes = realloc(b->bytes, cap);
        if (!bytes)
            return -1;
        b->bytes = bytes;
        b->bytes_cap = cap;
    }
    return 0;
}

int32_t byte_set_intern(ByteSet *b, const char *s, size_t len, int *added)
{
    *added = 0;
    if (2 * (b->n + 1) > b->cap && byte_set_grow_slots(b))
        return -1;
    const uint64_t h = hash_bytes(s, len);
    const size_t slot = byte_set_slot(b, s, len, h);
    if (b->slots[slot] >= 0)
        return b->slots[slot];
    if (b->n >= INT32_MAX || byte_set_reserve(b, len))
        return -1;
    if (!b->n)
        b->offsets[0] = 0;
    if (len)
        memcpy(b->bytes + b->offsets[b->n], s, len);
    b->offsets[b->n + 1] = b->offsets[b->n] + len;
    b->hashes[b->n] = h;
    b->slots[slot] = (int32_t)b->n;
    *added = 1;
    return (int32_t)b->n++;
}

void byte_set_free(ByteSet *b)
{
    free(b->bytes);
    free(b->offsets);
    free(b->hashes);
    free(b->slots);
    memset(b, 0, sizeof *b);
}
