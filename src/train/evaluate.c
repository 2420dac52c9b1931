/* Classifier evaluation. */
#include "train/evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rank of the true class among the outputs (0 = predicted). */
static int rank_of(const float *p, int classes, int truth)
{
    int rank = 0;
    for (int k = 0; k < classes; k++)
        rank += p[k] > p[truth] || (p[k] == p[truth] && k < truth);
    return rank;
}

int evaluate(Net *net, const Dataset *d, EvalResult *r, Error *e)
{
    memset(r, 0, sizeof *r);
    if (d->classes > net->classes)
        return error_set(e, CDL_EUSAGE,
                         "dataset has labels up to %d but the model outputs %d classes",
                         d->classes - 1, net->classes);
    r->classes = net->classes;
    r->confusion = calloc((size_t)r->classes * (size_t)r->classes, sizeof *r->confusion);
    int *idx = malloc((size_t)net->batch * sizeof *idx);
    if (!r->confusion || !idx) {
        free(idx);
        eval_result_free(r);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    const int saved_train = net->train, saved_batch = net->batch;
    const float saved_divisor = net->loss_divisor;
    net->train = 0;
    net->loss_divisor = 1;
    double loss = 0;
    int top1 = 0, top5 = 0;
    for (int start = 0; start < d->n; start += saved_batch) {
        int n = d->n - start < saved_batch ? d->n - start : saved_batch;
        for (int i = 0; i < n; i++)
            idx[i] = start + i;
        net->batch = n;
        dataset_fill_batch(d, idx, n, net->input, net->labels);
        net_forward(net);
        loss += net->loss;
        const float *out = net_output(net);
        for (int i = 0; i < n; i++) {
            const float *p = out + (size_t)i * (size_t)net->classes;
            int truth = net->labels[i], best = 0;
            for (int k = 1; k < net->classes; k++)
                best = p[k] > p[best] ? k : best;
            r->confusion[truth * r->classes + best]++;
            int rank = rank_of(p, net->classes, truth);
            top1 += rank == 0;
            top5 += rank < 5;
        }
    }
    net->train = saved_train;
    net->batch = saved_batch;
    net->loss_divisor = saved_divisor;
    free(idx);
    r->samples = d->n;
    r->loss = d->n ? loss / d->n : 0;
    r->top1 = d->n ? (double)top1 / d->n : 0;
    r->top5 = d->n ? (double)top5 / d->n : 0;
    return CDL_OK;
}

double eval_class_accuracy(const EvalResult *r, int c)
{
    int total = 0;
    for (int k = 0; k < r->classes; k++)
        total += r->confusion[c * r->classes + k];
    return total ? (double)r->confusion[c * r->classes + c] / total : 0;
}

void eval_result_free(EvalResult *r)
{
    free(r->confusion);
    r->confusion = NULL;
}
