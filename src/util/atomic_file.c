/* Whole-or-nothing file writes. The contents go to an unnamed file in the target's directory
 * (O_TMPFILE), so a process killed while writing leaves nothing behind; once complete it is
 * linked under a temporary name and renamed over PATH (rename is the atomic step: linkat cannot
 * replace a file). Without O_TMPFILE (some filesystems, or no /proc to link from) the temporary
 * name exists from the start. Either way a kill can leave a temporary name; it carries the host
 * and the pid, so that a later write into the directory can tell that its writer is gone. */
#include "util/atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TEMP_MARK ".cdl-tmp."
#define TEMP_EXTRA_BYTES 320 /* a temporary name's length beyond its path's */
/* Older cdl versions wrote PATH.tmp.PID, with no host: those are removed once this old. */
#define LEGACY_MARK ".cdl.tmp."
#define LEGACY_STALE_S 3600

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

static void host_name(char *out, size_t size)
{
    if (gethostname(out, size) != 0)
        snprintf(out, size, "localhost");
    out[size - 1] = '\0';
    for (char *c = out; *c; c++)
        if (*c == '/')
            *c = '_';
}

void atomic_file_temp_path(const char *path, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    const int dir_bytes = slash ? (int)(slash + 1 - path) : 0;
    char host[256];
    host_name(host, sizeof host);
    snprintf(out, size, "%.*s.%s" TEMP_MARK "%s.%ld", dir_bytes, path, path + dir_bytes, host,
             (long)getpid());
}

static int ends_with(const char *s, const char *suffix)
{
    const size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

/* The pid a name ends in (".PID"), or -1. */
static long trailing_pid(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || !dot[1] || strspn(dot + 1, "0123456789") != strlen(dot + 1) || strlen(dot) > 10)
        return -1;
    return strtol(dot + 1, NULL, 10);
}

/* Whether name (in the directory dir_fd) is a temporary file or link that a process of this host
 * which no longer runs left behind: ".BASE" TEMP_MARK "HOST.PID", or an old version's
 * "BASE" LEGACY_MARK "PID" file older than LEGACY_STALE_S. */
static int is_stale_temp(int dir_fd, const char *name, const char *host)
{
    const long pid = trailing_pid(name);
    if (pid <= 0 || pid == (long)getpid())
        return 0;
    char suffix[sizeof TEMP_MARK + 256 + 24];
    snprintf(suffix, sizeof suffix, TEMP_MARK "%s.%ld", host, pid);
    const int current = name[0] == '.' && ends_with(name + 1, suffix);
    snprintf(suffix, sizeof suffix, LEGACY_MARK "%ld", pid);
    const int legacy = !current && ends_with(name, suffix);
    if (!current && !legacy)
        return 0;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) /* running (EPERM: someone else's) */
        return 0;
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 0;
    if (legacy)
        return S_ISREG(st.st_mode) && time(NULL) - st.st_mtime > LEGACY_STALE_S;
    return S_ISREG(st.st_mode) || S_ISLNK(st.st_mode);
}

/* Best effort: what cannot be listed or removed stays for a later write to try. */
static void remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char host[256];
    host_name(host, sizeof host);
    const struct dirent *entry;
    while ((entry = readdir(d)))
        if (is_stale_temp(dirfd(d), entry->d_name, host))
            (void)unlinkat(dirfd(d), entry->d_name, 0);
    closedir(d);
}

/* A file or link at our own temporary name was left by an earlier process with our pid (we
 * write one file at a time): removes it, or returns 0 with errno EEXIST when it is neither. */
static int remove_own_leftover(const char *tmp_path)
{
    struct stat st;
    if (lstat(tmp_path, &st) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) &&
        unlink(tmp_path) == 0)
        return 1;
    errno = EEXIST;
    return 0;
}

static int create_named(const char *tmp_path)
{
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
    int fd = open(tmp_path, flags, 0666);
    if (fd < 0 && errno == EEXIST && remove_own_leftover(tmp_path))
        fd = open(tmp_path, flags, 0666);
    return fd;
}

static void atomic_file_release(AtomicFile *f)
{
    free(f->path);
    free(f->tmp_path);
    f->path = f->tmp_path = NULL;
    f->file = NULL;
}

