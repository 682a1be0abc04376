/* sim/truth.h: how long a collective "really" takes on a simulated machine, as opposed to what
 * NCCL's alpha-beta model predicts.
 *
 * The model follows the structure of NCCL's kernels and AutoCCL's performance model:
 *  - data moves in pipeline steps; each step pays a protocol synchronisation cost (LL/LL128 flag
 *    polling is cheap, Simple's memory fences are not; network steps cost more than NVLink steps);
 *  - bandwidth is min(per-channel protocol throughput x channels, link capacity / congestion), the
 *    beta = min(beta0(NC, C), beta1(NC, NT)) of AutoCCL: more channels help until the link saturates,
 *    and bytes in flight (channels x chunk) beyond what the fabric buffers cause a congestion slowdown,
 *    so throughput is unimodal in channels and in chunk size;
 *  - LL carries 4 data bytes per 8, LL128 120 per 128: flags cost link bandwidth;
 *  - ring, tree, PAT, NVLS and CollNet have their own step counts, depths and volumes;
 *  - compute interference takes SM throughput (more so the more channels NCCL occupies) and memory
 *    bandwidth; network congestion takes network bandwidth, buffer headroom and step latency, and
 *    hurts LL128's large flagged lines most.
 * Calibration notes and the properties it must reproduce are in docs/simulator.md. */
#ifndef DYNAMICCL_SIM_TRUTH_H
#define DYNAMICCL_SIM_TRUTH_H

#include <stddef.h>

#include "../core/rng.h"
#include "nccl_model.h"
#include "profile.h"

/* Conditions of the moment: both in [0, 1]. */
typedef struct dccl_conditions {
  double congestion;   /* background traffic on the network */
  double interference; /* compute kernels sharing the GPUs */
} dccl_conditions;

/* Noise-free latency in microseconds of `execution` (what NCCL actually runs). */
double dccl_truth_latency_us(const dccl_profile* profile, int coll, size_t bytes, int num_pipe_ops,
                             const dccl_execution* execution, const dccl_conditions* conditions);

/* The channel count of the measured group whose latency a replay profile takes for an execution (the
 * execution's own where the profile measured its algorithm and protocol at that count near this size, or
 * measured none): NCCL may run a request on other channels than the machine that was measured ran it on
 * (the GPU test machine ran tree/Simple on 1 channel at 4 KiB whatever was asked, the simulated NCCL on 2),
 * and the work the execution leaves behind is that group's (sim.c). */
int dccl_truth_measured_channels(const dccl_profile* profile, int coll, double bytes, const dccl_execution* execution);

/* A measurement of a collective whose true latency is `latency_us`: log-normal noise of sigma `noise_sigma` in
 * calm conditions (its collective and size's, dccl_profile_noise_sigma; wider under congestion) and rare
 * outliers. */
double dccl_truth_measure(const dccl_profile* profile, double noise_sigma, double latency_us,
                          const dccl_conditions* conditions, dccl_rng* rng);

#endif
