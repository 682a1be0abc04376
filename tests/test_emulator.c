/* tests/test_emulator.c: the plugin library driven end to end by the NCCL emulator, for every tuner
 * ABI (v2-v6) and profiler ABI (none, v4-v6): ranks always agree, the default policy reproduces NCCL's
 * own choices exactly, a fixed table is applied exactly, and the profiler half measures every
 * collective with the GPU duration the emulated NCCL reported. Also in process mode. */
#include <libgen.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../emu/emulator.h"
#include "../emu/plugin_loader.h"
#include "../persist/table_text.h"
#include "test.h"

static char plugin_path[1200];
static char temp_dir[64];
static dccl_sim sim;
static dccl_workload workload;

static void load_scenario(const char* profile_name, const char* workload_text) {
  char path[512], error[512];
  dccl_profile profile;
  snprintf(path, sizeof(path), "%s/scenarios/profiles/%s.profile", DYNAMICCL_SOURCE_DIR, profile_name);
  if (dccl_profile_load(path, &profile, error, sizeof(error)) != 0 ||
      dccl_workload_parse(workload_text, "test", &workload, error, sizeof(error)) != 0 ||
      dccl_sim_init(&sim, &profile, NULL, 3, dccl_workload_total_calls(&workload), error, sizeof(error)) != 0) {
    fprintf(stderr, "%s\n", error);
    exit(1);
  }
}
static void unload_scenario(void) {
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
}

static void clear_environment(void) {
  unsetenv("DYNAMICCL_MODE");
  unsetenv("DYNAMICCL_TABLE_FILE");
  unsetenv("DYNAMICCL_RULES_FILE");
  unsetenv("DYNAMICCL_TRACE_FILE");
  unsetenv("DYNAMICCL_PROFILE");
  unsetenv("NCCL_PROTO");
}

/* The emulator's settings for driving the plugin library with `ranks` ranks; the rest as defaulted. */
static dccl_emu_config library_config(int ranks) {
  dccl_emu_config config;
  dccl_emu_config_defaults(&config);
  config.plugin_path = plugin_path;
  config.ranks = ranks;
  return config;
}

static const char* sweep_text =
  "sweep allreduce 1K 256M x2 gap=5us\n"
  "sweep allgather 1K 256M x2\n"
  "sweep reducescatter 1K 256M x2 pipeops=2\n"
  "sweep broadcast 1K 16M\n"
  "sweep reduce 1K 16M regbuff=1\n"
  "repeat 2\n";

/* The oracle's best action for each power-of-two size, as a fixed table. */
static void oracle_table(dccl_table* table, int tune_chunk) {
  dccl_action_space_options options = {.max_channels = 32, .tune_chunk = tune_chunk};
  dccl_oracle oracle;
  dccl_oracle_init(&oracle, &sim, &options);
  dccl_table_fill(table, DCCL_ACTION_NCCL);
  dccl_conditions calm = {0, 0};
  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++)
    for (int bin = 10; bin <= 28; bin++) {
      dccl_call call = {.coll = coll, .bytes = (size_t)1 << bin, .pipe_ops = 1};
      dccl_oracle_answer a;
      dccl_oracle_query(&oracle, &call, &calm, &a);
      dccl_table_set_range(table, coll, bin, bin, a.best);
    }
  dccl_oracle_free(&oracle);
}

