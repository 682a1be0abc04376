/* bench/bench_hotpath.c: cost of the plugin's hot paths called through its exported ABI symbols:
 * getCollInfo (default policy, fixed table, fixed table with rule pins) and profiler event
 * ingestion; and of the decision-table store at one call per epoch, without and with a coordination
 * bell (the sequentially consistent store a coordinated communicator pays at each epoch). Calls are timed in batches of 64 so the clock's own cost (~20 ns) is amortised; the
 * figures are the median and 99th percentile over batches of the per-call (or per-event) time.
 * Usage: bench_hotpath [batches]   (default 100000) */
#include <dlfcn.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../abi/nccl_profiler_abi.h"
#include "../abi/nccl_tuner_abi.h"
#include "../core/clock.h"
#include "../core/decision_table.h"
#include "../core/sorting.h"

#define BATCH 64

static const ncclTuner_v6_t* tuner;
static const ncclProfiler_v6_t* profiler;

static void quiet_logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)level;
  (void)flags;
  (void)file;
  (void)line;
  (void)fmt;
}

static void report(const char* what, double* per_item, int n) {
  dccl_sort_doubles(per_item, (size_t)n);
  printf("  %-44s median %6.1f ns   p99 %6.1f ns\n", what, per_item[n / 2], per_item[(int)(0.99 * (n - 1))]);
}

/* Inputs of 64 calls: mixed collectives and sizes, each with its own fresh cost table. */
typedef struct batch_inputs {
  int coll[BATCH];
  size_t bytes[BATCH];
  float cost[BATCH][21];
} batch_inputs;

static void prepare(batch_inputs* in, unsigned seed) {
  for (int i = 0; i < BATCH; i++) {
    seed = seed * 1103515245u + 12345u;
    in->coll[i] = (int)((seed >> 16) % 5);
    in->bytes[i] = (size_t)1 << (10 + (seed >> 8) % 20);
    for (int k = 0; k < 21; k++) in->cost[i][k] = -1.0f;
    for (int p = 0; p < 3; p++) {
      in->cost[i][0 * 3 + p] = 10.0f + (float)p; /* tree */
      in->cost[i][1 * 3 + p] = 12.0f + (float)p; /* ring */
    }
  }
}

static void bench_get_coll_info(const char* label, int batches, int learning) {
  void* context = NULL;
  void* profiler_context = NULL;
  int mask = 0;
  /* Learning: a profiler half first (as NCCL does), which the tuner half pairs with. */
  if (learning) profiler->init(&profiler_context, 0xBE7C4, &mask, "bench", 2, 16, 0, quiet_logger);
  ncclNvlDomainInfo_v5_t domains = {1, 8, 8};
  ncclTunerConstants_v5_t constants;
  memset(&constants, 0, sizeof(constants));
  tuner->init(&context, 0xBE7C4, 16, 2, quiet_logger, &domains, &constants);
  static batch_inputs inputs;
  double* per_call = malloc((size_t)batches * sizeof(double));
  int channels = 0;
  for (int b = 0; b < batches; b++) {
    prepare(&inputs, (unsigned)b);
    uint64_t start = dccl_monotonic_ns();
    for (int i = 0; i < BATCH; i++)
      tuner->getCollInfo(context, (ncclFunc_t)inputs.coll[i], inputs.bytes[i], 1, (float**)inputs.cost[i], 7, 3, 0,
                         &channels);
    per_call[b] = (double)(dccl_monotonic_ns() - start) / BATCH;
  }
  report(label, per_call, batches);
  free(per_call);
  tuner->finalize(context);
  if (learning) profiler->finalize(profiler_context);
}

/* The profiler half's context and the events a batch feeds it. */
typedef struct profiler_batch {
  void* context;
  ncclProfilerEventDescr_v6_t coll, channel, p2p;
  ncclProfilerEventStateArgs_v6_t stop;
  uint64_t clock;
} profiler_batch;

