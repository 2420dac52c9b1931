/* Data-parallel training across processes: the MPI implementation of train/dist.h under
 * CDL_MPI (make MPI=1), else one process, rank 0 of 1. Every collective is non-blocking and
 * polled against a deadline, so a rank that stopped or died cannot hold the others forever.
 * While they wait, and after every step, the other ranks send rank 0 a heartbeat, so that on a
 * timeout rank 0 can name the ranks it has not heard from. The gradient buckets go through a
 * BucketReducer: MPI's Iallreduce on a net whose memory the host reads (the CPU), or, on a GPU
 * (GPU=1 or GPU=sim), the device's collective library on a stream of its own
 * (train/dist_device.h: NCCL). The loss and sync_bn's sums, host values, stay MPI's. */
#include "train/dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CDL_MPI
#include <limits.h>
#include <mpi.h>
#include <sched.h>

#include "train/dist_device.h"
#include "util/timer.h"

/* Gradient floats per bucket (4 MB): large enough that a message's latency does not count,
 * small enough that the first buckets start early in backward. */
enum { DIST_BUCKET_FLOATS = 1 << 20, DIST_TAG_STEPS = 17 };
/* Ranks other than 0 wait this much longer, so that rank 0 is the one that reports. */
static const double DIST_GRACE_S = 2.0;

static int joined; /* MPI_Init ran */
static int world_rank, world_size = 1;
static int local_rank, local_size = 1; /* among the ranks on this machine */

typedef struct Bucket {
    int lo_layer; /* starts once layer lo_layer's backward is done */
    size_t at, count;
} Bucket;

/* How a step's gradient buckets are summed over the ranks. */
typedef struct BucketReducer {
    /* Starts the sum of bucket i: count floats of the gradient slab at grads. A failure marks the
     * run broken, the error in d->fail. */
    void (*start)(Dist *d, int i, float *grads, size_t count);
    /* Lets the sums in flight progress, after a layer's backward. */
    void (*progress)(Dist *d);
    /* After the last bucket's start and the loss's (d->reqs[n_buckets]): returns once both are
     * summed for what reads them next (the optimizer's passes), or fails past the deadline. */
    int (*join)(Dist *d);
} BucketReducer;

struct Dist {
    Net *net;
    Collective collective;
    const BucketReducer *reducer;
    DeviceAllreduce *device; /* the GPU's reducer's communicator, else NULL */
    Bucket *buckets;
    MPI_Request *reqs;   /* [n_buckets + 1]: the buckets', then the loss's */
    int n_buckets, next; /* next: the next bucket to start (they start in order) */
    double timeout_s;
    int broken; /* a collective timed out: the run cannot go on */
    Error fail;
    double loss;
    double first_start_s, wait_s, hidden_s;
    /* Heartbeats: ranks > 0 send a count, at most every beat_s; rank 0 notes when it last
     * heard from each rank. */
    double beat_s, last_beat_s;
    uint64_t send_buf;
    MPI_Request send_req;
    double *heard_s; /* rank 0: [world_size] */
    uint64_t *recv_buf;
    MPI_Request *recv_reqs;
};

int dist_init(int *argc, char ***argv)
{
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_SIZE"))
        return CDL_OK; /* not started by mpirun: one process */
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return CDL_ERUNTIME;
    joined = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    MPI_Comm machine;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL,
                            &machine) != MPI_SUCCESS)
        return CDL_ERUNTIME;
    MPI_Comm_rank(machine, &local_rank);
    MPI_Comm_size(machine, &local_size);
    MPI_Comm_free(&machine);
    return CDL_OK;
}

int dist_local_rank(int *size)
{
    *size = local_size;
    return local_rank;
}

int dist_rank(void)
{
    return world_rank;
}

int dist_size(void)
{
    return world_size;
}

int dist_agree(int st, int *report)
{
    if (world_size < 2) {
        *report = st != 0;
        return st;
    }
    int worst = st, first = st ? world_rank : INT_MAX;
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    *report = first == world_rank;
    return worst;
}

void dist_finalize(int status)
{
    if (!joined)
        return;
    fflush(stdout);
    fflush(stderr);
    if (status && world_size > 1)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
}

/* Ranks > 0: sends rank 0 a heartbeat when the last one is delivered and beat_s old. */
static void beat(Dist *d)
{
    int flag = 0;
    const double now = time_now_s();
    if (now - d->last_beat_s < d->beat_s)
        return;
    MPI_Test(&d->send_req, &flag, MPI_STATUS_IGNORE);
    if (!flag)
        return;
    d->send_buf++;
    d->last_beat_s = now;
    MPI_Isend(&d->send_buf, 1, MPI_UINT64_T, 0, DIST_TAG_STEPS, MPI_COMM_WORLD, &d->send_req);
}