int atomic_file_open(AtomicFile *f, const char *path, FileKind kind, Error *e)
{
    memset(f, 0, sizeof *f);
    const int refused = file_check_output(path, kind, NULL, 0, e);
    if (refused)
        return refused;
    const size_t tmp_bytes = strlen(path) + TEMP_EXTRA_BYTES;
    char *dir = dir_of(path);
    f->path = strdup(path);
    f->tmp_path = malloc(tmp_bytes);
    if (!dir || !f->path || !f->tmp_path) {
        free(dir);
        atomic_file_release(f);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    }
    atomic_file_temp_path(path, f->tmp_path, tmp_bytes);
    remove_stale_temps(dir);
    int fd = -1;
    if (access("/proc/self/fd", X_OK) == 0) /* commit links the file through it */
        fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    f->unnamed = fd >= 0;
    if (fd < 0)
        fd = create_named(f->tmp_path);
    if (fd >= 0 && !(f->file = fdopen(fd, "w"))) {
        const int err = errno;
        close(fd);
        if (!f->unnamed)
            unlink(f->tmp_path);
        errno = err;
    }
    if (!f->file) {
        const int st = error_set(e, CDL_ERUNTIME, "%s: cannot create a file in %s: %s", path, dir,
                                 strerror(errno));
        free(dir);
        atomic_file_release(f);
        return st;
    }
    free(dir);
    return CDL_OK;
}

/* Best effort: by now the new file is complete and renamed into place, so a failure here
 * cannot leave a half file; it only widens the window in which a power loss reverts to the
 * old one. Reporting it as a failed write would misstate what is on disk. */
static void sync_parent_directory(const char *path)
{
    char *dir = dir_of(path);
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

/* Gives the complete unnamed file its temporary name; returns 0 or an errno. */
static int link_unnamed(AtomicFile *f)
{
    char proc_path[64];
    snprintf(proc_path, sizeof proc_path, "/proc/self/fd/%d", fileno(f->file));
    int st = linkat(AT_FDCWD, proc_path, AT_FDCWD, f->tmp_path, AT_SYMLINK_FOLLOW);
    if (st && errno == EEXIST && remove_own_leftover(f->tmp_path))
        st = linkat(AT_FDCWD, proc_path, AT_FDCWD, f->tmp_path, AT_SYMLINK_FOLLOW);
    if (st)
        return errno ? errno : EIO;
    f->unnamed = 0;
    return 0;
}

/* The errno of an earlier failed write through f, which stdio does not keep: EFBIG when the
 * file reached the file size limit, else EIO. */
static int earlier_write_errno(FILE *f)
{
    struct rlimit limit;
    const off_t at = ftello(f);
    if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && at >= 0 &&
        (rlim_t)at >= limit.rlim_cur)
        return EFBIG;
    return EIO;
}

int atomic_file_commit(AtomicFile *f, Error *e)
{
    int err = 0;
    if (ferror(f->file))
        err = earlier_write_errno(f->file);
    else if (fflush(f->file) != 0 || fsync(fileno(f->file)) != 0)
        err = errno;
    if (!err && f->unnamed)
        err = link_unnamed(f);
    if (fclose(f->file) != 0 && !err)
        err = errno;
    f->file = NULL;
    if (!err && rename(f->tmp_path, f->path) != 0)
        err = errno;
    int st = CDL_OK;
    if (err) {
        st = error_set(e, CDL_ERUNTIME, "%s: cannot write: %s", f->path, atomic_file_strerror(err));
        if (!f->unnamed)
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
    if (f->tmp_path && !f->unnamed)
        unlink(f->tmp_path);
    atomic_file_release(f);
}

int atomic_symlink(const char *target, const char *link, Error *e)
{
    struct stat sb;
    if (lstat(link, &sb) == 0 && !S_ISLNK(sb.st_mode))
        return error_set(e, CDL_ERUNTIME, "%s: exists and is not a symbolic link; left as it is",
                         link);
    const size_t tmp_bytes = strlen(link) + TEMP_EXTRA_BYTES;
    char *dir = dir_of(link), *tmp = malloc(tmp_bytes);
    if (!dir || !tmp) {
        free(dir);
        free(tmp);
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", link);
    }
    remove_stale_temps(dir);
    free(dir);
    atomic_file_temp_path(link, tmp, tmp_bytes);
    int st = symlink(target, tmp);
    if (st && errno == EEXIST && remove_own_leftover(tmp))
        st = symlink(target, tmp);
    if (!st && rename(tmp, link) != 0) {
        const int err = errno;
        unlink(tmp);
        errno = err;
        st = -1;
    }
    if (st)
        st = error_set(e, CDL_ERUNTIME, "%s: cannot update link: %s", link, strerror(errno));
    free(tmp);
    return st;
}

const char *atomic_file_strerror(int err)
{
    struct rlimit limit;
    if (err == EFBIG && getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        return "file size limit exceeded (ulimit -f)";
    if (err == EFBIG)
        return "file too large for its filesystem";
    return strerror(err);
}
