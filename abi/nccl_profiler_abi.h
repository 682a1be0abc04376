/* abi/nccl_profiler_abi.h: NCCL's profiler plugin ABI, versions v4 to v6, declared from the ABI.
 *
 * NCCL dlsym()s "ncclProfiler_v6", then "_v5", "_v4" (older NCCL starts lower). Kernel-channel
 * events carry GPU globaltimer stamps (pTimer, ns) from v4 (NCCL 2.27). For one collective NCCL
 * emits Coll start and stop on the host right after enqueueing it, then, on its proxy thread, for
 * every channel: KernelCh start (pTimer = GPU start, parentObj = the Coll handle), a
 * recordEventState(KernelChStop) carrying the GPU end stamp, and KernelCh stop. */
#ifndef DYNAMICCL_ABI_NCCL_PROFILER_ABI_H
#define DYNAMICCL_ABI_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <sys/types.h>

#include "nccl_abi.h"

/* Event type bits, used both in descriptors and in the activation mask set at init. */
enum {
  ncclProfileGroup = (1 << 0),
  ncclProfileColl = (1 << 1),
  ncclProfileP2p = (1 << 2),
  ncclProfileProxyOp = (1 << 3),
  ncclProfileProxyStep = (1 << 4),
  ncclProfileProxyCtrl = (1 << 5),
  ncclProfileKernelCh = (1 << 6),
  ncclProfileNetPlugin = (1 << 7),
  ncclProfileGroupApi = (1 << 8),
  ncclProfileCollApi = (1 << 9),
  ncclProfileP2pApi = (1 << 10),
  ncclProfileKernelLaunch = (1 << 11),
  ncclProfileCeColl = (1 << 12),
  ncclProfileCeSync = (1 << 13),
  ncclProfileCeBatch = (1 << 14)
};

/* Event states (an int-sized enum in the ABI); only the kernel-channel stop matters to us. */
typedef int ncclProfilerEventState_t;
#define NCCL_PROFILER_KERNEL_CH_STOP 22

/* ---- v4 (NCCL 2.27) ---- */
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

/* State arguments; identical layout in v4, v5 and v6. */
typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncclProfilerEventStateArgs_v4_t;
typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v5_t;
typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v4_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v4_t;

/* ---- v5 (NCCL 2.28): 64-bit type, API events, parentGroup kept for v4 compatibility ---- */
#define NCCL_PROFILER_V5_COMMON_MEMBERS \
  struct {                              \
    bool graphCaptured;                 \
    int groupDepth;                     \
  } groupApi;                           \
  struct {                              \
    const char* func;                   \
    size_t count;                       \
    const char* datatype;               \
    int root;                           \
    void* stream;                       \
    bool graphCaptured;                 \
  } collApi;                            \
  struct {                              \
    const char* func;                   \
    size_t count;                       \
    const char* datatype;               \
    void* stream;                       \
    bool graphCaptured;                 \
  } p2pApi;                             \
  struct {                              \
    void* stream;                       \
  } kernelLaunch;                       \
  struct {                              \
    uint64_t seqNumber;                 \
    const char* func;                   \
    void const* sendBuff;               \
    void* recvBuff;                     \
    size_t count;                       \
    int root;                           \
    const char* datatype;               \
    uint8_t nChannels;                  \
    uint8_t nWarps;                     \
    const char* algo;                   \
    const char* proto;                  \
    void* parentGroup;                  \
  } coll;                               \
  struct {                              \
    const char* func;                   \
    void* buff;                         \
    const char* datatype;               \
    size_t count;                       \
    int peer;                           \
    uint8_t nChannels;                  \
    void* parentGroup;                  \
  } p2p;                                \
  struct {                              \
    pid_t pid;                          \
    uint8_t channelId;                  \
    int peer;                           \
    int nSteps;                         \
    int chunkSize;                      \
    int isSend;                         \
  } proxyOp;                            \
  struct {                              \
    int step;                           \
  } proxyStep;                          \
  struct {                              \
    uint8_t channelId;                  \
    uint64_t pTimer;                    \
  } kernelCh;                           \
  struct {                              \
    int64_t id;                         \
    void* data;                         \
  } netPlugin;

typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    NCCL_PROFILER_V5_COMMON_MEMBERS
  };
} ncclProfilerEventDescr_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

/* ---- v6 (NCCL 2.29): v5 plus copy-engine collective events ---- */
typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    NCCL_PROFILER_V5_COMMON_MEMBERS
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v6_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v6_t;

#endif