static void test_every_abi_combination(void) {
  load_scenario("h100-2x8-ib", sweep_text);
  static dccl_table table_chunked, table_plain;
  oracle_table(&table_chunked, 1);
  oracle_table(&table_plain, 0);
  char table_path[256], error[512];
  snprintf(table_path, sizeof(table_path), "%s/oracle.table", temp_dir);
  for (int tuner = 2; tuner <= 6; tuner++)
    for (int profiler = 3; profiler <= 6; profiler++) { /* 3: a release without a v4+ profiler */
      for (int fixed = 0; fixed <= 1; fixed++) {
        clear_environment();
        const dccl_table* table = tuner == 6 ? &table_chunked : &table_plain;
        if (fixed) {
          CHECK(dccl_table_text_save(table_path, table, error, sizeof(error)) == 0);
          setenv("DYNAMICCL_MODE", "fixed", 1);
          setenv("DYNAMICCL_TABLE_FILE", table_path, 1);
          /* Tuner v2 (NCCL 2.21, no cost table) gives LL128 only where NCCL_PROTO enables it outright. */
          if (tuner == 2) setenv("NCCL_PROTO", "LL,LL128,Simple", 1);
        }
        setenv("DYNAMICCL_PROFILE", "on", 1);
        dccl_emu_config config = library_config(3);
        config.max_tuner = tuner;
        config.max_profiler = profiler;
        config.oracle = 1;
        config.oracle_options.tune_chunk = tuner == 6;
        config.check_default = !fixed;
        config.expected = fixed ? table : NULL;
        /* A CUDA graph captured and replayed (CollApi events from profiler v5): the policy as ever. */
        config.graph_first = 40;
        config.graph_calls = 24;
        config.graph_replay_every = 16;
        dccl_emu_result r;
        CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
        CHECK(r.graph_replayed_calls > 0);
        CHECK_EQ_INT(r.tuner_version, tuner);
        CHECK_EQ_INT(r.profiler_version, profiler >= 4 ? profiler : 0);
        CHECK_EQ_INT((int)r.calls, (int)dccl_workload_total_calls(&workload));
        CHECK_MSG(r.rank_mismatches == 0, "tuner v%d profiler v%d: %llu mismatches", tuner, profiler,
                  (unsigned long long)r.rank_mismatches);
        CHECK_EQ_INT((int)r.failed_calls, 0);
        CHECK_EQ_INT((int)r.plugin_warnings, 0);
        if (!fixed) {
          CHECK_MSG(r.default_mismatches == 0, "tuner v%d: default policy changed %llu executions", tuner,
                    (unsigned long long)r.default_mismatches);
          CHECK_NEAR(r.total_true_us / r.total_default_us, 1.0, 1e-12);
        } else {
          CHECK_MSG(r.expected_mismatches == 0, "tuner v%d: %llu executions differ from the table", tuner,
                    (unsigned long long)r.expected_mismatches);
          /* The oracle's table at the sizes it was computed for is the oracle, up to the v2 caveat. */
          if (tuner >= 3) CHECK_NEAR(r.total_true_us / r.total_oracle_us, 1.0, 1e-9);
          CHECK(r.total_true_us <= r.total_default_us * (1 + 1e-12));
        }
      }
    }
  clear_environment();
  unload_scenario();
}

/* Every shipped workload on every shipped profile: NCCL's own choices, exactly, and ranks agree. */
static void test_default_policy_on_every_workload(void) {
  const char* profiles[] = {"nvlink-h100x8", "pcie-8gpu", "h100-2x8-ib", "h100-4x8-ib", "roce-16x1", "sockets-1gpu-4ranks",
                            "h100-sockets-2ranks", "h100-sockets-2ranks-replay"};
  const char* workloads[] = {"sweep", "mixed", "llama-8b-tp8"};
  clear_environment();
  for (size_t p = 0; p < sizeof(profiles) / sizeof(profiles[0]); p++)
    for (size_t w = 0; w < sizeof(workloads) / sizeof(workloads[0]); w++) {
      char path[512], error[512];
      dccl_profile profile;
      snprintf(path, sizeof(path), "%s/scenarios/profiles/%s.profile", DYNAMICCL_SOURCE_DIR, profiles[p]);
      CHECK(dccl_profile_load(path, &profile, error, sizeof(error)) == 0);
      snprintf(path, sizeof(path), "%s/scenarios/workloads/%s.workload", DYNAMICCL_SOURCE_DIR, workloads[w]);
      CHECK(dccl_workload_find(path, &workload, error, sizeof(error)) == 0);
      CHECK(dccl_sim_init(&sim, &profile, NULL, 1, 2500, error, sizeof(error)) == 0);
      dccl_emu_config config = library_config(profile.n_ranks < 2 ? profile.n_ranks : 2);
      config.calls = 2500;
      config.oracle = 0;
      config.check_default = 1;
      dccl_emu_result r;
      CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
      CHECK_MSG(r.default_mismatches == 0 && r.rank_mismatches == 0 && r.failed_calls == 0, "%s on %s", workloads[w],
                profiles[p]);
      unload_scenario();
    }
}

