/* tests/test_sim.c: simulator invariants and the published behaviours it must reproduce: the oracle is
 * never beaten, throughput is unimodal in channels and chunk size, NCCL's default is suboptimal where
 * the papers say, interference and congestion move the best action, noise is seeded and unbiased; a
 * replay profile's truth is its measurements (interpolated, nearest channels, unmeasured pairs
 * penalised, bad lines refused), and the shipped replay of the GPU runs makes NCCL choose as the real
 * NCCL chose. */
#include "../core/rng.h"
#include "../sim/sim.h"
#include "test.h"

static const char* const profiles[] = {"nvlink-h100x8", "pcie-8gpu", "h100-2x8-ib", "h100-4x8-ib", "roce-16x1",
                                       "sockets-1gpu-4ranks"};
static dccl_sim sim;

static void load(const char* name) {
  char path[512], error[512];
  dccl_profile profile;
  snprintf(path, sizeof(path), "%s/scenarios/profiles/%s.profile", DYNAMICCL_SOURCE_DIR, name);
  if (dccl_profile_load(path, &profile, error, sizeof(error)) != 0 ||
      dccl_sim_init(&sim, &profile, NULL, 1, 1, error, sizeof(error)) != 0) {
    fprintf(stderr, "%s\n", error);
    exit(1);
  }
}

static double latency_of(int coll, size_t bytes, dccl_action action, const dccl_conditions* c) {
  dccl_call call = {.coll = coll, .bytes = bytes, .pipe_ops = 1};
  dccl_execution e;
  if (dccl_sim_execute(&sim, &call, action, &e) != 0) return INFINITY;
  return dccl_sim_true_us(&sim, &call, &e, c);
}

/* Best latency of one (algorithm, protocol) over channels (and chunks when tune_chunk). */
static double best_of_pair(int coll, size_t bytes, int algo, int proto, int tune_chunk, const dccl_conditions* c) {
  double best = INFINITY;
  static const int channels[] = {0, 1, 2, 4, 8, 12, 16, 24, 32};
  for (size_t i = 0; i < sizeof(channels) / sizeof(channels[0]); i++)
    for (int k = tune_chunk ? 15 : 0; k <= (tune_chunk ? 21 : 0); k++) {
      dccl_action a = dccl_action_make(algo, proto, channels[i], tune_chunk && k >= 15 ? k : 0);
      float cost[21];
      dccl_nccl_cost_table(&sim.model, coll, bytes, 1, cost);
      if (cost[algo * 3 + proto] < 0) return INFINITY;
      double us = latency_of(coll, bytes, a, c);
      if (us < best) best = us;
    }
  return best;
}

static void test_oracle_never_beaten(void) {
  dccl_rng rng;
  dccl_rng_seed(&rng, 11);
  for (size_t p = 0; p <= sizeof(profiles) / sizeof(profiles[0]); p++) { /* the replay profile too */
    const char* name = p < sizeof(profiles) / sizeof(profiles[0]) ? profiles[p] : "h100-sockets-2ranks-replay";
    load(name);
    dccl_action_space_options options = {.max_channels = 32, .tune_chunk = 1};
    dccl_oracle oracle;
    CHECK(dccl_oracle_init(&oracle, &sim, &options) == 0);
    for (int q = 0; q < 150; q++) {
      dccl_call call = {.coll = (int)dccl_rng_below(&rng, 5),
                        .bytes = (size_t)1 << (8 + dccl_rng_below(&rng, 23)),
                        .pipe_ops = 1 + (int)dccl_rng_below(&rng, 3)};
      dccl_conditions c = {dccl_rng_below(&rng, 3) * 0.45, dccl_rng_below(&rng, 3) * 0.5};
      dccl_oracle_answer answer;
      dccl_oracle_query(&oracle, &call, &c, &answer);
      CHECK(answer.best_us <= answer.default_us);
      CHECK(isfinite(answer.best_us) && answer.best_us > 0);
      for (int i = 0; i < oracle.n_actions[call.coll]; i++) {
        dccl_execution e;
        if (dccl_sim_execute(&sim, &call, oracle.actions[call.coll][i], &e) != 0) continue;
        double us = dccl_sim_true_us(&sim, &call, &e, &c);
        CHECK_MSG(us >= answer.best_us * (1 - 1e-12), "%s: an action beat the oracle", name);
      }
      /* Cached answers equal fresh ones. */
      dccl_oracle_answer again;
      dccl_oracle_query(&oracle, &call, &c, &again);
      CHECK(again.best == answer.best && again.best_us == answer.best_us);
    }
    CHECK(oracle.hits > 0);
    dccl_oracle_free(&oracle);
    dccl_sim_free(&sim);
  }
}

/* Along one resource, latency falls then rises (no second valley): AutoCCL's unimodality. */
static int is_unimodal(const double* values, int n) {
  int rising = 0;
  for (int i = 1; i < n; i++) {
    if (values[i] > values[i - 1] * (1 + 1e-9)) rising = 1;
    else if (rising && values[i] < values[i - 1] * (1 - 1e-9)) return 0;
  }
  return 1;
}

static void test_unimodal_in_channels_and_chunk(void) {
  const int colls[] = {DCCL_COLL_ALLGATHER, DCCL_COLL_ALLREDUCE};
  for (size_t p = 0; p < sizeof(profiles) / sizeof(profiles[0]); p++) {
    load(profiles[p]);
    for (size_t ci = 0; ci < 2; ci++)
      for (size_t bytes = 1 << 16; bytes <= (1u << 30); bytes *= 16)
        for (int proto = 0; proto < 3; proto++) {
          dccl_conditions calm = {0, 0};
          float cost[21];
          dccl_nccl_cost_table(&sim.model, colls[ci], bytes, 1, cost);
          if (cost[DCCL_ALGO_RING * 3 + proto] < 0) continue;
          double by_channels[64];
          int n = 0;
          for (int ch = 1; ch <= sim.profile.channels; ch++)
            by_channels[n++] = latency_of(colls[ci], bytes, dccl_action_make(DCCL_ALGO_RING, proto, ch, 0), &calm);
          CHECK_MSG(is_unimodal(by_channels, n), "%s %s ring/%s %zu: not unimodal in channels", profiles[p],
                    dccl_coll_name(colls[ci]), dccl_proto_name(proto), bytes);
          double by_chunk[16];
          n = 0;
          for (int k = 15; k <= 21; k++)
            by_chunk[n++] = latency_of(colls[ci], bytes, dccl_action_make(DCCL_ALGO_RING, proto, 0, k), &calm);
          CHECK_MSG(is_unimodal(by_chunk, n), "%s %s ring/%s %zu: not unimodal in chunk", profiles[p],
                    dccl_coll_name(colls[ci]), dccl_proto_name(proto), bytes);
        }
    dccl_sim_free(&sim);
  }
}

/* AutoCCL section 3: on a PCIe 8-GPU node NCCL's default reaches only about 81% of the best AllGather
 * bandwidth at 80 MB-class sizes (here with chunk tuning, which the tuner ABI allows from v6). */
