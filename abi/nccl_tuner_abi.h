/* abi/nccl_tuner_abi.h: NCCL's tuner plugin ABI, versions v2 to v6, declared from the ABI.
 *
 * NCCL dlsym()s "ncclTunerPlugin_v6" first and falls back version by version to "_v2".
 *   v2 (NCCL 2.21): getCollInfo returns algorithm/protocol/channels directly, no cost table.
 *   v3 (2.22): getCollInfo edits NCCL's cost table float[numAlgo][numProto] (passed as float**,
 *              but it is one contiguous array: entry (a,p) is at ((float*)table)[a*numProto+p]).
 *   v4 (2.24): adds regBuff.  v5 (2.28): init gets commId, NVLink-domain info and the cost-model
 *   constants (in/out); destroy becomes finalize.  v6 (2.30): optional getChunkSize. */
#ifndef DYNAMICCL_ABI_NCCL_TUNER_ABI_H
#define DYNAMICCL_ABI_NCCL_TUNER_ABI_H

#include "nccl_abi.h"

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                              int nvlsSupport, int numPipeOps, int* algorithm, int* protocol, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v2_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v3_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

/* NVLink-domain summary passed to v5+ init. */
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

#define NCCL_ABI_NUM_HW_LINKS 3      /* NVLink, PCI, NET */
#define NCCL_ABI_NUM_COMPCAPS 4      /* Volta, Ampere, Hopper, Blackwell */
#define NCCL_ABI_NUM_TUNING_SCALES 3 /* 1 node, 2 nodes, more */

/* NCCL's cost-model constants (v5+ init, in/out: a tuner may rewrite them). */
typedef struct {
  double baseLatencies[NCCL_ABI_NUM_ALGORITHMS][NCCL_ABI_NUM_PROTOCOLS];
  double hwLatencies[NCCL_ABI_NUM_HW_LINKS][NCCL_ABI_NUM_ALGORITHMS][NCCL_ABI_NUM_PROTOCOLS];
  double llMaxBws[NCCL_ABI_NUM_COMPCAPS][NCCL_ABI_NUM_TUNING_SCALES];
  double perChMaxRingLL128Bws[NCCL_ABI_NUM_COMPCAPS][NCCL_ABI_NUM_TUNING_SCALES];
  double perChMaxTreeLL128Bws[NCCL_ABI_NUM_COMPCAPS][NCCL_ABI_NUM_TUNING_SCALES];
  double perChMaxTreeBws[NCCL_ABI_NUM_COMPCAPS][NCCL_ABI_NUM_TUNING_SCALES];
  double perChMaxNVLSTreeBws[NCCL_ABI_NUM_COMPCAPS][NCCL_ABI_NUM_TUNING_SCALES];
} ncclTunerConstants_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* context);
  /* Optional. chunkSize holds NCCL's value on entry; NCCL clamps the result to its buffer maximum. */
  ncclResult_t (*getChunkSize)(void* context, ncclFunc_t collType, size_t nBytes, int algo, int proto,
                               int nChannels, size_t* chunkSize);
} ncclTuner_v6_t;

#endif