/* Reads a trace CSV: per collective kind, the durations in sequence order. */
static int read_trace(const char* path, double durations[5][4096], int counts[5]) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  char line[512];
  memset(counts, 0, 5 * sizeof(int));
  if (fgets(line, sizeof(line), f) == NULL) {
    fclose(f);
    return -1;
  }
  while (fgets(line, sizeof(line), f)) {
    int rank, channels, measured;
    unsigned long long seq, bytes, start, duration;
    char coll[32], algo[32], proto[32];
    if (sscanf(line, "%d,%llu,%31[^,],%llu,%31[^,],%31[^,],%d,%d,%llu,%llu", &rank, &seq, coll, &bytes, algo, proto,
               &channels, &measured, &start, &duration) != 10) {
      fclose(f);
      return -1;
    }
    int c = dccl_coll_parse(coll);
    if (c < 0 || seq != (unsigned long long)counts[c] || channels != measured || counts[c] >= 4096) {
      fclose(f);
      return -1;
    }
    durations[c][counts[c]++] = (double)duration / 1000.0;
  }
  fclose(f);
  return 0;
}

static double trace_durations[5][4096];

/* One line of the emulator's call log (dccl_emu_config.call_log): call, collective, bytes, what ran, the
 * call's true latency and its measurement (us, 3 decimals). */
typedef struct logged_call {
  unsigned long long index, bytes, chunk;
  int coll;
  dccl_execution execution;
  double true_us, measured_us;
} logged_call;

/* Reads one call log line into `out`; 0 on success, -1 on another line (the header). */
static int read_logged_call(const char* line, logged_call* out) {
  char coll[32], algo[32], proto[32];
  int channels;
  if (sscanf(line, "%llu,%31[^,],%llu,%31[^,],%31[^,],%d,%llu,%lf,%lf", &out->index, coll, &out->bytes, algo, proto,
             &channels, &out->chunk, &out->true_us, &out->measured_us) != 9)
    return -1;
  out->coll = dccl_coll_parse(coll);
  out->execution = (dccl_execution){dccl_algo_parse(algo), dccl_proto_parse(proto), channels, 0, 0};
  return out->coll >= 0 ? 0 : -1;
}

/* The trace every rank writes holds exactly the measured duration the emulated NCCL gave each call. */
static void check_trace_against_call_log(int ranks) {
  char path[300];
  snprintf(path, sizeof(path), "%s/calls.csv", temp_dir);
  FILE* f = fopen(path, "r");
  CHECK(f != NULL);
  if (f == NULL) return;
  static double expected[5][4096];
  int expected_counts[5] = {0};
  char line[512];
  CHECK(fgets(line, sizeof(line), f) != NULL);
  logged_call logged;
  while (fgets(line, sizeof(line), f))
    if (read_logged_call(line, &logged) == 0) expected[logged.coll][expected_counts[logged.coll]++] = logged.measured_us;
  fclose(f);
  for (int rank = 0; rank < ranks; rank++) {
    int counts[5];
    snprintf(path, sizeof(path), "%s/trace.%d.csv", temp_dir, rank);
    CHECK_MSG(read_trace(path, trace_durations, counts) == 0, "rank %d trace unreadable", rank);
    for (int c = 0; c < 5; c++) {
      CHECK_EQ_INT(counts[c], expected_counts[c]);
      if (rank != 0) continue; /* other ranks see the same calls with their own small jitter */
      for (int i = 0; i < counts[c] && i < expected_counts[c]; i++)
        CHECK_MSG(fabs(trace_durations[c][i] - expected[c][i]) <= 0.0011, "%s #%d: traced %.4f us, emulated %.4f us",
                  dccl_coll_name(c), i, trace_durations[c][i], expected[c][i]);
    }
  }
}

