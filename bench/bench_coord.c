/* bench/bench_coord.c: what coordination costs. 8 ranks as processes (one node, Unix sockets) run the
 * plugin library under the NCCL emulator, paced like a job issuing one collective every `pace` us;
 * side by side in one run: the `default` policy (the plugin's baseline overhead), then coordinated
 * learning for several epoch lengths. Reports getCollInfo wall time per call on the leader and on
 * the workers (median and p99, waits for the leader's tables included), the calls where a worker had
 * to wait, and the coordination traffic per epoch (from the plugin's closing log lines).
 * Usage: bench_coord [calls per rank (100000)] [pace us (20)] */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../emu/emulator.h"

static char plugin_path[1200];

typedef struct traffic {
  double leader_bytes, worker_bytes, epochs, changes, waits, wait_ms;
  int workers;
} traffic;

/* Sums the plugin's "coordination: comm ... rank R: ..." closing lines. */
static void read_traffic(const char* path, traffic* t) {
  memset(t, 0, sizeof(*t));
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  char line[2048];
  while (fgets(line, sizeof(line), f) != NULL) {
    const char* at = strstr(line, "coordination: comm ");
    if (at == NULL) continue;
    int rank;
    unsigned long long epochs, changes, messages_sent, bytes_sent, messages_received, bytes_received, rejected,
      connections, waits;
    double wait_ms;
    if (sscanf(at,
               "coordination: comm %*x rank %d: %llu epochs, %llu table changes, %llu messages (%llu bytes) sent, "
               "%llu (%llu bytes) received, %llu rejected, %llu connections; waited %llu times, %lf ms",
               &rank, &epochs, &changes, &messages_sent, &bytes_sent, &messages_received, &bytes_received, &rejected,
               &connections, &waits, &wait_ms) != 11)
      continue;
    if (rank == 0) {
      t->leader_bytes = (double)bytes_sent + (double)bytes_received;
      t->epochs = (double)epochs;
      t->changes = (double)changes;
    } else {
      t->worker_bytes += (double)bytes_sent + (double)bytes_received;
      t->waits += (double)waits;
      t->wait_ms += wait_ms;
      t->workers++;
    }
  }
  fclose(f);
}

static int run(const char* label, const char* mode, int epoch_calls, uint64_t calls, double pace_us, const dccl_sim* sim,
               const dccl_workload* workload) {
  setenv("DYNAMICCL_MODE", mode, 1);
  char text[32];
  snprintf(text, sizeof(text), "%d", epoch_calls);
  setenv("DYNAMICCL_EPOCH_CALLS", text, 1);
  char log_path[] = "/tmp/dccl-bench-coord-XXXXXX";
  int log_fd = mkstemp(log_path);
  if (log_fd < 0) return -1;
  fflush(stderr);
  int saved = dup(2);
  dup2(log_fd, 2); /* the ranks' log lines, for the traffic figures */
  dccl_emu_config config;
  dccl_emu_config_defaults(&config);
  config.plugin_path = plugin_path;
  config.processes = 1;
  config.ranks = 8;
  config.calls = calls;
  config.oracle = 0;
  config.verbose = 1;
  config.pace_us = pace_us;
  config.couple_depth = 1024;
  dccl_emu_result r;
  char error[512];
  int rc = dccl_emu_run(&config, sim, workload, &r, error, sizeof(error));
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(log_fd);
  if (rc != 0) {
    fprintf(stderr, "%s: %s\n", label, error);
    unlink(log_path);
    return -1;
  }
  traffic t;
  read_traffic(log_path, &t);
  unlink(log_path);
  printf("  %-22s leader p50 %6.0f ns p99 %8.0f ns | workers p50 %6.0f ns p99 %8.0f ns | mismatches %llu",
         label, r.tuner_p50_ns[0], r.tuner_p99_ns[0], r.tuner_p50_ns[1], r.tuner_p99_ns[1],
         (unsigned long long)r.rank_mismatches);
  if (t.epochs > 0 && t.workers > 0)
    printf(" | %.0f epochs, %.0f changes, %.0f B/epoch at the leader, %.0f B/epoch per worker, waits on %.2f%% of "
           "worker calls (%.1f us each)",
           t.epochs, t.changes, t.leader_bytes / t.epochs, t.worker_bytes / t.workers / t.epochs,
           100.0 * t.waits / t.workers / (double)calls, t.waits > 0 ? 1000.0 * t.wait_ms / t.waits : 0.0);
  printf("\n");
  return 0;
}

int main(int argc, char** argv) {
  uint64_t calls = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
  double pace_us = argc > 2 ? atof(argv[2]) : 20;
  char self[1024];
  snprintf(self, sizeof(self), "%s", argv[0]);
  snprintf(plugin_path, sizeof(plugin_path), "%s/../libnccl-tuner-dynamiccl.so", dirname(self));
  char source[1024], path[1200], error[512];
  snprintf(source, sizeof(source), "%s", argv[0]);
  snprintf(path, sizeof(path), "%s/../../scenarios/profiles/nvlink-h100x8.profile", dirname(source));
  dccl_profile profile;
  static dccl_sim sim;
  static dccl_workload workload;
  if (dccl_profile_load(path, &profile, error, sizeof(error)) != 0) {
    fprintf(stderr, "%s\n", error);
    return 1;
  }
  snprintf(source, sizeof(source), "%s", argv[0]);
  snprintf(path, sizeof(path), "%s/../../scenarios/workloads/mixed-long.workload", dirname(source));
  if (dccl_workload_find(path, &workload, error, sizeof(error)) != 0 ||
      dccl_sim_init(&sim, &profile, NULL, 5, calls, error, sizeof(error)) != 0) {
    fprintf(stderr, "%s\n", error);
    return 1;
  }
  setenv("DYNAMICCL_PROFILE", "on", 1);
  setenv("DYNAMICCL_SAVE_SECONDS", "0", 1);
  unsetenv("DYNAMICCL_COORD");
  printf("coordination cost: 8 ranks as processes (%s), %llu calls each, one call per %.0f us, getCollInfo wall time "
         "per call as the emulated NCCL sees it\n",
         profile.name, (unsigned long long)calls, pace_us);
  int failed = run("default policy", "default", 64, calls, pace_us, &sim, &workload) != 0;
  int epochs[] = {16, 64, 256, 1024};
  for (size_t i = 0; i < sizeof(epochs) / sizeof(epochs[0]); i++) {
    char label[64];
    snprintf(label, sizeof(label), "learn, epoch %d", epochs[i]);
    failed |= run(label, "learn", epochs[i], calls, pace_us, &sim, &workload) != 0;
  }
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
  return failed;
}
