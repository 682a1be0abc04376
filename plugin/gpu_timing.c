/* plugin/gpu_timing.c: the running averages of kernel spans and of the GPU's idle gaps between kernels. */
#include "gpu_timing.h"

#define TIMING_WEIGHT 64 /* a new kernel weighs 1/64 */

void dccl_gpu_timing_note(dccl_gpu_timing* t, const dccl_measurement* m) {
  uint64_t end = m->gpu_start_ns + m->duration_ns;
  if (t->last_end_ns != 0 && m->gpu_start_ns > t->last_end_ns) {
    double gap_us = (double)(m->gpu_start_ns - t->last_end_ns) / 1000.0;
    t->gap_average_us += (gap_us - t->gap_average_us) / TIMING_WEIGHT;
  } else if (t->last_end_ns != 0) {
    t->gap_average_us += (0 - t->gap_average_us) / TIMING_WEIGHT;
  }
  t->duration_average_us += ((double)m->duration_ns / 1000.0 - t->duration_average_us) / TIMING_WEIGHT;
  if (end > t->last_end_ns) t->last_end_ns = end;
}
