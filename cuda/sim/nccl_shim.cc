// The simulator's NCCL (make MPI=1 GPU=sim): the calls cuda/nccl_collective.c makes, with NCCL's
// own declarations (nccl.h), over MPI. Device memory is host memory here and a stream runs its
// work when it is queued, so a collective queued on a stream is MPI's, in place, at once (in the
// stream's order). A communicator is MPI_COMM_WORLD's ranks, ordered by the rank given to
// ncclCommInitRank. On a stream being captured into a CUDA graph the collective is recorded, as
// NCCL's kernels are, and runs (MPI's, with the arguments it was queued with) at each replay.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <cuda_runtime_api.h>
#include <limits.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

struct ncclComm {
    MPI_Comm comm;
    int rank, nranks;
};

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)
{
    if (!uniqueId)
        return ncclInvalidArgument;
    memset(uniqueId, 0, sizeof *uniqueId);
    snprintf(uniqueId->internal, sizeof uniqueId->internal, "cdl-sim-nccl %ld", (long)getpid());
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    int joined = 0, world = 0;
    MPI_Initialized(&joined);
    if (!comm)
        return ncclInvalidArgument;
    *comm = nullptr;
    if (!joined)
        return ncclInvalidUsage;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (nranks != world || rank < 0 || rank >= nranks)
        return ncclInvalidArgument;
    // Every rank must bring the same id (as NCCL's ranks must): rank 0's, compared everywhere.
    ncclUniqueId root = commId;
    MPI_Bcast(&root, (int)sizeof root, MPI_BYTE, 0, MPI_COMM_WORLD);
    int same = memcmp(&root, &commId, sizeof root) == 0;
    MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!same)
        return ncclInvalidArgument;
    ncclComm *c = new ncclComm{MPI_COMM_NULL, rank, nranks};
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &c->comm);
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return ncclInvalidArgument;
    MPI_Comm_free(&comm->comm);
    delete comm;
    return ncclSuccess;
}

static MPI_Datatype mpi_type(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
        return MPI_INT8_T;
    case ncclUint8:
        return MPI_UINT8_T;
    case ncclInt32:
        return MPI_INT32_T;
    case ncclUint32:
        return MPI_UINT32_T;
    case ncclInt64:
        return MPI_INT64_T;
    case ncclUint64:
        return MPI_UINT64_T;
    case ncclFloat32:
        return MPI_FLOAT;
    case ncclFloat64:
        return MPI_DOUBLE;
    default:
        return MPI_DATATYPE_NULL; // half, bf16, fp8: not simulated
    }
}

static MPI_Op mpi_op(ncclRedOp_t op)
{
    switch (op) {
    case ncclSum:
        return MPI_SUM;
    case ncclProd:
        return MPI_PROD;
    case ncclMax:
        return MPI_MAX;
    case ncclMin:
        return MPI_MIN;
    default:
        return MPI_OP_NULL; // ncclAvg and the ops of ncclRedOpCreatePreMulSum: not simulated
    }
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream)
{
    const MPI_Datatype type = mpi_type(datatype);
    const MPI_Op mop = mpi_op(op);
    if (!comm || type == MPI_DATATYPE_NULL || mop == MPI_OP_NULL || (count && !recvbuff))
        return ncclInvalidArgument;
    const MPI_Comm mpi_comm = comm->comm;
    // run now, or at each replay of the graph the stream is being captured into
    const cudaError_t err = cuda_sim::stream_submit(stream, [=]() {
        int size = 0;
        MPI_Type_size(type, &size);
        // MPI counts are ints: a larger buffer goes in pieces of INT_MAX elements.
        for (size_t at = 0; at < count; at += INT_MAX) {
            const int n = (int)(count - at < (size_t)INT_MAX ? count - at : (size_t)INT_MAX);
            char *recv = (char *)recvbuff + at * (size_t)size;
            const void *send =
                sendbuff == recvbuff ? MPI_IN_PLACE : (const char *)sendbuff + at * (size_t)size;
            if (MPI_Allreduce(send, recv, n, type, mop, mpi_comm) != MPI_SUCCESS)
                return cudaErrorUnknown;
        }
        return cudaSuccess;
    });
    return err == cudaSuccess                         ? ncclSuccess
           : err == cudaErrorStreamCaptureInvalidated ? ncclInvalidUsage
                                                      : ncclSystemError;
}

const char *ncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess:
        return "no error";
    case ncclSystemError:
        return "unhandled system error (the simulator's MPI call failed)";
    case ncclInvalidArgument:
        return "invalid argument";
    case ncclInvalidUsage:
        return "invalid usage";
    default:
        return "unhandled error";
    }
}
