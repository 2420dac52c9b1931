/* SampleSource over an in-memory Dataset, the common destructor, and a source's fingerprint. */
#include "data/source.h"

#include <stdlib.h>
#include <string.h>

#include "util/hash_table.h"

static int dataset_read(const SampleSource *s, int i, Image *img, int *label, Error *e)
{
    const Dataset *d = s->impl;
    const size_t n = (size_t)d->c * d->h * d->w;
    img->data = malloc(n * sizeof *img->data);
    if (!img->data)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    img->c = d->c;
    img->h = d->h;
    img->w = d->w;
    dataset_fill_batch(d, &i, 1, img->data, label);
    return CDL_OK;
}

static const char *dataset_path(const SampleSource *s, int i)
{
    (void)s;
    (void)i;
    return NULL;
}

static void dataset_destroy(SampleSource *s)
{
    dataset_free(s->impl);
    free(s->impl);
}

int source_from_dataset(SampleSource *s, Dataset *d, Error *e)
{
    memset(s, 0, sizeof *s);
    Dataset *owned = malloc(sizeof *owned);
    if (!owned)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    *owned = *d;
    memset(d, 0, sizeof *d);
    s->n = owned->n;
    s->classes = owned->classes;
    s->c = owned->c;
    s->h = owned->h;
    s->w = owned->w;
    s->read = dataset_read;
    s->path = dataset_path;
    s->destroy = dataset_destroy;
    s->impl = owned;
    return CDL_OK;
}

const Dataset *source_dataset(const SampleSource *s)
{
    return s->read == dataset_read ? s->impl : NULL;
}

void source_free(SampleSource *s)
{
    if (s->destroy)
        s->destroy(s);
    memset(s, 0, sizeof *s);
}

uint64_t source_fingerprint(const SampleSource *s)
{
    const int dims[5] = {s->n, s->classes, s->c, s->h, s->w};
    uint64_t h = fnv1a_add(FNV1A_START, dims, sizeof dims);
    const Dataset *d = source_dataset(s);
    if (d)
        return fnv1a_add(fnv1a_add(h, d->labels, (size_t)d->n * sizeof *d->labels), d->pixels,
                         (size_t)d->n * d->c * d->h * d->w);
    for (int i = 0; i < s->n; i++) {
        const char *path = s->path(s, i);
        h = path ? fnv1a_add(h, path, strlen(path) + 1) : h;
    }
    return h;
}
