/* plugin/tuner.c: getCollInfo/getChunkSize decisions: rule pins, then the published decision table. */
#include "tuner.h"

#include <math.h>

/* How a call's (algorithm, protocol) pairs may be checked: against NCCL's cost table (v3+) or, for
 * v2 which has none, against NCCL's structural rules and the support flags. */
typedef struct call_view {
  const float* cost; /* NULL for v2 */
  int num_algo, num_proto;
  int collnet_support, nvls_support; /* v2 only */
  int n_ranks, n_nodes, coll;
  unsigned algos_enabled, protos_enabled; /* v2 only: NCCL_ALGO and NCCL_PROTO as NCCL reads them */
} call_view;

static inline int entry_usable(const call_view* v, int algo, int proto) {
  if (algo < 0 || proto < 0) return 0;
  if (v->cost != NULL) {
    if (algo >= v->num_algo || proto >= v->num_proto) return 0;
    float x = v->cost[algo * v->num_proto + proto];
    return x >= 0.0f && x < INFINITY; /* false for -1 (ignored) and NaN */
  }
  /* v2 is NCCL 2.21's: six algorithms (no PAT), and its own filters on NVLS across nodes. NCCL 2.21 runs
   * a tuner's algorithm and protocol without checking them against NCCL_ALGO, NCCL_PROTO or its LL128
   * gate (enqueue.cc getTunerInfo), so they are checked here. */
  if (algo == DCCL_ALGO_PAT || !dccl_algo_proto_allowed(v->coll, algo, proto, v->n_ranks, v->n_nodes)) return 0;
  if (!(v->algos_enabled >> algo & 1) || !(v->protos_enabled >> proto & 1)) return 0;
  if ((algo == DCCL_ALGO_NVLS || algo == DCCL_ALGO_NVLS_TREE) && !v->nvls_support) return 0;
  if ((algo == DCCL_ALGO_COLLNET_DIRECT || algo == DCCL_ALGO_COLLNET_CHAIN) && !v->collnet_support) return 0;
  if (algo == DCCL_ALGO_NVLS && v->n_nodes > 1 &&
      (!v->collnet_support || v->coll == DCCL_COLL_ALLGATHER || v->coll == DCCL_COLL_REDUCESCATTER))
    return 0;
  return 1;
}

/* Explains once why a chosen entry was unusable: NaN entries, or a table with nothing usable. */
static void report_unusable(dccl_comm* comm, const call_view* v, dccl_action action, size_t bytes) {
  if (v->cost != NULL) {
    int nan_entries = 0, usable = 0;
    for (int i = 0; i < v->num_algo * v->num_proto; i++) {
      if (isnan(v->cost[i])) nan_entries++;
      else if (v->cost[i] >= 0.0f && v->cost[i] < INFINITY) usable++;
    }
    if (nan_entries > 0)
      DCCL_WARN_ONCE(&comm->logger, &comm->warned_nan_entry,
                     "NCCL cost table for %s of %zu bytes has %d NaN entr%s; they are treated as ignored",
                     dccl_coll_name(v->coll), bytes, nan_entries, nan_entries == 1 ? "y" : "ies");
    if (usable == 0) {
      DCCL_WARN_ONCE(&comm->logger, &comm->warned_no_valid_entry,
                     "NCCL cost table for %s of %zu bytes has no usable entry; leaving the choice to NCCL",
                     dccl_coll_name(v->coll), bytes);
      return;
    }
  }
  char text[96];
  dccl_action_format(action, text, sizeof(text));
  DCCL_WARN_ONCE(&comm->logger, &comm->warned_unusable_action,
                 "action %s cannot run %s of %zu bytes here (ignored by NCCL); keeping NCCL's choice "
                 "(reported once per communicator)",
                 text, dccl_coll_name(v->coll), bytes);
}

/* The action for this call, already checked usable, or DCCL_ACTION_NCCL. A call captured into a CUDA
 * graph runs as decided at every replay of the graph, so it gets the cell's exploited action: an
 * exploration baked into a graph would repeat for the graph's life, measured by nobody. */
static dccl_action choose(dccl_comm* comm, uint64_t call, const call_view* v, int cell, size_t bytes, int num_pipe_ops,
                          int reg_buff, int captured) {
  /* The table first: a coordinated worker waits here for rank 0's, and rank 0's pins are in force by then. */
  const dccl_table* table = dccl_table_store_for_call(&comm->tables, call);
  if (__builtin_expect(table == NULL, 0)) table = dccl_comm_wait_for_table(comm, call); /* coordinated worker */
  if (comm->pins.count > 0) {
    uint32_t begin, end;
    dccl_pins_candidates(&comm->pins, cell, &begin, &end);
    for (uint32_t i = begin; i < end; i++) {
      const dccl_rule* rule = &comm->pins.rules[comm->pins.cell_rules[i]];
      if (dccl_rule_matches(rule, v->coll, bytes, num_pipe_ops, reg_buff) && entry_usable(v, rule->algo, rule->proto)) {
        dccl_bump(&comm->counters.pinned);
        return dccl_action_make(rule->algo, rule->proto, rule->channels > 0 ? rule->channels : 0, 0);
      }
    }
  }
  dccl_action action =
    captured ? dccl_table_get(table, cell) : dccl_table_action(table, cell, comm->cell_calls[cell]++);
  if (dccl_action_is_nccl(action)) {
    dccl_bump(&comm->counters.nccl_kept);
    return DCCL_ACTION_NCCL;
  }
  if (!entry_usable(v, dccl_action_algo(action), dccl_action_proto(action))) {
    dccl_bump(&comm->counters.unusable);
    report_unusable(comm, v, action, bytes);
    return DCCL_ACTION_NCCL;
  }
  dccl_bump(&comm->counters.applied);
  return action;
}

