/* abi/profiler_shim.c: the exported profiler structs ncclProfiler_v4, _v5 and _v6 (the symbol names
 * NCCL dlsym()s), adapting each descriptor layout to the plugin's event pool. Coll and KernelCh events
 * are tracked, and (v5, v6) CollApi events tell the tuner half whether the call is being captured into
 * a CUDA graph; every other event gets a NULL handle, which NCCL then never passes back. */
#include "../plugin/registry.h"
#include "nccl_profiler_abi.h"

#define DCCL_EXPORT __attribute__((visibility("default")))
#define DCCL_PLUGIN_NAME "DynamICCL"

static ncclResult_t attach(void** context, uint64_t comm_id, int* activation_mask, int n_nodes, int n_ranks, int rank,
                           ncclDebugLogger_t logger, int abi_version) {
  int mask = 0;
  dccl_comm* comm = dccl_registry_attach_profiler(comm_id, rank, n_ranks, n_nodes, logger, abi_version, &mask);
  if (context != NULL) *context = comm;
  /* NCCL passes one process-wide mask to every communicator's init: add this one's events to it, never
   * take away those another communicator asked for. */
  if (activation_mask != NULL) *activation_mask |= mask;
  return ncclSuccess;
}

static ncclResult_t init_v4(void** context, int* activation_mask, const char* comm_name, uint64_t comm_hash, int n_nodes,
                            int n_ranks, int rank, ncclDebugLogger_t logger) {
  (void)comm_name;
  return attach(context, comm_hash, activation_mask, n_nodes, n_ranks, rank, logger, 4);
}
static ncclResult_t init_v5(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name, int n_nodes,
                            int n_ranks, int rank, ncclDebugLogger_t logger) {
  (void)comm_name;
  return attach(context, comm_id, activation_mask, n_nodes, n_ranks, rank, logger, 5);
}
static ncclResult_t init_v6(void** context, uint64_t comm_id, int* activation_mask, const char* comm_name, int n_nodes,
                            int n_ranks, int rank, ncclDebugLogger_t logger) {
  (void)comm_name;
  return attach(context, comm_id, activation_mask, n_nodes, n_ranks, rank, logger, 6);
}

static inline dccl_event_pool* pool_of(void* context) {
  dccl_comm* comm = context;
  return comm != NULL && comm->profiling ? &comm->events : NULL;
}

/* A CollApi event (v5, v6): NCCL enqueues a collective, on a stream being captured into a CUDA graph
 * or not; it decides the call (getCollInfo) when the group ends, after this event. The tuner half reads
 * the flag (plugin/tuner.c). A captured call's handle marks the Coll events of the graph's replays. */
static ncclResult_t start_coll_api(void* context, void** handle, bool graph_captured) {
  *handle = NULL;
  dccl_comm* comm = context;
  if (comm == NULL) return ncclSuccess;
  atomic_store_explicit(&comm->graph_capturing, graph_captured ? 1 : 0, memory_order_relaxed);
  dccl_event_pool* pool = pool_of(context);
  if (graph_captured && pool != NULL) *handle = dccl_event_graph_handle(pool);
  return ncclSuccess;
}

/* The v4, v5 and v6 descriptors share member names but not layout, hence one body per version.
 * `parent`: the descriptor's parentObj (v4 has none: its Coll events hang under Group events). */
#define START_EVENT_BODY(context, handle, descr, parent)                                           \
  do {                                                                                             \
    if (handle == NULL) return ncclSuccess;                                                        \
    *handle = NULL;                                                                                \
    dccl_event_pool* pool = pool_of(context);                                                      \
    if (pool == NULL || descr == NULL) return ncclSuccess;                                         \
    if (descr->type == ncclProfileColl) {                                                          \
      dccl_coll_event event = {descr->coll.seqNumber, descr->coll.func,      descr->coll.count,    \
                               descr->coll.datatype,  descr->coll.nChannels, descr->coll.algo,     \
                               descr->coll.proto,                                                  \
                               (parent) != NULL && (parent) == dccl_event_graph_handle(pool)};     \
      *handle = dccl_event_coll_start(pool, &event);                                               \
    } else if (descr->type == ncclProfileKernelCh) {                                               \
      *handle = dccl_event_channel_start(pool, descr->parentObj, descr->kernelCh.pTimer);          \
    } else if (descr->type == ncclProfileP2p) {                                                    \
      dccl_event_other_call(pool);                                                                 \
    }                                                                                              \
    return ncclSuccess;                                                                            \
  } while (0)

static ncclResult_t start_event_v4(void* context, void** handle, ncclProfilerEventDescr_v4_t* descr) {
  START_EVENT_BODY(context, handle, descr, (void*)NULL);
}
static ncclResult_t start_event_v5(void* context, void** handle, ncclProfilerEventDescr_v5_t* descr) {
  if (handle != NULL && descr != NULL && descr->type == ncclProfileCollApi)
    return start_coll_api(context, handle, descr->collApi.graphCaptured);
  START_EVENT_BODY(context, handle, descr, descr->parentObj);
}
static ncclResult_t start_event_v6(void* context, void** handle, ncclProfilerEventDescr_v6_t* descr) {
  if (handle != NULL && descr != NULL && descr->type == ncclProfileCollApi)
    return start_coll_api(context, handle, descr->collApi.graphCaptured);
  START_EVENT_BODY(context, handle, descr, descr->parentObj);
}

static ncclResult_t stop_event(void* handle) {
  if (handle != NULL) dccl_event_stop(handle);
  return ncclSuccess;
}

static ncclResult_t record_event_state(void* handle, ncclProfilerEventState_t state,
                                       ncclProfilerEventStateArgs_v4_t* args) {
  if (handle != NULL && args != NULL && state == NCCL_PROFILER_KERNEL_CH_STOP)
    dccl_event_channel_stop_time(handle, args->kernelCh.pTimer);
  return ncclSuccess;
}

static ncclResult_t finalize(void* context) {
  dccl_registry_detach(context, DCCL_HALF_PROFILER);
  return ncclSuccess;
}

DCCL_EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {DCCL_PLUGIN_NAME, init_v4,            start_event_v4, stop_event,
                                                       record_event_state, finalize};
DCCL_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {DCCL_PLUGIN_NAME, init_v5,            start_event_v5, stop_event,
                                                       record_event_state, finalize};
DCCL_EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {DCCL_PLUGIN_NAME, init_v6,            start_event_v6, stop_event,
                                                       record_event_state, finalize};
