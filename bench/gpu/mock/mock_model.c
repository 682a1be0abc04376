/* bench/gpu/mock/mock_model.c: the mock testbed's NCCL cost table, NCCL's selection on it and the true times. */
#include "mock_model.h"

#include <math.h>

#include "../../../core/types.h"

#define DEFAULT_CHANNELS_FROM_BYTES ((size_t)64 << 10)

/* NCCL's view: a latency (us) and a bandwidth (GB/s, i.e. kB/us) per algorithm and protocol; 0: none. */
static double model_latency_us(int algo, int proto) {
  double base = proto == DCCL_PROTO_LL ? 12.0 : 30.0;
  return algo == DCCL_ALGO_TREE ? base - 2.0 : algo == DCCL_ALGO_PAT ? base - 5.0 : base;
}
static double model_bandwidth_gbs(int algo, int proto) {
  double base = proto == DCCL_PROTO_LL ? 0.5 : 2.5;
  return algo == DCCL_ALGO_RING ? base : 0.9 * base;
}

static int available(ncclFunc_t func, int algo, int proto, int one_rank_per_node) {
  if (proto == DCCL_PROTO_LL128) return 0; /* NCCL does not run LL128 over sockets (nor does the mock on one host) */
  if (algo == DCCL_ALGO_RING) return 1;
  if (algo == DCCL_ALGO_TREE) return func == ncclFuncAllReduce;
  if (algo == DCCL_ALGO_PAT) /* PAT: one rank per node */
    return one_rank_per_node && proto == DCCL_PROTO_SIMPLE && (func == ncclFuncAllGather || func == ncclFuncReduceScatter);
  return 0;
}

void mock_cost_table(ncclFunc_t func, size_t bytes, int one_rank_per_node,
                     float cost[NCCL_ABI_NUM_ALGORITHMS][NCCL_ABI_NUM_PROTOCOLS]) {
  for (int a = 0; a < NCCL_ABI_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_ABI_NUM_PROTOCOLS; p++)
      cost[a][p] = available(func, a, p, one_rank_per_node)
                     ? (float)(model_latency_us(a, p) + (double)bytes / (1000.0 * model_bandwidth_gbs(a, p)))
                     : NCCL_ABI_ALGO_PROTO_IGNORE;
}

int mock_select(const float cost[NCCL_ABI_NUM_ALGORITHMS][NCCL_ABI_NUM_PROTOCOLS], size_t bytes, int tuner_channels,
                mock_execution* out) {
  float lowest = -1.0f;
  for (int a = 0; a < NCCL_ABI_NUM_ALGORITHMS; a++)
    for (int p = 0; p < NCCL_ABI_NUM_PROTOCOLS; p++)
      if (cost[a][p] >= 0.0f && (lowest < 0.0f || cost[a][p] < lowest)) {
        lowest = cost[a][p];
        out->algo = a;
        out->proto = p;
      }
  if (lowest < 0.0f) return -1;
  int channels = tuner_channels > 0 ? tuner_channels : bytes < DEFAULT_CHANNELS_FROM_BYTES ? 1 : MOCK_MAX_CHANNELS;
  out->channels = channels < MOCK_MAX_CHANNELS ? channels : MOCK_MAX_CHANNELS;
  return 0;
}

unsigned long long mock_true_ns(size_t bytes, const mock_execution* e) {
  double bandwidth = model_bandwidth_gbs(e->algo, e->proto) * (e->proto == DCCL_PROTO_LL ? 0.7 : 1.0) *
                     (e->channels >= 2 ? 1.6 : 1.0);
  double us = model_latency_us(e->algo, e->proto) + (double)bytes / (1000.0 * bandwidth);
  return (unsigned long long)llround(1000.0 * us);
}
