/* emu/emulator.h: the NCCL emulator. It drives a plugin library exactly where NCCL would, on the
 * simulated cluster, for N ranks of one communicator as threads or as processes:
 *  - per rank, like NCCL's comm init: profiler init, then tuner init, on the rank's own thread;
 *  - per call: the cost table from NCCL's model, getCollInfo (in the ABI version loaded), NCCL's
 *    selection (lowest non-negative cost; the plugin's nChannels overrides), getChunkSize (v6), the
 *    simulator's latency for what NCCL runs, then the profiler events NCCL would emit: Coll start/stop
 *    on the host thread, and later, on the rank's proxy thread, KernelCh start / KernelChStop state /
 *    KernelCh stop per channel with GPU timestamps (a kernel's span leaves out the work its call leaves
 *    to the next kernel, the profile's `leftover` lines, and holds what the previous one left it);
 *  - every rank's execution of every call is compared: ranks that disagree would hang real NCCL.
 * It also checks, on request, that the plugin reproduces NCCL's own choice (default policy) or a given
 * decision table (fixed policy), and reports latencies against NCCL's default and the oracle. */
#ifndef DYNAMICCL_EMU_EMULATOR_H
#define DYNAMICCL_EMU_EMULATOR_H

#include <stddef.h>
#include <stdint.h>

#include "../core/decision_table.h"
#include "../sim/sim.h"

typedef struct dccl_emu_config {
  const char* plugin_path;      /* NULL: NCCL alone, no plugin (unless builtin is set) */
  /* A plugin linked into this program (threads mode): its ABI structs, used instead of plugin_path. */
  const struct dccl_builtin_plugin* builtin;
  /* Deterministic runs: kernel events are delivered on the host thread right after each call (no
   * proxy thread), and every sync_every calls (default 64) each rank calls sync_step(tuner context),
   * which runs the plugin's background pass (see dccl_plugin_sync_step). */
  int synchronous;
  void (*sync_step)(void* tuner_context);
  uint64_t sync_every;
  /* Synchronous runs: 1 reports each call's kernel events after the next call's launch (Coll start), as
   * NCCL's host runs ahead of a backlogged GPU in a loop of collectives; 0 right after the call. The
   * asynchronous proxy thread reports whenever it gets to them. */
  int host_ahead;
  int max_tuner, max_profiler;  /* newest ABI versions the emulated NCCL knows (6, 6 for NCCL 2.30) */
  int ranks;                    /* ranks emulated (ranks 0..ranks-1 of the communicator) */
  int processes;                /* 1: one process per rank; 0: threads of this process */
  uint64_t calls;               /* 0: the whole workload */
  uint64_t comm_id;             /* commHash NCCL would pass */
  int gpu_queue_depth;          /* kernels a rank may have queued before its host waits (default 256) */
  int verbose;                  /* 1: print the plugin's INFO lines, 2: also TRACE */
  int oracle;                   /* rank 0 also computes NCCL-default and oracle latencies */
  dccl_action_space_options oracle_options; /* tune_chunk holds only with tuner v6 (max_tuner >= 6) */
  int check_default;            /* count executions that differ from NCCL alone */
  const dccl_table* expected;   /* count executions that differ from this table's decisions */
  const char* call_log;         /* per-call CSV of rank 0, or NULL */
  /* > 0: each rank issues at most one call per pace_us of wall time, as a real job would, so that a
   * plugin's background thread keeps up (the simulator itself runs far faster than real time). */
  double pace_us;
  /* Steady-state metrics cover the last steady_fraction of the calls (0: none). */
  double steady_fraction;
  /* Faults and timing of a real job, for coordination tests:
   *  - couple_depth > 0: a rank's call n waits until every rank has issued call n - couple_depth, as
   *    a collective cannot complete before every rank launched it and a host stalls once its GPU
   *    queue is full;
   *  - host delays: before each call, with host_delay_probability, a rank pauses for up to
   *    host_delay_max_us (a host descheduled, a data loader, a checkpoint);
   *  - slow_rank (-1: none) spends slow_rank_us more on every call;
   *  - late_rank (-1: none) starts late_start_ms after the others. */
  /* Called by rank 0 every 4096 calls and at the end (a progress line for long runs), or NULL. */
  void (*progress)(uint64_t done, uint64_t total, void* argument);
  void* progress_argument;
  /* The oracle as the policy (no plugin): every rank runs the simulator's best action for each call. */
  int oracle_policy;
  uint64_t couple_depth;
  double host_delay_probability, host_delay_max_us;
  int slow_rank;
  double slow_rank_us;
  int late_rank;
  double late_start_ms;
  /* Process mode only: called in each rank's process before the plugin is loaded (e.g. to give ranks
   * different settings and provoke the disagreement the emulator must detect). */
  void (*rank_setup)(int rank, void* argument);
  void* rank_setup_argument;
  /* CUDA graphs, as a training loop captures its step (profiler v5+ tells the plugin through the
   * CollApi event's graphCaptured): the calls [graph_first, graph_first + graph_calls) are captured,
   * decided by getCollInfo but not run, and after every graph_replay_every-th call that follows (0:
   * never) the graph is replayed: every captured call runs as decided at capture, without getCollInfo,
   * its Coll event under the CollApi handle it was captured with. graph_calls 0: no graph. */
  uint64_t graph_first, graph_calls, graph_replay_every;
} dccl_emu_config;

