/* plugin/event_pool.h: turns NCCL profiler events into one measurement per collective.
 *
 * Each communicator owns a fixed pool of records, one per collective in flight. A Coll start takes
 * the next record (round robin) and remembers the collective; every KernelCh start/stop pair folds
 * its GPU stamps into the record (earliest start, latest stop); when the Coll stop and every channel
 * stop have arrived, whichever thread saw the last one pushes the measurement to the queue and frees
 * the record. Nothing allocates and nothing locks.
 *
 * Handles given to NCCL are not pointers but integers: (generation, communicator slot, record index,
 * kind). An event whose generation no longer matches its record (late, duplicated, or after the
 * record was recycled) is counted and ignored. A stop that passed that check just before its record was
 * recycled cannot count against the next collective's parts (the count carries the generation); a
 * channel event in that window could still move the next collective's stamps (it takes a whole round of
 * the pool inside it: not seen, not guarded). A record
 * still busy when the allocator comes round to it again (its kernel never reported) is abandoned:
 * its generation moves on, and it is reused only on the following round.
 *
 * CUDA graphs (NCCL 2.28+, profiler v5 and v6): NCCL starts a CollApi event as each collective is
 * enqueued, telling whether the stream is being captured. A captured call's handle is the pool's graph
 * handle, a constant that names no record (its stop is ignored). NCCL keeps it in the captured task and
 * passes it as the parent of the Coll event of every replay of the graph. A replay is not measured: it
 * was decided at capture and has no call of its own for the learner to join it with. It is counted, and
 * as NCCL counts it in the collective's seqNumber, a measurement's seq leaves out the replays before it,
 * so that the learner's join (by seqNumber) sees eager calls only. */
#ifndef DYNAMICCL_PLUGIN_EVENT_POOL_H
#define DYNAMICCL_PLUGIN_EVENT_POOL_H

#include <stdatomic.h>
#include <stdint.h>

#include "../core/measurement_queue.h"
#include "../core/types.h"

#define DCCL_MAX_COMM_SLOTS 4096
#define DCCL_MAX_EVENT_POOL 65536

typedef struct dccl_event_record {
  _Atomic uint64_t tag;        /* generation << 32 | state: every transition checks both at once */
  _Atomic uint64_t parts_left; /* generation << 32 | parts left (Coll stop + one per expected channel): a
                                  stop that passed its generation check just before the record was recycled
                                  cannot count against the next collective's parts */
  _Atomic uint32_t channels_measured;
  _Atomic uint64_t first_start;
  _Atomic uint64_t last_stop;
  uint64_t seq, bytes;
  uint8_t coll, algo, proto, channels, datatype;
} __attribute__((aligned(64))) dccl_event_record;

/* A record's host-side stamps, in an array beside the records that only a pool with host stamps has
 * (the records stay one cache line each). */
typedef struct dccl_event_stamps {
  uint64_t call_order, host_launch_ns;
} dccl_event_stamps;

typedef struct dccl_event_counters {
  _Atomic uint64_t collectives;     /* Coll events accepted */
  _Atomic uint64_t measured;        /* measurements pushed to the queue */
  _Atomic uint64_t pool_busy;       /* Coll events not tracked because the record was still busy */
  _Atomic uint64_t abandoned;       /* records recycled without all their channel events */
  _Atomic uint64_t stale_events;    /* events with an old generation, ignored */
  _Atomic uint64_t unusable;        /* collectives without usable stamps (no channel, stop < start) */
  _Atomic uint64_t unknown_events;  /* Coll events we could not interpret (unknown names) */
  _Atomic uint64_t graph_replays;   /* Coll events of CUDA-graph replays, not measured */
} dccl_event_counters;

typedef struct dccl_event_pool {
  dccl_event_record* records;
  uint32_t mask;
  uint32_t comm_slot;
  int n_ranks;
  _Atomic uint64_t next_record;
  /* Where something reads them (DYNAMICCL_COST=leftover or stream, a trace), one per record: calls are
   * counted and measurements get host stamps (a monotonic clock read at each Coll start, and one when
   * the record's last event ends it: its last channel stop, as NCCL stops the Coll event at launch).
   * NULL: call_order and the stamps stay 0. */
  dccl_event_stamps* stamps;
  /* With stamps, the calls the profiler saw start: Coll events (interpreted or not) and P2p events. A
   * measurement's call_order is its place in this count. */
  _Atomic uint64_t calls_started;
  dccl_measurement_queue* queue;
  dccl_event_counters counters;
  /* Per collective, the graph replays NCCL counted in its seqNumber before the next Coll event. */
  _Atomic uint64_t graph_replays_of[DCCL_NUM_COLLS];
  /* The first Coll event that could not be interpreted, described once for the log (by the learner's
   * side: unknown_ready is set after the description is written). */
  _Atomic int unknown_claimed, unknown_ready;
  char unknown_description[160];
} dccl_event_pool;

/* A Coll descriptor, version-neutral (each ABI shim fills it from its own descriptor). */
typedef struct dccl_coll_event {
  uint64_t seq;
  const char* func;
  size_t count;
  const char* datatype;
  uint8_t channels;
  const char* algo;
  const char* proto;
  int from_graph; /* its parent is dccl_event_graph_handle: a replay of a graph-captured call */
} dccl_coll_event;

/* capacity: power of two in [2, DCCL_MAX_EVENT_POOL]; comm_slot < DCCL_MAX_COMM_SLOTS; host_stamps: count
 * calls and stamp measurements (see `stamps`). */
int dccl_event_pool_init(dccl_event_pool* pool, uint32_t capacity, uint32_t comm_slot, int n_ranks,
                         dccl_measurement_queue* queue, int host_stamps);
void dccl_event_pool_free(dccl_event_pool* pool);

/* The handle given to NCCL for a collective enqueued while its stream is captured into a CUDA graph:
 * never NULL, never a record's; dccl_event_stop ignores it. */
static inline void* dccl_event_graph_handle(const dccl_event_pool* pool) {
  return (void*)(uintptr_t)(((uint64_t)1 << 29) | ((uint64_t)pool->comm_slot << 17));
}

/* Event entry points (hot path). Handles are NULL when the event is not tracked. */
void* dccl_event_coll_start(dccl_event_pool* pool, const dccl_coll_event* event);
/* A point-to-point call started (not measured: counted, with host stamps, so that the calls around it
 * are not taken for neighbours). */
void dccl_event_other_call(dccl_event_pool* pool);
void* dccl_event_channel_start(dccl_event_pool* pool, void* parent_handle, uint64_t gpu_start_ns);
/* The two below find the pool from the handle (NCCL does not pass the context). */
void dccl_event_channel_stop_time(void* handle, uint64_t gpu_stop_ns);
void dccl_event_stop(void* handle);

/* The pool a communicator slot owns, registered by the plugin (lock-free lookup for handles). */
void dccl_event_pool_register(uint32_t comm_slot, dccl_event_pool* pool);
void dccl_event_pool_unregister(uint32_t comm_slot);

#endif
