/* The `cdl train --log` JSON Lines files that `cdl plot` reads: each run's curves (train loss,
 * validation loss and accuracy against the optimizer step). */
#ifndef CDL_CLI_PLOT_LOG_H
#define CDL_CLI_PLOT_LOG_H

#include "util/error.h"

typedef enum SeriesKind { TRAIN_LOSS, VALID_LOSS, VALID_ACCURACY, N_SERIES } SeriesKind;

/* Points (x[i], y[i]) in file order; x is the optimizer step. */
typedef struct Series {
    double *x, *y;
    int n, cap;
} Series;

typedef struct Run {
    const char *name; /* the log's file name, or its whole path when two names clash */
    Series series[N_SERIES];
    int cut_line;     /* > 0: the last line, cut as it was written, was skipped */
    long cut_bytes;   /* its length */
    int records_kept; /* the records read before it */
} Run;

/* Reads the step and epoch records of the log at path into run (zero it first); other record
 * types and blank lines are skipped. A line that is not a JSON object, a step or epoch record
 * without a numeric "step" (a step record without "loss") and a log without such records are
 * CDL_ERUNTIME naming PATH:LINE, except a last line without its newline that does not parse:
 * it was cut as it was written (a full disk, a killed run), so it is skipped and noted in
 * run->cut_line for the caller to warn about. Free run with plot_run_free, even after a failure. */
int plot_log_read(const char *path, Run *run, Error *e);
void plot_run_free(Run *r);

#endif
