/* emu/emulator.c: runs ranks (threads or processes) that drive the plugin like NCCL on the simulator,
 * each with a host thread (tuner calls, Coll events) and a proxy thread (kernel-channel events). */
#include "emulator.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../abi/nccl_profiler_abi.h"
#include "../core/clock.h"
#include "../core/rng.h"
#include "../core/sorting.h"
#include "nccl_calls.h"
#include "plugin_loader.h"

/* ---- the plugin's logger, as NCCL's ---- */
static _Atomic int log_verbosity;
static _Atomic uint64_t log_warnings;

static void emulator_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
                            ...) {
  (void)flags;
  (void)file;
  (void)line;
  if (level == NCCL_LOG_WARN) atomic_fetch_add(&log_warnings, 1);
  int verbosity = atomic_load(&log_verbosity);
  int show = level == NCCL_LOG_WARN || (level == NCCL_LOG_INFO && verbosity >= 1) || (level == NCCL_LOG_TRACE && verbosity >= 2);
  if (!show) return;
  char message[1200];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  fprintf(stderr, "[emulated NCCL] %s%s\n", level == NCCL_LOG_WARN ? "WARN " : "", message);
}

/* ---- a rank's GPU: kernels queued by the host thread, reported by the proxy thread ---- */
typedef struct kernel {
  void* coll_handle;
  int channels;
  uint64_t gpu_start_ns, duration_ns;
} kernel;

typedef struct kernel_queue {
  kernel* items;
  size_t capacity;
  _Alignas(64) _Atomic size_t head;
  _Alignas(64) _Atomic size_t tail; /* moves once a kernel's events are delivered */
  _Atomic int closed;
} kernel_queue;

/* ---- state shared by all ranks (in shared memory when ranks are processes) ---- */
typedef struct shared_state {
  uint64_t calls;
  int ranks;
  uint64_t* executions;        /* [call * ranks + rank], packed */
  double* true_us;             /* rank 0, per call */
  double* measured_us;         /* rank 0, per call */
  double* default_us;          /* rank 0, per call (oracle mode) */
  double* oracle_us;           /* rank 0, per call (oracle mode) */
  uint8_t* collectives;        /* rank 0, per call */
  uint8_t* size_bins;          /* rank 0, per call */
  _Atomic uint64_t default_mismatches, expected_mismatches, failed_calls, plugin_warnings;
  _Atomic int tuner_version, profiler_version;
  _Atomic int rank_failures;
  _Atomic uint64_t* issued;    /* [rank]: calls issued */
  uint64_t* tuner_histogram;   /* [rank * TIME_BUCKETS + bucket]: getCollInfo wall times */
  /* rank 0's CUDA-graph replays: calls replayed and their latencies (default and oracle in oracle mode) */
  uint64_t graph_replayed;
  double graph_true_us, graph_default_us, graph_oracle_us;
} shared_state;

/* A log-linear histogram of nanoseconds: 8 sub-buckets per power of two. */
#define TIME_BUCKETS 320
static int time_bucket(uint64_t ns) {
  if (ns < 16) return (int)ns;
  int e = 63 - __builtin_clzll(ns);
  int bucket = 16 + (e - 4) * 8 + (int)((ns >> (e - 3)) & 7);
  return bucket < TIME_BUCKETS ? bucket : TIME_BUCKETS - 1;
}
static double bucket_ns(int bucket) {
  if (bucket < 16) return bucket;
  int e = (bucket - 16) / 8 + 4, sub = (bucket - 16) % 8;
  return ldexp(1.0 + (sub + 0.5) / 8.0, e);
}

typedef struct rank_context {
  const dccl_emu_config* config;
  const dccl_sim* sim;
  const dccl_workload* workload;
  dccl_loaded_plugin* plugin; /* shared in threads mode */
  shared_state* shared;
  int rank;
  void* tuner_context;
  void* profiler_context;
  int profiling;
  kernel_queue queue;
  FILE* call_log;
} rank_context;

/* A call captured into the rank's emulated CUDA graph: what it runs at every replay, and its CollApi
 * handle, which NCCL keeps in the captured task and passes as the parent of every replay's Coll event. */
typedef struct graph_call {
  dccl_call call;
  dccl_execution execution;
  void* api_handle;
} graph_call;

static uint64_t pack_execution(const dccl_execution* e) {
  return ((uint64_t)(e->algo & 0xF) << 60) | ((uint64_t)(e->proto & 0xF) << 56) | ((uint64_t)(e->channels & 0xFF) << 48) |
         ((uint64_t)e->chunk & 0xFFFFFFFFFFFFULL);
}

static int same_execution(const dccl_execution* a, const dccl_execution* b) {
  return a->algo == b->algo && a->proto == b->proto && a->channels == b->channels && a->chunk == b->chunk;
}

/* What NCCL runs when the tuner answers `action` through ABI `version` (v2's nChannels applies even
 * when NCCL drops the pair; chunk sizes exist only from v6). Mirrors the plugin's contract. */
static int expected_execution(const dccl_sim* sim, const dccl_call* call, dccl_action action, int version,
                              dccl_execution* out) {
  if (version < 6 && !dccl_action_is_nccl(action))
    action = dccl_action_make(dccl_action_algo(action), dccl_action_proto(action), dccl_action_channels(action), 0);
  if (version == 2 && !dccl_action_is_nccl(action)) {
    float cost[DCCL_NUM_ALGOS * DCCL_NUM_PROTOS];
    dccl_nccl_cost_table(&sim->model, call->coll, call->bytes, call->pipe_ops, cost);
    int a = dccl_action_algo(action), p = dccl_action_proto(action);
    int nvls = cost[DCCL_ALGO_NVLS * 3 + 2] != -1.0f || cost[DCCL_ALGO_NVLS_TREE * 3 + 2] != -1.0f;
    int collnet = cost[DCCL_ALGO_COLLNET_CHAIN * 3 + 2] != -1.0f;
    int offered = dccl_algo_proto_allowed(call->coll, a, p, sim->profile.n_ranks, sim->profile.n_nodes) &&
                  !((a == DCCL_ALGO_NVLS || a == DCCL_ALGO_NVLS_TREE) && !nvls) &&
                  !((a == DCCL_ALGO_COLLNET_DIRECT || a == DCCL_ALGO_COLLNET_CHAIN) && !collnet);
    if (!offered) action = DCCL_ACTION_NCCL;
    else if (cost[a * 3 + p] == -1.0f) {
      /* NCCL drops the pair but keeps the channel count the v2 tuner returned. */
      if (dccl_nccl_select(&sim->model, cost, call->coll, call->bytes, dccl_action_channels(action), out) != 0) return -1;
      size_t chunk, ceiling;
      dccl_nccl_chunk(&sim->model, call->coll, call->bytes, out, &chunk, &ceiling);
      out->chunk = dccl_nccl_finish_chunk(out->proto, chunk, ceiling);
      return 0;
    }
  }
  return dccl_sim_execute(sim, call, action, out);
}