static void run_with_trace(int processes) {
  load_scenario("pcie-8gpu", sweep_text);
  clear_environment();
  char trace[300], calls[300], error[512];
  snprintf(trace, sizeof(trace), "%s/trace.%%r.csv", temp_dir);
  snprintf(calls, sizeof(calls), "%s/calls.csv", temp_dir);
  setenv("DYNAMICCL_TRACE_FILE", trace, 1);
  dccl_emu_config config = library_config(4);
  config.processes = processes;
  config.call_log = calls;
  config.gpu_queue_depth = 64;
  config.check_default = 1;
  dccl_emu_result r;
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  CHECK_EQ_INT((int)r.rank_mismatches, 0);
  CHECK_EQ_INT((int)r.default_mismatches, 0);
  check_trace_against_call_log(4);
  clear_environment();
  unload_scenario();
}

static void test_trace_matches_gpu_durations_threads(void) { run_with_trace(0); }
static void test_trace_matches_gpu_durations_processes(void) { run_with_trace(1); }

/* The replay profile's noise of runs reaches the emulated calls: each call's measured latency is the
 * simulator's per-call measurement times its run's factor (dccl_sim_run_factor: the run's level and, for
 * ring/LL at AllGather 4 KiB, calls alternately slower and faster), runs being the workload's consecutive
 * calls of one collective and size. */
static void test_measurements_carry_the_noise_of_runs(void) {
  load_scenario("h100-sockets-2ranks-pairs", "allgather 4K x8\nallreduce 64K x5\nallgather 4K x3 pause=1ms\n"
                                              "allgather 4K x4\nrepeat 3\n");
  clear_environment();
  char calls[300], error[512];
  snprintf(calls, sizeof(calls), "%s/run-noise-calls.csv", temp_dir);
  dccl_emu_config config = library_config(2);
  config.call_log = calls;
  dccl_emu_result r;
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  FILE* f = fopen(calls, "r");
  CHECK(f != NULL);
  if (f == NULL) return;
  char line[512];
  CHECK(fgets(line, sizeof(line), f) != NULL);
  dccl_workload_cursor cursor;
  dccl_workload_start(&cursor, &workload, 0);
  dccl_call call;
  dccl_conditions calm = {0, 0};
  int checked = 0, alternating = 0, ring_ll_pairs = 0;
  double last_ratio = 0;
  uint64_t last_index = 0, last_run = UINT64_MAX;
  logged_call logged;
  while (fgets(line, sizeof(line), f) && read_logged_call(line, &logged) == 0 && dccl_workload_next(&cursor, &call)) {
    CHECK_EQ_INT((int)logged.index, (int)call.index);
    const dccl_execution* e = &logged.execution;
    double measured = logged.measured_us, true_us = logged.true_us;
    double expected = dccl_sim_measure(&sim, call.coll, (double)call.bytes, true_us, &calm, call.index, 0) *
                      dccl_sim_run_factor(&sim, &call, e);
    CHECK_MSG(fabs(measured - expected) < 0.0011 + 1e-4 * expected, "call %llu: measured %.4f us, expected %.4f",
              logged.index, measured, expected); /* the call log holds 3 decimals */
    checked++;
    /* The run's calls of ring/LL alternate about their truth: consecutive ones sit on either side. */
    if (call.coll == DCCL_COLL_ALLGATHER && e->algo == DCCL_ALGO_RING && e->proto == DCCL_PROTO_LL) {
      double ratio = measured / true_us;
      if (call.run_start == last_run && call.index == last_index + 1) {
        ring_ll_pairs++;
        alternating += (ratio > 1) != (last_ratio > 1);
      }
      last_ratio = ratio, last_index = call.index, last_run = call.run_start;
    }
  }
  fclose(f);
  CHECK_EQ_INT(checked, (int)dccl_workload_total_calls(&workload));
  CHECK_MSG(ring_ll_pairs >= 40 && alternating >= ring_ll_pairs * 9 / 10, "%d of %d consecutive pairs alternate",
            alternating, ring_ll_pairs);
  unload_scenario();
}

