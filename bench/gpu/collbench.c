/* bench/gpu/collbench.c: real NCCL on a real GPU. Starts N ranks as processes on one GPU, each with
 * its own NCCL_HOSTID (so NCCL treats them as separate nodes and talks over its socket transport on
 * loopback), runs AllReduce, AllGather and ReduceScatter over a size sweep, verifies every result
 * against the expected values (a wrong configuration is caught, not timed) and reports time and bus
 * bandwidth per size with nccl-tests' formulas, as CSV. With --one-host (NCCL 2.30 or later) the ranks
 * are one host instead, sharing GPU 0 through NCCL_MULTI_RANK_GPU_ENABLE=1: NCCL's intra-node
 * transports, a second topology.
 *
 * Modes:
 *   none     NCCL alone (no plugin)
 *   default  the DynamICCL plugin with DYNAMICCL_MODE=default (its overhead)
 *   learn    the plugin learning online (--rounds passes over the sizes; the last one is reported as
 *            mode `learn`, the earlier ones as `learn-round` with action `round=K@T`, T = when the pass
 *            ended, Unix time in seconds: the learning curve)
 *   frozen   the plugin exploiting the policy saved by an earlier learn run (DYNAMICCL_POLICY_DIR)
 *   fixed    the plugin running --table FILE
 *   sweep    every action of --actions through a fixed table, one set of processes per action: the
 *            real best per size (the testbed's oracle). Rows whose action NCCL did not run (the trace
 *            shows another algorithm or protocol) are marked applied=0.
 *   rotate   --entries (none, default, frozen and actions) --repeat times, each in its own set of
 *            processes, in a new order each time: timings of one set of processes drift by tens of
 *            percent from the next on this testbed, so comparisons take medians over repetitions.
 *   pairs    --entries --repeat times like rotate, but each entry compares two actions inside its set of
 *            processes, in alternating blocks of four calls, through a fixed table's A||B lines (a cell's
 *            calls 0-3 of every eight run A, calls 4-7 B): an action X (X||nccl: X against NCCL's own
 *            choice), `nccl` (nccl||nccl: the method's own noise) or @FILE (a table of A||B lines, e.g.
 *            the learned policy's choices against NCCL's). The first call of each block is not timed:
 *            over sockets some actions (tree) leave work behind their kernel that delays the next call,
 *            so a call right after a switch pays for the other action. Two rows per size: action
 *            <entry> (A's median call) and nccl@<entry> (B's), the same repetition; applied says whether
 *            the trace shows A's algorithm and protocol on every call of A's blocks (action entries only).
 * Other environment (NCCL_*, DYNAMICCL_*) passes through to the ranks.
 *
 * CSV columns: mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied,repetition
 * time_us is the median call of the timed ones (back to back, a CUDA event between calls), worst rank.
 * Build: see bench/gpu/Makefile.inc (gcc, CUDA runtime and NCCL; no nvcc needed). */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <nccl.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../core/decision_table.h"

#define MAX_SIZES 32
#define MAX_RANKS 8
#define MAX_ROUNDS 512
#define MAX_ITERATIONS 64

/* pairs: which action a cell's call runs in the plugin's A||B table cells (DCCL_TABLE_BLOCKS_MASK:
 * calls 0-3 of every eight run A, half 0; calls 4-7 run B, half 1). The first call of a block follows
 * the other half's last call, whose leftover work it may pay for: it is left out of the timings. */
static int pair_half(unsigned cell_call) { return (DCCL_TABLE_BLOCKS_MASK >> (cell_call & 7u)) & 1u; }
static int pair_first_of_block(unsigned cell_call) { return pair_half(cell_call) != pair_half(cell_call - 1u); }
#define MAX_ENTRIES 64
#define NUM_COLLS 3
static const char* coll_names[NUM_COLLS] = {"allreduce", "allgather", "reducescatter"};

typedef struct shared_block {
  ncclUniqueId id;
  volatile int id_ready;
  volatile int failed;
  char error[256];
  double time_us[MAX_ROUNDS][MAX_RANKS][NUM_COLLS][MAX_SIZES]; /* per pass (one unless learning) */
  int verified[MAX_RANKS][NUM_COLLS][MAX_SIZES];                /* every pass right */
  volatile int round_decision[MAX_ROUNDS]; /* learn: rank 0's word after each pass: 1 go on, 2 final pass next */
  volatile int learning_rounds;           /* passes before the reported one (0 unless learning) */
  double round_end_s[MAX_ROUNDS];         /* learn: when rank 0 ended each pass (Unix time, seconds) */
} shared_block;

typedef struct options {
  int ranks, warmup, iterations, rounds;
  double seconds; /* learn: stop learning passes once this much time has passed (0: no limit) */
  double grace_s; /* once a rank has failed, how long the others may still run before they are killed */
  size_t sizes[MAX_SIZES];
  int n_sizes;
  int colls[NUM_COLLS], n_colls;
  const char* mode;
  const char* plugin;
  const char* table;
  const char* actions;
  const char* out;
  const char* trace_dir;
  int event_check; /* also time single calls with CUDA events (profiler check) */
  int one_host;    /* the ranks as one host sharing GPU 0 (NCCL_MULTI_RANK_GPU_ENABLE), not separate hosts */
  const char* entries; /* rotate: what to run, each in its own set of processes */
  int repeat;          /* sweep, rotate, pairs: passes over the entries, each (after the first) in a new order */
  int pairs;           /* pairs: split each size's calls by the parity of their number in the cell */
} options;