/* BATCH / 4 collectives, each Coll start + stop, then per channel start, stop stamp, stop: 2 + 4 * 3 events. */
enum { COLL_EVENTS_PER_BATCH = BATCH / 4 * (2 + 4 * 3) };
static void run_coll_batch(profiler_batch* p) {
  for (int c = 0; c < BATCH / 4; c++) {
    void* handle = NULL;
    p->coll.coll.seqNumber++;
    profiler->startEvent(p->context, &handle, &p->coll);
    profiler->stopEvent(handle);
    for (int ch = 0; ch < 4; ch++) {
      void* h = NULL;
      p->channel.parentObj = handle;
      p->channel.kernelCh.channelId = (uint8_t)ch;
      p->channel.kernelCh.pTimer = p->clock;
      profiler->startEvent(p->context, &h, &p->channel);
      p->stop.kernelCh.pTimer = p->clock + 5000;
      profiler->recordEventState(h, NCCL_PROFILER_KERNEL_CH_STOP, &p->stop);
      profiler->stopEvent(h);
    }
    p->clock += 6000;
  }
}

/* Point-to-point calls (requested with host stamps: DYNAMICCL_COST stream or leftover) only move the call
 * order; NCCL gets no handle, so no child events. BATCH calls of start + stop. */
enum { P2P_EVENTS_PER_BATCH = 2 * BATCH };
static void run_p2p_batch(profiler_batch* p) {
  for (int i = 0; i < BATCH; i++) {
    void* handle = NULL;
    profiler->startEvent(p->context, &handle, &p->p2p);
    profiler->stopEvent(handle);
  }
}

/* Times `batches` runs of a batch and reports the time per event. */
static void time_event_batches(const char* label, void (*run)(profiler_batch*), profiler_batch* p, int events,
                               int batches) {
  double* per_event = malloc((size_t)batches * sizeof(double));
  if (per_event == NULL) return;
  for (int b = 0; b < batches; b++) {
    uint64_t start = dccl_monotonic_ns();
    run(p);
    per_event[b] = (double)(dccl_monotonic_ns() - start) / events;
  }
  report(label, per_event, batches);
  free(per_event);
}

static void bench_profiler_events(int batches) {
  static profiler_batch p;
  int mask = 0;
  setenv("DYNAMICCL_PROFILE", "on", 1);
  profiler->init(&p.context, 0xBE7C5, &mask, "bench", 2, 16, 0, quiet_logger);
  p.coll.type = ncclProfileColl;
  p.coll.coll.func = "AllReduce";
  p.coll.coll.count = 262144;
  p.coll.coll.datatype = "ncclFloat32";
  p.coll.coll.nChannels = 4;
  p.coll.coll.algo = "RING";
  p.coll.coll.proto = "SIMPLE";
  p.channel.type = ncclProfileKernelCh;
  p.clock = 1000;
  p.p2p.type = ncclProfileP2p;
  p.p2p.p2p.func = "Send";
  p.p2p.p2p.count = 262144;
  p.p2p.p2p.datatype = "ncclFloat32";
  p.p2p.p2p.peer = 1;
  p.p2p.p2p.nChannels = 2;
  time_event_batches("profiler event (Coll + 4 KernelCh, per event)", run_coll_batch, &p, COLL_EVENTS_PER_BATCH, batches);
  time_event_batches("profiler event (P2p, per event)", run_p2p_batch, &p, P2P_EVENTS_PER_BATCH, batches);
  profiler->finalize(p.context);
  unsetenv("DYNAMICCL_PROFILE");
}

static void bell_never_rung(void* context) { (void)context; }

/* The store getCollInfo reads, at one call per epoch (DYNAMICCL_EPOCH_CALLS=1, where every call
 * enters an epoch): without a bell (no coordination, a frozen leader) and with one that is not armed
 * (a learning leader's or a worker's store while its coordination thread polls). */
