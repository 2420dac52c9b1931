/* Data-parallel training across processes (MPI, `make MPI=1`): the ranks of a run, the
 * gradient allreduce in buckets started while backward runs, sync_bn's sums, and the deadline
 * every collective is polled against. Without MPI (or run without mpirun) the same interface
 * is one process, rank 0 of 1. */
#ifndef CDL_DIST_H
#define CDL_DIST_H

#include "core/net.h"
#include "util/error.h"

/* Joins the run's ranks when launched by mpirun (MPI_Init_thread); does nothing otherwise or
 * without MPI. Returns 0, or CDL_ERUNTIME when MPI cannot start. Call once, before threads. */
int dist_init(int *argc, char ***argv);
int dist_rank(void);
int dist_size(void);
/* The rank's position among the ranks on its machine, *local_size their number (0 of 1 without
 * mpirun): which of the machine's devices it takes (--gpu A,B,...). */
int dist_local_rank(int *local_size);
/* Every rank passes its status; returns the highest, and *report is 1 on the lowest rank whose
 * status is not 0 (so a failure in setup is printed once). Alone: st and *report = st != 0. */
int dist_agree(int st, int *report);
/* Ends the process's part in the run: MPI_Finalize, or with status != 0 among several ranks
 * MPI_Abort (the other ranks stop too, and mpirun exits 1). */
void dist_finalize(int status);

/* Time spent on the gradient allreduce over some steps. */
typedef struct DistStats {
    double wait_s;   /* blocked after backward until every bucket and the loss were reduced */
    double hidden_s; /* from the first bucket's start to backward's end: overlapped with it */
} DistStats;

typedef struct Dist Dist;

/* Prepares net's run on dist_size() ranks: buckets of the gradient slab (layers whose
 * gradients total at least bucket_floats, the last layers first), net->collective and
 * net->sample_offset (rank * net->batch; net sized already). timeout_s: the longest any rank
 * waits for the others in one collective. Allocates (the step then does not). */
int dist_open(Dist **out, Net *net, double timeout_s, Error *e);
void dist_close(Dist *d, Net *net);
/* Ends a step's reduction after its last backward: waits for every bucket (starting those not
 * started), so net->grads holds the sum over ranks, and replaces *loss by the ranks' sum.
 * CDL_ERUNTIME "step N: rank R did not answer within S s ..." past the deadline; the
 * run cannot continue after it (dist_finalize with the error then stops every rank). */
int dist_finish_step(Dist *d, float *loss, Error *e);
/* The same in two halves, for a GPU net's step (whose buckets go through the device's collective
 * library), captured as a CUDA graph or eager, whose loss the host reads at its end.
 * dist_queue_step, after the last backward (inside the capture when captured, whose host time is
 * then not counted as overlap): starts the buckets not started yet and makes the net's stream
 * wait for their sums, without waiting on the host (a graph holds the sums, and every replay runs
 * them). After the step finished, dist_sum_loss replaces *loss
 * by the ranks' sum (deadline as above). */
int dist_queue_step(Dist *d, int captured, Error *e);
int dist_sum_loss(Dist *d, float *loss, Error *e);
/* *flag = 1 on every rank when it is 1 on any (deadline as dist_finish_step's). */
int dist_any(Dist *d, int *flag, Error *e);
/* The totals since the last call, then restarts them. */
DistStats dist_take_stats(Dist *d);

#endif
