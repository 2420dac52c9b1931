/* The gradient allreduce of a GPU net across ranks (train/dist_device.h) over NCCL: the
 * communicator's id made on rank 0 and broadcast over MPI, each bucket's ncclAllReduce (float
 * sum, in place) on a communication stream that waits for an event recorded on the net's stream,
 * and the net's stream waiting for an event recorded after the sums. Only with MPI=1: the file
 * is empty in a GPU build without it. Under GPU=sim, cuda/sim/nccl_shim.cc runs the same NCCL
 * calls over MPI. */
#ifdef CDL_MPI
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>
#include <stdlib.h>

#include "train/dist_device.h"

struct DeviceAllreduce {
    ncclComm_t comm;
    cudaStream_t compute; /* the net's stream */
    cudaStream_t stream;  /* the sums' */
    cudaEvent_t queued;   /* recorded on compute before a bucket */
    cudaEvent_t reduced;  /* recorded on stream after the sums */
};

static int nccl_failed(Error *e, const char *what, ncclResult_t r)
{
    return error_set(e, CDL_ERUNTIME, "%s: %s", what, ncclGetErrorString(r));
}

static int cuda_failed(Error *e, const char *what, cudaError_t err)
{
    return error_set(e, CDL_ERUNTIME, "%s: %s", what, cudaGetErrorString(err));
}

int device_allreduce_open(DeviceAllreduce **out, const ExecContext *exec, int rank, int ranks,
                          Error *e)
{
    *out = NULL;
    DeviceAllreduce *r = calloc(1, sizeof *r);
    if (!r)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    r->compute = (cudaStream_t)exec->stream;
    /* Rank 0's id, and whether it has one: every rank learns both, so that none waits in
     * ncclCommInitRank for a rank 0 that failed. */
    struct {
        int ok;
        ncclUniqueId id;
    } root = {1, {{0}}};
    ncclResult_t nr = ncclSuccess;
    if (rank == 0 && (nr = ncclGetUniqueId(&root.id)) != ncclSuccess)
        root.ok = 0;
    MPI_Bcast(&root, (int)sizeof root, MPI_BYTE, 0, MPI_COMM_WORLD);
    int st = CDL_OK;
    cudaError_t err;
    if (!root.ok)
        st = rank == 0 ? nccl_failed(e, "ncclGetUniqueId", nr)
                       : error_set(e, CDL_ERUNTIME, "rank 0 could not make NCCL's id");
    else if ((nr = ncclCommInitRank(&r->comm, ranks, root.id, rank)) != ncclSuccess)
        st = nccl_failed(e, "ncclCommInitRank", nr);
    else if ((err = cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking)) != cudaSuccess)
        st = cuda_failed(e, "cudaStreamCreate (allreduce)", err);
    else if ((err = cudaEventCreateWithFlags(&r->queued, cudaEventDisableTiming)) != cudaSuccess ||
             (err = cudaEventCreateWithFlags(&r->reduced, cudaEventDisableTiming)) != cudaSuccess)
        st = cuda_failed(e, "cudaEventCreate (allreduce)", err);
    if (st) {
        device_allreduce_close(r);
        return st;
    }
    *out = r;
    return CDL_OK;
}

int device_allreduce_start(DeviceAllreduce *r, float *buf, size_t count, Error *e)
{
    cudaError_t err;
    if ((err = cudaEventRecord(r->queued, r->compute)) != cudaSuccess ||
        (err = cudaStreamWaitEvent(r->stream, r->queued, 0)) != cudaSuccess)
        return cuda_failed(e, "the allreduce's wait for backward", err);
    const ncclResult_t nr =
        ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, r->comm, r->stream);
    return nr == ncclSuccess ? CDL_OK : nccl_failed(e, "ncclAllReduce", nr);
}

int device_allreduce_join(DeviceAllreduce *r, Error *e)
{
    cudaError_t err;
    if ((err = cudaEventRecord(r->reduced, r->stream)) != cudaSuccess ||
        (err = cudaStreamWaitEvent(r->compute, r->reduced, 0)) != cudaSuccess)
        return cuda_failed(e, "the net's wait for the allreduce", err);
    return CDL_OK;
}

void device_allreduce_close(DeviceAllreduce *r)
{
    if (!r)
        return;
    if (r->stream)
        cudaStreamSynchronize(r->stream);
    if (r->comm)
        ncclCommDestroy(r->comm);
    if (r->queued)
        cudaEventDestroy(r->queued);
    if (r->reduced)
        cudaEventDestroy(r->reduced);
    if (r->stream)
        cudaStreamDestroy(r->stream);
    free(r);
}

#endif
