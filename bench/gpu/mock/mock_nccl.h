/* bench/gpu/mock/mock_nccl.h: the part of NCCL's API that collbench calls, declared from NCCL's public
 * API documentation for the mock NCCL (mock_nccl.c). ncclResult_t comes from the plugin ABI's own
 * declaration (abi/nccl_abi.h); sizes and values match the real library: collbench is compiled against
 * the real nccl.h. */
#ifndef DYNAMICCL_MOCK_NCCL_H
#define DYNAMICCL_MOCK_NCCL_H

#include <stddef.h>

#include "../../../abi/nccl_abi.h"
#include "mock_cuda.h"

/* The release the mock stands for: 2.28.9 (tuner and profiler ABI v5), or 2.30.7 (v6, and
 * NCCL_MULTI_RANK_GPU_ENABLE) where DYNAMICCL_MOCK_NCCL=2.30. As in NCCL, ranks sharing a host (and so
 * GPU 0) are refused unless the release is 2.30 and NCCL_MULTI_RANK_GPU_ENABLE=1. */
int mock_nccl_version_code(void);
const char* mock_nccl_release(void);

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