/* The kernel-channel events of one kernel, as NCCL's proxy thread reports them. */
static void report_kernel(rank_context* r, const kernel* k) {
  /* Channels start a few tens of ns apart; the last one to finish ends at start + duration. */
  for (int c = 0; c < k->channels; c++) {
    uint64_t start = k->gpu_start_ns + (uint64_t)c * 40;
    uint64_t stop = k->gpu_start_ns + k->duration_ns - (uint64_t)(k->channels - 1 - c) * 25;
    if (stop <= start) stop = start + 1;
    void* h = dccl_emu_profiler_channel_start(r->plugin, r->profiler_context, r->rank, k->coll_handle, c, start);
    dccl_emu_profiler_channel_stop(r->plugin, h, stop);
  }
}

static void* proxy_main(void* argument) {
  rank_context* r = argument;
  kernel_queue* q = &r->queue;
  for (;;) {
    size_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
    if (tail == atomic_load_explicit(&q->head, memory_order_acquire)) {
      if (atomic_load_explicit(&q->closed, memory_order_acquire) &&
          tail == atomic_load_explicit(&q->head, memory_order_acquire))
        break;
      sched_yield();
      continue;
    }
    report_kernel(r, &q->items[tail % q->capacity]); /* its slot stays taken until then */
    atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
  }
  return NULL;
}

static void queue_kernel(kernel_queue* q, const kernel* k) {
  size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
  while (head - atomic_load_explicit(&q->tail, memory_order_acquire) >= q->capacity) sched_yield(); /* GPU backlog full */
  q->items[head % q->capacity] = *k;
  atomic_store_explicit(&q->head, head + 1, memory_order_release);
}

/* Element size and per-rank count NCCL's profiler descriptor would carry for `bytes`. */
static void descriptor_count(int coll, size_t bytes, int n_ranks, size_t* count, const char** datatype) {
  size_t divisor = (coll == DCCL_COLL_ALLGATHER || coll == DCCL_COLL_REDUCESCATTER) ? (size_t)n_ranks : 1;
  if (bytes % (4 * divisor) == 0) {
    *count = bytes / (4 * divisor);
    *datatype = "ncclFloat32";
  } else {
    *count = bytes / divisor;
    *datatype = "ncclInt8";
  }
}

/* A rank's GPU timeline and the kernel whose events are still to be reported. */
typedef struct gpu_timeline {
  uint64_t clock_ns;   /* the GPU's globaltimer where its queue stands */
  uint64_t carried_ns; /* work the last kernel left to this rank's next one */
  uint64_t tail_ns;    /* the last call's tail that the next kernel waits for (the profile's noise.tail_share) */
  kernel pending;      /* host_ahead: the last call's kernel, reported after the next call's launch */
  int pending_kernel;
  int kernel_events;   /* the plugin asked for KernelCh events */
} gpu_timeline;

/* The workload's `pause` before a call: the application waits for its stream (every kernel's end
 * reaches the profiler before the call is launched), then works on the host. */
static void drain_stream(rank_context* r, gpu_timeline* g) {
  if (g->pending_kernel) {
    report_kernel(r, &g->pending);
    g->pending_kernel = 0;
  }
  kernel_queue* q = &r->queue;
  if (q->items == NULL) return;
  size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
  for (int spin = 0; atomic_load_explicit(&q->tail, memory_order_acquire) < head; spin++)
    if (spin > 32) sched_yield();
}

/* Runs one call on the rank's GPU as NCCL launches it: the Coll event (its parent the call's CollApi
 * handle, `seq` its seqNumber), then its kernel's channel events, now or later. The kernel's span is
 * the call's work less what it leaves to the next kernel, plus what the previous one left it to run
 * (the profile's `leftover` lines), plus the previous call's tail (noise.tail_share: a measurement
 * effect, not in the call's accounted latency): less the gap before this call, or all of it after a
 * pause, which the ranks leave apart (on the GPU test machine the first call after collbench's check of
 * a larger size's results waits for the peer that left it later: docs/simulator.md), and then also the
 * ranks' skew (noise.pause_skew_us and noise.pause_share of the call's latency). A pause's idle GPU
 * runs what the last kernel left. */
