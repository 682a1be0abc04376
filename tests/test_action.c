/* tests/test_action.c: action packing, NCCL's structural rules, action spaces, text round trips. */
#include "../core/action.h"
#include "test.h"

static void test_packing_round_trips(void) {
  for (int a = 0; a < DCCL_NUM_ALGOS; a++)
    for (int p = 0; p < DCCL_NUM_PROTOS; p++)
      for (int ch = 0; ch <= 64; ch += 7)
        for (int k = 0; k <= DCCL_CHUNK_LOG2_MAX; k += (k == 0 ? DCCL_CHUNK_LOG2_MIN : 3)) {
          dccl_action x = dccl_action_make(a, p, ch, k);
          CHECK(!dccl_action_is_nccl(x));
          CHECK_EQ_INT(dccl_action_algo(x), a);
          CHECK_EQ_INT(dccl_action_proto(x), p);
          CHECK_EQ_INT(dccl_action_channels(x), ch);
          CHECK_EQ_INT(dccl_action_chunk_log2(x), k);
          CHECK(dccl_action_well_formed(x));
        }
  CHECK(dccl_action_is_nccl(DCCL_ACTION_NCCL));
  CHECK(dccl_action_well_formed(DCCL_ACTION_NCCL));
}

static void test_malformed_bits_rejected(void) {
  CHECK(!dccl_action_well_formed(0xFFFFFFFFu));
  CHECK(!dccl_action_well_formed(dccl_action_make(7, 0, 0, 0)));  /* algorithm 7 does not exist */
  CHECK(!dccl_action_well_formed(dccl_action_make(1, 3, 0, 0)));  /* protocol 3 does not exist */
  CHECK(!dccl_action_well_formed(dccl_action_make(1, 2, 65, 0))); /* more than MAXCHANNELS */
  CHECK(!dccl_action_well_formed(dccl_action_make(1, 2, 8, 5)));  /* chunk of 32 bytes */
  CHECK(!dccl_action_well_formed(DCCL_ACTION_NCCL | (5u << 4))); /* NCCL's choice carries no fields */
  /* Well formed, but CollNet and NVLS take no channel count or chunk size from a tuner. */
  CHECK(dccl_action_resources_valid(DCCL_ACTION_NCCL));
  CHECK(dccl_action_resources_valid(dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 8, 17)));
  CHECK(dccl_action_resources_valid(dccl_action_make(DCCL_ALGO_NVLS, DCCL_PROTO_SIMPLE, 0, 0)));
  CHECK(!dccl_action_resources_valid(dccl_action_make(DCCL_ALGO_NVLS, DCCL_PROTO_SIMPLE, 4, 0)));
  CHECK(!dccl_action_resources_valid(dccl_action_make(DCCL_ALGO_COLLNET_CHAIN, DCCL_PROTO_SIMPLE, 0, 17)));
}

static void test_structural_rules_follow_nccl(void) {
  /* Broadcast and Reduce: ring only, every protocol. */
  for (int p = 0; p < 3; p++) {
    CHECK(dccl_algo_proto_allowed(DCCL_COLL_BROADCAST, DCCL_ALGO_RING, p, 8, 1));
    CHECK(!dccl_algo_proto_allowed(DCCL_COLL_REDUCE, DCCL_ALGO_TREE, p, 8, 1));
  }
  /* Tree only for AllReduce. */
  CHECK(dccl_algo_proto_allowed(DCCL_COLL_ALLREDUCE, DCCL_ALGO_TREE, DCCL_PROTO_LL, 16, 2));
  CHECK(!dccl_algo_proto_allowed(DCCL_COLL_ALLGATHER, DCCL_ALGO_TREE, DCCL_PROTO_SIMPLE, 16, 2));
  /* NVLS, NVLS-tree, CollNet, PAT: Simple only. */
  CHECK(dccl_algo_proto_allowed(DCCL_COLL_ALLREDUCE, DCCL_ALGO_NVLS, DCCL_PROTO_SIMPLE, 8, 1));
  CHECK(!dccl_algo_proto_allowed(DCCL_COLL_ALLREDUCE, DCCL_ALGO_NVLS, DCCL_PROTO_LL128, 8, 1));
  CHECK(!dccl_algo_proto_allowed(DCCL_COLL_ALLREDUCE, DCCL_ALGO_COLLNET_CHAIN, DCCL_PROTO_LL, 16, 2));
  /* NVLS-tree never on one node. */
  CHECK(!dccl_algo_proto_allowed(DCCL_COLL_ALLREDUCE, DCCL_ALGO_NVLS_TREE, DCCL_PROTO_SIMPLE, 8, 1));
  CHECK(dccl_algo_proto_allowed(DCCL_COLL_ALLREDUCE, DCCL_ALGO_NVLS_TREE, DCCL_PROTO_SIMPLE, 16, 2));
  /* PAT: AllGather/ReduceScatter with one rank per node, never AllReduce. */
  CHECK(dccl_algo_proto_allowed(DCCL_COLL_ALLGATHER, DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE, 16, 16));
  CHECK(!dccl_algo_proto_allowed(DCCL_COLL_ALLGATHER, DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE, 16, 2));
  CHECK(!dccl_algo_proto_allowed(DCCL_COLL_ALLREDUCE, DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE, 16, 16));
  /* Out of range. */
  CHECK(!dccl_algo_proto_allowed(5, DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 8, 1));
  CHECK(!dccl_algo_proto_allowed(DCCL_COLL_ALLREDUCE, -1, DCCL_PROTO_SIMPLE, 8, 1));
}

