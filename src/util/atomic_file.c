/* Whole-or-nothing file writes: a temporary file in the target's directory, renamed into
 * place once complete, so a crash or a failed write never leaves a half file at PATH. */
#include "util/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void atomic_file_release(AtomicFile *f)
{
    free(f->path);
    free(f->tmp_path);
    f->path = f->tmp_path = NULL;
    f->file = NULL;
}

int atomic_file_open(AtomicFile *f, const char *path, Error *e)
{
    memset(f, 0, sizeof *f);
    const size_t tmp_bytes = strlen(path) + 32;
    f->path = strdup(path);
    f->tmp_path = malloc(tmp_bytes);
    if (!f->path || !f->tmp_path) {
        atomic_file_release(f);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    }
    snprintf(f->tmp_path, tmp_bytes, "%s.tmp.%ld", path, (long)getpid());
    f->file = fopen(f->tmp_path, "wx");
    if (!f->file && errno == EEXIST) {
        /* A leftover of a crashed run that had our pid: only a regular file is replaced. */
        struct stat st;
        if (lstat(f->tmp_path, &st) == 0 && S_ISREG(st.st_mode) && unlink(f->tmp_path) == 0)
            f->file = fopen(f->tmp_path, "wx");
        else
            errno = EEXIST;
    }
    if (!f->file) {
        int st = error_set(e, CDL_ERUNTIME, "%s: cannot create %s: %s", path, f->tmp_path,
                           strerror(errno));
        atomic_file_release(f);
        return st;
    }
    return CDL_OK;
}

/* Best effort: by now the new file is complete and renamed into place, so a failure here
 * cannot leave a half file; it only widens the window in which a power loss reverts to the
 * old one. Reporting it as a failed write would misstate what is on disk. */
static void sync_parent_directory(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash)
        dir = strdup(".");
    else if (slash == path)
        dir = strdup("/");
    else
        dir = strndup(path, (size_t)(slash - path));
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

int atomic_file_commit(AtomicFile *f, Error *e)
{
    int err = 0;
    if (ferror(f->file))
        err = EIO; /* an earlier write failed; its errno is long gone */
    else if (fflush(f->file) != 0 || fsync(fileno(f->file)) != 0)
        err = errno;
    if (fclose(f->file) != 0 && !err)
        err = errno;
    f->file = NULL;
    if (!err && rename(f->tmp_path, f->path) != 0)
        err = errno;
    int st = CDL_OK;
    if (err) {
        st = error_set(e, CDL_ERUNTIME, "%s: cannot write %s: %s", f->path, f->tmp_path,
                       strerror(err));
        unlink(f->tmp_path);
    } else {
        sync_parent_directory(f->path);
    }
    atomic_file_release(f);
    return st;
}

void atomic_file_abort(AtomicFile *f)
{
    if (f->file)
        fclose(f->file);
    if (f->tmp_path)
        unlink(f->tmp_path);
    atomic_file_release(f);
}
