/* tests/test_nccl_model.c: the simulator's copy of NCCL's tuning model against values computed by
 * hand from NCCL's constants (tuning.cc, enqueue.cc), and its structural properties. */
#include "../core/action.h"
#include "../sim/nccl_model.h"
#include "test.h"

static dccl_profile profile;
static dccl_nccl_model model;

static void load(const char* name) {
  char path[512], error[512];
  snprintf(path, sizeof(path), "%s/scenarios/profiles/%s.profile", DYNAMICCL_SOURCE_DIR, name);
  if (dccl_profile_load(path, &profile, error, sizeof(error)) != 0) {
    fprintf(stderr, "%s\n", error);
    exit(1);
  }
  dccl_nccl_model_init(&model, &profile);
}

static float cost_of(int coll, size_t bytes, int algo, int proto) {
  float cost[21];
  dccl_nccl_cost_table(&model, coll, bytes, 1, cost);
  return cost[algo * 3 + proto];
}

/* h100-2x8-ib: 16 ranks, 2 nodes, Hopper, Intel CPUs, ring/tree graphs of 16 channels at 20 GB/s. */
static void test_two_node_allreduce_by_hand(void) {
  load("h100-2x8-ib");
  const size_t MiB = 1048576;
  /* Ring/LL: multi-node LL cap from the Intel row: llMaxBw = 39; busBw = min(39, 16*20*.5) = 39,
   * times nRanks/nsteps = 16/30 -> 20.8 GB/s. Latency 6.6 + 28 steps * max(0.6, netOverhead 1.0)
   * + 2 network steps * 2.7 = 40.0 us. */
  CHECK_NEAR(model.bandwidths[DCCL_COLL_ALLREDUCE][DCCL_ALGO_RING][DCCL_PROTO_LL], 20.8, 1e-4);
  CHECK_NEAR(model.latencies[DCCL_COLL_ALLREDUCE][DCCL_ALGO_RING][DCCL_PROTO_LL], 40.0, 1e-4);
  CHECK_NEAR(cost_of(DCCL_COLL_ALLREDUCE, MiB, DCCL_ALGO_RING, DCCL_PROTO_LL), 40.0 + 1048576.0 / 20800.0, 1e-3);
  /* Ring/Simple: busBw 320 * 16/30 = 170.667; latency 8.4 + 28 * max(3.4, 3.0) + 2 * 14 = 131.6, and
   * x1.4 (ring plateau: multi-node AllReduce with >= 64 bytes per channel and rank) = 184.24. */
  CHECK_NEAR(model.latencies[DCCL_COLL_ALLREDUCE][DCCL_ALGO_RING][DCCL_PROTO_SIMPLE], 131.6, 1e-3);
  CHECK_NEAR(cost_of(DCCL_COLL_ALLREDUCE, MiB, DCCL_ALGO_RING, DCCL_PROTO_SIMPLE), 184.24 + 1048576.0 / 170666.67, 2e-3);
  /* Below 64 bytes per channel and rank the plateau factor does not apply. */
  CHECK_NEAR(cost_of(DCCL_COLL_ALLREDUCE, 8192, DCCL_ALGO_RING, DCCL_PROTO_SIMPLE), 131.6 + 8192.0 / 170666.67, 2e-3);
  /* Tree/LL: busBw = min(min(320 * .92, 16 * 41.4) / 3.8, 39) = 39, times .5 = 19.5; latency
   * 6.8 + 2 * (7 * 0.6 + 1 * 5.0) = 25.2; at 1 MiB log2(1M/64) = 14 -> correction .5. */
  CHECK_NEAR(model.bandwidths[DCCL_COLL_ALLREDUCE][DCCL_ALGO_TREE][DCCL_PROTO_LL], 19.5, 1e-4);
  CHECK_NEAR(model.latencies[DCCL_COLL_ALLREDUCE][DCCL_ALGO_TREE][DCCL_PROTO_LL], 25.2, 1e-4);
  CHECK_NEAR(cost_of(DCCL_COLL_ALLREDUCE, MiB, DCCL_ALGO_TREE, DCCL_PROTO_LL), 25.2 + 1048576.0 / 9750.0, 1e-3);
  /* AllGather ring/LL: 39 * 16/15 = 41.6 GB/s; latency 6.6 + 14 * 1.0 + 1 * 2.7 = 23.3. */
  CHECK_NEAR(model.bandwidths[DCCL_COLL_ALLGATHER][DCCL_ALGO_RING][DCCL_PROTO_LL], 41.6, 1e-4);
  CHECK_NEAR(model.latencies[DCCL_COLL_ALLGATHER][DCCL_ALGO_RING][DCCL_PROTO_LL], 23.3, 1e-4);
  /* NVLS needs CollNet across nodes; tree and PAT never run AllGather here. */
  CHECK(cost_of(DCCL_COLL_ALLREDUCE, MiB, DCCL_ALGO_NVLS, DCCL_PROTO_SIMPLE) == -1.0f);
  CHECK(cost_of(DCCL_COLL_ALLGATHER, MiB, DCCL_ALGO_TREE, DCCL_PROTO_SIMPLE) == -1.0f);
  CHECK(cost_of(DCCL_COLL_ALLGATHER, MiB, DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE) == -1.0f);
  CHECK(cost_of(DCCL_COLL_ALLREDUCE, MiB, DCCL_ALGO_NVLS_TREE, DCCL_PROTO_SIMPLE) > 0);
}

