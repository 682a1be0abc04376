/* agents/autoccl.c: the AutoCCL baseline's decision rule (see baselines.h): per cell, NCCL's choice,
 * then subspace-directed coordinate descent, then hold. */
#include <math.h>
#include <string.h>

#include "config_agent.h"

#define PROFILE_SAMPLES 4 /* measurements per configuration profiled */
#define FIRST_LR 0.01f    /* Algorithm 2's initial learning rate */
#define MAX_GRID 64

/* A subspace's grid: the channel counts and chunk sizes its actions take. */
typedef struct grid {
  int algo, proto;
  int channels[MAX_GRID], chunks[MAX_GRID];
  int n_channels, n_chunks;
} grid;

static void add_unique(int* values, int* n, int value) {
  for (int i = 0; i < *n; i++)
    if (values[i] == value) return;
  if (*n == MAX_GRID) return;
  int at = (*n)++;
  while (at > 0 && values[at - 1] > value) {
    values[at] = values[at - 1];
    at--;
  }
  values[at] = value;
}

/* The `which`-th (algorithm, protocol) pair with a valid action in this cell; 0 when none. */
static int subspace_grid(dccl_config_agent* agent, dccl_agent_cell* c, int which, grid* g) {
  int coll = c->info.coll;
  int seen[DCCL_NUM_ALGOS * DCCL_NUM_PROTOS];
  memset(seen, 0, sizeof(seen));
  for (int i = 0; i < agent->n_actions[coll]; i++)
    if (!dccl_agent_arm(agent, c, 0, i)->invalid) {
      dccl_action a = agent->actions[coll][i];
      seen[dccl_action_pair(a)] = 1;
    }
  int pair = -1;
  for (int k = 0, count = 0; k < DCCL_NUM_ALGOS * DCCL_NUM_PROTOS; k++)
    if (seen[k] && count++ == which) {
      pair = k;
      break;
    }
  if (pair < 0) return 0;
  memset(g, 0, sizeof(*g));
  g->algo = pair / DCCL_NUM_PROTOS;
  g->proto = pair % DCCL_NUM_PROTOS;
  for (int i = 0; i < agent->n_actions[coll]; i++) {
    dccl_action a = agent->actions[coll][i];
    if (dccl_agent_arm(agent, c, 0, i)->invalid || dccl_action_algo(a) != g->algo || dccl_action_proto(a) != g->proto)
      continue;
    add_unique(g->channels, &g->n_channels, dccl_action_channels(a));
    add_unique(g->chunks, &g->n_chunks, dccl_action_chunk_log2(a));
  }
  return g->n_channels > 0;
}

/* The action at a grid point, or DCCL_ACTION_NCCL when the point is off the grid or not valid. */
static dccl_action at_point(dccl_config_agent* agent, dccl_agent_cell* c, const grid* g, int ci, int ki) {
  if (ci < 0 || ci >= g->n_channels || ki < 0 || ki >= g->n_chunks) return DCCL_ACTION_NCCL;
  dccl_action a = dccl_action_make(g->algo, g->proto, g->channels[ci], g->chunks[ki]);
  int i = dccl_agent_action_index(agent, c->info.coll, a);
  return i >= 0 && dccl_agent_arm_runnable(agent, dccl_agent_arm(agent, c, 0, i), c->info.coll, i) ? a : DCCL_ACTION_NCCL;
}

static float arm_count(dccl_config_agent* agent, dccl_agent_cell* c, dccl_action a) {
  int i = dccl_agent_action_index(agent, c->info.coll, a);
  return i >= 0 ? dccl_agent_arm(agent, c, 0, i)->count : 0;
}

static void set_candidate(dccl_config_agent* agent, dccl_agent_cell* c, dccl_action a) {
  c->autoccl.candidate = a;
  c->autoccl.candidate_base = arm_count(agent, c, a);
}

