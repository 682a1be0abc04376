/* bench/gpu/mock/mock_nccl.c: a mock NCCL 2.28: collbench's calls, exact across rank processes, plugins hosted. */
#include "mock_nccl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mock_group.h"
#include "mock_log.h"
#include "mock_plugins.h"

#define ID_PREFIX "/dynamiccl-mock-nccl-"
#define DEFAULT_TIMEOUT_S 60.0

struct ncclComm {
  mock_group group;
  mock_plugins plugins;
  int rank, n_ranks, n_nodes;
  int corrupt; /* DYNAMICCL_MOCK_CORRUPT=1: rank 0 gets one wrong element in every result */
};

/* ---- the mock GPU's clock: the mock CUDA runtime's where it is loaded, else the monotonic clock ---- */
static unsigned long long (*gpu_clock_of_runtime)(void);
static void (*advance_clock_of_runtime)(unsigned long long);
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

static void find_clock(void) {
  *(void**)&gpu_clock_of_runtime = dlsym(RTLD_DEFAULT, "mockCudaClockNs");
  *(void**)&advance_clock_of_runtime = dlsym(RTLD_DEFAULT, "mockCudaAdvanceClock");
}

static uint64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

static uint64_t gpu_clock_ns(void) {
  pthread_once(&clock_once, find_clock);
  return gpu_clock_of_runtime != NULL ? gpu_clock_of_runtime() : monotonic_ns();
}

static void advance_gpu_clock(unsigned long long ns) {
  pthread_once(&clock_once, find_clock);
  if (advance_clock_of_runtime != NULL) advance_clock_of_runtime(ns);
}

/* ---- version, ids, communicators ---- */
static int stands_for_2_30(void) {
  const char* release = getenv("DYNAMICCL_MOCK_NCCL");
  return release != NULL && strcmp(release, "2.30") == 0;
}
int mock_nccl_version_code(void) { return stands_for_2_30() ? 23007 : 22809; }
const char* mock_nccl_release(void) { return stands_for_2_30() ? "2.30" : "2.28"; }

ncclResult_t ncclGetVersion(int* version) {
  static atomic_flag announced = ATOMIC_FLAG_INIT;
  if (version == NULL) return ncclInvalidArgument;
  int code = mock_nccl_version_code();
  *version = code;
  if (!atomic_flag_test_and_set(&announced))
    fprintf(stderr, "mock NCCL %d.%d.%d (DynamICCL's bench/gpu/mock): no GPU; results computed exactly in host memory, "
                    "timings not real\n",
            code / 10000, code / 100 % 100, code % 100);
  return ncclSuccess;
}

/* The id is the name of the communicator's shared-memory segment. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id) {
  static _Atomic unsigned made;
  if (unique_id == NULL) return ncclInvalidArgument;
  memset(unique_id, 0, sizeof(*unique_id));
  snprintf(unique_id->internal, sizeof(unique_id->internal), ID_PREFIX "%d-%u-%llx", (int)getpid(),
           atomic_fetch_add(&made, 1), (unsigned long long)monotonic_ns());
  return ncclSuccess;
}

static uint64_t hash_bytes(const void* data, size_t size) {
  uint64_t hash = 0xcbf29ce484222325ULL; /* FNV-1a */
  for (size_t i = 0; i < size; i++) hash = (hash ^ ((const unsigned char*)data)[i]) * 0x100000001b3ULL;
  return hash;
}

