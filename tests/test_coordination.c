/* tests/test_coordination.c: coordinated learning end to end. The plugin library, learning, driven by
 * the NCCL emulator with ranks as processes on loopback: every rank must run the same action on every
 * call while the emulator injects host delays of several epochs, a slow leader, a late worker and
 * dropped connections; over Unix sockets on one node and TCP through the registry across "nodes";
 * a multi-node communicator without a coordinator runs NCCL's choices everywhere; frozen, every rank
 * runs rank 0's saved policy, and rank 0's fixed table and rule pins; and processes that each hold two communicators with different leaders.
 *
 * DYNAMICCL_TEST_CALLS sets the calls of the 8-process run (default 200000; the closing note's
 * figure uses 1000000: `make test-coordination-long`). */
#include <libgen.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../coord/coordinator.h"
#include "../coord/transport.h"
#include "../core/rng.h"
#include "../emu/emulator.h"
#include "test.h"
#include "test_files.h"

static char plugin_path[1200];

static int load(const char* profile_name, const char* workload_name, dccl_sim* sim, dccl_workload* workload,
                uint64_t calls) {
  char path[512], error[512];
  dccl_profile profile;
  snprintf(path, sizeof(path), "%s/scenarios/profiles/%s.profile", DYNAMICCL_SOURCE_DIR, profile_name);
  if (dccl_profile_load(path, &profile, error, sizeof(error)) != 0) goto fail;
  snprintf(path, sizeof(path), "%s/scenarios/workloads/%s.workload", DYNAMICCL_SOURCE_DIR, workload_name);
  if (dccl_workload_find(path, workload, error, sizeof(error)) != 0) goto fail;
  if (dccl_sim_init(sim, &profile, NULL, 5, calls, error, sizeof(error)) != 0) goto fail;
  return 0;
fail:
  fprintf(stderr, "%s\n", error);
  return -1;
}

static void learning_environment(void) {
  setenv("DYNAMICCL_MODE", "learn", 1);
  setenv("DYNAMICCL_PROFILE", "on", 1);
  unsetenv("DYNAMICCL_COORD");
  unsetenv("DYNAMICCL_POLICY_DIR");
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  setenv("DYNAMICCL_SAVE_SECONDS", "0", 1);
}

/* A test's simulator and workload (a failure to load them fails the test), in the learning environment. */
static int prepare(const char* profile_name, const char* workload_name, dccl_sim* sim, dccl_workload* workload,
                   uint64_t calls) {
  int loaded = load(profile_name, workload_name, sim, workload, calls) == 0;
  CHECK_MSG(loaded, "cannot load %s / %s", profile_name, workload_name);
  learning_environment();
  return loaded ? 0 : -1;
}

static uint64_t test_calls(void) {
  const char* text = getenv("DYNAMICCL_TEST_CALLS");
  return text != NULL && atoll(text) > 0 ? (uint64_t)atoll(text) : 200000;
}

static void report(const char* what, const dccl_emu_result* r) {
  printf("  %s: %llu calls x ranks in %.1f s; rank mismatches %llu; calls off NCCL's choice %llu; getCollInfo "
         "leader p50 %.0f ns p99 %.0f ns, workers p50 %.0f ns p99 %.0f ns max %.0f us\n",
         what, (unsigned long long)r->calls, r->wall_seconds, (unsigned long long)r->rank_mismatches,
         (unsigned long long)r->default_mismatches, r->tuner_p50_ns[0], r->tuner_p99_ns[0], r->tuner_p50_ns[1],
         r->tuner_p99_ns[1], r->tuner_max_ns[1] / 1000.0);
}

/* Every rank of the communicator as a process running the plugin library, without the oracle. */
static void process_config(dccl_emu_config* config, int ranks, uint64_t calls, uint64_t comm_id) {
  dccl_emu_config_defaults(config);
  config->plugin_path = plugin_path;
  config->processes = 1;
  config->ranks = ranks;
  config->calls = calls;
  config->oracle = 0;
  config->check_default = 1;
  config->comm_id = comm_id;
}

/* The faults of a real job: GPU-queue coupling, host pauses of up to 3 ms (dozens of epochs at
 * emulator speed), and one worker starting late. */
