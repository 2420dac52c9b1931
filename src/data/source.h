/* A labelled image dataset read one sample at a time, whatever its storage: in-memory
 * arrays (IDX, scikit-learn digits CSV, CIFAR binary batches) or image files (a folder of
 * class folders, a darknet list, a CSV of path,label lines). The loader decodes samples
 * through this interface from several threads at once, so read must be thread-safe. */
#ifndef CDL_SOURCE_H
#define CDL_SOURCE_H

#include "data/dataset.h"
#include "data/image.h"
#include "util/error.h"

typedef struct SampleSource SampleSource;

struct SampleSource {
    int n;       /* samples */
    int classes; /* labels are in [0, classes) */
    /* Shape every sample has, or 0s when samples are image files of their own sizes. */
    int c, h, w;
    /* Decodes sample i (0 <= i < n) into img (allocated here; the caller image_frees it)
     * and its label. A corrupt or unreadable file is CDL_ERUNTIME naming the file. */
    int (*read)(const SampleSource *s, int i, Image *img, int *label, Error *e);
    /* Reads sample i's truth boxes into truth [max_boxes][TRUTH_FLOATS] (data/boxes.h: its boxes,
     * then zeros), their classes checked against `classes`; thread-safe. NULL: the samples have no
     * boxes (in-memory datasets). File sources read the image's darknet label file
     * (boxes_label_path), whose bad lines fail naming FILE:LINE. */
    int (*read_boxes)(const SampleSource *s, int i, float *truth, int max_boxes, Error *e);
    /* The file a sample comes from (for messages), or NULL for in-memory samples. */
    const char *(*path)(const SampleSource *s, int i);
    void (*destroy)(SampleSource *s);
    void *impl;
};

/* Wraps an in-memory Dataset (taking ownership of its buffers; *d is zeroed). */
int source_from_dataset(SampleSource *s, Dataset *d, Error *e);
/* The Dataset behind a source_from_dataset source, or NULL for any other source (the loader
 * copies such samples straight from their pixels). */
const Dataset *source_dataset(const SampleSource *s);
/* A fingerprint of the samples, cheap next to reading them: their count and shape, and the
 * labels and pixels of in-memory samples or the paths of image files (a file changed in place
 * keeps its fingerprint). A resumed run compares it with the checkpoint's (train/model_meta.h). */
uint64_t source_fingerprint(const SampleSource *s);
/* Calls s->destroy and zeroes s; safe on a zeroed source. */
void source_free(SampleSource *s);

#endif