static void test_pcie_allgather_gap(void) {
  load("pcie-8gpu");
  dccl_action_space_options options = {.max_channels = 32, .tune_chunk = 1};
  dccl_oracle oracle;
  dccl_oracle_init(&oracle, &sim, &options);
  dccl_conditions calm = {0, 0};
  dccl_call call = {.coll = DCCL_COLL_ALLGATHER, .bytes = 64u << 20, .pipe_ops = 1};
  dccl_oracle_answer a;
  dccl_oracle_query(&oracle, &call, &calm, &a);
  double fraction = a.best_us / a.default_us;
  CHECK_MSG(fraction > 0.77 && fraction < 0.85, "default reaches %.3f of the best", fraction);
  dccl_oracle_free(&oracle);
  dccl_sim_free(&sim);
}

/* AllReduce on PCIe: tree beats ring over a range of sizes while NCCL's model keeps choosing ring. */
static void test_pcie_tree_beats_ring_somewhere(void) {
  load("pcie-8gpu");
  dccl_conditions calm = {0, 0};
  int tree_wins = 0, ring_wins = 0;
  for (size_t bytes = 1024; bytes <= (1u << 30); bytes *= 2) {
    double tree = best_of_pair(DCCL_COLL_ALLREDUCE, bytes, DCCL_ALGO_TREE, DCCL_PROTO_SIMPLE, 0, &calm);
    double ring = best_of_pair(DCCL_COLL_ALLREDUCE, bytes, DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 0, &calm);
    dccl_execution nccl;
    dccl_call call = {.coll = DCCL_COLL_ALLREDUCE, .bytes = bytes, .pipe_ops = 1};
    dccl_sim_execute(&sim, &call, DCCL_ACTION_NCCL, &nccl);
    if (tree < ring && nccl.algo == DCCL_ALGO_RING) tree_wins++;
    if (ring < tree) ring_wins++;
  }
  CHECK_MSG(tree_wins >= 3, "tree wins %d sizes NCCL gives to ring", tree_wins);
  CHECK(ring_wins >= 3);
  dccl_sim_free(&sim);
}

/* Demystifying NCCL: inter-node, LL/LL128 win below ~64 KiB and Simple above. On the RoCE profile
 * (one GPU per NIC, like that study) the tree's Simple overtakes LL and LL128 between 32 and 256 KiB,
 * while NCCL's model keeps LL128 to megabytes. */
static void test_internode_protocol_crossover(void) {
  load("roce-16x1");
  dccl_conditions calm = {0, 0};
  size_t crossover = 0;
  for (size_t bytes = 4096; bytes <= (1u << 26) && crossover == 0; bytes *= 2) {
    double ll = best_of_pair(DCCL_COLL_ALLREDUCE, bytes, DCCL_ALGO_TREE, DCCL_PROTO_LL, 0, &calm);
    double ll128 = best_of_pair(DCCL_COLL_ALLREDUCE, bytes, DCCL_ALGO_TREE, DCCL_PROTO_LL128, 0, &calm);
    double simple = best_of_pair(DCCL_COLL_ALLREDUCE, bytes, DCCL_ALGO_TREE, DCCL_PROTO_SIMPLE, 0, &calm);
    if (simple < ll && simple < ll128) crossover = bytes;
  }
  CHECK_MSG(crossover >= 32768 && crossover <= 262144, "crossover at %zu bytes", crossover);
  dccl_call call = {.coll = DCCL_COLL_ALLREDUCE, .bytes = 1 << 20, .pipe_ops = 1};
  dccl_execution nccl;
  dccl_sim_execute(&sim, &call, DCCL_ACTION_NCCL, &nccl);
  CHECK(nccl.proto != DCCL_PROTO_SIMPLE);
  dccl_sim_free(&sim);
}

/* AutoCCL Table 6: heavy compute interference costs NCCL's default AllGather 25-45% of its bandwidth,
 * and the best configuration under heavy interference still beats the calm default. */
static void test_interference(void) {
  load("nvlink-h100x8");
  dccl_action_space_options options = {.max_channels = 32, .tune_chunk = 1};
  dccl_oracle oracle;
  dccl_oracle_init(&oracle, &sim, &options);
  dccl_call call = {.coll = DCCL_COLL_ALLGATHER, .bytes = 64u << 20, .pipe_ops = 1};
  dccl_conditions calm = {0, 0}, heavy = {0, 1.0};
  dccl_oracle_answer a_calm, a_heavy;
  dccl_oracle_query(&oracle, &call, &calm, &a_calm);
  dccl_oracle_query(&oracle, &call, &heavy, &a_heavy);
  double loss = 1.0 - a_calm.default_us / a_heavy.default_us;
  CHECK_MSG(loss > 0.25 && loss < 0.45, "default loses %.2f of its bandwidth", loss);
  CHECK(a_heavy.best_us < a_calm.default_us);
  dccl_oracle_free(&oracle);
  dccl_sim_free(&sim);
}

/* Network congestion slows network-bound calls and changes the best action for some sizes. */
static void test_congestion_moves_the_best_action(void) {
  load("roce-16x1");
  dccl_action_space_options options = {.max_channels = 32, .tune_chunk = 0};
  dccl_oracle oracle;
  dccl_oracle_init(&oracle, &sim, &options);
  int changed = 0;
  for (size_t bytes = 1024; bytes <= (1u << 30); bytes *= 2) {
    dccl_call call = {.coll = DCCL_COLL_ALLREDUCE, .bytes = bytes, .pipe_ops = 1};
    dccl_conditions calm = {0, 0}, congested = {0.7, 0};
    dccl_oracle_answer a, b;
    dccl_oracle_query(&oracle, &call, &calm, &a);
    dccl_oracle_query(&oracle, &call, &congested, &b);
    CHECK(b.best_us > a.best_us);
    if (a.best != b.best) changed++;
  }
  CHECK_MSG(changed >= 5, "best action changed at %d sizes", changed);
  dccl_oracle_free(&oracle);
  dccl_sim_free(&sim);
}

/* A measurement of an AllReduce of 1 KiB (the profiles below give every size the same noise). */
static double measure_ar1k(const dccl_sim* simulator, double true_us, const dccl_conditions* c, uint64_t call,
                           int rank) {
  return dccl_sim_measure(simulator, DCCL_COLL_ALLREDUCE, 1024, true_us, c, call, rank);
}