/* A profile's `leftover` lines move work out of a call's kernel span into the next kernel's: on the GPU
 * test machine's profile tree/Simple on 2 channels makes its next kernel start later, on 1 channel run
 * longer, and at 64 KiB both (a small gap too).
 * The calls alternate with ring/Simple in blocks of four (a fixed `A||B` table); rank 0's trace holds
 * each kernel's start and span, its call log each call's own latency. The profile's noise.tail_share adds
 * that share of each call's latency, less the 5-us gap, to the next kernel's span (a measurement effect:
 * the calls' own latencies do not hold it): 64 KiB's first call waits 3% of a 1 MiB call. 1 MiB's and
 * 64 KiB's first calls come after a 2-ms pause: the stream drained (the last kernel's end reached the
 * profiler before the launch), what the last kernel left to the next one ran meanwhile, and the tail is
 * waited in full, and the ranks' skew after the pause (noise.pause_skew_us, and noise.pause_share of the
 * call's latency). Also with host_ahead, where each other kernel's end reaches the profiler after the
 * next call's launch. */
/* Whether call `call` of check_leftovers' workload comes after a pause: the first of each 1 MiB and 64 KiB
 * line (lines of 16 calls, 4 MiB, 1 MiB, 64 KiB, twice). */
static int paused(int call) { return call % 16 == 0 && call / 16 % 3 != 0; }

