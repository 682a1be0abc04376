/* bench/gpu/collbench.c: real NCCL on a real GPU. Starts N ranks as processes on one GPU, each with
 * its own NCCL_HOSTID (so NCCL treats them as separate nodes and talks over its socket transport on
 * loopback), runs AllReduce, AllGather and ReduceScatter over a size sweep, verifies every result
 * against the expected values (a wrong configuration is caught, not timed) and reports time and bus
 * bandwidth per size with nccl-tests' formulas, as CSV.
 *
 * Modes:
 *   none     NCCL alone (no plugin)
 *   default  the DynamICCL plugin with DYNAMICCL_MODE=default (its overhead)
 *   learn    the plugin learning online (--rounds passes over the sizes; the last one is reported)
 *   fixed    the plugin running --table FILE
 *   sweep    every action of --actions through a fixed table, one set of processes per action: the
 *            real best per size (the testbed's oracle). Rows whose action NCCL did not run (the trace
 *            shows another algorithm or protocol) are marked applied=0.
 * Other environment (NCCL_*, DYNAMICCL_*) passes through to the ranks.
 *
 * CSV columns: mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied
 * Build: see bench/gpu/Makefile.inc (gcc, CUDA runtime and NCCL; no nvcc needed). */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 32
#define MAX_RANKS 8
#define NUM_COLLS 3
static const char* coll_names[NUM_COLLS] = {"allreduce", "allgather", "reducescatter"};

typedef struct shared_block {
  ncclUniqueId id;
  volatile int id_ready;
  volatile int failed;
  char error[256];
  double time_us[MAX_RANKS][NUM_COLLS][MAX_SIZES];
  int verified[MAX_RANKS][NUM_COLLS][MAX_SIZES];
} shared_block;

typedef struct options {
  int ranks, warmup, iterations, rounds;
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
} options;

static void usage(void) {
  fprintf(stderr,
          "usage: collbench --mode none|default|learn|fixed|sweep [options]\n"
          "  --ranks N           ranks as processes on GPU 0 (default 2, at most 8)\n"
          "  --min SIZE --max SIZE --factor F   bytes (default 1K .. 256M, x4)\n"
          "  --collectives LIST  allreduce,allgather,reducescatter (default all)\n"
          "  --warmup N --iterations N   per size (default 3 and 10; fewer above 16 MiB)\n"
          "  --rounds N          learn: passes over the sizes before the reported one (default 20)\n"
          "  --plugin PATH       the DynamICCL library (default: build/libnccl-tuner-dynamiccl.so)\n"
          "  --table FILE        fixed: the decision table\n"
          "  --actions LIST      sweep: comma-separated actions, e.g. ring/simple/ch=4 (default: a grid)\n"
          "  --trace-dir DIR     keep the plugin's per-rank traces there\n"
          "  --event-check       profiler check: time every call with CUDA events (trace it too)\n"
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

static ncclResult_t launch(int coll, const float* send, float* recv, size_t bytes, int ranks, ncclComm_t comm,
                           cudaStream_t stream) {
  size_t total = bytes / sizeof(float), chunk = total / (size_t)ranks;
  if (coll == 0) return ncclAllReduce(send, recv, total, ncclFloat, ncclSum, comm, stream);
  if (coll == 1) return ncclAllGather(send, recv, chunk, ncclFloat, comm, stream);
  return ncclReduceScatter(send, recv, chunk, ncclFloat, ncclSum, comm, stream);
}

static int run_rank(const options* o, int rank, shared_block* block) {
  char hostid[64];
  snprintf(hostid, sizeof(hostid), "collbench-host-%d", rank);
  setenv("NCCL_HOSTID", hostid, 1);
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
  int rounds = strcmp(o->mode, "learn") == 0 ? o->rounds + 1 : 1;
  for (int round = 0; round < rounds; round++)
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
        int verified = 1;
        /* Warm-up, then verify the first result of this configuration. */
        for (int i = 0; i < warmup; i++) CHECK_NCCL(launch(coll, send, recv, bytes, o->ranks, comm, stream), block);
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
        } else {
          float ms;
          CHECK_CUDA(cudaEventRecord(start, stream), block);
          for (int i = 0; i < iterations; i++) CHECK_NCCL(launch(coll, send, recv, bytes, o->ranks, comm, stream), block);
          CHECK_CUDA(cudaEventRecord(stop, stream), block);
          CHECK_CUDA(cudaEventSynchronize(stop), block);
          CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop), block);
          total_ms = ms;
        }
        /* And the last result: every action the tuner chose during the timed calls. */
        CHECK_CUDA(cudaMemcpy(host, recv, out_bytes, cudaMemcpyDeviceToHost), block);
        verified &= check_output(host, coll, bytes, rank, o->ranks);
        block->time_us[rank][coll][s] = 1000.0 * total_ms / iterations;
        block->verified[rank][coll][s] = verified;
        (void)round;
      }
    }
  CHECK_CUDA(cudaStreamSynchronize(stream), block);
  ncclCommDestroy(comm);
  cudaFree(send);
  cudaFree(recv);
  free(host);
  return 0;
}