static void test_noise_is_seeded_and_unbiased(void) {
  load("h100-2x8-ib");
  dccl_conditions calm = {0, 0};
  static double samples[20001];
  int n = 20001;
  for (int i = 0; i < n; i++) samples[i] = measure_ar1k(&sim, 100.0, &calm, (uint64_t)i, 0);
  CHECK(measure_ar1k(&sim, 100.0, &calm, 5, 0) == samples[5]); /* deterministic per call */
  CHECK(measure_ar1k(&sim, 100.0, &calm, 5, 1) != samples[5]); /* per-rank jitter */
  CHECK(fabs(measure_ar1k(&sim, 100.0, &calm, 5, 1) / samples[5] - 1) < 0.05);
  int below = 0;
  double log_sum = 0, log_square = 0;
  for (int i = 0; i < n; i++) {
    below += samples[i] < 100.0;
    double l = log(samples[i] / 100.0);
    log_sum += l;
    log_square += l * l;
  }
  CHECK_MSG(fabs(below / (double)n - 0.5) < 0.02, "median off: %d of %d below", below, n);
  double sigma = sqrt(log_square / n - (log_sum / n) * (log_sum / n));
  CHECK_MSG(fabs(sigma - sim.profile.truth.noise_sigma) < 0.01, "sigma %.4f", sigma);
  /* Another seed gives other noise. */
  dccl_sim other;
  char error[256];
  CHECK(dccl_sim_init(&other, &sim.profile, NULL, 2, 1, error, sizeof(error)) == 0);
  CHECK(measure_ar1k(&other, 100.0, &calm, 5, 0) != samples[5]);
  dccl_sim_free(&other);
  dccl_sim_free(&sim);
}

static const char* replay_base =
  "name = replay-test\nnodes = 2\nranks_per_node = 1\ncompute_capability = 90\nchannels = 2\n"
  "graph.ring.channels = 2\ngraph.ring.bw_intra = 0.8\ngraph.ring.bw_inter = 0.8\n"
  "graph.ring.type_intra = LOC\ngraph.ring.type_inter = SYS\n"
  "truth.net.link_bw = 3\ntruth.net.channel_bw.ll = 0.4\ntruth.net.channel_bw.ll128 = 1\n"
  "truth.net.channel_bw.simple = 1.6\n";

static double replay_latency(const dccl_profile* p, int coll, size_t bytes, int algo, int proto, int channels) {
  dccl_execution e = {algo, proto, channels, 512, 65536};
  dccl_conditions calm = {0, 0};
  return dccl_truth_latency_us(p, coll, bytes, 1, &e, &calm);
}

/* Parses replay_base followed by `lines` into `p`: 0, or the parser's error in `error`. */
static int parse_after_replay_base(const char* lines, dccl_profile* p, char* error, size_t error_size) {
  static char text[8192];
  snprintf(text, sizeof(text), "%s%s", replay_base, lines);
  return dccl_profile_parse(text, "test", p, error, error_size);
}

/* Each of `lines`, after replay_base, makes the profile unparsable, with `key` named in the error. */
static void check_refused(const char* const* lines, size_t count, const char* key) {
  static dccl_profile p;
  char error[256];
  for (size_t i = 0; i < count; i++) {
    error[0] = '\0';
    CHECK_MSG(parse_after_replay_base(lines[i], &p, error, sizeof(error)) != 0 && strstr(error, key) != NULL,
              "accepted or unclear: %s -> %s", lines[i], error);
  }
}

static void test_replay_profile_truth(void) {
  char error[256];
  static dccl_profile p;
  CHECK(parse_after_replay_base("measured = allreduce 1024 ring/ll/ch=1 40\n"
                                "measured = allreduce 4096 ring/ll/ch=1 90\n"
                                "measured = allreduce 1024 ring/ll/ch=4 30\n"
                                "measured = allreduce 1024 ring/simple/ch=2 100\n"
                                "measured = allreduce 4096 ring/simple/ch=2 120\n",
                                &p, error, sizeof(error)) == 0);
  CHECK_EQ_INT(p.n_measured, 5);
  int ar = DCCL_COLL_ALLREDUCE, ring = DCCL_ALGO_RING, ll = DCCL_PROTO_LL, simple = DCCL_PROTO_SIMPLE;
  CHECK(fabs(replay_latency(&p, ar, 1024, ring, ll, 1) - 40) < 1e-9);   /* measured points exactly */
  CHECK(fabs(replay_latency(&p, ar, 4096, ring, ll, 1) - 90) < 1e-9);
  CHECK(fabs(replay_latency(&p, ar, 2048, ring, ll, 1) - 60) < 1e-9);   /* log-log: sqrt(40 * 90) */
  CHECK(fabs(replay_latency(&p, ar, 256, ring, ll, 1) - 40) < 1e-9);    /* flat below */
  CHECK(fabs(replay_latency(&p, ar, 8192, ring, ll, 1) - 180) < 1e-9);  /* proportional above */
  CHECK(fabs(replay_latency(&p, ar, 1024, ring, ll, 8) - 30) < 1e-9);   /* nearest channels: 4 */
  CHECK(fabs(replay_latency(&p, ar, 1024, ring, ll, 2) - 40) < 1e-9);   /* tie between 1 and 4: fewer */
  CHECK(fabs(replay_latency(&p, ar, 1024, ring, ll, 3) - 30) < 1e-9);   /* log2 distance: 3 is nearer 4 */
  /* ch=4 was measured at 1 KiB only: at 4 KiB the group that covers the size (ch=1) answers, rather
   * than ch=4 extrapolated (120); beyond every group, the nearest in size (ch=1, proportional). */
  CHECK(fabs(replay_latency(&p, ar, 4096, ring, ll, 4) - 90) < 1e-9);
  CHECK(fabs(replay_latency(&p, ar, 16384, ring, ll, 4) - 360) < 1e-9);
  /* A pair never measured costs twice the slowest measured one at that size. */
  CHECK(fabs(replay_latency(&p, ar, 1024, DCCL_ALGO_TREE, ll, 2) - 200) < 1e-9);
  CHECK(fabs(replay_latency(&p, ar, 4096, DCCL_ALGO_TREE, simple, 2) - 240) < 1e-9);
  /* A collective never measured: the model. */
  CHECK(replay_latency(&p, DCCL_COLL_ALLGATHER, 4096, ring, ll, 1) > 0);
  /* Malformed lines are refused with the line named. */
  static const char* const bad[] = {"measured = allreduce 1024 ring/ll 40\n", "measured = allreduce 1024 nccl 40\n",
                                    "measured = allreduce -5 ring/ll/ch=1 40\n", "measured = allreduce 1024 ring/ll/ch=1 0\n",
                                    "measured = sideways 1024 ring/ll/ch=1 40\n", "measured = allreduce 1024 ring/ll/ch=1\n",
                                    "measured = allreduce 1024 ring/ll/ch=1 40 extra\n",
                                    "measured = allreduce 1024 ring/ll/ch=1/chunk=64K 40\n", /* not dropped silently */
                                    "measured = allreduce 1024 ring/ll/ch=1 40\nmeasured = allreduce 1024 ring/ll/ch=1 41\n",
                                    "measured = allreduce 1024 ring/ll/ch=1 40\nmeasured = allreduce 1.024e3 ring/ll/ch=1 40\n"};
  check_refused(bad, sizeof(bad) / sizeof(bad[0]), "measured");
}

/* One call's leftover shares, for the tests below. */
static double later_share(const dccl_sim* simulator, const dccl_execution* e, int coll, size_t bytes, uint64_t index,
                          double* longer) {
  dccl_call call = {.index = index, .coll = coll, .bytes = bytes};
  double later, longer_here;
  dccl_sim_leftover(simulator, &call, e, &later, &longer_here);
  if (longer != NULL) *longer = longer_here;
  return later;
}

