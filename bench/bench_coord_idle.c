/* bench/bench_coord_idle.c: what the coordination service thread costs a leader's process between
 * tables. A leader of N worker ranks (raw Unix-socket connections that join and then say nothing, as
 * workers do between tables) is measured side by side frozen (its workers released: the thread waits
 * on its connections) and learning (its hot path idle: the thread polls for 20 ms after the store last
 * moved, then waits for its bell). Reports the process's CPU time per wall second (user + system, % of one core), median of
 * --repeat runs, and the service's rounds per second.
 * Usage: bench_coord_idle [seconds per run (2)] [repeat (3)] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../coord/coordinator.h"
#include "../coord/transport.h"
#include "../coord/wire.h"
#include "../core/clock.h"
#include "../core/sorting.h"

static double cpu_seconds(void) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return (double)usage.ru_utime.tv_sec + (double)usage.ru_stime.tv_sec +
         1e-6 * (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

/* A worker stand-in: connects to the leader of `comm_id` on this node, says hello and joins; -1 on failure. */
static int join_as(uint64_t comm_id, int rank, int n_ranks) {
  char name[64];
  dccl_transport_local_name(dccl_wire_token(comm_id, 0), name, sizeof(name));
  int fd = -1;
  for (int tries = 0; tries < 5000 && fd < 0; tries++) {
    fd = dccl_transport_connect_local(name);
    if (fd >= 0 && dccl_transport_connected(fd) != 1) {
      close(fd);
      fd = -1;
    }
    if (fd < 0) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  if (fd < 0) return -1;
  uint8_t buffer[256];
  dccl_wire_writer w;
  dccl_wire_writer_init(&w, buffer, sizeof(buffer));
  size_t at = dccl_wire_begin(&w, DCCL_MSG_HELLO, 0, 0, 0);
  dccl_wire_hello hello = {0xB0000000ULL + (uint64_t)rank};
  dccl_wire_put_hello(&w, &hello);
  dccl_wire_end(&w, at);
  at = dccl_wire_begin(&w, DCCL_MSG_JOIN, (uint32_t)rank, comm_id, dccl_wire_token(comm_id, 0));
  dccl_wire_join join = {(uint32_t)rank, (uint32_t)n_ranks, 64, 0};
  dccl_wire_put_join(&w, &join);
  dccl_wire_end(&w, at);
  size_t sent = 0;
  for (int tries = 0; tries < 5000 && sent < w.length; tries++) {
    ssize_t n = write(fd, buffer + sent, w.length - sent);
    if (n > 0) sent += (size_t)n;
    else nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  if (sent < w.length) {
    close(fd);
    return -1;
  }
  return fd;
}

/* One run: CPU % of a core and service rounds per second while `workers` joined workers stay silent. */
static int measure(int workers, int frozen, double seconds, uint64_t comm_id, double* cpu_percent, double* rounds_per_s) {
  static dccl_table_store store;
  dccl_table_store_init(&store, 64);
  dccl_logger quiet = {0};
  dccl_coord_options o;
  memset(&o, 0, sizeof(o));
  o.comm_id = comm_id;
  o.n_ranks = workers + 1;
  o.epoch_calls = 64;
  o.logger = &quiet;
  o.store = &store;
  o.frozen = frozen;
  char error[256];
  dccl_coord_session* leader = dccl_coord_lead(&o, error, sizeof(error));
  if (leader == NULL) {
    fprintf(stderr, "cannot lead: %s\n", error);
    return -1;
  }
  int* fds = malloc((size_t)workers * sizeof(int));
  int joined = 0;
  for (int rank = 1; rank <= workers && fds != NULL; rank++)
    if ((fds[joined] = join_as(comm_id, rank, workers + 1)) >= 0) joined++;
  nanosleep(&(struct timespec){1, 0}, NULL); /* joined and served */
  double cpu_before = cpu_seconds(), wall_before = dccl_monotonic_seconds();
  uint64_t rounds_before = dccl_coord_service_rounds();
  nanosleep(&(struct timespec){(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)}, NULL);
  double wall = dccl_monotonic_seconds() - wall_before;
  *cpu_percent = 100.0 * (cpu_seconds() - cpu_before) / wall;
  *rounds_per_s = (double)(dccl_coord_service_rounds() - rounds_before) / wall;
  for (int i = 0; i < joined; i++) close(fds[i]);
  free(fds);
  dccl_coord_leave(leader, NULL);
  if (joined < workers) {
    fprintf(stderr, "only %d of %d workers joined\n", joined, workers);
    return -1;
  }
  return 0;
}

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 2.0;
  int repeat = argc > 2 ? atoi(argv[2]) : 3;
  if (seconds <= 0 || repeat < 1 || repeat > 15) {
    fprintf(stderr, "usage: bench_coord_idle [seconds per run > 0] [repeat 1..15]\n");
    return 2;
  }
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 2200 && limit.rlim_max >= 2200) {
    limit.rlim_cur = 2200;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  const int sizes[] = {1, 100, 300, 1000};
  printf("coordination service between tables: %% of one core (user + system), median of %d runs of %.1f s\n", repeat,
         seconds);
  printf("%8s | %10s %10s | %10s %10s\n", "workers", "frozen %", "rounds/s", "learning %", "rounds/s");
  uint64_t comm_id = 0xB1D1E000ULL;
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
    double cpu[2][15], rounds[2][15];
    for (int r = 0; r < repeat; r++)
      for (int frozen = 1; frozen >= 0; frozen--)
        if (measure(sizes[k], frozen, seconds, comm_id++, &cpu[frozen][r], &rounds[frozen][r]) != 0) return 1;
    for (int frozen = 0; frozen < 2; frozen++) {
      dccl_sort_doubles(cpu[frozen], (size_t)repeat);
      dccl_sort_doubles(rounds[frozen], (size_t)repeat);
    }
    printf("%8d | %10.1f %10.0f | %10.1f %10.0f\n", sizes[k], cpu[1][repeat / 2], rounds[1][repeat / 2],
           cpu[0][repeat / 2], rounds[0][repeat / 2]);
  }
  return 0;
}
