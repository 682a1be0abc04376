/* core/clock.h: the clocks DynamICCL reads: monotonic wall time and the calling thread's CPU time. */
#ifndef DYNAMICCL_CORE_CLOCK_H
#define DYNAMICCL_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t dccl_monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static inline double dccl_monotonic_seconds(void) { return 1e-9 * (double)dccl_monotonic_ns(); }

static inline uint64_t dccl_thread_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

#endif
