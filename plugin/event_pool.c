/* plugin/event_pool.c: assembles per-collective GPU durations from profiler events, lock-free. */
#include "event_pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/clock.h"
#include "../core/types.h"

_Static_assert(sizeof(void*) == 8, "event handles pack 64 bits into a pointer");
_Static_assert(sizeof(dccl_event_record) == 64, "a record is one cache line");

/* A record's life: free -> busy (Coll start) -> completing (last part seen, measurement being pushed)
 * -> free; or busy -> abandoned (a full round passed without completion) -> reused next round. Each
 * transition out of busy is one compare-and-swap, so a collective is either measured or abandoned,
 * never both. */
enum { record_free = 0, record_busy = 1, record_abandoned = 2, record_completing = 3, record_preparing = 4 };

static inline uint64_t make_tag(uint32_t generation, uint32_t state) { return ((uint64_t)generation << 32) | state; }
static inline uint32_t tag_generation(uint64_t tag) { return (uint32_t)(tag >> 32); }
static inline uint32_t tag_state(uint64_t tag) { return (uint32_t)tag; }
enum { kind_coll = 0, kind_channel = 1 };

static _Atomic(dccl_event_pool*) pools_by_slot[DCCL_MAX_COMM_SLOTS];

void dccl_event_pool_register(uint32_t comm_slot, dccl_event_pool* pool) {
  if (comm_slot < DCCL_MAX_COMM_SLOTS) atomic_store_explicit(&pools_by_slot[comm_slot], pool, memory_order_release);
}
void dccl_event_pool_unregister(uint32_t comm_slot) {
  if (comm_slot < DCCL_MAX_COMM_SLOTS) atomic_store_explicit(&pools_by_slot[comm_slot], NULL, memory_order_release);
}

static inline void* make_handle(uint32_t generation, uint32_t slot, uint32_t index, int kind) {
  uint64_t value = ((uint64_t)generation << 32) | ((uint64_t)slot << 17) | ((uint64_t)index << 1) | (uint64_t)kind;
  return (void*)(uintptr_t)value;
}

typedef struct decoded_handle {
  dccl_event_pool* pool;
  dccl_event_record* record;
  uint32_t generation;
  int kind;
} decoded_handle;

/* Resolves a handle; returns 0 when it does not name a live record of ours (a graph handle, with bit 29
 * set, never does). */
static inline int decode_handle(void* handle, decoded_handle* out) {
  uint64_t value = (uint64_t)(uintptr_t)handle;
  uint32_t slot = (uint32_t)(value >> 17) & 0xFFFu, index = (uint32_t)(value >> 1) & 0xFFFFu;
  out->kind = (int)(value & 1u);
  out->generation = (uint32_t)(value >> 32);
  if (handle == NULL || slot >= DCCL_MAX_COMM_SLOTS || ((value >> 29) & 0x7u) != 0) return 0;
  out->pool = atomic_load_explicit(&pools_by_slot[slot], memory_order_acquire);
  if (out->pool == NULL || index > out->pool->mask) return 0;
  out->record = &out->pool->records[index];
  if (atomic_load_explicit(&out->record->tag, memory_order_acquire) != make_tag(out->generation, record_busy)) {
    atomic_fetch_add_explicit(&out->pool->counters.stale_events, 1, memory_order_relaxed);
    return 0;
  }
  return 1;
}

int dccl_event_pool_init(dccl_event_pool* pool, uint32_t capacity, uint32_t comm_slot, int n_ranks,
                         dccl_measurement_queue* queue, int host_stamps) {
  memset(pool, 0, sizeof(*pool));
  if (capacity < 2 || capacity > DCCL_MAX_EVENT_POOL || (capacity & (capacity - 1)) != 0 ||
      comm_slot >= DCCL_MAX_COMM_SLOTS)
    return -1;
  pool->records = aligned_alloc(64, capacity * sizeof(dccl_event_record));
  if (pool->records == NULL) return -1;
  if (host_stamps && (pool->stamps = calloc(capacity, sizeof(dccl_event_stamps))) == NULL) {
    free(pool->records);
    pool->records = NULL;
    return -1;
  }
  memset(pool->records, 0, capacity * sizeof(dccl_event_record));
  for (uint32_t i = 0; i < capacity; i++) atomic_init(&pool->records[i].tag, make_tag(1, record_free));
  pool->mask = capacity - 1;
  pool->comm_slot = comm_slot;
  pool->n_ranks = n_ranks;
  pool->queue = queue;
  return 0;
}

void dccl_event_pool_free(dccl_event_pool* pool) {
  free(pool->records);
  free(pool->stamps);
  pool->records = NULL;
  pool->stamps = NULL;
}