static void launch(rank_context* r, gpu_timeline* g, const dccl_call* call, const dccl_execution* e, double measured_us,
                   void* parent, uint64_t seq) {
  const dccl_emu_config* cfg = r->config;
  const dccl_truth_params* truth = &r->sim->profile.truth;
  uint64_t duration_ns = (uint64_t)llround(measured_us * 1000.0);
  if (duration_ns == 0) duration_ns = 1;
  uint64_t gap_ns = (uint64_t)llround(call->gap_us * 1000.0);
  uint64_t pause_ns = (uint64_t)llround(call->pause_us * 1000.0);
  uint64_t waited_ns = g->tail_ns > gap_ns ? g->tail_ns - gap_ns : 0;
  if (pause_ns > 0) {
    if (r->profiling) drain_stream(r, g);
    g->carried_ns = g->carried_ns > pause_ns ? g->carried_ns - pause_ns : 0;
    waited_ns = g->tail_ns + (uint64_t)llround(truth->pause_skew_us * 1000.0 + truth->pause_share * (double)duration_ns);
  }
  g->clock_ns += pause_ns + gap_ns;
  g->tail_ns = (uint64_t)llround((double)duration_ns * truth->tail_share);
  double later_share, longer_share;
  dccl_sim_leftover(r->sim, call, e, &later_share, &longer_share);
  uint64_t later_ns = (uint64_t)llround((double)duration_ns * later_share);
  uint64_t longer_ns = (uint64_t)llround((double)duration_ns * longer_share);
  uint64_t span_ns = duration_ns - later_ns - longer_ns + g->carried_ns + waited_ns;
  g->carried_ns = longer_ns;
  if (r->profiling) {
    size_t count;
    const char* datatype;
    descriptor_count(call->coll, call->bytes, r->sim->profile.n_ranks, &count, &datatype);
    void* handle = dccl_emu_profiler_coll_start(r->plugin, r->profiler_context, r->rank, parent, seq, call->coll, count,
                                                datatype, e->channels, e->algo, e->proto);
    dccl_emu_profiler_stop(r->plugin, handle); /* NCCL stops the Coll event right after enqueueing */
    if (g->pending_kernel) { /* host_ahead: this call was launched before the last kernel's end was seen */
      report_kernel(r, &g->pending);
      g->pending_kernel = 0;
    }
    if (handle != NULL && g->kernel_events) {
      kernel k = {handle, e->channels, g->clock_ns, span_ns};
      if (cfg->synchronous && cfg->host_ahead) g->pending = k, g->pending_kernel = 1;
      else if (cfg->synchronous) report_kernel(r, &k);
      else queue_kernel(&r->queue, &k);
    }
  }
  g->clock_ns += span_ns + later_ns;
}

static void pause_us(double us) {
  if (us <= 0) return;
  if (us < 50) { /* shorter than a sleep can be: spin */
    uint64_t until = dccl_monotonic_ns() + (uint64_t)(us * 1000.0);
    while (dccl_monotonic_ns() < until) {
    }
    return;
  }
  struct timespec t = {(time_t)(us / 1e6), (long)fmod(us * 1000.0, 1e9)};
  nanosleep(&t, NULL);
}

/* Coupling: call `index` waits until every rank has issued call index - depth. */
static void wait_for_ranks(shared_state* shared, uint64_t index, uint64_t depth) {
  if (index < depth) return;
  for (int spin = 0;; spin++) {
    uint64_t slowest = UINT64_MAX;
    for (int k = 0; k < shared->ranks; k++) {
      uint64_t issued = atomic_load_explicit(&shared->issued[k], memory_order_acquire);
      if (issued < slowest) slowest = issued;
    }
    if (slowest == UINT64_MAX || slowest + depth >= index) return;
    if (spin > 32) sched_yield();
  }
}

/* NCCL's default latency of a call and the oracle's, which is never worse than what the call ran. */
static void oracle_latencies(dccl_oracle* oracle, const dccl_call* call, const dccl_conditions* conditions,
                             double true_us, double* default_us, double* oracle_us) {
  dccl_oracle_answer answer;
  dccl_oracle_query(oracle, call, conditions, &answer);
  *default_us = answer.default_us;
  *oracle_us = answer.best_us < true_us ? answer.best_us : true_us;
}

/* One replay of the rank's graph: every captured call runs as decided at capture, with no getCollInfo;
 * its Coll event hangs under the CollApi handle it was captured with, and NCCL counts it in the
 * seqNumber only where that handle (or a Group event's) is set and kernel events are on (RAS's
 * consistency rule, src/plugin/profiler.cc). Rank 0 accounts the replayed calls' latencies. */
static void replay_graph(rank_context* r, gpu_timeline* g, const graph_call* graph, uint64_t size, uint64_t* seq,
                         const dccl_conditions* conditions, uint64_t index, dccl_oracle* oracle) {
  shared_state* shared = r->shared;
  dccl_call previous;
  for (uint64_t i = 0; i < size; i++) {
    const graph_call* c = &graph[i];
    /* The replay's calls in a row, numbered with the top bit set, so that their runs draw levels apart from
     * the workload's (dccl_sim_run_factor). */
    dccl_call replayed = c->call;
    replayed.index = (index + i) | (1ull << 63);
    replayed.run_start = dccl_call_run_start(i > 0 ? &previous : NULL, &replayed);
    previous = replayed;
    double true_us = dccl_sim_true_us(r->sim, &c->call, &c->execution, conditions);
    double measured_us =
      dccl_sim_measure(r->sim, c->call.coll, (double)c->call.bytes, true_us, conditions, index, r->rank) *
      dccl_sim_run_factor(r->sim, &replayed, &c->execution);
    uint64_t number = seq[c->call.coll];
    if (c->api_handle != NULL && g->kernel_events) seq[c->call.coll]++;
    launch(r, g, &c->call, &c->execution, measured_us, c->api_handle, number);
    if (r->rank != 0) continue;
    shared->graph_replayed++;
    shared->graph_true_us += true_us;
    if (oracle != NULL) {
      double default_us, oracle_us;
      oracle_latencies(oracle, &c->call, conditions, true_us, &default_us, &oracle_us);
      shared->graph_default_us += default_us;
      shared->graph_oracle_us += oracle_us;
    }
  }
}

