/* plugin/learner.h: the learning loop of one communicator, run on the background thread.
 *
 * The hot path leaves two traces: a call log (one record per getCollInfo: cell, size, decided action)
 * and, once per cell, a snapshot of NCCL's cost table. The profiler half delivers measurements. The
 * learner joins each measurement with its call (per collective, in call order, by NCCL's seqNumber and the size),
 * feeds Agent-1 (trigger) and Agent-2 (config agent), and at each new epoch publishes the decisions of
 * the cells that changed as the table for the next epoch. It also saves and loads the policy. */
#ifndef DYNAMICCL_PLUGIN_LEARNER_H
#define DYNAMICCL_PLUGIN_LEARNER_H

#include <stdatomic.h>
#include <stdint.h>

#include "../agents/config_agent.h"
#include "../agents/trigger.h"
#include "../core/log.h"
#include "../core/measurement.h"
#include "../core/settings.h"
#include "../agents/leftover.h"
#include "call_skips.h"
#include "gpu_timing.h"

/* ---- the call log: single producer (the tuner thread), single consumer (the learner) ---- */
typedef struct dccl_call_record {
  uint64_t bytes;
  uint64_t call;      /* the communicator's call number */
  uint64_t coll_call; /* its number among this collective's calls (what NCCL's seqNumber counts too) */
  uint32_t decided; /* dccl_action the table gave (DCCL_ACTION_NCCL included) */
  uint16_t cell;
  uint8_t coll;
  uint8_t cost_snapshot; /* 1: this call stored the cell's cost-table snapshot */
} dccl_call_record;

#define DCCL_CALL_LOG_CAPACITY 8192

typedef struct dccl_call_log {
  dccl_call_record records[DCCL_CALL_LOG_CAPACITY];
  _Alignas(64) _Atomic uint64_t head;
  _Alignas(64) _Atomic uint64_t tail;
  _Atomic uint64_t dropped;
} dccl_call_log;