static void usage(void) {
  fprintf(stderr,
          "usage: collbench --mode none|default|learn|frozen|fixed|sweep|rotate|pairs [options]\n"
          "  --ranks N           ranks as processes on GPU 0 (default 2, at most 8)\n"
          "  --min SIZE --max SIZE --factor F   bytes (default 1K .. 256M, x4)\n"
          "  --collectives LIST  allreduce,allgather,reducescatter (default all)\n"
          "  --warmup N --iterations N   per size (default 3 and 10; fewer above 16 MiB; warm-up at least 1:\n"
          "                      the last warm-up call's result is the first one checked)\n"
          "  --rounds N          learn: passes over the sizes before the reported one (default 20)\n"
          "  --seconds S         learn: fewer passes if S seconds have passed (the reported one still runs)\n"
          "  --grace S           once a rank has failed, the others are killed after S seconds (default 10): a rank\n"
          "                      blocked in a collective with a dead peer would hold the run for ever\n"
          "  --plugin PATH       the DynamICCL library (default: build/libnccl-tuner-dynamiccl.so)\n"
          "  --table FILE        fixed: the decision table\n"
          "  --actions LIST      sweep: comma-separated actions, e.g. ring/simple/ch=4 (default: a grid)\n"
          "  --entries LIST      rotate: none, default, frozen and actions, comma-separated (default: none,\n"
          "                      default and the sweep's actions)\n"
          "  --repeat R          sweep, rotate, pairs: R passes over the entries, each after the first in a new order\n"
          "  (pairs: --entries of actions, nccl and @TABLE files of A|B lines; --iterations made odd, at least 3)\n"
          "  --trace-dir DIR     keep the plugin's per-rank traces there\n"
          "  --event-check       profiler check: time every call with CUDA events (trace it too)\n"
          "  --one-host          the ranks as one host sharing GPU 0 (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL 2.30\n"
          "                      or later; exit status 3 on an older NCCL), not as separate hosts\n"
          "  --nccl-version      print the NCCL version code (e.g. 23007) and exit\n"
          "  --out FILE          CSV (default stdout)\n");
}