/* Algorithm 2's start: a random configuration of the subspace. Returns 0 when the subspace has none. */
static int start_subspace(dccl_config_agent* agent, dccl_agent_cell* c, grid* g) {
  dccl_autoccl_state* s = &c->autoccl;
  while (subspace_grid(agent, c, s->subspace, g)) {
    for (int tries = 0; tries < 16; tries++) {
      int ci = (int)dccl_rng_below(&agent->rng, (uint64_t)g->n_channels), ki = 0;
      dccl_action a = at_point(agent, c, g, ci, ki);
      if (dccl_action_is_nccl(a)) continue;
      s->channel_index = s->best_channel_index = (int16_t)ci;
      s->chunk_index = s->best_chunk_index = (int16_t)ki;
      s->best_mean = INFINITY;
      s->dim = 0;
      s->tuned_dims = 0;
      s->direction = 1;
      s->direction_tried = 0;
      s->lr = FIRST_LR;
      set_candidate(agent, c, a);
      return 1;
    }
    s->subspace++;
  }
  return 0;
}

static void finish(dccl_agent_cell* c) {
  c->autoccl.phase = 2;
  c->exploit = c->autoccl.global;
}

void dccl_autoccl_decide(dccl_config_agent* agent, dccl_agent_cell* c) {
  dccl_autoccl_state* s = &c->autoccl;
  c->explore_mask = 0;
  if (s->phase == 2) {
    c->exploit = s->global;
    return;
  }
  grid g;
  if (s->phase == 0) { /* NCCL's default configuration is the first optimum (AutoCCL's "Default") */
    c->exploit = DCCL_ACTION_NCCL;
    if (c->nccl[0].count < PROFILE_SAMPLES) return;
    s->global = DCCL_ACTION_NCCL;
    s->global_mean = c->nccl[0].mean;
    s->phase = 1;
    s->subspace = 0;
    if (!start_subspace(agent, c, &g)) finish(c);
    else c->exploit = s->candidate;
    return;
  }
  /* Searching: profile the candidate, then one step of coordinate descent. */
  int index = dccl_agent_action_index(agent, c->info.coll, s->candidate);
  const dccl_arm* a = index >= 0 ? dccl_agent_arm(agent, c, 0, index) : NULL;
  if (a != NULL && !a->invalid && a->count - s->candidate_base < PROFILE_SAMPLES) {
    c->exploit = s->candidate;
    return;
  }
  if (!subspace_grid(agent, c, s->subspace, &g)) {
    finish(c);
    return;
  }
  int dims = g.n_chunks > 1 ? 2 : 1;
  int improved = a != NULL && !a->invalid && a->mean < s->best_mean;
  if (improved) {
    s->lr = isfinite(s->best_mean) ? s->best_mean - a->mean : FIRST_LR; /* relative improvement */
    s->best_mean = a->mean;
    s->best_channel_index = s->channel_index;
    s->best_chunk_index = s->chunk_index;
    s->tuned_dims = 0;
  }
  for (int attempt = 0;; attempt++) {
    if (!improved || attempt > 0) {
      /* No improvement along this direction: the other direction, then the next dimension. */
      if (!s->direction_tried) {
        s->direction = (int8_t)-s->direction;
        s->direction_tried = 1;
      } else {
        s->tuned_dims++;
        s->dim = (uint8_t)((s->dim + 1) % dims);
        s->direction = 1;
        s->direction_tried = 0;
      }
      s->lr = FIRST_LR;
    }
    if (s->tuned_dims >= dims || attempt > 4 * dims + 4) break;
    int step = 1 + (int)(s->lr * 20.0f); /* grid positions; the step grows with the improvement */
    int ci = s->best_channel_index + (s->dim == 0 ? s->direction * step : 0);
    int ki = s->best_chunk_index + (s->dim == 1 ? s->direction * step : 0);
    dccl_action next = at_point(agent, c, &g, ci, ki);
    if (dccl_action_is_nccl(next)) continue; /* off the grid: as if it did not improve */
    s->channel_index = (int16_t)ci;
    s->chunk_index = (int16_t)ki;
    set_candidate(agent, c, next);
    c->exploit = next;
    return;
  }
  /* The subspace is tuned: keep its optimum if it beats the best so far, then the next subspace. */
  if (s->best_mean < s->global_mean) {
    s->global_mean = s->best_mean;
    s->global = at_point(agent, c, &g, s->best_channel_index, s->best_chunk_index);
  }
  s->subspace++;
  if (!start_subspace(agent, c, &g)) finish(c);
  else c->exploit = s->candidate;
}