/* Rank 0: takes every heartbeat the others have sent so far. */
static void take_heartbeats(Dist *d)
{
    for (int r = 1; r < world_size; r++) {
        int flag = 0;
        while (MPI_Test(&d->recv_reqs[r], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) {
            d->heard_s[r] = time_now_s();
            MPI_Irecv(&d->recv_buf[r], 1, MPI_UINT64_T, r, DIST_TAG_STEPS, MPI_COMM_WORLD,
                      &d->recv_reqs[r]);
        }
    }
}

/* The error of a collective past its deadline: on rank 0 it names the ranks not heard from in
 * the last half of the wait (the others were waiting too). */
static int timed_out(Dist *d, const char *what)
{
    d->broken = 1;
    const unsigned long long step = (unsigned long long)d->net->step + 1;
    if (world_rank != 0)
        return error_set(&d->fail, CDL_ERUNTIME,
                         "rank %d: step %llu: no answer from the other ranks in %s within %g s "
                         "(--dist-timeout)",
                         world_rank, step, what, d->timeout_s + DIST_GRACE_S);
    take_heartbeats(d);
    char ranks[256] = "";
    int n = 0;
    const double quiet_since = time_now_s() - d->timeout_s / 2;
    for (int r = 1; r < world_size; r++)
        if (d->heard_s[r] < quiet_since) {
            size_t len = strlen(ranks);
            snprintf(ranks + len, sizeof ranks - len, "%s%d", n++ ? ", " : "", r);
        }
    if (!n)
        return error_set(&d->fail, CDL_ERUNTIME,
                         "step %llu: the other ranks did not answer in %s within %g s "
                         "(--dist-timeout)",
                         step, what, d->timeout_s);
    return error_set(&d->fail, CDL_ERUNTIME,
                     "step %llu: rank%s %s did not answer within %g s (--dist-timeout): "
                     "stopped, hung or dead",
                     step, n > 1 ? "s" : "", ranks, d->timeout_s);
}

/* Polls reqs[0..n) until all are complete, or fails past the deadline. */
static int wait_all(Dist *d, int n, MPI_Request *reqs, const char *what)
{
    if (d->broken)
        return d->fail.code;
    const double deadline = time_now_s() + d->timeout_s + (world_rank ? DIST_GRACE_S : 0.0);
    for (;;) {
        int flag = 0;
        MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
        if (flag)
            return CDL_OK;
        if (world_rank == 0)
            take_heartbeats(d);
        else
            beat(d);
        if (time_now_s() > deadline)
            return timed_out(d, what);
        sched_yield();
    }
}

/* The MPI reducer: a non-blocking allreduce per bucket on the host's view of the slab, polled
 * with the loss's against the deadline. */
static void mpi_start(Dist *d, int i, float *grads, size_t count)
{
    MPI_Iallreduce(MPI_IN_PLACE, grads, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &d->reqs[i]);
}

static void mpi_progress(Dist *d)
{
    int flag;
    MPI_Testall(d->next, d->reqs, &flag, MPI_STATUSES_IGNORE);
}

static int mpi_join(Dist *d)
{
    return wait_all(d, d->n_buckets + 1, d->reqs, "the gradient allreduce");
}

static const BucketReducer mpi_reducer = {mpi_start, mpi_progress, mpi_join};

#ifdef CDL_GPU
/* The device's reducer (a GPU net: its slab is device memory, which MPI may not read): the sums
 * queued on the communication stream; join makes the net's stream wait for them, and polls the
 * loss's MPI request against the deadline. */
static void device_start(Dist *d, int i, float *grads, size_t count)
{
    (void)i;
    if (device_allreduce_start(d->device, grads, count, &d->fail))
        d->broken = 1;
}

static void device_progress(Dist *d)
{
    (void)d; /* the device's library progresses on its own */
}

static int device_join(Dist *d)
{
    if (!d->broken && device_allreduce_join(d->device, &d->fail))
        d->broken = 1;
    return wait_all(d, 1, &d->reqs[d->n_buckets], "the gradient allreduce");
}

static const BucketReducer device_reducer = {device_start, device_progress, device_join};
#endif

static void start_bucket(Dist *d)
{
    const Bucket *b = &d->buckets[d->next];
    if (!d->first_start_s)
        d->first_start_s = time_now_s();
    d->reducer->start(d, d->next, d->net->grads + b->at, b->count);
    d->next++;
}

/* Collective.grads_ready: starts the buckets whose layers are all done, and lets the reducer
 * progress the ones in flight. */
static void grads_ready(void *ctx, int layer)
{
    Dist *d = ctx;
    if (d->broken)
        return;
    while (!d->broken && d->next < d->n_buckets && d->buckets[d->next].lo_layer >= layer)
        start_bucket(d);
    d->reducer->progress(d);
}

/* Collective.sum: sync_bn's batch sums. A timeout leaves buf as it is and marks the run
 * broken; dist_finish_step reports it. */
static void sum_doubles(void *ctx, double *buf, size_t n)
{
    Dist *d = ctx;
    if (d->broken)
        return;
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    wait_all(d, 1, &req, "a sync_bn reduction");
}

/* Splits the gradients of layers [train_from, n_layers) into buckets, the last layers first. */
static int plan_buckets(Dist *d, Error *e)
{
    const Net *net = d->net;
    size_t *end = calloc((size_t)net->n_layers + 1, sizeof *end); /* end[i]: after layer i-1 */
    d->buckets = calloc((size_t)net->n_layers, sizeof *d->buckets);
    d->reqs = malloc(((size_t)net->n_layers + 1) * sizeof *d->reqs);
    if (!end || !d->buckets || !d->reqs) {
        free(end);
        return error_set(e, CDL_ERUNTIME, "out of memory for the gradient buckets");
    }
    for (int i = 0; i < net->n_layers; i++) {
        end[i + 1] = end[i];
        for (int p = 0; p < net->layers[i].n_params; p++)
            if (net->layers[i].params[p].trainable)
                end[i + 1] += net->layers[i].params[p].count;
    }
    int hi = net->n_layers - 1;
    for (int i = hi; i >= net->train_from; i--) {
        const size_t count = end[hi + 1] - end[i];
        if (count >= DIST_BUCKET_FLOATS || (i == net->train_from && count > 0)) {
            d->buckets[d->n_buckets++] = (Bucket){i, end[i], count};
            hi = i - 1;
        }
    }
    for (int b = 0; b <= net->n_layers; b++)
        d->reqs[b] = MPI_REQUEST_NULL;
    free(end);
    return CDL_OK;
}

int dist_open(Dist **out, Net *net, double timeout_s, Error *e)
{
    *out = NULL;
    Dist *d = calloc(1, sizeof *d);
    if (!d)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    d->net = net;
    d->timeout_s = timeout_s;
    d->beat_s = timeout_s / 4 < 0.5 ? timeout_s / 4 : 0.5;
    d->send_req = MPI_REQUEST_NULL;
    d->reducer = &mpi_reducer;
    int st = plan_buckets(d, e);
#ifdef CDL_GPU
    if (!st && net->backend->kind == CDL_BACKEND_GPU) {
        st = device_allreduce_open(&d->device, &net->exec, world_rank, world_size, e);
        d->reducer = &device_reducer;
    }
#endif
    if (!st && world_rank == 0) {
        d->heard_s = calloc((size_t)world_size, sizeof *d->heard_s);
        d->recv_buf = calloc((size_t)world_size, sizeof *d->recv_buf);
        d->recv_reqs = calloc((size_t)world_size, sizeof *d->recv_reqs);
        if (!d->heard_s || !d->recv_buf || !d->recv_reqs)
            st = error_set(e, CDL_ERUNTIME, "out of memory");
        for (int r = 1; r < world_size && !st; r++) {
            d->heard_s[r] = time_now_s();
            MPI_Irecv(&d->recv_buf[r], 1, MPI_UINT64_T, r, DIST_TAG_STEPS, MPI_COMM_WORLD,
                      &d->recv_reqs[r]);
        }
    }
    if (st) {
        dist_close(d, net);
        return st;
    }
    d->collective = (Collective){sum_doubles, grads_ready, d};
    net->collective = &d->collective;
    net->sample_offset = world_rank * net->batch * net->split; /* the rank's first sample */
    *out = d;
    return CDL_OK;
}

void dist_close(Dist *d, Net *net)
{
    if (!d)
        return;
    net->collective = NULL;
    net->sample_offset = 0;
    if (!d->broken) {
        for (int r = 1; d->recv_reqs && r < world_size; r++) {
            MPI_Cancel(&d->recv_reqs[r]);
            MPI_Request_free(&d->recv_reqs[r]);
        }
        wait_all(d, 1, &d->send_req, "the last heartbeat");
    }
#ifdef CDL_GPU
    device_allreduce_close(d->device);
#endif
    free(d->buckets);
    free(d->reqs);
    free(d->heard_s);
    free(d->recv_buf);
    free(d->recv_reqs);
    free(d);
}

/* Starts the buckets not started yet (after the step's last backward); returns the time. */
static double start_remaining_buckets(Dist *d)
{
    while (!d->broken && d->next < d->n_buckets)
        start_bucket(d);
    const double backward_end_s = time_now_s();
    if (d->first_start_s)
        d->hidden_s += backward_end_s - d->first_start_s;
    d->first_start_s = 0;
    return backward_end_s;
}

/* Starts the sum of the rank's loss over the ranks, into d->loss (request d->reqs[n_buckets]). */
static void start_loss_sum(Dist *d, float loss)
{
    if (world_rank)
        beat(d);
    if (!d->broken) {
        d->loss = loss;
        MPI_Iallreduce(MPI_IN_PLACE, &d->loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                       &d->reqs[d->n_buckets]);
    }
}

int dist_finish_step(Dist *d, float *loss, Error *e)
{
    const double backward_end_s = start_remaining_buckets(d);
    start_loss_sum(d, *loss);
    int st = d->reducer->join(d);
    d->wait_s += time_now_s() - backward_end_s;
    d->next = 0;
    if (st) {
        error_set(e, d->fail.code, "%s", d->fail.msg);
        return st;
    }
    *loss = (float)d->loss;
    return CDL_OK;
}

int dist_queue_step(Dist *d, int captured, Error *e)
{
#ifdef CDL_GPU
    if (d->reducer == &device_reducer) {
        const double hidden_s = d->hidden_s; /* a capture's host time, not the sums' */
        start_remaining_buckets(d);
        if (captured)
            d->hidden_s = hidden_s;
        d->next = 0;
        if (!d->broken && device_allreduce_join(d->device, &d->fail))
            d->broken = 1;
        return d->broken ? error_set(e, d->fail.code, "%s", d->fail.msg) : CDL_OK;
    }
#else
    (void)d, (void)captured;
#endif
    return error_set(e, CDL_EUSAGE, "a step queued whole sums its gradients on a device");
}

int dist_sum_loss(Dist *d, float *loss, Error *e)
{
    const double start_s = time_now_s();
    start_loss_sum(d, *loss);
    const int st = wait_all(d, 1, &d->reqs[d->n_buckets], "the loss's sum");
    d->wait_s += time_now_s() - start_s;
    if (st)
        return error_set(e, d->fail.code, "%s", d->fail.msg);
    *loss = (float)d->loss;
    return CDL_OK;
}

int dist_any(Dist *d, int *flag, Error *e)
{
    MPI_Request req;
    if (!d->broken)
        MPI_Iallreduce(MPI_IN_PLACE, flag, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
    const int st = wait_all(d, 1, &req, "the ranks' agreement to stop");
    return st ? error_set(e, d->fail.code, "%s", d->fail.msg) : CDL_OK;
}

DistStats dist_take_stats(Dist *d)
{
    DistStats s = {d->wait_s, d->hidden_s};
    d->wait_s = d->hidden_s = 0;
    return s;
}

#else /* one process */

int dist_init(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    return CDL_OK;
}

int dist_rank(void)
{
    return 0;
}

int dist_size(void)
{
    return 1;
}

int dist_local_rank(int *local_size)
{
    *local_size = 1;
    return 0;
}

int dist_agree(int st, int *report)
{
    *report = st != 0;
    return st;
}

void dist_finalize(int status)
{
    (void)status;
}

int dist_open(Dist **out, Net *net, double timeout_s, Error *e)
{
    (void)net, (void)timeout_s;
    *out = NULL;
    return error_set(e, CDL_EUSAGE, "this cdl was built without MPI (make MPI=1)");
}

void dist_close(Dist *d, Net *net)
{
    (void)d, (void)net;
}

int dist_finish_step(Dist *d, float *loss, Error *e)
{
    (void)d, (void)loss, (void)e;
    return CDL_OK;
}

int dist_queue_step(Dist *d, int captured, Error *e)
{
    (void)d, (void)captured, (void)e;
    return CDL_OK;
}

int dist_sum_loss(Dist *d, float *loss, Error *e)
{
    (void)d, (void)loss, (void)e;
    return CDL_OK;
}

int dist_any(Dist *d, int *flag, Error *e)
{
    (void)d, (void)flag, (void)e;
    return CDL_OK;
}

DistStats dist_take_stats(Dist *d)
{
    (void)d;
    return (DistStats){0, 0};
}

#endif