/* roce-16x1: one rank per node, so PAT is enabled: busBw 4 * 6 * .75 = 18 GB/s (no ring conversion
 * for AllGather); latency 8 + log2(16) * (14 / 3.5) + 16 * 2.8 = 68.8 (tree network latency, ppn 1). */
static void test_pat_by_hand(void) {
  load("roce-16x1");
  CHECK_NEAR(model.bandwidths[DCCL_COLL_ALLGATHER][DCCL_ALGO_PAT][DCCL_PROTO_SIMPLE], 18.0, 1e-4);
  CHECK_NEAR(model.latencies[DCCL_COLL_ALLGATHER][DCCL_ALGO_PAT][DCCL_PROTO_SIMPLE], 68.8, 1e-4);
  CHECK_NEAR(cost_of(DCCL_COLL_ALLGATHER, 1048576, DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE), 68.8 + 1048576.0 / 18000.0, 1e-3);
  CHECK(cost_of(DCCL_COLL_ALLGATHER, 1048576, DCCL_ALGO_PAT, DCCL_PROTO_LL) == -1.0f);
  CHECK(cost_of(DCCL_COLL_ALLREDUCE, 1048576, DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE) == -1.0f);
}

/* nvlink-h100x8: NVLS bw = min(30 * .85 * 15/16 * 2, 30) = 30 per channel, 16 channels = 480,
 * times 8/14 = 274.29 GB/s; latency = NVLink NVLS hardware latency 25 us. No NVLS-tree on one node. */
static void test_nvls_by_hand(void) {
  load("nvlink-h100x8");
  CHECK_NEAR(model.bandwidths[DCCL_COLL_ALLREDUCE][DCCL_ALGO_NVLS][DCCL_PROTO_SIMPLE], 480.0 * 8 / 14, 1e-3);
  CHECK_NEAR(cost_of(DCCL_COLL_ALLREDUCE, 1048576, DCCL_ALGO_NVLS, DCCL_PROTO_SIMPLE), 25.0 + 1048576.0 / 274285.71, 1e-3);
  CHECK(cost_of(DCCL_COLL_ALLREDUCE, 1048576, DCCL_ALGO_NVLS_TREE, DCCL_PROTO_SIMPLE) == -1.0f);
}

/* pcie-8gpu: LL128 is off (the intra-node path is SYS, beyond NVB); 2 x 6 GB/s <= PCI_BW gives
 * 256-thread Simple rings. */
