/* The gradient allreduce of a net on a device, for train/dist.c: each bucket of the device's
 * gradient slab summed over the ranks by the device's own collective library, on a
 * communication stream beside the net's. A bucket's sum waits for the passes queued on the net's
 * stream before it; the passes queued after device_allreduce_join wait for every sum started.
 * Defined by cuda/nccl_collective.c (NCCL) in builds with MPI=1 and GPU=1 or GPU=sim (where
 * cuda/sim/nccl_shim.cc runs NCCL's calls over MPI). */
#ifndef CDL_DIST_DEVICE_H
#define CDL_DIST_DEVICE_H

#include <stddef.h>

#include "core/backend.h"
#include "util/error.h"

typedef struct DeviceAllreduce DeviceAllreduce;

/* Every rank of MPI_COMM_WORLD calls it (rank 0 makes the communicator's id and broadcasts it
 * over MPI): the communicator of ranks ranks, its stream and events, beside exec's stream. */
int device_allreduce_open(DeviceAllreduce **out, const ExecContext *exec, int rank, int ranks,
                          Error *e);
/* Queues the sum over the ranks of buf [count] (device memory), in place. */
int device_allreduce_start(DeviceAllreduce *r, float *buf, size_t count, Error *e);
/* The net's stream waits for the sums queued so far. */
int device_allreduce_join(DeviceAllreduce *r, Error *e);
/* Waits for the sums queued, then ends the communicator. Takes NULL. */
void device_allreduce_close(DeviceAllreduce *r);

#endif
