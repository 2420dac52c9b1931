/* A checkpoint's progress in the resuming run's steps, and what changed in its data (resume.h). */
#include "train/resume.h"

#include <stdio.h>

int resume_point(const ModelMeta *meta, const char *path, int steps_per_epoch, int global_batch,
                 int data_changed, ResumePoint *p, Error *e)
{
    const uint64_t spe = (uint64_t)steps_per_epoch, gb = (uint64_t)global_batch;
    const uint64_t old_spe = (uint64_t)meta->steps_per_epoch;
    *p = (ResumePoint){0};
    if (!old_spe) { /* never trained (a session saved before its first epoch): steps as they are */
        p->epochs_done = (int)(meta->step / spe);
        p->samples_in_epoch = meta->step % spe * gb;
    } else {
        const uint64_t old_gb = meta->global_batch ? (uint64_t)meta->global_batch : gb;
        const uint64_t in_epoch =
            meta->global_batch ? meta->samples_in_epoch : meta->step % old_spe * old_gb;
        if (meta->step / old_spe != (uint64_t)meta->epochs_done ||
            meta->step % old_spe * old_gb != in_epoch)
            return error_set(e, CDL_EUSAGE,
                             "%s: its progress does not add up: step %llu is not %d epochs of %llu "
                             "steps and %llu samples of %llu a step; the header is damaged or was "
                             "edited (start a new run from its weights with --weights)",
                             path, (unsigned long long)meta->step, meta->epochs_done,
                             (unsigned long long)old_spe, (unsigned long long)in_epoch,
                             (unsigned long long)old_gb);
        p->epochs_done = meta->epochs_done;
        p->samples_in_epoch = in_epoch;
    }
    p->epoch_restarts = data_changed && p->samples_in_epoch > 0;
    uint64_t pos = p->epoch_restarts ? 0 : p->samples_in_epoch / gb;
    if (pos >= spe) /* fewer samples an epoch now (more ranks drop more at its end) */
        pos = spe - 1;
    p->step = (uint64_t)p->epochs_done * spe + pos;
    return CDL_OK;
}

void data_print_changes(const DataPrint *then, const DataPrint *now, const char *unit, char *out,
                        size_t size)
{
    out[0] = '\0';
    if (!then->fingerprint || then->fingerprint == now->fingerprint)
        return;
    const uint64_t counts[2][2] = {{now->train, then->train}, {now->valid, then->valid}};
    const char *const sets[2] = {"training", "validation"};
    size_t used = 0;
    for (int k = 0; k < 2; k++)
        if (counts[k][0] != counts[k][1] && used < size)
            used += (size_t)snprintf(out + used, size - used, "%s%llu %s %s (%llu then)",
                                     used ? ", " : "", (unsigned long long)counts[k][0], sets[k],
                                     unit, (unsigned long long)counts[k][1]);
    if (!used)
        snprintf(out, size, "as many %s as then, but not the same", unit);
}
