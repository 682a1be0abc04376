/* bench/gpu/mock/mock_nccl.h: the part of NCCL's API that collbench calls, declared from NCCL's public
 * API documentation for the mock NCCL (mock_nccl.c). ncclResult_t comes from the plugin ABI's own
 * declaration (abi/nccl_abi.h); sizes and values match the real library: collbench is compiled against
 * the real nccl.h. */
#ifndef DYNAMICCL_MOCK_NCCL_H
#define DYNAMICCL_MOCK_NCCL_H

#include <stddef.h>

#include "../../../abi/nccl_abi.h"
#include "mock_cuda.h"

#define MOCK_NCCL_VERSION_CODE 22809 /* 2.28.9: tuner ABI v5, profiler ABI v5 */
#define MOCK_NCCL_RELEASE "2.28"

typedef struct ncclComm* ncclComm_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8
} ncclDataType_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;

ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int n_ranks, ncclUniqueId comm_id, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
const char* ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclAllReduce(const void* send, void* receive, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* send, void* receive, size_t send_count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* send, void* receive, size_t receive_count, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

#endif