static void inject_faults(dccl_emu_config* config, int late_rank, double late_ms) {
  config->couple_depth = 512; /* 8 epochs of the default 64 calls */
  config->host_delay_probability = 2e-4;
  config->host_delay_max_us = 3000;
  config->late_rank = late_rank;
  config->late_start_ms = late_ms;
}

/* 8 ranks as processes on one node (Unix sockets), learning, with every fault at once. */
static void test_eight_processes_agree(void) {
  static dccl_sim sim;
  static dccl_workload workload;
  uint64_t calls = test_calls();
  if (prepare("nvlink-h100x8", "mixed-long", &sim, &workload, calls) != 0) return;
  /* mixed-long's iteration, repeated for as many calls as asked. */
  char text[512], error[512];
  snprintf(text, sizeof(text),
           "name = mixed-coordination\nallreduce 8K x10 gap=50us\nallgather 4M x20 gap=200us\nreducescatter 4M x20 "
           "gap=200us\nallgather 32M x20 gap=400us\nreducescatter 32M x20 gap=400us\nallreduce 256K x10 gap=100us\n"
           "allreduce 128M x10 gap=2ms\nrepeat %llu\n",
           (unsigned long long)(calls / 110 + 1));
  dccl_workload_free(&workload);
  CHECK(dccl_workload_parse(text, "test", &workload, error, sizeof(error)) == 0);
  setenv("DYNAMICCL_COORD_DROP", "0.002", 1);
  dccl_emu_config config;
  process_config(&config, 8, calls, 0xC00D0001ULL);
  inject_faults(&config, 5, 300);
  config.slow_rank = 0; /* a slow leader */
  config.slow_rank_us = 0.5;
  dccl_emu_result r;
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  report("8 processes, unix sockets, faults", &r);
  CHECK_EQ_INT((int)r.calls, (int)calls);
  CHECK_MSG(r.rank_mismatches == 0, "%llu calls where ranks ran different actions", (unsigned long long)r.rank_mismatches);
  CHECK(r.failed_calls == 0);
  /* Learning really ran and changed what NCCL executes, on every rank alike. */
  CHECK_MSG(r.default_mismatches > calls * 8 / 200, "only %llu executions off NCCL's choice",
            (unsigned long long)r.default_mismatches);
  unsetenv("DYNAMICCL_COORD_DROP");
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
}

static int free_port(void) {
  uint16_t port = 0;
  int fd = dccl_transport_listen_tcp("127.0.0.1", 0, &port);
  close(fd);
  return port;
}

/* Four "nodes" (one rank each) over TCP, the leader found through the registry. */
static void test_tcp_across_nodes(void) {
  static dccl_sim sim;
  static dccl_workload workload;
  if (prepare("sockets-1gpu-4ranks", "mixed-long", &sim, &workload, 60000) != 0) return;
  char address[64];
  snprintf(address, sizeof(address), "127.0.0.1:%d", free_port());
  setenv("DYNAMICCL_COORD", address, 1);
  setenv("DYNAMICCL_COORD_DROP", "0.002", 1);
  dccl_emu_config config;
  process_config(&config, sim.profile.n_ranks, 60000, 0xC00D0002ULL);
  inject_faults(&config, 2, 200);
  dccl_emu_result r;
  char error[512];
  CHECK(sim.profile.n_nodes > 1);
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  report("4 nodes, tcp via registry", &r);
  CHECK(r.rank_mismatches == 0 && r.failed_calls == 0);
  CHECK(r.default_mismatches > 0);
  unsetenv("DYNAMICCL_COORD");
  unsetenv("DYNAMICCL_COORD_DROP");
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
}

/* Multi-node without a coordinator: every rank runs NCCL's choices, with one warning each, and ranks
 * agree. */
static void test_multinode_without_coordinator_runs_nccl(void) {
  static dccl_sim sim;
  static dccl_workload workload;
  if (prepare("sockets-1gpu-4ranks", "mixed", &sim, &workload, 5000) != 0) return;
  dccl_emu_config config;
  process_config(&config, sim.profile.n_ranks, 5000, 0xC00D0003ULL);
  dccl_emu_result r;
  char error[512];
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  CHECK(r.rank_mismatches == 0 && r.default_mismatches == 0);
  CHECK_EQ_INT((int)r.plugin_warnings, sim.profile.n_ranks);
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
}

/* Frozen runs give every rank its own policy file (as node-local policy folders would). */
static void policy_file_of_rank(int rank, void* argument) {
  char* const* paths = argument;
  setenv("DYNAMICCL_POLICY_FILE", paths[rank < 1 ? 0 : 1], 1);
}