static size_t parse_size(const char* text) {
  char* end;
  double v = strtod(text, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  else if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

#define CHECK_CUDA(call, block)                                                              \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      snprintf((block)->error, sizeof((block)->error), "%s: %s", #call, cudaGetErrorString(e_)); \
      (block)->failed = 1;                                                                   \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)
#define CHECK_NCCL(call, block)                                                              \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) {                                                                 \
      snprintf((block)->error, sizeof((block)->error), "%s: %s", #call, ncclGetErrorString(r_)); \
      (block)->failed = 1;                                                                   \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

static double monotonic_s(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

static float input_value(int rank, size_t global_index) { return (float)((rank + 1) * (int)(global_index % 13 + 1)); }

/* Fills the send buffer of one collective and size. Elements are small integers: sums are exact. */
static void fill_input(float* host, int coll, size_t bytes, int rank, int ranks) {
  size_t total = bytes / sizeof(float), chunk = total / (size_t)ranks;
  if (coll == 1) /* allgather: this rank's block */
    for (size_t j = 0; j < chunk; j++) host[j] = input_value(rank, (size_t)rank * chunk + j);
  else
    for (size_t i = 0; i < total; i++) host[i] = input_value(rank, i);
}

/* Checks the receive buffer; returns 1 when every element is as expected. */
static int check_output(const float* host, int coll, size_t bytes, int rank, int ranks) {
  size_t total = bytes / sizeof(float), chunk = total / (size_t)ranks;
  float sum_of_ranks = (float)(ranks * (ranks + 1) / 2);
  if (coll == 0) {
    for (size_t i = 0; i < total; i++)
      if (host[i] != (float)(i % 13 + 1) * sum_of_ranks) return 0;
  } else if (coll == 1) {
    for (int r = 0; r < ranks; r++)
      for (size_t j = 0; j < chunk; j++)
        if (host[(size_t)r * chunk + j] != input_value(r, (size_t)r * chunk + j)) return 0;
  } else {
    for (size_t j = 0; j < chunk; j++)
      if (host[j] != (float)(((size_t)rank * chunk + j) % 13 + 1) * sum_of_ranks) return 0;
  }
  return 1;
}

static int compare_floats(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return (x > y) - (x < y);
}

/* The median of n per-call times (sorts them). */
static float median_ms(float* values, int n) {
  qsort(values, (size_t)n, sizeof(float), compare_floats);
  return n % 2 ? values[n / 2] : 0.5f * (values[n / 2 - 1] + values[n / 2]);
}

static ncclResult_t launch(int coll, const float* send, float* recv, size_t bytes, int ranks, ncclComm_t comm,
                           cudaStream_t stream) {
  size_t total = bytes / sizeof(float), chunk = total / (size_t)ranks;
  if (coll == 0) return ncclAllReduce(send, recv, total, ncclFloat, ncclSum, comm, stream);
  if (coll == 1) return ncclAllGather(send, recv, chunk, ncclFloat, comm, stream);
  return ncclReduceScatter(send, recv, chunk, ncclFloat, ncclSum, comm, stream);
}

static int run_rank(const options* o, int rank, shared_block* block) {
  if (!o->one_host) { /* each rank its own "node" */
    char hostid[64];
    snprintf(hostid, sizeof(hostid), "collbench-host-%d", rank);
    setenv("NCCL_HOSTID", hostid, 1);
  }
  CHECK_CUDA(cudaSetDevice(0), block);
  if (rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&block->id), block);
    __sync_synchronize();
    block->id_ready = 1;
  } else {
    for (int waited = 0; !block->id_ready; waited++) {
      if (block->failed || waited > 600000) return 1;
      usleep(100);
    }
  }
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, o->ranks, block->id, rank), block);
  size_t largest = o->sizes[o->n_sizes - 1];
  float *send, *recv, *host;
  CHECK_CUDA(cudaMalloc((void**)&send, largest), block);
  CHECK_CUDA(cudaMalloc((void**)&recv, largest), block);
  host = malloc(largest);
  if (host == NULL) {
    snprintf(block->error, sizeof(block->error), "out of host memory");
    block->failed = 1;
    return 1;
  }
  cudaStream_t stream;
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaStreamCreate(&stream), block);
  CHECK_CUDA(cudaEventCreate(&start), block);
  CHECK_CUDA(cudaEventCreate(&stop), block);
  cudaEvent_t marks[MAX_ITERATIONS + 1];
  for (int i = 0; i <= MAX_ITERATIONS; i++) CHECK_CUDA(cudaEventCreate(&marks[i]), block);
  int learning = strcmp(o->mode, "learn") == 0;
  int cell_calls[NUM_COLLS][64] = {{0}}; /* calls per (collective, size bin) so far: the plugin's cell counters */
  double began = monotonic_s();
  for (int c = 0; c < NUM_COLLS; c++)
    for (int s = 0; s < MAX_SIZES; s++) block->verified[rank][c][s] = 1;
  int final_round = learning ? -1 : 0; /* learn: known once rank 0 says so */
  for (int round = 0; final_round < 0 || round <= final_round; round++) {
    for (int k = 0; k < o->n_colls; k++) {
      int coll = o->colls[k];
      for (int s = 0; s < o->n_sizes; s++) {
        size_t bytes = o->sizes[s];
        if (bytes % (sizeof(float) * (size_t)o->ranks) != 0) continue;
        size_t in_bytes = coll == 1 ? bytes / (size_t)o->ranks : bytes;
        size_t out_bytes = coll == 2 ? bytes / (size_t)o->ranks : bytes;
        fill_input(host, coll, bytes, rank, o->ranks);
        CHECK_CUDA(cudaMemcpy(send, host, in_bytes, cudaMemcpyHostToDevice), block);
        int iterations = bytes > (16u << 20) ? (o->iterations + 1) / 2 : o->iterations;
        int warmup = bytes > (16u << 20) ? 1 : o->warmup;
        int* cell = &cell_calls[coll][63 - __builtin_clzll((unsigned long long)bytes)];
        if (o->pairs) { /* the last warm-up call and the last timed call, both verified, are one A and one B */
          if (warmup < 1) warmup = 1;
          if (iterations < 12) iterations = 12; /* 12 calls hold a whole block of each half: 3 timed calls each at least */
          if (iterations > MAX_ITERATIONS - 4) iterations = MAX_ITERATIONS - 4;
          while (pair_half((unsigned)(*cell + warmup - 1)) == pair_half((unsigned)(*cell + warmup + iterations - 1)))
            iterations++;
        }
        int verified = 1;
        /* Warm-up, then verify the first result of this configuration. */
        for (int i = 0; i < warmup; i++) CHECK_NCCL(launch(coll, send, recv, bytes, o->ranks, comm, stream), block);
        *cell += warmup;
        int first_timed = *cell; /* the cell's number of the first timed call */
        *cell += iterations;
        CHECK_CUDA(cudaStreamSynchronize(stream), block);
        CHECK_CUDA(cudaMemcpy(host, recv, out_bytes, cudaMemcpyDeviceToHost), block);
        verified &= check_output(host, coll, bytes, rank, o->ranks);
        double total_ms = 0;
        if (o->event_check) { /* one event pair per call: comparable to the profiler's per-call GPU time */
          for (int i = 0; i < iterations; i++) {
            float ms;
            CHECK_CUDA(cudaEventRecord(start, stream), block);
            CHECK_NCCL(launch(coll, send, recv, bytes, o->ranks, comm, stream), block);
            CHECK_CUDA(cudaEventRecord(stop, stream), block);
            CHECK_CUDA(cudaEventSynchronize(stop), block);
            CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop), block);
            total_ms += ms;
          }
        } else { /* back to back, an event between calls: the median call, robust to the odd slow one */
          float per_call_ms[MAX_ITERATIONS];
          CHECK_CUDA(cudaEventRecord(marks[0], stream), block);
          for (int i = 0; i < iterations; i++) {
            CHECK_NCCL(launch(coll, send, recv, bytes, o->ranks, comm, stream), block);
            CHECK_CUDA(cudaEventRecord(marks[i + 1], stream), block);
          }
          CHECK_CUDA(cudaEventSynchronize(marks[iterations]), block);
          for (int i = 0; i < iterations; i++) CHECK_CUDA(cudaEventElapsedTime(&per_call_ms[i], marks[i], marks[i + 1]), block);
          if (o->pairs) { /* A's blocks and B's: a median each, the first call of every block left out */
            float half_ms[2][MAX_ITERATIONS];
            int count[2] = {0, 0};
            for (int i = 0; i < iterations; i++) {
              unsigned call = (unsigned)(first_timed + i);
              if (pair_first_of_block(call)) continue;
              int b = pair_half(call);
              half_ms[b][count[b]++] = per_call_ms[i];
            }
            block->time_us[1][rank][coll][s] = 1000.0 * median_ms(half_ms[1], count[1]);
            total_ms = median_ms(half_ms[0], count[0]) * iterations;
          } else {
            total_ms = median_ms(per_call_ms, iterations) * iterations;
          }
        }
        /* And the last result: every action the tuner chose during the timed calls. */
        CHECK_CUDA(cudaMemcpy(host, recv, out_bytes, cudaMemcpyDeviceToHost), block);
        verified &= check_output(host, coll, bytes, rank, o->ranks);
        block->time_us[round][rank][coll][s] = 1000.0 * total_ms / iterations; /* round < --rounds < MAX_ROUNDS */
        block->verified[rank][coll][s] &= verified; /* wrong in any pass stays wrong */
      }
    }
    if (final_round >= 0) continue;
    /* Every rank must run the same passes: rank 0 decides after each one, the others wait for its word. */
    if (rank == 0) {
      int last = round + 1 >= o->rounds || (o->seconds > 0 && monotonic_s() - began >= o->seconds);
      if (last) block->learning_rounds = round + 1;
      struct timespec wall;
      clock_gettime(CLOCK_REALTIME, &wall);
      block->round_end_s[round] = (double)wall.tv_sec + 1e-9 * (double)wall.tv_nsec;
      __sync_synchronize();
      block->round_decision[round] = last ? 2 : 1;
    } else {
      while (block->round_decision[round] == 0) {
        if (block->failed) return 1;
        usleep(50);
      }
    }
    if (block->round_decision[round] == 2) final_round = round + 1;
  }
  CHECK_CUDA(cudaStreamSynchronize(stream), block);
  ncclCommDestroy(comm);
  cudaFree(send);
  cudaFree(recv);
  free(host);
  return 0;
}