static void test_action_space(void) {
  dccl_action_space_options options = {.max_channels = 32, .tune_chunk = 0};
  dccl_action actions[4096];
  /* AllReduce on 2x8: tree x3, ring x3 each with NCCL's + 8 explicit channel counts (<= 32), plus
   * CollNet direct/chain, NVLS and NVLS-tree with fixed resources. */
  int n = dccl_action_space_build(DCCL_COLL_ALLREDUCE, 16, 2, &options, actions, 4096);
  CHECK_EQ_INT(n, 6 * 9 + 4);
  for (int i = 0; i < n; i++) {
    CHECK(dccl_algo_proto_allowed(DCCL_COLL_ALLREDUCE, dccl_action_algo(actions[i]), dccl_action_proto(actions[i]), 16, 2));
    CHECK(dccl_action_channels(actions[i]) <= 32);
    CHECK_EQ_INT(dccl_action_chunk_log2(actions[i]), 0);
  }
  /* With chunk tuning each ring/tree entry gets NCCL's chunk and the sizes of 32K .. 2M that NCCL would
   * not clamp to it: none for LL (its ceiling is 32 KiB), 32K-512K for LL128 (576,000 bytes) and 1M
   * too on tree (its own chunk shrinks for small messages), 32K-256K for tree/Simple (512 KiB), 32K-1M
   * for ring/Simple (2 MiB). */
  options.tune_chunk = 1;
  CHECK_EQ_INT(dccl_action_space_build(DCCL_COLL_ALLREDUCE, 16, 2, &options, NULL, 0), (1 + 7 + 5 + 1 + 6 + 7) * 9 + 4);
  /* Capacity is respected and the count still returned; Broadcast's ring/Simple takes one step per chunk
   * (512 KiB). */
  CHECK_EQ_INT(dccl_action_space_build(DCCL_COLL_BROADCAST, 8, 1, &options, actions, 3), (1 + 6 + 5) * 9);
  /* A larger NCCL_BUFFSIZE (8 MiB) lifts Simple's ceilings: ring 4 MiB, tree 1 MiB. */
  options.buffer_bytes[DCCL_PROTO_SIMPLE] = 8LL << 20;
  CHECK_EQ_INT(dccl_action_space_build(DCCL_COLL_ALLREDUCE, 16, 2, &options, NULL, 0), (1 + 7 + 6 + 1 + 6 + 8) * 9 + 4);
}

/* NCCL's buffer ceilings on a tuner's chunk (enqueue.cc: bufferMaxChunkSize), and no two chunk sizes in
 * the space that NCCL would run alike. */