static int run_rank(rank_context* r) {
  const dccl_emu_config* cfg = r->config;
  const dccl_sim* sim = r->sim;
  const dccl_profile* profile = &sim->profile;
  shared_state* shared = r->shared;
  dccl_loaded_plugin* plugin = r->plugin;
  int mask = 0;

  if (r->rank == cfg->late_rank && cfg->late_start_ms > 0) pause_us(cfg->late_start_ms * 1000.0);
  dccl_rng delays;
  dccl_rng_seed(&delays, 0xDE1A7ULL + (uint64_t)r->rank);
  uint64_t* histogram = &shared->tuner_histogram[(size_t)r->rank * TIME_BUCKETS];

  /* Communicator init: profiler first, then tuner, on this thread (as NCCL does). */
  if (plugin != NULL && plugin->profiler_version != 0)
    dccl_emu_profiler_init(plugin, &r->profiler_context, cfg->comm_id, &mask, profile->n_nodes, profile->n_ranks, r->rank,
                           emulator_logger);
  /* NCCL emits Coll events when any event under them is active, KernelCh events only when asked. */
  r->profiling = (mask & (ncclProfileColl | ncclProfileKernelCh)) != 0;
  int kernel_events = (mask & ncclProfileKernelCh) != 0;
  uint64_t graph_capacity = cfg->graph_calls < shared->calls ? cfg->graph_calls : shared->calls, graph_size = 0;
  graph_call* graph = graph_capacity > 0 ? calloc(graph_capacity, sizeof(graph_call)) : NULL;
  if (graph_capacity > 0 && graph == NULL) return -1;
  if (plugin != NULL && plugin->tuner_version != 0)
    dccl_emu_tuner_init(plugin, &r->tuner_context, cfg->comm_id, profile->n_ranks, profile->n_nodes, emulator_logger);

  pthread_t proxy;
  int proxy_running = 0;
  if (r->profiling && !cfg->synchronous) {
    r->queue.capacity = (size_t)(cfg->gpu_queue_depth > 0 ? cfg->gpu_queue_depth : 256);
    r->queue.items = calloc(r->queue.capacity, sizeof(kernel));
    if (r->queue.items == NULL || pthread_create(&proxy, NULL, proxy_main, r) != 0) {
      free(r->queue.items);
      free(graph);
      return -1;
    }
    proxy_running = 1;
  }

  dccl_oracle oracle;
  int use_oracle = (r->rank == 0 && cfg->oracle) || cfg->oracle_policy;
  /* The best a tuner can do: chunk sizes only where the emulated tuner ABI sets them (v6). */
  dccl_action_space_options oracle_options = cfg->oracle_options;
  if (cfg->max_tuner < 6) oracle_options.tune_chunk = 0;
  if (use_oracle && dccl_oracle_init(&oracle, sim, &oracle_options) != 0) {
    if (cfg->oracle_policy) {
      free(graph);
      return -1;
    }
    use_oracle = 0;
  }
  uint64_t seq[DCCL_NUM_COLLS] = {0};
  gpu_timeline gpu = {.clock_ns = 1000000000ULL, .kernel_events = kernel_events};
  /* NCCL 2.28+ starts a CollApi event per enqueued collective when any event under it is active. */
  int api_events = plugin != NULL && plugin->profiler_version >= 5 &&
                   (mask & (ncclProfileCollApi | ncclProfileColl | ncclProfileProxyOp | ncclProfileProxyStep |
                            ncclProfileKernelCh | ncclProfileNetPlugin)) != 0;
  size_t hint = 0;
  dccl_workload_cursor cursor;
  dccl_workload_start(&cursor, r->workload, shared->calls);
  dccl_call call;
  uint64_t sync_every = cfg->sync_every > 0 ? cfg->sync_every : 64;
  struct timespec pace_start;
  clock_gettime(CLOCK_MONOTONIC, &pace_start);
  while (dccl_workload_next(&cursor, &call)) {
    if (cfg->pace_us > 0) {
      double at = (double)pace_start.tv_nsec + cfg->pace_us * 1000.0 * (double)call.index;
      struct timespec deadline = {pace_start.tv_sec + (time_t)(at / 1e9), (long)fmod(at, 1e9)};
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL);
    }
    if (cfg->synchronous && cfg->sync_step != NULL && r->tuner_context != NULL && call.index % sync_every == 0 &&
        call.index > 0)
      cfg->sync_step(r->tuner_context);
    if (cfg->couple_depth > 0) wait_for_ranks(shared, call.index, cfg->couple_depth);
    if (cfg->host_delay_probability > 0 && dccl_rng_uniform(&delays) < cfg->host_delay_probability)
      pause_us(dccl_rng_uniform(&delays) * cfg->host_delay_max_us);
    if (r->rank == cfg->slow_rank && cfg->slow_rank_us > 0) pause_us(cfg->slow_rank_us);
    dccl_conditions conditions;
    dccl_sim_conditions(sim, call.index, &hint, &conditions);
    int captured = call.index >= cfg->graph_first && call.index - cfg->graph_first < cfg->graph_calls;
    /* collTaskAppend: the CollApi event starts and stops as the call is enqueued; NCCL decides (getCollInfo)
     * when the group ends, after it. */
    void* api_handle = NULL;
    if (api_events) {
      size_t count;
      const char* datatype;
      descriptor_count(call.coll, call.bytes, profile->n_ranks, &count, &datatype);
      api_handle = dccl_emu_profiler_coll_api_start(plugin, r->profiler_context, r->rank, call.coll, count, datatype,
                                                    captured);
      dccl_emu_profiler_stop(plugin, api_handle);
    }
    float cost[DCCL_NUM_ALGOS * DCCL_NUM_PROTOS];
    dccl_nccl_cost_table(&sim->model, call.coll, call.bytes, call.pipe_ops, cost);
    int plugin_channels = 0;
    if (plugin != NULL && plugin->tuner_version != 0) {
      uint64_t before = dccl_monotonic_ns();
      dccl_emu_tuner_get_coll_info(plugin, r->tuner_context, call.coll, call.bytes, call.pipe_ops, call.reg_buff, cost,
                                   &plugin_channels);
      histogram[time_bucket(dccl_monotonic_ns() - before)]++;
    }
    dccl_execution e;
    if (cfg->oracle_policy) {
      dccl_oracle_answer best;
      dccl_oracle_query(&oracle, &call, &conditions, &best);
      e = best.best_execution;
      shared->executions[call.index * (uint64_t)shared->ranks + (uint64_t)r->rank] = pack_execution(&e);
      goto executed;
    }
    if (dccl_nccl_select(&sim->model, cost, call.coll, call.bytes, plugin_channels, &e) != 0) {
      atomic_fetch_add(&shared->failed_calls, 1);
      shared->executions[call.index * (uint64_t)shared->ranks + (uint64_t)r->rank] = UINT64_MAX;
      continue;
    }
    size_t chunk, ceiling;
    dccl_nccl_chunk(&sim->model, call.coll, call.bytes, &e, &chunk, &ceiling);
    if (plugin != NULL)
      dccl_emu_tuner_chunk_size(plugin, r->tuner_context, call.coll, call.bytes, e.algo, e.proto, e.channels, &chunk);
    e.chunk = dccl_nccl_finish_chunk(e.proto, chunk, ceiling);
    shared->executions[call.index * (uint64_t)shared->ranks + (uint64_t)r->rank] = pack_execution(&e);

    if (cfg->check_default) {
      dccl_execution alone;
      if (dccl_sim_execute(sim, &call, DCCL_ACTION_NCCL, &alone) != 0 || !same_execution(&alone, &e))
        atomic_fetch_add(&shared->default_mismatches, 1);
    }
    if (cfg->expected != NULL) {
      dccl_action wanted = dccl_table_get(cfg->expected, dccl_cell_for_call(call.coll, call.bytes, call.pipe_ops, call.reg_buff));
      dccl_execution expected;
      int version = plugin != NULL ? plugin->tuner_version : 0;
      if (expected_execution(sim, &call, version ? wanted : DCCL_ACTION_NCCL, version, &expected) != 0 ||
          !same_execution(&expected, &e))
        atomic_fetch_add(&shared->expected_mismatches, 1);
    }

  executed:;
    double true_us = dccl_sim_true_us(sim, &call, &e, &conditions);
    double measured_us = dccl_sim_measure(sim, call.coll, (double)call.bytes, true_us, &conditions, call.index, r->rank) *
                         dccl_sim_run_factor(sim, &call, &e);
    if (captured) {
      /* Recorded into the graph, not run: with kernel events on, NCCL runs the plan's proxy work (and
       * so its profiler events) from a host node of the graph, at every replay. */
      if (graph_size < graph_capacity) graph[graph_size++] = (graph_call){call, e, api_handle};
    } else {
      launch(r, &gpu, &call, &e, measured_us, api_handle, seq[call.coll]++);
    }
    atomic_store_explicit(&shared->issued[r->rank], call.index + 1, memory_order_release);
    if (r->rank == 0 && cfg->progress != NULL && ((call.index + 1) % 4096 == 0 || call.index + 1 == shared->calls))
      cfg->progress(call.index + 1, shared->calls, cfg->progress_argument);

    if (r->rank == 0) {
      shared->true_us[call.index] = true_us;
      shared->measured_us[call.index] = measured_us;
      shared->collectives[call.index] = (uint8_t)call.coll;
      shared->size_bins[call.index] = (uint8_t)dccl_size_bin(call.bytes);
      double default_us = NAN, oracle_us = NAN;
      if (use_oracle) {
        oracle_latencies(&oracle, &call, &conditions, true_us, &default_us, &oracle_us);
        shared->default_us[call.index] = default_us;
        shared->oracle_us[call.index] = oracle_us;
      }
      if (r->call_log != NULL)
        fprintf(r->call_log, "%llu,%s,%zu,%s,%s,%d,%zu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", (unsigned long long)call.index,
                dccl_coll_name(call.coll), call.bytes, dccl_algo_name(e.algo), dccl_proto_name(e.proto), e.channels,
                e.chunk, true_us, measured_us, default_us, oracle_us, conditions.congestion, conditions.interference);
    }
    uint64_t graph_end = cfg->graph_first + cfg->graph_calls;
    if (graph_size > 0 && cfg->graph_replay_every > 0 && call.index >= graph_end &&
        (call.index - graph_end + 1) % cfg->graph_replay_every == 0)
      replay_graph(r, &gpu, graph, graph_size, seq, &conditions, call.index, use_oracle ? &oracle : NULL);
  }
  if (gpu.pending_kernel) report_kernel(r, &gpu.pending);
  free(graph);
  if (use_oracle) dccl_oracle_free(&oracle);
  atomic_store_explicit(&shared->issued[r->rank], UINT64_MAX, memory_order_release); /* done: never waited for */

  if (proxy_running) {
    atomic_store_explicit(&r->queue.closed, 1, memory_order_release);
    pthread_join(proxy, NULL);
    free(r->queue.items);
  }
  if (plugin != NULL && plugin->tuner_version != 0) dccl_emu_tuner_finalize(plugin, r->tuner_context);
  if (plugin != NULL && plugin->profiler_version != 0) dccl_emu_profiler_finalize(plugin, r->profiler_context);
  return 0;
}