/* Learning: log the call for the learner; the first call of a cell also leaves NCCL's cost table. */
static inline void log_call(dccl_comm* comm, uint64_t call, uint64_t coll_call, const call_view* v, int cell,
                            size_t bytes, dccl_action applied) {
  dccl_call_record record = {bytes, call, coll_call, applied, (uint16_t)cell, (uint8_t)v->coll, 0};
  if (v->cost != NULL && !atomic_load_explicit(&comm->costs->ready[cell], memory_order_relaxed)) {
    /* The pairs DynamICCL knows; a newer NCCL's further algorithms or protocols are left out. */
    float* snapshot = comm->costs->cost[cell];
    int num_algo = v->num_algo < DCCL_NUM_ALGOS ? v->num_algo : DCCL_NUM_ALGOS;
    int num_proto = v->num_proto < DCCL_NUM_PROTOS ? v->num_proto : DCCL_NUM_PROTOS;
    for (int i = 0; i < DCCL_COST_ENTRIES; i++) snapshot[i] = -1.0f;
    for (int a = 0; a < num_algo; a++)
      for (int p = 0; p < num_proto; p++) snapshot[a * DCCL_NUM_PROTOS + p] = v->cost[a * v->num_proto + p];
    atomic_store_explicit(&comm->costs->ready[cell], 1, memory_order_release);
    record.cost_snapshot = 1;
  }
  dccl_call_log_push(comm->call_log, &record);
}

/* The (algorithm, protocol) NCCL picks from its cost table: the cheapest usable entry. */
static void nccl_pick(const call_view* v, int* algo, int* proto) {
  float best = INFINITY;
  *algo = *proto = -1;
  for (int a = 0; a < v->num_algo; a++)
    for (int p = 0; p < v->num_proto; p++) {
      float x = v->cost[a * v->num_proto + p];
      if (x >= 0.0f && x < best) {
        best = x;
        *algo = a;
        *proto = p;
      }
    }
}

/* Keeps a decision for getChunkSize. The first decision after chunks were sized starts a new group. */
static void keep_group_decision(dccl_comm* comm, const call_view* v, dccl_action action) {
  if (comm->sizing_chunks) {
    comm->sizing_chunks = 0;
    comm->n_group_decisions = 0;
    comm->group_overflowed = 0;
  }
  if (comm->n_group_decisions == DCCL_GROUP_DECISIONS) {
    comm->group_overflowed = 1;
    return;
  }
  dccl_group_decision* d = &comm->group_decisions[comm->n_group_decisions++];
  int algo = dccl_action_algo(action), proto = dccl_action_proto(action), chunk_log2 = 0;
  if (dccl_action_is_nccl(action)) nccl_pick(v, &algo, &proto);
  else chunk_log2 = dccl_action_chunk_log2(action);
  d->coll = (uint8_t)v->coll;
  d->algo = (uint8_t)(algo < 0 ? 0xFF : algo);
  d->proto = (uint8_t)(proto < 0 ? 0xFF : proto);
  d->chunk_log2 = (uint8_t)chunk_log2;
}

/* Counts the call (epochs are counted in calls, on every rank alike), checks the collective and counts
 * the call among that collective's calls (the learner's join key with NCCL's seqNumber, which does not
 * count a call captured into a CUDA graph until the graph runs). */
static inline int begin_call(dccl_comm* comm, int coll, int captured, uint64_t* call, uint64_t* coll_call) {
  *call = atomic_load_explicit(&comm->calls, memory_order_relaxed);
  atomic_store_explicit(&comm->calls, *call + 1, memory_order_relaxed);
  if (coll < 0 || coll >= DCCL_NUM_COLLS) {
    dccl_bump(&comm->counters.bad_input);
    DCCL_WARN_ONCE(&comm->logger, &comm->warned_bad_collective,
                   "getCollInfo for collective %d, which DynamICCL does not tune; left to NCCL", coll);
    return 0;
  }
  *coll_call = comm->coll_calls[coll];
  if (captured) dccl_bump(&comm->counters.captured);
  else comm->coll_calls[coll]++;
  return 1;
}