/* Runs one set of rank processes; fills `block`. Returns 0 when every rank finished. */
static int run_ranks(const options* o, shared_block* block) {
  memset(block, 0, sizeof(*block));
  pid_t pids[MAX_RANKS];
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < o->ranks; r++) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(run_rank(o, r, block));
  }
  int ok = 1;
  for (int r = 0; r < o->ranks; r++) {
    int status;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ok = 0;
  }
  if (!ok && block->error[0] == '\0') snprintf(block->error, sizeof(block->error), "a rank process failed");
  return ok ? 0 : -1;
}

/* Whether every traced collective of this kind ran the wanted algorithm and protocol. */
static int trace_applied(const char* trace_dir, int ranks, const char* action) {
  char algo[32] = "", proto[32] = "";
  if (sscanf(action, "%31[^/]/%31[^/]", algo, proto) != 2) return 1;
  int total = 0, matched = 0;
  for (int r = 0; r < ranks; r++) {
    char path[1100], line[512];
    snprintf(path, sizeof(path), "%s/trace-%d.csv", trace_dir, r);
    FILE* f = fopen(path, "r");
    if (f == NULL) continue;
    while (fgets(line, sizeof(line), f) != NULL) {
      char a[32], p[32];
      if (sscanf(line, "%*[^,],%*[^,],%*[^,],%*[^,],%31[^,],%31[^,]", a, p) != 2 || strcmp(a, "algorithm") == 0) continue;
      total++;
      matched += strcmp(a, algo) == 0 && strcmp(p, proto) == 0;
    }
    fclose(f);
  }
  return total > 0 && matched == total;
}

/* Writes one row per collective and size; returns the number of rows whose results were wrong. */
static int write_rows(FILE* out, const options* o, const shared_block* block, const char* mode, const char* action,
                      int applied) {
  int wrong = 0;
  for (int k = 0; k < o->n_colls; k++) {
    int coll = o->colls[k];
    for (int s = 0; s < o->n_sizes; s++) {
      size_t bytes = o->sizes[s];
      if (bytes % (sizeof(float) * (size_t)o->ranks) != 0) continue;
      double worst = 0;
      int verified = 1;
      for (int r = 0; r < o->ranks; r++) {
        if (block->time_us[r][coll][s] > worst) worst = block->time_us[r][coll][s];
        verified &= block->verified[r][coll][s];
      }
      double algbw = worst > 0 ? (double)bytes / (worst * 1e-6) / 1e9 : 0;
      double factor = coll == 0 ? 2.0 * (o->ranks - 1) / o->ranks : (double)(o->ranks - 1) / o->ranks;
      fprintf(out, "%s,%s,%s,%zu,%d,%.3f,%.4f,%.4f,%d,%d\n", mode, action, coll_names[coll], bytes, o->ranks, worst,
              algbw, algbw * factor, verified, applied);
      wrong += !verified;
    }
  }
  fflush(out);
  return wrong;
}

static const char* default_actions =
  "ring/ll/ch=1,ring/ll/ch=2,ring/ll/ch=4,ring/ll/ch=8,ring/ll128/ch=1,ring/ll128/ch=2,ring/ll128/ch=4,"
  "ring/ll128/ch=8,ring/simple/ch=1,ring/simple/ch=2,ring/simple/ch=4,ring/simple/ch=8,ring/simple/ch=16,"
  "tree/ll/ch=1,tree/ll/ch=2,tree/ll/ch=4,tree/ll128/ch=2,tree/ll128/ch=4,tree/simple/ch=1,tree/simple/ch=2,"
  "tree/simple/ch=4,tree/simple/ch=8,pat/simple/ch=1,pat/simple/ch=2,pat/simple/ch=4";

