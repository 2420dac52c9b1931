/* Whole-or-nothing writes (util/atomic_file.h): nothing but the file is left, a write past the
 * file size limit is reported as such, and latest-style links are replaced atomically. */
#include "util/atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char root[] = "/tmp/cdl_test_atomic_XXXXXX";

/* The names in root other than . and .., sorted into one space-separated string. */
static void list_root(char *out, size_t size)
{
    struct dirent **names;
    const int n = scandir(root, &names, NULL, alphasort);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
            snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? " " : "",
                     names[i]->d_name);
        free(names[i]);
    }
    free(n >= 0 ? names : NULL);
}

static void test_commit_leaves_only_the_file_and_abort_nothing(void)
{
    char path[PATH_MAX], names[1024];
    snprintf(path, sizeof path, "%s/out.txt", root);
    AtomicFile f;
    Error e = {0};
    CHECK(atomic_file_open(&f, path, FILE_KIND_TEXT, &e) == CDL_OK);
    fputs("whole", f.file);
    CHECK(atomic_file_commit(&f, &e) == CDL_OK);
    list_root(names, sizeof names);
    CHECK(!strcmp(names, "out.txt"));
    CHECK(atomic_file_open(&f, path, FILE_KIND_TEXT, &e) == CDL_OK);
    fputs("half", f.file);
    atomic_file_abort(&f);
    list_root(names, sizeof names);
    CHECK(!strcmp(names, "out.txt"));
    FILE *in = fopen(path, "r");
    char text[16] = {0};
    CHECK(in && fread(text, 1, sizeof text - 1, in) == 5 && !strcmp(text, "whole"));
    if (in)
        fclose(in);
    unlink(path);
}

/* As under `ulimit -f 4` in a shell that ignores SIGXFSZ, as the CLI does. */
static void test_write_past_the_file_size_limit_says_so(void)
{
    char path[PATH_MAX], names[1024];
    snprintf(path, sizeof path, "%s/big.bin", root);
    struct rlimit old, small;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    small = old;
    small.rlim_cur = 4096;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    AtomicFile f;
    Error e = {0};
    CHECK(atomic_file_open(&f, path, FILE_KIND_TEXT, &e) == CDL_OK);
    static char block[10000];
    fwrite(block, 1, sizeof block, f.file); /* unchecked, as most writers do */
    CHECK(atomic_file_commit(&f, &e) == CDL_ERUNTIME);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, old_handler);
    CHECK_CONTAINS(e.msg, "big.bin: cannot write: file size limit exceeded (ulimit -f)");
    list_root(names, sizeof names);
    CHECK(!strcmp(names, ""));
    CHECK(!strcmp(atomic_file_strerror(ENOSPC), strerror(ENOSPC)));
}

static void test_symlink_is_replaced_but_a_file_is_not(void)
{
    char link[PATH_MAX], target[PATH_MAX], names[1024];
    snprintf(link, sizeof link, "%s/latest.cdl", root);
    Error e = {0};
    CHECK(atomic_symlink("a.cdl", link, &e) == CDL_OK);
    CHECK(atomic_symlink("b.cdl", link, &e) == CDL_OK);
    const ssize_t n = readlink(link, target, sizeof target - 1);
    CHECK(n == 5 && !strncmp(target, "b.cdl", 5));
    list_root(names, sizeof names);
    CHECK(!strcmp(names, "latest.cdl"));
    unlink(link);
    FILE *f = fopen(link, "w");
    if (f)
        fclose(f);
    CHECK(atomic_symlink("c.cdl", link, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "latest.cdl: exists and is not a symbolic link");
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISREG(st.st_mode));
    unlink(link);
}

/* A leftover of this process's pid (a dead process that had it) is replaced; one of a dead
 * pid is removed by the next write; a live process's is kept. */
static void test_temporary_names_of_dead_processes_are_removed(void)
{
    char path[PATH_MAX], own[PATH_MAX + 320], names[4096], host[256];
    snprintf(path, sizeof path, "%s/m.cdl", root);
    atomic_file_temp_path(path, own, sizeof own);
    CHECK(gethostname(host, sizeof host) == 0);
    CHECK(!strncmp(own + strlen(root), "/.m.cdl.cdl-tmp.", 16));
    char dead[PATH_MAX + 320], live[PATH_MAX + 320];
    const pid_t child = fork();
    if (child == 0)
        _exit(0);
    CHECK(child > 0 && waitpid(child, NULL, 0) == child);
    snprintf(dead, sizeof dead, "%s/.x.cdl.cdl-tmp.%s.%ld", root, host, (long)child);
    snprintf(live, sizeof live, "%s/.y.cdl.cdl-tmp.%s.%ld", root, host, (long)getppid());
    FILE *f;
    const char *made[] = {own, dead, live};
    for (int i = 0; i < 3; i++)
        if ((f = fopen(made[i], "w")))
            fclose(f);
    AtomicFile w;
    Error e = {0};
    CHECK(atomic_file_open(&w, path, FILE_KIND_TEXT, &e) == CDL_OK);
    CHECK(atomic_file_commit(&w, &e) == CDL_OK);
    list_root(names, sizeof names);
    char expected[4096];
    snprintf(expected, sizeof expected, ".y.cdl.cdl-tmp.%s.%ld m.cdl", host, (long)getppid());
    CHECK(!strcmp(names, expected));
    unlink(live);
    unlink(path);
}

int main(void)
{
    if (!mkdtemp(root)) {
        perror(root);
        return 1;
    }
    test_commit_leaves_only_the_file_and_abort_nothing();
    test_write_past_the_file_size_limit_says_so();
    test_symlink_is_replaced_but_a_file_is_not();
    test_temporary_names_of_dead_processes_are_removed();
    rmdir(root);
    return check_report("test_atomic_file");
}
