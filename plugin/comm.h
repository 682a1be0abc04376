/* plugin/comm.h: the state DynamICCL keeps for one rank of one communicator, shared by the tuner
 * half and the profiler half of the plugin. */
#ifndef DYNAMICCL_PLUGIN_COMM_H
#define DYNAMICCL_PLUGIN_COMM_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/decision_table.h"
#include "../core/log.h"
#include "../core/measurement_queue.h"
#include "../core/rules.h"
#include "../core/settings.h"
#include "event_pool.h"
#include "learner.h"

/* Counters of the tuner hot path; single writer (the tuner thread), read at finalize. */
typedef struct dccl_tuner_counters {
  _Atomic uint64_t applied;        /* policy actions written into the cost table */
  _Atomic uint64_t pinned;         /* rule-file pins applied */
  _Atomic uint64_t nccl_kept;      /* calls left to NCCL's choice by the policy */
  _Atomic uint64_t unusable;       /* chosen action not runnable for this call: NCCL's choice kept */
  _Atomic uint64_t bad_input;      /* calls with arguments we could not use */
  _Atomic uint64_t chunk_set;      /* getChunkSize overrides */
  _Atomic uint64_t chunk_ambiguous;/* getChunkSize left to NCCL: the group's decisions disagreed */
  _Atomic uint64_t captured;       /* calls captured into a CUDA graph: the exploited action, not logged */
  _Atomic uint64_t waits;          /* coordinated worker: epochs whose table had not arrived in time */
  _Atomic uint64_t wait_ns;        /* time spent waiting for them */
} dccl_tuner_counters;

#define DCCL_GROUP_DECISIONS 16

/* One getCollInfo decision of the group being planned: the (algorithm, protocol) it makes NCCL run (for
 * NCCL's own choice, the cheapest entry of its cost table) and the chunk size it asks for (log2; 0:
 * NCCL's). */
typedef struct dccl_group_decision {
  uint8_t coll, algo, proto, chunk_log2;
} dccl_group_decision;

typedef struct dccl_comm {
  /* identity */
  uint32_t slot; /* registry slot; also part of profiler event handles */
  uint64_t comm_id;
  int comm_id_known;
  int rank; /* -1 until a profiler half tells it */
  int n_ranks, n_nodes;
  int tuner_abi, profiler_abi; /* 0 while that half is not attached */
  dccl_logger logger;
  dccl_settings settings;

  /* policy, read by the hot path */
  int policy_active; /* 0: nothing to do, the cost table is never touched */
  int policy_loaded; /* a fixed table or a saved policy is in force (pins aside) */
  dccl_table_store tables;
  dccl_pin_set pins;

  /* tuner hot path */
  _Alignas(64) _Atomic uint64_t calls;
  /* 1 while the last collective enqueued on this communicator went into a CUDA graph being captured:
   * set by the profiler half's CollApi event (NCCL 2.28+; NCCL decides a group's calls when the group
   * ends, after their CollApi events), read by getCollInfo. Such a call is decided once for every replay
   * of the graph, so it gets the cell's exploited action, never an exploration. */
  _Atomic int graph_capturing;
  uint8_t cell_calls[DCCL_TABLE_CELLS]; /* per-cell call counters (exploration slots) */
  uint64_t coll_calls[DCCL_NUM_COLLS];  /* per-collective call counters (the learner's join key) */
  /* getChunkSize: NCCL decides every task of a group (getCollInfo per aggregate of tasks), then sizes
   * their chunks, both on the thread launching the group; the group's decisions are kept until then. */
  dccl_group_decision group_decisions[DCCL_GROUP_DECISIONS];
  uint8_t n_group_decisions, group_overflowed, sizing_chunks;
  dccl_tuner_counters counters;
  atomic_flag warned_bad_collective, warned_bad_table, warned_unusable_action, warned_no_valid_entry,
    warned_nan_entry, warned_ambiguous_chunk, warned_unknown_events;

  /* profiler half */
  int profiling;
  dccl_measurement_queue queue;
  dccl_event_pool events;

  /* learning (learn mode: learning = 1; frozen mode: a policy published once, learner freed).
   * `learning` is set last at tuner init (release) and read by the background thread (acquire),
   * which may already drain the profiler half's queue. */
  dccl_learner* learner;
  _Atomic int learning;
  dccl_call_log* call_log;
  dccl_cost_snapshots* costs;
  char policy_path[DCCL_PATH_MAX + 64];
  int policy_save_disabled; /* the file there could not be read or set aside: never save over it */
  int stale_temporaries_removed; /* the first save removed what killed saves left beside the policy */
  uint64_t fingerprint;
  double last_save_seconds;

  /* coordination (learn mode on a multi-rank communicator): leader or worker session */
  struct dccl_coord_session* coord;
  atomic_flag warned_wait;

  /* background thread */
  int worker_refs; /* guarded by the registry lock */
  FILE* trace;
  char trace_path[DCCL_PATH_MAX + 64]; /* the file it writes; no two communicators of a process share one */
  uint64_t traced;
} dccl_comm;

/* Single-writer increment: a plain load/add/store, no locked instruction on the hot path. */
static inline void dccl_bump(_Atomic uint64_t* counter) {
  atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* Allocates a communicator and reads the settings. NULL on allocation failure. */
dccl_comm* dccl_comm_create(uint32_t slot, int comm_id_known, uint64_t comm_id, int n_ranks, int n_nodes,
                            ncclDebugLogger_t logger);
/* Loads the policy (fixed table, rule pins) for the tuner half. Never fails: on bad input it logs
 * and falls back to NCCL's choice. */
void dccl_comm_attach_tuner(dccl_comm* comm, int abi_version);
/* Sets up measurement for the profiler half; returns the activation mask NCCL should use. */
int dccl_comm_attach_profiler(dccl_comm* comm, int abi_version, int rank);
/* Hands pending measurements (at most `max_measurements` in this pass) to the trace file and the
 * learner, publishes the learner's decisions when an epoch has begun, and saves the policy when it is
 * time. Called by the background thread (DCCL_DRAIN_WORKER: a learner behind the job publishes every
 * epoch's worth, and the thread does not pause while it is behind), by synchronous simulations once per
 * step (DCCL_DRAIN_STEP), and at destroy. Returns the number taken (`max_measurements`: more may wait). */
#define DCCL_DRAIN_WORKER 64
#define DCCL_DRAIN_STEP 512
int dccl_comm_drain(dccl_comm* comm, int max_measurements);
/* Hot-path slow path of a coordinated worker: waits until the leader's table for the epoch of `call`
 * has arrived, logging an error every DYNAMICCL_COORD_TIMEOUT_S. Never returns NULL. */
const dccl_table* dccl_comm_wait_for_table(dccl_comm* comm, uint64_t call);
/* Logs a summary, closes files, frees everything. */
void dccl_comm_destroy(dccl_comm* comm);

#endif
