/* Evaluation of a classifier on a labelled dataset: loss, top-1/top-5 accuracy,
 * per-class accuracy and the confusion matrix. */
#ifndef CDL_EVALUATE_H
#define CDL_EVALUATE_H

#include "core/net.h"
#include "data/dataset.h"

typedef struct EvalResult {
    int samples, classes;
    double loss;       /* mean cross-entropy */
    double top1, top5; /* fractions in [0,1] */
    int *confusion;    /* [classes][classes]: row = true class, column = predicted */
} EvalResult;

/* Runs net (eval mode, sized by net_resize) over every sample of d in chunks of
 * net->batch; restores net->train and net->batch afterwards. */
int evaluate(Net *net, const Dataset *d, EvalResult *r, Error *e);
void eval_result_free(EvalResult *r);
/* Fraction of class c's samples predicted as c (0 when the class has none). */
double eval_class_accuracy(const EvalResult *r, int c);

#endif