/* The rank's "node": NCCL_HOSTID where set (collbench gives each rank its own), else the host name. */
static uint64_t host_hash(void) {
  char host[256] = "";
  const char* id = getenv("NCCL_HOSTID");
  if (id != NULL) snprintf(host, sizeof(host), "%s", id);
  else if (gethostname(host, sizeof(host)) != 0) snprintf(host, sizeof(host), "localhost");
  return hash_bytes(host, strnlen(host, sizeof(host)));
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int n_ranks, ncclUniqueId comm_id, int rank) {
  if (comm == NULL || n_ranks < 1 || n_ranks > MOCK_MAX_RANKS || rank < 0 || rank >= n_ranks) {
    MOCK_WARN("ncclCommInitRank: invalid arguments (nranks %d, rank %d; the mock takes at most %d ranks)", n_ranks,
              rank, MOCK_MAX_RANKS);
    return ncclInvalidArgument;
  }
  if (memchr(comm_id.internal, '\0', sizeof(comm_id.internal)) == NULL ||
      strncmp(comm_id.internal, ID_PREFIX, strlen(ID_PREFIX)) != 0) {
    MOCK_WARN("ncclCommInitRank: not a unique id of the mock NCCL's ncclGetUniqueId");
    return ncclInvalidArgument;
  }
  const char* hang = getenv("DYNAMICCL_MOCK_HANG_RANK");
  if (hang != NULL && *hang != '\0' && atoi(hang) == rank) { /* a wedged rank process: it never returns */
    MOCK_WARN("DYNAMICCL_MOCK_HANG_RANK=%d: rank %d hangs in ncclCommInitRank", rank, rank);
    for (;;) pause();
  }
  struct ncclComm* c = calloc(1, sizeof(*c));
  if (c == NULL) return ncclSystemError;
  const char* timeout = getenv("DYNAMICCL_MOCK_TIMEOUT_S");
  double timeout_s = timeout != NULL && atof(timeout) > 0 ? atof(timeout) : DEFAULT_TIMEOUT_S;
  char error[512];
  if (mock_group_join(&c->group, comm_id.internal, n_ranks, rank, host_hash(), timeout_s, error, sizeof(error)) != 0) {
    MOCK_WARN("ncclCommInitRank: rank %d: %s", rank, error);
    free(c);
    return ncclSystemError;
  }
  c->rank = rank;
  c->n_ranks = n_ranks;
  c->n_nodes = mock_group_hosts(&c->group);
  int code = mock_nccl_version_code();
  /* Every rank is on GPU 0: ranks of one host share it, which NCCL refuses unless told otherwise (so a
   * collbench that gave two ranks one NCCL_HOSTID, or --one-host without NCCL_MULTI_RANK_GPU_ENABLE, fails
   * here as on the GPU). */
  const char* multi_rank_gpu = getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  if (c->n_nodes < n_ranks && !(code >= 23000 && multi_rank_gpu != NULL && strcmp(multi_rank_gpu, "1") == 0)) {
    if (code >= 23000)
      MOCK_WARN("Multiple Ranks are using the same GPU/Partition. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this "
                "configuration.");
    else
      MOCK_WARN("Duplicate GPU detected : rank %d and another rank of this host both on GPU 0", rank);
    mock_group_leave(&c->group);
    free(c);
    return ncclInvalidUsage;
  }
  if (rank == 0)
    mock_log(NCCL_LOG_VERSION, NCCL_INIT, __FILE__, __LINE__,
             "NCCL version %d.%d.%d+mock (DynamICCL's mock NCCL: no GPU, host memory, timings not real)", code / 10000,
             code / 100 % 100, code % 100);
  const char* corrupt = getenv("DYNAMICCL_MOCK_CORRUPT");
  c->corrupt = rank == 0 && corrupt != NULL && strcmp(corrupt, "1") == 0;
  if (c->corrupt) MOCK_INFO(NCCL_INIT | NCCL_ENV, "DYNAMICCL_MOCK_CORRUPT set: one element of every result is wrong");
  uint64_t comm_hash = hash_bytes(comm_id.internal, sizeof(comm_id.internal));
  mock_plugins_init(&c->plugins, comm_hash, n_ranks, c->n_nodes, rank);
  MOCK_INFO(NCCL_INIT, "comm %p rank %d nRanks %d nNodes %d commId 0x%llx - Init COMPLETE", (void*)c, rank, n_ranks,
            c->n_nodes, (unsigned long long)comm_hash);
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == NULL) return ncclSuccess;
  mock_plugins_finalize(&comm->plugins);
  mock_group_leave(&comm->group);
  free(comm);
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  static const char* const messages[] = {
    "no error",                                                        /* ncclSuccess */
    "unhandled cuda error",                                            /* ncclUnhandledCudaError */
    "unhandled system error (run with NCCL_DEBUG=WARN for details)",   /* ncclSystemError */
    "internal error (run with NCCL_DEBUG=WARN for details)",           /* ncclInternalError */
    "invalid argument (run with NCCL_DEBUG=WARN for details)",         /* ncclInvalidArgument */
    "invalid usage (run with NCCL_DEBUG=WARN for details)",            /* ncclInvalidUsage */
    "remote process exited or there was a network error",              /* ncclRemoteError */
    "NCCL operation in progress"};                                     /* ncclInProgress */
  size_t code = (size_t)result;
  return code < sizeof(messages) / sizeof(messages[0]) ? messages[code] : "unknown result code";
}

/* ---- the collectives, float sums, through the ranks' staging slots a slot at a time ---- */
#define SLOT_FLOATS (MOCK_SLOT_BYTES / sizeof(float))

/* Reduces `total` floats of every rank's `send`; this rank keeps elements [keep_from, keep_to) in
 * receive[i - keep_from] (AllReduce: all of them; ReduceScatter: its block). Every rank adds in rank
 * order, so all get the same bits. */
