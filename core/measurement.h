/* core/measurement.h: one measured collective, as the profiler half hands it to the learner. */
#ifndef DYNAMICCL_CORE_MEASUREMENT_H
#define DYNAMICCL_CORE_MEASUREMENT_H

#include <stdint.h>

typedef struct dccl_measurement {
  uint64_t seq;          /* NCCL's per-communicator, per-collective sequence number, less the CUDA-graph
                            replays before it (plugin/event_pool.h) */
  uint64_t bytes;        /* bytes as getCollInfo saw them (AllGather/ReduceScatter: total) */
  uint64_t gpu_start_ns; /* first channel start, GPU globaltimer */
  uint64_t duration_ns;  /* last channel stop minus first channel start */
  /* Host-side stamps, 0 where unknown (simulated measurements): which call of the communicator this
   * was (its count of collective and point-to-point calls the profiler saw start, from 0), when NCCL
   * launched it (its Coll start) and when its last channel stop reached the profiler (NCCL's proxy
   * seeing the kernel end), CLOCK_MONOTONIC. The learner uses them to tell whether the next call was
   * already waiting when this one's kernel ended (plugin/learner.c). */
  uint64_t call_order;
  uint64_t host_launch_ns, host_done_ns;
  uint8_t coll, algo, proto;
  uint8_t channels;      /* channels NCCL ran it on */
  uint8_t channels_measured;
  uint8_t datatype;      /* dccl_datatype_index of the profiler's name */
  uint8_t reserved[2];
} dccl_measurement;

#endif