static inline void dccl_call_log_push(dccl_call_log* log, const dccl_call_record* record) {
  uint64_t head = atomic_load_explicit(&log->head, memory_order_relaxed);
  if (head - atomic_load_explicit(&log->tail, memory_order_acquire) >= DCCL_CALL_LOG_CAPACITY) {
    atomic_store_explicit(&log->dropped, atomic_load_explicit(&log->dropped, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return;
  }
  log->records[head % DCCL_CALL_LOG_CAPACITY] = *record;
  atomic_store_explicit(&log->head, head + 1, memory_order_release);
}

/* Cost-table snapshots, one per cell, written once by the hot path. */
typedef struct dccl_cost_snapshots {
  float cost[DCCL_TABLE_CELLS][DCCL_COST_ENTRIES];
  _Atomic uint8_t ready[DCCL_TABLE_CELLS];
} dccl_cost_snapshots;

/* ---- the learner ---- */
typedef struct dccl_learner_options {
  int trigger;               /* 0: no Agent-1; 1: plain CUSUM; 2: LSTM + CUSUM */
  dccl_cost_mode cost;       /* what a call is charged (core/settings.h) */
  int learn_after_switch;    /* 1: also learn a call right after the cell's call of another action (after_switch)
                                a run's first call right after a larger call of another cell (run_start) and a
                                call launched after a host pause (after_pause) */
  int learn_first_calls;     /* 1: also learn the first call of each collective, datatype, algorithm and protocol (first_call) */
  dccl_agent_options agent;  /* agent.learning: 1 learn mode, 0 frozen; agent.model_intensity < 0: from gaps */
  dccl_trigger_options trigger_options;
} dccl_learner_options;

#define DCCL_JOIN_DEPTH 1024

/* The join of one collective's calls with its measurements. Both arrive in order, but either side
 * can lose some: measurements (profiler pool or queue full: NCCL's seqNumber then skips), calls (the
 * call log full, or a learner so far behind that pending calls overflow). NCCL's seqNumber minus our
 * call number is constant while every call gives one measurement (0 from the communicator's start,
 * both counting from 0), so it tells which call a measurement belongs to; it moves when NCCL
 * aggregates grouped calls (one getCollInfo, several measurements), where the sizes decide instead. */
typedef struct dccl_join_stream {
  dccl_call_record pending[DCCL_JOIN_DEPTH]; /* calls read from the log, not yet measured, in order */
  uint32_t head, count;
  uint64_t read_end;    /* one past the newest call number read from the log */
  uint64_t joined_end;  /* one past the call number of the last call joined */
  int64_t seq_offset;   /* seqNumber minus call number at the last join */
  uint64_t seq_end;     /* one past the newest seqNumber seen */
  uint64_t seqs_missed; /* seqNumbers skipped since the last join: measurements lost */
} dccl_join_stream;

typedef struct dccl_learner_counters {
  uint64_t measurements, joined, unjoined, skipped_calls, publications, onsets, recoveries;
  uint64_t lost_calls; /* measurements of calls the learner lost (call log full, or too far behind) */
  uint64_t stream_timed; /* measurements whose next call was waiting (costed by stream time with DCCL_COST_STREAM) */
  uint64_t leftover_charged; /* DCCL_COST_LEFTOVER: measurements charged a leftover beyond their span */
  uint64_t after_switch; /* measurements not learned: the cell's call right before ran another action */
  uint64_t first_calls;  /* measurements not learned: the communicator's first of their collective, datatype, algorithm and protocol */
  uint64_t run_starts;   /* measurements not learned: the first of a run of their cell's calls, where its calls come in runs */
  uint64_t after_pause;  /* measurements not learned: launched after a host pause, where their cell's calls come back to back */
  uint64_t cpu_ns; /* thread CPU time spent in dccl_learner_step */
} dccl_learner_counters;

typedef struct dccl_learner {
  dccl_learner_options options;
  dccl_config_agent agent;
  dccl_trigger trigger;
  int trigger_ready;
  dccl_join_stream streams[DCCL_NUM_COLLS]; /* calls waiting for their measurement, per collective */
  dccl_gpu_timing timing; /* kernel spans and idle gaps, of every measured call: the compute-intensity estimate */
  dccl_table* unpublished; /* a filled slot no epoch has taken yet */
  uint64_t step_started_ns;
  dccl_learner_counters counters;
  /* With options.cost stream or leftover: the last joined measurement with host stamps, held until
   * the communicator's next call is measured (or is known not to have been waiting): its cost may be
   * the time until that call's kernel could start (plugin/learner.c, stream_cost_us), and that time
   * tells what its action leaves behind. */
  int held_valid;
  dccl_measurement held;
  dccl_call_record held_call;
  /* Which joined measurements the agents leave out (plugin/call_skips.h). */
  dccl_call_skips skips;
  /* DCCL_COST_LEFTOVER: what each action left to the next call, per agent cell slot. */
  dccl_leftover_cell leftovers[DCCL_AGENT_MAX_CELLS];
} dccl_learner;

/* Evaluation tools: a process-wide listener told of every Agent-1 event (the call number of the
 * measurement that raised it, the stream, DCCL_TRIGGER_EVENT_ONSET or _RECOVERED). Called on the
 * background thread; NULL removes it. */
typedef void (*dccl_trigger_listener)(uint64_t call, int coll, int size_bin, int event, void* context);
void dccl_learner_set_trigger_listener(dccl_trigger_listener listener, void* context);

int dccl_learner_init(dccl_learner* learner, const dccl_learner_options* options);
void dccl_learner_free(dccl_learner* learner);
/* Memory of learning on one communicator: the learner with both agents, plus the call log and the
 * cost snapshots the communicator allocates beside it. */
size_t dccl_learning_memory_bytes(const dccl_learner* learner);

/* What the learner works on (all owned by the communicator). */
typedef struct dccl_learner_inputs {
  dccl_call_log* calls;
  dccl_cost_snapshots* costs;
  struct dccl_measurement_queue* measurements; /* NULL: nothing measured */
  struct dccl_table_store* tables;
  _Atomic uint64_t* call_counter;
  /* The profiler's count of calls started on the communicator (dccl_event_pool.calls_started); NULL
   * where there is none. */
  _Atomic uint64_t* calls_started;
  const dccl_logger* logger;
  /* NULL: tables are committed straight into `tables`; else through this (a coordinated leader,
   * which also sends them to the workers). Same contract as dccl_table_store_commit. */
  int (*commit)(void* context, struct dccl_table_store* tables, dccl_table* table);
  void* commit_context;
} dccl_learner_inputs;

/* One pass of the background thread: begin, take each measurement, end (publishes a table for the
 * next epoch when a new epoch has begun). dccl_learner_step does all three from inputs->measurements. */
void dccl_learner_begin(dccl_learner* learner, const dccl_learner_inputs* inputs);
void dccl_learner_take(dccl_learner* learner, const dccl_learner_inputs* inputs, const dccl_measurement* measurement);
void dccl_learner_end(dccl_learner* learner, const dccl_learner_inputs* inputs);
/* The communicator ends: a measurement still held for its stream cost is learned with its span (with
 * DCCL_COST_LEFTOVER, learned already, it gives no excess sample). */
void dccl_learner_flush(dccl_learner* learner, const dccl_learner_inputs* inputs);
void dccl_learner_step(dccl_learner* learner, const dccl_learner_inputs* inputs);
/* Behind the job (measurements waiting), the learner runs one DQN training step in 4 and owes the
 * others: training is most of its CPU time, and a learner that falls over 1,024 calls behind loses
 * measurements. Caught up, it pays up to `max_steps` owed steps back per call. */
void dccl_learner_defer_training(dccl_learner* learner, int defer);
int dccl_learner_pay_training(dccl_learner* learner, int max_steps);
/* Writes the current decisions into the table of epoch 0, before the first call (a frozen policy,
 * or a warm start). */
void dccl_learner_publish_initial(dccl_learner* learner, struct dccl_table_store* tables);

#endif
