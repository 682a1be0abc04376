/* sim/profile.h: a hardware profile of the simulated cluster, read from a text file under
 * scenarios/profiles/ (format in scenarios/README.md).
 *
 * A profile has two parts. The NCCL part is what NCCL's topology search would report on that
 * machine (channels, per-channel bandwidths and path types of each algorithm's graph): the simulator
 * feeds it to NCCL's own cost model to get the cost table NCCL would compute. The truth part
 * describes how the machine really behaves (link capacities, per-channel protocol throughput, per-step
 * synchronisation costs, fabric buffering, quirks): the simulator uses it for "true" latencies. */
#ifndef DYNAMICCL_SIM_PROFILE_H
#define DYNAMICCL_SIM_PROFILE_H

#include <stddef.h>

#include "../core/types.h"

/* NCCL's path types (graph.h PATH_*), ordered from closest to farthest. */
enum {
  DCCL_PATH_LOC = 0,
  DCCL_PATH_NVL = 1,
  DCCL_PATH_NVB = 2,
  DCCL_PATH_C2C = 3,
  DCCL_PATH_PIX = 4,
  DCCL_PATH_PXB = 5,
  DCCL_PATH_P2C = 6,
  DCCL_PATH_PXN = 7,
  DCCL_PATH_PHB = 8,
  DCCL_PATH_SYS = 9,
  DCCL_PATH_NET = 10
};

enum { DCCL_CPU_INTEL = 0, DCCL_CPU_AMD = 1, DCCL_CPU_ARM = 2, DCCL_CPU_POWER = 3 };
enum { DCCL_TREE_PATTERN_BALANCED = 1, DCCL_TREE_PATTERN_SPLIT = 2, DCCL_TREE_PATTERN_TREE = 3 };
enum { DCCL_LINK_INTRA = 0, DCCL_LINK_NET = 1 };

/* One algorithm's topology graph as NCCL's search reports it (NCCL_DEBUG=INFO, "Pattern ..."). */
typedef struct dccl_graph {
  int channels;          /* graph->nChannels */
  double bw_intra;       /* GB/s per channel inside a node */
  double bw_inter;       /* GB/s per channel across nodes */
  int type_intra;        /* PATH_* of intra-node hops */
  int type_inter;        /* PATH_* of GPU-to-NIC hops */
  double latency_inter;  /* extra network latency, us */
  int same_channels;
} dccl_graph;

/* How the machine really behaves. Index [link][protocol]: link is DCCL_LINK_INTRA or DCCL_LINK_NET. */
typedef struct dccl_truth_params {
  double launch_us;                         /* kernel launch and setup per collective */
  double channel_us;                        /* extra setup and barrier cost per additional channel */
  double link_bw[2];                        /* wire GB/s per rank, one direction */
  double channel_bw[2][DCCL_NUM_PROTOS];    /* payload GB/s one channel sustains at full threads */
  double step_us[2][DCCL_NUM_PROTOS];       /* synchronisation cost of one pipeline step */
  double buffer_bytes[2];                   /* bytes in flight per rank the fabric absorbs */
  double congestion_gain[2];                /* slowdown growth once in-flight bytes exceed the buffer */
  double tree_bw;                           /* tree's per-channel throughput relative to ring */
  double ring_bw;                           /* ring throughput factor (e.g. cross-socket PCIe rings) */
  double pat_bw;                            /* PAT throughput relative to ring */
  double nvls_bw;                           /* NVLink-SHARP bus bandwidth, GB/s */
  double nvls_step_us;
  double collnet_bw;                        /* in-network reduction bandwidth per rank, GB/s */
  double ll128_congestion;                  /* LL128 extra slowdown per unit of network congestion */
  double interference_sm;                   /* per-channel throughput lost at full compute interference */
  double interference_mem;                  /* link bandwidth lost at full compute interference */
  double interference_channels;             /* extra loss per channel used, at full interference */
  double congestion_bw;                     /* network bandwidth lost at full congestion */
  double congestion_latency;                /* network step latency growth at full congestion */
  double noise_sigma;                       /* log-normal sigma of measurement noise */
  double spike_probability;                 /* chance of an outlier measurement */
  double spike_scale;                       /* outliers are up to this many times slower */
  double burst_probability;                 /* chance that a burst of slow calls starts at a call */
  double burst_calls;                       /* a burst lasts 3 to this many calls, shorter ones likelier */
  double burst_scale;                       /* a call in a burst is burst_scale / 4 to burst_scale times slower (>= 4) */
  double drift_sigma;                       /* log-normal sigma of a slow drift shared by every action */
  double drift_calls;                       /* calls per drift segment (the factor changes between them) */
  double tail_share;                        /* share of a call's latency that the next call's kernel waits for
                                               (the peers' last transfers), less the gap between them; it is
                                               in the next kernel's measured span only, in no call's latency
                                               (the NCCL emulator) */
  double pause_skew_us, pause_share;        /* after a workload's pause, the next kernel spans this much longer,
                                               plus this share of its call's latency: the ranks resume apart; in
                                               that kernel's span only (the NCCL emulator) */
} dccl_truth_params;

