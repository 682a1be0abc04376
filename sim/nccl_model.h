/* sim/nccl_model.h: NCCL's own tuning model, reproduced from NCCL 2.28-2.30 (graph/tuning.cc and
 * enqueue.cc): for a profile, the per-collective latency/bandwidth tables (ncclTopoTuneModel), the
 * cost table NCCL hands to the tuner (updateCollCostTable + ncclTopoGetAlgoTime), NCCL's selection
 * with its channel and thread counts (topoGetAlgoInfo), and its chunk size (calcCollChunking).
 * Values are computed in single precision like NCCL, so tables match NCCL's to the bit.
 * No environment overrides (NCCL_ALGO, NCCL_PROTO, NCCL_NTHREADS...) are modelled. */
#ifndef DYNAMICCL_SIM_NCCL_MODEL_H
#define DYNAMICCL_SIM_NCCL_MODEL_H

#include <stddef.h>

#include "profile.h"

typedef struct dccl_nccl_model {
  const dccl_profile* profile;
  float bandwidths[DCCL_NUM_COLLS][DCCL_NUM_ALGOS][DCCL_NUM_PROTOS]; /* GB/s; 0 = not available */
  float latencies[DCCL_NUM_COLLS][DCCL_NUM_ALGOS][DCCL_NUM_PROTOS];  /* us */
  int max_threads[DCCL_NUM_ALGOS][DCCL_NUM_PROTOS];
  int thread_thresholds[DCCL_NUM_ALGOS][DCCL_NUM_PROTOS];
  int nvls_chunk_size, nvls_tree_max_chunk_size;
} dccl_nccl_model;

/* NCCL's final choice for one collective. */
typedef struct dccl_execution {
  int algo, proto;
  int channels; /* channels it runs on */
  int threads;  /* threads per channel */
  size_t chunk; /* bytes per chunk, after NCCL's clamping and grain alignment */
} dccl_execution;

/* NCCL's cost-model constants (ncclTunerConstants defaults). Index order as in the tuner ABI. */
extern const double dccl_nccl_base_latency[DCCL_NUM_ALGOS][DCCL_NUM_PROTOS];
extern const double dccl_nccl_hw_latency[3][DCCL_NUM_ALGOS][DCCL_NUM_PROTOS];

void dccl_nccl_model_init(dccl_nccl_model* model, const dccl_profile* profile);

/* The cost table NCCL passes to getCollInfo: cost[algo * 3 + proto] in us, -1 = ignored. */
void dccl_nccl_cost_table(const dccl_nccl_model* model, int coll, size_t bytes, int num_pipe_ops, float* cost);

/* NCCL's selection from a (possibly tuner-edited) cost table: lowest non-negative entry, then NCCL's
 * channel/thread sizing; plugin_channels > 0 overrides the channel count (capped at what the
 * communicator has). Returns 0, or -1 when no entry is usable (NCCL fails the call then). */
int dccl_nccl_select(const dccl_nccl_model* model, const float* cost, int coll, size_t bytes, int plugin_channels,
                     dccl_execution* out);

/* NCCL's chunk size for the selected execution, before a tuner's getChunkSize, and the buffer ceiling
 * NCCL clamps a tuner's value to. */
void dccl_nccl_chunk(const dccl_nccl_model* model, int coll, size_t bytes, const dccl_execution* execution,
                     size_t* chunk, size_t* ceiling);
/* Applies NCCL's handling of a tuner chunk: clamp to the ceiling, align down to the protocol grain. */
size_t dccl_nccl_finish_chunk(int proto, size_t tuner_chunk, size_t ceiling);
size_t dccl_nccl_grain(int proto);

/* Everything NCCL does for one call when a tuner returns `action` (DCCL_ACTION_NCCL: NCCL alone):
 * cost table, tuner edit, selection, channels, chunk. Returns -1 when nothing is runnable. */
int dccl_nccl_execute(const dccl_nccl_model* model, int coll, size_t bytes, int num_pipe_ops, unsigned action,
                      dccl_execution* out);

#endif