static void* rank_thread(void* argument) {
  rank_context* r = argument;
  if (run_rank(r) != 0) atomic_fetch_add(&r->shared->rank_failures, 1);
  return NULL;
}

void dccl_emu_config_defaults(dccl_emu_config* c) {
  memset(c, 0, sizeof(*c));
  c->max_tuner = 6;
  c->max_profiler = 6;
  c->ranks = 2;
  c->comm_id = 0xD1CC1C0FFEE00001ULL;
  c->gpu_queue_depth = 256;
  c->slow_rank = -1;
  c->late_rank = -1;
  c->oracle = 1;
  c->oracle_options.max_channels = 32;
  c->oracle_options.tune_chunk = 0;
}

static double percentile(double* sorted, uint64_t n, double q) {
  if (n == 0) return NAN;
  uint64_t index = (uint64_t)floor(q * (double)(n - 1) + 0.5);
  return sorted[index];
}

#define STREAMS (DCCL_NUM_COLLS * DCCL_SIZE_BINS)
#define CONVERGENCE_WINDOW 10

/* Steady-state and convergence metrics from rank 0's per-call latencies (oracle mode). */
static void summarise_steady(const shared_state* s, const dccl_emu_config* cfg, dccl_emu_result* out) {
  if (!cfg->oracle || cfg->steady_fraction <= 0 || s->calls == 0) return;
  double fraction = cfg->steady_fraction < 1 ? cfg->steady_fraction : 1;
  out->steady_from = s->calls - (uint64_t)ceil(fraction * (double)s->calls);
  double* window = calloc((size_t)STREAMS * CONVERGENCE_WINDOW, sizeof(double));
  uint64_t* stream_calls = calloc(STREAMS, sizeof(uint64_t));
  uint64_t* last_bad = calloc(STREAMS, sizeof(uint64_t));
  double* sorted = calloc(STREAMS, sizeof(double));
  if (!window || !stream_calls || !last_bad || !sorted) goto done;
  for (uint64_t c = 0; c < s->calls; c++) {
    int stream = s->collectives[c] % DCCL_NUM_COLLS * DCCL_SIZE_BINS + s->size_bins[c] % DCCL_SIZE_BINS;
    double ratio = s->oracle_us[c] > 0 ? s->true_us[c] / s->oracle_us[c] : 1;
    uint64_t n = stream_calls[stream]++;
    window[stream * CONVERGENCE_WINDOW + n % CONVERGENCE_WINDOW] = ratio;
    if (n + 1 >= CONVERGENCE_WINDOW) {
      double mean = 0;
      for (int k = 0; k < CONVERGENCE_WINDOW; k++) mean += window[stream * CONVERGENCE_WINDOW + k];
      if (mean / CONVERGENCE_WINDOW > 1.05) last_bad[stream] = n + 1;
    } else if (ratio > 1.05) {
      last_bad[stream] = n + 1;
    }
    if (c >= out->steady_from) {
      out->steady_true_us += s->true_us[c];
      out->steady_default_us += s->default_us[c];
      out->steady_oracle_us += s->oracle_us[c];
      dccl_emu_stream_stats* st = &out->stream[stream];
      st->steady_calls++;
      st->steady_true_us += s->true_us[c];
      st->steady_default_us += s->default_us[c];
      st->steady_oracle_us += s->oracle_us[c];
    }
  }
  int n_converge = 0;
  for (int stream = 0; stream < STREAMS; stream++) {
    if (stream_calls[stream] == 0) continue;
    dccl_emu_stream_stats* st = &out->stream[stream];
    st->calls = stream_calls[stream];
    st->convergence_calls = last_bad[stream];
    sorted[n_converge++] = (double)last_bad[stream];
    if (st->steady_default_us <= 0) continue;
    out->streams++;
    double ratio = st->steady_true_us / st->steady_default_us;
    if (ratio > 1.02) out->streams_over_2pct++;
    if (ratio > out->worst_stream_vs_default) {
      out->worst_stream_vs_default = ratio;
      out->worst_stream_coll = stream / DCCL_SIZE_BINS;
      out->worst_stream_bin = stream % DCCL_SIZE_BINS;
    }
  }
  if (n_converge > 0) {
    dccl_sort_doubles(sorted, (size_t)n_converge);
    out->convergence_median_calls = sorted[n_converge / 2];
    out->convergence_max_calls = sorted[n_converge - 1];
  }
done:
  free(window);
  free(stream_calls);
  free(last_bad);
  free(sorted);
}

