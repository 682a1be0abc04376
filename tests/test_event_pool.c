/* tests/test_event_pool.c: profiler event assembly: one measurement per collective from its
 * channel stamps, whatever the order of events and threads; stale, foreign and extra events are
 * ignored; a pool that wraps abandons stuck records instead of corrupting live ones; a CUDA graph's
 * replays are counted, not measured, and leave the eager calls' seqNumbers in step. */
#include <pthread.h>

#include "../core/types.h"
#include "../plugin/event_pool.h"
#include "test.h"

static dccl_measurement_queue queue;
static dccl_event_pool pool;

static void setup_stamped(uint32_t capacity, int host_stamps) {
  dccl_queue_init(&queue, 1024);
  dccl_event_pool_init(&pool, capacity, 7, 8, &queue, host_stamps);
  dccl_event_pool_register(7, &pool);
}
static void setup(uint32_t capacity) { setup_stamped(capacity, 0); }
static void teardown(void) {
  dccl_event_pool_unregister(7);
  dccl_event_pool_free(&pool);
  dccl_queue_free(&queue);
}

static dccl_coll_event allreduce(uint64_t seq, int channels) {
  dccl_coll_event e = {seq, "AllReduce", 1024, "ncclFloat32", (uint8_t)channels, "RING", "LL128", 0};
  return e;
}

static void test_one_collective(void) {
  setup(64);
  dccl_coll_event e = allreduce(42, 3);
  void* coll = dccl_event_coll_start(&pool, &e);
  CHECK(coll != NULL);
  dccl_event_stop(coll); /* NCCL stops the Coll event before the kernel runs */
  uint64_t starts[3] = {1000, 1010, 990}, stops[3] = {5000, 5200, 5100};
  void* ch[3];
  for (int c = 0; c < 3; c++) ch[c] = dccl_event_channel_start(&pool, coll, starts[c]);
  for (int c = 2; c >= 0; c--) {
    dccl_event_channel_stop_time(ch[c], stops[c]);
    dccl_event_stop(ch[c]);
  }
  dccl_measurement m;
  CHECK(dccl_queue_pop(&queue, &m));
  CHECK_EQ_INT((int)m.seq, 42);
  CHECK_EQ_INT((int)m.bytes, 4096);
  CHECK_EQ_INT((int)m.duration_ns, 5200 - 990);
  CHECK_EQ_INT((int)m.gpu_start_ns, 990);
  CHECK_EQ_INT(m.coll, DCCL_COLL_ALLREDUCE);
  CHECK_EQ_INT(m.algo, DCCL_ALGO_RING);
  CHECK_EQ_INT(m.proto, DCCL_PROTO_LL128);
  CHECK_EQ_INT(m.channels, 3);
  CHECK_EQ_INT(m.channels_measured, 3);
  CHECK_EQ_INT(m.datatype, dccl_datatype_index("ncclFloat32"));
  CHECK(!dccl_queue_pop(&queue, &m));
  /* Events after completion (late duplicates) are ignored and counted. */
  dccl_event_stop(ch[0]);
  dccl_event_stop(coll);
  CHECK(atomic_load(&pool.counters.stale_events) >= 2);
  CHECK(!dccl_queue_pop(&queue, &m));
  teardown();
}

/* Where asked for, each measurement carries its call's place among the communicator's calls
 * (collectives, unreadable ones and point-to-point calls alike) and host stamps: its launch, then its
 * last channel stop. */
static void test_call_order_and_host_stamps(void) {
  setup_stamped(64, 1);
  dccl_coll_event bad = {1, "AllToAll", 1024, "ncclFloat32", 1, "RING", "SIMPLE", 0};
  CHECK(dccl_event_coll_start(&pool, &bad) == NULL); /* call 0: not readable, still counted */
  dccl_event_other_call(&pool);                       /* call 1: a point-to-point call */
  for (int k = 0; k < 2; k++) {                       /* calls 2 and 3 */
    dccl_coll_event e = allreduce(10 + (uint64_t)k, 2);
    void* coll = dccl_event_coll_start(&pool, &e);
    CHECK(coll != NULL);
    dccl_event_stop(coll);
    for (int c = 0; c < 2; c++) {
      void* ch = dccl_event_channel_start(&pool, coll, 1000);
      dccl_event_channel_stop_time(ch, 2000);
      dccl_event_stop(ch);
    }
  }
  dccl_measurement m[2];
  for (int k = 0; k < 2; k++) {
    CHECK(dccl_queue_pop(&queue, &m[k]));
    CHECK_EQ_INT((int)m[k].call_order, 2 + k);
    CHECK(m[k].host_launch_ns != 0 && m[k].host_done_ns >= m[k].host_launch_ns);
  }
  CHECK(m[1].host_launch_ns >= m[0].host_done_ns); /* launched after the first one's kernel was seen ending */
  CHECK_EQ_INT((int)atomic_load(&pool.calls_started), 4);
  teardown();
  /* Without host stamps (nothing reads them), neither the clock is read nor calls counted. */
  setup(64);
  dccl_event_other_call(&pool);
  for (int k = 0; k < 2; k++) {
    dccl_coll_event e = allreduce(5 + (uint64_t)k, 1);
    void* coll = dccl_event_coll_start(&pool, &e);
    dccl_event_stop(coll);
    void* ch = dccl_event_channel_start(&pool, coll, 1000);
    dccl_event_channel_stop_time(ch, 2000);
    dccl_event_stop(ch);
    dccl_measurement plain;
    CHECK(dccl_queue_pop(&queue, &plain));
    CHECK(plain.call_order == 0 && plain.host_launch_ns == 0 && plain.host_done_ns == 0);
  }
  CHECK_EQ_INT((int)atomic_load(&pool.calls_started), 0);
  teardown();
}

