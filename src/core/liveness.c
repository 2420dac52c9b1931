/* Liveness packing (core/liveness.h): greedy first fit, largest buffer first. The buffers placed
 * so far that are live at the same time as the next one each block [offset, offset + bytes); the
 * next one goes into the lowest gap between them large enough. Placing the large buffers first
 * keeps the small ones from fragmenting the slab (TensorFlow Lite's arena planner does the same).
 */
#include "core/liveness.h"

static size_t round_up(size_t n, size_t align)
{
    return (n + align - 1) / align * align;
}

static int spans_meet(const LiveBuffer *a, const LiveBuffer *b)
{
    for (int i = 0; i < a->n_spans; i++)
        for (int j = 0; j < b->n_spans; j++)
            if (a->spans[i].first <= b->spans[j].last && b->spans[j].first <= a->spans[i].last)
                return 1;
    return 0;
}

/* Sorts ids[0..n) by key(ids[k]) ascending, ties keeping their order (insertion sort: a net has
 * at most a few thousand buffers, and this runs at resize only). */
static void sort_ids(int *ids, int n, const LiveBuffer *buffers, int by_offset)
{
    for (int k = 1; k < n; k++) {
        const int id = ids[k];
        const size_t key = by_offset ? buffers[id].offset : ~buffers[id].bytes;
        int j = k;
        for (; j > 0; j--) {
            const LiveBuffer *p = &buffers[ids[j - 1]];
            if ((by_offset ? p->offset : ~p->bytes) <= key)
                break;
            ids[j] = ids[j - 1];
        }
        ids[j] = id;
    }
}

size_t liveness_pack(LiveBuffer *buffers, int n, size_t align, int *work)
{
    int *order = work, *blocking = work + n;
    int n_sized = 0;
    for (int i = 0; i < n; i++) {
        buffers[i].offset = 0;
        if (buffers[i].bytes)
            order[n_sized++] = i;
    }
    sort_ids(order, n_sized, buffers, 0); /* largest first */
    size_t total = 0;
    for (int k = 0; k < n_sized; k++) {
        LiveBuffer *b = &buffers[order[k]];
        int n_blocking = 0;
        for (int j = 0; j < k; j++)
            if (spans_meet(b, &buffers[order[j]]))
                blocking[n_blocking++] = order[j];
        sort_ids(blocking, n_blocking, buffers, 1);
        const size_t bytes = round_up(b->bytes, align);
        size_t at = 0;
        for (int j = 0; j < n_blocking; j++) {
            const LiveBuffer *p = &buffers[blocking[j]];
            if (p->offset >= at + bytes)
                break; /* the gap before p fits */
            const size_t p_end = p->offset + round_up(p->bytes, align);
            at = p_end > at ? p_end : at;
        }
        b->offset = at;
        total = at + bytes > total ? at + bytes : total;
    }
    return total;
}
