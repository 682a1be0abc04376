/* core/measurement.h: one measured collective, as the profiler half hands it to the learner. */
#ifndef DYNAMICCL_CORE_MEASUREMENT_H
#define DYNAMICCL_CORE_MEASUREMENT_H

#include <stdint.h>

typedef struct dccl_measurement {
  uint64_t seq;          /* NCCL's per-communicator, per-collective sequence number */
  uint64_t bytes;        /* bytes as getCollInfo saw them (AllGather/ReduceScatter: total) */
  uint64_t gpu_start_ns; /* first channel start, GPU globaltimer */
  uint64_t duration_ns;  /* last channel stop minus first channel start */
  uint8_t coll, algo, proto;
  uint8_t channels;      /* channels NCCL ran it on */
  uint8_t channels_measured;
  uint8_t reserved[3];
} dccl_measurement;

#endif