/* A measured latency of one action at one size on a real machine (a replay profile: `measured =` lines,
 * written by bench/gpu/replay_profile.py from the GPU runs). With any, the truth is the measurements,
 * interpolated (see sim/truth.c) instead of the model. Parsing sorts them by collective, algorithm,
 * protocol, channels and size, so that each (collective, action) group is contiguous. */
#define DCCL_MEASURED_MAX 1024
typedef struct dccl_measured_point {
  unsigned char coll, algo, proto, channels;
  double bytes, latency_us;
} dccl_measured_point;

/* Work an action leaves behind its kernel (`leftover =` lines, measured on the GPU test machine by
 * bench/gpu/summarize.py): `fraction` of a call's latency lies outside its kernel's span and holds up
 * the communicator's next kernel, which starts that much later (DCCL_LEFTOVER_LATER: the kernel-to-kernel
 * gap every action leaves at small sizes over sockets, and tree's last sends on 2 channels) or runs that
 * much longer (DCCL_LEFTOVER_LONGER: tree on 1 channel). The call's latency is unchanged: a profiler sees
 * less of it in its own span and the rest in the next call's. `spread` is the share's coefficient of
 * variation from call to call, so that span and excess trade off as measured, the call's latency fixed.
 * A line holds for every collective and size, or (`at <collective> <bytes>`) is one point of the share
 * by size: an action's points of one form and collective are interpolated in log2(bytes) (docs/simulator.md). */
#define DCCL_LEFTOVER_MAX 512
#define DCCL_LEFTOVER_SPREAD_MAX 2.0
enum { DCCL_LEFTOVER_LATER = 1, DCCL_LEFTOVER_LONGER = 2 };
typedef struct dccl_leftover {
  unsigned char algo, proto, channels, form;
  unsigned char at;   /* 1: a point at (coll, bytes); 0: every collective and size */
  unsigned char coll; /* with `at` */
  double bytes;       /* with `at` */
  double fraction;    /* in [0, 0.9] */
  double spread;      /* in [0, DCCL_LEFTOVER_SPREAD_MAX]; 0: the same share on every call */
} dccl_leftover;