static void test_pcie_rules(void) {
  load("pcie-8gpu");
  for (int c = 0; c < DCCL_NUM_COLLS; c++)
    for (int a = 0; a < DCCL_NUM_ALGOS; a++) CHECK(cost_of(c, 1 << 20, a, DCCL_PROTO_LL128) == -1.0f);
  CHECK_EQ_INT(model.max_threads[DCCL_ALGO_RING][DCCL_PROTO_SIMPLE], 256);
}

static void test_selection_channels_threads_chunks(void) {
  load("nvlink-h100x8");
  float cost[21];
  dccl_execution e;
  /* 64 KiB AllReduce: NCCL's model picks ring/LL; channels shrink while 65536 < nc * 512 * (8 * 8). */
  dccl_nccl_cost_table(&model, DCCL_COLL_ALLREDUCE, 65536, 1, cost);
  CHECK(dccl_nccl_select(&model, cost, DCCL_COLL_ALLREDUCE, 65536, 0, &e) == 0);
  CHECK_EQ_INT(e.algo, DCCL_ALGO_RING);
  CHECK_EQ_INT(e.proto, DCCL_PROTO_LL);
  CHECK_EQ_INT(e.channels, 2);
  CHECK_EQ_INT(e.threads, 512);
  /* The tuner's channel count overrides, capped at the communicator's 32 channels. */
  CHECK(dccl_nccl_select(&model, cost, DCCL_COLL_ALLREDUCE, 65536, 12, &e) == 0 && e.channels == 12);
  CHECK(dccl_nccl_select(&model, cost, DCCL_COLL_ALLREDUCE, 65536, 60, &e) == 0 && e.channels == 32);
  /* Lowest non-negative entry wins; a zeroed entry (the tuner's choice) wins. */
  cost[DCCL_ALGO_TREE * 3 + DCCL_PROTO_SIMPLE] = 0.0f;
  CHECK(dccl_nccl_select(&model, cost, DCCL_COLL_ALLREDUCE, 65536, 0, &e) == 0 && e.algo == DCCL_ALGO_TREE);
  CHECK_EQ_INT(e.threads, 640); /* tree always runs 640 threads */
  for (int i = 0; i < 21; i++) cost[i] = -1.0f;
  CHECK(dccl_nccl_select(&model, cost, DCCL_COLL_ALLREDUCE, 65536, 0, &e) != 0);

  /* Chunks: ring/Simple AllReduce 512K step * 4 = 2 MiB; LL 32 KiB; LL128 576,000 bytes. */
  size_t chunk, ceiling;
  dccl_execution ring_simple = {DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 16, 544, 0};
  dccl_nccl_chunk(&model, DCCL_COLL_ALLREDUCE, 1 << 28, &ring_simple, &chunk, &ceiling);
  CHECK_EQ_INT((int)chunk, 2097152);
  CHECK_EQ_INT((int)ceiling, 2097152);
  dccl_execution ring_ll = {DCCL_ALGO_RING, DCCL_PROTO_LL, 16, 512, 0};
  dccl_nccl_chunk(&model, DCCL_COLL_ALLREDUCE, 1 << 20, &ring_ll, &chunk, &ceiling);
  CHECK_EQ_INT((int)chunk, 32768);
  dccl_execution ring_ll128 = {DCCL_ALGO_RING, DCCL_PROTO_LL128, 16, 640, 0};
  dccl_nccl_chunk(&model, DCCL_COLL_ALLREDUCE, 1 << 28, &ring_ll128, &chunk, &ceiling);
  CHECK_EQ_INT((int)chunk, 576000);
  /* Broadcast rings use one step per chunk: 512 KiB. */
  dccl_nccl_chunk(&model, DCCL_COLL_BROADCAST, 1 << 28, &ring_simple, &chunk, &ceiling);
  CHECK_EQ_INT((int)chunk, 524288);
  /* A tuner's chunk is clamped to the ceiling and aligned down to the protocol grain. */
  CHECK_EQ_INT((int)dccl_nccl_finish_chunk(DCCL_PROTO_SIMPLE, 8 << 20, 2097152), 2097152);
  CHECK_EQ_INT((int)dccl_nccl_finish_chunk(DCCL_PROTO_SIMPLE, 100000, 2097152), 99840);
  CHECK_EQ_INT((int)dccl_nccl_finish_chunk(DCCL_PROTO_LL128, 65536, 576000), 65280);

  /* Tree/LL128 on 2 nodes shrinks its chunk for small sizes: 576000 -> 72000 -> 18000 -> grain 17280. */
  load("h100-2x8-ib");
  dccl_execution tree_ll128 = {DCCL_ALGO_TREE, DCCL_PROTO_LL128, 16, 640, 0};
  dccl_nccl_chunk(&model, DCCL_COLL_ALLREDUCE, 262144, &tree_ll128, &chunk, &ceiling);
  CHECK_EQ_INT((int)chunk, 18000);
  CHECK_EQ_INT((int)dccl_nccl_finish_chunk(DCCL_PROTO_LL128, chunk, ceiling), 17280);
}