int main(int argc, char** argv) {
  options o;
  memset(&o, 0, sizeof(o));
  o.ranks = 2;
  o.warmup = 3;
  o.iterations = 10;
  o.rounds = 20;
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
    else if (strcmp(a, "--plugin") == 0) o.plugin = v;
    else if (strcmp(a, "--table") == 0) o.table = v;
    else if (strcmp(a, "--actions") == 0) o.actions = v;
    else if (strcmp(a, "--trace-dir") == 0) o.trace_dir = v;
    else if (strcmp(a, "--out") == 0) o.out = v;
    else {
      usage();
      return 2;
    }
  }
  if (o.mode == NULL || o.ranks < 2 || o.ranks > MAX_RANKS || factor < 1.5 || min_size < 64 || max_size < min_size ||
      o.iterations < 1) {
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
  fprintf(stderr, "collbench: NCCL %d.%d.%d, %d ranks on GPU 0 as separate hosts (NCCL_HOSTID), mode %s\n",
          version / 10000, version / 100 % 100, version % 100, o.ranks, o.mode);
  setenv("NCCL_SOCKET_IFNAME", getenv("NCCL_SOCKET_IFNAME") ? getenv("NCCL_SOCKET_IFNAME") : "lo", 1);
  int use_plugin = strcmp(o.mode, "none") != 0;
  if (use_plugin) {
    char absolute[4096];
    if (realpath(o.plugin, absolute) == NULL) {
      fprintf(stderr, "collbench: plugin %s: %s\n", o.plugin, strerror(errno));
      return 1;
    }
    setenv("NCCL_TUNER_PLUGIN", absolute, 1);
    setenv("NCCL_PROFILER_PLUGIN", absolute, 1);
  } else {
    unsetenv("NCCL_TUNER_PLUGIN");
    unsetenv("NCCL_PROFILER_PLUGIN");
  }
  char trace_dir[1024] = "";
  if (o.trace_dir != NULL) snprintf(trace_dir, sizeof(trace_dir), "%s", o.trace_dir);
  else if (strcmp(o.mode, "sweep") == 0 || o.event_check) {
    snprintf(trace_dir, sizeof(trace_dir), "/tmp/collbench-trace-XXXXXX");
    if (mkdtemp(trace_dir) == NULL) return 1;
  }
  if (trace_dir[0] != '\0') {
    char pattern[1100];
    snprintf(pattern, sizeof(pattern), "%s/trace-%%r.csv", trace_dir);
    setenv("DYNAMICCL_TRACE_FILE", pattern, 1);
  }
  FILE* out = o.out != NULL ? fopen(o.out, "w") : stdout;
  if (out == NULL) {
    fprintf(stderr, "collbench: cannot write %s: %s\n", o.out, strerror(errno));
    return 1;
  }
  fprintf(out, "mode,action,collective,bytes,ranks,time_us,algbw_gbs,busbw_gbs,verified,applied\n");
  shared_block* block = mmap(NULL, sizeof(shared_block), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) return 1;
  int failures = 0, wrong = 0;
  if (strcmp(o.mode, "sweep") == 0) {
    setenv("DYNAMICCL_MODE", "fixed", 1);
    char actions[4096];
    snprintf(actions, sizeof(actions), "%s", o.actions);
    char* save = NULL;
    for (char* action = strtok_r(actions, ",", &save); action != NULL; action = strtok_r(NULL, ",", &save)) {
      char table_path[1100];
      snprintf(table_path, sizeof(table_path), "%s/table.txt", trace_dir);
      FILE* t = fopen(table_path, "w");
      if (t == NULL) return 1;
      for (int k = 0; k < o.n_colls; k++) fprintf(t, "%s,0,-1,%s\n", coll_names[o.colls[k]], action);
      fclose(t);
      setenv("DYNAMICCL_TABLE_FILE", table_path, 1);
      for (int r = 0; r < o.ranks; r++) {
        char path[1100];
        snprintf(path, sizeof(path), "%s/trace-%d.csv", trace_dir, r);
        unlink(path);
      }
      if (run_ranks(&o, block) != 0) {
        fprintf(stderr, "collbench: action %s failed: %s\n", action, block->error);
        failures++;
        continue;
      }
      /* Per collective, whether NCCL ran what was asked (it may ignore an entry it cannot run). */
      wrong += write_rows(out, &o, block, "sweep", action, trace_applied(trace_dir, o.ranks, action));
      fprintf(stderr, "collbench: %s done\n", action);
    }
  } else {
    if (strcmp(o.mode, "default") == 0) setenv("DYNAMICCL_MODE", "default", 1);
    else if (strcmp(o.mode, "learn") == 0) setenv("DYNAMICCL_MODE", "learn", 1);
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
      wrong += write_rows(out, &o, block, o.mode, strcmp(o.mode, "fixed") == 0 ? o.table : "-", 1);
    }
  }
  if (out != stdout) fclose(out);
  if (wrong > 0) fprintf(stderr, "collbench: %d results were WRONG (see verified=0)\n", wrong);
  return failures > 0 || wrong > 0 ? 1 : 0;
}
