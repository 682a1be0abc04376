/* sim/nccl_model.c: NCCL's alpha-beta tuning model, channel/thread sizing and chunking, as NCCL
 * 2.28-2.30 compute them (re-expressed here; constants are NCCL's defaults). */
#include "nccl_model.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "../core/action.h"

/* ncclTunerConstants defaults: base latencies (us) per algorithm {LL, LL128, Simple}. */
const double dccl_nccl_base_latency[DCCL_NUM_ALGOS][DCCL_NUM_PROTOS] = {
  {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}};
/* Hardware latencies (us) per link type {NVLink, PCI, NET}. */
const double dccl_nccl_hw_latency[3][DCCL_NUM_ALGOS][DCCL_NUM_PROTOS] = {
  {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
  {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
  {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}}};
/* Bandwidth caps per compute capability {Volta, Ampere, Hopper, Blackwell} x scale {1, 2, >2 nodes}. */
static const double ll_max_bws[4][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
static const double per_ch_max_ring_ll128_bws[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 36.7}, {40, 40, 40}};
static const double per_ch_max_tree_ll128_bws[4][3] = {{20, 20, 20}, {20, 20, 20}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
static const double per_ch_max_tree_bws[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
static const double per_ch_max_nvls_tree_bws[4][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
static const float nvls_efficiency[4] = {0.0f, 0.0f, 0.85f, 0.74f};
/* Tree correction factors by log2(bytes / 64), 64 B to 256 MB. */
static const float tree_correction[DCCL_NUM_PROTOS][24] = {
  {1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .7f, .7f, .7f, .7f, .6f, .5f, .4f, .4f, .5f, .6f, .7f, .8f, .9f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f},
  {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .8f, .8f, .7f, .6f, .6f, .6f, .6f, .6f, .6f, .8f, .9f, .9f, .9f, .9f, 1.0f, 1.0f, 1.0f},
  {.9f, .9f, .9f, .9f, .9f, .9f, .9f, .8f, .7f, .6f, .6f, .5f, .5f, .5f, .5f, .6f, .7f, .8f, .7f, .7f, .8f, .9f, .9f, .9f}};

enum { HW_NVLINK = 0, HW_PCI = 1, HW_NET = 2 };
#define PCI_BW 12.0
#define WARP_SIZE 32
#define MAX_NTHREADS 640
#define SIMPLE_MAX_NTHREADS 512
#define LL_MAX_NTHREADS 512
#define LL128_MAX_NTHREADS 640
#define MAX_DEV_WORK_BATCH_COLLS 8 /* 1024-byte batch / 128-byte ncclDevWorkColl */
#define MAX_DIRECT_ARITY 7
#define MAX_NVLS_ARITY 32

static int log2_down(long long x) { return x <= 0 ? -1 : 63 - __builtin_clzll((unsigned long long)x); }

static int comp_cap_index(int cc) { return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

static int pat_enabled(const dccl_profile* p) {
  return p->compute_capability >= 60 && p->n_nodes == p->n_ranks && p->net_device_host;
}

static double net_overhead_us(const dccl_profile* p) { return p->cpu == DCCL_CPU_AMD ? 2.0 : 1.0; }

void dccl_nccl_model_init(dccl_nccl_model* m, const dccl_profile* p) {
  memset(m, 0, sizeof(*m));
  m->profile = p;
  const dccl_graph* g = p->graphs;
  int simple_default = g[DCCL_ALGO_RING].bw_intra * g[DCCL_ALGO_RING].channels <= PCI_BW ? 256 : SIMPLE_MAX_NTHREADS;
  m->max_threads[DCCL_ALGO_RING][DCCL_PROTO_SIMPLE] = simple_default;
  m->max_threads[DCCL_ALGO_TREE][DCCL_PROTO_SIMPLE] = SIMPLE_MAX_NTHREADS;
  m->max_threads[DCCL_ALGO_COLLNET_DIRECT][DCCL_PROTO_SIMPLE] = m->max_threads[DCCL_ALGO_COLLNET_CHAIN][DCCL_PROTO_SIMPLE] =
    m->max_threads[DCCL_ALGO_NVLS][DCCL_PROTO_SIMPLE] = m->max_threads[DCCL_ALGO_NVLS_TREE][DCCL_PROTO_SIMPLE] = MAX_NTHREADS;
  m->max_threads[DCCL_ALGO_RING][DCCL_PROTO_LL] = m->max_threads[DCCL_ALGO_TREE][DCCL_PROTO_LL] = LL_MAX_NTHREADS;
  m->max_threads[DCCL_ALGO_RING][DCCL_PROTO_LL128] = m->max_threads[DCCL_ALGO_TREE][DCCL_PROTO_LL128] = LL128_MAX_NTHREADS;

  for (int a = 0; a < DCCL_NUM_ALGOS; a++) {
    m->thread_thresholds[a][DCCL_PROTO_LL] = 8;
    m->thread_thresholds[a][DCCL_PROTO_LL128] = 8;
    m->thread_thresholds[a][DCCL_PROTO_SIMPLE] = 64;
  }
  m->thread_thresholds[DCCL_ALGO_RING][DCCL_PROTO_LL] *= p->n_ranks;
  m->thread_thresholds[DCCL_ALGO_COLLNET_DIRECT][DCCL_PROTO_SIMPLE] = 512;
  m->thread_thresholds[DCCL_ALGO_COLLNET_CHAIN][DCCL_PROTO_SIMPLE] = 512;
  m->nvls_chunk_size = 128 * 1024;
  m->nvls_tree_max_chunk_size = p->n_nodes >= 4 ? 65536 : m->nvls_chunk_size;

  int n_nodes = p->n_nodes, n_ranks = p->n_ranks;
  if (n_ranks <= 1) return;
  int cci = comp_cap_index(p->compute_capability);
  int index2 = n_nodes <= 2 ? n_nodes - 1 : 2;
  int index1 = n_nodes == 1 ? cci : (p->cpu == DCCL_CPU_AMD ? 1 : 0);
  double ll_max_bw = ll_max_bws[index1][index2];
  double per_ch_max_tree_bw = per_ch_max_tree_bws[cci][index2];
  double per_ch_max_ring_ll128_bw = per_ch_max_ring_ll128_bws[cci][index2];
  double per_ch_max_tree_ll128_bw = per_ch_max_tree_ll128_bws[cci][index2];
  double per_ch_max_nvls_tree_bw = per_ch_max_nvls_tree_bws[cci][index2];
  double hw_latency[3][DCCL_NUM_ALGOS][DCCL_NUM_PROTOS];
  memcpy(hw_latency, dccl_nccl_hw_latency, sizeof(hw_latency));
  if (p->cpu == DCCL_CPU_POWER)
    hw_latency[HW_PCI][DCCL_ALGO_TREE][DCCL_PROTO_SIMPLE] = hw_latency[HW_PCI][DCCL_ALGO_RING][DCCL_PROTO_SIMPLE];
  float ppn = (float)n_ranks / (float)n_nodes;
  int intra_hw[DCCL_NUM_ALGOS], hw[DCCL_NUM_ALGOS];
  for (int a = 0; a < DCCL_NUM_ALGOS; a++) {
    intra_hw[a] = g[a].type_intra == DCCL_PATH_NVL ? HW_NVLINK : HW_PCI;
    hw[a] = n_nodes == 1 ? intra_hw[a] : HW_NET;
  }

  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++) {
    int nsteps = coll == DCCL_COLL_ALLREDUCE ? 2 * (n_ranks - 1)
                 : (coll == DCCL_COLL_REDUCESCATTER || coll == DCCL_COLL_ALLGATHER) ? n_ranks - 1
                                                                                     : n_ranks;
    int ag_or_rs = coll == DCCL_COLL_ALLGATHER || coll == DCCL_COLL_REDUCESCATTER;
    for (int a = 0; a < DCCL_NUM_ALGOS; a++) {
      if ((coll == DCCL_COLL_BROADCAST || coll == DCCL_COLL_REDUCE) && a != DCCL_ALGO_RING) continue;
      if (ag_or_rs && a != DCCL_ALGO_PAT && a != DCCL_ALGO_RING && a != DCCL_ALGO_NVLS && a != DCCL_ALGO_COLLNET_DIRECT)
        continue;
      if (coll == DCCL_COLL_ALLREDUCE && a == DCCL_ALGO_PAT) continue;
      for (int pr = 0; pr < DCCL_NUM_PROTOS; pr++) {
        if ((a == DCCL_ALGO_NVLS || a == DCCL_ALGO_NVLS_TREE) && pr != DCCL_PROTO_SIMPLE) continue;
        if (ag_or_rs && a == DCCL_ALGO_PAT && (pr != DCCL_PROTO_SIMPLE || !pat_enabled(p))) continue;
        int collnet = a == DCCL_ALGO_COLLNET_DIRECT || a == DCCL_ALGO_COLLNET_CHAIN;
        float bw = (float)(n_nodes <= 2 || collnet ? g[a].bw_intra : g[a].bw_inter);
        if (a == DCCL_ALGO_NVLS || a == DCCL_ALGO_NVLS_TREE) {
          if (g[a].channels < 2) continue;
          float intra_bw = (float)g[a].bw_intra * nvls_efficiency[cci] * (float)(g[a].channels - 1) / (float)g[a].channels;
          if (coll == DCCL_COLL_ALLREDUCE) intra_bw *= 2.0f;
          else intra_bw *= (ppn - 1) / ppn;
          float inter_bw = (float)g[a].bw_inter * ((n_nodes <= 2 && a == DCCL_ALGO_NVLS_TREE) ? 2 : 1);
          float cap = a == DCCL_ALGO_NVLS_TREE ? (float)per_ch_max_nvls_tree_bw : FLT_MAX;
          bw = fminf(fminf(intra_bw, inter_bw), cap);
        }
        float bus_bw = (float)g[a].channels * bw;
        if (a == DCCL_ALGO_RING && pr == DCCL_PROTO_LL) bus_bw = (float)fmin(ll_max_bw, bus_bw * .5);
        if (a == DCCL_ALGO_RING && pr == DCCL_PROTO_LL128)
          bus_bw = (float)fmin(bus_bw * 0.92, g[a].channels * per_ch_max_ring_ll128_bw);
        if (a == DCCL_ALGO_TREE && coll == DCCL_COLL_ALLREDUCE)
          bus_bw = (float)fmin(bus_bw * .92, g[a].channels * per_ch_max_tree_bw);
        if (a == DCCL_ALGO_TREE && pr == DCCL_PROTO_LL) bus_bw = (float)fmin(bus_bw * 1.0 / 3.8, ll_max_bw);
        if (a == DCCL_ALGO_TREE && pr == DCCL_PROTO_LL128)
          bus_bw = (float)fmin(bus_bw * (n_nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), g[a].channels * per_ch_max_tree_ll128_bw);
        if (a == DCCL_ALGO_TREE && p->tree_pattern == DCCL_TREE_PATTERN_TREE) bus_bw *= .85;
        if (a == DCCL_ALGO_PAT) bus_bw *= .75;
        if (collnet && pr != DCCL_PROTO_SIMPLE) bus_bw = 0;
        if (a == DCCL_ALGO_COLLNET_DIRECT && pr == DCCL_PROTO_SIMPLE) {
          if (ag_or_rs) {
            bus_bw = ppn * fminf((float)g[a].bw_intra, (float)g[a].bw_inter * 0.9f);
          } else {
            float factor = ppn / (1.0f * (float)g[a].channels);
            factor -= (factor - 1) / 2;
            bus_bw /= factor;
            if (p->compute_capability >= 90) bus_bw *= .85f;
          }
        }
        /* NVLS and CollNet AllGather/ReduceScatter across nodes need a CollNet plugin with
         * iallgather/ireducescatter, which no simulated profile has. */
        if ((a == DCCL_ALGO_NVLS || a == DCCL_ALGO_COLLNET_DIRECT) && pr == DCCL_PROTO_SIMPLE && ag_or_rs && n_nodes > 1)
          bus_bw = 0.0f;
        if (!(a != DCCL_ALGO_RING && ag_or_rs)) {
          float ratio = (a == DCCL_ALGO_RING || a == DCCL_ALGO_NVLS || a == DCCL_ALGO_NVLS_TREE)
                          ? (float)(1.0 * n_ranks / nsteps)
                          : .5f;
          bus_bw *= ratio;
        }
        m->bandwidths[coll][a][pr] = bus_bw;
        float latency = (float)dccl_nccl_base_latency[a][pr];
        float intra_lat = (float)hw_latency[intra_hw[a]][a][pr];
        float inter_lat = ppn == 1 ? (float)hw_latency[HW_NET][DCCL_ALGO_TREE][pr] : (float)hw_latency[HW_NET][a][pr];
        inter_lat += (float)g[a].latency_inter;
        if (pr == DCCL_PROTO_SIMPLE) inter_lat += (float)g[a].latency_inter;
        int local = n_ranks / n_nodes;
        if (a == DCCL_ALGO_RING) {
          float lat = (float)hw_latency[hw[a]][a][pr];
          if (coll == DCCL_COLL_REDUCE || coll == DCCL_COLL_BROADCAST) {
            if (g[a].same_channels) {
              latency += lat;
            } else {
              if (pr == DCCL_PROTO_SIMPLE) lat = (float)hw_latency[hw[a]][DCCL_ALGO_TREE][pr];
              latency += nsteps * lat;
            }
          } else {
            float overhead = 0.0f;
            if (n_nodes > 1) {
              overhead = (float)net_overhead_us(p);
              if (pr == DCCL_PROTO_SIMPLE) overhead *= 3;
            }
            intra_lat = fmaxf(intra_lat, overhead);
            int inter_steps = n_nodes == 1 ? 0 : coll == DCCL_COLL_ALLREDUCE ? 2 * (n_nodes - 1) : n_nodes - 1;
            latency += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
          }
        } else if (a == DCCL_ALGO_TREE) {
          if (coll == DCCL_COLL_ALLREDUCE) latency += 2 * ((local - 1) * intra_lat + log2_down(n_nodes) * inter_lat);
        } else if (a == DCCL_ALGO_COLLNET_DIRECT) {
          latency = (float)(latency + (2 * ((local - 1 < 1 ? local - 1 : 1) * intra_lat + (local - 1) * 0.4) + inter_lat));
        } else if (a == DCCL_ALGO_COLLNET_CHAIN) {
          latency += 2 * (local - 1) * intra_lat + inter_lat;
        } else if (a == DCCL_ALGO_NVLS) {
          latency = intra_lat;
          if (n_nodes > 1) latency += inter_lat;
        } else if (a == DCCL_ALGO_NVLS_TREE) {
          latency += intra_lat + 2 * log2_down(n_nodes) * inter_lat;
        } else if (a == DCCL_ALGO_PAT) {
          if (ag_or_rs) latency = (float)(latency + (log2_down(n_nodes) * (inter_lat / 3.5) + n_ranks * 2.8));
        }
        m->latencies[coll][a][pr] = latency;
      }
    }
  }

  /* Algorithm and protocol enablement (no NCCL_ALGO / NCCL_PROTO in the simulator). */
  for (int c = 0; c < DCCL_NUM_COLLS; c++)
    for (int a = 0; a < DCCL_NUM_ALGOS; a++) {
      int disable = 0;
      if (n_nodes == 1 && a == DCCL_ALGO_NVLS_TREE) disable = 1;
      if (!p->collnet_support &&
          (a == DCCL_ALGO_COLLNET_DIRECT || a == DCCL_ALGO_COLLNET_CHAIN || (a == DCCL_ALGO_NVLS && n_nodes > 1)))
        disable = 1;
      if (p->nvswitches == 0 && a == DCCL_ALGO_COLLNET_DIRECT) disable = 1;
      for (int pr = 0; pr < DCCL_NUM_PROTOS; pr++) {
        int enable = 1;
        if (pr == DCCL_PROTO_LL128) {
          /* LL128 on by default only over paths that keep 128-byte stores whole. */
          if (p->compute_capability >= 90) enable &= g[a].type_inter <= DCCL_PATH_PXN;
          else enable &= g[a].type_inter <= DCCL_PATH_PXB;
          enable &= g[a].type_intra <= DCCL_PATH_NVB;
          enable &= p->compute_capability >= 70;
        }
        if (!enable || disable) m->bandwidths[c][a][pr] = 0;
      }
    }
}

static float algo_time(const dccl_nccl_model* m, int coll, int a, int pr, size_t bytes, int num_pipe_ops) {
  float bw = m->bandwidths[coll][a][pr];
  float lat = m->latencies[coll][a][pr];
  if (bw == 0) return -1.0f;
  const dccl_profile* p = m->profile;
  int log_size = log2_down((long long)(bytes >> 6));
  if (a == DCCL_ALGO_TREE && coll == DCCL_COLL_ALLREDUCE && log_size >= 0 && log_size < 23)
    bw *= tree_correction[pr][log_size];
  if (a == DCCL_ALGO_NVLS_TREE && coll == DCCL_COLL_ALLREDUCE && log_size >= 0 && log_size < 24 &&
      p->compute_capability >= 100 && p->cpu != DCCL_CPU_ARM && p->cpu != DCCL_CPU_POWER)
    bw *= tree_correction[pr][log_size];
  if (a == DCCL_ALGO_RING && pr == DCCL_PROTO_SIMPLE && p->n_nodes > 1 && coll == DCCL_COLL_ALLREDUCE &&
      bytes / ((size_t)p->channels * (size_t)p->n_ranks) >= 64)
    lat *= p->compute_capability < 80 ? 1.9f : 1.4f;
  int lat_count = a == DCCL_ALGO_RING ? num_pipe_ops : (num_pipe_ops + MAX_DEV_WORK_BATCH_COLLS - 1) / MAX_DEV_WORK_BATCH_COLLS;
  return lat * (float)lat_count + (float)bytes / (1000 * bw);
}

void dccl_nccl_cost_table(const dccl_nccl_model* m, int coll, size_t bytes, int num_pipe_ops, float* cost) {
  const dccl_profile* p = m->profile;
  for (int i = 0; i < DCCL_NUM_ALGOS * DCCL_NUM_PROTOS; i++) cost[i] = -1.0f;
  if (num_pipe_ops < 1) num_pipe_ops = 1;
  if (p->n_ranks == 1) {
    cost[DCCL_ALGO_RING * DCCL_NUM_PROTOS + DCCL_PROTO_SIMPLE] = 0.0f;
    return;
  }
  for (int a = 0; a < DCCL_NUM_ALGOS; a++) {
    int collnet = a == DCCL_ALGO_COLLNET_DIRECT || a == DCCL_ALGO_COLLNET_CHAIN;
    if (collnet && !p->collnet_support) continue;
    if (collnet && p->ranks_per_node > MAX_DIRECT_ARITY + 1) continue;
    if ((a == DCCL_ALGO_NVLS || a == DCCL_ALGO_NVLS_TREE) &&
        (!p->nvls_support || (coll != DCCL_COLL_ALLREDUCE && p->ranks_per_node > MAX_NVLS_ARITY)))
      continue;
    if (a == DCCL_ALGO_NVLS && !p->collnet_support && p->n_nodes > 1) continue;
    for (int pr = 0; pr < DCCL_NUM_PROTOS; pr++)
      cost[a * DCCL_NUM_PROTOS + pr] = algo_time(m, coll, a, pr, bytes, num_pipe_ops);
  }
}

int dccl_nccl_select(const dccl_nccl_model* m, const float* cost, int coll, size_t bytes, int plugin_channels,
                     dccl_execution* out) {
  const dccl_profile* p = m->profile;
  float best = FLT_MAX;
  int algo = -1, proto = -1;
  for (int a = 0; a < DCCL_NUM_ALGOS; a++)
    for (int pr = 0; pr < DCCL_NUM_PROTOS; pr++) {
      float c = cost[a * DCCL_NUM_PROTOS + pr];
      if (c == -1.0f) continue;
      if (c >= 0.0f && c < best) {
        algo = a;
        proto = pr;
        best = c;
      }
    }
  (void)coll;
  if (algo < 0) return -1;
  long long nc = p->channels;
  long long nt = m->max_threads[algo][proto];
  long long threshold = m->thread_thresholds[algo][proto];
  long long n = (long long)bytes;
  if (algo == DCCL_ALGO_COLLNET_DIRECT) {
    long long heads = p->graphs[DCCL_ALGO_COLLNET_DIRECT].channels > 0 ? p->graphs[DCCL_ALGO_COLLNET_DIRECT].channels : 1;
    int nc_switch = 16, keep_going = 1;
    while (nc_switch >= 1 && keep_going) {
      while ((keep_going = n < nc * nt * heads * threshold) && nc > nc_switch) {
        if (nc == nc_switch + nc_switch / 2) threshold /= 2;
        nc--;
      }
      nc_switch /= 2;
    }
  } else if (algo == DCCL_ALGO_NVLS || algo == DCCL_ALGO_NVLS_TREE) {
    nc = (p->n_nodes > 1 && algo == DCCL_ALGO_NVLS) ? (p->nvls_channels < p->channels ? p->nvls_channels : p->channels)
                                                    : p->nvls_channels;
  } else {
    while (n < nc * nt * threshold && nc >= 2) nc--;
  }
  if (algo != DCCL_ALGO_NVLS && algo != DCCL_ALGO_NVLS_TREE && algo != DCCL_ALGO_COLLNET_DIRECT)
    while (n < nc * nt * threshold && nt % 128 == 0) nt /= 2;
  if (proto == DCCL_PROTO_SIMPLE) {
    if (algo == DCCL_ALGO_RING) nt += WARP_SIZE;
    if (algo == DCCL_ALGO_TREE) nt += 4 * WARP_SIZE;
  }
  if (nt / WARP_SIZE < 3) nt = 3 * WARP_SIZE;
  if (algo == DCCL_ALGO_TREE || algo == DCCL_ALGO_PAT) nt = MAX_NTHREADS;
  if (plugin_channels > 0) nc = plugin_channels;
  long long cap = (algo == DCCL_ALGO_NVLS || algo == DCCL_ALGO_NVLS_TREE) ? p->nvls_channels : p->channels;
  if (nc > cap) nc = cap;
  if (nc < 1) nc = 1;
  out->algo = algo;
  out->proto = proto;
  out->channels = (int)nc;
  out->threads = (int)nt;
  out->chunk = 0;
  return 0;
}

size_t dccl_nccl_grain(int proto) {
  return proto == DCCL_PROTO_LL ? 16 : proto == DCCL_PROTO_LL128 ? (size_t)(WARP_SIZE * 8 / 16 * 15 * 8) : 512;
}

void dccl_nccl_chunk(const dccl_nccl_model* m, int coll, size_t bytes, const dccl_execution* e, size_t* chunk_out,
                     size_t* ceiling) {
  const dccl_profile* p = m->profile;
  int algo = e->algo, proto = e->proto;
  long long n = (long long)bytes, nc = e->channels;
  long long step = dccl_default_buffer_bytes(proto) / DCCL_NCCL_STEPS;
  long long chunk = dccl_chunk_ceiling(coll, algo, proto, NULL);
  *ceiling = (size_t)chunk;
  if (algo == DCCL_ALGO_COLLNET_CHAIN) {
    long long cap = step < 256 * 1024 ? step : 256 * 1024; /* CollNet runs Simple only: one step per chunk */
    chunk = cap;
    while (n / (nc * chunk) < 64 && chunk > 131072) chunk /= 2;
    while (n / (nc * chunk) < 8 && chunk > 65536) chunk /= 2;
    while (n / (nc * chunk) < 1 && chunk > 32768) chunk /= 2;
  } else if (algo == DCCL_ALGO_NVLS) {
    long long max_chunk = m->nvls_chunk_size;
    if (p->n_nodes > 1 && m->bandwidths[DCCL_COLL_ALLREDUCE][DCCL_ALGO_NVLS][DCCL_PROTO_SIMPLE] < 150) max_chunk = 32768;
    if (chunk > max_chunk) chunk = max_chunk;
    long long concurrent = nc * p->ranks_per_node;
    if (n < 64 * concurrent * chunk && chunk > 65536) chunk = 65536;
    if (n < 8 * concurrent * chunk && chunk > 32768) chunk = 32768;
    if (n < 2 * concurrent * chunk && chunk > 16384) chunk = 16384;
  } else if (algo == DCCL_ALGO_NVLS_TREE) {
    long long concurrent = nc * p->ranks_per_node;
    chunk = m->nvls_chunk_size < m->nvls_tree_max_chunk_size ? m->nvls_chunk_size : m->nvls_tree_max_chunk_size;
    if (n < 32 * concurrent * chunk && chunk > 262144) chunk = 262144;
    if (n < 16 * concurrent * chunk && chunk > 131072) chunk = 131072;
    if (n < 4 * concurrent * chunk && chunk > 65536) chunk = 65536;
    if (n < 1 * concurrent * chunk && chunk > 32768) chunk = 32768;
  } else if (algo == DCCL_ALGO_TREE && proto == DCCL_PROTO_LL128) {
    float ppn = (float)p->n_ranks / (float)p->n_nodes;
    float nsteps = 1 + log2_down(p->n_nodes) + 0.1f * ppn;
    while (n / (nc * chunk) < nsteps * 64 / ppn && chunk > 131072) chunk /= 2;
    while (n / (nc * chunk) < nsteps * 16 / ppn && chunk > 32768) chunk /= 2;
  } else if (coll == DCCL_COLL_ALLGATHER && algo == DCCL_ALGO_PAT) {
    while (chunk * nc * 32 > n && chunk > 65536) chunk /= 2;
  } else if (coll == DCCL_COLL_REDUCESCATTER && algo == DCCL_ALGO_PAT) {
    while (chunk * nc * 16 > n && chunk > 65536) chunk /= 2;
  }
  *chunk_out = (size_t)chunk;
}

size_t dccl_nccl_finish_chunk(int proto, size_t tuner_chunk, size_t ceiling) {
  size_t chunk = tuner_chunk > ceiling ? ceiling : tuner_chunk;
  size_t grain = dccl_nccl_grain(proto);
  chunk = chunk / grain * grain;
  return chunk < grain ? grain : chunk;
}

int dccl_nccl_execute(const dccl_nccl_model* m, int coll, size_t bytes, int num_pipe_ops, unsigned action,
                      dccl_execution* out) {
  float cost[DCCL_NUM_ALGOS * DCCL_NUM_PROTOS];
  dccl_nccl_cost_table(m, coll, bytes, num_pipe_ops, cost);
  int plugin_channels = 0;
  dccl_action a = (dccl_action)action;
  if (!dccl_action_is_nccl(a)) {
    int index = dccl_action_algo(a) * DCCL_NUM_PROTOS + dccl_action_proto(a);
    if (cost[index] >= 0.0f) {
      cost[index] = 0.0f;
      plugin_channels = dccl_action_channels(a);
    }
  }
  if (dccl_nccl_select(m, cost, coll, bytes, plugin_channels, out) != 0) return -1;
  size_t chunk, ceiling;
  dccl_nccl_chunk(m, coll, bytes, out, &chunk, &ceiling);
  if (!dccl_action_is_nccl(a) && dccl_action_chunk_log2(a) != 0 && dccl_action_algo(a) == out->algo &&
      dccl_action_proto(a) == out->proto)
    chunk = dccl_action_chunk_bytes(a);
  out->chunk = dccl_nccl_finish_chunk(out->proto, chunk, ceiling);
  return 0;
}