static void summarise_tuner_times(const shared_state* s, dccl_emu_result* out) {
  for (int group = 0; group < 2; group++) {
    uint64_t merged[TIME_BUCKETS] = {0}, total = 0;
    for (int r = group == 0 ? 0 : 1; r < (group == 0 ? 1 : s->ranks); r++)
      for (int b = 0; b < TIME_BUCKETS; b++) {
        merged[b] += s->tuner_histogram[(size_t)r * TIME_BUCKETS + b];
        total += s->tuner_histogram[(size_t)r * TIME_BUCKETS + b];
      }
    if (total == 0) continue;
    uint64_t seen = 0;
    double* targets[2] = {&out->tuner_p50_ns[group], &out->tuner_p99_ns[group]};
    double quantiles[2] = {0.5, 0.99};
    int next = 0;
    for (int b = 0; b < TIME_BUCKETS; b++) {
      seen += merged[b];
      while (next < 2 && (double)seen >= quantiles[next] * (double)total) *targets[next++] = bucket_ns(b);
      if (merged[b] > 0) out->tuner_max_ns[group] = bucket_ns(b);
    }
  }
}

static void summarise_regret(const shared_state* s, dccl_emu_result* out) {
  double spent = 0, best = 0;
  uint64_t next = 1;
  for (uint64_t c = 0; c < s->calls; c++) {
    if (!isnan(s->oracle_us[c])) {
      spent += s->true_us[c];
      best += s->oracle_us[c];
    }
    while (next <= 10 && (c + 1) * 10 >= next * s->calls) {
      out->regret_curve[next - 1] = best > 0 ? spent / best - 1.0 : 0.0;
      next++;
    }
  }
}

static void summarise(const shared_state* s, const dccl_emu_config* cfg, dccl_emu_result* out) {
  summarise_tuner_times(s, out);
  if (cfg->oracle) summarise_regret(s, out);
  out->calls = s->calls;
  out->default_mismatches = atomic_load(&s->default_mismatches);
  out->expected_mismatches = atomic_load(&s->expected_mismatches);
  out->failed_calls = atomic_load(&s->failed_calls);
  out->plugin_warnings = atomic_load(&s->plugin_warnings) + atomic_load(&log_warnings);
  out->tuner_version = atomic_load(&s->tuner_version);
  out->graph_replayed_calls = s->graph_replayed;
  out->graph_true_us = s->graph_true_us;
  out->graph_default_us = s->graph_default_us;
  out->graph_oracle_us = s->graph_oracle_us;
  out->profiler_version = atomic_load(&s->profiler_version);
  for (uint64_t c = 0; c < s->calls; c++) {
    const uint64_t* row = &s->executions[c * (uint64_t)s->ranks];
    for (int r = 1; r < s->ranks; r++)
      if (row[r] != row[0]) {
        out->rank_mismatches++;
        break;
      }
  }
  double* sorted = malloc((s->calls > 0 ? s->calls : 1) * sizeof(double));
  for (uint64_t c = 0; c < s->calls; c++) {
    out->total_true_us += s->true_us[c];
    dccl_emu_collective_stats* st = &out->by_collective[s->collectives[c] % DCCL_NUM_COLLS];
    st->calls++;
    st->true_us += s->true_us[c];
    if (cfg->oracle) {
      out->total_default_us += s->default_us[c];
      out->total_oracle_us += s->oracle_us[c];
      st->default_us += s->default_us[c];
      st->oracle_us += s->oracle_us[c];
    }
  }
  if (sorted != NULL && s->calls > 0) {
    memcpy(sorted, s->true_us, s->calls * sizeof(double));
    dccl_sort_doubles(sorted, s->calls);
    out->p50_true_us = percentile(sorted, s->calls, 0.5);
    out->p99_true_us = percentile(sorted, s->calls, 0.99);
    memcpy(sorted, s->measured_us, s->calls * sizeof(double));
    dccl_sort_doubles(sorted, s->calls);
    out->p50_measured_us = percentile(sorted, s->calls, 0.5);
    out->p99_measured_us = percentile(sorted, s->calls, 0.99);
    out->mean_true_us = out->total_true_us / (double)s->calls;
    for (int c = 0; c < DCCL_NUM_COLLS; c++) {
      uint64_t n = 0;
      for (uint64_t k = 0; k < s->calls; k++)
        if (s->collectives[k] == c) sorted[n++] = s->true_us[k];
      dccl_sort_doubles(sorted, n);
      out->by_collective[c].p50_true_us = percentile(sorted, n, 0.5);
      out->by_collective[c].p99_true_us = percentile(sorted, n, 0.99);
    }
  }
  free(sorted);
  summarise_steady(s, cfg, out);
}

