/* FNV-1a fingerprints, and open-addressing hash tables: 64-bit keys to int32 values (U64Map), and
 * byte strings interned to dense indices 0, 1, 2, ... in order of first insertion (ByteSet). Both
 * grow by doubling at half load and keep their storage until freed; a zeroed struct is an empty
 * table. */
#ifndef CDL_HASH_TABLE_H
#define CDL_HASH_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a over bytes, continued from h (FNV1A_START for the first piece): a fingerprint that one
 * changed, added or removed byte changes. */
#define FNV1A_START 0xcbf29ce484222325ull
uint64_t fnv1a_add(uint64_t h, const void *bytes, size_t len);

typedef struct U64Map {
    uint64_t *keys;
    int32_t *values; /* [cap]; -1 marks an empty slot */
    size_t cap, n;
} U64Map;

/* The value of key, or -1. */
int32_t u64_map_get(const U64Map *m, uint64_t key);
/* Sets key's value (value >= 0); returns 0, or -1 when out of memory. */
int u64_map_put(U64Map *m, uint64_t key, int32_t value);
void u64_map_free(U64Map *m);

typedef struct ByteSet {
    char *bytes;      /* every string's bytes, back to back */
    size_t *offsets;  /* [n + 1]: string i is bytes[offsets[i] .. offsets[i+1]) */
    uint64_t *hashes; /* [n] */
    int32_t *slots;   /* [cap] string index; -1 empty */
    size_t n, cap, bytes_cap, offsets_cap;
} ByteSet;

/* The index of s[0..len) (interning it when new, *added = 1); -1 when out of memory. */
int32_t byte_set_intern(ByteSet *b, const char *s, size_t len, int *added);
/* The index of s[0..len), or -1 when it is not in the set. */
int32_t byte_set_find(const ByteSet *b, const char *s, size_t len);
void byte_set_free(ByteSet *b);

#endif