/* Runs one set of rank processes; fills `block`. Returns 0 when every rank finished. Once a rank has
 * failed, the others get --grace seconds to end (they see block->failed where they poll): a rank blocked
 * in a collective with a dead peer, or in the plugin waiting for a table, never would, and would hold the
 * whole run until run.sh's time limit. They are then killed, and the error names them. */
static int run_ranks(const options* o, shared_block* block) {
  memset(block, 0, sizeof(*block));
  pid_t pids[MAX_RANKS];
  fflush(NULL); /* else each rank would write its copy of what is buffered (the CSV header) again */
  int running = 0;
  for (int r = 0; r < o->ranks; r++) {
    pids[r] = fork();
    if (pids[r] == 0) {
      int rc = run_rank(o, r, block);
      fflush(stdout); /* NCCL's log lines: _exit would drop what is still buffered */
      fflush(stderr);
      _exit(rc);
    }
    if (pids[r] < 0) {
      snprintf(block->error, sizeof(block->error), "fork: %s", strerror(errno));
      block->failed = 1;
      break;
    }
    running++;
  }
  int ok = running == o->ranks;
  double failed_at = ok ? 0 : monotonic_s(); /* when the first rank failed (0: none has) */
  char killed[128] = "";
  while (running > 0) {
    int status;
    pid_t pid = waitpid(-1, &status, failed_at > 0 ? WNOHANG : 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break; /* no child left (ECHILD) */
    if (pid == 0) { /* a rank has failed; the others still run */
      if (killed[0] == '\0' && monotonic_s() - failed_at >= o->grace_s)
        for (int r = 0; r < o->ranks; r++) {
          if (pids[r] <= 0 || kill(pids[r], SIGKILL) != 0) continue;
          size_t used = strlen(killed);
          snprintf(killed + used, sizeof(killed) - used, "%s%d", used ? ", " : "", r);
        }
      usleep(10000);
      continue;
    }
    running--;
    for (int r = 0; r < o->ranks; r++)
      if (pids[r] == pid) pids[r] = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ok = 0;
      block->failed = 1;
      if (failed_at == 0) failed_at = monotonic_s();
    }
  }
  if (!ok && block->error[0] == '\0') snprintf(block->error, sizeof(block->error), "a rank process failed");
  if (killed[0] != '\0') {
    size_t used = strlen(block->error);
    snprintf(block->error + used, sizeof(block->error) - used, "; rank %s killed, still running %g s after",
             killed, o->grace_s);
  }
  return ok ? 0 : -1;
}

/* Whether every traced call of collective `coll` ran the wanted algorithm and protocol (NCCL ignores
 * a table entry it cannot run for that collective, e.g. tree for AllGather, and chooses itself). With
 * `bytes` > 0 (pairs), only that size's calls in A's blocks count: a rank's trace lists its calls in
 * order, so the k-th call of a size is its cell's call k when each size has a size bin of its own. */
