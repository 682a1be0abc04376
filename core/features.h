/* core/features.h: what the config agent sees. The state of a decision-table cell (collective, size,
 * pipelined ops, registration, communicator shape, NCCL's own cost table for the cell, the congestion
 * agent's outputs, recent latency and compute intensity) and the features of an action, as fixed-size
 * float vectors; and the exploration priors of the seed design. */
#ifndef DYNAMICCL_CORE_FEATURES_H
#define DYNAMICCL_CORE_FEATURES_H

#include <stddef.h>

#include "action.h"

#define DCCL_STATE_FEATURES 46
#define DCCL_ACTION_FEATURES 15
#define DCCL_COST_ENTRIES 21 /* NCCL's 7 x 3 cost table */

/* Congestion-agent states. */
enum { DCCL_TRIGGER_NONE = 0, DCCL_TRIGGER_RISING = 1, DCCL_TRIGGER_CONGESTED = 2, DCCL_TRIGGER_RECOVERING = 3 };

/* What changes from call to call. */
typedef struct dccl_dynamic_state {
  int trigger_state;           /* DCCL_TRIGGER_* of the cell's stream */
  float cusum_up, cusum_down;  /* CUSUM statistics divided by the alarm threshold */
  float congested_fraction;    /* share of the communicator's active streams in congestion */
  float latency_ratio;         /* log(recent latency / reference) of the cell */
  float intensity;             /* log(1 + compute time / communication time) */
} dccl_dynamic_state;

typedef struct dccl_cell_static {
  int coll, pipe_bucket, reg_buff;
  double log2_bytes;                /* of the cell's typical size */
  int n_ranks, n_nodes;
  double batch_size;                /* DYNAMICCL_BATCH_SIZE, 0 when unknown */
  int cost_known;
  float cost[DCCL_COST_ENTRIES];    /* NCCL's cost table for the cell, -1 = ignored */
} dccl_cell_static;

void dccl_state_features(float* out, const dccl_cell_static* cell, const dccl_dynamic_state* dynamic);
void dccl_action_features(float* out, dccl_action action);

/* The seed design's exploration prior in [0, 1]: small messages tree/LL first, 16 KiB - 1 MiB LL128,
 * >= 1 MiB ring/Simple with many channels, NVLS/CollNet for large messages where they exist. */
double dccl_action_prior(dccl_action action, int coll, double bytes);

#endif