/* Fast decoders for the constant strings NCCL passes (ncclFuncToString and friends). */
static inline int parse_func(const char* s) {
  if (s == NULL) return -1;
  switch (s[0]) {
  case 'A':
    if (strcmp(s, "AllReduce") == 0) return DCCL_COLL_ALLREDUCE;
    if (strcmp(s, "AllGather") == 0) return DCCL_COLL_ALLGATHER;
    return -1;
  case 'R':
    if (strcmp(s, "ReduceScatter") == 0) return DCCL_COLL_REDUCESCATTER;
    if (strcmp(s, "Reduce") == 0) return DCCL_COLL_REDUCE;
    return -1;
  case 'B': return strcmp(s, "Broadcast") == 0 ? DCCL_COLL_BROADCAST : -1;
  default: return -1;
  }
}
static inline int parse_algo(const char* s) {
  if (s == NULL) return -1;
  switch (s[0]) {
  case 'R': return strcmp(s, "RING") == 0 ? DCCL_ALGO_RING : -1;
  case 'T': return strcmp(s, "TREE") == 0 ? DCCL_ALGO_TREE : -1;
  case 'P': return strcmp(s, "PAT") == 0 ? DCCL_ALGO_PAT : -1;
  case 'N':
    if (strcmp(s, "NVLS") == 0) return DCCL_ALGO_NVLS;
    return strcmp(s, "NVLS_TREE") == 0 ? DCCL_ALGO_NVLS_TREE : -1;
  case 'C':
    if (strcmp(s, "COLLNET_DIRECT") == 0) return DCCL_ALGO_COLLNET_DIRECT;
    return strcmp(s, "COLLNET_CHAIN") == 0 ? DCCL_ALGO_COLLNET_CHAIN : -1;
  default: return -1;
  }
}
static inline int parse_proto(const char* s) {
  if (s == NULL) return -1;
  if (strcmp(s, "SIMPLE") == 0) return DCCL_PROTO_SIMPLE;
  if (strcmp(s, "LL128") == 0) return DCCL_PROTO_LL128;
  if (strcmp(s, "LL") == 0) return DCCL_PROTO_LL;
  return -1;
}

void dccl_event_other_call(dccl_event_pool* pool) {
  if (pool->stamps != NULL) atomic_fetch_add_explicit(&pool->calls_started, 1, memory_order_relaxed);
}

void* dccl_event_coll_start(dccl_event_pool* pool, const dccl_coll_event* event) {
  uint64_t call_order = pool->stamps != NULL ? atomic_fetch_add_explicit(&pool->calls_started, 1, memory_order_relaxed) : 0;
  int coll = parse_func(event->func), algo = parse_algo(event->algo), proto = parse_proto(event->proto);
  int datatype = dccl_datatype_index(event->datatype);
  if (coll < 0 || algo < 0 || proto < 0 || datatype < 0 || event->channels == 0) {
    atomic_fetch_add_explicit(&pool->counters.unknown_events, 1, memory_order_relaxed);
    if (!atomic_exchange_explicit(&pool->unknown_claimed, 1, memory_order_relaxed)) {
      snprintf(pool->unknown_description, sizeof(pool->unknown_description),
               "%.24s of %.24s, algorithm %.24s, protocol %.24s, %u channels", event->func ? event->func : "(null)",
               event->datatype ? event->datatype : "(null)", event->algo ? event->algo : "(null)",
               event->proto ? event->proto : "(null)", (unsigned)event->channels);
      atomic_store_explicit(&pool->unknown_ready, 1, memory_order_release);
    }
    return NULL;
  }
  if (event->from_graph) {
    /* NCCL counts it in the seqNumber right after this call returns. */
    atomic_fetch_add_explicit(&pool->graph_replays_of[coll], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->counters.graph_replays, 1, memory_order_relaxed);
    return NULL;
  }
  uint64_t replays_before = atomic_load_explicit(&pool->graph_replays_of[coll], memory_order_relaxed);
  uint64_t ticket = atomic_fetch_add_explicit(&pool->next_record, 1, memory_order_relaxed);
  uint32_t index = (uint32_t)(ticket & pool->mask);
  dccl_event_record* record = &pool->records[index];
  uint64_t tag = atomic_load_explicit(&record->tag, memory_order_acquire);
  uint32_t state = tag_state(tag), generation = tag_generation(tag) + 1;
  if (generation == 0) generation = 1; /* 0 never names a live record */
  if (state == record_busy) {
    /* A whole round of collectives went by without this one completing: give it up. Late events
     * for it now carry an old generation; the record is reused on the next round. */
    if (atomic_compare_exchange_strong_explicit(&record->tag, &tag, make_tag(generation, record_abandoned),
                                                memory_order_acq_rel, memory_order_acquire))
      atomic_fetch_add_explicit(&pool->counters.abandoned, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->counters.pool_busy, 1, memory_order_relaxed);
    return NULL;
  }
  if ((state != record_free && state != record_abandoned) ||
      !atomic_compare_exchange_strong_explicit(&record->tag, &tag, make_tag(generation, record_preparing),
                                               memory_order_acq_rel, memory_order_acquire)) {
    /* Being completed this very moment, or taken by a concurrent Coll start. */
    atomic_fetch_add_explicit(&pool->counters.pool_busy, 1, memory_order_relaxed);
    return NULL;
  }
  record->seq = event->seq - replays_before;
  if (pool->stamps != NULL) {
    dccl_event_stamps* stamps = &pool->stamps[index];
    stamps->call_order = call_order;
    stamps->host_launch_ns = dccl_monotonic_ns();
  }
  record->bytes = dccl_coll_bytes(coll, event->count, dccl_datatype_bytes(datatype), pool->n_ranks);
  record->datatype = (uint8_t)datatype;
  record->coll = (uint8_t)coll;
  record->algo = (uint8_t)algo;
  record->proto = (uint8_t)proto;
  record->channels = event->channels;
  atomic_store_explicit(&record->parts_left, (uint64_t)generation << 32 | (1u + event->channels), memory_order_relaxed);
  atomic_store_explicit(&record->channels_measured, 0, memory_order_relaxed);
  atomic_store_explicit(&record->first_start, UINT64_MAX, memory_order_relaxed);
  atomic_store_explicit(&record->last_stop, 0, memory_order_relaxed);
  atomic_store_explicit(&record->tag, make_tag(generation, record_busy), memory_order_release);
  atomic_fetch_add_explicit(&pool->counters.collectives, 1, memory_order_relaxed);
  return make_handle(generation, pool->comm_slot, index, kind_coll);
}

