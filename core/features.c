/* core/features.c: state and action feature vectors for the config agent, and exploration priors. */
#include "features.h"

#include <math.h>
#include <string.h>

void dccl_state_features(float* out, const dccl_cell_static* c, const dccl_dynamic_state* d) {
  float* f = out;
  memset(out, 0, DCCL_STATE_FEATURES * sizeof(float));
  f[c->coll >= 0 && c->coll < DCCL_NUM_COLLS ? c->coll : 0] = 1.0f; /* 0-4: collective */
  f[5] = (float)(c->log2_bytes / 32.0);                          /* 5: size */
  f[6 + (c->pipe_bucket & 3)] = 1.0f;                             /* 6-9: pipelined ops */
  f[10] = (float)c->reg_buff;                                     /* 10: registered buffers */
  f[11] = (float)(log2((double)(c->n_ranks > 0 ? c->n_ranks : 1)) / 10.0);
  f[12] = (float)(log2((double)(c->n_nodes > 0 ? c->n_nodes : 1)) / 10.0);
  f[13] = (float)(log2((double)c->n_ranks / (c->n_nodes > 0 ? c->n_nodes : 1) + 1e-9) / 6.0);
  f[14] = c->batch_size > 0 ? (float)(log2(c->batch_size) / 10.0) : 0.0f;
  /* 15-35: NCCL's view: log2(cost / cheapest) in [0, 1] for usable entries, -1 for ignored ones. */
  if (c->cost_known) {
    float best = INFINITY;
    for (int i = 0; i < DCCL_COST_ENTRIES; i++)
      if (c->cost[i] > 0 && c->cost[i] < best) best = c->cost[i];
    for (int i = 0; i < DCCL_COST_ENTRIES; i++) {
      float x = c->cost[i];
      if (!(x >= 0.0f) || !isfinite(x)) f[15 + i] = -1.0f;
      else f[15 + i] = isfinite(best) && x > 0 ? fminf(1.0f, log2f(x / best) / 6.0f) : 0.0f;
    }
  }
  /* 36-39: congestion state; 40-41 CUSUM; 42 communicator-wide congestion; 43 latency; 44 intensity */
  f[36 + (d->trigger_state & 3)] = 1.0f;
  f[40] = fminf(2.0f, d->cusum_up);
  f[41] = fminf(2.0f, d->cusum_down);
  f[42] = d->congested_fraction;
  f[43] = fmaxf(-2.0f, fminf(2.0f, d->latency_ratio));
  f[44] = fminf(4.0f, d->intensity) / 4.0f;
  f[45] = 1.0f; /* bias input */
}

void dccl_action_features(float* out, dccl_action a) {
  memset(out, 0, DCCL_ACTION_FEATURES * sizeof(float));
  if (dccl_action_is_nccl(a)) {
    out[14] = 1.0f; /* NCCL's own choice */
    return;
  }
  out[dccl_action_algo(a)] = 1.0f;       /* 0-6 */
  out[7 + dccl_action_proto(a)] = 1.0f;  /* 7-9 */
  int channels = dccl_action_channels(a);
  if (channels == 0) out[11] = 1.0f;
  else out[10] = (float)(log2((double)channels) / 6.0);
  int chunk = dccl_action_chunk_log2(a);
  if (chunk == 0) out[13] = 1.0f;
  else out[12] = (float)((chunk - 15) / 6.0);
}

double dccl_action_prior(dccl_action a, int coll, double bytes) {
  if (dccl_action_is_nccl(a)) return 1.0;
  int algo = dccl_action_algo(a), proto = dccl_action_proto(a), channels = dccl_action_channels(a);
  double p;
  if (bytes < 16384) {
    p = proto == DCCL_PROTO_LL ? (algo == DCCL_ALGO_TREE || coll != DCCL_COLL_ALLREDUCE ? 1.0 : 0.8)
        : proto == DCCL_PROTO_LL128 ? 0.5 : 0.2;
    if (channels > 8) p *= 0.6;
  } else if (bytes < 1048576) {
    p = proto == DCCL_PROTO_LL128 ? 1.0 : proto == DCCL_PROTO_LL ? 0.6 : 0.5;
  } else {
    p = proto == DCCL_PROTO_SIMPLE ? (algo == DCCL_ALGO_RING ? 1.0 : 0.7) : proto == DCCL_PROTO_LL128 ? 0.4 : 0.1;
    if (channels != 0 && channels < 8) p *= 0.6;
  }
  if (algo == DCCL_ALGO_NVLS || algo == DCCL_ALGO_NVLS_TREE || algo == DCCL_ALGO_COLLNET_DIRECT ||
      algo == DCCL_ALGO_COLLNET_CHAIN)
    p = bytes >= 1048576 ? 0.9 : 0.3;
  if (algo == DCCL_ALGO_PAT) p = bytes < 1048576 ? 0.8 : 0.6;
  if (dccl_action_chunk_log2(a) != 0) p *= 0.7;
  return p;
}