static void check_leftovers(int synchronous) {
  load_scenario("h100-sockets-2ranks", "allreduce 4M x16 gap=5us\nallreduce 1M x16 gap=5us pause=2ms\n"
                                       "allreduce 64K x16 gap=5us pause=2ms\nrepeat 2\n");
  clear_environment();
  char table[300], trace[300], calls[300], error[512];
  snprintf(table, sizeof(table), "%s/leftover.table", temp_dir);
  snprintf(trace, sizeof(trace), "%s/leftover-trace.%%r.csv", temp_dir);
  snprintf(calls, sizeof(calls), "%s/leftover-calls.csv", temp_dir);
  FILE* f = fopen(table, "w");
  CHECK(f != NULL);
  if (f == NULL) return;
  fprintf(f, "allreduce,4M,4M,tree/simple/ch=1||ring/simple/ch=2\nallreduce,1M,1M,tree/simple/ch=2||ring/simple/ch=2\n"
             "allreduce,64K,64K,tree/simple/ch=1||ring/simple/ch=2\n");
  fclose(f);
  setenv("DYNAMICCL_MODE", "fixed", 1);
  setenv("DYNAMICCL_TABLE_FILE", table, 1);
  setenv("DYNAMICCL_TRACE_FILE", trace, 1);
  dccl_emu_config config = library_config(2);
  config.call_log = calls;
  config.synchronous = synchronous;
  config.host_ahead = synchronous;
  dccl_emu_result r;
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  clear_environment();
  enum { CALLS = 96 };
  double own_us[CALLS], later[CALLS], longer[CALLS];
  int n_calls = 0, n_traced = 0, later_calls = 0, longer_calls = 0, both_calls = 0;
  unsigned long long start[CALLS], span[CALLS], launch[CALLS], done[CALLS];
  char line[512];
  f = fopen(calls, "r");
  CHECK(f != NULL && fgets(line, sizeof(line), f) != NULL);
  while (f != NULL && n_calls < CALLS && fgets(line, sizeof(line), f)) {
    dccl_execution e = {0};
    char algo[32], proto[32];
    unsigned long long index, bytes, chunk;
    double true_us;
    if (sscanf(line, "%llu,allreduce,%llu,%31[^,],%31[^,],%d,%llu,%lf,%lf", &index, &bytes, algo, proto, &e.channels,
               &chunk, &true_us, &own_us[n_calls]) != 8)
      break;
    e.algo = dccl_algo_parse(algo);
    e.proto = dccl_proto_parse(proto);
    dccl_call call = {.index = index, .coll = DCCL_COLL_ALLREDUCE, .bytes = (size_t)bytes};
    dccl_sim_leftover(&sim, &call, &e, &later[n_calls], &longer[n_calls]);
    later_calls += later[n_calls] > 0.1;
    longer_calls += longer[n_calls] > 0.1;
    both_calls += later[n_calls] > 0.01 && longer[n_calls] > 0.01;
    n_calls++;
  }
  if (f != NULL) fclose(f);
  snprintf(line, sizeof(line), "%s/leftover-trace.0.csv", temp_dir);
  f = fopen(line, "r");
  CHECK(f != NULL && fgets(line, sizeof(line), f) != NULL);
  while (f != NULL && n_traced < CALLS && fgets(line, sizeof(line), f)) {
    unsigned long long order;
    if (sscanf(line, "%*d,%*u,allreduce,%*u,%*[^,],%*[^,],%*d,%*d,%llu,%llu,%llu,%llu,%llu", &start[n_traced],
               &span[n_traced], &order, &launch[n_traced], &done[n_traced]) != 5)
      break;
    n_traced++;
  }
  if (f != NULL) fclose(f);
  CHECK_EQ_INT(n_calls, 96);
  CHECK_EQ_INT(n_traced, 96);
  CHECK_MSG(later_calls >= 16 && longer_calls >= 32 && both_calls >= 12, "%d calls leave a tenth later, %d longer, %d both",
            later_calls, longer_calls, both_calls);
  double carried = 0, tail = 0, tail_share = sim.profile.truth.tail_share, most_waited = 0;
  double skew_us = sim.profile.truth.pause_skew_us, skew_share = sim.profile.truth.pause_share;
  CHECK(tail_share > 0.01);
  CHECK(skew_us > 1 && skew_share > 0.01);
  int wrong_spans = 0, wrong_starts = 0, waiting = 0, drained = 0;
  for (int i = 0; i < n_calls && i < n_traced; i++) {
    double waited = paused(i) ? tail + skew_us + skew_share * own_us[i] : tail > 5.0 ? tail - 5.0 : 0;
    if (paused(i)) carried = carried > 2000.0 ? carried - 2000.0 : 0;
    if (waited > most_waited) most_waited = waited;
    double expected_span = own_us[i] * (1 - later[i] - longer[i]) + carried + waited;
    if (fabs((double)span[i] / 1000.0 - expected_span) > 0.01) wrong_spans++;
    carried = own_us[i] * longer[i];
    tail = own_us[i] * tail_share;
    if (i + 1 < n_traced) {
      double pause = paused(i + 1) ? 2000.0 : 0;
      if (fabs((double)(start[i + 1] - start[i]) / 1000.0 - (expected_span + own_us[i] * later[i] + 5.0 + pause)) > 0.01)
        wrong_starts++;
      int launched_within = launch[i + 1] != 0 && launch[i + 1] <= done[i];
      waiting += launched_within;
      drained += paused(i + 1) && launch[i + 1] > done[i];
    }
  }
  CHECK_MSG(wrong_spans == 0, "%d kernel spans differ from the call's work less its leftover plus the last one's", wrong_spans);
  CHECK_MSG(most_waited > 20, "the longest wait for a call's tail: %.1f us", most_waited);
  CHECK_MSG(wrong_starts == 0, "%d next kernels start off their expected time", wrong_starts);
  /* Host stamps are in the trace; with host_ahead every next call was launched before this one's end,
   * but after a pause. */
  CHECK_EQ_INT(drained, 4);
  if (synchronous) CHECK_EQ_INT(waiting, n_traced - 1 - 4);
  unload_scenario();
}

