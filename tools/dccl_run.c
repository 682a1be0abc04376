/* tools/dccl_run.c: `dccl run`: emulates NCCL driving the plugin on a simulated scenario and prints
 * latencies per collective against NCCL's default and the oracle. */
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../abi/builtin.h"
#include "../core/clock.h"
#include "../emu/emulator.h"
#include "../emu/plugin_loader.h"
#include "../plugin/registry.h"
#include "cli.h"

static void usage(FILE* out) {
  fprintf(out,
          "usage: dccl run --profile NAME --workload NAME [options]\n"
          "Emulates NCCL driving the DynamICCL plugin on the simulated cluster and prints latencies per\n"
          "collective, compared with NCCL's default and with the oracle (ratios of noise-free latencies).\n"
          "  --profile NAME        hardware profile (scenarios/profiles/)\n"
          "  --workload NAME       workload (scenarios/workloads/)\n"
          "  --conditions NAME     congestion/interference schedule (scenarios/conditions/; default calm)\n"
          "  --policy P            default, fixed, learn, frozen, or hold (learn, then hold after\n"
          "                        --learn-for measurements: the learn-once baseline); sets DYNAMICCL_MODE\n"
          "  --table FILE          decision table for --policy fixed (DYNAMICCL_TABLE_FILE)\n"
          "  --policy-file FILE    policy to warm-start from and save to (DYNAMICCL_POLICY_FILE)\n"
          "  --learn-for N         measurements before --policy hold holds (default: a quarter of the calls)\n"
          "  --trigger T           Agent-1: lstm, cusum or off (DYNAMICCL_TRIGGER)\n"
          "  --steady FRACTION     also report the steady state over the last FRACTION of the calls\n"
          "  --pace-us US          issue at most one call per US microseconds of wall time (a library\n"
          "                        plugin's background thread then keeps up, as in a real job)\n"
          "  --by-stream           with --steady: one line per (collective, size bin)\n"
          "  --sync-every N        builtin plugin: background pass every N calls (default 64)\n"
          "  --host-ahead          builtin plugin: each call is launched before the last one's kernel\n"
          "                        end reaches the profiler, as in a loop of collectives (what\n"
          "                        DYNAMICCL_COST=leftover, the default, and stream read)\n"
          "  --rules FILE          NCCL example-tuner CSV pins (DYNAMICCL_RULES_FILE)\n"
          "  --trace FILE          write measured collectives (DYNAMICCL_TRACE_FILE, %%r = rank)\n"
          "  --nccl RELEASE        emulate this NCCL release's ABIs: 2.21 .. 2.30 (default 2.30)\n"
          "  --plugin PATH|none|builtin  plugin library (default: libnccl-tuner-dynamiccl.so beside dccl for\n"
          "                        default/fixed; 'builtin' for learning policies: the plugin linked into\n"
          "                        dccl, run synchronously so that runs are reproducible)\n"
          "  --ranks N             ranks to emulate (default 2; at most the profile's ranks)\n"
          "  --processes           run ranks as processes instead of threads\n"
          "  --calls N             stop after N calls (default: the whole workload)\n"
          "  --seed S              simulator seed (default 1)\n"
          "  --max-channels N      largest channel count the oracle tries (default 32)\n"
          "  --call-log FILE       per-call CSV of rank 0\n"
          "  --graph F:N:E         CUDA graphs (profiler v5+): calls F..F+N-1 are captured into a graph,\n"
          "                        replayed after every E-th call that follows (E 0: never)\n"
          "  --verbose             print the plugin's log lines\n"
          "  --quiet               print no report (the exit status still tells about rank agreement)\n"
          "Exit status: 0 when all ranks agreed on every call, 1 when they did not (real NCCL would hang),\n"
          "2 on usage errors.\n");
}

/* A progress line with the time left, on a terminal only. */
static void show_progress(uint64_t done, uint64_t total, void* argument) {
  double started = *(const double*)argument, elapsed = dccl_monotonic_seconds() - started;
  fprintf(stderr, "\r  call %llu of %llu, %.0f s elapsed, about %.0f s left   ", (unsigned long long)done,
          (unsigned long long)total, elapsed, done > 0 ? elapsed / (double)done * (double)(total - done) : 0.0);
  if (done == total) fprintf(stderr, "\r%72s\r", "");
}

static void default_plugin_path(char* path, size_t size) {
  char exe[1024];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = '\0';
    snprintf(path, size, "%s/libnccl-tuner-dynamiccl.so", dirname(exe));
  } else {
    snprintf(path, size, "build/libnccl-tuner-dynamiccl.so");
  }
}