static void test_allgather_bytes_count_all_ranks(void) {
  setup(64);
  dccl_coll_event e = {1, "AllGather", 100, "ncclBfloat16", 1, "RING", "SIMPLE", 0};
  void* coll = dccl_event_coll_start(&pool, &e);
  void* ch = dccl_event_channel_start(&pool, coll, 10);
  dccl_event_channel_stop_time(ch, 20);
  dccl_event_stop(ch);
  dccl_event_stop(coll); /* here the Coll stop comes last */
  dccl_measurement m;
  CHECK(dccl_queue_pop(&queue, &m));
  CHECK_EQ_INT((int)m.bytes, 100 * 2 * 8);
  teardown();
}

static void test_unknown_and_foreign_events(void) {
  setup(64);
  dccl_coll_event bad = {1, "AlltoAll", 10, "ncclFloat32", 2, "RING", "SIMPLE", 0};
  CHECK(dccl_event_coll_start(&pool, &bad) == NULL);
  dccl_coll_event no_channels = allreduce(2, 0);
  CHECK(dccl_event_coll_start(&pool, &no_channels) == NULL);
  dccl_coll_event bad_type = {3, "AllReduce", 10, "float", 2, "RING", "SIMPLE", 0};
  CHECK(dccl_event_coll_start(&pool, &bad_type) == NULL);
  CHECK_EQ_INT((int)atomic_load(&pool.counters.unknown_events), 3);
  /* The first one is described for the plugin's one log line. */
  CHECK(atomic_load(&pool.unknown_ready) == 1);
  CHECK_MSG(strcmp(pool.unknown_description, "AlltoAll of ncclFloat32, algorithm RING, protocol SIMPLE, 2 channels") == 0,
            "%s", pool.unknown_description);
  /* Handles that are not ours must never be dereferenced. */
  int local;
  CHECK(dccl_event_channel_start(&pool, &local, 5) == NULL);
  CHECK(dccl_event_channel_start(&pool, NULL, 5) == NULL);
  dccl_event_stop((void*)(uintptr_t)0xDEADBEEF00000001ULL);
  dccl_event_channel_stop_time((void*)(uintptr_t)0x1234, 99);
  dccl_event_stop(NULL);
  dccl_measurement m;
  CHECK(!dccl_queue_pop(&queue, &m));
  teardown();
}

/* The handle a graph-captured CollApi event gets names no record: stopping it changes nothing and
 * counts nothing, and no other pool's handle equals it. A Coll event under it (a replay of the graph)
 * gets no record and is counted, also in the call order; NCCL counts it in the seqNumber, which the
 * measurements of the eager calls after it leave out. */
