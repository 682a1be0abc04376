/* abi/tuner_shim.c: the exported tuner structs ncclTunerPlugin_v2 ... _v6, adapting each ABI
 * version to the plugin's version-neutral tuner logic. Init never fails a communicator: without a
 * context every call leaves NCCL's choice untouched. */
#include "../plugin/registry.h"
#include "../plugin/tuner.h"
#include "nccl_tuner_abi.h"

#define DCCL_EXPORT __attribute__((visibility("default")))
#define DCCL_PLUGIN_NAME "DynamICCL"

static ncclResult_t attach(void** context, int comm_id_known, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
                           ncclDebugLogger_t logger, int abi_version) {
  if (context == NULL) return ncclSuccess;
  *context = dccl_registry_attach_tuner(comm_id_known, comm_id, (int)n_ranks, (int)n_nodes, logger, abi_version);
  return ncclSuccess;
}

static ncclResult_t init_v2(size_t n_ranks, size_t n_nodes, ncclDebugLogger_t logger, void** context) {
  return attach(context, 0, 0, n_ranks, n_nodes, logger, 2);
}
static ncclResult_t init_v3(size_t n_ranks, size_t n_nodes, ncclDebugLogger_t logger, void** context) {
  return attach(context, 0, 0, n_ranks, n_nodes, logger, 3);
}
static ncclResult_t init_v4(size_t n_ranks, size_t n_nodes, ncclDebugLogger_t logger, void** context) {
  return attach(context, 0, 0, n_ranks, n_nodes, logger, 4);
}
static ncclResult_t init_v5(void** context, uint64_t comm_id, size_t n_ranks, size_t n_nodes, ncclDebugLogger_t logger,
                            ncclNvlDomainInfo_v5_t* nvl_domains, ncclTunerConstants_v5_t* constants) {
  (void)nvl_domains;
  (void)constants; /* NCCL's cost-model constants are left as NCCL set them */
  return attach(context, 1, comm_id, n_ranks, n_nodes, logger, 5);
}
static ncclResult_t init_v6(void** context, uint64_t comm_id, size_t n_ranks, size_t n_nodes, ncclDebugLogger_t logger,
                            ncclNvlDomainInfo_v5_t* nvl_domains, ncclTunerConstants_v5_t* constants) {
  (void)nvl_domains;
  (void)constants;
  return attach(context, 1, comm_id, n_ranks, n_nodes, logger, 6);
}

static ncclResult_t get_coll_info_v2(void* context, ncclFunc_t coll, size_t bytes, int collnet_support,
                                     int nvls_support, int num_pipe_ops, int* algorithm, int* protocol,
                                     int* n_channels) {
  if (context != NULL)
    dccl_tuner_decide_v2(context, (int)coll, bytes, collnet_support, nvls_support, num_pipe_ops, algorithm, protocol,
                         n_channels);
  return ncclSuccess;
}
static ncclResult_t get_coll_info_v3(void* context, ncclFunc_t coll, size_t bytes, int num_pipe_ops, float** cost,
                                     int num_algo, int num_proto, int* n_channels) {
  if (context != NULL)
    dccl_tuner_decide(context, (int)coll, bytes, num_pipe_ops, (float*)cost, num_algo, num_proto, 0, n_channels);
  return ncclSuccess;
}
static ncclResult_t get_coll_info(void* context, ncclFunc_t coll, size_t bytes, int num_pipe_ops, float** cost,
                                  int num_algo, int num_proto, int reg_buff, int* n_channels) {
  if (context != NULL)
    dccl_tuner_decide(context, (int)coll, bytes, num_pipe_ops, (float*)cost, num_algo, num_proto, reg_buff, n_channels);
  return ncclSuccess;
}
static ncclResult_t get_chunk_size(void* context, ncclFunc_t coll, size_t bytes, int algo, int proto, int n_channels,
                                   size_t* chunk_size) {
  (void)bytes;
  (void)n_channels;
  if (context != NULL) dccl_tuner_chunk_size(context, (int)coll, algo, proto, chunk_size);
  return ncclSuccess;
}

static ncclResult_t finalize(void* context) {
  dccl_registry_detach(context, DCCL_HALF_TUNER);
  return ncclSuccess;
}

DCCL_EXPORT const ncclTuner_v2_t ncclTunerPlugin_v2 = {DCCL_PLUGIN_NAME, init_v2, get_coll_info_v2, finalize};
DCCL_EXPORT const ncclTuner_v3_t ncclTunerPlugin_v3 = {DCCL_PLUGIN_NAME, init_v3, get_coll_info_v3, finalize};
DCCL_EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4 = {DCCL_PLUGIN_NAME, init_v4, get_coll_info, finalize};
DCCL_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {DCCL_PLUGIN_NAME, init_v5, get_coll_info, finalize};
DCCL_EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6 = {DCCL_PLUGIN_NAME, init_v6, get_coll_info, finalize,
                                                       get_chunk_size};
