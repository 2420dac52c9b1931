/* Replays files through a fuzz target's LLVMFuzzerTestOneInput without libFuzzer: the corpus
 * and regression inputs that `make test` runs under ASan+UBSan (tests/run.sh).
 *
 * Usage: replay_TARGET PATH...  (each PATH a file or a folder of files; a missing folder is
 * skipped). Each input's stdout and stderr go to a temporary file, and an input after which
 * that file is not empty fails: library code reports errors through Error and prints nothing.
 * When a sanitizer stops the process, its death callback copies the captured report to the real
 * stderr first. The last line is "N inputs replayed". */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(__SANITIZE_ADDRESS__)
#define __SANITIZE_ADDRESS__ 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

static FILE *capture;       /* what the input printed */
static int saved_err;       /* the real stderr */
static const char *current; /* the input being replayed */

/* Copies what was captured since the input started to the real stderr. */
static void show_capture(void)
{
    fflush(stdout);
    fflush(stderr);
    rewind(capture);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, capture)) > 0)
        if (write(saved_err, buf, n) < 0)
            break;
}

static void on_death(void)
{
    dprintf(saved_err, "replay: %s stopped the process:\n", current);
    show_capture();
}

static int read_file(const char *path, uint8_t **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    const int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        free(buf);
        return -1;
    }
    *data = buf;
    *size = n;
    return 0;
}

/* Runs one input; 0 when it printed nothing. */
static int replay_one(const char *path)
{
    uint8_t *data;
    size_t size;
    if (read_file(path, &data, &size)) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    current = path;
    fflush(stdout);
    fflush(stderr);
    if (ftruncate(fileno(capture), 0) || fseek(capture, 0, SEEK_SET))
        return -1;
    const int out = dup(1);
    dup2(fileno(capture), 1);
    dup2(fileno(capture), 2);
    LLVMFuzzerTestOneInput(data, size);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(saved_err, 2);
    close(out);
    free(data);
    struct stat sb;
    if (!fstat(fileno(capture), &sb) && sb.st_size == 0)
        return 0;
    fprintf(stderr, "replay: %s: the library printed:\n", path);
    show_capture();
    return -1;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays path, or every file of the folder path in name order; counts inputs in *n. */
static int replay_path(const char *path, int *n)
{
    struct stat sb;
    if (stat(path, &sb))
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(sb.st_mode)) {
        (*n)++;
        return replay_one(path);
    }
    DIR *d = opendir(path);
    if (!d)
        return -1;
    char **names = NULL;
    int count = 0, failed = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (ent->d_name[0] == '.')
            continue;
        char **more = realloc(names, (size_t)(count + 1) * sizeof *names);
        size_t len = strlen(path) + strlen(ent->d_name) + 2;
        char *full = more ? malloc(len) : NULL;
        if (!full) {
            free(more ? more : names);
            closedir(d);
            return -1;
        }
        snprintf(full, len, "%s/%s", path, ent->d_name);
        names = more;
        names[count++] = full;
    }
    closedir(d);
    qsort(names, (size_t)count, sizeof *names, compare_names);
    for (int i = 0; i < count; i++) {
        failed |= replay_path(names[i], n) != 0;
        free(names[i]);
    }
    free(names);
    return failed ? -1 : 0;
}

int main(int argc, char **argv)
{
    capture = tmpfile();
    saved_err = dup(2);
    if (!capture || saved_err < 0) {
        perror("replay");
        return 1;
    }
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_set_death_callback(on_death);
#else
    (void)on_death;
#endif
    fuzz_setup();
    int n = 0, failed = 0;
    for (int i = 1; i < argc; i++)
        failed |= replay_path(argv[i], &n) != 0;
    printf("%d inputs replayed%s\n", n, failed ? ", some failed" : "");
    return failed || n == 0;
}