typedef struct dccl_emu_collective_stats {
  uint64_t calls;
  double true_us, default_us, oracle_us; /* totals */
  double p50_true_us, p99_true_us;
} dccl_emu_collective_stats;

/* One (collective, size bin) stream of rank 0. */
typedef struct dccl_emu_stream_stats {
  uint64_t calls;                      /* whole run */
  uint64_t steady_calls;
  double steady_true_us, steady_default_us, steady_oracle_us;
  uint64_t convergence_calls;          /* see convergence_median_calls */
} dccl_emu_stream_stats;

typedef struct dccl_emu_result {
  int tuner_version, profiler_version;
  uint64_t calls;               /* per rank */
  uint64_t rank_mismatches;     /* calls where some rank's execution differed from rank 0's */
  uint64_t default_mismatches;  /* executions (all ranks) differing from NCCL alone */
  uint64_t expected_mismatches; /* executions (all ranks) differing from the expected table */
  uint64_t failed_calls;        /* calls NCCL could not run (no usable cost-table entry) */
  uint64_t plugin_warnings;     /* WARN lines the plugin logged */
  /* rank 0, noise-free (true) and measured latencies */
  double total_true_us, total_default_us, total_oracle_us;
  double mean_true_us, p50_true_us, p99_true_us;
  double p50_measured_us, p99_measured_us;
  dccl_emu_collective_stats by_collective[DCCL_NUM_COLLS];
  /* Steady state (oracle mode, steady_fraction > 0). A "stream" is one (collective, size bin). */
  uint64_t steady_from;                 /* first call counted */
  double steady_true_us, steady_default_us, steady_oracle_us;
  int streams;                          /* streams with calls in the steady window */
  double worst_stream_vs_default;       /* max over streams of steady true / default latency */
  int worst_stream_coll, worst_stream_bin;
  int streams_over_2pct;                /* streams slower than NCCL's default by more than 2% */
  /* Calls of a stream until every later window of 10 of its calls is within 5% of the oracle
   * (median and max over streams; "never" counts as the stream's call count). */
  double convergence_median_calls, convergence_max_calls;
  dccl_emu_stream_stats stream[DCCL_NUM_COLLS * DCCL_SIZE_BINS]; /* [coll * DCCL_SIZE_BINS + bin] */
  /* getCollInfo wall time per call, as the emulated NCCL sees it (waits included): [0] rank 0
   * (the leader when coordinated), [1] every other rank. */
  double tuner_p50_ns[2], tuner_p99_ns[2], tuner_max_ns[2];
  /* Regret over time (oracle mode): after each tenth of the calls, the latency spent so far beyond
   * the oracle's, as a fraction of the oracle's. */
  double regret_curve[10];
  /* Rank 0's graph replays: calls replayed, and their noise-free latencies (NCCL's default and the
   * oracle's in oracle mode). Not in the per-call figures above, which count each captured call once. */
  uint64_t graph_replayed_calls;
  double graph_true_us, graph_default_us, graph_oracle_us;
  double wall_seconds;
} dccl_emu_result;

void dccl_emu_config_defaults(dccl_emu_config* config);

/* Runs the workload. Returns 0 when the run completed (whatever it found), -1 with a reason when it
 * could not run (plugin not loadable, a rank process failed, out of memory). For the run,
 * DYNAMICCL_COORD_PRESENT_RANKS says how many ranks run, so that rank 0 expects no others. */
int dccl_emu_run(const dccl_emu_config* config, const dccl_sim* sim, const dccl_workload* workload,
                 dccl_emu_result* result, char* error, size_t error_size);

#endif
