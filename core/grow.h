/* core/grow.h: growing an array by doubling, up to a cap (the coordination service's tables and buffers
 * of records, the leader's history). */
#ifndef DYNAMICCL_CORE_GROW_H
#define DYNAMICCL_CORE_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* Makes room for `needed` elements of `size` bytes in `*array` of `*capacity` (16 when it is empty),
 * doubling, at most `max`. 0, or -1 when `needed` exceeds `max` or memory is out (the array unchanged). */
static inline int dccl_grow_array(void** array, uint32_t* capacity, uint32_t needed, uint32_t max, size_t size) {
  if (needed <= *capacity) return 0;
  if (needed > max) return -1;
  uint32_t grown = *capacity > 0 ? *capacity : 16;
  while (grown < needed) grown = grown > max / 2 ? max : 2 * grown;
  void* bigger = realloc(*array, (size_t)grown * size);
  if (bigger == NULL) return -1;
  *array = bigger;
  *capacity = grown;
  return 0;
}

#endif