static int reduce(mock_group* g, const float* send, size_t total, size_t keep_from, size_t keep_to, float* receive) {
  for (size_t at = 0; at < total; at += SLOT_FLOATS) {
    size_t n = total - at < SLOT_FLOATS ? total - at : SLOT_FLOATS;
    memcpy(mock_group_slot(g, g->rank), send + at, n * sizeof(float));
    if (mock_group_barrier(g) != 0) return -1;
    size_t from = keep_from > at ? keep_from : at, to = keep_to < at + n ? keep_to : at + n;
    if (from < to) {
      float* out = receive + (from - keep_from);
      memcpy(out, (const float*)mock_group_slot(g, 0) + (from - at), (to - from) * sizeof(float));
      for (int r = 1; r < g->n_ranks; r++) {
        const float* in = (const float*)mock_group_slot(g, r) + (from - at);
        for (size_t i = 0; i < to - from; i++) out[i] += in[i];
      }
    }
    if (mock_group_barrier(g) != 0) return -1; /* the slots are refilled next */
  }
  return 0;
}

/* Every rank's `count` floats, in rank order. */
static int gather(mock_group* g, const float* send, size_t count, float* receive) {
  for (size_t at = 0; at < count; at += SLOT_FLOATS) {
    size_t n = count - at < SLOT_FLOATS ? count - at : SLOT_FLOATS;
    memcpy(mock_group_slot(g, g->rank), send + at, n * sizeof(float));
    if (mock_group_barrier(g) != 0) return -1;
    for (int r = 0; r < g->n_ranks; r++)
      memcpy(receive + (size_t)r * count + at, mock_group_slot(g, r), n * sizeof(float));
    if (mock_group_barrier(g) != 0) return -1;
  }
  return 0;
}

static const char* func_name(ncclFunc_t func) {
  return func == ncclFuncAllReduce ? "AllReduce" : func == ncclFuncAllGather ? "AllGather" : "ReduceScatter";
}

/* count: the API call's (AllReduce: all elements; AllGather: sent per rank; ReduceScatter: received per rank). */
static ncclResult_t collective(ncclFunc_t func, const void* send, void* receive, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm) {
  if (comm == NULL || (count > 0 && (send == NULL || receive == NULL))) {
    MOCK_WARN("%s: invalid arguments (comm %p, send %p, receive %p)", func_name(func), (void*)comm, send, receive);
    return ncclInvalidArgument;
  }
  if (datatype != ncclFloat32 || (func != ncclFuncAllGather && op != ncclSum)) {
    MOCK_WARN("%s: the mock NCCL implements ncclFloat32 and ncclSum only (collbench's), not datatype %d op %d",
              func_name(func), (int)datatype, (int)op);
    return ncclInvalidArgument;
  }
  if (count == 0) return ncclSuccess;
  size_t total = func == ncclFuncAllReduce ? count : count * (size_t)comm->n_ranks;
  size_t bytes = total * sizeof(float);
  mock_execution e;
  if (mock_plugins_choose(&comm->plugins, func, bytes, &e) != 0) {
    MOCK_WARN("%s of %zu bytes: no algorithm and protocol left to run", func_name(func), bytes);
    return ncclInternalError;
  }
  MOCK_INFO(MOCK_LOG_COLL, "%s: %zu bytes -> algorithm %d protocol %d channels %d", func_name(func), bytes, e.algo,
            e.proto, e.channels);
  void* profiled = mock_plugins_collective(&comm->plugins, func, count, &e);
  uint64_t start = gpu_clock_ns();
  mock_group* g = &comm->group;
  int failed = func == ncclFuncAllGather     ? gather(g, send, count, receive)
               : func == ncclFuncAllReduce   ? reduce(g, send, total, 0, total, receive)
                                             : reduce(g, send, total, (size_t)comm->rank * count,
                                                      (size_t)(comm->rank + 1) * count, receive);
  if (failed) {
    MOCK_WARN("%s: a rank did not reach the collective within %.0f s", func_name(func), g->timeout_s);
    return ncclSystemError;
  }
  if (comm->corrupt) ((float*)receive)[0] += 1.0f;
  advance_gpu_clock(mock_true_ns(bytes, &e));
  uint64_t stop = gpu_clock_ns();
  mock_plugins_ran(&comm->plugins, profiled, &e, start, stop > start ? stop : start + 1);
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* receive, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  (void)stream; /* mock streams run everything at once */
  return collective(ncclFuncAllReduce, send, receive, count, datatype, op, comm);
}

ncclResult_t ncclAllGather(const void* send, void* receive, size_t send_count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream) {
  (void)stream;
  return collective(ncclFuncAllGather, send, receive, send_count, datatype, ncclSum, comm);
}

ncclResult_t ncclReduceScatter(const void* send, void* receive, size_t receive_count, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;
  return collective(ncclFuncReduceScatter, send, receive, receive_count, datatype, op, comm);
}