/* Noise points by collective and size (written by bench/gpu/replay_profile.py from a GPU run's learning
 * trace), interpolated in log2(bytes) between a group's points, the end points' values beyond the ends:
 * - DCCL_NOISE_SIGMA (`noise.sigma_at = <collective> <bytes> <sigma>`): the per-call noise, independent
 *   from call to call; a collective without points has `noise.sigma`. On the GPU test machine 0.05-0.2.
 * - DCCL_NOISE_LEVEL (`noise.level_at = <collective> <bytes> <sigma>`): a level shared by every call of a
 *   run (consecutive calls of one collective and size: collbench's round of a size), whatever action
 *   each runs, drawn afresh for each run; 0 without points. On the GPU test machine 0.04-0.11 (0.40 at
 *   AllReduce 64 KiB), independent from one round of a size to the next.
 * - DCCL_NOISE_ALTERNATION (`noise.alternation_at = <collective> <bytes> <algorithm>/<protocol>
 *   <amplitude>`): the calls of a run that run this algorithm and protocol are alternately slower and
 *   faster by this much in log terms (which of the two comes first drawn per run); 0 for a group without
 *   points. On the GPU test machine ring/LL's AllGather and ReduceScatter at 1-64 KiB alternate by
 *   0.36-0.72 (a rank's span holds its wait for the other rank, and the two ranks take turns). */
#define DCCL_NOISE_POINTS_MAX 512
enum { DCCL_NOISE_SIGMA = 0, DCCL_NOISE_LEVEL = 1, DCCL_NOISE_ALTERNATION = 2 };
typedef struct dccl_noise_point {
  unsigned char kind;        /* DCCL_NOISE_* */
  unsigned char coll;
  unsigned char algo, proto; /* DCCL_NOISE_ALTERNATION only; 0 otherwise */
  double bytes, value;       /* the sigma, the level's sigma or the amplitude */
} dccl_noise_point;

typedef struct dccl_profile {
  char name[64];
  char description[256];
  int n_nodes, ranks_per_node, n_ranks;
  int compute_capability; /* e.g. 90 for Hopper */
  int cpu;                /* DCCL_CPU_* */
  int channels;           /* comm->nChannels */
  int nvls_channels;      /* comm->nvlsChannels */
  int nvls_support, collnet_support, nvswitches;
  int net_device_host;    /* 1: host network device (PAT allowed) */
  int tree_pattern;
  dccl_graph graphs[DCCL_NUM_ALGOS];
  dccl_truth_params truth;
  int n_measured;
  dccl_measured_point measured[DCCL_MEASURED_MAX];
  int n_leftovers;
  dccl_leftover leftovers[DCCL_LEFTOVER_MAX];
  int n_noise_points;
  dccl_noise_point noise_points[DCCL_NOISE_POINTS_MAX]; /* sorted by kind, collective, algorithm, protocol, size */
} dccl_profile;

/* Parses profile text. Unknown keys, bad values and missing required keys are errors, reported with
 * the line number in `error`. Returns 0 on success. */
int dccl_profile_parse(const char* text, const char* source, dccl_profile* out, char* error, size_t error_size);
int dccl_profile_load(const char* path, dccl_profile* out, char* error, size_t error_size);
/* The share of a call's latency that an action leaves behind in `form` (DCCL_LEFTOVER_LATER or _LONGER)
 * for a collective and size, and its spread: the action's line for every size as it is, or its points
 * for that collective interpolated linearly in log2(bytes) between the nearest below and above (the end
 * point's values beyond the ends). 0 and spread 0 where the profile has neither. */
double dccl_profile_leftover(const dccl_profile* profile, int form, int coll, int algo, int proto, int channels,
                             double bytes, double* spread);

/* The log-normal sigma of a call's measurement noise for a collective and size, in calm conditions: its
 * collective's `noise.sigma_at` points interpolated linearly in log2(bytes), or `noise.sigma` without any. */
double dccl_profile_noise_sigma(const dccl_profile* profile, int coll, double bytes);
/* The sigma of a run's shared level for a collective and size (`noise.level_at` points; 0 without). */
double dccl_profile_noise_level(const dccl_profile* profile, int coll, double bytes);
/* The alternation amplitude of an algorithm and protocol's calls in a run (`noise.alternation_at`; 0 without). */
double dccl_profile_noise_alternation(const dccl_profile* profile, int coll, int algo, int proto, double bytes);

/* Finds a profile by name in scenarios/profiles/ (or by path). */
int dccl_profile_find(const char* name_or_path, dccl_profile* out, char* error, size_t error_size);

const char* dccl_path_name(int path_type);

#endif
