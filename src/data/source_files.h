/* Sample sources over image files: a folder of class folders, a darknet list, a CSV of path,label
 * lines; the deterministic validation split they share; and the helpers their readers share
 * (path resolution, class-name lookup). Samples are decoded with image_load when read; read is
 * thread-safe (it only reads the immutable path and label tables). */
#ifndef CDL_SOURCE_FILES_H
#define CDL_SOURCE_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "data/source.h"

/* ---- the three file formats ---- */

/* Lists the class folders of an image-folder dataset: the subdirectories of root (hidden ones
   skipped), sorted by strcmp (byte order, as Python's sorted). *names is malloc'd (free each
   name and the array). An unreadable root or one without class folders is CDL_ERUNTIME. */
int folder_list_classes(const char *root, char ***names, int *n, Error *e);

/* An image folder: root/<class>/<file> for files ending in .jpg, .jpeg or .png (any case),
   sorted by class, then by file name (strcmp), so the order is deterministic. Other files,
   hidden entries and deeper folders are skipped. The label of a file is the index of its class
   folder in classes[0..n_classes); classes = NULL means root's own sorted folder list (see
   folder_list_classes). A class folder of root not among classes is CDL_EUSAGE; a class with no
   images is allowed; no image at all is CDL_ERUNTIME. s->classes = n_classes (or the folder
   count). */
int source_folder_open(SampleSource *s, const char *root, char *const *classes, int n_classes,
                       Error *e);

/* A darknet classifier list: one image path per line (blank lines skipped, surrounding white
   space trimmed). A relative path is tried from the current directory, then relative to the
   list file's directory (darknet reads it from the current directory only). As darknet, the
   label is the class whose name occurs as a substring of the path as written in the list ("rain"
   matches "train/"); when several names occur the one ending last wins (ties: the longest), so
   "data/train/cat/1.jpg" is "cat", and the path is counted as ambiguous (see
   source_ambiguous_labels). A path holding no class name is CDL_EUSAGE naming LIST:LINE. names =
   NULL opens a detector's list: every label is 0 and s->read_boxes reads the boxes, of n_names
   classes, from each image's label file (data/boxes.h). */
int source_list_open(SampleSource *s, const char *list_path, char *const *names, int n_names,
                     Error *e);

/* CSV of `path,label` lines: the label follows the last comma (so paths may hold commas) and is
   a class index in [0, n_names) or a class name from names; white space around fields is
   trimmed, blank lines are skipped. A first line whose label is neither is a header and
   skipped. Paths resolve as in source_list_open. Errors name CSV:LINE (CDL_EUSAGE). */
int source_csv_open(SampleSource *s, const char *csv_path, char *const *names, int n_names,
                    Error *e);

/* Paths of a darknet list in which more than one class name occurs (0 for any other source);
 *first_path (may be NULL) receives the first such path as written in the list, or NULL. */
int source_ambiguous_labels(const SampleSource *s, const char **first_path);

/* Moves round(n * fraction) samples of a file source into held_out, class by class: each class
   gives as many as the evenly spread rule (sample i held out when floor((i + 1) * m / n) >
   floor(i * m / n) for m held-out samples) puts among its samples, about its share, and which
   ones a shuffle seeded with seed picks (training's --seed: the same seed holds out the same
   samples). Both keep the source's order; fraction must be in (0, 1) and leave a sample on each
   side (CDL_EUSAGE). On failure both s and held_out are left freed (zeroed). */
int source_files_split(SampleSource *s, float fraction, uint64_t seed, SampleSource *held_out,
                       Error *e);

/* True when s is one of the file sources above. */
int source_is_files(const SampleSource *s);

/* ---- helpers shared by the readers ---- */

/* Resolves a path named inside base_file (a list, CSV or .data file): as given when it exists
   or is absolute, else relative to base_file's directory when it exists there, else as given.
   *found tells whether the returned (malloc'd) path exists; NULL when out of memory. */
char *path_resolve(const char *base_file, const char *path, int *found);

/* Cuts leading and trailing spaces, tabs, CRs and LFs off s (in place); returns the start. */
char *text_trim(char *s);

/* The samples of a file source as its reader collects them. */
typedef struct FileList {
    int n, cap;
    char **paths;          /* [n] resolved paths, malloc'd */
    int *labels;           /* [n] */
    int ambiguous;         /* darknet lists: paths matching several class names */
    char *first_ambiguous; /* the first of them, as written in the list */
} FileList;

/* Appends a sample, taking ownership of path (freed here on failure). */
int file_list_add(FileList *l, char *path, int label, Error *e);
void file_list_free(FileList *l);
/* Makes s read l's samples (taking ownership; *l is zeroed). where names the dataset in the
   error for an empty list. */
int source_from_file_list(SampleSource *s, FileList *l, int classes, const char *where, Error *e);

/* Class names sorted for lookup by (length, bytes). */
typedef struct NameEntry {
    const char *name;
    size_t len;
    int cls;
} NameEntry;

typedef struct NameIndex {
    int n;
    NameEntry *sorted; /* [n] */
    size_t *widths;    /* [n_widths] the distinct name lengths, ascending */
    int n_widths;
    unsigned char starts[256]; /* 1 for each byte some name starts with */
} NameIndex;

/* Builds the index over names (which must outlive it). */
int name_index_build(NameIndex *ix, char *const *names, int n, Error *e);
void name_index_free(NameIndex *ix);
/* The class whose name is exactly s[0..len), or -1. */
int name_index_find(const NameIndex *ix, const char *s, size_t len);

#endif