void* dccl_event_channel_start(dccl_event_pool* pool, void* parent_handle, uint64_t gpu_start_ns) {
  decoded_handle parent;
  if (!decode_handle(parent_handle, &parent) || parent.kind != kind_coll || parent.pool != pool) return NULL;
  uint64_t current = atomic_load_explicit(&parent.record->first_start, memory_order_relaxed);
  while (gpu_start_ns < current &&
         !atomic_compare_exchange_weak_explicit(&parent.record->first_start, &current, gpu_start_ns,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
  uint32_t index = (uint32_t)(parent.record - pool->records);
  return make_handle(parent.generation, pool->comm_slot, index, kind_channel);
}

void dccl_event_channel_stop_time(void* handle, uint64_t gpu_stop_ns) {
  decoded_handle h;
  if (!decode_handle(handle, &h) || h.kind != kind_channel) return;
  uint64_t current = atomic_load_explicit(&h.record->last_stop, memory_order_relaxed);
  while (gpu_stop_ns > current &&
         !atomic_compare_exchange_weak_explicit(&h.record->last_stop, &current, gpu_stop_ns, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
  atomic_fetch_add_explicit(&h.record->channels_measured, 1, memory_order_relaxed);
}

static void complete(dccl_event_pool* pool, dccl_event_record* record, uint32_t generation) {
  uint64_t start = atomic_load_explicit(&record->first_start, memory_order_relaxed);
  uint64_t stop = atomic_load_explicit(&record->last_stop, memory_order_relaxed);
  uint32_t measured = atomic_load_explicit(&record->channels_measured, memory_order_relaxed);
  if (measured == 0 || start == UINT64_MAX || stop <= start) {
    atomic_fetch_add_explicit(&pool->counters.unusable, 1, memory_order_relaxed);
  } else {
    dccl_measurement m = {.seq = record->seq,
                          .bytes = record->bytes,
                          .gpu_start_ns = start,
                          .duration_ns = stop - start,
                          .coll = record->coll,
                          .algo = record->algo,
                          .proto = record->proto,
                          .channels = record->channels,
                          .datatype = record->datatype,
                          .channels_measured = (uint8_t)(measured > 255 ? 255 : measured)};
    if (pool->stamps != NULL) {
      dccl_event_stamps* stamps = &pool->stamps[record - pool->records];
      m.call_order = stamps->call_order;
      m.host_launch_ns = stamps->host_launch_ns;
      m.host_done_ns = dccl_monotonic_ns(); /* its last event, normally its last channel stop, ended it */
    }
    if (dccl_queue_push(pool->queue, &m)) atomic_fetch_add_explicit(&pool->counters.measured, 1, memory_order_relaxed);
  }
  atomic_store_explicit(&record->tag, make_tag(generation, record_free), memory_order_release);
}

void dccl_event_stop(void* handle) {
  decoded_handle h;
  if (!decode_handle(handle, &h)) return;
  uint64_t parts = atomic_load_explicit(&h.record->parts_left, memory_order_relaxed);
  for (;;) {
    /* Another collective's parts (the record was recycled since decode_handle checked it), or more stops
     * than expected parts: ignore it. */
    if ((uint32_t)(parts >> 32) != h.generation || (uint32_t)parts == 0) return;
    if (atomic_compare_exchange_weak_explicit(&h.record->parts_left, &parts, parts - 1, memory_order_acq_rel,
                                              memory_order_relaxed))
      break;
  }
  if ((uint32_t)parts == 1) {
    /* Last part: claim completion exclusively (an abandonment may race with us), then publish. */
    uint64_t expected = make_tag(h.generation, record_busy);
    if (atomic_compare_exchange_strong_explicit(&h.record->tag, &expected, make_tag(h.generation, record_completing),
                                                memory_order_acq_rel, memory_order_acquire))
      complete(h.pool, h.record, h.generation);
  }
}
