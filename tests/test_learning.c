/* tests/test_learning.c: the agents learning inside the plugin, driven by the NCCL emulator on the
 * simulator: learn mode beats NCCL's default and nears the oracle, runs are reproducible, a saved
 * policy warm-starts a new job (learn) and is exploited as is (frozen), a learn-once-then-hold run
 * stops changing its decisions, CUDA graphs get exploited actions and their replays are not learned,
 * multi-rank learning without coordination falls back to frozen with a warning, memory stays within
 * 16 MiB per communicator, an explicit DYNAMICCL_SEED (0 included) seeds the agents, and the shared
 * library learns with its real background thread; and on the GPU runs' measurements replayed (with
 * their noise), it reaches the oracle in the steady state and keeps the real gains where NCCL is far
 * off. */
#include <dirent.h>
#include <libgen.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../abi/builtin.h"
#include "../abi/nccl_profiler_abi.h"
#include "../abi/nccl_tuner_abi.h"
#include "../emu/emulator.h"
#include "../emu/plugin_loader.h"
#include "../persist/atomic_file.h"
#include "../persist/policy_file.h"
#include "../plugin/comm.h"
#include "../plugin/registry.h"
#include "../core/rng.h"
#include "test.h"
#include "test_files.h"

static char temp_dir[64];
static char policy_path[128];
static char plugin_path[1200];
static dccl_builtin_plugin builtin;
static int host_ahead; /* synchronous runs: each call launched before the last kernel's end is seen */
static uint64_t sim_seed = 5; /* the simulator's */
static uint64_t graph_first, graph_calls, graph_replay_every; /* dccl_emu_config's CUDA graph */

/* Each run gets a fresh simulator and workload; `call_log` (or NULL) receives rank 0's calls. */
static int run_with(const char* profile_name, const char* workload_text, int ranks, int use_library,
                    const char* call_log, dccl_emu_result* r) {
  char path[512], error[512];
  dccl_profile profile;
  dccl_workload workload;
  static dccl_sim sim;
  snprintf(path, sizeof(path), "%s/scenarios/profiles/%s.profile", DYNAMICCL_SOURCE_DIR, profile_name);
  if (dccl_profile_load(path, &profile, error, sizeof(error)) != 0 ||
      dccl_workload_parse(workload_text, "test", &workload, error, sizeof(error)) != 0) {
    fprintf(stderr, "%s\n", error);
    exit(1);
  }
  if (dccl_sim_init(&sim, &profile, NULL, sim_seed, dccl_workload_total_calls(&workload), error, sizeof(error)) != 0) {
    fprintf(stderr, "%s\n", error);
    exit(1);
  }
  dccl_emu_config config;
  dccl_emu_config_defaults(&config);
  config.ranks = ranks;
  config.steady_fraction = 0.25;
  config.oracle_options.tune_chunk = 1;
  config.call_log = call_log;
  config.graph_first = graph_first;
  config.graph_calls = graph_calls;
  config.graph_replay_every = graph_replay_every;
  if (use_library) {
    config.plugin_path = plugin_path;
    /* A real job's pace, so the background thread keeps up. AddressSanitizer slows the learner about
     * sixfold (66 against 10 ms of CPU per 1,000 measurements): at 100 us it falls over 1,024 calls of
     * a collective behind, and measurements are then joined with later calls of the same size. */
#if defined(UNDER_ADDRESS_SANITIZER)
    config.pace_us = 400;
#else
    config.pace_us = 100;
#endif
  } else {
    config.builtin = &builtin;
    config.synchronous = 1;
    config.sync_step = dccl_plugin_sync_step;
    config.host_ahead = host_ahead;
  }
  int rc = dccl_emu_run(&config, &sim, &workload, r, error, sizeof(error));
  if (rc != 0) fprintf(stderr, "emulator: %s\n", error);
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
  return rc;
}

static int run(const char* profile_name, const char* workload_text, int ranks, int use_library, dccl_emu_result* r) {
  return run_with(profile_name, workload_text, ranks, use_library, NULL, r);
}

static int run_logged(const char* profile_name, const char* workload_text, const char* call_log, dccl_emu_result* r) {
  return run_with(profile_name, workload_text, 1, 0, call_log, r);
}

static void learn_environment(void) {
  setenv("DYNAMICCL_MODE", "learn", 1);
  setenv("DYNAMICCL_COORD", "solo", 1);
  setenv("DYNAMICCL_SAVE_SECONDS", "0", 1);
  unsetenv("DYNAMICCL_POLICY_FILE");
  unsetenv("DYNAMICCL_LEARN_FOR");
}

/* Large messages on a PCIe node: NCCL's choice is ~20% off the best, so there is much to learn. */
static const char* pcie_text =
  "sweep allreduce 1M 64M x20 gap=20us\n"
  "sweep allgather 1M 64M x20 gap=20us\n"
  "repeat 60\n";

/* The GPU runs' microbenchmark as the simulator's gpu-sweep workload holds it (scenarios/workloads/). */
static const char* gpu_sweep_text =
  "sweep allreduce 1K 64M x13 gap=20us\nsweep allgather 1K 64M x13 gap=20us\n"
  "sweep reducescatter 1K 64M x13 gap=20us\nrepeat 40\n";

