/* tests/test_decision_table.c: cell indexing, and epoch-based publication without torn tables. */
#include <pthread.h>

#include "../core/decision_table.h"
#include "test.h"

static void test_bins_and_buckets(void) {
  CHECK_EQ_INT(dccl_size_bin(0), 0);
  CHECK_EQ_INT(dccl_size_bin(1), 0);
  CHECK_EQ_INT(dccl_size_bin(2), 1);
  CHECK_EQ_INT(dccl_size_bin(65535), 15);
  CHECK_EQ_INT(dccl_size_bin(65536), 16);
  CHECK_EQ_INT(dccl_size_bin((size_t)-1), DCCL_SIZE_BINS - 1);
  CHECK_EQ_INT(dccl_pipe_bucket(0), 0);
  CHECK_EQ_INT(dccl_pipe_bucket(1), 0);
  CHECK_EQ_INT(dccl_pipe_bucket(2), 1);
  CHECK_EQ_INT(dccl_pipe_bucket(4), 2);
  CHECK_EQ_INT(dccl_pipe_bucket(1000), 3);
}

static void test_cells_are_a_bijection(void) {
  static unsigned char seen[DCCL_TABLE_CELLS];
  for (int c = 0; c < DCCL_NUM_COLLS; c++)
    for (int b = 0; b < DCCL_SIZE_BINS; b++)
      for (int p = 0; p < DCCL_PIPE_BUCKETS; p++)
        for (int r = 0; r < DCCL_REG_STATES; r++) {
          int cell = dccl_cell_index(c, b, p, r);
          CHECK(cell >= 0 && cell < DCCL_TABLE_CELLS);
          if (cell < 0 || cell >= DCCL_TABLE_CELLS) continue;
          CHECK(!seen[cell]);
          seen[cell] = 1;
          int c2, b2, p2, r2;
          dccl_cell_decode(cell, &c2, &b2, &p2, &r2);
          CHECK(c2 == c && b2 == b && p2 == p && r2 == r);
        }
}

static void test_epoch_switching(void) {
  static dccl_table_store store;
  static dccl_table initial;
  dccl_table_fill(&initial, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 0, 0));
  dccl_table_store_init(&store, &initial, 8);
  CHECK_EQ_INT(dccl_table_get(dccl_table_store_for_call(&store, 0), 0), dccl_action_make(1, 2, 0, 0));
  dccl_table* next = dccl_table_store_begin(&store);
  CHECK(next != NULL && next != dccl_table_store_current(&store));
  dccl_table_fill(next, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_LL, 4, 0));
  dccl_table_store_publish(&store, next, 2); /* applies from epoch 2 = call 16 */
  for (uint64_t call = 1; call < 16; call++)
    CHECK_MSG(dccl_action_algo(dccl_table_get(dccl_table_store_for_call(&store, call), 5)) == DCCL_ALGO_RING,
              "call %llu switched early", (unsigned long long)call);
  CHECK_EQ_INT(dccl_action_algo(dccl_table_get(dccl_table_store_for_call(&store, 16), 5)), DCCL_ALGO_TREE);
  CHECK_EQ_INT(dccl_action_algo(dccl_table_get(dccl_table_store_for_call(&store, 17), 5)), DCCL_ALGO_TREE);
  CHECK_EQ_INT((int)atomic_load(&store.switches), 1);
  /* A table published for an epoch already past applies at the next boundary, not mid-epoch. */
  dccl_table* third = dccl_table_store_begin(&store);
  dccl_table_fill(third, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_LL128, 0, 0));
  dccl_table_store_publish(&store, third, 0);
  CHECK_EQ_INT(dccl_action_proto(dccl_table_get(dccl_table_store_for_call(&store, 18), 5)), DCCL_PROTO_LL);
  CHECK_EQ_INT(dccl_action_proto(dccl_table_get(dccl_table_store_for_call(&store, 24), 5)), DCCL_PROTO_LL128);
}

static void test_pending_table_replaced(void) {
  static dccl_table_store store;
  dccl_table_store_init(&store, NULL, 4);
  dccl_table* a = dccl_table_store_begin(&store);
  dccl_table_fill(a, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_LL, 0, 0));
  dccl_table_store_publish(&store, a, 1);
  dccl_table* b = dccl_table_store_begin(&store);
  CHECK(b != a);
  dccl_table_fill(b, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_SIMPLE, 0, 0));
  dccl_table_store_publish(&store, b, 1);
  CHECK_EQ_INT(dccl_action_algo(dccl_table_get(dccl_table_store_for_call(&store, 4), 0)), DCCL_ALGO_TREE);
}

/* A publisher rewrites tables as fast as it can while the hot path reads; every call of an epoch must
 * see one whole table (all cells equal to the table's stamp), never a mix. */
typedef struct race {
  dccl_table_store store;
  _Atomic int stop;
  _Atomic uint64_t published;
} race;

static void* publisher(void* argument) {
  race* r = argument;
  uint32_t stamp = 1;
  while (!atomic_load(&r->stop)) {
    dccl_table* t = dccl_table_store_begin(&r->store);
    if (t == NULL) continue;
    stamp = stamp % 60 + 1;
    dccl_action action = dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, (int)stamp, 0);
    dccl_table_fill(t, action);
    dccl_table_store_publish(&r->store, t, 0);
    atomic_fetch_add(&r->published, 1);
  }
  return NULL;
}

static void test_publication_never_tears(void) {
  static race r;
  dccl_table_store_init(&r.store, NULL, 4);
  pthread_t thread;
  pthread_create(&thread, NULL, publisher, &r);
  int torn = 0;
  for (uint64_t call = 0; call < 2000000 && !torn; call += 4) {
    const dccl_table* t = dccl_table_store_for_call(&r.store, call);
    dccl_action first = dccl_table_get(t, 0);
    for (int k = 1; k < 4; k++) {
      const dccl_table* again = dccl_table_store_for_call(&r.store, call + (uint64_t)k);
      if (again != t) torn = 1;
    }
    for (int cell = 0; cell < DCCL_TABLE_CELLS; cell += 97)
      if (dccl_table_get(t, cell) != first) torn = 1;
  }
  atomic_store(&r.stop, 1);
  pthread_join(thread, NULL);
  CHECK(!torn);
  CHECK(atomic_load(&r.published) > 0);
}

int main(void) {
  RUN(test_bins_and_buckets);
  RUN(test_cells_are_a_bijection);
  RUN(test_epoch_switching);
  RUN(test_pending_table_replaced);
  RUN(test_publication_never_tears);
  TEST_SUMMARY();
}