/* The bytes of the shared state's block: per call an execution per rank, four latencies and two bytes;
 * per rank its progress and histogram. -1 when that does not fit in a size_t. */
static int shared_size_of(uint64_t calls, int ranks, size_t* size_out) {
  size_t per_call = (size_t)ranks * sizeof(uint64_t) + 4 * sizeof(double) + 2, size;
  if (__builtin_mul_overflow(calls, per_call, &size) ||
      __builtin_add_overflow(size, sizeof(shared_state) + (size_t)ranks * (1 + TIME_BUCKETS) * sizeof(uint64_t) + 64,
                             &size))
    return -1;
  *size_out = size;
  return 0;
}

/* Lays out the shared state in one block of `size` bytes (shared_size_of; anonymous shared memory in
 * process mode). */
static shared_state* allocate_shared(uint64_t calls, int ranks, int process_mode, size_t size) {
  void* block = process_mode ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
                             : calloc(1, size);
  if (block == NULL || block == MAP_FAILED) return NULL;
  shared_state* s = block;
  memset(s, 0, sizeof(*s));
  char* cursor = (char*)block + ((sizeof(shared_state) + 7) & ~(size_t)7);
  s->executions = (uint64_t*)cursor;
  cursor += calls * (size_t)ranks * sizeof(uint64_t);
  s->true_us = (double*)cursor;
  cursor += calls * sizeof(double);
  s->measured_us = (double*)cursor;
  cursor += calls * sizeof(double);
  s->default_us = (double*)cursor;
  cursor += calls * sizeof(double);
  s->oracle_us = (double*)cursor;
  cursor += calls * sizeof(double);
  s->issued = (_Atomic uint64_t*)cursor;
  cursor += (size_t)ranks * sizeof(uint64_t);
  s->tuner_histogram = (uint64_t*)cursor;
  cursor += (size_t)ranks * TIME_BUCKETS * sizeof(uint64_t);
  memset(s->issued, 0, (size_t)ranks * (1 + TIME_BUCKETS) * sizeof(uint64_t));
  s->collectives = (uint8_t*)cursor;
  cursor += calls;
  s->size_bins = (uint8_t*)cursor;
  s->calls = calls;
  s->ranks = ranks;
  return s;
}

static void stop_rank_processes(const pid_t* pids, int count) {
  for (int i = 0; i < count; i++)
    if (pids[i] > 0) kill(pids[i], SIGKILL);
}

/* Waits for the rank processes (pids[0..count-1], rank order). When one fails (or `failed` already),
 * the others are stopped: they would wait for it for ever (coupled GPU queues, the leader's table), as
 * they did when one died at start (ThreadSanitizer could not map its shadow memory). The first failure
 * is described in `why` (left as it is when already set). */
static void reap_rank_processes(pid_t* pids, int count, int failed, char* why, size_t why_size) {
  if (failed) stop_rank_processes(pids, count);
  int left = count;
  while (left > 0) {
    int reaped = 0;
    for (int i = 0; i < count; i++) {
      if (pids[i] <= 0) continue;
      int status = 0;
      pid_t done = waitpid(pids[i], &status, failed ? 0 : WNOHANG);
      if (done == 0 || (done < 0 && errno == EINTR)) continue;
      if (done < 0) kill(pids[i], SIGKILL); /* (not waitable: not left running either) */
      pids[i] = -1;
      left--;
      reaped++;
      if (done < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (!failed && why[0] == '\0') {
          if (done > 0 && WIFSIGNALED(status))
            snprintf(why, why_size, "rank %d's process was killed by signal %d; the other ranks were stopped", i,
                     WTERMSIG(status));
          else
            snprintf(why, why_size, "rank %d's process failed (exit status %d); the other ranks were stopped", i,
                     done > 0 ? WEXITSTATUS(status) : -1);
        }
        if (!failed) stop_rank_processes(pids, count);
        failed = 1;
      }
    }
    if (left > 0 && reaped == 0 && !failed) nanosleep(&(struct timespec){0, 5000000}, NULL);
  }
}