static int learn_policy(const char* profile_name, const char* path, uint64_t comm_id) {
  static dccl_sim sim;
  static dccl_workload workload;
  if (prepare(profile_name, "mixed", &sim, &workload, 20000) != 0) return -1;
  setenv("DYNAMICCL_POLICY_FILE", path, 1);
  dccl_emu_config config;
  process_config(&config, 3, 20000, comm_id);
  config.couple_depth = 256; /* as collectives couple real ranks: rank 0 cannot finish alone */
  dccl_emu_result r;
  char error[512];
  int rc = dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0 && r.rank_mismatches == 0 &&
               r.default_mismatches > 0 && access(path, F_OK) == 0
             ? 0
             : -1;
  unsetenv("DYNAMICCL_POLICY_FILE");
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
  return rc;
}

/* Frozen, every rank runs rank 0's saved policy, whatever its own copy holds: here the workers' file
 * holds a policy learned on another cluster, then rank 0 has none at all. Each rank loading its own
 * file would make them disagree, and hang NCCL. Without the profiler half no rank knows its rank:
 * each runs its own copy, with a warning. */
static void test_frozen_ranks_run_rank_0s_policy(void) {
  char folder[] = "/tmp/dccl-frozen-XXXXXX";
  CHECK(mkdtemp(folder) != NULL);
  char nvlink[64], pcie[64], missing[64];
  snprintf(nvlink, sizeof(nvlink), "%s/nvlink.bin", folder);
  snprintf(pcie, sizeof(pcie), "%s/pcie.bin", folder);
  snprintf(missing, sizeof(missing), "%s/missing.bin", folder);
  CHECK(learn_policy("nvlink-h100x8", nvlink, 0xC00D0010ULL) == 0);
  CHECK(learn_policy("pcie-8gpu", pcie, 0xC00D0011ULL) == 0);
  static dccl_sim sim;
  static dccl_workload workload;
  if (prepare("nvlink-h100x8", "mixed", &sim, &workload, 5000) != 0) return;
  setenv("DYNAMICCL_MODE", "frozen", 1);
  char* paths[3][2] = {{nvlink, pcie}, {missing, nvlink}, {nvlink, nvlink}};
  for (int k = 0; k < 3; k++) {
    dccl_emu_config config;
    process_config(&config, 3, 5000, 0xC00D0012ULL + (uint64_t)k);
    config.couple_depth = 256; /* a frozen rank 0 has no agents to slow it: without this it could end before a
                                  worker even asked for its table, which real collectives prevent */
    config.rank_setup = policy_file_of_rank;
    config.rank_setup_argument = paths[k];
    if (k == 2) config.max_profiler = 0; /* no profiler half: no rank known, nobody to follow */
    dccl_emu_result r;
    char error[512];
    CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
    CHECK_MSG(r.rank_mismatches == 0, "rank 0 %s, workers %s: %llu calls where ranks ran different actions",
              paths[k][0], paths[k][1], (unsigned long long)r.rank_mismatches);
    CHECK(r.failed_calls == 0);
    if (k == 0) { /* the policy really ran, on every rank alike */
      CHECK_MSG(r.default_mismatches > 0, "rank 0's policy was not applied");
      CHECK_EQ_INT((int)r.plugin_warnings, 0);
    } else if (k == 1) { /* rank 0 has none: NCCL's choices everywhere, said once */
      CHECK_EQ_INT((int)r.default_mismatches, 0);
      CHECK_EQ_INT((int)r.plugin_warnings, 1);
    } else { /* each rank runs its own copy, here the same file, with a warning each */
      CHECK(r.default_mismatches > 0);
      CHECK_EQ_INT((int)r.plugin_warnings, 3);
    }
  }
  unsetenv("DYNAMICCL_POLICY_FILE");
  unlink(nvlink);
  unlink(pcie);
  rmdir(folder);
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
}

/* A fixed table and rule pins are rank 0's too: each worker's own files are not read. Rank 0's table
 * and pins differ from the workers' (which have no pins at all); ranks reading their own files
 * (DYNAMICCL_COORD=off, as NCCL's example tuner does) disagree, and NCCL would hang. */
typedef struct fixed_files {
  char table[2][96], rules[96];
} fixed_files;