static void test_leftover_work_moves_into_the_next_kernel(void) { check_leftovers(0); }
static void test_host_ahead_launches_before_the_kernel_ends(void) { check_leftovers(1); }

static void test_release_mapping(void) {
  int tuner, profiler;
  CHECK(dccl_nccl_release_abis("2.27", &tuner, &profiler) == 0 && tuner == 4 && profiler == 4);
  CHECK(dccl_nccl_release_abis("2.28", &tuner, &profiler) == 0 && tuner == 5 && profiler == 5);
  CHECK(dccl_nccl_release_abis("2.30", &tuner, &profiler) == 0 && tuner == 6 && profiler == 6);
  CHECK(dccl_nccl_release_abis("2.21", &tuner, &profiler) == 0 && tuner == 2 && profiler == 0);
  CHECK(dccl_nccl_release_abis("3.0", &tuner, &profiler) != 0);
  dccl_loaded_plugin plugin;
  char error[512];
  CHECK(dccl_plugin_load(plugin_path, 5, 2, &plugin, error, sizeof(error)) == 0);
  CHECK(plugin.tuner_version == 5 && plugin.profiler_version == 0); /* no v1-v3 profiler is exported */
  dccl_plugin_unload(&plugin);
  CHECK(dccl_plugin_load("/nonexistent.so", 6, 6, &plugin, error, sizeof(error)) != 0);
}

/* Ranks that disagree are detected: rank 1 gets another table than rank 0 (real NCCL would hang) and
 * the emulator counts every call. Here rank 0 gets another table than the others and each rank reads
 * its own file (DYNAMICCL_COORD=off); by default the ranks run rank 0's table, whatever their own file
 * holds. */
static char table_a[300], table_b[300];
static void per_rank_table(int rank, void* argument) {
  (void)argument;
  setenv("DYNAMICCL_TABLE_FILE", rank == 0 ? table_b : table_a, 1);
}

static void test_disagreement_is_detected(void) {
  load_scenario("nvlink-h100x8", "allreduce 1M x50\n");
  clear_environment();
  char error[512];
  snprintf(table_a, sizeof(table_a), "%s/a.table", temp_dir);
  snprintf(table_b, sizeof(table_b), "%s/b.table", temp_dir);
  FILE* f = fopen(table_a, "w");
  fputs("allreduce,0,-1,ring/ll\n", f);
  fclose(f);
  f = fopen(table_b, "w");
  fputs("allreduce,0,-1,ring/simple\n", f); /* NCCL's choice here is ring/ll */
  fclose(f);
  setenv("DYNAMICCL_MODE", "fixed", 1);
  dccl_emu_config config = library_config(3);
  config.processes = 1;
  dccl_emu_result r;
  setenv("DYNAMICCL_TABLE_FILE", table_a, 1);
  /* Ranks 3-7 of the 8-rank communicator never run: rank 0, told so by the emulator, neither names them
   * after 1 s (ranks 1 and 2 have joined by then even under ThreadSanitizer on a loaded machine) nor waits
   * for them when it leaves. */
  setenv("DYNAMICCL_COORD_TIMEOUT_S", "1", 1);
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  CHECK_EQ_INT((int)r.rank_mismatches, 0);
  CHECK_EQ_INT((int)r.plugin_warnings, 0);
  unsetenv("DYNAMICCL_COORD_TIMEOUT_S");
  config.rank_setup = per_rank_table;
  config.check_default = 1;
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  CHECK_EQ_INT((int)r.rank_mismatches, 0);
  CHECK_EQ_INT((int)r.default_mismatches, 3 * 50); /* every rank ran rank 0's ring/simple */
  setenv("DYNAMICCL_COORD", "off", 1);
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  CHECK_EQ_INT((int)r.rank_mismatches, 50);
  clear_environment();
  unload_scenario();
}

