/* The memory this process may still take: the least of what its cgroups leave (v2 memory.max,
 * v1 memory.limit_in_bytes, on its own cgroup and those above it, less their use), the system's
 * MemAvailable, and what RLIMIT_AS (ulimit -v) leaves of its address space. A run compares what
 * it is about to allocate with it. */
#ifndef CDL_MEM_LIMIT_H
#define CDL_MEM_LIMIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct MemLimit {
    uint64_t left_bytes;  /* what this process may still take (UINT64_MAX: nothing limits it) */
    uint64_t limit_bytes; /* the limit that leaves the least */
    uint64_t used_bytes;  /* of it, in use: the cgroup's, or this process's address space */
    char what[320];       /* names it: "the cgroup's memory.max (PATH)", "MemAvailable
                             (/proc/meminfo)" or "ulimit -v (RLIMIT_AS)"; "" when none */
} MemLimit;

/* Reads the limits under root ("/" for the machine's own /proc and /sys; tests pass a tree of
 * their own), address_space_bytes being RLIMIT_AS (UINT64_MAX: unlimited). Files that are not
 * there limit nothing. */
void mem_limit_read(const char *root, uint64_t address_space_bytes, MemLimit *m);

/* mem_limit_read of this machine with this process's RLIMIT_AS. */
void mem_limit_of_process(MemLimit *m);

#endif