static void fixed_files_of_rank(int rank, void* argument) {
  const fixed_files* files = argument;
  setenv("DYNAMICCL_TABLE_FILE", files->table[rank < 1 ? 0 : 1], 1);
  if (rank == 0) setenv("DYNAMICCL_RULES_FILE", files->rules, 1);
  else unsetenv("DYNAMICCL_RULES_FILE");
}

static void write_text(const char* path, const char* text) {
  FILE* f = fopen(path, "w");
  if (f == NULL) return;
  fputs(text, f);
  fclose(f);
}

static void test_fixed_tables_and_rules_are_rank_0s(void) {
  char folder[] = "/tmp/dccl-fixed-XXXXXX";
  CHECK(mkdtemp(folder) != NULL);
  fixed_files files;
  snprintf(files.table[0], sizeof(files.table[0]), "%s/rank0.table", folder);
  snprintf(files.table[1], sizeof(files.table[1]), "%s/workers.table", folder);
  snprintf(files.rules, sizeof(files.rules), "%s/rank0.rules", folder);
  write_text(files.table[0], "allreduce,0,-1,ring/ll\nallgather,0,-1,ring/simple\n");
  write_text(files.table[1], "allreduce,0,-1,ring/simple\nallgather,0,-1,ring/simple\n");
  write_text(files.rules, "allgather,0,-1,ring,ll,-1,-1,-1\n");
  static dccl_sim sim;
  static dccl_workload workload;
  if (prepare("nvlink-h100x8", "mixed", &sim, &workload, 5000) != 0) return;
  setenv("DYNAMICCL_MODE", "fixed", 1);
  unsetenv("DYNAMICCL_PROFILE");
  for (int coordinated = 1; coordinated >= 0; coordinated--) {
    if (!coordinated) setenv("DYNAMICCL_COORD", "off", 1);
    dccl_emu_config config;
    process_config(&config, 3, 5000, 0xC00D0020ULL + (uint64_t)coordinated);
    config.couple_depth = 256; /* rank 0 has no agents to slow it (see test_frozen_ranks_run_rank_0s_policy) */
    config.rank_setup = fixed_files_of_rank;
    config.rank_setup_argument = &files;
    dccl_emu_result r;
    char error[512];
    CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
    CHECK(r.failed_calls == 0);
    if (coordinated) {
      CHECK_MSG(r.rank_mismatches == 0, "%llu calls where ranks ran different actions",
                (unsigned long long)r.rank_mismatches);
      CHECK_MSG(r.default_mismatches > 0, "rank 0's table and pins were not applied");
      CHECK_EQ_INT((int)r.plugin_warnings, 0);
    } else {
      CHECK_MSG(r.rank_mismatches > 0, "ranks reading their own, different files agreed");
    }
  }
  unsetenv("DYNAMICCL_COORD");
  unsetenv("DYNAMICCL_TABLE_FILE");
  unsetenv("DYNAMICCL_RULES_FILE");
  unlink(files.table[0]);
  unlink(files.table[1]);
  unlink(files.rules);
  rmdir(folder);
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
}

/* Ranks set up differently: rank 0 runs a fixed table, the workers DYNAMICCL_MODE=default. They cannot
 * know that rank 0 leads, run NCCL's choices and disagree with it, which would hang NCCL; rank 0 names
 * them after DYNAMICCL_COORD_TIMEOUT_S (here 0.2 s; the leader's end waits up to 2 s for them), in one
 * warning (not ranks 3-7 of the 8-rank communicator, which the emulator does not run). */
static void workers_in_default_mode(int rank, void* argument) {
  setenv("DYNAMICCL_TABLE_FILE", (const char*)argument, 1);
  setenv("DYNAMICCL_MODE", rank == 0 ? "fixed" : "default", 1);
}