static void print_row(const char* name, const dccl_emu_collective_stats* s, int oracle) {
  if (s->calls == 0) return;
  printf("  %-14s %9llu %11.2f %11.2f %11.2f", name, (unsigned long long)s->calls, s->true_us / (double)s->calls,
         s->p50_true_us, s->p99_true_us);
  if (oracle) printf(" %12.2f %12.2f %9.3f %9.3f", s->default_us / s->calls, s->oracle_us / s->calls,
                     s->true_us / s->default_us, s->true_us / s->oracle_us);
  printf("\n");
}

/* The steady state (the last --steady fraction of the calls) and, with --by-stream, every stream. */
static void print_steady_state(const dccl_emu_result* result, int by_stream) {
  printf("\n  steady state (calls %llu..%llu): %.4f x oracle, %.4f x NCCL; %d streams (collective, size bin), "
         "%d slower than NCCL by > 2%%, worst %.4f x NCCL (%s, bin 2^%d)\n",
         (unsigned long long)result->steady_from, (unsigned long long)result->calls, result->steady_true_us / result->steady_oracle_us,
         result->steady_true_us / result->steady_default_us, result->streams, result->streams_over_2pct,
         result->worst_stream_vs_default, dccl_coll_name(result->worst_stream_coll), result->worst_stream_bin);
  if (by_stream) {
    printf("\n  %-14s %6s %9s %12s %12s %9s %9s %12s\n", "collective", "bytes", "calls", "steady us", "NCCL us",
           "vs NCCL", "vs oracle", "convergence");
    for (int k = 0; k < DCCL_NUM_COLLS * DCCL_SIZE_BINS; k++) {
      const dccl_emu_stream_stats* st = &result->stream[k];
      if (st->steady_calls == 0) continue;
      char size[32];
      dccl_format_bytes(1ULL << (k % DCCL_SIZE_BINS), size, sizeof(size));
      printf("  %-14s %6s %9llu %12.2f %12.2f %9.4f %9.4f %12llu\n", dccl_coll_name(k / DCCL_SIZE_BINS), size,
             (unsigned long long)st->calls, st->steady_true_us / st->steady_calls,
             st->steady_default_us / st->steady_calls, st->steady_true_us / st->steady_default_us,
             st->steady_true_us / st->steady_oracle_us, (unsigned long long)st->convergence_calls);
    }
  }
  printf("  convergence: a stream's calls until every window of 10 stays within 5%% of the oracle: median %.0f, "
         "max %.0f\n", result->convergence_median_calls, result->convergence_max_calls);
}