static void test_graph_replays_counted_not_measured(void) {
  setup_stamped(64, 1);
  void* graph = dccl_event_graph_handle(&pool);
  CHECK(graph != NULL);
  dccl_event_pool other;
  dccl_measurement_queue other_queue;
  dccl_queue_init(&other_queue, 16);
  CHECK(dccl_event_pool_init(&other, 64, 8, 8, &other_queue, 0) == 0);
  CHECK(dccl_event_graph_handle(&other) != graph);
  dccl_event_pool_free(&other);
  dccl_queue_free(&other_queue);
  dccl_event_stop(graph);
  CHECK(dccl_event_channel_start(&pool, graph, 5) == NULL);
  CHECK_EQ_INT((int)atomic_load(&pool.counters.stale_events), 0);
  /* Eager calls 0, 1, then three replays (NCCL's seqNumbers 2, 3, 4), then eager calls 2, 3. */
  uint64_t nccl_seq = 100;
  int replay_pattern[7] = {0, 0, 1, 1, 1, 0, 0};
  for (int k = 0; k < 7; k++) {
    dccl_coll_event e = allreduce(nccl_seq++, 1);
    e.from_graph = replay_pattern[k];
    void* coll = dccl_event_coll_start(&pool, &e);
    CHECK((coll == NULL) == (replay_pattern[k] == 1));
    if (coll == NULL) continue;
    dccl_event_stop(coll);
    void* ch = dccl_event_channel_start(&pool, coll, 100);
    dccl_event_channel_stop_time(ch, 300);
    dccl_event_stop(ch);
  }
  CHECK_EQ_INT((int)atomic_load(&pool.counters.graph_replays), 3);
  dccl_measurement m[4];
  for (int k = 0; k < 4; k++) CHECK(dccl_queue_pop(&queue, &m[k]));
  CHECK(!dccl_queue_pop(&queue, &m[0]));
  for (int k = 0; k < 4; k++) CHECK_EQ_INT((int)m[k].seq, 100 + k);
  CHECK_EQ_INT((int)m[2].call_order, 5); /* the replays were calls on the stream */
  teardown();
}

static void test_unusable_stamps_dropped(void) {
  setup(64);
  dccl_coll_event e = allreduce(9, 1);
  void* coll = dccl_event_coll_start(&pool, &e);
  void* ch = dccl_event_channel_start(&pool, coll, 500);
  dccl_event_channel_stop_time(ch, 400); /* stop before start */
  dccl_event_stop(ch);
  dccl_event_stop(coll);
  dccl_measurement m;
  CHECK(!dccl_queue_pop(&queue, &m));
  CHECK_EQ_INT((int)atomic_load(&pool.counters.unusable), 1);
  teardown();
}

/* Collectives whose kernels never report: after a full round the allocator abandons them; their late
 * events are then stale, and fresh collectives keep being measured correctly. */
static void test_wraparound_abandons_stuck_records(void) {
  setup(4);
  void* stuck[4];
  for (int i = 0; i < 4; i++) {
    dccl_coll_event e = allreduce((uint64_t)i, 1);
    stuck[i] = dccl_event_coll_start(&pool, &e);
    dccl_event_stop(stuck[i]);
  }
  /* The next round finds every record busy: untracked, and each record abandoned. */
  for (int i = 0; i < 4; i++) {
    dccl_coll_event e = allreduce(100 + (uint64_t)i, 1);
    CHECK(dccl_event_coll_start(&pool, &e) == NULL);
  }
  CHECK_EQ_INT((int)atomic_load(&pool.counters.abandoned), 4);
  /* The late kernel of an abandoned collective is ignored. */
  CHECK(dccl_event_channel_start(&pool, stuck[0], 1) == NULL);
  /* The round after, records are reused and measured. */
  dccl_coll_event e = allreduce(200, 1);
  void* coll = dccl_event_coll_start(&pool, &e);
  CHECK(coll != NULL);
  void* ch = dccl_event_channel_start(&pool, coll, 1000);
  dccl_event_channel_stop_time(ch, 3000);
  dccl_event_stop(ch);
  dccl_event_stop(coll);
  dccl_measurement m;
  CHECK(dccl_queue_pop(&queue, &m));
  CHECK_EQ_INT((int)m.seq, 200);
  CHECK_EQ_INT((int)m.duration_ns, 2000);
  teardown();
}

/* A host thread starts collectives while a proxy thread reports their channels, as in NCCL. */
#define COLLECTIVES 20000
typedef struct pipeline {
  void* handles[COLLECTIVES];
  _Atomic int published;
  _Atomic int reported; /* collectives whose channels the proxy has reported */
} pipeline;
static pipeline line;

static void* proxy(void* unused) {
  (void)unused;
  for (int i = 0; i < COLLECTIVES; i++) {
    while (atomic_load_explicit(&line.published, memory_order_acquire) <= i) {
    }
    void* coll = line.handles[i];
    if (coll == NULL) continue;
    for (int c = 0; c < 4; c++) {
      void* ch = dccl_event_channel_start(&pool, coll, (uint64_t)i * 10000 + (uint64_t)c);
      dccl_event_channel_stop_time(ch, (uint64_t)i * 10000 + 5000 + (uint64_t)c);
      dccl_event_stop(ch);
    }
    atomic_store_explicit(&line.reported, i + 1, memory_order_release);
  }
  return NULL;
}

