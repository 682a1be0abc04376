/* sim/truth.c: the simulator's ground-truth latency model and measurement noise. */
#include "truth.h"

#include <math.h>

static const double protocol_payload[DCCL_NUM_PROTOS] = {0.5, 120.0 / 128.0, 1.0};

/* The state of one link class under the current conditions. */
typedef struct link_state {
  double capacity;    /* wire GB/s per rank */
  double channel_bw;  /* payload GB/s per channel */
  double step_us;     /* per pipeline step */
  double buffer;      /* bytes in flight absorbed without slowdown */
  double gain;        /* congestion growth beyond the buffer */
} link_state;

static link_state link_under(const dccl_profile* p, int link, int proto, int channels, int threads,
                             const dccl_conditions* c) {
  const dccl_truth_params* t = &p->truth;
  double congestion = link == DCCL_LINK_NET ? c->congestion : 0.0;
  double interference = c->interference;
  link_state s;
  s.capacity = t->link_bw[link] * (1.0 - t->interference_mem * interference) * (1.0 - t->congestion_bw * congestion);
  double thread_factor = sqrt(fmin(1.0, threads / 256.0));
  double sm_factor = (1.0 - t->interference_sm * interference) / (1.0 + t->interference_channels * interference * channels);
  s.channel_bw = t->channel_bw[link][proto] * thread_factor * sm_factor;
  s.step_us = t->step_us[link][proto] * (1.0 + t->congestion_latency * congestion);
  s.buffer = t->buffer_bytes[link] * (1.0 - 0.7 * congestion);
  s.gain = t->congestion_gain[link] * (1.0 + 2.0 * congestion);
  if (proto == DCCL_PROTO_LL128 && congestion > 0) {
    /* Network stalls hold whole 128-byte flagged lines: LL128 degrades first. */
    s.channel_bw /= 1.0 + t->ll128_congestion * congestion;
    s.step_us *= 1.0 + t->ll128_congestion * congestion;
  }
  return s;
}

/* Payload GB/s of `channels` channels over one link class with `in_flight` bytes outstanding:
 * min(SM-side protocol throughput, link capacity / congestion slowdown). channel_factor scales the
 * SM side (tree and PAT split their warps), link_factor the link side (rings crossing a shared link). */
static double throughput(const link_state* s, int proto, int channels, double in_flight, double channel_factor,
                         double link_factor) {
  double excess = in_flight / s->buffer - 1.0;
  double slowdown = 1.0 + (excess > 0 ? s->gain * excess : 0.0);
  double sm_limit = channels * s->channel_bw * channel_factor;
  double link_limit = s->capacity * link_factor * protocol_payload[proto] / slowdown;
  return fmin(sm_limit, link_limit);
}

static double ceil_log2(int x) {
  int r = 0;
  while ((1 << r) < x) r++;
  return r;
}

static double transfer_us(double bytes, double gbps) { return gbps > 0 ? bytes / (1000.0 * gbps) : 1e12; }