static int trace_applied(const char* trace_dir, int ranks, const char* action, int coll, size_t bytes) {
  char algo[32] = "", proto[32] = "";
  if (sscanf(action, "%31[^/]/%31[^/]", algo, proto) != 2) return 1;
  int total = 0, matched = 0;
  for (int r = 0; r < ranks; r++) {
    char path[1200], line[512];
    snprintf(path, sizeof(path), "%s/trace-%d.csv", trace_dir, r);
    FILE* f = fopen(path, "r");
    if (f == NULL) continue;
    int k = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
      char c[32], a[32], p[32];
      unsigned long long b;
      if (sscanf(line, "%*[^,],%*[^,],%31[^,],%llu,%31[^,],%31[^,]", c, &b, a, p) != 4 ||
          strcasecmp(c, coll_names[coll]) != 0 || (bytes > 0 && b != bytes))
        continue;
      if (bytes > 0 && pair_half((unsigned)k++) != 0) continue;
      total++;
      matched += strcasecmp(a, algo) == 0 && strcasecmp(p, proto) == 0;
    }
    fclose(f);
  }
  return total > 0 && matched == total;
}

/* One CSV row for collective `coll`, size index `s`: the worst rank's median call in pass `round` of
 * the block, with nccl-tests' algorithm and bus bandwidth. */
static void write_row(FILE* out, const options* o, const shared_block* block, int round, int coll, int s,
                      const char* mode, const char* prefix, const char* action, int verified, int applied,
                      int repetition) {
  size_t bytes = o->sizes[s];
  double worst = 0;
  for (int r = 0; r < o->ranks; r++)
    if (block->time_us[round][r][coll][s] > worst) worst = block->time_us[round][r][coll][s];
  double algbw = worst > 0 ? (double)bytes / (worst * 1e-6) / 1e9 : 0;
  double factor = coll == 0 ? 2.0 * (o->ranks - 1) / o->ranks : (double)(o->ranks - 1) / o->ranks;
  fprintf(out, "%s,%s%s,%s,%zu,%d,%.3f,%.4f,%.4f,%d,%d,%d\n", mode, prefix, action, coll_names[coll], bytes, o->ranks,
          worst, algbw, algbw * factor, verified, applied, repetition);
}

/* Whether every rank's results of collective `coll`, size index `s`, were right. */
static int all_verified(const options* o, const shared_block* block, int coll, int s) {
  int verified = 1;
  for (int r = 0; r < o->ranks; r++) verified &= block->verified[r][coll][s];
  return verified;
}

/* Writes one row per collective and size of pass `round`; returns the number of rows whose results were
 * wrong. With a trace folder, `applied` says whether NCCL ran `action` as asked. */
static int write_rows(FILE* out, const options* o, const shared_block* block, int round, const char* mode,
                      const char* action, const char* trace_dir, int repetition) {
  int wrong = 0;
  for (int k = 0; k < o->n_colls; k++) {
    int coll = o->colls[k];
    int applied = trace_dir == NULL || trace_applied(trace_dir, o->ranks, action, coll, 0);
    for (int s = 0; s < o->n_sizes; s++) {
      size_t bytes = o->sizes[s];
      if (bytes % (sizeof(float) * (size_t)o->ranks) != 0) continue;
      int verified = all_verified(o, block, coll, s);
      write_row(out, o, block, round, coll, s, mode, "", action, verified, applied, repetition);
      wrong += !verified;
    }
  }
  fflush(out);
  return wrong;
}

/* pairs: two rows per collective and size, A's median call (action `label`) and B's (`nccl@label`:
 * kept in pass 1's slot). Returns the number of sizes whose results were wrong. */
static int write_pair_rows(FILE* out, const options* o, const shared_block* block, const char* label,
                           const char* action, const char* trace_dir, int repetition) {
  int wrong = 0;
  for (int k = 0; k < o->n_colls; k++) {
    int coll = o->colls[k];
    for (int s = 0; s < o->n_sizes; s++) {
      size_t bytes = o->sizes[s];
      if (bytes % (sizeof(float) * (size_t)o->ranks) != 0) continue;
      int verified = all_verified(o, block, coll, s);
      int applied = action == NULL || trace_applied(trace_dir, o->ranks, action, coll, bytes);
      write_row(out, o, block, 0, coll, s, "pairs", "", label, verified, applied, repetition);
      write_row(out, o, block, 1, coll, s, "pairs", "nccl@", label, verified, 1, repetition);
      wrong += !verified;
    }
  }
  fflush(out);
  return wrong;
}

/* Points NCCL at the plugin (tuner and profiler) or, with NULL, runs NCCL alone. */
static void use_plugin(const char* path) {
  if (path != NULL) {
    setenv("NCCL_TUNER_PLUGIN", path, 1);
    setenv("NCCL_PROFILER_PLUGIN", path, 1);
  } else {
    unsetenv("NCCL_TUNER_PLUGIN");
    unsetenv("NCCL_PROFILER_PLUGIN");
  }
}

/* sweep and rotate: one set of rank processes for one entry: `none` (NCCL alone), `default` or `frozen` (the
 * plugin in that mode) or an action forced through a fixed table. Plugin entries are traced to
 * TRACE_DIR/<entry>/ (the last repetition's trace stays), which tells whether NCCL ran the action as asked
 * and which actions `default` (NCCL's choice) and `frozen` (the learned policy) used. Tree runs AllReduce
 * only and PAT AllGather and ReduceScatter only: NCCL has nothing else for them. Returns 0 when done, 1
 * when the ranks failed, -1 on a bad entry. */
