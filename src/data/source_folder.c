/* Image-folder datasets (torchvision's ImageFolder layout): root/<class>/<image>.{jpg,jpeg,png},
   class folders and files in sorted order so every run sees the same sample order. */
#include "data/source_files.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static int is_image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot &&
           (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") || !strcasecmp(dot, ".png"));
}

static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *path = malloc(a + b + 2);
    if (path) {
        memcpy(path, dir, a);
        path[a] = '/';
        memcpy(path + a + 1, name, b + 1);
    }
    return path;
}

/* Whether dir/entry is a directory (want_dirs) or a regular image file; d_type when the file
   system fills it, else stat (which also follows symbolic links). */
static int wanted(const char *dir, const struct dirent *entry, int want_dirs)
{
    if (entry->d_name[0] == '.' || (!want_dirs && !is_image_name(entry->d_name))) {
        return 0;
    }
    if (entry->d_type == DT_DIR || entry->d_type == DT_REG) {
        return want_dirs == (entry->d_type == DT_DIR);
    }
    char *path = join(dir, entry->d_name);
    struct stat st;
    int ok =
        path && stat(path, &st) == 0 && (want_dirs ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
    free(path);
    return ok;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++) {
        free(names[i]);
    }
    free(names);
}

/* The sorted names of dir's subdirectories (want_dirs) or image files. */
static int list_dir(const char *dir, int want_dirs, char ***out, int *n, Error *e)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        return error_set(e, CDL_ERUNTIME, "%s: cannot open directory: %s", dir, strerror(errno));
    }
    char **names = NULL;
    int count = 0, cap = 0, rc = CDL_OK;
    struct dirent *entry;
    while (!rc && (entry = readdir(d))) {
        if (!wanted(dir, entry, want_dirs)) {
            continue;
        }
        if (count == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(names, (size_t)cap * sizeof *grown);
            if (!grown) {
                rc = error_set(e, CDL_ERUNTIME, "%s: out of memory listing the directory", dir);
                break;
            }
            names = grown;
        }
        if (!(names[count] = strdup(entry->d_name))) {
            rc = error_set(e, CDL_ERUNTIME, "%s: out of memory listing the directory", dir);
            break;
        }
        count++;
    }
    closedir(d);
    if (rc) {
        free_names(names, count);
        return rc;
    }
    if (count > 1) {
        qsort(names, (size_t)count, sizeof *names, compare_names);
    }
    *out = names;
    *n = count;
    return CDL_OK;
}

int folder_list_classes(const char *root, char ***names, int *n, Error *e)
{
    int rc = list_dir(root, 1, names, n, e);
    if (!rc && *n == 0) {
        free(*names);
        *names = NULL;
        return error_set(e, CDL_ERUNTIME, "%s: no class folders (expected %s/<class>/<image>)",
                         root, root);
    }
    return rc;
}

/* Adds the images of root/folder with label cls. */
static int add_folder(FileList *l, const char *root, const char *folder, int cls, Error *e)
{
    char *dir = join(root, folder);
    if (!dir) {
        return error_set(e, CDL_ERUNTIME, "%s: out of memory", root);
    }
    char **files;
    int n;
    int rc = list_dir(dir, 0, &files, &n, e);
    for (int i = 0; !rc && i < n; i++) {
        rc = file_list_add(l, join(dir, files[i]), cls, e);
    }
    free_names(files, n);
    free(dir);
    return rc;
}

int source_folder_open(SampleSource *s, const char *root, char *const *classes, int n_classes,
                       Error *e)
{
    memset(s, 0, sizeof *s);
    char **folders;
    int n_folders;
    int rc = folder_list_classes(root, &folders, &n_folders, e);
    if (rc) {
        return rc;
    }
    if (!classes) {
        classes = folders;
        n_classes = n_folders;
    }
    NameIndex ix;
    FileList l = {0};
    rc = name_index_build(&ix, classes, n_classes, e);
    for (int i = 0; !rc && i < n_folders; i++) {
        int cls = name_index_find(&ix, folders[i], strlen(folders[i]));
        if (cls < 0) {
            rc = error_set(e, CDL_EUSAGE,
                           "%s: class folder '%s' is not one of the %d classes (%s, ...)", root,
                           folders[i], n_classes, classes[0]);
        } else {
            rc = add_folder(&l, root, folders[i], cls, e);
        }
    }
    name_index_free(&ix);
    free_names(folders, n_folders);
    if (rc) {
        file_list_free(&l);
        return rc;
    }
    return source_from_file_list(s, &l, n_classes, root, e);
}