/* `leftover` lines: found by the execution that ran, 0 for any other; with a spread, drawn per call
 * around the line's share (the same for a call every time, another under another seed), else that share
 * on every call; points at sizes interpolated in log2(bytes) per collective; both forms on one action;
 * malformed lines refused. */
static void test_leftover_lines(void) {
  char error[256];
  static dccl_profile p;
  static dccl_sim leftover_sim;
  CHECK(parse_after_replay_base(
            "leftover = tree/simple/ch=2 later 0.32 spread 0.24\nleftover = tree/ll/ch=1 longer 0.08\n"
            "leftover = tree/ll/ch=2 later 0.6 spread 0.5\nleftover = ring/ll/ch=1 longer 0.1 spread 0.3\n"
            "leftover = pat/simple/ch=1 later 0.4 at allgather 16K\n"
            "leftover = pat/simple/ch=1 later 0.6 spread 0.2 at allgather 65536\n"
            "leftover = pat/simple/ch=1 later 0.06 spread 0.4 at allgather 64M\n"
            "leftover = pat/simple/ch=1 later 0.1 at reducescatter 1K\n"
            "leftover = tree/ll/ch=1 later 0.05\nleftover = tree/ll/ch=2 longer 0.5\n"
            "leftover = ring/simple/ch=1 later 0.2 spread 0.3\nleftover = ring/simple/ch=1 longer 0.2 spread 0.3\n",
            &p, error, sizeof(error)) == 0);
  CHECK_EQ_INT(p.n_leftovers, 12);
  CHECK(dccl_sim_init(&leftover_sim, &p, NULL, 1, 100, error, sizeof(error)) == 0);
  dccl_execution tree2 = {.algo = DCCL_ALGO_TREE, .proto = DCCL_PROTO_SIMPLE, .channels = 2};
  dccl_execution tree1 = {.algo = DCCL_ALGO_TREE, .proto = DCCL_PROTO_LL, .channels = 1};
  dccl_execution tree_ll2 = {.algo = DCCL_ALGO_TREE, .proto = DCCL_PROTO_LL, .channels = 2};
  dccl_execution ring = {.algo = DCCL_ALGO_RING, .proto = DCCL_PROTO_SIMPLE, .channels = 2};
  dccl_execution tree_four = {.algo = DCCL_ALGO_TREE, .proto = DCCL_PROTO_SIMPLE, .channels = 4};
  dccl_execution pat = {.algo = DCCL_ALGO_PAT, .proto = DCCL_PROTO_SIMPLE, .channels = 1};
  const int AR = DCCL_COLL_ALLREDUCE, AG = DCCL_COLL_ALLGATHER, RS = DCCL_COLL_REDUCESCATTER;
  double longer;
  for (uint64_t call = 0; call < 3; call++) {
    /* tree/LL on 1 channel: both forms, as given at every size and collective */
    CHECK(fabs(later_share(&leftover_sim, &tree1, AR, 1 << 20, call, &longer) - 0.05) < 1e-12 && fabs(longer - 0.08) < 1e-12);
    CHECK(fabs(later_share(&leftover_sim, &tree1, AG, 1024, call, &longer) - 0.05) < 1e-12 && fabs(longer - 0.08) < 1e-12);
    CHECK(later_share(&leftover_sim, &ring, AR, 1 << 20, call, &longer) == 0 && longer == 0);
    CHECK(later_share(&leftover_sim, &tree_four, AR, 1 << 20, call, &longer) == 0 && longer == 0);
  }
  /* Points: as given at their sizes, linear in log2(bytes) between them, the end point's beyond the ends,
   * and only for their collective. */
  struct { int coll; size_t bytes; double share; } points[] = {
    {AG, 16384, 0.4}, {AG, 32768, 0.5}, {AG, 1024, 0.4}, {AG, 65536, 0.6}, {AG, 1 << 20, 0.6 + 0.4 * (0.06 - 0.6)},
    {AG, 1ull << 26, 0.06}, {AG, 1ull << 30, 0.06}, {RS, 1 << 20, 0.1}, {AR, 16384, 0}};
  for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
    double spread, share = dccl_profile_leftover(&p, DCCL_LEFTOVER_LATER, points[i].coll, DCCL_ALGO_PAT,
                                                 DCCL_PROTO_SIMPLE, 1, (double)points[i].bytes, &spread);
    CHECK_MSG(fabs(share - points[i].share) < 1e-12, "point %zu: share %.4f, expected %.4f", i, share, points[i].share);
  }
  double spread;
  CHECK(fabs(dccl_profile_leftover(&p, DCCL_LEFTOVER_LATER, AG, DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE, 1, 1 << 21, &spread) -
             (0.6 + 0.5 * (0.06 - 0.6))) < 1e-12 &&
        fabs(spread - 0.3) < 1e-12);
  CHECK(later_share(&leftover_sim, &pat, AG, 16384, 7, NULL) == 0.4); /* spread 0: as given on every call */
  CHECK(later_share(&leftover_sim, &pat, AG, 65536, 7, NULL) != 0.6); /* spread 0.2: drawn */
  /* Spread 0.24 around 0.32: mean and coefficient of variation as given (clipping at 0 and 0.9 is
   * beyond 4 standard deviations); spread 0.5 around 0.6: clipped at 0.9 where the draw is a standard
   * deviation above, in 16% of calls; with a `longer` 0.5 beside it, the two together at most 0.9. */
  double sum = 0, squares = 0, clipped = 0;
  const int n = 20000;
  for (uint64_t call = 0; call < (uint64_t)n; call++) {
    double share = later_share(&leftover_sim, &tree2, AR, 1 << 20, call, NULL);
    CHECK(share == later_share(&leftover_sim, &tree2, AR, 1 << 20, call, NULL));
    sum += share;
    squares += share * share;
    double wide = later_share(&leftover_sim, &tree_ll2, AR, 1 << 20, call, &longer);
    CHECK(wide >= 0 && wide <= 0.9 && longer >= 0 && wide + longer <= 0.9 + 1e-12);
    clipped += wide == 0.9;
  }
  double mean = sum / n, sd = sqrt(squares / n - mean * mean);
  CHECK_MSG(fabs(mean - 0.32) < 0.003, "mean share %.4f", mean);
  CHECK_MSG(fabs(sd / mean - 0.24) < 0.01, "coefficient of variation %.4f", sd / mean);
  CHECK_MSG(clipped / n > 0.145 && clipped / n < 0.175, "%.3f of the calls clipped", clipped / n);
  /* Another seed draws other shares; a `longer` line takes a spread too. */
  static dccl_sim other_seed;
  CHECK(dccl_sim_init(&other_seed, &p, NULL, 2, 100, error, sizeof(error)) == 0);
  dccl_execution ring_ll1 = {.algo = DCCL_ALGO_RING, .proto = DCCL_PROTO_LL, .channels = 1};
  int differ = 0, longer_varies = 0;
  for (uint64_t call = 0; call < 100; call++) {
    differ += later_share(&leftover_sim, &tree2, AR, 4096, call, NULL) != later_share(&other_seed, &tree2, AR, 4096, call, NULL);
    CHECK(later_share(&leftover_sim, &ring_ll1, AR, 4096, call, &longer) == 0);
    longer_varies += fabs(longer - 0.1) > 1e-9;
  }
  /* The two forms of one action draw apart (their own tags): uncorrelated over calls. */
  dccl_execution ring1 = {.algo = DCCL_ALGO_RING, .proto = DCCL_PROTO_SIMPLE, .channels = 1};
  double sum_later = 0, sum_longer = 0, sum_product = 0, squares_later = 0, squares_longer = 0;
  for (uint64_t call = 0; call < 2000; call++) {
    double later = later_share(&leftover_sim, &ring1, AR, 4096, call, &longer);
    sum_later += later, sum_longer += longer, sum_product += later * longer;
    squares_later += later * later, squares_longer += longer * longer;
  }
  double covariance = sum_product / 2000 - sum_later / 2000 * sum_longer / 2000;
  double correlation = covariance / sqrt((squares_later / 2000 - pow(sum_later / 2000, 2)) *
                                         (squares_longer / 2000 - pow(sum_longer / 2000, 2)));
  CHECK_MSG(fabs(correlation) < 0.1, "the forms' draws correlate %.3f", correlation);
  CHECK_MSG(differ >= 95, "%d of 100 calls drew another share under another seed", differ);
  CHECK_MSG(longer_varies >= 95, "%d of 100 calls drew another share than 0.1", longer_varies);
  dccl_sim_free(&other_seed);
  dccl_sim_free(&leftover_sim);
  static const char* const bad[] = {"leftover = tree/simple later 0.3\n", "leftover = nccl later 0.3\n",
                                    "leftover = tree/simple/ch=2 sooner 0.3\n", "leftover = tree/simple/ch=2 later 0.95\n",
                                    "leftover = tree/simple/ch=2 later -0.1\n", "leftover = tree/simple/ch=2 later\n",
                                    "leftover = tree/simple/ch=2 later 0.3 extra\n",
                                    "leftover = tree/simple/ch=2/chunk=64K later 0.3\n",
                                    "leftover = tree/simple/ch=2 later 0.3x\n",
                                    "leftover = tree/simple/ch=2 later nan\n",
                                    "leftover = tree/simple/ch=2 later 0.3 spread\n",
                                    "leftover = tree/simple/ch=2 later 0.3 spread -0.1\n",
                                    "leftover = tree/simple/ch=2 later 0.3 spread 2.5\n",
                                    "leftover = tree/simple/ch=2 later 0.3 spreads 0.2\n",
                                    "leftover = tree/simple/ch=2 later 0.3 spread 0.2 more\n",
                                    "leftover = tree/simple/ch=2 later 0.3\nleftover = tree/simple/ch=2 later 0.1\n",
                                    "leftover = tree/simple/ch=2 later 0.3 at allreduce\n",
                                    "leftover = tree/simple/ch=2 later 0.3 at sideways 1K\n",
                                    "leftover = tree/simple/ch=2 later 0.3 at allreduce 0\n",
                                    "leftover = tree/simple/ch=2 later 0.3 at allreduce 1Q\n",
                                    "leftover = tree/simple/ch=2 later 0.3 at allreduce 1K more\n",
                                    "leftover = tree/simple/ch=2 later 0.3 at allreduce 1K spread 0.2\n",
                                    "leftover = tree/simple/ch=2 later 0.3 at allreduce 1K\nleftover = tree/simple/ch=2 later 0.2 at allreduce 1024\n",
                                    "leftover = tree/simple/ch=2 later 0.3 at allreduce 1K\nleftover = tree/simple/ch=2 later 0.2\n",
                                    "leftover = tree/simple/ch=2 later 0.3\nleftover = tree/simple/ch=2 later 0.2 at allreduce 1K\n"};
  check_refused(bad, sizeof(bad) / sizeof(bad[0]), "leftover");
}