/* Every profile: each cost is -1 or non-negative, only structurally allowed pairs get one, and
 * NCCL-alone execution exists for every collective and size. */
static void test_structural_consistency_all_profiles(void) {
  const char* names[] = {"nvlink-h100x8", "pcie-8gpu", "h100-2x8-ib", "h100-4x8-ib", "roce-16x1", "sockets-1gpu-4ranks"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    load(names[i]);
    for (int c = 0; c < DCCL_NUM_COLLS; c++)
      for (size_t bytes = 1; bytes <= (1ULL << 32); bytes *= 4) {
        float cost[21];
        dccl_nccl_cost_table(&model, c, bytes, 1, cost);
        int usable = 0;
        for (int a = 0; a < 7; a++)
          for (int p = 0; p < 3; p++) {
            float x = cost[a * 3 + p];
            CHECK_MSG(x == -1.0f || x >= 0.0f, "%s: negative cost", names[i]);
            if (x >= 0.0f) {
              usable++;
              CHECK_MSG(dccl_algo_proto_allowed(c, a, p, profile.n_ranks, profile.n_nodes),
                        "%s: %s/%s priced for %s", names[i], dccl_algo_name(a), dccl_proto_name(p), dccl_coll_name(c));
            }
          }
        CHECK(usable > 0);
        dccl_execution e;
        CHECK(dccl_nccl_execute(&model, c, bytes, 1, DCCL_ACTION_NCCL, &e) == 0);
        CHECK(e.channels >= 1 && e.channels <= profile.channels && e.chunk > 0);
      }
  }
}

/* numPipeOps multiplies the ring's latency and amortises the tree's over batches of 8. */
static void test_pipelined_ops(void) {
  load("h100-2x8-ib");
  float one[21], four[21], nine[21];
  dccl_nccl_cost_table(&model, DCCL_COLL_ALLREDUCE, 4096, 1, one);
  dccl_nccl_cost_table(&model, DCCL_COLL_ALLREDUCE, 4096, 4, four);
  dccl_nccl_cost_table(&model, DCCL_COLL_ALLREDUCE, 4096, 9, nine);
  float ring_lat = model.latencies[DCCL_COLL_ALLREDUCE][DCCL_ALGO_RING][DCCL_PROTO_LL];
  float tree_lat = model.latencies[DCCL_COLL_ALLREDUCE][DCCL_ALGO_TREE][DCCL_PROTO_LL];
  CHECK_NEAR(four[DCCL_ALGO_RING * 3] - one[DCCL_ALGO_RING * 3], 3 * ring_lat, 1e-3);
  CHECK_NEAR(four[DCCL_ALGO_TREE * 3] - one[DCCL_ALGO_TREE * 3], 0, 1e-4);
  CHECK_NEAR(nine[DCCL_ALGO_TREE * 3] - one[DCCL_ALGO_TREE * 3], tree_lat, 1e-3);
}

int main(void) {
  RUN(test_two_node_allreduce_by_hand);
  RUN(test_pat_by_hand);
  RUN(test_nvls_by_hand);
  RUN(test_pcie_rules);
  RUN(test_selection_channels_threads_chunks);
  RUN(test_structural_consistency_all_profiles);
  RUN(test_pipelined_ops);
  TEST_SUMMARY();
}
