/* plugin/gpu_timing.h: running averages of the GPU's kernel spans and of its idle time between kernels,
 * over every measured kernel, learned or not (a skipped call's span is not a gap). The learner takes its
 * compute-intensity estimate from them and gives Agent-1 the gap average (plugin/learner.c);
 * bench/bench_trigger_trace does the same on a GPU trace. No allocation. */
#ifndef DYNAMICCL_PLUGIN_GPU_TIMING_H
#define DYNAMICCL_PLUGIN_GPU_TIMING_H

#include <stdint.h>

#include "../core/measurement.h"

typedef struct dccl_gpu_timing {
  uint64_t last_end_ns;       /* the latest kernel end seen (0: none yet) */
  double gap_average_us;      /* idle time before a kernel (0 where kernels overlap), weight 1/64 */
  double duration_average_us; /* kernel spans, weight 1/64 */
} dccl_gpu_timing;

/* One measured kernel; a zeroed dccl_gpu_timing is the start. */
void dccl_gpu_timing_note(dccl_gpu_timing* timing, const dccl_measurement* m);

#endif
