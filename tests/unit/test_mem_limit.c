/* What memory the process may still take (util/mem_limit.h), read from trees that stand in for
 * /proc and /sys: cgroup v2 and v1 limits less their use (the tightest of the cgroup and those
 * above it), "max" and v1's huge "no limit" ignored, MemAvailable, and RLIMIT_AS less the
 * address space in use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "util/mem_limit.h"

/* Writes text to root/path, making its folders. */
static void put(const char *root, const char *path, const char *text)
{
    char full[1024];
    snprintf(full, sizeof full, "%s/%s", root, path);
    for (char *slash = strchr(full + strlen(root) + 1, '/'); slash;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(full, 0700);
        *slash = '/';
    }
    FILE *f = fopen(full, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A fresh tree with /proc/self/status (VmSize 300 MiB) and /proc/meminfo (8 GiB available). */
static void make_tree(char *root, size_t size)
{
    snprintf(root, size, "/tmp/cdl-mem-limit-XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    put(root, "proc/self/status", "Name:\tcdl\nVmSize:\t  307200 kB\nVmRSS:\t   51200 kB\n");
    put(root, "proc/meminfo", "MemTotal:  16777216 kB\nMemAvailable:  8388608 kB\n");
}

static void remove_tree(const char *root)
{
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", root);
    CHECK(system(command) == 0);
}

static void test_cgroup_v2(void)
{
    char root[64];
    make_tree(root, sizeof root);
    put(root, "proc/self/cgroup", "0::/jobs/a\n");
    put(root, "sys/fs/cgroup/jobs/a/memory.max", "1610612736\n"); /* 1.5 GiB */
    put(root, "sys/fs/cgroup/jobs/a/memory.current", "536870912\n");
    put(root, "sys/fs/cgroup/jobs/memory.max", "max\n");
    MemLimit m;
    mem_limit_read(root, UINT64_MAX, &m);
    CHECK(m.left_bytes == 1073741824 && m.limit_bytes == 1610612736 && m.used_bytes == 536870912);
    CHECK(!strcmp(m.what, "the cgroup's memory.max (/sys/fs/cgroup/jobs/a/memory.max)"));
    /* a parent that leaves less wins */
    put(root, "sys/fs/cgroup/jobs/memory.max", "1073741824\n");
    put(root, "sys/fs/cgroup/jobs/memory.current", "805306368\n");
    mem_limit_read(root, UINT64_MAX, &m);
    CHECK(m.left_bytes == 268435456);
    CHECK(!strcmp(m.what, "the cgroup's memory.max (/sys/fs/cgroup/jobs/memory.max)"));
    remove_tree(root);
}

static void test_cgroup_v1(void)
{
    char root[64];
    make_tree(root, sizeof root);
    put(root, "proc/self/cgroup", "5:cpu,cpuacct:/x\n4:memory:/jobs/b\n");
    put(root, "sys/fs/cgroup/memory/jobs/b/memory.limit_in_bytes", "2147483648\n");
    put(root, "sys/fs/cgroup/memory/jobs/b/memory.usage_in_bytes", "1073741824\n");
    put(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    MemLimit m;
    mem_limit_read(root, UINT64_MAX, &m);
    CHECK(m.left_bytes == 1073741824);
    CHECK(!strcmp(m.what, "the cgroup's memory.limit_in_bytes (/sys/fs/cgroup/memory/jobs/b/"
                          "memory.limit_in_bytes)"));
    remove_tree(root);
}

static void test_available_and_address_space(void)
{
    char root[64];
    make_tree(root, sizeof root);
    MemLimit m;
    mem_limit_read(root, UINT64_MAX, &m);
    CHECK(m.left_bytes == 8589934592ull && m.used_bytes == 0);
    CHECK(!strcmp(m.what, "MemAvailable (/proc/meminfo)"));
    /* ulimit -v 1 GiB with 300 MiB of address space in use */
    mem_limit_read(root, 1073741824, &m);
    CHECK(m.left_bytes == 1073741824 - 314572800 && m.used_bytes == 314572800);
    CHECK(!strcmp(m.what, "ulimit -v (RLIMIT_AS)"));
    remove_tree(root);
}

static void test_nothing_limits(void)
{
    char root[64];
    snprintf(root, sizeof root, "/tmp/cdl-mem-limit-XXXXXX");
    CHECK(mkdtemp(root) != NULL);
    MemLimit m;
    mem_limit_read(root, UINT64_MAX, &m);
    CHECK(m.left_bytes == UINT64_MAX && !m.what[0]);
    remove_tree(root);
}

int main(void)
{
    test_cgroup_v2();
    test_cgroup_v1();
    test_available_and_address_space();
    test_nothing_limits();
    return check_report("test_mem_limit");
}