static double model_latency_us(const dccl_profile* p, int coll, size_t bytes_in, int num_pipe_ops, const dccl_execution* e,
                               const dccl_conditions* c) {
  const dccl_truth_params* t = &p->truth;
  int n = p->n_ranks, nodes = p->n_nodes, ppn = p->ranks_per_node;
  int nc = e->channels > 0 ? e->channels : 1, proto = e->proto;
  double bytes = bytes_in > 0 ? (double)bytes_in : 1.0;
  double chunk = e->chunk > 0 ? (double)e->chunk : 65536.0;
  double launch = t->launch_us / (num_pipe_ops > 1 ? num_pipe_ops : 1) + t->channel_us * (nc - 1);
  if (n <= 1) return launch + transfer_us(bytes, 1000.0);

  link_state intra = link_under(p, DCCL_LINK_INTRA, proto, nc, e->threads, c);
  link_state net = link_under(p, DCCL_LINK_NET, proto, nc, e->threads, c);
  int multi = nodes > 1, has_intra = ppn > 1;

  switch (e->algo) {
  case DCCL_ALGO_RING: {
    int bidirectional = coll == DCCL_COLL_ALLREDUCE;
    if (coll == DCCL_COLL_BROADCAST || coll == DCCL_COLL_REDUCE) {
      /* A pipelined chain: n-1 hops, then one step per chunk. */
      double chunks = fmax(1.0, bytes / (nc * chunk));
      double per_step = chunk < bytes / nc ? chunk : bytes / nc;
      double in_flight = 2.0 * nc * per_step;
      double bw = has_intra ? throughput(&intra, proto, nc, in_flight, 1.0, t->ring_bw) : 1e12;
      if (multi) bw = fmin(bw, throughput(&net, proto, nc, in_flight, 1.0, t->ring_bw));
      double step = multi ? fmax(intra.step_us, net.step_us) : intra.step_us;
      return launch + (n - 1 + chunks) * step + transfer_us(bytes, bw);
    }
    double steps_per_loop = (bidirectional ? 2.0 : 1.0) * (n - 1);
    /* Loops of nc x n chunks; fractional, as AutoCCL's model (the last loop is partial). */
    double loops = fmax(1.0, bytes / ((double)nc * n * chunk));
    double per_step = bytes / ((double)nc * n * loops);
    double in_flight = 2.0 * nc * per_step;
    double bw = has_intra ? throughput(&intra, proto, nc, in_flight, 1.0, t->ring_bw) : 1e12;
    if (multi) bw = fmin(bw, throughput(&net, proto, nc, in_flight, 1.0, t->ring_bw));
    double step = ((n - nodes) * intra.step_us + (multi ? nodes * net.step_us : 0.0)) / n;
    if (!multi) step = intra.step_us;
    double volume = steps_per_loop / n * bytes;
    return launch + steps_per_loop * loops * step + transfer_us(volume, bw);
  }
  case DCCL_ALGO_TREE: {
    /* Double binary tree across nodes, chain inside a node. Reduce-up and broadcast-down run
     * concurrently on split warps of the same channels, so each channel moves 2 x bytes. */
    double chunks = fmax(1.0, bytes / (nc * chunk));
    double per_step = chunk < bytes / nc ? chunk : bytes / nc;
    double in_flight = 2.0 * nc * per_step;
    double bw = has_intra ? throughput(&intra, proto, nc, in_flight, t->tree_bw, 1.0) : 1e12;
    if (multi) bw = fmin(bw, throughput(&net, proto, nc, in_flight, t->tree_bw, 1.0));
    double depth_us = 2.0 * ((ppn - 1) * intra.step_us + ceil_log2(nodes) * (multi ? net.step_us : 0.0));
    double step = multi ? fmax(has_intra ? intra.step_us : 0.0, net.step_us) : intra.step_us;
    return launch + depth_us + chunks * step + transfer_us(2.0 * bytes, bw);
  }
  case DCCL_ALGO_PAT: {
    /* Parallel aggregated trees: log-depth rounds with growing payloads; one rank per node. */
    double rounds = ceil_log2(n);
    double per_step = chunk < bytes / nc ? chunk : bytes / nc;
    double bw = throughput(&net, proto, nc, 2.0 * nc * per_step, t->pat_bw, 1.0);
    return launch + rounds * 1.5 * net.step_us + 0.3 * n + transfer_us((double)(n - 1) / n * bytes, bw);
  }
  case DCCL_ALGO_NVLS:
  case DCCL_ALGO_NVLS_TREE: {
    /* NVLink SHARP: the switch reduces/multicasts; bus bandwidth nvls_bw shared by the node. */
    double nvls_bus = t->nvls_bw * (1.0 - t->interference_mem * c->interference);
    double alg_bw = coll == DCCL_COLL_ALLREDUCE ? nvls_bus * n / (2.0 * (n - 1)) : nvls_bus * n / (n - 1.0);
    double latency = launch + t->nvls_step_us;
    if (multi) {
      double net_bw = throughput(&net, proto, nc, 2.0 * nc * chunk, t->tree_bw, 1.0);
      alg_bw = fmin(alg_bw, net_bw);
      latency += 2.0 * ceil_log2(nodes) * net.step_us;
    }
    return latency + transfer_us(bytes, alg_bw);
  }
  case DCCL_ALGO_COLLNET_DIRECT:
  case DCCL_ALGO_COLLNET_CHAIN: {
    /* SHARP in-network reduction: intra-node reduce, one network round trip, intra-node broadcast. */
    double intra_bw = has_intra ? throughput(&intra, proto, nc, 2.0 * nc * chunk, 1.0, 1.0) : 1e12;
    double net_bw = t->collnet_bw * (1.0 - t->congestion_bw * c->congestion);
    double latency = launch + 2.0 * (ppn - 1) * intra.step_us / (e->algo == DCCL_ALGO_COLLNET_DIRECT ? ppn : 1) +
                     2.0 * net.step_us;
    return latency + transfer_us(bytes, fmin(intra_bw, net_bw));
  }
  default:
    return 1e12;
  }
}

double dccl_truth_measure(const dccl_profile* p, double noise_sigma, double latency_us, const dccl_conditions* c,
                          dccl_rng* rng) {
  const dccl_truth_params* t = &p->truth;
  double sigma = noise_sigma * (1.0 + 2.0 * c->congestion);
  double measured = latency_us * exp(sigma * dccl_rng_normal(rng));
  if (t->spike_probability > 0 && dccl_rng_uniform(rng) < t->spike_probability)
    measured *= 1.0 + (t->spike_scale - 1.0) * dccl_rng_uniform(rng);
  return measured;
}