/* A replay's leftover is the measured group's whose latency the call takes: where NCCL runs a request on a
 * channel count measured only at other sizes, the truth takes the count measured at this size, and so does
 * the work left behind (seed 9 of gpu-learn had tree/Simple on 2 channels at AllReduce 4 KiB take its
 * latency from the 1-channel point and leave 0.46 of it, the 2-channel share of 16 KiB and up). */
static void test_leftover_of_the_measured_group(void) {
  char error[256];
  static dccl_profile p;
  static dccl_sim replay_sim;
  CHECK_MSG(parse_after_replay_base(
                "measured = allreduce 1024 tree/simple/ch=1 50\nmeasured = allreduce 4096 tree/simple/ch=1 56\n"
                "measured = allreduce 16384 tree/simple/ch=1 60\nmeasured = allreduce 16384 tree/simple/ch=2 70\n"
                "measured = allreduce 65536 tree/simple/ch=2 90\nmeasured = allreduce 1024 ring/ll/ch=1 40\n"
                "leftover = tree/simple/ch=1 later 0.1\nleftover = tree/simple/ch=2 later 0.5\n",
                &p, error, sizeof(error)) == 0,
            "%s", error);
  CHECK(dccl_sim_init(&replay_sim, &p, NULL, 1, 100, error, sizeof(error)) == 0);
  dccl_execution tree2 = {.algo = DCCL_ALGO_TREE, .proto = DCCL_PROTO_SIMPLE, .channels = 2};
  dccl_execution tree1 = {.algo = DCCL_ALGO_TREE, .proto = DCCL_PROTO_SIMPLE, .channels = 1};
  dccl_execution ring2 = {.algo = DCCL_ALGO_RING, .proto = DCCL_PROTO_SIMPLE, .channels = 2};
  int AR = DCCL_COLL_ALLREDUCE;
  dccl_conditions calm = {0, 0};
  struct { const dccl_execution* e; size_t bytes; int channels; double latency, later; } cases[] = {
    {&tree2, 4096, 1, 56, 0.1},   /* 2 channels measured only from 16 KiB: the 1-channel group's */
    {&tree2, 65536, 2, 90, 0.5},  /* beyond the 1-channel group: the 2-channel one's */
    {&tree2, 16384, 2, 70, 0.5},  /* both measured here: the nearer channel count */
    {&tree1, 65536, 2, 90, 0.5},  /* 1 channel measured only up to 16 KiB */
    {&tree1, 1024, 1, 50, 0.1},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    dccl_call call = {.index = 1, .coll = AR, .bytes = cases[i].bytes};
    CHECK_EQ_INT(dccl_truth_measured_channels(&p, AR, (double)cases[i].bytes, cases[i].e), cases[i].channels);
    CHECK(fabs(dccl_sim_true_us(&replay_sim, &call, cases[i].e, &calm) - cases[i].latency) < 1e-9);
    CHECK_MSG(fabs(later_share(&replay_sim, cases[i].e, AR, cases[i].bytes, 1, NULL) - cases[i].later) < 1e-12,
              "case %zu: later %.3f", i, later_share(&replay_sim, cases[i].e, AR, cases[i].bytes, 1, NULL));
  }
  /* An algorithm and protocol never measured: its own channel count (no leftover line here: 0). */
  CHECK_EQ_INT(dccl_truth_measured_channels(&p, AR, 4096, &ring2), 2);
  CHECK(later_share(&replay_sim, &ring2, AR, 4096, 1, NULL) == 0);
  dccl_sim_free(&replay_sim);
  /* A profile without measurements: the execution's own count, and its lines as they are. */
  static dccl_profile model;
  CHECK(parse_after_replay_base("leftover = tree/simple/ch=2 later 0.5\n", &model, error, sizeof(error)) == 0);
  CHECK_EQ_INT(dccl_truth_measured_channels(&model, AR, 4096, &tree2), 2);
}