static void test_chunk_ceilings(void) {
  CHECK(dccl_chunk_ceiling(DCCL_COLL_ALLREDUCE, DCCL_ALGO_RING, DCCL_PROTO_LL, NULL) == 32768);
  CHECK(dccl_chunk_ceiling(DCCL_COLL_ALLREDUCE, DCCL_ALGO_TREE, DCCL_PROTO_LL128, NULL) == 576000);
  CHECK(dccl_chunk_ceiling(DCCL_COLL_ALLGATHER, DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, NULL) == 2097152);
  CHECK(dccl_chunk_ceiling(DCCL_COLL_BROADCAST, DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, NULL) == 524288);
  CHECK(dccl_chunk_ceiling(DCCL_COLL_REDUCESCATTER, DCCL_ALGO_PAT, DCCL_PROTO_SIMPLE, NULL) == 524288);
  long long buffers[DCCL_NUM_PROTOS] = {1 << 20, 0, 0};
  CHECK(dccl_chunk_ceiling(DCCL_COLL_ALLREDUCE, DCCL_ALGO_RING, DCCL_PROTO_LL, buffers) == 65536);
  dccl_action_space_options options = {.max_channels = 32, .tune_chunk = 1};
  static dccl_action actions[4096];
  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++) {
    int n = dccl_action_space_build(coll, 16, 16, &options, actions, 4096);
    CHECK(n > 0 && n <= 4096);
    for (int i = 0; i < n; i++) {
      dccl_action a = actions[i];
      if (dccl_action_chunk_log2(a) == 0) continue;
      long long ceiling = dccl_chunk_ceiling(coll, dccl_action_algo(a), dccl_action_proto(a), NULL);
      long long runs = dccl_action_chunk_bytes(a) < (size_t)ceiling ? (long long)dccl_action_chunk_bytes(a) : ceiling;
      int own_may_be_smaller = dccl_action_algo(a) == DCCL_ALGO_PAT ||
                               (dccl_action_algo(a) == DCCL_ALGO_TREE && dccl_action_proto(a) == DCCL_PROTO_LL128);
      CHECK(runs < ceiling || own_may_be_smaller); /* else it is NCCL's own chunk again */
      for (int j = 0; j < i; j++) {
        dccl_action b = actions[j];
        if (dccl_action_chunk_log2(b) == 0 || dccl_action_pair(b) != dccl_action_pair(a) ||
            dccl_action_channels(b) != dccl_action_channels(a))
          continue;
        long long other = dccl_action_chunk_bytes(b) < (size_t)ceiling ? (long long)dccl_action_chunk_bytes(b) : ceiling;
        CHECK(other != runs);
      }
    }
  }
}

static void test_neighbours(void) {
  dccl_action ring8 = dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 8, 0);
  /* one step on the channel ladder (1, 2, 4, 8, 12, 16, ...), NCCL's own channels border every step */
  CHECK(dccl_action_neighbours(ring8, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 4, 0)));
  CHECK(dccl_action_neighbours(ring8, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 12, 0)));
  CHECK(dccl_action_neighbours(ring8, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 0, 0)));
  CHECK(!dccl_action_neighbours(ring8, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 16, 0)));
  CHECK(!dccl_action_neighbours(ring8, ring8));
  /* one step on the chunk ladder (32K .. 2M), with the same channels */
  dccl_action chunked = dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 8, 18);
  CHECK(dccl_action_neighbours(chunked, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 8, 17)));
  CHECK(dccl_action_neighbours(chunked, ring8));
  CHECK(!dccl_action_neighbours(chunked, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 8, 20)));
  CHECK(!dccl_action_neighbours(chunked, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 4, 17)));
  /* another pair with the same resources; never NCCL's choice itself */
  CHECK(dccl_action_neighbours(ring8, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_LL, 8, 0)));
  CHECK(!dccl_action_neighbours(ring8, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_LL, 4, 0)));
  CHECK(!dccl_action_neighbours(ring8, DCCL_ACTION_NCCL));
}

static void test_text_round_trip(void) {
  const char* texts[] = {"nccl", "ring/simple", "tree/ll/ch=4", "ring/ll128/ch=16/chunk=256K", "pat/simple/chunk=64K"};
  for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
    dccl_action a;
    char back[96];
    CHECK_MSG(dccl_action_parse(texts[i], &a) == 0, "%s", texts[i]);
    dccl_action_format(a, back, sizeof(back));
    CHECK_MSG(strcmp(back, texts[i]) == 0, "%s -> %s", texts[i], back);
  }
  dccl_action a;
  CHECK(dccl_action_parse("RING/SIMPLE", &a) == 0 && dccl_action_algo(a) == DCCL_ALGO_RING);
  CHECK(dccl_action_parse("collnetdirect/simple", &a) == 0 && dccl_action_algo(a) == DCCL_ALGO_COLLNET_DIRECT);
  const char* bad[] = {"", "ring", "ring/fast", "ring/simple/ch=0", "ring/simple/ch=65", "ring/simple/chunk=3000",
                       "ring/simple/chunk=1K", "ring/simple/xyz", "warp/simple",
                       /* one reading only: no repeated field, sign, space or empty part */
                       "ring/simple/ch=4/ch=8", "ring/simple/chunk=64K/chunk=128K", "ring/simple/ch=+5",
                       "ring/simple/ch= 5", "ring/simple/chunk= 64K", "ring//simple", "/ring/simple",
                       "ring/simple/", "ring/simple//ch=4", "nccl/"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) CHECK_MSG(dccl_action_parse(bad[i], &a) != 0, "%s", bad[i]);
}