static void test_learns_beyond_nccl_and_reproducibly(void) {
  learn_environment();
  dccl_emu_result a, b;
  CHECK(run("pcie-8gpu", pcie_text, 1, 0, &a) == 0);
  CHECK(run("pcie-8gpu", pcie_text, 1, 0, &b) == 0);
  double vs_nccl = a.steady_true_us / a.steady_default_us, vs_oracle = a.steady_true_us / a.steady_oracle_us;
  CHECK_MSG(vs_nccl < 0.90, "steady state %.4f x NCCL", vs_nccl);
  CHECK_MSG(vs_oracle < 1.05, "steady state %.4f x oracle", vs_oracle);
  CHECK_MSG(a.worst_stream_vs_default < 1.03, "worst stream %.4f x NCCL", a.worst_stream_vs_default);
  CHECK_EQ_INT(a.rank_mismatches, 0);
  CHECK_EQ_INT(a.failed_calls, 0);
  /* Synchronous builtin runs are deterministic. */
  CHECK(a.total_true_us == b.total_true_us);
}

/* The GPU runs replayed (scenarios/profiles/h100-sockets-2ranks-replay: measured latencies of every
 * swept action per size on the H100 test machine, with its measured per-call noise and drift, and the
 * work tree leaves behind its kernel over sockets): learning on real data with DYNAMICCL_COST=stream,
 * each call launched before the last kernel's end reached the profiler as in collbench's loop, reaches
 * the oracle in the steady state and keeps the large real gains where NCCL is far off (AllReduce 64
 * KiB: tree; AllGather 64 KiB: PAT). Given kernel spans alone (DYNAMICCL_COST=span) it takes tree on 2
 * channels for about half what it costs and runs AllReduce 16 MiB slower than NCCL, as on the GPU
 * (run 8). `bench/bench_replay.sh build 10 2.28 gpu-sweep-long stream` (and `span`) gives ten seeds:
 * with stream 1 stream over 2% while learning (worst 1.025) and 0 sizes below 0.97 of NCCL frozen,
 * against 42 and 40 with spans. Under the replay's noise a stream can still end slower than
 * NCCL, issue 5's open per-size target (here 1 stream at 1.06, with NCCL 2.30's chunk sizes); under 8%
 * guards against that getting worse. */
static void test_learns_on_replayed_gpu_measurements(void) {
  learn_environment();
  dccl_emu_result r, spans;
  host_ahead = 1;
  setenv("DYNAMICCL_COST", "stream", 1);
  CHECK(run("h100-sockets-2ranks-replay", gpu_sweep_text, 1, 0, &r) == 0);
  setenv("DYNAMICCL_COST", "span", 1);
  CHECK(run("h100-sockets-2ranks-replay", gpu_sweep_text, 1, 0, &spans) == 0);
  unsetenv("DYNAMICCL_COST");
  host_ahead = 0;
  double vs_oracle = r.steady_true_us / r.steady_oracle_us;
  CHECK_MSG(vs_oracle < 1.01, "steady state %.4f x oracle", vs_oracle);
  CHECK_MSG(r.worst_stream_vs_default < 1.08, "%d streams slower than NCCL by > 2%% (worst %.4f)", r.streams_over_2pct,
            r.worst_stream_vs_default);
  static const int colls[] = {DCCL_COLL_ALLREDUCE, DCCL_COLL_ALLGATHER};
  for (int i = 0; i < 2; i++) {
    const dccl_emu_stream_stats* s = &r.stream[colls[i] * DCCL_SIZE_BINS + dccl_size_bin(65536)];
    CHECK_MSG(s->steady_calls > 0 && s->steady_true_us < 0.75 * s->steady_default_us, "%s 64K: %.1f us vs NCCL %.1f us",
              dccl_coll_name(colls[i]), s->steady_true_us, s->steady_default_us);
  }
  const dccl_emu_stream_stats* big = &r.stream[DCCL_COLL_ALLREDUCE * DCCL_SIZE_BINS + dccl_size_bin(16 << 20)];
  const dccl_emu_stream_stats* big_spans = &spans.stream[DCCL_COLL_ALLREDUCE * DCCL_SIZE_BINS + dccl_size_bin(16 << 20)];
  CHECK_MSG(big->steady_true_us < 1.02 * big->steady_default_us && big_spans->steady_true_us > 1.05 * big_spans->steady_default_us,
            "AllReduce 16M x NCCL: %.4f by stream time, %.4f by spans", big->steady_true_us / big->steady_default_us,
            big_spans->steady_true_us / big_spans->steady_default_us);
  CHECK_EQ_INT(r.rank_mismatches, 0);
}

/* A warm start runs near the oracle from its first calls. Measured by the regret over the run's first
 * fifth: the streams' convergence (calls until every window of 10 stays within 5% of the oracle) flips on
 * one late exploration at the 1% epsilon floor, and so did its median over the 14 streams from seed to
 * seed (warm starts "converged" after 0 to 700 calls, cold ones after 130 to 960). The regret is 0.0157
 * (cold 0.0878) since AllGather asks for no more channels than NCCL has shown (0.0322 and 0.1219 before:
 * the pcie node has 2, which requests of 4-32 duplicated); 0.0259 before each loaded cell measured NCCL's
 * choice again to check the saved statistics (NCCL's choice is 20% slower than what the cells run here),
 * 0.0291 before e258052 (the charge scaled by the drift level, the check waiting for a charged reading),
 * hence 0.035. */