/* A drift: one factor per segment of calls, shared by every action; the true latency is untouched. */
static void test_drift_is_shared_within_a_segment(void) {
  char error[256];
  static dccl_profile p;
  CHECK(parse_after_replay_base(
            "noise.sigma = 0\nnoise.spike_probability = 0\nnoise.drift_sigma = 0.2\nnoise.drift_calls = 100\n", &p,
            error, sizeof(error)) == 0);
  CHECK(dccl_sim_init(&sim, &p, NULL, 3, 1, error, sizeof(error)) == 0);
  dccl_conditions calm = {0, 0};
  CHECK(measure_ar1k(&sim, 100.0, &calm, 0, 0) == measure_ar1k(&sim, 100.0, &calm, 99, 0));
  CHECK(fabs(measure_ar1k(&sim, 50.0, &calm, 7, 0) / measure_ar1k(&sim, 100.0, &calm, 7, 0) - 0.5) < 1e-12);
  double sum = 0, sum2 = 0;
  int segments = 400, changed = 0;
  for (int k = 0; k < segments; k++) {
    double x = log(measure_ar1k(&sim, 100.0, &calm, (uint64_t)k * 100, 0) / 100.0);
    sum += x;
    sum2 += x * x;
    changed += k > 0 && measure_ar1k(&sim, 100.0, &calm, (uint64_t)k * 100, 0) !=
                          measure_ar1k(&sim, 100.0, &calm, (uint64_t)(k - 1) * 100, 0);
  }
  double mean = sum / segments, sd = sqrt(sum2 / segments - mean * mean);
  CHECK_MSG(fabs(mean) < 0.04 && fabs(sd - 0.2) < 0.03, "drift: mean %.3f, sd %.3f", mean, sd);
  CHECK(changed == segments - 1);
  dccl_sim_free(&sim);
}

/* Bursts of slow calls: runs of 3 to burst_calls consecutive calls, each burst_scale / 4 to burst_scale
 * slower, the same on every rank, starting at the profile's rate; a length or a scale out of range is
 * refused. */
static void test_bursts_of_slow_calls(void) {
  char error[256];
  static dccl_profile p;
  CHECK_MSG(
      parse_after_replay_base(
          "noise.sigma = 0\nnoise.spike_probability = 0\nnoise.burst_probability = 0.002\nnoise.burst_calls = 12\n"
          "noise.burst_scale = 8\n",
          &p, error, sizeof(error)) == 0,
      "%s", error);
  CHECK(dccl_sim_init(&sim, &p, NULL, 11, 1, error, sizeof(error)) == 0);
  dccl_conditions calm = {0, 0};
  int calls = 400000, slowed = 0, runs = 0, run = 0, shortest = 1000, longest = 0, ranks_differ = 0;
  double least = 1e9, most = 0;
  for (int i = 0; i <= calls; i++) {
    double factor = i < calls ? measure_ar1k(&sim, 100.0, &calm, (uint64_t)i, 0) / 100.0 : 1.0;
    if (i < calls) ranks_differ += factor != measure_ar1k(&sim, 100.0, &calm, (uint64_t)i, 1) / 100.0;
    if (factor > 1.0) {
      slowed++;
      run++;
      least = fmin(least, factor);
      most = fmax(most, factor);
      continue;
    }
    if (run > 0) {
      runs++;
      shortest = run < shortest ? run : shortest;
      longest = run > longest ? run : longest;
    }
    run = 0;
  }
  /* The expected length: 3 + E[floor(10 u^2)], sum over k of k (sqrt((k + 1) / 10) - sqrt(k / 10)). */
  double expected_length = 3;
  for (int k = 1; k < 10; k++) expected_length += k * (sqrt((k + 1) / 10.0) - sqrt(k / 10.0));
  double expected_slowed = 0.002 * expected_length * calls;
  CHECK_MSG(fabs(slowed / expected_slowed - 1) < 0.1, "%d calls slowed, %.0f expected", slowed, expected_slowed);
  CHECK_MSG(runs > 600 && runs < 800, "%d bursts in %d calls", runs, calls); /* 800 started, a few overlap */
  CHECK_MSG(shortest == 3 && longest >= 12 && longest <= 24, "bursts of %d to %d calls", shortest, longest);
  CHECK_MSG(least >= 2.0 && least < 2.1 && most <= 8.0 && most > 7.9, "slowed %.2f to %.2fx", least, most);
  CHECK_EQ_INT(ranks_differ, 0);
  dccl_sim_free(&sim);
  /* Refused out of range. */
  CHECK(parse_after_replay_base("noise.burst_calls = 2\n", &p, error, sizeof(error)) != 0 &&
        strstr(error, "noise.burst_calls") != NULL);
  CHECK(parse_after_replay_base("noise.burst_scale = 3\n", &p, error, sizeof(error)) != 0 && /* would speed calls up */
        strstr(error, "noise.burst_scale") != NULL);
}

/* The spread of log(measured / true) over `n` calls of one collective and size (no spikes, no drift). */
static double measured_spread(const dccl_sim* simulator, int coll, double bytes, int n) {
  dccl_conditions calm = {0, 0};
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; i++) {
    double x = log(dccl_sim_measure(simulator, coll, bytes, 100.0, &calm, (uint64_t)i, 0) / 100.0);
    sum += x;
    sum2 += x * x;
  }
  double mean = sum / n;
  return sqrt(sum2 / n - mean * mean);
}

/* `noise.sigma_at` lines: a collective's per-call noise by size, interpolated in log2(bytes) between its
 * points, flat beyond them; other collectives keep noise.sigma; bad lines are refused with the reason. */
