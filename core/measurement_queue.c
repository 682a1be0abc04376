/* core/measurement_queue.c: Vyukov's bounded MPMC ring of measurements, drop-on-full. */
#include "measurement_queue.h"

#include <stdlib.h>

int dccl_queue_init(dccl_measurement_queue* queue, size_t capacity) {
  if (capacity < 2 || (capacity & (capacity - 1)) != 0) return -1;
  queue->cells = calloc(capacity, sizeof(dccl_queue_cell));
  if (queue->cells == NULL) return -1;
  for (size_t i = 0; i < capacity; i++) atomic_init(&queue->cells[i].sequence, i);
  queue->mask = capacity - 1;
  atomic_init(&queue->head, 0);
  atomic_init(&queue->tail, 0);
  atomic_init(&queue->dropped, 0);
  return 0;
}

void dccl_queue_free(dccl_measurement_queue* queue) {
  free(queue->cells);
  queue->cells = NULL;
}

int dccl_queue_push(dccl_measurement_queue* queue, const dccl_measurement* value) {
  size_t position = atomic_load_explicit(&queue->head, memory_order_relaxed);
  for (;;) {
    dccl_queue_cell* cell = &queue->cells[position & queue->mask];
    size_t sequence = atomic_load_explicit(&cell->sequence, memory_order_acquire);
    intptr_t difference = (intptr_t)sequence - (intptr_t)position;
    if (difference == 0) {
      if (atomic_compare_exchange_weak_explicit(&queue->head, &position, position + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        cell->value = *value;
        atomic_store_explicit(&cell->sequence, position + 1, memory_order_release);
        return 1;
      }
    } else if (difference < 0) {
      atomic_fetch_add_explicit(&queue->dropped, 1, memory_order_relaxed);
      return 0;
    } else {
      position = atomic_load_explicit(&queue->head, memory_order_relaxed);
    }
  }
}

int dccl_queue_pop(dccl_measurement_queue* queue, dccl_measurement* out) {
  size_t position = atomic_load_explicit(&queue->tail, memory_order_relaxed);
  for (;;) {
    dccl_queue_cell* cell = &queue->cells[position & queue->mask];
    size_t sequence = atomic_load_explicit(&cell->sequence, memory_order_acquire);
    intptr_t difference = (intptr_t)sequence - (intptr_t)(position + 1);
    if (difference == 0) {
      if (atomic_compare_exchange_weak_explicit(&queue->tail, &position, position + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        *out = cell->value;
        atomic_store_explicit(&cell->sequence, position + queue->mask + 1, memory_order_release);
        return 1;
      }
    } else if (difference < 0) {
      return 0;
    } else {
      position = atomic_load_explicit(&queue->tail, memory_order_relaxed);
    }
  }
}