static void test_rank_0_names_ranks_that_do_not_follow(void) {
  char table[] = "/tmp/dccl-absent-XXXXXX";
  int made = test_temp_file(table) == 0;
  CHECK(made);
  if (!made) return;
  write_text(table, "allreduce,0,-1,ring/ll\nallgather,0,-1,ring/simple\n");
  static dccl_sim sim;
  static dccl_workload workload;
  if (prepare("nvlink-h100x8", "mixed", &sim, &workload, 3000) != 0) return;
  unsetenv("DYNAMICCL_PROFILE");
  setenv("DYNAMICCL_COORD_TIMEOUT_S", "0.2", 1);
  dccl_emu_config config;
  process_config(&config, 3, 3000, 0xC00D0030ULL);
  config.rank_setup = workers_in_default_mode;
  config.rank_setup_argument = table;
  dccl_emu_result r;
  char error[512];
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  CHECK_MSG(r.rank_mismatches > 0, "ranks in different modes agreed");
  CHECK_EQ_INT((int)r.plugin_warnings, 1); /* rank 0's, naming ranks 1 and 2 */
  unsetenv("DYNAMICCL_COORD_TIMEOUT_S");
  unsetenv("DYNAMICCL_TABLE_FILE");
  unlink(table);
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
}

/* The leader starts 1.5 s late: the workers wait for its first table, say so after
 * DYNAMICCL_COORD_TIMEOUT_S (an error naming the leader, again every period), then run normally. */
static void test_late_leader_is_waited_for(void) {
  static dccl_sim sim;
  static dccl_workload workload;
  if (prepare("nvlink-h100x8", "mixed", &sim, &workload, 3000) != 0) return;
  setenv("DYNAMICCL_COORD_TIMEOUT_S", "0.5", 1);
  dccl_emu_config config;
  process_config(&config, 3, 3000, 0xC00D0004ULL);
  config.late_rank = 0;
  config.late_start_ms = 1500;
  dccl_emu_result r;
  char error[512];
  CHECK(dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) == 0);
  CHECK(r.rank_mismatches == 0 && r.failed_calls == 0);
  /* Two workers, each waiting ~1.5 s or more: one report per 0.5 s of waiting, each. */
  double waited_s = r.tuner_max_ns[1] / 1e9;
  CHECK(waited_s > 1.0); /* a worker's first call waited for the leader */
  CHECK_MSG(r.plugin_warnings >= 4 && (double)r.plugin_warnings <= 2 * (waited_s / 0.5 + 1),
            "%llu warnings for %.1f s of waiting", (unsigned long long)r.plugin_warnings, waited_s);
  unsetenv("DYNAMICCL_COORD_TIMEOUT_S");
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
}

/* ---- two communicators per process, different leaders (say tensor- and data-parallel groups) ---- */
#define PROCESSES 3
#define EPOCHS 4000
#define EPOCH_CALLS 4

typedef struct shared_hashes {
  uint64_t hash[2][PROCESSES][EPOCHS]; /* [communicator][rank][epoch] */
  uint64_t changes[2];
  int finished; /* processes through all their calls (__atomic builtins: shared between processes) */
} shared_hashes;

typedef struct comm_run {
  dccl_table_store store;
  dccl_coord_session* session;
  uint64_t* hashes;
  int leader;
  uint64_t seed;
  uint64_t changes;
} comm_run;

static uint64_t table_hash(const dccl_table* t) {
  uint64_t h = 0;
  for (int c = 0; c < DCCL_TABLE_CELLS; c += 3) h = dccl_mix64(h ^ dccl_table_get(t, c) ^ atomic_load(&t->explore_mask[c]));
  return h;
}

static void* run_comm(void* argument) {
  comm_run* c = argument;
  dccl_rng rng;
  dccl_rng_seed(&rng, c->seed);
  dccl_table* pending = NULL;
  for (uint64_t call = 0; call < (uint64_t)EPOCHS * EPOCH_CALLS; call++) {
    if (c->leader && (call & 15) == 0) { /* the leader's learner, inline: a change now and then */
      if (pending == NULL && dccl_rng_below(&rng, 4) == 0 && (pending = dccl_table_store_begin(&c->store)) != NULL) {
        dccl_table_copy(pending, dccl_table_store_latest(&c->store));
        int cell = (int)dccl_rng_below(&rng, DCCL_TABLE_CELLS);
        dccl_table_set(pending, cell, dccl_action_make(1, (int)dccl_rng_below(&rng, 3), 1 + (int)dccl_rng_below(&rng, 16), 0));
      }
      if (pending != NULL && dccl_coord_commit(c->session, &c->store, pending) == 0) {
        pending = NULL;
        c->changes++;
      }
    }
    const dccl_table* t;
    while ((t = dccl_table_store_for_call(&c->store, call)) == NULL) {
      struct timespec pause = {0, 10000};
      nanosleep(&pause, NULL);
    }
    if ((call % EPOCH_CALLS) == 0) c->hashes[call / EPOCH_CALLS] = table_hash(t);
    if (dccl_rng_below(&rng, 3000) == 0) {
      struct timespec pause = {0, (long)dccl_rng_below(&rng, 2000000)};
      nanosleep(&pause, NULL);
    }
  }
  return NULL;
}