static void test_warm_start_and_frozen(void) {
  learn_environment();
  unlink(policy_path);
  setenv("DYNAMICCL_POLICY_FILE", policy_path, 1);
  dccl_emu_result cold, warm, frozen;
  CHECK(run("pcie-8gpu", pcie_text, 1, 0, &cold) == 0);
  CHECK_MSG(access(policy_path, R_OK) == 0, "no policy saved at %s", policy_path);
  CHECK(run("pcie-8gpu", pcie_text, 1, 0, &warm) == 0);
  double cold_start = cold.regret_curve[1], warm_start = warm.regret_curve[1];
  printf("warm start: first fifth %.4f beyond the oracle, cold %.4f\n", warm_start, cold_start);
  CHECK_MSG(warm_start < 0.035 && warm_start < cold_start / 2,
            "first fifth of the calls: warm start %.4f beyond the oracle, cold %.4f", warm_start, cold_start);
  setenv("DYNAMICCL_MODE", "frozen", 1);
  CHECK(run("pcie-8gpu", pcie_text, 1, 0, &frozen) == 0);
  double vs_oracle = frozen.total_true_us / frozen.total_oracle_us;
  CHECK_MSG(vs_oracle < 1.05, "frozen policy %.4f x oracle over the whole run", vs_oracle);
  CHECK_MSG(frozen.convergence_max_calls == 0 || frozen.convergence_median_calls == 0,
            "frozen policy converged only after %.0f calls", frozen.convergence_median_calls);
  /* A corrupt policy file is reported and ignored: the job runs with NCCL's choices. */
  FILE* f = fopen(policy_path, "r+b");
  CHECK(f != NULL);
  if (f != NULL) {
    fseek(f, 100, SEEK_SET);
    fputc('X', f);
    fclose(f);
  }
  dccl_emu_result corrupt;
  CHECK(run("pcie-8gpu", pcie_text, 1, 0, &corrupt) == 0);
  CHECK(corrupt.plugin_warnings >= 1);
  CHECK_NEAR(corrupt.total_true_us / corrupt.total_default_us, 1.0, 1e-9);
  char aside[160];
  snprintf(aside, sizeof(aside), "%s.rejected", policy_path);
  CHECK_MSG(access(aside, F_OK) != 0 && access(policy_path, F_OK) == 0, "frozen mode set the policy aside");
  unsetenv("DYNAMICCL_POLICY_FILE");
}

/* A policy learned on the GPU test machine's replay and loaded where the machine disagrees with it (the
 * calibrated model of the same testbed, h100-sockets-2ranks: the policy's fingerprint, other latencies
 * per action; `bench/bench_warm_start.sh` measures this over seeds). The learner measures NCCL's choice
 * again in each loaded cell, finds where the saved gaps no longer hold, and learns those cells again,
 * and tree/LL's work left behind at AllReduce 1 KiB is charged though the gpu-sweep's 20 us gaps keep
 * its calls from running back to back. With none of that (commit d785297), 11 streams ended more than
 * 2% slower than NCCL (worst 1.57x, AllReduce 1 KiB 1.54x); without any one of the three, 4-6 streams
 * (worst 1.53-1.56x).
 * One seed's worst stream is luck, and so was this test's verdict on eight seeds (at most two of them
 * with a stream 10% slower than NCCL, until the 52nd stop): about 3 seeds in 10 end with such a stream
 * (16 of seeds 1-48 here; 52 of 192 by `bench/bench_disagreeing_warm_start.sh build 192`, these runs by
 * `dccl run`, before the 52nd stop's level change, 47 since), and at that rate 3 or more of 8 come up about
 * one time in three, so most changes to the learner's random path failed or passed it by where its seeds
 * landed. Now 48 seeds (1-48, each both runs' simulator seed), and limits from the binomial: at most 22
 * with a stream 10% slower (fails by chance 0.2% of the time at a rate of 0.27, 2% at 0.33; catches a rate
 * of 0.5 two times in three, 0.6 97 times in 100), at most 6 with AllReduce 1 KiB 5% slower (0.3% by chance
 * at a rate of 0.04), and at most 5 streams more than 2% slower per seed on average (d785297's seed had
 * 11). Measured here after the limits were set: 16, 2 and 181 before the level change, 16, 1 and 179
 * since, 7, 1 and 145 with the loaded-policy check on 8 readings (the 60th stop), 4, 1 and 137 with the
 * check of the saved congested statistics (the 61st); with check_loaded off, 45, 6 and 398. Under
 * AddressSanitizer a seed takes about 24 s (0.7 s plain): there 2 seeds check memory, not rates. */