static void test_host_and_proxy_threads(void) {
  setup(256);
  pthread_t thread;
  pthread_create(&thread, NULL, proxy, NULL);
  uint64_t measured = 0, wrong = 0;
  dccl_measurement m;
  for (int i = 0; i < COLLECTIVES; i++) {
    /* The GPU queue bounds how far the host runs ahead (128 kernels here, below the pool's 256). */
    while (i - atomic_load_explicit(&line.reported, memory_order_acquire) >= 128) {
    }
    dccl_coll_event e = allreduce((uint64_t)i, 4);
    line.handles[i] = dccl_event_coll_start(&pool, &e);
    dccl_event_stop(line.handles[i]);
    atomic_store_explicit(&line.published, i + 1, memory_order_release);
    while (dccl_queue_pop(&queue, &m)) {
      measured++;
      if (m.duration_ns != 5003 || m.channels_measured != 4) wrong++;
    }
  }
  pthread_join(thread, NULL);
  while (dccl_queue_pop(&queue, &m)) {
    measured++;
    if (m.duration_ns != 5003 || m.channels_measured != 4) wrong++;
  }
  CHECK_EQ_INT((int)wrong, 0);
  /* Within the pool's reach every collective is measured, exactly once. */
  CHECK_EQ_INT((int)measured, COLLECTIVES);
  CHECK_EQ_INT((int)atomic_load(&pool.counters.pool_busy), 0);
  teardown();
}

/* A host far ahead of its kernels: collectives are measured, abandoned or untracked, and the counters
 * account for every one of them. */
static void test_accounting_when_host_runs_ahead(void) {
  setup(64);
  atomic_store(&line.published, 0);
  atomic_store(&line.reported, 0);
  pthread_t thread;
  pthread_create(&thread, NULL, proxy, NULL);
  for (int i = 0; i < COLLECTIVES; i++) {
    dccl_coll_event e = allreduce((uint64_t)i, 4);
    line.handles[i] = dccl_event_coll_start(&pool, &e);
    dccl_event_stop(line.handles[i]);
    atomic_store_explicit(&line.published, i + 1, memory_order_release);
  }
  pthread_join(thread, NULL);
  uint64_t measured = 0;
  dccl_measurement m;
  while (dccl_queue_pop(&queue, &m)) measured++;
  dccl_event_counters* c = &pool.counters;
  uint64_t accounted = measured + atomic_load(&c->pool_busy) + atomic_load(&c->abandoned) + atomic_load(&queue.dropped) +
                       atomic_load(&c->unusable);
  /* Records still busy at the end (never completed, never recycled) are the only remainder. */
  CHECK_MSG(accounted <= COLLECTIVES && COLLECTIVES - accounted <= 64, "accounted %llu of %d",
            (unsigned long long)accounted, COLLECTIVES);
  CHECK(measured > 0);
  teardown();
}

/* A stop checks its record's generation (decode_handle), then counts down its parts: if the record was
 * abandoned and taken by another collective in between, the stop must not count against the new one's
 * parts (it would complete it before its last channel). Here the window is forced by handing the record's
 * parts to the next generation after the check's state, as a Coll start would. */
static void test_stop_of_a_recycled_record_does_not_count(void) {
  setup(4);
  dccl_coll_event e = allreduce(5, 1);
  void* coll = dccl_event_coll_start(&pool, &e);
  CHECK(coll != NULL);
  void* channel = dccl_event_channel_start(&pool, coll, 1000);
  dccl_event_channel_stop_time(channel, 2000);
  dccl_event_record* record = &pool.records[0];
  uint64_t parts = atomic_load(&record->parts_left);
  CHECK_EQ_INT((int)(uint32_t)parts, 2);
  uint64_t next_generation = ((parts >> 32) + 1) << 32;
  atomic_store(&record->parts_left, next_generation | 2u);
  dccl_event_stop(channel);
  dccl_event_stop(coll);
  CHECK(atomic_load(&record->parts_left) == (next_generation | 2u));
  dccl_measurement m;
  CHECK(!dccl_queue_pop(&queue, &m));
  /* Its own parts back, the same stops complete it. */
  atomic_store(&record->parts_left, parts);
  dccl_event_stop(channel);
  dccl_event_stop(coll);
  CHECK(dccl_queue_pop(&queue, &m));
  CHECK_EQ_INT((int)m.duration_ns, 1000);
  teardown();
}

int main(void) {
  RUN(test_one_collective);
  RUN(test_call_order_and_host_stamps);
  RUN(test_allgather_bytes_count_all_ranks);
  RUN(test_unknown_and_foreign_events);
  RUN(test_graph_replays_counted_not_measured);
  RUN(test_unusable_stamps_dropped);
  RUN(test_wraparound_abandons_stuck_records);
  RUN(test_host_and_proxy_threads);
  RUN(test_accounting_when_host_runs_ahead);
  RUN(test_stop_of_a_recycled_record_does_not_count);
  TEST_SUMMARY();
}