void dccl_tuner_decide(dccl_comm* comm, int coll, size_t bytes, int num_pipe_ops, float* cost, int num_algo,
                       int num_proto, int reg_buff, int* n_channels) {
  uint64_t call, coll_call;
  int captured = atomic_load_explicit(&comm->graph_capturing, memory_order_relaxed);
  if (!begin_call(comm, coll, captured, &call, &coll_call)) return;
  if (!comm->policy_active) return;
  if (cost == NULL || n_channels == NULL || num_algo <= 0 || num_proto <= 0 || num_algo > 64 || num_proto > 64) {
    dccl_bump(&comm->counters.bad_input);
    DCCL_WARN_ONCE(&comm->logger, &comm->warned_bad_table,
                   "getCollInfo received an unusable cost table (table %p, %d x %d, nChannels %p); left to NCCL",
                   (void*)cost, num_algo, num_proto, (void*)n_channels);
    return;
  }
  call_view v = {cost, num_algo, num_proto, 0, 0, comm->n_ranks, comm->n_nodes, coll, 0, 0};
  int cell = dccl_cell_for_call(coll, bytes, num_pipe_ops, reg_buff);
  dccl_action action = choose(comm, call, &v, cell, bytes, num_pipe_ops, reg_buff, captured);
  if (comm->tuner_abi >= 6) keep_group_decision(comm, &v, action);
  /* A captured call is measured only at the graph's replays, with no call to join them to. */
  if (!captured && atomic_load_explicit(&comm->learning, memory_order_relaxed))
    log_call(comm, call, coll_call, &v, cell, bytes, action);
  if (dccl_action_is_nccl(action)) return;
  cost[dccl_action_algo(action) * num_proto + dccl_action_proto(action)] = 0.0f;
  if (dccl_action_channels(action) > 0) *n_channels = dccl_action_channels(action);
}

void dccl_tuner_decide_v2(dccl_comm* comm, int coll, size_t bytes, int collnet_support, int nvls_support,
                          int num_pipe_ops, int* algorithm, int* protocol, int* n_channels) {
  uint64_t call, coll_call;
  int captured = atomic_load_explicit(&comm->graph_capturing, memory_order_relaxed);
  if (!begin_call(comm, coll, captured, &call, &coll_call) || !comm->policy_active) return;
  if (algorithm == NULL || protocol == NULL || n_channels == NULL) {
    dccl_bump(&comm->counters.bad_input);
    DCCL_WARN_ONCE(&comm->logger, &comm->warned_bad_table, "getCollInfo (v2) received NULL outputs; left to NCCL");
    return;
  }
  call_view v = {NULL, 0, 0, collnet_support, nvls_support, comm->n_ranks, comm->n_nodes, coll,
                 comm->settings.nccl_algos_enabled, comm->settings.nccl_protos_enabled};
  int cell = dccl_cell_for_call(coll, bytes, num_pipe_ops, 0);
  dccl_action action = choose(comm, call, &v, cell, bytes, num_pipe_ops, 0, captured);
  if (!captured && atomic_load_explicit(&comm->learning, memory_order_relaxed))
    log_call(comm, call, coll_call, &v, cell, bytes, action);
  if (dccl_action_is_nccl(action)) return;
  *algorithm = dccl_action_algo(action);
  *protocol = dccl_action_proto(action);
  if (dccl_action_channels(action) > 0) *n_channels = dccl_action_channels(action);
}

/* NCCL passes the task's collective, algorithm and protocol, but not the size it decided on (the bytes
 * here are a channel's share). The chunk comes from the group's decisions of that collective running
 * that pair; when they disagree on it, NCCL's chunk stays. */
void dccl_tuner_chunk_size(dccl_comm* comm, int coll, int algo, int proto, size_t* chunk_size) {
  if (coll < 0 || coll >= DCCL_NUM_COLLS || chunk_size == NULL) return;
  comm->sizing_chunks = 1;
  int chunk_log2 = -1, ambiguous = comm->group_overflowed; /* -1: no decision of the group matches */
  for (int i = 0; i < comm->n_group_decisions; i++) {
    const dccl_group_decision* d = &comm->group_decisions[i];
    if (d->coll != coll || d->algo != algo || d->proto != proto) continue;
    if (chunk_log2 < 0) chunk_log2 = d->chunk_log2;
    else if (d->chunk_log2 != chunk_log2) ambiguous = 1;
  }
  if (chunk_log2 < 0) return;
  if (ambiguous) {
    dccl_bump(&comm->counters.chunk_ambiguous);
    if (dccl_log_once_claim(&comm->warned_ambiguous_chunk))
      DCCL_INFO(&comm->logger,
                "a group of %s calls asks for different chunk sizes with one algorithm and protocol; NCCL's chunk "
                "size is kept for them (reported once per communicator)",
                dccl_coll_name(coll));
    return;
  }
  if (chunk_log2 == 0) return; /* NCCL's own chunk */
  *chunk_size = (size_t)1 << chunk_log2;
  dccl_bump(&comm->counters.chunk_set);
}