static int run_entry(const options* base, shared_block* block, const char* entry, int repetition,
                     const char* plugin_path, const char* trace_dir, FILE* out, int* wrong) {
  options o = *base;
  const char* kind = base->pairs ? "pairs" : "sweep";
  if (!base->pairs && (strcmp(entry, "none") == 0 || strcmp(entry, "default") == 0 || strcmp(entry, "frozen") == 0))
    kind = entry;
  int from_file = base->pairs && entry[0] == '@';
  const char* action = base->pairs && !from_file && strcmp(entry, "nccl") != 0 ? entry : NULL; /* pairs: X of X||nccl */
  if (strcmp(kind, "none") != 0 && plugin_path[0] == '\0') {
    fprintf(stderr, "collbench: entry %s needs the plugin\n", entry);
    return -1;
  }
  if (strcmp(kind, "sweep") == 0 || action != NULL) {
    o.n_colls = 0;
    for (int k = 0; k < base->n_colls; k++) {
      int coll = base->colls[k];
      if ((strncmp(entry, "tree/", 5) == 0 && coll != 0) || (strncmp(entry, "pat/", 4) == 0 && coll == 0)) continue;
      o.colls[o.n_colls++] = coll;
    }
    if (o.n_colls == 0) return 0;
  }
  char folder[1100], name[64];
  if (from_file) { /* @path/learned.table: "learned" */
    const char* base_name = strrchr(entry, '/') != NULL ? strrchr(entry, '/') + 1 : entry + 1;
    snprintf(name, sizeof(name), "%s", base_name);
    char* dot = strrchr(name, '.');
    if (dot != NULL && dot != name) *dot = '\0';
  } else {
    snprintf(name, sizeof(name), "%s", entry);
  }
  for (char* c = name; *c; c++)
    if (*c == '/') *c = '-';
  snprintf(folder, sizeof(folder), "%s/%s", trace_dir, name);
  if (mkdir(folder, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "collbench: cannot create %s: %s\n", folder, strerror(errno));
    return -1;
  }
  char pattern[1200], table_path[PATH_MAX];
  snprintf(pattern, sizeof(pattern), "%s/trace-%%r.csv", folder);
  for (int r = 0; r < o.ranks; r++) {
    char path[1200];
    snprintf(path, sizeof(path), "%s/trace-%d.csv", folder, r);
    unlink(path);
  }
  use_plugin(strcmp(kind, "none") == 0 ? NULL : plugin_path);
  setenv("DYNAMICCL_TRACE_FILE", pattern, 1);
  if (from_file) {
    if (realpath(entry + 1, table_path) == NULL) {
      fprintf(stderr, "collbench: table %s: %s\n", entry + 1, strerror(errno));
      return -1;
    }
    setenv("DYNAMICCL_TABLE_FILE", table_path, 1);
    setenv("DYNAMICCL_MODE", "fixed", 1);
  } else if (strcmp(kind, "sweep") == 0 || strcmp(kind, "pairs") == 0) {
    snprintf(table_path, sizeof(table_path), "%s/table.txt", folder);
    FILE* t = fopen(table_path, "w");
    if (t == NULL) return -1;
    for (int k = 0; k < o.n_colls; k++)
      fprintf(t, "%s,0,-1,%s%s\n", coll_names[o.colls[k]], entry, strcmp(kind, "pairs") == 0 ? "||nccl" : "");
    fclose(t);
    setenv("DYNAMICCL_TABLE_FILE", table_path, 1);
    setenv("DYNAMICCL_MODE", "fixed", 1);
  } else {
    setenv("DYNAMICCL_MODE", kind, 1);
  }
  if (run_ranks(&o, block) != 0) {
    fprintf(stderr, "collbench: %s failed: %s\n", entry, block->error);
    return 1;
  }
  /* Per collective, whether NCCL ran what was asked (it ignores an entry it cannot run). */
  if (strcmp(kind, "pairs") == 0)
    /* An action keeps its own name (ring/ll/ch=1) in the CSV; only its trace folder's name has dashes. */
    *wrong += write_pair_rows(out, &o, block, from_file ? name : entry, action, folder, repetition);
  else
    *wrong += write_rows(out, &o, block, 0, kind, strcmp(kind, "sweep") == 0 ? entry : "-",
                         strcmp(kind, "sweep") == 0 ? folder : NULL, repetition);
  fprintf(stderr, "collbench: %s done (repetition %d)\n", entry, repetition);
  return 0;
}

/* learn: the earlier passes, mode learn-round, action round=K@T (T: when the pass ended, Unix time). */
static void write_round_rows(FILE* out, const options* o, const shared_block* block) {
  for (int round = 0; round < block->learning_rounds; round++) {
    char action[64];
    snprintf(action, sizeof(action), "round=%d@%.3f", round, block->round_end_s[round]);
    write_rows(out, o, block, round, "learn-round", action, NULL, 0);
  }
}

static const char* default_actions =
  "ring/ll/ch=1,ring/ll/ch=2,ring/ll/ch=4,ring/ll/ch=8,ring/ll128/ch=1,ring/ll128/ch=2,ring/ll128/ch=4,"
  "ring/ll128/ch=8,ring/simple/ch=1,ring/simple/ch=2,ring/simple/ch=4,ring/simple/ch=8,ring/simple/ch=16,"
  "tree/ll/ch=1,tree/ll/ch=2,tree/ll/ch=4,tree/ll128/ch=2,tree/ll128/ch=4,tree/simple/ch=1,tree/simple/ch=2,"
  "tree/simple/ch=4,tree/simple/ch=8,pat/simple/ch=1,pat/simple/ch=2,pat/simple/ch=4";

