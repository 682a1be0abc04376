/* abi/nccl_abi.h: the NCCL types every plugin ABI uses (result codes, collectives, logger),
 * declared here from NCCL's published plugin ABI so the plugin builds without NCCL headers. */
#ifndef DYNAMICCL_ABI_NCCL_ABI_H
#define DYNAMICCL_ABI_NCCL_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Result codes (ncclResult_t). Plugins return ncclSuccess unless init/finalize fail. */
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7
} ncclResult_t;

/* Collective kinds (ncclFunc_t). Only the first five are tuned through getCollInfo. */
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7
} ncclFunc_t;

/* Logger levels and subsystem flags NCCL's logger understands. */
typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

#define NCCL_INIT 0x1UL
#define NCCL_TUNING 0x40UL
#define NCCL_ENV 0x80UL
#define NCCL_PROFILE 0x4000UL

/* The printf-like logger NCCL hands to plugins at init; it filters by level and subsystem. */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

/* Index spaces of NCCL's cost table: float[numAlgo][numProto], contiguous rows. */
#define NCCL_ABI_NUM_ALGORITHMS 7
#define NCCL_ABI_NUM_PROTOCOLS 3
#define NCCL_ABI_ALGO_PROTO_IGNORE (-1.0f)

#endif