static void test_noise_by_collective_and_size(void) {
  char error[256];
  static dccl_profile p;
  CHECK_MSG(parse_after_replay_base("noise.sigma = 0.1\nnoise.spike_probability = 0\n"
                                    "noise.sigma_at = allgather 16384 0.2\nnoise.sigma_at = allgather 1024 0.8\n"
                                    "noise.sigma_at = allgather 1048576 0.05\n",
                                    &p, error, sizeof(error)) == 0,
            "%s", error);
  CHECK(p.n_noise_points == 3);
  int AG = DCCL_COLL_ALLGATHER;
  CHECK(fabs(dccl_profile_noise_sigma(&p, AG, 1024) - 0.8) < 1e-12);
  CHECK(fabs(dccl_profile_noise_sigma(&p, AG, 4096) - 0.5) < 1e-12);    /* halfway in log2 between 1 KiB and 16 KiB */
  CHECK(fabs(dccl_profile_noise_sigma(&p, AG, 16384) - 0.2) < 1e-12);
  CHECK(fabs(dccl_profile_noise_sigma(&p, AG, 131072) - 0.125) < 1e-12); /* halfway between 16 KiB and 1 MiB */
  CHECK(fabs(dccl_profile_noise_sigma(&p, AG, 256) - 0.8) < 1e-12);     /* flat beyond the ends */
  CHECK(fabs(dccl_profile_noise_sigma(&p, AG, 1 << 30) - 0.05) < 1e-12);
  CHECK(fabs(dccl_profile_noise_sigma(&p, DCCL_COLL_ALLREDUCE, 1024) - 0.1) < 1e-12);
  static dccl_sim noisy;
  CHECK(dccl_sim_init(&noisy, &p, NULL, 5, 1, error, sizeof(error)) == 0);
  /* The calls' spread follows: the shared noise's sigma and a quarter of it per rank (sqrt(1 + 1/16) x). */
  double small = measured_spread(&noisy, AG, 1024, 20000), large = measured_spread(&noisy, AG, 1048576, 20000),
         other = measured_spread(&noisy, DCCL_COLL_ALLREDUCE, 1024, 20000);
  CHECK_MSG(fabs(small / (0.8 * 1.0308) - 1) < 0.03 && fabs(large / (0.05 * 1.0308) - 1) < 0.03 &&
              fabs(other / (0.1 * 1.0308) - 1) < 0.03,
            "spreads %.4f %.4f %.4f", small, large, other);
  dccl_sim_free(&noisy);
  static const char* const bad[] = {"noise.sigma_at = allgather 1024\n", "noise.sigma_at = sideways 1024 0.2\n",
                                    "noise.sigma_at = allgather 0 0.2\n", "noise.sigma_at = allgather 1024 -0.1\n",
                                    "noise.sigma_at = allgather 1024 2.5\n", "noise.sigma_at = allgather 1024 nan\n",
                                    "noise.sigma_at = allgather 1024 0.2 more\n",
                                    "noise.sigma_at = allgather 1024 0.2\nnoise.sigma_at = allgather 1024 0.3\n"};
  check_refused(bad, sizeof(bad) / sizeof(bad[0]), "noise.sigma_at");
}

/* `noise.level_at` and `noise.alternation_at` lines and the run factor they make (dccl_sim_run_factor): a
 * level that every call of a run shares, whatever its action, drawn afresh for each run; an alternation of
 * an algorithm and protocol's calls within a run, exp(+a) and exp(-a) over cosh(a), whichever first drawn
 * per run, so that two consecutive calls average the measured latency; bad lines refused with the reason. */
static void test_noise_of_runs(void) {
  char error[256];
  static dccl_profile p;
  CHECK_MSG(parse_after_replay_base(
                "noise.level_at = allreduce 1024 0.2\nnoise.level_at = allreduce 1048576 0.1\n"
                "noise.alternation_at = allgather 1024 ring/ll 0.6\nnoise.alternation_at = allgather 65536 ring/ll 0\n"
                "noise.alternation_at = allgather 1024 pat/simple 0.3\n",
                &p, error, sizeof(error)) == 0,
            "%s", error);
  int AR = DCCL_COLL_ALLREDUCE, AG = DCCL_COLL_ALLGATHER;
  CHECK(fabs(dccl_profile_noise_level(&p, AR, 32768) - 0.15) < 1e-12); /* halfway in log2 */
  CHECK(fabs(dccl_profile_noise_level(&p, AR, 512) - 0.2) < 1e-12);
  CHECK(dccl_profile_noise_level(&p, AG, 1024) == 0);                  /* no points: none */
  CHECK(fabs(dccl_profile_noise_alternation(&p, AG, DCCL_ALGO_RING, DCCL_PROTO_LL, 8192) - 0.3) < 1e-12);
  CHECK(fabs(dccl_profile_noise_alternation(&p, AG, DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE, 1 << 20) - 0.3) < 1e-12);
  CHECK(dccl_profile_noise_alternation(&p, AG, DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 1024) == 0);
  CHECK(dccl_profile_noise_alternation(&p, AR, DCCL_ALGO_RING, DCCL_PROTO_LL, 1024) == 0);
  CHECK(fabs(dccl_profile_noise_sigma(&p, AR, 1024) - p.truth.noise_sigma) < 1e-12); /* the per-call noise apart */

  static dccl_sim runs;
  CHECK(dccl_sim_init(&runs, &p, NULL, 9, 1, error, sizeof(error)) == 0);
  dccl_execution ring_ll = {DCCL_ALGO_RING, DCCL_PROTO_LL, 1, 0, 0}, tree_simple = {DCCL_ALGO_TREE, DCCL_PROTO_SIMPLE, 2, 0, 0};
  /* Levels: one per run of 13 calls, every call and action alike; their spread is the line's. */
  double sum = 0, square = 0;
  int runs_counted = 4000, shared = 1;
  for (int k = 0; k < runs_counted; k++) {
    dccl_call call = {.coll = AR, .bytes = 1024, .run_start = 13 * (uint64_t)k};
    call.index = call.run_start;
    double level = dccl_sim_run_factor(&runs, &call, &ring_ll);
    for (int i = 1; i < 13; i++) {
      call.index = call.run_start + (uint64_t)i;
      shared &= dccl_sim_run_factor(&runs, &call, i % 2 ? &tree_simple : &ring_ll) == level;
    }
    sum += log(level);
    square += log(level) * log(level);
  }
  CHECK(shared);
  double mean = sum / runs_counted, spread = sqrt(square / runs_counted - mean * mean);
  CHECK_MSG(fabs(mean) < 0.01 && fabs(spread - 0.2) < 0.01, "levels: mean %.4f, spread %.4f", mean, spread);
  /* Alternation: consecutive calls of a run a factor exp(2a) apart, averaging 1; the slow one first in about
   * half of the runs; another action in between keeps the count by position. */
  int slow_first = 0, alternates = 1, averages = 1;
  for (int k = 0; k < runs_counted; k++) {
    dccl_call call = {.coll = AG, .bytes = 1024, .run_start = 1000 + 7 * (uint64_t)k};
    double factors[7];
    for (int i = 0; i < 7; i++) {
      call.index = call.run_start + (uint64_t)i;
      factors[i] = dccl_sim_run_factor(&runs, &call, &ring_ll);
    }
    slow_first += factors[0] > 1;
    for (int i = 0; i + 1 < 7; i++) {
      alternates &= fabs(fabs(log(factors[i] / factors[i + 1])) - 1.2) < 1e-9;
      averages &= fabs((factors[i] + factors[i + 1]) / 2 - 1) < 1e-9;
    }
    alternates &= fabs(factors[0] - factors[2]) < 1e-12 && fabs(factors[2] - factors[6]) < 1e-12;
  }
  CHECK(alternates && averages);
  CHECK_MSG(abs(slow_first - runs_counted / 2) < 150, "slow first in %d of %d runs", slow_first, runs_counted);
  dccl_call other_action = {.index = 1001, .coll = AG, .bytes = 1024, .run_start = 1000};
  CHECK(dccl_sim_run_factor(&runs, &other_action, &tree_simple) == 1.0); /* no alternation, no level */
  dccl_call beyond = {.index = 1, .coll = AG, .bytes = 65536, .run_start = 0};
  CHECK(dccl_sim_run_factor(&runs, &beyond, &ring_ll) == 1.0);          /* amplitude 0 at 64 KiB */
  dccl_call bad_start = {.index = 3, .coll = AR, .bytes = 1024, .run_start = 10}; /* a run from a later call: its own */
  dccl_call own = {.index = 3, .coll = AR, .bytes = 1024, .run_start = 3};
  CHECK(dccl_sim_run_factor(&runs, &bad_start, &ring_ll) == dccl_sim_run_factor(&runs, &own, &ring_ll));
  dccl_sim_free(&runs);

  static const char* const bad[] = {
    "noise.level_at = allreduce 1024\n", "noise.level_at = allreduce 1024 -0.1\n", "noise.level_at = allreduce 0 0.1\n",
    "noise.level_at = allreduce 1024 0.1\nnoise.level_at = allreduce 1024 0.2\n",
    "noise.alternation_at = allgather 1024 0.5\n", "noise.alternation_at = allgather 1024 ring 0.5\n",
    "noise.alternation_at = allgather 1024 ring/fast 0.5\n", "noise.alternation_at = allgather 1024 ring/ll 2.5\n",
    "noise.alternation_at = allgather 1024 ring/ll nan\n", "noise.alternation_at = allgather 1024 ring/ll 0.5 more\n",
    "noise.alternation_at = allgather 1024 ring/ll 0.5\nnoise.alternation_at = allgather 1024 ring/ll 0.4\n"};
  check_refused(bad, 4, "noise.level_at");
  check_refused(bad + 4, sizeof(bad) / sizeof(bad[0]) - 4, "noise.alternation_at");
  /* One action's alternation and another's at one size, and a level there too, are not duplicates. */
  CHECK_MSG(
      parse_after_replay_base(
          "noise.alternation_at = allgather 1024 ring/ll 0.5\nnoise.alternation_at = allgather 1024 ring/simple 0.4\n"
          "noise.level_at = allgather 1024 0.1\nnoise.sigma_at = allgather 1024 0.1\n",
          &p, error, sizeof(error)) == 0,
      "%s", error);
}