/* A loopback port for the ranks' coordinator (its registry) that no socket holds now, below the kernel's
 * ephemeral range: outgoing connections (NCCL's own, over loopback) take their ports from that range and
 * one could take the registry's before it is bound; then no rank can host it and every rank waits. */
static int free_loopback_port(void) {
  int ephemeral_low = 32768, ephemeral_high = 60999;
  FILE* f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  if (f != NULL) {
    if (fscanf(f, "%d %d", &ephemeral_low, &ephemeral_high) != 2) ephemeral_low = 32768;
    fclose(f);
  }
  int low = 10000, span = ephemeral_low - low;
  if (span < 1000) { /* the ephemeral range starts low: above it instead */
    low = ephemeral_high + 1;
    span = 65535 - low;
  }
  for (int attempt = 0; attempt < 100 && span > 0; attempt++) {
    int port = low + (int)(((unsigned)getpid() + 7919u * (unsigned)attempt) % (unsigned)span);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                  .sin_addr = {htonl(INADDR_LOOPBACK)}};
    int bound = bind(fd, (struct sockaddr*)&address, sizeof(address)) == 0;
    close(fd);
    if (bound) return port;
  }
  return 20000 + (int)(getpid() % 20000);
}

int main(int argc, char** argv) {
  options o;
  memset(&o, 0, sizeof(o));
  o.ranks = 2;
  o.warmup = 3;
  o.iterations = 10;
  o.rounds = 20;
  o.repeat = 1;
  o.grace_s = 10;
  o.mode = NULL;
  o.plugin = "build/libnccl-tuner-dynamiccl.so";
  o.actions = default_actions;
  size_t min_size = 1024, max_size = 256u << 20;
  double factor = 4;
  const char* colls = "allreduce,allgather,reducescatter";
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--event-check") == 0) {
      o.event_check = 1;
      continue;
    }
    if (strcmp(a, "--one-host") == 0) {
      o.one_host = 1;
      continue;
    }
    if (strcmp(a, "--nccl-version") == 0) {
      int code = 0;
      ncclGetVersion(&code);
      printf("%d\n", code);
      return 0;
    }
    if (v == NULL) {
      usage();
      return 2;
    }
    i++;
    if (strcmp(a, "--mode") == 0) o.mode = v;
    else if (strcmp(a, "--ranks") == 0) o.ranks = atoi(v);
    else if (strcmp(a, "--min") == 0) min_size = parse_size(v);
    else if (strcmp(a, "--max") == 0) max_size = parse_size(v);
    else if (strcmp(a, "--factor") == 0) factor = atof(v);
    else if (strcmp(a, "--collectives") == 0) colls = v;
    else if (strcmp(a, "--warmup") == 0) o.warmup = atoi(v);
    else if (strcmp(a, "--iterations") == 0) o.iterations = atoi(v);
    else if (strcmp(a, "--rounds") == 0) o.rounds = atoi(v);
    else if (strcmp(a, "--seconds") == 0) o.seconds = atof(v);
    else if (strcmp(a, "--grace") == 0) o.grace_s = atof(v);
    else if (strcmp(a, "--plugin") == 0) o.plugin = v;
    else if (strcmp(a, "--table") == 0) o.table = v;
    else if (strcmp(a, "--actions") == 0) o.actions = v;
    else if (strcmp(a, "--entries") == 0) o.entries = v;
    else if (strcmp(a, "--repeat") == 0) o.repeat = atoi(v);
    else if (strcmp(a, "--trace-dir") == 0) o.trace_dir = v;
    else if (strcmp(a, "--out") == 0) o.out = v;
    else {
      usage();
      return 2;
    }
  }
  o.pairs = o.mode != NULL && strcmp(o.mode, "pairs") == 0;
  if (o.pairs && (o.entries == NULL || o.event_check)) {
    fprintf(stderr, "collbench: --mode pairs needs --entries (and no --event-check)\n");
    return 2;
  }
  if (o.mode == NULL || o.ranks < 2 || o.ranks > MAX_RANKS || factor < 1.5 || min_size < 64 || max_size < min_size ||
      o.warmup < 1 || o.iterations < 1 || o.iterations > MAX_ITERATIONS || o.rounds < 1 || o.rounds >= MAX_ROUNDS ||
      o.repeat < 1 || !(o.grace_s >= 0 && o.grace_s <= 3600)) {
    usage();
    return 2;
  }
  for (double s = (double)min_size; s <= (double)max_size * 1.0001 && o.n_sizes < MAX_SIZES; s *= factor)
    o.sizes[o.n_sizes++] = (size_t)s / (sizeof(float) * 8) * (sizeof(float) * 8);
  char list[128];
  snprintf(list, sizeof(list), "%s", colls);
  for (char* t = strtok(list, ","); t != NULL; t = strtok(NULL, ","))
    for (int c = 0; c < NUM_COLLS; c++)
      if (strcmp(t, coll_names[c]) == 0 && o.n_colls < NUM_COLLS) o.colls[o.n_colls++] = c;

  int version = 0;
  ncclGetVersion(&version);
  char release[32];
  snprintf(release, sizeof(release), "%d.%d.%d", version / 10000, version / 100 % 100, version % 100);
  if (o.one_host && version < 23000) {
    fprintf(stderr, "collbench: --one-host needs NCCL 2.30 or later (NCCL_MULTI_RANK_GPU_ENABLE); this is NCCL %s\n",
            release);
    return 3;
  }
  if (o.one_host) setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 1);
  fprintf(stderr, "collbench: NCCL %s, %d ranks on GPU 0 as %s, mode %s\n", release, o.ranks,
          o.one_host ? "one host (NCCL_MULTI_RANK_GPU_ENABLE)" : "separate hosts (NCCL_HOSTID)", o.mode);
  setenv("NCCL_SOCKET_IFNAME", getenv("NCCL_SOCKET_IFNAME") ? getenv("NCCL_SOCKET_IFNAME") : "lo", 1);
  /* The ranks are separate "nodes" on this one machine: learning and frozen policies need their
   * coordinator, which listens on loopback. */
  if (getenv("DYNAMICCL_COORD") == NULL) {
    char address[64];
    snprintf(address, sizeof(address), "127.0.0.1:%d", free_loopback_port());
    setenv("DYNAMICCL_COORD", address, 1);
  }
  char plugin_path[PATH_MAX] = "";
  if (strcmp(o.mode, "none") != 0 && realpath(o.plugin, plugin_path) == NULL) {
    fprintf(stderr, "collbench: plugin %s: %s\n", o.plugin, strerror(errno));
    return 1;
  }
  use_plugin(plugin_path[0] != '\0' ? plugin_path : NULL);
  char trace_dir[1024] = "";
  if (o.trace_dir != NULL) snprintf(trace_dir, sizeof(trace_dir), "%s", o.trace_dir);
  else if (o.event_check || strcmp(o.mode, "sweep") == 0 || strcmp(o.mode, "rotate") == 0 || o.pairs) {
    snprintf(trace_dir, sizeof(trace_dir), "/tmp/collbench-trace-XXXXXX");
    if (mkdtemp(trace_dir) == NULL) return 1;
  }
  if (trace_dir[0] != '\0' && mkdir(trace_dir, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "collbench: cannot create %s: %s\n", trace_dir, strerror(errno));
    return 1;
  }
  if (trace_dir[0] != '\0' && strcmp(o.mode, "sweep") != 0 && strcmp(o.mode, "rotate") != 0 && !o.pairs) {
    char pattern[1100];
    snprintf(pattern, sizeof(pattern), "%s/trace-%%r.csv", trace_dir);
    setenv("DYNAMICCL_TRACE_FILE", pattern, 1);
  }
  FILE* out = o.out != NULL ? fopen(o.out, "w") : stdout;
  if (out == NULL) {
    fprintf(stderr, "collbench: cannot write %s: %s\n", o.out, strerror(errno));
    return 1;
  }
  fprintf(out, "mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied,repetition\n");
  shared_block* block = mmap(NULL, sizeof(shared_block), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) return 1;
  int failures = 0, wrong = 0;
  if (strcmp(o.mode, "sweep") == 0 || strcmp(o.mode, "rotate") == 0 || o.pairs) {
    char entry_list[8192], *names[MAX_ENTRIES];
    int n_entries = 0;
    if (strcmp(o.mode, "sweep") == 0) snprintf(entry_list, sizeof(entry_list), "%s", o.actions);
    else if (o.entries != NULL) snprintf(entry_list, sizeof(entry_list), "%s", o.entries);
    else snprintf(entry_list, sizeof(entry_list), "none,default,%s", o.actions);
    char* save = NULL;
    for (char* e = strtok_r(entry_list, ",", &save); e != NULL && n_entries < MAX_ENTRIES; e = strtok_r(NULL, ",", &save))
      names[n_entries++] = e;
    unsigned long long shuffle = 0x9e3779b97f4a7c15ull;
    for (int repetition = 0; repetition < o.repeat; repetition++) {
      int order[MAX_ENTRIES];
      for (int i = 0; i < n_entries; i++) order[i] = i;
      for (int i = n_entries - 1; i > 0 && repetition > 0; i--) { /* the first repetition in the given order */
        shuffle = shuffle * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int)((shuffle >> 33) % (unsigned long long)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
      for (int i = 0; i < n_entries; i++) {
        int result = run_entry(&o, block, names[order[i]], repetition, plugin_path, trace_dir, out, &wrong);
        if (result < 0) return 2;
        failures += result;
      }
    }
  } else {
    if (strcmp(o.mode, "default") == 0 || strcmp(o.mode, "frozen") == 0 || strcmp(o.mode, "learn") == 0)
      setenv("DYNAMICCL_MODE", o.mode, 1);
    else if (strcmp(o.mode, "fixed") == 0) {
      if (o.table == NULL) {
        usage();
        return 2;
      }
      setenv("DYNAMICCL_MODE", "fixed", 1);
      setenv("DYNAMICCL_TABLE_FILE", o.table, 1);
    } else if (strcmp(o.mode, "none") != 0) {
      usage();
      return 2;
    }
    if (run_ranks(&o, block) != 0) {
      fprintf(stderr, "collbench: %s\n", block->error);
      failures++;
    } else {
      if (strcmp(o.mode, "learn") == 0) write_round_rows(out, &o, block);
      wrong += write_rows(out, &o, block, block->learning_rounds, o.mode, strcmp(o.mode, "fixed") == 0 ? o.table : "-",
                          NULL, 0);
    }
  }
  if (out != stdout) fclose(out);
  if (wrong > 0) fprintf(stderr, "collbench: %d results were WRONG (see verified=0)\n", wrong);
  return failures > 0 || wrong > 0 ? 1 : 0;
}
