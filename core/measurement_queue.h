/* core/measurement_queue.h: a bounded lock-free multi-producer multi-consumer queue of measurements
 * (Vyukov's sequence-numbered ring). Push never blocks: on a full queue it fails and the caller
 * counts a drop. Storage is allocated once at init; push and pop never allocate. */
#ifndef DYNAMICCL_CORE_MEASUREMENT_QUEUE_H
#define DYNAMICCL_CORE_MEASUREMENT_QUEUE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "measurement.h"

typedef struct dccl_queue_cell {
  _Atomic size_t sequence;
  dccl_measurement value;
} dccl_queue_cell;

typedef struct dccl_measurement_queue {
  dccl_queue_cell* cells;
  size_t mask;
  _Alignas(64) _Atomic size_t head; /* next push */
  _Alignas(64) _Atomic size_t tail; /* next pop */
  _Alignas(64) _Atomic uint64_t dropped;
} dccl_measurement_queue;

/* capacity: a power of two >= 2. Returns 0, or -1 when out of memory. */
int dccl_queue_init(dccl_measurement_queue* queue, size_t capacity);
void dccl_queue_free(dccl_measurement_queue* queue);
/* Returns 1 when queued, 0 when full (the drop is counted). */
int dccl_queue_push(dccl_measurement_queue* queue, const dccl_measurement* value);
/* Returns 1 and fills `out` when an element was taken, 0 when empty. */
int dccl_queue_pop(dccl_measurement_queue* queue, dccl_measurement* out);
/* Elements queued or being pushed (an estimate while producers run). */
static inline size_t dccl_queue_backlog(dccl_measurement_queue* queue) {
  size_t head = atomic_load_explicit(&queue->head, memory_order_relaxed);
  size_t tail = atomic_load_explicit(&queue->tail, memory_order_relaxed);
  return head > tail ? head - tail : 0;
}

#endif
