/* A ModelMeta's class names against a dataset's, and freeing it (see model_meta.h). */
#include "train/model_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Lists with more names than this are shown as their first and last few. */
#define NAMES_SHOWN 8
#define NAME_CHARS 32

/* "a, b, c" or "a, b, c, d, e, ..., y, z" into out. */
static void names_text(char *const *names, int n, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n && used < size; i++) {
        const int head = NAMES_SHOWN - 2; /* shown before the "...", then the last two */
        if (n > NAMES_SHOWN && i == head) {
            used += (size_t)snprintf(out + used, size - used, ", ...");
            i = n - 3;
            continue;
        }
        used += (size_t)snprintf(out + used, size - used, "%s%.*s", i ? ", " : "", NAME_CHARS,
                                 names[i]);
    }
}

int model_meta_check_names(const ModelMeta *meta, char *const *names, int n, const char *model,
                           const char *data, Error *e)
{
    int k = 0;
    while (k < n && k < meta->n_names && !strcmp(names[k], meta->names[k]))
        k++;
    if (!meta->n_names || (k == n && n == meta->n_names))
        return CDL_OK;
    char here[400], there[400], first[160];
    names_text(names, n, here, sizeof here);
    names_text(meta->names, meta->n_names, there, sizeof there);
    snprintf(first, sizeof first, "class %d ('%.*s' here, %s%.*s%s there)", k, NAME_CHARS,
             k < n ? names[k] : "", k < meta->n_names ? "'" : "", NAME_CHARS,
             k < meta->n_names ? meta->names[k] : "none", k < meta->n_names ? "'" : "");
    if (k >= n)
        snprintf(first, sizeof first, "class %d (none here, '%.*s' there)", k, NAME_CHARS,
                 meta->names[k]);
    return error_set(e, CDL_EUSAGE,
                     "%s: its %d classes (%s) are not the %d classes %s was trained on (%s): "
                     "the first difference is %s",
                     data, n, here, meta->n_names, model, there, first);
}

void model_meta_find_data(const ModelMeta *meta, const char *checkpoint_path, char *out,
                          size_t size)
{
    const char *data = meta->data_path, *slash = strrchr(checkpoint_path, '/');
    snprintf(out, size, "%s", data);
    if (data[0] == '/' || !slash || access(data, F_OK) == 0)
        return;
    char beside[8192];
    snprintf(beside, sizeof beside, "%.*s/%s", (int)(slash - checkpoint_path), checkpoint_path,
             data);
    if (access(beside, F_OK) == 0)
        snprintf(out, size, "%s", beside);
}

void model_meta_free(ModelMeta *meta)
{
    for (int i = 0; i < meta->n_names; i++)
        free(meta->names[i]);
    free(meta->names);
    meta->names = NULL;
    meta->n_names = 0;
    text_vocab_free(&meta->vocab);
}
