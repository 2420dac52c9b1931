/* What memory this process may use, from cgroup v2 and v1, /proc/meminfo and RLIMIT_AS
 * (mem_limit.h). */
#include "util/mem_limit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* cgroup v1 writes "no limit" as a page-rounded LONG_MAX; anything this large limits nothing. */
#define UNLIMITED_BYTES (UINT64_C(1) << 60)

/* The first number in root/path (after key when key is not NULL), times scale; 0 when the file
 * or the number is not there (or reads "max", cgroup v2's no limit). */
static uint64_t read_number(const char *root, const char *path, const char *key, uint64_t scale)
{
    char full[4096], line[512];
    snprintf(full, sizeof full, "%s%s", root, path);
    FILE *f = fopen(full, "r");
    uint64_t v = 0;
    while (f && fgets(line, sizeof line, f)) {
        const size_t n = key ? strlen(key) : 0;
        if (key && strncmp(line, key, n))
            continue;
        char *end;
        const unsigned long long x = strtoull(line + n, &end, 10);
        v = end != line + n ? (uint64_t)x * scale : 0;
        break;
    }
    if (f)
        fclose(f);
    return v;
}

/* Takes limit, of which used is in use, when it leaves less than m does. */
static void consider(MemLimit *m, uint64_t limit, uint64_t used, const char *what)
{
    if (!limit || limit >= UNLIMITED_BYTES)
        return;
    const uint64_t left = limit > used ? limit - used : 0;
    if (left >= m->left_bytes)
        return;
    m->left_bytes = left;
    m->limit_bytes = limit;
    m->used_bytes = used;
    const size_t n = strnlen(what, sizeof m->what - 1); /* a path too long is cut */
    memcpy(m->what, what, n);
    m->what[n] = '\0';
}

/* The limits of the cgroup at dir (relative to root) and of those above it up to top:
 * limit_file and usage_file in each. */
static void consider_cgroups(MemLimit *m, const char *root, const char *top, const char *dir,
                             const char *limit_file, const char *usage_file)
{
    char path[2048];
    snprintf(path, sizeof path, "%s%s", top, dir);
    for (;;) {
        char file[2400], what[2600];
        snprintf(file, sizeof file, "%s/%s", path, limit_file);
        const uint64_t limit = read_number(root, file, NULL, 1);
        snprintf(file, sizeof file, "%s/%s", path, usage_file);
        const uint64_t used = read_number(root, file, NULL, 1);
        snprintf(what, sizeof what, "the cgroup's %s (%s/%s)", limit_file, path, limit_file);
        consider(m, limit, used, what);
        char *slash = strrchr(path, '/');
        if (!slash || (size_t)(slash - path) < strlen(top))
            break;
        *slash = '\0';
    }
}

void mem_limit_read(const char *root, uint64_t address_space_bytes, MemLimit *m)
{
    *m = (MemLimit){.left_bytes = UINT64_MAX};
    char path[4096], line[4096];
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':'),
             *dir = controllers ? strchr(controllers + 1, ':') : 0;
        if (!dir)
            continue;
        *dir++ = '\0';
        if (!strcmp(dir, "/"))
            dir = "";
        if (!strcmp(controllers + 1, "")) /* v2: 0::/PATH */
            consider_cgroups(m, root, "/sys/fs/cgroup", dir, "memory.max", "memory.current");
        else if (strstr(controllers + 1, "memory"))
            consider_cgroups(m, root, "/sys/fs/cgroup/memory", dir, "memory.limit_in_bytes",
                             "memory.usage_in_bytes");
    }
    if (f)
        fclose(f);
    const uint64_t available = read_number(root, "/proc/meminfo", "MemAvailable:", 1024);
    consider(m, available, 0, "MemAvailable (/proc/meminfo)");
    if (address_space_bytes != UINT64_MAX)
        consider(m, address_space_bytes, read_number(root, "/proc/self/status", "VmSize:", 1024),
                 "ulimit -v (RLIMIT_AS)");
}

void mem_limit_of_process(MemLimit *m)
{
    struct rlimit r;
    const uint64_t as = getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY
                            ? (uint64_t)r.rlim_cur
                            : UINT64_MAX;
    mem_limit_read("", as, m);
}
