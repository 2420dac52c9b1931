/* A sequence-to-sequence net computing a mini-batch at its runtime length: the rows of its
 * longest source and target instead of the source= and seq= rows its memory is planned for.
 * Padding rows change nothing a labelled row computes (keys past a sample's own are masked,
 * every other operation is row by row), so the loss and gradients are the padded batch's; the
 * layers' buffers keep their sized layout but hold [batch][rows][C] packed at their start. */
#include "core/net.h"

int net_can_set_rows(const Net *net)
{
    if (!net->source)
        return 0;
    for (int i = 0; i < net->n_layers; i++)
        if (!net->layers[i].type->set_rows)
            return 0;
    return 1;
}

void net_set_rows(Net *net, int source_rows, int target_rows)
{
    if (source_rows == net->rows_source && target_rows == net->rows_target)
        return;
    net->rows_source = source_rows;
    net->rows_target = target_rows;
    for (int i = 0; i < net->n_layers; i++)
        net->layers[i].type->set_rows(&net->layers[i], net);
}

/* 1 + the last row r < n whose id ids[r] is a token (>= 0); 0: none. */
static int used_rows(const float *ids, int n)
{
    int r = n;
    while (r > 0 && !(ids[r - 1] >= 0))
        r--;
    return r;
}

void net_fit_rows(Net *net)
{
    const int s = net->source, t = net->seq, row = s + t;
    const float *x = net_host_input(net);
    int source_rows = 1, target_rows = 1;
    for (int b = 0; b < net->batch; b++) {
        const int sr = used_rows(x + (size_t)b * row, s),
                  tr = used_rows(x + (size_t)b * row + s, t);
        source_rows = sr > source_rows ? sr : source_rows;
        target_rows = tr > target_rows ? tr : target_rows;
    }
    /* Labelled rows are rows whose input is a token (BOS or the target's), so none is cut. Each
     * sample's rows move down to their packed place, never over a row still to move. */
    int *labels = net_host_labels(net);
    for (int b = 1; b < net->batch; b++)
        for (int r = 0; r < target_rows; r++)
            labels[(size_t)b * target_rows + r] = labels[(size_t)b * t + r];
    net_set_rows(net, source_rows, target_rows);
}
