/* emu/nccl_calls.c: version-by-version calls into a loaded plugin, as NCCL makes them. */
#include "nccl_calls.h"

#include <string.h>

#include "../abi/nccl_profiler_abi.h"
#include "../abi/nccl_tuner_abi.h"
#include "../core/types.h"

const char* dccl_emu_nccl_func_name(int coll) {
  static const char* const names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
  return coll >= 0 && coll < 5 ? names[coll] : "Unknown";
}
const char* dccl_emu_nccl_algo_name(int algo) {
  static const char* const names[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  return algo >= 0 && algo < 7 ? names[algo] : "Unknown";
}
const char* dccl_emu_nccl_proto_name(int proto) {
  static const char* const names[] = {"LL", "LL128", "SIMPLE"};
  return proto >= 0 && proto < 3 ? names[proto] : "Unknown";
}

int dccl_emu_tuner_init(const dccl_loaded_plugin* p, void** context, uint64_t comm_id, int n_ranks, int n_nodes,
                        ncclDebugLogger_t logger) {
  *context = NULL;
  switch (p->tuner_version) {
  case 2: return ((const ncclTuner_v2_t*)p->tuner)->init((size_t)n_ranks, (size_t)n_nodes, logger, context);
  case 3: return ((const ncclTuner_v3_t*)p->tuner)->init((size_t)n_ranks, (size_t)n_nodes, logger, context);
  case 4: return ((const ncclTuner_v4_t*)p->tuner)->init((size_t)n_ranks, (size_t)n_nodes, logger, context);
  case 5:
  case 6: {
    /* NCCL passes its NVLink-domain summary and the default constants (in/out). */
    ncclNvlDomainInfo_v5_t domains = {1, n_ranks / (n_nodes > 0 ? n_nodes : 1), n_ranks / (n_nodes > 0 ? n_nodes : 1)};
    ncclTunerConstants_v5_t constants;
    memset(&constants, 0, sizeof(constants));
    if (p->tuner_version == 5)
      return ((const ncclTuner_v5_t*)p->tuner)
        ->init(context, comm_id, (size_t)n_ranks, (size_t)n_nodes, logger, &domains, &constants);
    return ((const ncclTuner_v6_t*)p->tuner)->init(context, comm_id, (size_t)n_ranks, (size_t)n_nodes, logger, &domains,
                                                   &constants);
  }
  default: return 0;
  }
}

void dccl_emu_tuner_get_coll_info(const dccl_loaded_plugin* p, void* context, int coll, size_t bytes, int num_pipe_ops,
                                  int reg_buff, float* cost, int* n_channels) {
  ncclFunc_t func = (ncclFunc_t)coll;
  switch (p->tuner_version) {
  case 2: {
    float (*table)[3] = (float (*)[3])cost;
    int nvls = table[DCCL_ALGO_NVLS][DCCL_PROTO_SIMPLE] != -1.0f || table[DCCL_ALGO_NVLS_TREE][DCCL_PROTO_SIMPLE] != -1.0f;
    int collnet = table[DCCL_ALGO_COLLNET_CHAIN][DCCL_PROTO_SIMPLE] != -1.0f;
    int algo = -1, proto = -1;
    ((const ncclTuner_v2_t*)p->tuner)->getCollInfo(context, func, bytes, collnet, nvls, num_pipe_ops, &algo, &proto,
                                                   n_channels);
    if (algo >= 0 && algo < 7 && proto >= 0 && proto < 3 && table[algo][proto] != -1.0f) table[algo][proto] = 0.0f;
    break;
  }
  case 3:
    ((const ncclTuner_v3_t*)p->tuner)->getCollInfo(context, func, bytes, num_pipe_ops, (float**)cost, 7, 3, n_channels);
    break;
  case 4:
    ((const ncclTuner_v4_t*)p->tuner)
      ->getCollInfo(context, func, bytes, num_pipe_ops, (float**)cost, 7, 3, reg_buff, n_channels);
    break;
  case 5:
    ((const ncclTuner_v5_t*)p->tuner)
      ->getCollInfo(context, func, bytes, num_pipe_ops, (float**)cost, 7, 3, reg_buff, n_channels);
    break;
  case 6:
    ((const ncclTuner_v6_t*)p->tuner)
      ->getCollInfo(context, func, bytes, num_pipe_ops, (float**)cost, 7, 3, reg_buff, n_channels);
    break;
  default: break;
  }
}

int dccl_emu_tuner_chunk_size(const dccl_loaded_plugin* p, void* context, int coll, size_t bytes, int algo, int proto,
                              int channels, size_t* chunk) {
  if (p->tuner_version != 6) return 0;
  const ncclTuner_v6_t* t = p->tuner;
  if (t->getChunkSize == NULL) return 0;
  t->getChunkSize(context, (ncclFunc_t)coll, bytes, algo, proto, channels, chunk);
  return 1;
}

void dccl_emu_tuner_finalize(const dccl_loaded_plugin* p, void* context) {
  switch (p->tuner_version) {
  case 2: ((const ncclTuner_v2_t*)p->tuner)->destroy(context); break;
  case 3: ((const ncclTuner_v3_t*)p->tuner)->destroy(context); break;
  case 4: ((const ncclTuner_v4_t*)p->tuner)->destroy(context); break;
  case 5: ((const ncclTuner_v5_t*)p->tuner)->finalize(context); break;
  case 6: ((const ncclTuner_v6_t*)p->tuner)->finalize(context); break;
  default: break;
  }
}

int dccl_emu_profiler_init(const dccl_loaded_plugin* p, void** context, uint64_t comm_id, int* mask, int n_nodes,
                           int n_ranks, int rank, ncclDebugLogger_t logger) {
  *context = NULL;
  *mask = 0;
  switch (p->profiler_version) {
  case 4:
    return ((const ncclProfiler_v4_t*)p->profiler)->init(context, mask, "emulated", comm_id, n_nodes, n_ranks, rank, logger);
  case 5:
    return ((const ncclProfiler_v5_t*)p->profiler)->init(context, comm_id, mask, "emulated", n_nodes, n_ranks, rank, logger);
  case 6:
    return ((const ncclProfiler_v6_t*)p->profiler)->init(context, comm_id, mask, "emulated", n_nodes, n_ranks, rank, logger);
  default: return 0;
  }
}

#define FILL_COLL(d)                                         \
  do {                                                       \
    (d).type = ncclProfileColl;                              \
    (d).parentObj = parent;                                  \
    (d).rank = rank;                                         \
    (d).coll.seqNumber = seq;                                \
    (d).coll.func = dccl_emu_nccl_func_name(coll);           \
    (d).coll.count = count;                                  \
    (d).coll.datatype = datatype;                            \
    (d).coll.nChannels = (uint8_t)channels;                  \
    (d).coll.nWarps = 16;                                    \
    (d).coll.algo = dccl_emu_nccl_algo_name(algo);           \
    (d).coll.proto = dccl_emu_nccl_proto_name(proto);        \
  } while (0)

void* dccl_emu_profiler_coll_start(const dccl_loaded_plugin* p, void* context, int rank, void* parent, uint64_t seq,
                                   int coll, size_t count, const char* datatype, int channels, int algo, int proto) {
  void* handle = NULL;
  switch (p->profiler_version) {
  case 4: {
    ncclProfilerEventDescr_v4_t d;
    memset(&d, 0, sizeof(d));
    FILL_COLL(d);
    d.parentObj = NULL; /* v4 has no API events: its Coll events hang under the Group event */
    ((const ncclProfiler_v4_t*)p->profiler)->startEvent(context, &handle, &d);
    break;
  }
  case 5: {
    ncclProfilerEventDescr_v5_t d;
    memset(&d, 0, sizeof(d));
    FILL_COLL(d);
    ((const ncclProfiler_v5_t*)p->profiler)->startEvent(context, &handle, &d);
    break;
  }
  case 6: {
    ncclProfilerEventDescr_v6_t d;
    memset(&d, 0, sizeof(d));
    FILL_COLL(d);
    ((const ncclProfiler_v6_t*)p->profiler)->startEvent(context, &handle, &d);
    break;
  }
  default: break;
  }
  return handle;
}

/* NCCL 2.28+ (profiler v5, v6): collTaskAppend's CollApi event, parent of the call's Coll event. */
#define FILL_COLL_API(d)                                 \
  do {                                                   \
    (d).type = ncclProfileCollApi;                       \
    (d).rank = rank;                                     \
    (d).collApi.func = dccl_emu_nccl_func_name(coll);    \
    (d).collApi.count = count;                           \
    (d).collApi.datatype = datatype;                     \
    (d).collApi.root = 0;                                \
    (d).collApi.stream = (void*)0x5742;                  \
    (d).collApi.graphCaptured = graph_captured != 0;     \
  } while (0)

void* dccl_emu_profiler_coll_api_start(const dccl_loaded_plugin* p, void* context, int rank, int coll, size_t count,
                                       const char* datatype, int graph_captured) {
  void* handle = NULL;
  switch (p->profiler_version) {
  case 5: {
    ncclProfilerEventDescr_v5_t d;
    memset(&d, 0, sizeof(d));
    FILL_COLL_API(d);
    ((const ncclProfiler_v5_t*)p->profiler)->startEvent(context, &handle, &d);
    break;
  }
  case 6: {
    ncclProfilerEventDescr_v6_t d;
    memset(&d, 0, sizeof(d));
    FILL_COLL_API(d);
    ((const ncclProfiler_v6_t*)p->profiler)->startEvent(context, &handle, &d);
    break;
  }
  default: break;
  }
  return handle;
}

#define FILL_CHANNEL(d)                      \
  do {                                       \
    (d).type = ncclProfileKernelCh;          \
    (d).parentObj = parent;                  \
    (d).rank = rank;                         \
    (d).kernelCh.channelId = (uint8_t)channel; \
    (d).kernelCh.pTimer = gpu_start_ns;      \
  } while (0)

void* dccl_emu_profiler_channel_start(const dccl_loaded_plugin* p, void* context, int rank, void* parent, int channel,
                                      uint64_t gpu_start_ns) {
  void* handle = NULL;
  switch (p->profiler_version) {
  case 4: {
    ncclProfilerEventDescr_v4_t d;
    memset(&d, 0, sizeof(d));
    FILL_CHANNEL(d);
    ((const ncclProfiler_v4_t*)p->profiler)->startEvent(context, &handle, &d);
    break;
  }
  case 5: {
    ncclProfilerEventDescr_v5_t d;
    memset(&d, 0, sizeof(d));
    FILL_CHANNEL(d);
    ((const ncclProfiler_v5_t*)p->profiler)->startEvent(context, &handle, &d);
    break;
  }
  case 6: {
    ncclProfilerEventDescr_v6_t d;
    memset(&d, 0, sizeof(d));
    FILL_CHANNEL(d);
    ((const ncclProfiler_v6_t*)p->profiler)->startEvent(context, &handle, &d);
    break;
  }
  default: break;
  }
  return handle;
}

void dccl_emu_profiler_channel_stop(const dccl_loaded_plugin* p, void* handle, uint64_t gpu_stop_ns) {
  if (handle == NULL) return;
  ncclProfilerEventStateArgs_v4_t args;
  memset(&args, 0, sizeof(args));
  args.kernelCh.pTimer = gpu_stop_ns;
  switch (p->profiler_version) {
  case 4:
    ((const ncclProfiler_v4_t*)p->profiler)->recordEventState(handle, NCCL_PROFILER_KERNEL_CH_STOP, &args);
    ((const ncclProfiler_v4_t*)p->profiler)->stopEvent(handle);
    break;
  case 5:
    ((const ncclProfiler_v5_t*)p->profiler)->recordEventState(handle, NCCL_PROFILER_KERNEL_CH_STOP, &args);
    ((const ncclProfiler_v5_t*)p->profiler)->stopEvent(handle);
    break;
  case 6:
    ((const ncclProfiler_v6_t*)p->profiler)->recordEventState(handle, NCCL_PROFILER_KERNEL_CH_STOP, &args);
    ((const ncclProfiler_v6_t*)p->profiler)->stopEvent(handle);
    break;
  default: break;
  }
}

void dccl_emu_profiler_stop(const dccl_loaded_plugin* p, void* handle) {
  if (handle == NULL) return;
  switch (p->profiler_version) {
  case 4: ((const ncclProfiler_v4_t*)p->profiler)->stopEvent(handle); break;
  case 5: ((const ncclProfiler_v5_t*)p->profiler)->stopEvent(handle); break;
  case 6: ((const ncclProfiler_v6_t*)p->profiler)->stopEvent(handle); break;
  default: break;
  }
}

void dccl_emu_profiler_finalize(const dccl_loaded_plugin* p, void* context) {
  switch (p->profiler_version) {
  case 4: ((const ncclProfiler_v4_t*)p->profiler)->finalize(context); break;
  case 5: ((const ncclProfiler_v5_t*)p->profiler)->finalize(context); break;
  case 6: ((const ncclProfiler_v6_t*)p->profiler)->finalize(context); break;
  default: break;
  }
}