/* The shipped replay of the GPU runs: the simulated NCCL chooses what the real NCCL 2.28.9 chose
 * (docs/results/gpu: the default entries' traces), and the measurements make NCCL's choice slower
 * than the best by the measured margins at small and middle sizes only. */
static void test_replay_of_gpu_runs(void) {
  load("h100-sockets-2ranks-replay");
  /* Every measured size (1 KiB to 64 MiB, x4) of every collective has ring/LL and ring/Simple on one
   * channel (what small sizes ran on whatever was asked), and the points are sorted into groups. */
  static const int colls[] = {DCCL_COLL_ALLREDUCE, DCCL_COLL_ALLGATHER, DCCL_COLL_REDUCESCATTER};
  for (int k = 0; k < 3; k++) {
    int c = colls[k], found = 0;
    for (int i = 0; i < sim.profile.n_measured; i++) {
      const dccl_measured_point* m = &sim.profile.measured[i];
      found += m->coll == c && m->algo == DCCL_ALGO_RING && m->channels == 1 &&
               (m->proto == DCCL_PROTO_LL || m->proto == DCCL_PROTO_SIMPLE);
      if (i > 0) {
        const dccl_measured_point* prev = &sim.profile.measured[i - 1];
        int same_group = prev->coll == m->coll && prev->algo == m->algo && prev->proto == m->proto &&
                         prev->channels == m->channels;
        CHECK(!same_group || prev->bytes < m->bytes);
      }
    }
    CHECK_MSG(found == 18, "%s: %d ring points on one channel, expected 2 x 9 sizes", dccl_coll_name(c), found);
  }
  static const struct { size_t bytes; int proto, channels; } real[] = {
    {1024, DCCL_PROTO_LL, 1}, {4096, DCCL_PROTO_LL, 1}, {16384, DCCL_PROTO_LL, 2},
    {65536, DCCL_PROTO_SIMPLE, 2}, {1 << 20, DCCL_PROTO_SIMPLE, 2}, {64 << 20, DCCL_PROTO_SIMPLE, 2}};
  for (int k = 0; k < 3; k++) {
    int c = colls[k];
    for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) {
      dccl_call call = {.coll = c, .bytes = real[i].bytes, .pipe_ops = 1};
      dccl_execution e;
      CHECK(dccl_sim_execute(&sim, &call, DCCL_ACTION_NCCL, &e) == 0);
      CHECK_MSG(e.algo == DCCL_ALGO_RING && e.proto == real[i].proto && e.channels == real[i].channels,
                "%s %zu: NCCL chose %s/%s/%d", dccl_coll_name(c), real[i].bytes, dccl_algo_name(e.algo),
                dccl_proto_name(e.proto), e.channels);
    }
  }
  dccl_conditions calm = {0, 0};
  /* AllReduce 64 KiB: tree/Simple measured 1.5-1.9x faster than NCCL's ring/Simple on 2 channels. */
  double nccl = latency_of(DCCL_COLL_ALLREDUCE, 65536, DCCL_ACTION_NCCL, &calm);
  double tree = latency_of(DCCL_COLL_ALLREDUCE, 65536, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_SIMPLE, 2, 0), &calm);
  CHECK_MSG(nccl / tree > 1.4, "AllReduce 64K: NCCL %.1f us, tree %.1f us", nccl, tree);
  /* 64 MiB: NCCL's choice is the best measured. */
  nccl = latency_of(DCCL_COLL_ALLREDUCE, 64u << 20, DCCL_ACTION_NCCL, &calm);
  tree = latency_of(DCCL_COLL_ALLREDUCE, 64u << 20, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_SIMPLE, 2, 0), &calm);
  CHECK_MSG(nccl <= tree, "AllReduce 64M: NCCL %.1f us, tree %.1f us", nccl, tree);
  dccl_sim_free(&sim);
}

int main(void) {
  RUN(test_oracle_never_beaten);
  RUN(test_unimodal_in_channels_and_chunk);
  RUN(test_pcie_allgather_gap);
  RUN(test_pcie_tree_beats_ring_somewhere);
  RUN(test_internode_protocol_crossover);
  RUN(test_interference);
  RUN(test_congestion_moves_the_best_action);
  RUN(test_noise_is_seeded_and_unbiased);
  RUN(test_replay_profile_truth);
  RUN(test_leftover_lines);
  RUN(test_leftover_of_the_measured_group);
  RUN(test_drift_is_shared_within_a_segment);
  RUN(test_bursts_of_slow_calls);
  RUN(test_noise_by_collective_and_size);
  RUN(test_noise_of_runs);
  RUN(test_replay_of_gpu_runs);
  TEST_SUMMARY();
}
