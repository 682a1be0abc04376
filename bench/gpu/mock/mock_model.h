/* bench/gpu/mock/mock_model.h: the mock testbed, shaped like the GPU runs' (ranks on separate "nodes",
 * NCCL's socket transport): the cost table NCCL hands a tuner (ring and tree for AllReduce, ring and PAT
 * for AllGather and ReduceScatter; LL and Simple; no LL128, CollNet or NVLS), NCCL's selection on it
 * (the lowest cost; at most 2 channels, 1 below 64 KiB unless a tuner asks), and the "true" time of what
 * ran, which DYNAMICCL_MOCK_CLOCK=model reports: it differs from NCCL's model (LL is slower than NCCL
 * thinks, a second channel helps), so NCCL's own choice is not always the best, as on the GPU. */
#ifndef DYNAMICCL_MOCK_MODEL_H
#define DYNAMICCL_MOCK_MODEL_H

#include <stddef.h>

#include "../../../abi/nccl_abi.h"

#define MOCK_MAX_CHANNELS 2

typedef struct mock_execution {
  int algo, proto, channels; /* NCCL's indices (algorithm: tree 0, ring 1, PAT 6; protocol: LL 0, Simple 2) */
} mock_execution;

/* NCCL's cost table (float[7][3], us; -1: not available) for `bytes` in all (nccl-tests' total); PAT only
 * with one rank per node, as in NCCL. */
void mock_cost_table(ncclFunc_t func, size_t bytes, int one_rank_per_node,
                     float cost[NCCL_ABI_NUM_ALGORITHMS][NCCL_ABI_NUM_PROTOCOLS]);
/* The lowest non-negative cost; channels: the tuner's count (0: NCCL's own), at most MOCK_MAX_CHANNELS.
 * Returns 0, or -1 when the table leaves nothing to run. */
int mock_select(const float cost[NCCL_ABI_NUM_ALGORITHMS][NCCL_ABI_NUM_PROTOCOLS], size_t bytes, int tuner_channels,
                mock_execution* out);
/* The mock GPU's time for `bytes` run as `e`, in ns. */
unsigned long long mock_true_ns(size_t bytes, const mock_execution* e);

#endif