int dccl_cli_run(int argc, char** argv) {
  const char *profile_name = NULL, *workload_name = NULL, *conditions_name = NULL, *policy = "default";
  const char *table = NULL, *rules = NULL, *trace = NULL, *release = "2.30", *plugin = NULL, *call_log = NULL;
  const char *policy_file = NULL, *trigger = NULL;
  long long ranks = 2, calls = 0, seed = 1, max_channels = 32, learn_for = -1, sync_every = 64;
  double steady = 0, pace_us = 0;
  unsigned long long graph_first = 0, graph_calls = 0, graph_every = 0;
  int processes = 0, verbose = 0, by_stream = 0, quiet = 0, host_ahead = 0;
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    int more = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--profile") == 0 && more) profile_name = argv[++i];
    else if (strcmp(a, "--workload") == 0 && more) workload_name = argv[++i];
    else if (strcmp(a, "--conditions") == 0 && more) conditions_name = argv[++i];
    else if (strcmp(a, "--policy") == 0 && more) policy = argv[++i];
    else if (strcmp(a, "--table") == 0 && more) table = argv[++i];
    else if (strcmp(a, "--rules") == 0 && more) rules = argv[++i];
    else if (strcmp(a, "--trace") == 0 && more) trace = argv[++i];
    else if (strcmp(a, "--nccl") == 0 && more) release = argv[++i];
    else if (strcmp(a, "--plugin") == 0 && more) plugin = argv[++i];
    else if (strcmp(a, "--call-log") == 0 && more) call_log = argv[++i];
    else if (strcmp(a, "--policy-file") == 0 && more) policy_file = argv[++i];
    else if (strcmp(a, "--trigger") == 0 && more) trigger = argv[++i];
    else if (strcmp(a, "--pace-us") == 0 && more) {
      long long value;
      if (dccl_cli_int(argv[++i], 1, 1000000, &value) != 0) return dccl_cli_fail("bad --pace-us");
      pace_us = (double)value;
    } else if (strcmp(a, "--steady") == 0 && more) {
      if (dccl_cli_level(argv[++i], &steady) != 0) return dccl_cli_fail("bad --steady (a fraction in 0..1)");
    } else if (strcmp(a, "--learn-for") == 0 && more) {
      if (dccl_cli_int(argv[++i], 1, (long long)1 << 50, &learn_for) != 0) return dccl_cli_fail("bad --learn-for");
    } else if (strcmp(a, "--sync-every") == 0 && more) {
      if (dccl_cli_int(argv[++i], 1, 1 << 20, &sync_every) != 0) return dccl_cli_fail("bad --sync-every");
    }
    else if (strcmp(a, "--processes") == 0) processes = 1;
    else if (strcmp(a, "--host-ahead") == 0) host_ahead = 1;
    else if (strcmp(a, "--verbose") == 0) verbose = 1;
    else if (strcmp(a, "--by-stream") == 0) by_stream = 1;
    else if (strcmp(a, "--quiet") == 0) quiet = 1;
    else if (strcmp(a, "--ranks") == 0 && more) {
      if (dccl_cli_int(argv[++i], 1, 4096, &ranks) != 0) return dccl_cli_fail("bad --ranks");
    } else if (strcmp(a, "--calls") == 0 && more) {
      if (dccl_cli_int(argv[++i], 1, (long long)1 << 40, &calls) != 0) return dccl_cli_fail("bad --calls");
    } else if (strcmp(a, "--seed") == 0 && more) {
      if (dccl_cli_int(argv[++i], 0, (long long)1 << 62, &seed) != 0) return dccl_cli_fail("bad --seed");
    } else if (strcmp(a, "--graph") == 0 && more) {
      char tail;
      if (sscanf(argv[++i], "%llu:%llu:%llu%c", &graph_first, &graph_calls, &graph_every, &tail) != 3 ||
          graph_calls == 0)
        return dccl_cli_fail("bad --graph (FIRST:CALLS:EVERY, CALLS > 0)");
    } else if (strcmp(a, "--max-channels") == 0 && more) {
      if (dccl_cli_int(argv[++i], 1, 64, &max_channels) != 0) return dccl_cli_fail("bad --max-channels");
    } else {
      fprintf(stderr, "dccl run: unknown or incomplete option '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (profile_name == NULL || workload_name == NULL) {
    usage(stderr);
    return 2;
  }
  int learning_policy = strcmp(policy, "learn") == 0 || strcmp(policy, "frozen") == 0 || strcmp(policy, "hold") == 0;
  if (strcmp(policy, "default") != 0 && strcmp(policy, "fixed") != 0 && !learning_policy)
    return dccl_cli_fail("--policy must be default, fixed, learn, frozen or hold");
  if (strcmp(policy, "fixed") == 0 && table == NULL) return dccl_cli_fail("--policy fixed needs --table FILE");

  char error[512];
  dccl_profile profile;
  dccl_workload workload;
  dccl_schedule schedule;
  if (dccl_profile_find(profile_name, &profile, error, sizeof(error)) != 0) return dccl_cli_fail(error);
  if (dccl_workload_find(workload_name, &workload, error, sizeof(error)) != 0) return dccl_cli_fail(error);
  memset(&schedule, 0, sizeof(schedule));
  if (conditions_name != NULL && dccl_schedule_find(conditions_name, &schedule, error, sizeof(error)) != 0) {
    dccl_workload_free(&workload);
    return dccl_cli_fail(error);
  }
  dccl_emu_config config;
  dccl_emu_config_defaults(&config);
  if (dccl_nccl_release_abis(release, &config.max_tuner, &config.max_profiler) != 0) {
    dccl_workload_free(&workload);
    return dccl_cli_fail("unknown --nccl release (2.21 .. 2.30)");
  }
  char plugin_path[1100];
  if (plugin == NULL && learning_policy) plugin = "builtin";
  if (plugin == NULL) default_plugin_path(plugin_path, sizeof(plugin_path));
  else snprintf(plugin_path, sizeof(plugin_path), "%s", plugin);
  config.plugin_path = strcmp(plugin_path, "none") == 0 ? NULL : plugin_path;
  static dccl_builtin_plugin builtin;
  int is_builtin = strcmp(plugin_path, "builtin") == 0;
  if (is_builtin) {
    if (processes) {
      dccl_workload_free(&workload);
      return dccl_cli_fail("--plugin builtin runs ranks as threads (drop --processes or give a library)");
    }
    dccl_builtin_abi(builtin.tuner, builtin.profiler);
    config.builtin = &builtin;
    config.plugin_path = NULL;
    config.synchronous = 1;
    config.sync_step = dccl_plugin_sync_step;
    config.sync_every = (uint64_t)sync_every;
    config.host_ahead = host_ahead;
    dccl_registry_set_manual(1);
  }
  config.ranks = (int)ranks;
  config.processes = processes;
  config.calls = (uint64_t)calls;
  config.verbose = verbose;
  config.call_log = call_log;
  config.oracle_options.max_channels = (int)max_channels;
  config.oracle_options.tune_chunk = 1;
  config.steady_fraction = steady;
  config.pace_us = pace_us;
  config.graph_first = graph_first;
  config.graph_calls = graph_calls;
  config.graph_replay_every = graph_every;

  uint64_t total = dccl_workload_total_calls(&workload);
  if (calls > 0 && (uint64_t)calls < total) total = (uint64_t)calls;
  if (strcmp(policy, "hold") == 0) {
    char text[32];
    snprintf(text, sizeof(text), "%llu", learn_for > 0 ? (unsigned long long)learn_for : (unsigned long long)(total / 4 + 1));
    setenv("DYNAMICCL_LEARN_FOR", text, 1);
    policy = "learn";
  }
  setenv("DYNAMICCL_MODE", policy, 1);
  if (learning_policy && getenv("DYNAMICCL_COORD") == NULL && ranks == 1) setenv("DYNAMICCL_COORD", "solo", 1);
  if (policy_file != NULL) setenv("DYNAMICCL_POLICY_FILE", policy_file, 1);
  if (trigger != NULL) setenv("DYNAMICCL_TRIGGER", trigger, 1);
  if (table != NULL) setenv("DYNAMICCL_TABLE_FILE", table, 1);
  if (rules != NULL) setenv("DYNAMICCL_RULES_FILE", rules, 1);
  if (trace != NULL) setenv("DYNAMICCL_TRACE_FILE", trace, 1);

  static dccl_sim sim;
  if (dccl_sim_init(&sim, &profile, conditions_name ? &schedule : NULL, (uint64_t)seed, total, error, sizeof(error)) != 0) {
    dccl_workload_free(&workload);
    return dccl_cli_fail(error);
  }
  dccl_emu_result result;
  double started = dccl_monotonic_seconds();
  if (isatty(2) && !verbose) {
    config.progress = show_progress;
    config.progress_argument = &started;
  }
  int rc = dccl_emu_run(&config, &sim, &workload, &result, error, sizeof(error));
  if (rc != 0) {
    dccl_sim_free(&sim);
    dccl_workload_free(&workload);
    return dccl_cli_fail(error);
  }

  if (quiet) goto done;
  printf("profile %s (%d ranks on %d nodes), workload %s, conditions %s, seed %lld\n", profile.name, profile.n_ranks,
         profile.n_nodes, workload.name, conditions_name ? schedule.name : "calm", seed);
  printf("NCCL %s ABIs: tuner v%d, profiler v%d (0 = none); %d rank%s as %s; policy %s%s%s\n", release,
         result.tuner_version, result.profiler_version, config.ranks, config.ranks == 1 ? "" : "s",
         processes ? "processes" : "threads", (config.plugin_path || config.builtin) ? policy : "none (NCCL alone)", table ? ", table " : "",
         table ? table : "");
  printf("\n  %-14s %9s %11s %11s %11s %12s %12s %9s %9s\n", "collective", "calls", "mean us", "p50 us", "p99 us",
         "NCCL us", "oracle us", "vs NCCL", "vs oracle");
  dccl_emu_collective_stats total_stats = {result.calls,       result.total_true_us, result.total_default_us,
                                           result.total_oracle_us, result.p50_true_us, result.p99_true_us};
  for (int c = 0; c < DCCL_NUM_COLLS; c++) print_row(dccl_coll_name(c), &result.by_collective[c], config.oracle);
  print_row("all", &total_stats, config.oracle);
  printf("\n  latencies of rank 0, noise-free; measured (with noise): p50 %.2f us, p99 %.2f us\n", result.p50_measured_us,
         result.p99_measured_us);
  printf("  'NCCL us', 'oracle us' = mean latency of NCCL's default and of the best action under the same conditions;\n"
         "  'vs NCCL' = total latency / NCCL default's (< 1: faster than NCCL);\n"
         "  'vs oracle' = total latency / the best valid action's (>= 1).\n");
  if (result.steady_from < result.calls && steady > 0 && config.oracle) print_steady_state(&result, by_stream);
  if (result.graph_replayed_calls > 0) {
    printf("  CUDA graph: calls %llu..%llu captured, %llu calls replayed", graph_first, graph_first + graph_calls - 1,
           (unsigned long long)result.graph_replayed_calls);
    if (config.oracle && result.graph_oracle_us > 0)
      printf(": %.4f x oracle, %.4f x NCCL", result.graph_true_us / result.graph_oracle_us,
             result.graph_true_us / result.graph_default_us);
    printf("\n");
  }
  printf("  rank agreement: %llu of %llu calls mismatched%s; %llu calls failed; %llu plugin warnings; %.2f s\n",
         (unsigned long long)result.rank_mismatches, (unsigned long long)result.calls,
         result.rank_mismatches ? " (REAL NCCL WOULD HANG)" : "", (unsigned long long)result.failed_calls,
         (unsigned long long)result.plugin_warnings, result.wall_seconds);
done:
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
  return result.rank_mismatches == 0 && result.failed_calls == 0 ? 0 : 1;
}