static void test_bytes(void) {
  unsigned long long v;
  CHECK(dccl_parse_bytes("4096", &v) == 0 && v == 4096);
  CHECK(dccl_parse_bytes("64K", &v) == 0 && v == 65536);
  CHECK(dccl_parse_bytes("1MiB", &v) == 0 && v == 1048576);
  CHECK(dccl_parse_bytes("2G", &v) == 0 && v == 2147483648ULL);
  CHECK(dccl_parse_bytes("x", &v) != 0);
  CHECK(dccl_parse_bytes("12Q", &v) != 0);
  CHECK(dccl_parse_bytes("-5", &v) != 0);
  CHECK(dccl_parse_bytes("99999999999T", &v) != 0);
  char text[32];
  dccl_format_bytes(1536, text, sizeof(text));
  CHECK(strcmp(text, "1536") == 0);
  dccl_format_bytes(1ULL << 30, text, sizeof(text));
  CHECK(strcmp(text, "1G") == 0);
}

static void test_names(void) {
  CHECK_EQ_INT(dccl_coll_parse("AllReduce"), DCCL_COLL_ALLREDUCE);
  CHECK_EQ_INT(dccl_coll_parse("reducescatter"), DCCL_COLL_REDUCESCATTER);
  CHECK_EQ_INT(dccl_coll_parse("sendrecv"), -1);
  CHECK_EQ_INT(dccl_algo_parse("NVLS_TREE"), DCCL_ALGO_NVLS_TREE);
  CHECK_EQ_INT(dccl_proto_parse("SIMPLE"), DCCL_PROTO_SIMPLE);
  CHECK_EQ_INT((int)dccl_datatype_size("ncclFloat32"), 4);
  CHECK_EQ_INT((int)dccl_datatype_size("ncclBfloat16"), 2);
  CHECK_EQ_INT((int)dccl_datatype_size("ncclFloat8e4m3"), 1);
  CHECK_EQ_INT((int)dccl_datatype_size("ncclUint64"), 8);
  CHECK_EQ_INT((int)dccl_datatype_size("ncclFloat8e9m9"), 0);
  CHECK_EQ_INT((int)dccl_datatype_size("float"), 0);
  CHECK_EQ_INT((int)dccl_datatype_size(NULL), 0);
  /* Each of NCCL's names its own index, below DCCL_NUM_DATATYPES, of its size. */
  static const char* const names[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",      "ncclUint32",
                                      "ncclInt64",   "ncclUint64",  "ncclFloat16",    "ncclFloat32",
                                      "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  static const int sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  int seen = 0;
  for (int i = 0; i < 12; i++) {
    int index = dccl_datatype_index(names[i]);
    CHECK(index >= 0 && index < DCCL_NUM_DATATYPES);
    if (index < 0 || index >= DCCL_NUM_DATATYPES) continue;
    CHECK((seen & (1 << index)) == 0);
    seen |= 1 << index;
    CHECK_EQ_INT((int)dccl_datatype_size(names[i]), sizes[i]);
  }
  CHECK_EQ_INT(dccl_datatype_index("ncclBfloat32"), -1);
  CHECK_EQ_INT(dccl_datatype_index("ncclFloat8"), -1);
  CHECK_EQ_INT(dccl_datatype_index("ncclInt12"), -1);
  CHECK_EQ_INT(dccl_datatype_index("ncclFloat32x"), -1);
  CHECK_EQ_INT((int)dccl_coll_bytes(DCCL_COLL_ALLGATHER, 256, 4, 8), 8192);
  CHECK_EQ_INT((int)dccl_coll_bytes(DCCL_COLL_ALLREDUCE, 256, 4, 8), 1024);
}

int main(void) {
  RUN(test_packing_round_trips);
  RUN(test_malformed_bits_rejected);
  RUN(test_structural_rules_follow_nccl);
  RUN(test_action_space);
  RUN(test_chunk_ceilings);
  RUN(test_neighbours);
  RUN(test_text_round_trip);
  RUN(test_bytes);
  RUN(test_names);
  TEST_SUMMARY();
}