/* Latency of the measured group (one collective, algorithm, protocol and channel count; sorted by size)
 * of `n` points at `bytes`: flat below the smallest measured size (latency-bound), proportional to size
 * above the largest (bandwidth-bound), linear in log(latency) over log(bytes) between measured sizes. */
static double group_latency_us(const dccl_measured_point* g, int n, double bytes) {
  if (bytes <= g[0].bytes) return g[0].latency_us;
  if (bytes >= g[n - 1].bytes) return g[n - 1].latency_us * bytes / g[n - 1].bytes;
  int i = 1;
  while (g[i].bytes < bytes) i++;
  double t = (log(bytes) - log(g[i - 1].bytes)) / (log(g[i].bytes) - log(g[i - 1].bytes));
  return exp(log(g[i - 1].latency_us) + t * (log(g[i].latency_us) - log(g[i - 1].latency_us)));
}

/* Length of the group starting at point `i`. */
static int group_length(const dccl_profile* p, int i) {
  const dccl_measured_point* first = &p->measured[i];
  int n = 1;
  while (i + n < p->n_measured && p->measured[i + n].coll == first->coll && p->measured[i + n].algo == first->algo &&
         p->measured[i + n].proto == first->proto && p->measured[i + n].channels == first->channels)
    n++;
  return n;
}

/* How far `bytes` lies outside a group's measured sizes, in log2 (0: within them). */
static double size_gap(const dccl_measured_point* g, int n, double bytes) {
  if (bytes < g[0].bytes) return log2(g[0].bytes / bytes);
  if (bytes > g[n - 1].bytes) return log2(bytes / g[n - 1].bytes);
  return 0;
}

/* A group's rank for a choice: nearer in size first (`gap`), then by `key`; smaller is better. */
typedef struct group_rank {
  double gap, key, latency;
  int channels;
} group_rank;

static void keep_better(group_rank* best, double gap, double key, double latency, int channels) {
  if (gap < best->gap - 1e-9 || (gap < best->gap + 1e-9 && key < best->key - 1e-9))
    *best = (group_rank){gap, key, latency, channels};
}

/* The measured latency of an execution: its (algorithm, protocol) from a group whose measured sizes
 * include `bytes` where one does (else the group nearest in size), at the measured channel count
 * nearest to the one it runs among those (in log2; the smaller on a tie: groups come in increasing
 * channels). A group measured only far from `bytes` is not extrapolated when another covers it: a
 * channel count measured at 1-4 KiB only (because NCCL ran larger requests on more channels) says
 * nothing of 64 MiB. An (algorithm, protocol) never measured for this collective costs twice the
 * slowest one measured at that size: the agents learn to avoid it. -1 for a collective never measured. */
static double measured_latency_us(const dccl_profile* p, int coll, double bytes, const dccl_execution* e,
                                  int* channels) {
  double want = log2(e->channels > 0 ? e->channels : 1);
  group_rank chosen = {1e9, 1e9, -1, 0}, slowest = {1e9, 1e9, -1, 0};
  for (int i = 0, n; i < p->n_measured; i += n) {
    const dccl_measured_point* g = &p->measured[i];
    n = group_length(p, i);
    if (g->coll != coll) continue;
    double latency = group_latency_us(g, n, bytes), gap = size_gap(g, n, bytes);
    keep_better(&slowest, gap, -latency, latency, g->channels);
    if (g->algo == e->algo && g->proto == e->proto)
      keep_better(&chosen, gap, fabs(log2((double)g->channels) - want), latency, g->channels);
  }
  if (channels != NULL) *channels = chosen.latency > 0 ? chosen.channels : e->channels;
  return chosen.latency > 0 ? chosen.latency : slowest.latency > 0 ? 2.0 * slowest.latency : -1;
}

int dccl_truth_measured_channels(const dccl_profile* p, int coll, double bytes, const dccl_execution* e) {
  int channels = e->channels;
  if (p->n_measured > 0) measured_latency_us(p, coll, bytes > 0 ? bytes : 1.0, e, &channels);
  return channels;
}

double dccl_truth_latency_us(const dccl_profile* p, int coll, size_t bytes, int num_pipe_ops, const dccl_execution* e,
                             const dccl_conditions* c) {
  double measured = p->n_measured > 0 ? measured_latency_us(p, coll, bytes > 0 ? (double)bytes : 1.0, e, NULL) : -1;
  if (measured <= 0) return model_latency_us(p, coll, bytes, num_pipe_ops, e, c); /* no measurement: the model */
  if (c->congestion <= 0 && c->interference <= 0) return measured;
  /* Congestion and interference act on the measurement as they act on the model. */
  static const dccl_conditions calm = {0.0, 0.0};
  double calm_model = model_latency_us(p, coll, bytes, num_pipe_ops, e, &calm);
  return calm_model > 0 ? measured * model_latency_us(p, coll, bytes, num_pipe_ops, e, c) / calm_model : measured;
}