/* A rank's process that dies (here before it loads the plugin; under ThreadSanitizer one could not map
 * its shadow memory) fails the run at once, naming it: the others, whose GPU queues are coupled to it,
 * waited for it for ever, and the emulator for them. */
static void rank_2_dies(int rank, void* argument) {
  (void)argument;
  if (rank == 2) _exit(9);
}

typedef struct emulator_job {
  dccl_emu_config config;
  dccl_emu_result result;
  char error[512];
  int rc;
} emulator_job;

static void* run_emulator(void* argument) {
  emulator_job* job = argument;
  job->rc = dccl_emu_run(&job->config, &sim, &workload, &job->result, job->error, sizeof(job->error));
  return NULL;
}

static void test_dead_rank_process_fails_the_run(void) {
  load_scenario("nvlink-h100x8", "allreduce 1M x2000\n");
  clear_environment();
  static emulator_job job;
  dccl_emu_config_defaults(&job.config);
  job.config.plugin_path = plugin_path;
  job.config.ranks = 3;
  job.config.processes = 1;
  job.config.couple_depth = 8;
  job.config.rank_setup = rank_2_dies;
  pthread_t runner;
  pthread_create(&runner, NULL, run_emulator, &job);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 60;
  if (pthread_timedjoin_np(runner, NULL, &deadline) != 0) {
    CHECK_MSG(0, "the run did not end within 60 s of rank 2's process dying"); /* its processes are left */
    return;
  }
  CHECK(job.rc != 0);
  CHECK_MSG(strstr(job.error, "rank 2's process failed (exit status 9)") != NULL, "%s", job.error);
  unload_scenario();
}

/* A workload of 2^63 calls is refused with a reason: the per-call records would not fit in memory's
 * address space (their size wrapped to a few bytes, and the run wrote past them). */
static void test_too_many_calls_to_record(void) {
  load_scenario("nvlink-h100x8", "allreduce 1K x1099511627776\nrepeat 8388608\n");
  clear_environment();
  char error[512] = "";
  dccl_emu_config config;
  dccl_emu_config_defaults(&config);
  config.ranks = 1;
  dccl_emu_result r;
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) != 0);
  CHECK_MSG(strstr(error, "9223372036854775808 calls x 1 ranks are too many to record") != NULL, "%s", error);
  unload_scenario();
}

int main(int argc, char** argv) {
  (void)argc;
  char self[1024];
  snprintf(self, sizeof(self), "%s", argv[0]);
  snprintf(plugin_path, sizeof(plugin_path), "%s/../libnccl-tuner-dynamiccl.so", dirname(self));
  snprintf(temp_dir, sizeof(temp_dir), "/tmp/dccl-emu-XXXXXX");
  if (mkdtemp(temp_dir) == NULL) return 1;
  RUN(test_every_abi_combination);
  RUN(test_default_policy_on_every_workload);
  RUN(test_trace_matches_gpu_durations_threads);
  RUN(test_trace_matches_gpu_durations_processes);
  RUN(test_measurements_carry_the_noise_of_runs);
  RUN(test_leftover_work_moves_into_the_next_kernel);
  RUN(test_host_ahead_launches_before_the_kernel_ends);
  RUN(test_release_mapping);
  RUN(test_disagreement_is_detected);
  RUN(test_dead_rank_process_fails_the_run);
  RUN(test_too_many_calls_to_record);
  char command[128];
  snprintf(command, sizeof(command), "rm -rf %s", temp_dir);
  if (system(command) != 0) fprintf(stderr, "could not remove %s\n", temp_dir);
  TEST_SUMMARY();
}
