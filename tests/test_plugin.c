/* tests/test_plugin.c: the built plugin library through its exported ABI symbols only: exported
 * symbols, default and fixed policies, rule pins, getChunkSize, tuner/profiler pairing, logging
 * through NCCL's logger, and fail-open behaviour on bad input. */
#include <dlfcn.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <unistd.h>

#include "../abi/nccl_profiler_abi.h"
#include "../abi/nccl_tuner_abi.h"
#include "test.h"

static void* library;
static const ncclTuner_v2_t* tuner2;
static const ncclTuner_v3_t* tuner3;
static const ncclTuner_v4_t* tuner4;
static const ncclTuner_v5_t* tuner5;
static const ncclTuner_v6_t* tuner6;
static const ncclProfiler_v4_t* profiler4;
static const ncclProfiler_v5_t* profiler5;
static const ncclProfiler_v6_t* profiler6;

/* ---- an NCCL-like logger that records lines ---- */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char logged[1 << 16];
static size_t logged_length;
static int logged_warnings;
static unsigned long logged_flags_union;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)file;
  (void)line;
  char message[2048];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof(message), fmt, args);
  va_end(args);
  pthread_mutex_lock(&log_lock);
  if (level == NCCL_LOG_WARN) logged_warnings++;
  logged_flags_union |= flags;
  size_t n = strlen(message);
  if (logged_length + n + 2 < sizeof(logged)) {
    memcpy(logged + logged_length, message, n);
    logged_length += n;
    logged[logged_length++] = '\n';
    logged[logged_length] = '\0';
  }
  pthread_mutex_unlock(&log_lock);
}
static void log_reset(void) {
  pthread_mutex_lock(&log_lock);
  logged_length = 0;
  logged[0] = '\0';
  logged_warnings = 0;
  logged_flags_union = 0;
  pthread_mutex_unlock(&log_lock);
}
static int count_occurrences(const char* needle) {
  int n = 0;
  for (const char* p = logged; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

static void clear_environment(void) {
  const char* names[] = {"DYNAMICCL_MODE", "DYNAMICCL_TABLE_FILE", "DYNAMICCL_RULES_FILE", "DYNAMICCL_PROFILE",
                         "DYNAMICCL_TRACE_FILE", "DYNAMICCL_EPOCH_CALLS", "NCCL_ALGO", "NCCL_PROTO"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) unsetenv(names[i]);
}

static char temp_dir[64];
static void write_file(const char* name, const char* content, char* path, size_t size) {
  snprintf(path, size, "%s/%s", temp_dir, name);
  FILE* f = fopen(path, "w");
  fputs(content, f);
  fclose(f);
}

/* A cost table as NCCL builds it for AllReduce on 2 nodes: ring and tree with every protocol,
 * NVLS-tree Simple; everything else ignored. */
static void make_cost_table(float* cost) {
  for (int i = 0; i < 21; i++) cost[i] = -1.0f;
  cost[0 * 3 + 0] = 20.0f; /* tree/ll */
  cost[0 * 3 + 1] = 25.0f;
  cost[0 * 3 + 2] = 60.0f;
  cost[1 * 3 + 0] = 30.0f; /* ring/ll */
  cost[1 * 3 + 1] = 35.0f;
  cost[1 * 3 + 2] = 90.0f;
  cost[5 * 3 + 2] = 45.0f; /* nvls_tree/simple */
}

static void* init_v6(uint64_t comm_id, int n_ranks, int n_nodes) {
  void* context = NULL;
  ncclNvlDomainInfo_v5_t domains = {1, 8, 8};
  ncclTunerConstants_v5_t constants;
  memset(&constants, 0, sizeof(constants));
  CHECK_EQ_INT(tuner6->init(&context, comm_id, (size_t)n_ranks, (size_t)n_nodes, logger, &domains, &constants), ncclSuccess);
  return context;
}

static void test_exports_exactly_the_abi(void) {
  CHECK(tuner2 && tuner3 && tuner4 && tuner5 && tuner6 && profiler4 && profiler5 && profiler6);
  const char* hidden[] = {"dccl_tuner_decide", "dccl_registry_attach_tuner", "dccl_event_stop", "dccl_log_write",
                          "ncclProfilerPlugin_v4", "ncclTunerPlugin_v7", "ncclProfiler_v3"};
  for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
    CHECK_MSG(dlsym(library, hidden[i]) == NULL, "%s is exported", hidden[i]);
  CHECK(strcmp(tuner6->name, "DynamICCL") == 0 && strcmp(profiler6->name, "DynamICCL") == 0);
  CHECK(tuner6->getChunkSize != NULL);
}

static void test_default_mode_leaves_everything_untouched(void) {
  clear_environment();
  void* context = init_v6(1, 16, 2);
  CHECK(context != NULL);
  for (size_t bytes = 1; bytes < (1ULL << 34); bytes *= 3) {
    float cost[21], original[21];
    make_cost_table(cost);
    memcpy(original, cost, sizeof(cost));
    int channels = 0;
    for (int coll = 0; coll < 5; coll++) {
      CHECK_EQ_INT(tuner6->getCollInfo(context, (ncclFunc_t)coll, bytes, 1, (float**)cost, 7, 3, 0, &channels), ncclSuccess);
      CHECK(memcmp(cost, original, sizeof(cost)) == 0);
      CHECK_EQ_INT(channels, 0);
    }
  }
  size_t chunk = 12345;
  tuner6->getChunkSize(context, ncclFuncAllReduce, 1 << 20, 1, 2, 8, &chunk);
  CHECK_EQ_INT((int)chunk, 12345);
  CHECK_EQ_INT(tuner6->finalize(context), ncclSuccess);
}

/* A clean environment with DYNAMICCL_MODE=fixed and a table file `name` holding `text`. */
static void use_fixed_table(const char* name, const char* text) {
  clear_environment();
  char path[256];
  write_file(name, text, path, sizeof(path));
  setenv("DYNAMICCL_MODE", "fixed", 1);
  setenv("DYNAMICCL_TABLE_FILE", path, 1);
}

static void test_fixed_mode_applies_table(void) {
  use_fixed_table("fixed.table",
                  "allreduce,0,65535,tree/ll128\n"
                  "allreduce,65536,-1,ring/simple/ch=8/chunk=256K\n"
                  "allreduce,1G,-1,nvls/simple\n"); /* NVLS is ignored in this cost table */
  setenv("DYNAMICCL_EPOCH_CALLS", "1", 1);
  log_reset();
  void* context = init_v6(2, 16, 2);
  CHECK(strstr(logged, "fixed decision table") != NULL);
  float cost[21], original[21];
  int channels = 0;
  make_cost_table(cost);
  memcpy(original, cost, sizeof(cost));
  tuner6->getCollInfo(context, ncclFuncAllReduce, 4096, 1, (float**)cost, 7, 3, 0, &channels);
  CHECK(cost[0 * 3 + 1] == 0.0f);
  for (int i = 0; i < 21; i++)
    if (i != 1) CHECK(cost[i] == original[i]);
  CHECK_EQ_INT(channels, 0);

  make_cost_table(cost);
  channels = 0;
  tuner6->getCollInfo(context, ncclFuncAllReduce, 1 << 20, 1, (float**)cost, 7, 3, 0, &channels);
  CHECK(cost[1 * 3 + 2] == 0.0f);
  CHECK_EQ_INT(channels, 8);
  size_t chunk = 2 << 20;
  tuner6->getChunkSize(context, ncclFuncAllReduce, 1 << 20, 1, 2, 8, &chunk);
  CHECK_EQ_INT((int)chunk, 256 * 1024);
  chunk = 2 << 20; /* NCCL chose something else: leave its chunk alone */
  tuner6->getChunkSize(context, ncclFuncAllReduce, 1 << 20, 0, 2, 8, &chunk);
  CHECK_EQ_INT((int)chunk, 2 << 20);

  /* An action the cost table ignores: NCCL's choice stays, reported once. */
  log_reset();
  for (int i = 0; i < 3; i++) {
    make_cost_table(cost);
    memcpy(original, cost, sizeof(cost));
    channels = 0;
    tuner6->getCollInfo(context, ncclFuncAllReduce, 2ULL << 30, 1, (float**)cost, 7, 3, 0, &channels);
    CHECK(memcmp(cost, original, sizeof(cost)) == 0);
    CHECK_EQ_INT(channels, 0);
  }
  CHECK_EQ_INT(count_occurrences("cannot run allreduce"), 1);
  tuner6->finalize(context);
  clear_environment();
}

/* getCollInfo for a group's AllReduces of 1 MiB and 4 MiB, on the usual cost table. */
static void decide_allreduces_of_1m_and_4m(void* context) {
  for (int i = 0; i < 2; i++) {
    float cost[21];
    int channels = 0;
    make_cost_table(cost);
    tuner6->getCollInfo(context, ncclFuncAllReduce, (size_t)1 << (20 + 2 * i), 1, (float**)cost, 7, 3, 0, &channels);
  }
}

/* NCCL decides every task of a group first (getCollInfo per aggregate), then sizes their chunks
 * (getChunkSize with a channel's share of the bytes): each task gets the chunk of the decision that made
 * NCCL run its (algorithm, protocol), not the group's last decision. */
static void test_chunk_sizes_of_a_group(void) {
  use_fixed_table("group.table",
                  "allreduce,0,2M,ring/simple/chunk=64K\n"
                  "allreduce,2M,64M,ring/simple/chunk=1M\n"
                  "allreduce,64M,-1,tree/simple/chunk=512K\n"
                  "allgather,0,-1,ring/simple/chunk=128K\n");
  setenv("DYNAMICCL_EPOCH_CALLS", "1", 1);
  log_reset();
  void* context = init_v6(3, 16, 2);
  float cost[21];
  int channels = 0;
  /* A group: AllReduce 1 MiB (ring, 64K), AllGather 1 MiB (ring, 128K), AllReduce 128 MiB (tree, 512K). */
  const struct {
    ncclFunc_t coll;
    size_t bytes;
  } group[] = {{ncclFuncAllReduce, 1 << 20}, {ncclFuncAllGather, 1 << 20}, {ncclFuncAllReduce, 128 << 20}};
  for (int i = 0; i < 3; i++) {
    make_cost_table(cost);
    tuner6->getCollInfo(context, group[i].coll, group[i].bytes, 1, (float**)cost, 7, 3, 0, &channels);
  }
  size_t chunk = 4 << 20;
  tuner6->getChunkSize(context, ncclFuncAllReduce, 1 << 17, 1, 2, 1, &chunk); /* ring/simple: the 1 MiB task */
  CHECK_EQ_INT((int)chunk, 64 * 1024);
  chunk = 4 << 20;
  tuner6->getChunkSize(context, ncclFuncAllGather, 1 << 17, 1, 2, 1, &chunk);
  CHECK_EQ_INT((int)chunk, 128 * 1024);
  chunk = 4 << 20;
  tuner6->getChunkSize(context, ncclFuncAllReduce, 1 << 24, 0, 2, 1, &chunk); /* tree/simple: the 128 MiB task */
  CHECK_EQ_INT((int)chunk, 512 * 1024);
  /* The next group: AllReduce 1 MiB and 4 MiB both run ring/Simple but ask for 64K and 1M: which task is
   * which cannot be told apart, so NCCL's chunk stays (and it is said once). */
  decide_allreduces_of_1m_and_4m(context);
  chunk = 4 << 20;
  tuner6->getChunkSize(context, ncclFuncAllReduce, 1 << 17, 1, 2, 1, &chunk);
  CHECK_EQ_INT((int)chunk, 4 << 20);
  CHECK_EQ_INT(count_occurrences("asks for different chunk sizes"), 1);
  /* NCCL's own choice in a group is matched by the pair it picks from its table (tree/LL here): a task
   * running tree/LL keeps NCCL's chunk although a ring/Simple decision of the group asks for one. */
  use_fixed_table("group2.table", "allreduce,0,2M,nccl\nallreduce,2M,-1,ring/simple/chunk=1M\n");
  tuner6->finalize(context);
  context = init_v6(4, 16, 2);
  decide_allreduces_of_1m_and_4m(context);
  chunk = 4 << 20;
  tuner6->getChunkSize(context, ncclFuncAllReduce, 1 << 17, 0, 0, 1, &chunk);
  CHECK_EQ_INT((int)chunk, 4 << 20);
  tuner6->getChunkSize(context, ncclFuncAllReduce, 1 << 17, 1, 2, 1, &chunk);
  CHECK_EQ_INT((int)chunk, 1 << 20);
  tuner6->finalize(context);
  clear_environment();
}

/* A fixed table's `A|B` line: the cell's calls alternate between the two, NCCL's choice included. */
static void test_fixed_mode_alternates(void) {
  use_fixed_table("alternate.table", "allreduce,0,-1,tree/ll128/ch=2|nccl\n");
  void* context = init_v6(2, 16, 2);
  float cost[21], original[21];
  for (int call = 0; call < 8; call++) {
    int channels = 0;
    make_cost_table(cost);
    memcpy(original, cost, sizeof(cost));
    tuner6->getCollInfo(context, ncclFuncAllReduce, 4096, 1, (float**)cost, 7, 3, 0, &channels);
    if (call % 2 == 0) {
      CHECK_MSG(cost[0 * 3 + 1] == 0.0f && channels == 2, "call %d: tree/ll128 on 2 channels expected", call);
    } else {
      CHECK_MSG(memcmp(cost, original, sizeof(cost)) == 0 && channels == 0, "call %d: NCCL's choice expected", call);
    }
  }
  tuner6->finalize(context);
  clear_environment();
}

static void test_rule_pins_override_policy(void) {
  use_fixed_table("pin.table", "allreduce,0,-1,tree/ll\n");
  char rules[256];
  write_file("pins.csv",
             "# NVLS first: ignored in this cost table, so the next matching pin applies\n"
             "allreduce,0,-1,nvls,simple,-1,-1,-1\n"
             "allreduce,1024,8191,ring,ll128,4,2,16\n"
             "allreduce,0,-1,ring,simple,2,4,-1\n", /* other node count: never applies here */
             rules, sizeof(rules));
  setenv("DYNAMICCL_RULES_FILE", rules, 1);
  setenv("DYNAMICCL_EPOCH_CALLS", "1", 1);
  log_reset();
  void* context = init_v6(3, 16, 2);
  CHECK(strstr(logged, "2 of 3 apply") != NULL);
  float cost[21];
  int channels = 0;
  make_cost_table(cost);
  tuner6->getCollInfo(context, ncclFuncAllReduce, 4096, 1, (float**)cost, 7, 3, 0, &channels);
  CHECK(cost[1 * 3 + 1] == 0.0f); /* pinned ring/ll128 */
  CHECK(cost[0 * 3 + 0] == 20.0f); /* the table's tree/ll was overridden */
  CHECK_EQ_INT(channels, 4);
  make_cost_table(cost);
  channels = 0;
  tuner6->getCollInfo(context, ncclFuncAllReduce, 1 << 20, 1, (float**)cost, 7, 3, 0, &channels);
  CHECK(cost[0 * 3 + 0] == 0.0f); /* no pin matches: the table decides */
  tuner6->finalize(context);
  clear_environment();
}

/* v2 (NCCL 2.21) takes the tuner's algorithm and protocol as they come, with no cost table to say what
 * NCCL runs: LL128, which NCCL 2.21 enables by default only on hardware it has tested, runs only where
 * NCCL_PROTO enables it outright, and nothing NCCL_ALGO or NCCL_PROTO excludes runs. */
static int v2_algorithm_of(const char* algo_env, const char* proto_env, int* protocol, int* channels) {
  if (algo_env != NULL) setenv("NCCL_ALGO", algo_env, 1);
  if (proto_env != NULL) setenv("NCCL_PROTO", proto_env, 1);
  void* context = NULL;
  int algorithm = -1;
  *protocol = -1;
  *channels = 0;
  CHECK_EQ_INT(tuner2->init(8, 1, logger, &context), ncclSuccess);
  tuner2->getCollInfo(context, ncclFuncAllReduce, 1 << 20, 0, 1, 1, &algorithm, protocol, channels);
  CHECK_EQ_INT(tuner2->destroy(context), ncclSuccess);
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PROTO");
  return algorithm;
}

static void test_v2_answers_directly(void) {
  use_fixed_table("v2.table", "allreduce,0,-1,ring/ll128/ch=4\nallgather,0,-1,nvls/simple\n");
  setenv("DYNAMICCL_EPOCH_CALLS", "1", 1);
  int protocol, channels;
  CHECK_EQ_INT(v2_algorithm_of(NULL, NULL, &protocol, &channels), -1); /* LL128 gated by NCCL: not given */
  CHECK_EQ_INT(v2_algorithm_of(NULL, "^LL128", &protocol, &channels), -1);
  CHECK_EQ_INT(v2_algorithm_of("^ring", "ll128,simple", &protocol, &channels), -1);
  CHECK_EQ_INT(v2_algorithm_of("Tree,Ring", "LL128,Simple", &protocol, &channels), 1);
  CHECK(protocol == 1 && channels == 4);
  CHECK_EQ_INT(v2_algorithm_of(NULL, "^LL", &protocol, &channels), 1); /* NCCL 2.21: LL128 enabled outright */

  setenv("NCCL_PROTO", "LL128,Simple", 1);
  void* context = NULL;
  CHECK_EQ_INT(tuner2->init(8, 1, logger, &context), ncclSuccess);
  unsetenv("NCCL_PROTO");
  int algorithm = -1;
  protocol = -1;
  channels = 0;
  tuner2->getCollInfo(context, ncclFuncAllReduce, 1 << 20, 0, 1, 1, &algorithm, &protocol, &channels);
  CHECK(algorithm == 1 && protocol == 1 && channels == 4);
  algorithm = protocol = -1;
  channels = 0;
  /* NVLS without NVLS support: leave NCCL's choice. */
  tuner2->getCollInfo(context, ncclFuncAllGather, 1 << 20, 0, 0, 1, &algorithm, &protocol, &channels);
  CHECK(algorithm == -1 && protocol == -1 && channels == 0);
  tuner2->getCollInfo(context, ncclFuncAllReduce, 1 << 20, 0, 1, 1, NULL, NULL, NULL); /* no crash */
  CHECK_EQ_INT(tuner2->destroy(context), ncclSuccess);
  /* v2 is NCCL 2.21's, which has no PAT and runs NVLS across nodes only for AllReduce with CollNet. */
  use_fixed_table("v2-nodes.table", "allgather,0,-1,pat/simple\nreducescatter,0,-1,nvls/simple\n"
                                    "allreduce,0,-1,nvls/simple\n");
  CHECK_EQ_INT(tuner2->init(4, 4, logger, &context), ncclSuccess);
  const struct {
    ncclFunc_t coll;
    int collnet_support, expected;
  } cases[] = {{ncclFuncAllGather, 1, -1}, {ncclFuncReduceScatter, 1, -1}, {ncclFuncAllReduce, 0, -1},
               {ncclFuncAllReduce, 1, 4}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    algorithm = protocol = -1;
    channels = 0;
    tuner2->getCollInfo(context, cases[i].coll, 1 << 20, cases[i].collnet_support, 1, 1, &algorithm, &protocol, &channels);
    CHECK_MSG(algorithm == cases[i].expected, "case %zu: algorithm %d", i, algorithm);
  }
  CHECK_EQ_INT(tuner2->destroy(context), ncclSuccess);
  clear_environment();
}

/* Bad input of every kind: NCCL's choice kept, success returned, one message per kind. */
static void test_bad_input_fails_open(void) {
  use_fixed_table("any.table", "allreduce,0,-1,ring/simple\nallgather,0,-1,ring/simple\n");
  setenv("DYNAMICCL_EPOCH_CALLS", "1", 1);
  log_reset();
  void* context = init_v6(4, 16, 2);
  float cost[21], original[21];
  int channels = 0;
  for (int repeat = 0; repeat < 3; repeat++) {
    /* NaN where our action is */
    make_cost_table(cost);
    cost[1 * 3 + 2] = NAN;
    memcpy(original, cost, sizeof(cost));
    CHECK_EQ_INT(tuner6->getCollInfo(context, ncclFuncAllReduce, 1 << 20, 1, (float**)cost, 7, 3, 0, &channels), ncclSuccess);
    CHECK(isnan(cost[1 * 3 + 2]) && cost[0] == original[0] && channels == 0);
    /* every entry ignored */
    for (int i = 0; i < 21; i++) cost[i] = -1.0f;
    CHECK_EQ_INT(tuner6->getCollInfo(context, ncclFuncAllGather, 1 << 20, 1, (float**)cost, 7, 3, 0, &channels), ncclSuccess);
    for (int i = 0; i < 21; i++) CHECK(cost[i] == -1.0f);
    /* collectives NCCL does not tune through getCollInfo */
    make_cost_table(cost);
    memcpy(original, cost, sizeof(cost));
    CHECK_EQ_INT(tuner6->getCollInfo(context, (ncclFunc_t)7, 1024, 1, (float**)cost, 7, 3, 0, &channels), ncclSuccess);
    CHECK_EQ_INT(tuner6->getCollInfo(context, (ncclFunc_t)-3, 1024, 1, (float**)cost, 7, 3, 0, &channels), ncclSuccess);
    CHECK(memcmp(cost, original, sizeof(cost)) == 0);
    /* missing or absurd table arguments */
    CHECK_EQ_INT(tuner6->getCollInfo(context, ncclFuncAllReduce, 1024, 1, NULL, 7, 3, 0, &channels), ncclSuccess);
    CHECK_EQ_INT(tuner6->getCollInfo(context, ncclFuncAllReduce, 1024, 1, (float**)cost, 7, 3, 0, NULL), ncclSuccess);
    CHECK_EQ_INT(tuner6->getCollInfo(context, ncclFuncAllReduce, 1024, 1, (float**)cost, 0, 3, 0, &channels), ncclSuccess);
    CHECK_EQ_INT(tuner6->getCollInfo(context, ncclFuncAllReduce, 1024, 1, (float**)cost, 7, -1, 0, &channels), ncclSuccess);
    /* smaller tables than NCCL's: our ring/simple entry (1,2) lies outside a 1 x 3 table */
    float small[3] = {5.0f, 6.0f, 7.0f};
    CHECK_EQ_INT(tuner6->getCollInfo(context, ncclFuncAllReduce, 1024, 1, (float**)small, 1, 3, 0, &channels), ncclSuccess);
    CHECK(small[0] == 5.0f && small[1] == 6.0f && small[2] == 7.0f);
    /* sizes at the extremes */
    make_cost_table(cost);
    CHECK_EQ_INT(tuner6->getCollInfo(context, ncclFuncAllReduce, 0, 1, (float**)cost, 7, 3, 0, &channels), ncclSuccess);
    make_cost_table(cost);
    CHECK_EQ_INT(tuner6->getCollInfo(context, ncclFuncAllReduce, SIZE_MAX, 0, (float**)cost, 7, 3, 1, &channels), ncclSuccess);
    CHECK(cost[1 * 3 + 2] == 0.0f);
    size_t chunk = 77;
    CHECK_EQ_INT(tuner6->getChunkSize(context, (ncclFunc_t)9, 10, 1, 2, 1, &chunk), ncclSuccess);
    CHECK_EQ_INT(tuner6->getChunkSize(context, ncclFuncAllReduce, 10, 1, 2, 1, NULL), ncclSuccess);
    CHECK_EQ_INT((int)chunk, 77);
  }
  /* Each kind of problem is reported once, as a warning. */
  CHECK_EQ_INT(count_occurrences("NaN entr"), 1);
  CHECK_EQ_INT(count_occurrences("has no usable entry"), 1);
  CHECK_EQ_INT(count_occurrences("does not tune"), 1);
  CHECK_EQ_INT(count_occurrences("unusable cost table"), 1);
  CHECK(logged_warnings >= 4);
  tuner6->finalize(context);
  /* NULL contexts (a failed init) are harmless everywhere. */
  float untouched[21];
  make_cost_table(untouched);
  CHECK_EQ_INT(tuner6->getCollInfo(NULL, ncclFuncAllReduce, 1, 1, (float**)untouched, 7, 3, 0, &channels), ncclSuccess);
  CHECK_EQ_INT(tuner6->finalize(NULL), ncclSuccess);
  CHECK_EQ_INT(profiler6->finalize(NULL), ncclSuccess);
  clear_environment();
}

static void test_unreadable_or_corrupt_table_falls_back(void) {
  clear_environment();
  char garbage[256];
  write_file("garbage.table", "\x7f" "ELF\x01\x02\x03 not a table at all\nallreduce,,,\n", garbage, sizeof(garbage));
  const char* tables[] = {"/nonexistent/table", garbage};
  for (int t = 0; t < 2; t++) {
    setenv("DYNAMICCL_MODE", "fixed", 1);
    setenv("DYNAMICCL_TABLE_FILE", tables[t], 1);
    log_reset();
    void* context = init_v6(5, 16, 2);
    CHECK(context != NULL);
    CHECK(logged_warnings > 0);
    float cost[21], original[21];
    int channels = 0;
    make_cost_table(cost);
    memcpy(original, cost, sizeof(cost));
    tuner6->getCollInfo(context, ncclFuncAllReduce, 4096, 1, (float**)cost, 7, 3, 0, &channels);
    CHECK(memcmp(cost, original, sizeof(cost)) == 0);
    tuner6->finalize(context);
  }
  clear_environment();
}

static void test_logging_goes_through_nccls_logger(void) {
  clear_environment();
  setenv("DYNAMICCL_MODE", "nonsense", 1);
  log_reset();
  void* context = init_v6(6, 8, 1);
  tuner6->finalize(context);
  CHECK(strstr(logged, "DynamICCL: DYNAMICCL_MODE='nonsense'") != NULL);
  CHECK(strstr(logged, "DynamICCL: tuner v6 attached") != NULL);
  CHECK((logged_flags_union & NCCL_TUNING) != 0);
  clear_environment();
}

/* Profiler events the plugin cannot interpret (a collective it does not know, a datatype name NCCL
 * reports as "Unknown") are counted and described once in the log, with the first one's names. */
static void test_uninterpretable_events_logged_once(void) {
  clear_environment();
  setenv("DYNAMICCL_PROFILE", "on", 1);
  log_reset();
  void* context = NULL;
  int mask = 0;
  profiler6->init(&context, 71, &mask, "unknown", 1, 8, 0, logger);
  for (int i = 0; i < 3; i++) {
    ncclProfilerEventDescr_v6_t d;
    memset(&d, 0, sizeof(d));
    d.type = ncclProfileColl;
    d.coll.seqNumber = (uint64_t)i;
    d.coll.func = i == 0 ? "AlltoAll" : "AllReduce";
    d.coll.count = 1024;
    d.coll.datatype = i == 0 ? "ncclFloat32" : "Unknown";
    d.coll.nChannels = 2;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    void* handle = (void*)1;
    profiler6->startEvent(context, &handle, &d);
    CHECK(handle == NULL);
  }
  profiler6->finalize(context); /* drains: the log line comes from the learner's side */
  CHECK_EQ_INT(count_occurrences("cannot interpret"), 1);
  CHECK(strstr(logged, "the first: AlltoAll of ncclFloat32, algorithm RING, protocol SIMPLE, 2 channels") != NULL);
  CHECK(strstr(logged, "3 not interpreted") != NULL);
  clear_environment();
}

/* ---- pairing ---- */
typedef struct pairing_job {
  int rank;
  int tuner_version;
  uint64_t comm_id;
  char trace[256];
} pairing_job;

static void* rank_init_and_trace(void* argument) {
  pairing_job* job = argument;
  void *profiler_context = NULL, *tuner_context = NULL;
  int mask = 0;
  profiler6->init(&profiler_context, job->comm_id, &mask, "test", 2, 16, job->rank, logger);
  if (job->tuner_version == 4) tuner4->init(16, 2, logger, &tuner_context);
  else tuner_context = init_v6(job->comm_id, 16, 2);
  /* One collective through both halves. */
  float cost[21];
  int channels = 0;
  make_cost_table(cost);
  tuner6->getCollInfo(tuner_context, ncclFuncAllReduce, 4096, 1, (float**)cost, 7, 3, 0, &channels);
  ncclProfilerEventDescr_v6_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileColl;
  d.coll.seqNumber = 0;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 1;
  d.coll.algo = "TREE";
  d.coll.proto = "LL";
  void* coll = NULL;
  profiler6->startEvent(profiler_context, &coll, &d);
  profiler6->stopEvent(coll);
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileKernelCh;
  d.parentObj = coll;
  d.kernelCh.pTimer = 1000;
  void* channel = NULL;
  profiler6->startEvent(profiler_context, &channel, &d);
  ncclProfilerEventStateArgs_v6_t args;
  args.kernelCh.pTimer = 1000 + 1000 * (uint64_t)(job->rank + 1);
  profiler6->recordEventState(channel, NCCL_PROFILER_KERNEL_CH_STOP, &args);
  profiler6->stopEvent(channel);
  if (job->tuner_version == 4) tuner4->destroy(tuner_context);
  else tuner6->finalize(tuner_context);
  profiler6->finalize(profiler_context);
  return NULL;
}

static void test_pairing_by_init_thread(void) {
  clear_environment();
  char pattern[256];
  snprintf(pattern, sizeof(pattern), "%s/trace.%%r.csv", temp_dir);
  setenv("DYNAMICCL_TRACE_FILE", pattern, 1);
  /* Two ranks of one communicator in one process (same commId), tuner v6 and v4, concurrently. */
  for (int version = 4; version <= 6; version += 2) {
    log_reset();
    pairing_job jobs[2] = {{0, version, 77, ""}, {1, version, 77, ""}};
    pthread_t threads[2];
    for (int r = 0; r < 2; r++) pthread_create(&threads[r], NULL, rank_init_and_trace, &jobs[r]);
    for (int r = 0; r < 2; r++) pthread_join(threads[r], NULL);
    CHECK_EQ_INT(count_occurrences("(same init thread)"), 2);
    CHECK(strstr(logged, "rank 0 (same init thread)") != NULL && strstr(logged, "rank 1 (same init thread)") != NULL);
    for (int r = 0; r < 2; r++) {
      char path[300], error[256];
      snprintf(path, sizeof(path), "%s/trace.%d.csv", temp_dir, r);
      FILE* f = fopen(path, "r");
      CHECK_MSG(f != NULL, "%s missing", path);
      if (f == NULL) continue;
      char line[512];
      int lines = 0, duration_ok = 0;
      while (fgets(line, sizeof(line), f)) {
        lines++;
        char expected[64]; /* gpu_start_ns 1000, then this rank's duration, then the call order and host stamps */
        snprintf(expected, sizeof(expected), "allreduce,4096,tree,ll,1,1,1000,%d,0,", 1000 * (r + 1));
        if (strstr(line, expected) != NULL) duration_ok = 1;
      }
      fclose(f);
      (void)error;
      CHECK_EQ_INT(lines, 2);
      CHECK_MSG(duration_ok, "rank %d's trace lacks its own measurement", r);
    }
  }
  clear_environment();
}

typedef struct tuner_init_job {
  uint64_t comm_id;
  void* context;
} tuner_init_job;

static void* tuner_init_thread(void* argument) {
  tuner_init_job* job = argument;
  job->context = init_v6(job->comm_id, 8, 1);
  return NULL;
}

/* A tuner initialised on a thread without a pending profiler context pairs by commId only when exactly
 * one unpaired profiler context has it; with two candidates it runs without measurements. */
static void test_pairing_by_comm_id_or_none(void) {
  clear_environment();
  void *p0 = NULL, *p1 = NULL, *p2 = NULL;
  int mask = 0;
  profiler6->init(&p0, 88, &mask, "a", 1, 8, 0, logger);
  profiler6->init(&p1, 88, &mask, "b", 1, 8, 1, logger);
  profiler6->init(&p2, 99, &mask, "c", 1, 8, 5, logger);
  pthread_t thread;
  tuner_init_job ambiguous = {88, NULL}, unique = {99, NULL};
  log_reset();
  pthread_create(&thread, NULL, tuner_init_thread, &ambiguous);
  pthread_join(thread, NULL);
  CHECK(strstr(logged, "no profiler context to pair with") != NULL);
  log_reset();
  pthread_create(&thread, NULL, tuner_init_thread, &unique);
  pthread_join(thread, NULL);
  CHECK(strstr(logged, "paired with profiler context of rank 5 (commId)") != NULL);
  tuner6->finalize(ambiguous.context);
  tuner6->finalize(unique.context);
  profiler6->finalize(p0);
  profiler6->finalize(p1);
  profiler6->finalize(p2);
  clear_environment();
}

/* Two communicators of one process whose trace files come out of one name (the same rank of each, no %c)
 * write two files, not one truncated and interleaved: the second gets ".<communicator id>"; the name is
 * free again once its communicator ends; %c names each communicator's file. */
static void test_trace_files_of_two_communicators(void) {
  clear_environment();
  char template_path[160], first[160], second[192];
  snprintf(template_path, sizeof(template_path), "%s/trace-%%r.csv", temp_dir);
  snprintf(first, sizeof(first), "%s/trace-0.csv", temp_dir);
  snprintf(second, sizeof(second), "%s/trace-0.csv.%016llx", temp_dir, 72ULL);
  setenv("DYNAMICCL_TRACE_FILE", template_path, 1);
  setenv("DYNAMICCL_PROFILE", "on", 1);
  int mask = 0;
  void *a = NULL, *b = NULL, *c = NULL;
  profiler6->init(&a, 71, &mask, "a", 1, 8, 0, logger);
  profiler6->init(&b, 72, &mask, "b", 1, 8, 0, logger);
  CHECK_MSG(access(first, F_OK) == 0 && access(second, F_OK) == 0, "expected %s and %s", first, second);
  profiler6->finalize(a);
  unlink(first);
  profiler6->init(&c, 73, &mask, "c", 1, 8, 0, logger);
  CHECK_MSG(access(first, F_OK) == 0, "%s not written again once free", first);
  profiler6->finalize(b);
  profiler6->finalize(c);
  unlink(first);
  unlink(second);
  /* Three ranks of one communicator in one process, no %r: three files. */
  snprintf(template_path, sizeof(template_path), "%s/trace-one.csv", temp_dir);
  setenv("DYNAMICCL_TRACE_FILE", template_path, 1);
  void* ranks[3];
  for (int r = 0; r < 3; r++) profiler6->init(&ranks[r], 75, &mask, "e", 1, 8, r, logger);
  char name[224];
  const char* names[3] = {"", ".%016llx", ".%016llx.2"};
  for (int r = 0; r < 3; r++) {
    char suffix[64];
    snprintf(suffix, sizeof(suffix), names[r], 75ULL);
    snprintf(name, sizeof(name), "%s%s", template_path, suffix);
    CHECK_MSG(access(name, F_OK) == 0, "expected %s", name);
    unlink(name);
  }
  for (int r = 0; r < 3; r++) profiler6->finalize(ranks[r]);
  snprintf(template_path, sizeof(template_path), "%s/trace-%%c.csv", temp_dir);
  snprintf(first, sizeof(first), "%s/trace-%016llx.csv", temp_dir, 74ULL);
  setenv("DYNAMICCL_TRACE_FILE", template_path, 1);
  profiler6->init(&a, 74, &mask, "d", 1, 8, 0, logger);
  CHECK_MSG(access(first, F_OK) == 0, "expected %s", first);
  profiler6->finalize(a);
  unlink(first);
  clear_environment();
}

/* NCCL keeps one activation mask for the process and passes it to every profiler init: a communicator
 * that measures nothing must not switch events off for those that do. */
static void test_profiler_mask_is_shared(void) {
  clear_environment();
  int mask = 0;
  void *measuring = NULL, *quiet = NULL;
  setenv("DYNAMICCL_PROFILE", "on", 1);
  setenv("DYNAMICCL_COST", "span", 1); /* kernel spans alone: no call counts, no P2p events */
  /* v5+ also asks for CollApi events (CUDA graph capture); v4 has none. */
  void* older = NULL;
  int older_mask = 0;
  profiler4->init(&older, &older_mask, "older", 60, 1, 8, 0, logger);
  CHECK_EQ_INT(older_mask, ncclProfileColl | ncclProfileKernelCh);
  profiler4->finalize(older);
  profiler6->init(&measuring, 61, &mask, "measuring", 1, 8, 0, logger);
  CHECK_EQ_INT(mask, ncclProfileColl | ncclProfileKernelCh | ncclProfileCollApi);
  setenv("DYNAMICCL_PROFILE", "off", 1);
  profiler6->init(&quiet, 62, &mask, "quiet", 1, 8, 0, logger);
  CHECK_EQ_INT(mask, ncclProfileColl | ncclProfileKernelCh | ncclProfileCollApi);
  profiler6->finalize(quiet);
  profiler6->finalize(measuring);
  /* Charging stream time or leftovers (the default) counts point-to-point calls too: P2p events are
   * asked for then only. */
  for (int cost = 0; cost < 2; cost++) {
    void* counting = NULL;
    int counting_mask = 0;
    setenv("DYNAMICCL_PROFILE", "on", 1);
    if (cost == 0) setenv("DYNAMICCL_COST", "stream", 1);
    else unsetenv("DYNAMICCL_COST");
    profiler6->init(&counting, 64, &counting_mask, "counting", 1, 8, 0, logger);
    CHECK_EQ_INT(counting_mask, ncclProfileColl | ncclProfileKernelCh | ncclProfileP2p | ncclProfileCollApi);
    profiler6->finalize(counting);
  }
  setenv("DYNAMICCL_PROFILE", "off", 1);
  int other = 0x1000; /* bits set by NCCL or a previous init are kept */
  profiler6->init(&quiet, 63, &other, "quiet", 1, 8, 0, logger);
  CHECK_EQ_INT(other, 0x1000);
  profiler6->finalize(quiet);
  clear_environment();
}

/* Rank 0 of a 2-rank communicator (fixed table) whose rank 1 never comes: finalizing it, rank 0's
 * coordination waits up to 2 s for rank 1. Meanwhile this process makes the same communicator again,
 * whose init waits for the old leader's end, and another communicator: that one's init must wait for
 * neither (it did, behind the registry's lock, and in a process hosting several ranks the late rank then
 * found its leader gone and waited for ever). */
typedef struct ending_job {
  void *profiler_context, *tuner_context;
  atomic_int finalizing, finalized;
  atomic_int profiled, initialised; /* the same communicator made again */
} ending_job;

static void* init_leader_again(void* argument) {
  ending_job* job = argument;
  int mask = 0;
  profiler6->init(&job->profiler_context, 0xE4D0, &mask, "again", 1, 2, 0, logger);
  atomic_store(&job->profiled, 1);
  job->tuner_context = init_v6(0xE4D0, 2, 1);
  atomic_store(&job->initialised, 1);
  return NULL;
}

static void* finalize_leader(void* argument) {
  ending_job* job = argument;
  atomic_store(&job->finalizing, 1);
  tuner6->finalize(job->tuner_context);
  profiler6->finalize(job->profiler_context);
  atomic_store(&job->finalized, 1);
  return NULL;
}

static void test_ending_leader_does_not_hold_up_other_communicators(void) {
  use_fixed_table("lead.table", "allreduce,0,-1,ring/simple\n");
  log_reset();
  ending_job job = {NULL, NULL, 0, 0, 0, 0}, again = {NULL, NULL, 0, 0, 0, 0};
  int mask = 0;
  profiler6->init(&job.profiler_context, 0xE4D0, &mask, "ending", 1, 2, 0, logger);
  job.tuner_context = init_v6(0xE4D0, 2, 1);
  CHECK(strstr(logged, "rank 0 leads comm 000000000000e4d0") != NULL && strstr(logged, "its fixed table") != NULL);
  pthread_t finalizer, reinitializer;
  pthread_create(&finalizer, NULL, finalize_leader, &job);
  while (!atomic_load(&job.finalizing)) sched_yield();
  nanosleep(&(struct timespec){0, 200000000}, NULL); /* well into the leader's 2 s wait for rank 1 */
  pthread_create(&reinitializer, NULL, init_leader_again, &again);
  while (!atomic_load(&again.profiled)) sched_yield();
  nanosleep(&(struct timespec){0, 100000000}, NULL); /* its tuner's init waits for the old leader */
  clear_environment();
  void* other = init_v6(0xE4D1, 8, 1);
  CHECK_MSG(!atomic_load(&job.finalized), "a communicator's init waited for another's end");
  CHECK_MSG(!atomic_load(&again.initialised), "a communicator's init waited for another's init");
  tuner6->finalize(other);
  pthread_join(finalizer, NULL);
  pthread_join(reinitializer, NULL);
  CHECK(again.tuner_context != NULL);
  CHECK_EQ_INT(count_occurrences("rank 0 leads comm 000000000000e4d0"), 2); /* the second after the first left */
  finalize_leader(&again);
}

static int threads_left_in_library; /* a hung test's threads: unloading the library would crash them */

typedef struct race_job {
  pthread_barrier_t* start;
  void* context; /* finalized, or initialised, by the thread */
} race_job;

static void* finalize_after_barrier(void* argument) {
  race_job* job = argument;
  pthread_barrier_wait(job->start);
  profiler6->finalize(job->context);
  return NULL;
}

static void* init_after_barrier(void* argument) {
  race_job* job = argument;
  int mask = 0;
  pthread_barrier_wait(job->start);
  profiler6->init(&job->context, 5, &mask, "race", 1, 8, 0, logger);
  return NULL;
}

/* The last communicator finalized on one thread while another initialises one: the finalize stops and
 * joins the background thread while the init starts it. Each must finish (a second worker once started
 * beside the one being stopped, and the join never returned). */
static void test_finalize_races_init(void) {
  clear_environment();
  setenv("DYNAMICCL_PROFILE", "on", 1);
  int mask = 0;
  void* live = NULL;
  profiler6->init(&live, 5, &mask, "race", 1, 8, 0, logger);
  int hung = 0;
  for (int trial = 0; trial < 300 && !hung && live != NULL; trial++) {
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    race_job closing = {&start, live}, opening = {&start, NULL};
    pthread_t finalizer, initializer;
    pthread_create(&finalizer, NULL, finalize_after_barrier, &closing);
    pthread_create(&initializer, NULL, init_after_barrier, &opening);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60; /* a few ms normally; generous for a machine loaded many times over */
    if (pthread_timedjoin_np(initializer, NULL, &deadline) != 0 || pthread_timedjoin_np(finalizer, NULL, &deadline) != 0) {
      CHECK_MSG(0, "trial %d: init or finalize did not return within 60 s", trial);
      hung = 1; /* the threads are left behind, inside the library: it must stay loaded */
      threads_left_in_library = 1;
      break;
    }
    pthread_barrier_destroy(&start);
    live = opening.context;
  }
  if (!hung && live != NULL) profiler6->finalize(live);
  clear_environment();
}

int main(int argc, char** argv) {
  (void)argc;
  char self[1024];
  snprintf(self, sizeof(self), "%s", argv[0]);
  char path[1100];
  snprintf(path, sizeof(path), "%s/../libnccl-tuner-dynamiccl.so", dirname(self));
  library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    printf("0 passed, 1 failed\n");
    return 1;
  }
  tuner2 = dlsym(library, "ncclTunerPlugin_v2");
  tuner3 = dlsym(library, "ncclTunerPlugin_v3");
  tuner4 = dlsym(library, "ncclTunerPlugin_v4");
  tuner5 = dlsym(library, "ncclTunerPlugin_v5");
  tuner6 = dlsym(library, "ncclTunerPlugin_v6");
  profiler4 = dlsym(library, "ncclProfiler_v4");
  profiler5 = dlsym(library, "ncclProfiler_v5");
  profiler6 = dlsym(library, "ncclProfiler_v6");
  snprintf(temp_dir, sizeof(temp_dir), "/tmp/dccl-plugin-XXXXXX");
  if (mkdtemp(temp_dir) == NULL) return 1;

  RUN(test_exports_exactly_the_abi);
  RUN(test_default_mode_leaves_everything_untouched);
  RUN(test_fixed_mode_applies_table);
  RUN(test_fixed_mode_alternates);
  RUN(test_chunk_sizes_of_a_group);
  RUN(test_rule_pins_override_policy);
  RUN(test_v2_answers_directly);
  RUN(test_bad_input_fails_open);
  RUN(test_unreadable_or_corrupt_table_falls_back);
  RUN(test_logging_goes_through_nccls_logger);
  RUN(test_uninterpretable_events_logged_once);
  RUN(test_pairing_by_init_thread);
  RUN(test_pairing_by_comm_id_or_none);
  RUN(test_profiler_mask_is_shared);
  RUN(test_trace_files_of_two_communicators);
  RUN(test_ending_leader_does_not_hold_up_other_communicators);
  RUN(test_finalize_races_init);
  if (!threads_left_in_library) dlclose(library);
  char command[128];
  snprintf(command, sizeof(command), "rm -rf %s", temp_dir);
  if (system(command) != 0) fprintf(stderr, "could not remove %s\n", temp_dir);
  TEST_SUMMARY();
}