static int emulate(const dccl_emu_config* cfg, const dccl_sim* sim, const dccl_workload* workload, dccl_emu_result* result,
                   char* error, size_t error_size) {
  memset(result, 0, sizeof(*result));
  if (cfg->builtin != NULL && cfg->processes) {
    snprintf(error, error_size, "a builtin plugin runs with ranks as threads only");
    return -1;
  }
  if (cfg->ranks < 1 || cfg->ranks > sim->profile.n_ranks) {
    snprintf(error, error_size, "cannot emulate %d ranks of a %d-rank communicator", cfg->ranks, sim->profile.n_ranks);
    return -1;
  }
  uint64_t calls = dccl_workload_total_calls(workload);
  if (cfg->calls != 0 && cfg->calls < calls) calls = cfg->calls;
  size_t shared_size = 0;
  if (shared_size_of(calls, cfg->ranks, &shared_size) != 0) {
    snprintf(error, error_size, "%llu calls x %d ranks are too many to record (limit the calls)",
             (unsigned long long)calls, cfg->ranks);
    return -1;
  }
  shared_state* shared = allocate_shared(calls, cfg->ranks, cfg->processes, shared_size);
  if (shared == NULL) {
    snprintf(error, error_size, "out of memory for %llu calls x %d ranks", (unsigned long long)calls, cfg->ranks);
    return -1;
  }
  atomic_store(&log_verbosity, cfg->verbose);
  atomic_store(&log_warnings, 0);
  FILE* call_log = NULL;
  if (cfg->call_log != NULL) {
    call_log = fopen(cfg->call_log, "w");
    if (call_log == NULL) {
      snprintf(error, error_size, "cannot write %s: %s", cfg->call_log, strerror(errno));
      goto fail;
    }
    fprintf(call_log, "call,collective,bytes,algorithm,protocol,channels,chunk,true_us,measured_us,default_us,oracle_us,"
                      "congestion,interference\n");
  }
  double start = dccl_monotonic_seconds();
  rank_context* contexts = calloc((size_t)cfg->ranks, sizeof(rank_context));
  if (contexts == NULL) {
    snprintf(error, error_size, "out of memory");
    goto fail;
  }
  for (int r = 0; r < cfg->ranks; r++) {
    contexts[r] = (rank_context){cfg, sim, workload, NULL, shared, r, NULL, NULL, 0, {0}, r == 0 ? call_log : NULL};
  }

  if (!cfg->processes) {
    dccl_loaded_plugin plugin;
    int loaded = 0;
    if (cfg->builtin != NULL) {
      dccl_plugin_builtin(cfg->builtin, cfg->max_tuner, cfg->max_profiler, &plugin);
      loaded = 1;
    } else if (cfg->plugin_path != NULL) {
      if (dccl_plugin_load(cfg->plugin_path, cfg->max_tuner, cfg->max_profiler, &plugin, error, error_size) != 0) {
        free(contexts);
        goto fail;
      }
      loaded = 1;
    }
    if (loaded) {
      atomic_store(&shared->tuner_version, plugin.tuner_version);
      atomic_store(&shared->profiler_version, plugin.profiler_version);
    }
    pthread_t* threads = calloc((size_t)cfg->ranks, sizeof(pthread_t));
    int started = 0;
    for (int r = 0; threads != NULL && r < cfg->ranks; r++) {
      contexts[r].plugin = loaded ? &plugin : NULL;
      if (pthread_create(&threads[r], NULL, rank_thread, &contexts[r]) != 0) break;
      started++;
    }
    for (int r = 0; r < started; r++) pthread_join(threads[r], NULL);
    free(threads);
    if (loaded) dccl_plugin_unload(&plugin); /* closes the library; nothing for a builtin */
    if (started < cfg->ranks) {
      snprintf(error, error_size, "could not start %d rank threads", cfg->ranks);
      free(contexts);
      goto fail;
    }
  } else {
    if (call_log != NULL) fflush(call_log);
    pid_t* pids = calloc((size_t)cfg->ranks, sizeof(pid_t));
    int forked = 0;
    for (int r = 0; pids != NULL && r < cfg->ranks; r++) {
      pid_t pid = fork();
      if (pid < 0) break;
      if (pid == 0) {
        dccl_loaded_plugin plugin;
        char child_error[256];
        int status = 0;
        if (cfg->rank_setup != NULL) cfg->rank_setup(r, cfg->rank_setup_argument);
        if (cfg->plugin_path != NULL) {
          if (dccl_plugin_load(cfg->plugin_path, cfg->max_tuner, cfg->max_profiler, &plugin, child_error,
                               sizeof(child_error)) != 0) {
            fprintf(stderr, "rank %d: %s\n", r, child_error);
            _exit(3);
          }
          contexts[r].plugin = &plugin;
          atomic_store(&shared->tuner_version, plugin.tuner_version);
          atomic_store(&shared->profiler_version, plugin.profiler_version);
        }
        status = run_rank(&contexts[r]) == 0 ? 0 : 4;
        atomic_fetch_add(&shared->plugin_warnings, atomic_load(&log_warnings));
        if (contexts[r].call_log != NULL) fflush(contexts[r].call_log);
        if (cfg->plugin_path != NULL) dccl_plugin_unload(&plugin);
        _exit(status);
      }
      pids[forked++] = pid;
    }
    char why[160] = "";
    if (forked < cfg->ranks) snprintf(why, sizeof(why), "could not fork rank %d's process", forked);
    reap_rank_processes(pids, forked, forked < cfg->ranks, why, sizeof(why));
    free(pids);
    if (why[0] != '\0') {
      snprintf(error, error_size, "%s", why);
      free(contexts);
      goto fail;
    }
  }
  free(contexts);
  if (atomic_load(&shared->rank_failures) != 0) {
    snprintf(error, error_size, "a rank could not start its proxy thread");
    goto fail;
  }
  result->wall_seconds = dccl_monotonic_seconds() - start;
  summarise(shared, cfg, result);
  if (call_log != NULL) fclose(call_log);
  if (cfg->processes) munmap(shared, shared_size);
  else free(shared);
  return 0;
fail:
  if (call_log != NULL) fclose(call_log);
  if (cfg->processes) munmap(shared, shared_size);
  else free(shared);
  return -1;
}

/* The plugin's coordination learns through DYNAMICCL_COORD_PRESENT_RANKS that only the emulated ranks
 * exist: its leader neither waits for the others when it leaves nor names them as absent. The caller's
 * value is put back afterwards. */
int dccl_emu_run(const dccl_emu_config* cfg, const dccl_sim* sim, const dccl_workload* workload, dccl_emu_result* result,
                 char* error, size_t error_size) {
  static const char* const name = "DYNAMICCL_COORD_PRESENT_RANKS";
  const char* before = getenv(name);
  char saved[64], present[16];
  if (before != NULL) snprintf(saved, sizeof(saved), "%s", before);
  snprintf(present, sizeof(present), "%d", cfg->ranks);
  setenv(name, present, 1);
  int rc = emulate(cfg, sim, workload, result, error, error_size);
  if (before != NULL) setenv(name, saved, 1);
  else unsetenv(name);
  return rc;
}