#define RATE_SEEDS 48 /* the seeds the limits below are set for */
#if defined(UNDER_ADDRESS_SANITIZER)
#define DISAGREEING_SEEDS 2
#else
#define DISAGREEING_SEEDS RATE_SEEDS
#endif
static void test_warm_start_where_the_machine_disagrees(void) {
  learn_environment();
  setenv("DYNAMICCL_POLICY_FILE", policy_path, 1);
  host_ahead = 1;
  int slow_worst = 0, slow_small = 0, slow_streams = 0;
  for (sim_seed = 1; sim_seed <= DISAGREEING_SEEDS; sim_seed++) {
    unlink(policy_path);
    dccl_emu_result replay, warm;
    CHECK(run("h100-sockets-2ranks-replay", gpu_sweep_text, 1, 0, &replay) == 0);
    /* The policy carries what each action left behind (every cell of gpu-sweep's sizes but the one whose
     * calls wait on the application), so the warm start charges it from its first calls. */
    dccl_policy_meta meta;
    char error[512];
    CHECK_MSG(dccl_policy_load(policy_path, 0, &meta, NULL, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_LOADED, "%s",
              error);
    CHECK_MSG(meta.version == DCCL_POLICY_VERSION && meta.leftover_cells >= 20, "format %u, %u cells with leftover estimates",
              meta.version, meta.leftover_cells);
    CHECK(run("h100-sockets-2ranks", gpu_sweep_text, 1, 0, &warm) == 0);
    const dccl_emu_stream_stats* small = &warm.stream[DCCL_COLL_ALLREDUCE * DCCL_SIZE_BINS + dccl_size_bin(1024)];
    printf("warm start on a machine that disagrees, seed %llu: steady state %.4f x oracle, %d streams slower than NCCL "
           "by > 2%% (worst %.4f), AllReduce 1 KiB %.4f x NCCL\n", (unsigned long long)sim_seed,
           warm.steady_true_us / warm.steady_oracle_us, warm.streams_over_2pct, warm.worst_stream_vs_default,
           small->steady_true_us / small->steady_default_us);
    slow_worst += warm.worst_stream_vs_default >= 1.10;
    slow_small += small->steady_true_us >= 1.05 * small->steady_default_us;
    slow_streams += warm.streams_over_2pct;
  }
  sim_seed = 5;
  host_ahead = 0;
  unsetenv("DYNAMICCL_POLICY_FILE");
  printf("warm start on a machine that disagrees, %d seeds: %d with a stream 10%% slower than NCCL, %d with AllReduce "
         "1 KiB 5%% slower, %d streams slower by > 2%%\n", DISAGREEING_SEEDS, slow_worst, slow_small, slow_streams);
#if DISAGREEING_SEEDS == RATE_SEEDS /* fewer seeds give no rate */
  CHECK_MSG(slow_worst <= 22, "%d of %d seeds end with a stream 10%% slower than NCCL", slow_worst, RATE_SEEDS);
  CHECK_MSG(slow_small <= 6, "%d of %d seeds end with AllReduce 1 KiB 5%% slower than NCCL", slow_small, RATE_SEEDS);
  CHECK_MSG(slow_streams <= 5 * RATE_SEEDS, "%d streams slower than NCCL by > 2%% over %d seeds", slow_streams, RATE_SEEDS);
#endif
}

/* The file at `path` holds exactly `size` bytes `data`. */
static int holds(const char* path, const uint8_t* data, size_t size) {
  size_t n;
  uint8_t* now = test_read_file(path, &n);
  int same = now != NULL && n == size && memcmp(now, data, size) == 0;
  free(now);
  return same;
}

static const char* short_text = "sweep allreduce 1M 16M x5 gap=20us\nrepeat 20\n";

/* A learn-mode job whose saved policy is another topology's or shape's (here another action space: the
 * file is shared through DYNAMICCL_POLICY_FILE) leaves that file as it is, says so once and saves nothing
 * over it: it was set aside before, and a second shape sharing the file set aside the first's. One whose
 * saved policy is of a format this DynamICCL no longer reads keeps it, byte for byte, beside the older
 * files set aside (<path>.rejected, here already taken, then <path>.rejected.1), and saves its own. */
static void test_unusable_policy_is_set_aside(void) {
  learn_environment();
  char aside[160], next_aside[176];
  snprintf(aside, sizeof(aside), "%s.rejected", policy_path);
  snprintf(next_aside, sizeof(next_aside), "%s.1", aside);
  unlink(policy_path);
  unlink(aside);
  unlink(next_aside);
  setenv("DYNAMICCL_POLICY_FILE", policy_path, 1);
  setenv("DYNAMICCL_MAX_CHANNELS", "16", 1); /* another action space: another fingerprint */
  dccl_emu_result r;
  CHECK(run("pcie-8gpu", short_text, 1, 0, &r) == 0);
  CHECK_EQ_INT(r.plugin_warnings, 0);
  unsetenv("DYNAMICCL_MAX_CHANNELS");
  size_t size;
  uint8_t* other_topology = test_read_file(policy_path, &size);
  CHECK_MSG(other_topology != NULL && size > 64, "no policy saved at %s", policy_path);
  if (other_topology == NULL || size <= 64) return;
  CHECK(test_write_file(aside, "older rejected file", 19) == 0);

  CHECK(run("pcie-8gpu", short_text, 1, 0, &r) == 0);
  CHECK_EQ_INT(r.plugin_warnings, 1);
  CHECK_MSG(holds(policy_path, other_topology, size), "the other topology's policy at %s was replaced", policy_path);
  CHECK_MSG(holds(aside, (const uint8_t*)"older rejected file", 19) && access(next_aside, F_OK) != 0,
            "something was set aside");

  /* The other topology's policy, turned into a file of format 1 (the checksum over the payload only). */
  uint32_t version = 1;
  memcpy(other_topology + 8, &version, 4);
  uint64_t h = 0xCBF29CE484222325ULL;
  for (size_t i = 64; i < size; i++) h = (h ^ other_topology[i]) * 0x100000001B3ULL;
  memcpy(other_topology + 32, &h, 8);
  CHECK(test_write_file(policy_path, other_topology, size) == 0);
  CHECK(run("pcie-8gpu", short_text, 1, 0, &r) == 0);
  CHECK_EQ_INT(r.plugin_warnings, 1);
  CHECK_MSG(holds(next_aside, other_topology, size), "the format-1 policy is not kept as %s", next_aside);
  CHECK(holds(aside, (const uint8_t*)"older rejected file", 19));
  dccl_policy_meta meta;
  char error[512];
  memset(&meta, 0, sizeof(meta));
  CHECK_MSG(dccl_policy_load(policy_path, 0, &meta, NULL, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_LOADED, "%s", error);
  CHECK_EQ_INT(meta.max_channels, 32);
  free(other_topology);
  unlink(aside);
  unlink(next_aside);
  unlink(policy_path);
  unsetenv("DYNAMICCL_POLICY_FILE");
}

/* DYNAMICCL_POLICY_DIR is made with its missing parents, so that a job's policy is saved there at its end
 * (a plain mkdir left it unsaved, said only then). */
static void test_policy_dir_made_with_its_parents(void) {
  learn_environment();
  char folder[64], nested[128], path[512];
  snprintf(folder, sizeof(folder), "/tmp/dccl-policy-dir-XXXXXX");
  CHECK(mkdtemp(folder) != NULL);
  snprintf(nested, sizeof(nested), "%s/a/b", folder);
  setenv("DYNAMICCL_POLICY_DIR", nested, 1);
  dccl_emu_result r;
  CHECK(run("pcie-8gpu", short_text, 1, 0, &r) == 0);
  unsetenv("DYNAMICCL_POLICY_DIR");
  CHECK_EQ_INT(r.plugin_warnings, 0);
  DIR* d = opendir(nested);
  int policies = 0;
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;)
    if (strncmp(e->d_name, "policy-", 7) == 0) {
      snprintf(path, sizeof(path), "%s/%s", nested, e->d_name);
      policies++;
    }
  if (d != NULL) closedir(d);
  CHECK_EQ_INT(policies, 1);
  char error[512];
  if (policies == 1)
    CHECK_MSG(dccl_policy_load(path, 0, NULL, NULL, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_LOADED, "%s", error);
  test_remove_tree(folder);
}

/* A job's first save removes the temporary files that earlier jobs, killed mid-save, left beside the
 * policy (over DCCL_STALE_TEMPORARY_SECONDS old), and no other file. */
static void test_interrupted_saves_are_cleaned_up(void) {
  learn_environment();
  setenv("DYNAMICCL_POLICY_FILE", policy_path, 1);
  unlink(policy_path);
  char stale[192], fresh[192];
  CHECK(dccl_temporary_name(policy_path, 0xdeadbeefULL, stale, sizeof(stale)) == 0);
  CHECK(dccl_temporary_name(policy_path, 0xfeedf00dULL, fresh, sizeof(fresh)) == 0);
  CHECK(test_write_file(stale, "half a policy", 13) == 0 && test_write_file(fresh, "a save in progress", 18) == 0);
  CHECK(test_age_file(stale, DCCL_STALE_TEMPORARY_SECONDS + 60) == 0);
  dccl_emu_result r;
  CHECK(run("pcie-8gpu", short_text, 1, 0, &r) == 0);
  CHECK_EQ_INT(r.plugin_warnings, 0);
  CHECK_MSG(access(stale, F_OK) != 0, "%s was left", stale);
  CHECK_MSG(holds(fresh, (const uint8_t*)"a save in progress", 18), "%s was touched", fresh);
  char error[512];
  CHECK_MSG(dccl_policy_load(policy_path, 0, NULL, NULL, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_LOADED, "%s", error);
  unlink(fresh);
  unlink(policy_path);
  unsetenv("DYNAMICCL_POLICY_FILE");
}

/* A learn-mode job that cannot read its saved policy (here: no permission) leaves it as it is and
 * saves nothing, since it may be a good policy. Run in a child process without root's privileges, in
 * a folder where the child could otherwise replace the file. */
static void test_unreadable_policy_is_not_overwritten(void) {
  learn_environment();
  char folder[64], path[128], aside[160];
  snprintf(folder, sizeof(folder), "/tmp/dccl-unreadable-XXXXXX");
  CHECK(mkdtemp(folder) != NULL);
  CHECK(chmod(folder, 0777) == 0);
  snprintf(path, sizeof(path), "%s/policy.bin", folder);
  snprintf(aside, sizeof(aside), "%s.rejected", path);
  static const char saved[] = "a good policy this job may not read";
  CHECK(test_write_file(path, saved, sizeof(saved)) == 0);
  CHECK(chmod(path, 0) == 0);
  setenv("DYNAMICCL_POLICY_FILE", path, 1);
  fflush(NULL);
  pid_t child = fork();
  if (child == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    if (access(path, R_OK) == 0) _exit(4); /* still privileged: the test would prove nothing */
    dccl_emu_result r;
    if (run("pcie-8gpu", short_text, 1, 0, &r) != 0) _exit(5);
    _exit(r.plugin_warnings == 1 ? 0 : 6);
  }
  int status = -1;
  CHECK(child > 0 && waitpid(child, &status, 0) == child);
  int unprivileged = !(WIFEXITED(status) && (WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 4));
  if (!unprivileged) /* a container that forbids setuid: the file cannot be made unreadable to the job */
    fprintf(stderr, "  note: %s could not run without root's privileges here; its checks are skipped\n",
            test_current_name);
  else
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d (5: run failed, 6: not one warning)",
              status);
  CHECK(chmod(path, 0600) == 0);
  CHECK_MSG(holds(path, (const uint8_t*)saved, sizeof(saved)), "the unreadable policy was replaced");
  CHECK(access(aside, F_OK) != 0);
  DIR* d = opendir(folder);
  int entries = 0;
  for (struct dirent* e; d != NULL && (e = readdir(d)) != NULL;) entries += e->d_name[0] != '.';
  if (d != NULL) closedir(d);
  CHECK_EQ_INT(entries, 1); /* no temporary file left either */
  unlink(path);
  rmdir(folder);
  unsetenv("DYNAMICCL_POLICY_FILE");
}

/* Counts, in rank 0's per-call log, the (collective, size) streams that ran more than one execution
 * (algorithm, protocol, channels, chunk) among calls [first, last). */
static int streams_that_changed(const char* call_log, uint64_t first, uint64_t last) {
  FILE* f = fopen(call_log, "r");
  if (f == NULL) return -1;
  enum { MAX_KEYS = 256 };
  static char keys[MAX_KEYS][64], executions[MAX_KEYS][96];
  static int changed[MAX_KEYS];
  int n_keys = 0, streams = 0;
  char line[512];
  if (fgets(line, sizeof(line), f) == NULL) n_keys = -1; /* header */
  while (n_keys >= 0 && fgets(line, sizeof(line), f) != NULL) {
    unsigned long long call;
    char coll[32], algo[32], proto[32];
    unsigned long long bytes, chunk;
    int channels;
    if (sscanf(line, "%llu,%31[^,],%llu,%31[^,],%31[^,],%d,%llu", &call, coll, &bytes, algo, proto, &channels, &chunk) != 7)
      continue;
    if (call < first || call >= last) continue;
    char key[64], execution[96];
    snprintf(key, sizeof(key), "%s/%llu", coll, bytes);
    snprintf(execution, sizeof(execution), "%s/%s/%d/%llu", algo, proto, channels, chunk);
    int k = 0;
    while (k < n_keys && strcmp(keys[k], key) != 0) k++;
    if (k == n_keys && n_keys < MAX_KEYS) {
      snprintf(keys[n_keys], sizeof(keys[0]), "%s", key);
      snprintf(executions[n_keys], sizeof(executions[0]), "%s", execution);
      changed[n_keys++] = 0;
    } else if (k < n_keys && !changed[k] && strcmp(executions[k], execution) != 0) {
      changed[k] = 1;
      streams++;
    }
  }
  fclose(f);
  return n_keys < 0 ? -1 : streams;
}

static void test_hold_stops_learning(void) {
  learn_environment();
  setenv("DYNAMICCL_LEARN_FOR", "4000", 1);
  char call_log[160];
  snprintf(call_log, sizeof(call_log), "%s/calls.csv", temp_dir);
  dccl_emu_result held;
  CHECK(run_logged("pcie-8gpu", pcie_text, call_log, &held) == 0);
  /* Before the hold the agent explores; after it (the 4000th measurement, published by call ~4200)
   * every stream keeps one execution, and the held decisions beat NCCL's. */
  int before = streams_that_changed(call_log, 0, 4000), after = streams_that_changed(call_log, 5000, held.calls);
  CHECK_MSG(before > 0, "no stream changed its execution while learning (%d)", before);
  CHECK_MSG(after == 0, "%d streams still changed their execution after the hold", after);
  double vs_nccl = held.steady_true_us / held.steady_default_us;
  CHECK_MSG(vs_nccl < 1.0, "held decisions %.4f x NCCL", vs_nccl);
  unlink(call_log);
  unsetenv("DYNAMICCL_LEARN_FOR");
}

/* CUDA graphs (profiler v5+): a training loop captures its step once, then replays it. A captured call
 * is decided once for all the replays, so it gets its cell's exploited action: while the agent explores
 * every stream, no stream changes its execution within the captured step (the same calls run eagerly
 * do: 7 of 14 streams; captured before this was handled, 6). The replays (the step's actions at the
 * eager calls' sizes, with no call of their own) are not learned, and learning beside them ends as well
 * as without them (test_learns_beyond_nccl_and_reproducibly's bounds). Joined with the eager calls, as
 * they were, they left the steady state at 1.169 x oracle and its worst stream at 1.54 x NCCL. */
static void test_cuda_graph_capture_and_replays(void) {
  learn_environment();
  char call_log[160];
  snprintf(call_log, sizeof(call_log), "%s/graph-calls.csv", temp_dir);
  const uint64_t step = 280, first = 2 * step; /* pcie_text: one repeat, every stream 20 times */
  dccl_emu_result eager, captured, replayed;
  CHECK(run_logged("pcie-8gpu", pcie_text, call_log, &eager) == 0);
  int explored = streams_that_changed(call_log, first, first + step);
  graph_first = first;
  graph_calls = step;
  CHECK(run_logged("pcie-8gpu", pcie_text, call_log, &captured) == 0);
  int changed = streams_that_changed(call_log, first, first + step);
  CHECK_MSG(explored >= 3, "only %d of 14 streams explored in the step run eagerly", explored);
  CHECK_MSG(changed == 0, "%d streams changed their execution within the captured step", changed);
  CHECK_EQ_INT(captured.graph_replayed_calls, 0);
  graph_replay_every = 40; /* a replay after every 40 calls run eagerly: amid every stream's calls */
  CHECK(run("pcie-8gpu", pcie_text, 1, 0, &replayed) == 0);
  CHECK_MSG(replayed.graph_replayed_calls >= 390 * step, "%llu calls replayed",
            (unsigned long long)replayed.graph_replayed_calls);
  double graph_vs_nccl = replayed.graph_true_us / replayed.graph_default_us;
  double vs_nccl = replayed.steady_true_us / replayed.steady_default_us;
  double vs_oracle = replayed.steady_true_us / replayed.steady_oracle_us;
  CHECK_MSG(graph_vs_nccl < 1.0, "the captured step %.4f x NCCL", graph_vs_nccl);
  CHECK_MSG(vs_nccl < 0.90, "steady state beside the replays %.4f x NCCL", vs_nccl);
  CHECK_MSG(vs_oracle < 1.05, "steady state beside the replays %.4f x oracle", vs_oracle);
  CHECK_MSG(replayed.worst_stream_vs_default < 1.03, "worst stream %.4f x NCCL", replayed.worst_stream_vs_default);
  CHECK_EQ_INT(replayed.rank_mismatches, 0);
  graph_first = graph_calls = graph_replay_every = 0;
  unlink(call_log);
}

static void test_multirank_without_coordination_runs_frozen(void) {
  learn_environment();
  setenv("DYNAMICCL_COORD", "off", 1);
  dccl_emu_result r;
  CHECK(run("pcie-8gpu", "allreduce 4M x200\n", 4, 0, &r) == 0);
  CHECK_EQ_INT(r.rank_mismatches, 0);
  CHECK_EQ_INT((int)r.plugin_warnings, 4); /* one per rank: learning needs coordination */
  CHECK_NEAR(r.total_true_us / r.total_default_us, 1.0, 1e-9);
  unsetenv("DYNAMICCL_COORD");
}

static void test_shared_library_learns_with_its_thread(void) {
  /* The real library with its background thread: how much it learns depends on how fast the thread
   * runs (sanitizers slow it down), so this checks that it learned from GPU-timed measurements and
   * saved them, never hurting much meanwhile; learning quality is checked synchronously above. */
  learn_environment();
  unlink(policy_path);
  setenv("DYNAMICCL_POLICY_FILE", policy_path, 1);
  dccl_emu_result r;
  CHECK(run("pcie-8gpu",
            "sweep allreduce 1M 64M x20 gap=20us\n"
            "sweep allgather 1M 64M x20 gap=20us\n"
            "repeat 40\n",
            1, 1, &r) == 0);
  CHECK_EQ_INT(r.failed_calls, 0);
  CHECK_EQ_INT(r.rank_mismatches, 0);
  double vs_nccl = r.total_true_us / r.total_default_us;
  CHECK_MSG(vs_nccl < 1.05, "library with background thread: %.4f x NCCL", vs_nccl);
  dccl_policy_meta meta;
  char error[256];
  CHECK_MSG(dccl_policy_load(policy_path, 0, &meta, NULL, NULL, NULL, error, sizeof(error)) == 0, "%s", error);
  CHECK_MSG(meta.observations >= 1000, "learned from %llu measurements", (unsigned long long)meta.observations);
  unsetenv("DYNAMICCL_POLICY_FILE");
}

static void test_memory_per_communicator(void) {
  /* Learning on the largest action space (64 channels, chunk sizes) with the LSTM trigger fits in
   * 16 MiB, as the plugin accounts it (the number it logs). */
  dccl_learner_options o;
  memset(&o, 0, sizeof(o));
  o.trigger = 2;
  dccl_agent_default_options(&o.agent);
  o.agent.n_ranks = 32;
  o.agent.n_nodes = 4;
  o.agent.space.max_channels = 64;
  o.agent.space.tune_chunk = 1;
  dccl_trigger_default_options(&o.trigger_options);
  static dccl_learner learner;
  CHECK(dccl_learner_init(&learner, &o) == 0);
  CHECK(learner.trigger_ready);
  size_t bytes = dccl_learning_memory_bytes(&learner);
  CHECK_MSG(bytes > sizeof(dccl_call_log) + (1u << 20), "%zu bytes is implausibly small", bytes);
  CHECK_MSG(bytes <= 16u << 20, "%.1f MiB", bytes / 1048576.0);
  dccl_learner_free(&learner);
}

static void quiet_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

/* A one-rank communicator `comm_id` with both halves of the built-in plugin (tuner v6, profiler v5)
 * paired; NULL, reported, when they did not pair. Closed with close_paired_comm. */
static dccl_comm* open_paired_comm(uint64_t comm_id, const char* name, void** profiler_context, void** tuner_context) {
  const ncclProfiler_v5_t* profiler = builtin.profiler[5];
  const ncclTuner_v6_t* tuner = builtin.tuner[6];
  int mask = 0;
  *profiler_context = *tuner_context = NULL;
  CHECK_EQ_INT(profiler->init(profiler_context, comm_id, &mask, name, 1, 1, 0, quiet_logger), ncclSuccess);
  CHECK_EQ_INT(tuner->init(tuner_context, comm_id, 1, 1, quiet_logger, NULL, NULL), ncclSuccess);
  dccl_comm* comm = *tuner_context;
  CHECK(comm != NULL && comm == *profiler_context);
  return comm != NULL && comm == *profiler_context ? comm : NULL;
}

static void close_paired_comm(void* profiler_context, void* tuner_context) {
  const ncclTuner_v6_t* tuner = builtin.tuner[6];
  const ncclProfiler_v5_t* profiler = builtin.profiler[5];
  tuner->finalize(tuner_context);
  profiler->finalize(profiler_context);
}

/* A cost table larger than the 7 x 3 DynamICCL knows (a newer NCCL's algorithms or protocols): the
 * first call of a cell keeps the known block in its snapshot and writes nothing beyond it. */
static void test_cost_snapshot_of_a_larger_table(void) {
  learn_environment();
  char path[192];
  snprintf(path, sizeof(path), "%s/snapshot-policy.bin", temp_dir);
  setenv("DYNAMICCL_POLICY_FILE", path, 1);
  const ncclTuner_v6_t* tuner = builtin.tuner[6];
  void *profiler_context, *tuner_context;
  dccl_comm* comm = open_paired_comm(4242, "snapshot", &profiler_context, &tuner_context);
  CHECK(comm != NULL && comm->costs != NULL);
  if (comm == NULL || comm->costs == NULL) return;
  const int shapes[2][2] = {{10, 2}, {10, 4}}; /* algorithms x protocols */
  int cells[2];
  for (int k = 0; k < 2; k++) {
    int num_algo = shapes[k][0], num_proto = shapes[k][1];
    size_t bytes = (size_t)1 << (20 + 4 * k);
    int cell = cells[k] = dccl_cell_for_call(DCCL_COLL_ALLREDUCE, bytes, 1, 0);
    const float marker = 123.0f;
    for (int i = 0; i < DCCL_COST_ENTRIES; i++) comm->costs->cost[cell + 1][i] = marker;
    float cost[10 * 4]; /* entry (a, p) costs a * 10 + p */
    for (int a = 0; a < num_algo; a++)
      for (int p = 0; p < num_proto; p++) cost[a * num_proto + p] = (float)(a * 10 + p);
    int channels = 0;
    CHECK_EQ_INT(tuner->getCollInfo(tuner_context, ncclFuncAllReduce, bytes, 1, (float**)cost, num_algo, num_proto, 0,
                                    &channels),
                 ncclSuccess);
    CHECK(atomic_load(&comm->costs->ready[cell]) == 1);
    for (int a = 0; a < DCCL_NUM_ALGOS; a++)
      for (int p = 0; p < DCCL_NUM_PROTOS; p++) {
        float expected = p < num_proto ? (float)(a * 10 + p) : -1.0f;
        CHECK_MSG(comm->costs->cost[cell][a * DCCL_NUM_PROTOS + p] == expected, "%d x %d: snapshot (%d, %d) = %g",
                  num_algo, num_proto, a, p, comm->costs->cost[cell][a * DCCL_NUM_PROTOS + p]);
      }
    for (int i = 0; i < DCCL_COST_ENTRIES; i++) CHECK(comm->costs->cost[cell + 1][i] == marker);
  }
  for (int c = 0; c < DCCL_TABLE_CELLS; c++)
    if (c != cells[0] && c != cells[1]) CHECK_MSG(atomic_load(&comm->costs->ready[c]) == 0, "cell %d marked ready", c);
  close_paired_comm(profiler_context, tuner_context);
  unlink(path);
  unsetenv("DYNAMICCL_POLICY_FILE");
}

/* The seed the agents of a fresh learning communicator (id 4343, rank 0) are given, with
 * DYNAMICCL_SEED set to `seed` (NULL: unset). */
static void agents_seeds(const char* seed, uint64_t* agent_seed, uint64_t* trigger_seed) {
  learn_environment();
  if (seed != NULL) setenv("DYNAMICCL_SEED", seed, 1);
  else unsetenv("DYNAMICCL_SEED");
  void *profiler_context, *tuner_context;
  dccl_comm* comm = open_paired_comm(4343, "seed", &profiler_context, &tuner_context);
  CHECK(comm != NULL && comm->learner != NULL);
  *agent_seed = *trigger_seed = 12345;
  if (comm != NULL && comm->learner != NULL) {
    *agent_seed = comm->learner->options.agent.seed;
    *trigger_seed = comm->learner->options.trigger_options.seed;
  }
  close_paired_comm(profiler_context, tuner_context);
  unsetenv("DYNAMICCL_SEED");
}

/* DYNAMICCL_SEED=0 seeds the agents with 0 (not the seed derived from the communicator id, as when it
 * is unset), and a generator seeded with 0 is not degenerate. */
static void test_explicit_seed_zero_reaches_the_agents(void) {
  uint64_t agent_seed, trigger_seed;
  agents_seeds("0", &agent_seed, &trigger_seed);
  CHECK(agent_seed == 0 && trigger_seed == 0);
  agents_seeds("77", &agent_seed, &trigger_seed);
  CHECK(agent_seed == 77 && trigger_seed == 77);
  agents_seeds(NULL, &agent_seed, &trigger_seed);
  CHECK(agent_seed == dccl_mix64(4343) && trigger_seed == agent_seed);
  dccl_rng rng;
  dccl_rng_seed(&rng, 0);
  uint64_t draws[8];
  for (int i = 0; i < 8; i++) {
    draws[i] = dccl_rng_next(&rng);
    CHECK(draws[i] != 0);
    for (int j = 0; j < i; j++) CHECK(draws[i] != draws[j]);
  }
}

int main(void) {
  char exe[1024];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[n > 0 ? n : 0] = '\0';
  snprintf(plugin_path, sizeof(plugin_path), "%s/../libnccl-tuner-dynamiccl.so", dirname(exe));
  snprintf(temp_dir, sizeof(temp_dir), "/tmp/dccl-learning-XXXXXX");
  if (mkdtemp(temp_dir) == NULL) return 1;
  snprintf(policy_path, sizeof(policy_path), "%s/policy.bin", temp_dir);
  dccl_builtin_abi(builtin.tuner, builtin.profiler);
  dccl_registry_set_manual(1);
  RUN(test_learns_beyond_nccl_and_reproducibly);
  RUN(test_learns_on_replayed_gpu_measurements);
  RUN(test_warm_start_and_frozen);
  RUN(test_warm_start_where_the_machine_disagrees);
  RUN(test_unusable_policy_is_set_aside);
  RUN(test_unreadable_policy_is_not_overwritten);
  RUN(test_policy_dir_made_with_its_parents);
  RUN(test_interrupted_saves_are_cleaned_up);
  RUN(test_hold_stops_learning);
  RUN(test_cuda_graph_capture_and_replays);
  RUN(test_multirank_without_coordination_runs_frozen);
  RUN(test_memory_per_communicator);
  RUN(test_cost_snapshot_of_a_larger_table);
  RUN(test_explicit_seed_zero_reaches_the_agents);
  dccl_registry_set_manual(0);
  RUN(test_shared_library_learns_with_its_thread);
  unlink(policy_path);
  rmdir(temp_dir);
  TEST_SUMMARY();
}