static void process_main(int process, shared_hashes* shared) {
  static comm_run runs[2];
  dccl_logger logger = {0};
  pthread_t threads[2];
  /* Communicator 0: led by process 0; communicator 1: led by process 2 (ranks in reverse order). */
  for (int k = 0; k < 2; k++) {
    int rank = k == 0 ? process : PROCESSES - 1 - process;
    comm_run* c = &runs[k];
    dccl_table_store_init(&c->store, EPOCH_CALLS);
    dccl_coord_options o;
    memset(&o, 0, sizeof(o));
    o.comm_id = 0xAB0000ULL + (uint64_t)k;
    o.rank = rank;
    o.n_ranks = PROCESSES;
    o.epoch_calls = EPOCH_CALLS;
    o.store = &c->store;
    o.logger = &logger;
    char error[256];
    c->leader = rank == 0;
    c->seed = 77 + (uint64_t)k * 10 + (uint64_t)process;
    c->hashes = shared->hash[k][rank];
    c->session = c->leader ? dccl_coord_lead(&o, error, sizeof(error)) : dccl_coord_follow(&o, error, sizeof(error));
    if (c->session == NULL) {
      fprintf(stderr, "process %d: %s\n", process, error);
      _exit(2);
    }
  }
  for (int k = 0; k < 2; k++) pthread_create(&threads[k], NULL, run_comm, &runs[k]);
  for (int k = 0; k < 2; k++) pthread_join(threads[k], NULL);
  /* Leave once every process is through its calls, as NCCL's ranks are: none passes its last collective
   * before the others have launched it. Unjoined, a leader could finish and leave with a worker 160
   * calls behind, and a leaving leader waits at most 2 s for its workers (coord/service.c's LEAVE_NS):
   * under ThreadSanitizer a worker once waited for its last epochs for ever (process 1 at call 15,836
   * of 16,000, its leader process gone). */
  __atomic_add_fetch(&shared->finished, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&shared->finished, __ATOMIC_SEQ_CST) < PROCESSES) {
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  for (int k = 0; k < 2; k++) {
    if (runs[k].leader) shared->changes[k] = runs[k].changes;
    dccl_coord_leave(runs[k].session, NULL);
  }
  _exit(0);
}

static void test_two_communicators_per_process(void) {
  shared_hashes* shared = mmap(NULL, sizeof(shared_hashes), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(shared != MAP_FAILED);
  memset(shared, 0, sizeof(*shared));
  pid_t pids[PROCESSES];
  for (int p = 0; p < PROCESSES; p++) {
    pids[p] = fork();
    if (pids[p] == 0) process_main(p, shared);
  }
  int failed = 0;
  for (int p = 0; p < PROCESSES; p++) {
    int status;
    waitpid(pids[p], &status, 0);
    failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  CHECK_EQ_INT(failed, 0);
  int mismatches = 0;
  for (int k = 0; k < 2; k++)
    for (int rank = 1; rank < PROCESSES; rank++)
      for (int e = 0; e < EPOCHS; e++) mismatches += shared->hash[k][rank][e] != shared->hash[k][0][e];
  CHECK_EQ_INT(mismatches, 0);
  CHECK(shared->changes[0] > 50 && shared->changes[1] > 50);
  munmap(shared, sizeof(*shared));
}

int main(int argc, char** argv) {
  (void)argc;
  char self[1024];
  snprintf(self, sizeof(self), "%s", argv[0]);
  snprintf(plugin_path, sizeof(plugin_path), "%s/../libnccl-tuner-dynamiccl.so", dirname(self));
  RUN(test_two_communicators_per_process);
  RUN(test_multinode_without_coordinator_runs_nccl);
  RUN(test_frozen_ranks_run_rank_0s_policy);
  RUN(test_fixed_tables_and_rules_are_rank_0s);
  RUN(test_rank_0_names_ranks_that_do_not_follow);
  RUN(test_late_leader_is_waited_for);
  RUN(test_tcp_across_nodes);
  RUN(test_eight_processes_agree);
  TEST_SUMMARY();
}
