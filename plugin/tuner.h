/* plugin/tuner.h: the tuner half's per-call logic, shared by every tuner ABI version. */
#ifndef DYNAMICCL_PLUGIN_TUNER_H
#define DYNAMICCL_PLUGIN_TUNER_H

#include <stddef.h>

#include "comm.h"

/* v3-v6: edits NCCL's cost table (contiguous float[num_algo][num_proto]; -1 = ignored) and
 * *n_channels. Picks, in order: the first matching rule pin whose entry is usable, else the policy's
 * decision-table cell. Selecting means cost[a][p] = 0 and leaving the other entries alone. On any
 * unexpected input it leaves NCCL's choice untouched and logs once. Never allocates or locks. */
void dccl_tuner_decide(dccl_comm* comm, int coll, size_t bytes, int num_pipe_ops, float* cost, int num_algo,
                       int num_proto, int reg_buff, int* n_channels);

/* v2: no cost table; answers algorithm/protocol/channels directly, only with pairs NCCL could run
 * given the collNet/NVLS support flags (NCCL still drops a pair its table ignores). */
void dccl_tuner_decide_v2(dccl_comm* comm, int coll, size_t bytes, int collnet_support, int nvls_support,
                          int num_pipe_ops, int* algorithm, int* protocol, int* n_channels);

/* v6: replaces NCCL's chunk size by the chunk of the action chosen for this collective, when that
 * action set one and NCCL runs the algorithm and protocol it chose. */
void dccl_tuner_chunk_size(dccl_comm* comm, int coll, int algo, int proto, size_t* chunk_size);

#endif
