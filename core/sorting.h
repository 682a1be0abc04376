/* core/sorting.h: ascending sort of doubles, for the medians and percentiles the emulator, the CLI and
 * the benchmarks report. */
#ifndef DCCL_CORE_SORTING_H
#define DCCL_CORE_SORTING_H

#include <stddef.h>
#include <stdlib.h>

static inline int dccl_compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static inline void dccl_sort_doubles(double* values, size_t n) { qsort(values, n, sizeof(double), dccl_compare_doubles); }

#endif