static void bench_store_epochs(int batches) {
  static dccl_table_store store;
  double* per_call = malloc((size_t)batches * sizeof(double));
  if (per_call == NULL) return;
  for (int bell = 0; bell < 2; bell++) {
    dccl_table_store_init(&store, 1);
    if (bell) dccl_table_store_set_bell(&store, bell_never_rung, NULL);
    uint64_t call = 0;
    uintptr_t sink = 0;
    for (int b = 0; b < batches; b++) {
      uint64_t start = dccl_monotonic_ns();
      for (int i = 0; i < BATCH; i++) sink += (uintptr_t)dccl_table_store_for_call(&store, call++);
      per_call[b] = (double)(dccl_monotonic_ns() - start) / BATCH;
    }
    if (sink == 0) printf("(no table)\n");
    report(bell ? "store, an epoch per call, with a bell" : "store, an epoch per call, no bell", per_call, batches);
  }
  free(per_call);
}

int main(int argc, char** argv) {
  int batches = argc > 1 ? atoi(argv[1]) : 100000;
  if (batches < 100) batches = 100;
  char self[1024], path[1100];
  snprintf(self, sizeof(self), "%s", argv[0]);
  snprintf(path, sizeof(path), "%s/../libnccl-tuner-dynamiccl.so", dirname(self));
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    return 1;
  }
  tuner = dlsym(library, "ncclTunerPlugin_v6");
  profiler = dlsym(library, "ncclProfiler_v6");
  char dir[] = "/tmp/dccl-bench-XXXXXX", table[128], rules[128];
  if (mkdtemp(dir) == NULL) return 1;
  snprintf(table, sizeof(table), "%s/bench.table", dir);
  snprintf(rules, sizeof(rules), "%s/bench.rules", dir);
  FILE* f = fopen(table, "w");
  for (int c = 0; c < 5; c++) {
    const char* names[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
    fprintf(f, "%s,0,65535,ring/ll/ch=4\n%s,65536,-1,ring/simple/ch=16/chunk=512K\n", names[c], names[c]);
    if (c == 4) fprintf(f, "allreduce,0,16383,tree/ll\n");
  }
  fclose(f);
  f = fopen(rules, "w");
  fprintf(f, "allreduce,0,4096,tree,ll,-1,-1,-1\nallgather,1048576,4194304,ring,simple,8,-1,-1\n"
             "reducescatter,0,-1,ring,ll128,-1,4,-1\nbroadcast,1000,100000,ring,ll,2,-1,-1,1\n");
  fclose(f);

  printf("DynamICCL hot-path cost, %d batches of %d calls, through the exported ABI symbols\n", batches, BATCH);
  unsetenv("DYNAMICCL_MODE");
  bench_get_coll_info("getCollInfo, default policy", batches, 0);
  setenv("DYNAMICCL_MODE", "fixed", 1);
  setenv("DYNAMICCL_TABLE_FILE", table, 1);
  bench_get_coll_info("getCollInfo, fixed table", batches, 0);
  setenv("DYNAMICCL_RULES_FILE", rules, 1);
  bench_get_coll_info("getCollInfo, fixed table + 4 rule pins", batches, 0);
  unsetenv("DYNAMICCL_RULES_FILE");
  setenv("DYNAMICCL_MODE", "learn", 1);
  setenv("DYNAMICCL_COORD", "solo", 1);
  bench_get_coll_info("getCollInfo, learn mode (learner running)", batches, 1);
  unsetenv("DYNAMICCL_COORD");
  unsetenv("DYNAMICCL_MODE");
  unsetenv("DYNAMICCL_TABLE_FILE");
  bench_profiler_events(batches / 4 > 100 ? batches / 4 : 100);
  bench_store_epochs(batches);
  unlink(table);
  unlink(rules);
  rmdir(dir);
  dlclose(library);
  return 0;
}
