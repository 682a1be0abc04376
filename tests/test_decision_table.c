/* tests/test_decision_table.c: cell indexing, and epoch-based publication without torn tables. */
#include <pthread.h>
#include <sched.h>
#include <errno.h>
#include <semaphore.h>
#include <time.h>

#include "../core/clock.h"
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

static int algo_at(dccl_table_store* store, uint64_t call) {
  const dccl_table* t = dccl_table_store_for_call(store, call);
  return t == NULL ? -100 : dccl_action_algo(dccl_table_get(t, 5));
}

static void test_epoch_switching(void) {
  static dccl_table_store store;
  dccl_table_store_init(&store, 8);
  dccl_table_fill(dccl_table_store_initial(&store), dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 0, 0));
  CHECK_EQ_INT(dccl_table_get(dccl_table_store_for_call(&store, 0), 0), dccl_action_make(1, 2, 0, 0));
  dccl_table* next = dccl_table_store_begin(&store);
  CHECK(next != NULL && next != dccl_table_store_latest(&store));
  dccl_table_fill(next, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_LL, 4, 0));
  uint64_t epoch = 99;
  CHECK_EQ_INT(dccl_table_store_commit(&store, next, &epoch), 0);
  CHECK_EQ_INT((int)epoch, 1); /* calls 8..15 */
  /* One epoch ahead at most: nothing more can be decided until the hot path enters epoch 1. */
  CHECK(dccl_table_store_begin(&store) == NULL);
  CHECK_EQ_INT(dccl_table_store_commit(&store, NULL, NULL), -1);
  for (uint64_t call = 1; call < 8; call++)
    CHECK_MSG(algo_at(&store, call) == DCCL_ALGO_RING, "call %llu switched early", (unsigned long long)call);
  CHECK_EQ_INT(algo_at(&store, 8), DCCL_ALGO_TREE);
  CHECK_EQ_INT(algo_at(&store, 9), DCCL_ALGO_TREE);
  CHECK_EQ_INT((int)atomic_load(&store.switches), 1);
  /* With no publisher, the hot path decides each new epoch itself: the same table. */
  CHECK_EQ_INT(algo_at(&store, 40), DCCL_ALGO_TREE); /* epochs 2..5 entered at once */
  CHECK_EQ_INT((int)dccl_table_store_decided(&store), 6);
  CHECK_EQ_INT((int)dccl_table_store_entered(&store), 6);
}

static void test_hot_path_first(void) {
  static dccl_table_store store;
  dccl_table_store_init(&store, 4);
  CHECK(dccl_table_store_begin(&store) == NULL); /* epoch 0 decided, not entered yet */
  CHECK(dccl_table_store_for_call(&store, 0) != NULL);
  dccl_table* a = dccl_table_store_begin(&store);
  CHECK(a != NULL);
  dccl_table_fill(a, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_SIMPLE, 0, 0));
  /* The hot path reaches epoch 1 before the publisher commits: it keeps the old table for epoch 1,
   * and the commit goes to epoch 2, never into the running epoch. */
  CHECK(dccl_action_is_nccl(dccl_table_get(dccl_table_store_for_call(&store, 4), 0)));
  uint64_t epoch = 0;
  CHECK_EQ_INT(dccl_table_store_commit(&store, a, &epoch), 0);
  CHECK_EQ_INT((int)epoch, 2);
  CHECK(dccl_action_is_nccl(dccl_table_get(dccl_table_store_for_call(&store, 7), 0)));
  CHECK_EQ_INT(dccl_action_algo(dccl_table_get(dccl_table_store_for_call(&store, 8), 0)), DCCL_ALGO_TREE);
}

static void test_follower_waits(void) {
  static dccl_table_store store;
  dccl_table_store_init(&store, 4);
  dccl_table_store_follow(&store);
  CHECK(dccl_table_store_for_call(&store, 0) == NULL); /* epoch 0 not decided yet */
  dccl_table* t = dccl_table_store_begin(&store);
  dccl_table_fill(t, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_LL, 0, 0));
  uint64_t epoch = 9;
  CHECK_EQ_INT(dccl_table_store_commit(&store, t, &epoch), 0);
  CHECK_EQ_INT((int)epoch, 0);
  CHECK_EQ_INT(algo_at(&store, 0), DCCL_ALGO_RING);
  CHECK_EQ_INT(algo_at(&store, 4), -100); /* epoch 1: past the limit */
  dccl_table_store_allow(&store, 3);      /* the leader decided epochs 1 and 2 unchanged */
  dccl_table_store_allow(&store, 2);      /* never lowers */
  CHECK_EQ_INT(algo_at(&store, 4), DCCL_ALGO_RING);
  CHECK_EQ_INT(algo_at(&store, 8), DCCL_ALGO_RING);
  CHECK_EQ_INT(algo_at(&store, 12), -100); /* epoch 3 changes: wait for the publisher */
  t = dccl_table_store_begin(&store);
  CHECK(t != NULL);
  dccl_table_fill(t, dccl_action_make(DCCL_ALGO_TREE, DCCL_PROTO_LL, 0, 0));
  CHECK_EQ_INT(dccl_table_store_commit(&store, t, &epoch), 0);
  CHECK_EQ_INT((int)epoch, 3);
  CHECK_EQ_INT(algo_at(&store, 12), DCCL_ALGO_TREE);
  CHECK_EQ_INT(algo_at(&store, 13), DCCL_ALGO_TREE);
}

static int rings;
static void count_ring(void* context) { (*(int*)context)++; }

/* The bell rings once after it was armed, at the next move (an epoch entered, a commit), and never
 * unarmed; arming reports the counters as they are. */
static void test_bell_rings_once_when_armed(void) {
  static dccl_table_store store;
  dccl_table_store_init(&store, 1);
  rings = 0;
  dccl_table_store_set_bell(&store, count_ring, &rings);
  CHECK(dccl_table_store_for_call(&store, 0) != NULL);
  CHECK(dccl_table_store_for_call(&store, 1) != NULL);
  CHECK_EQ_INT(rings, 0); /* not armed */
  uint64_t entered, decided;
  dccl_table_store_arm_bell(&store, &entered, &decided);
  CHECK_EQ_INT((int)entered, 2);
  CHECK_EQ_INT((int)decided, 2);
  CHECK(dccl_table_store_for_call(&store, 1) != NULL); /* the same epoch: no move */
  CHECK_EQ_INT(rings, 0);
  CHECK(dccl_table_store_for_call(&store, 4) != NULL); /* epochs 2..4 entered: one ring */
  CHECK_EQ_INT(rings, 1);
  CHECK(dccl_table_store_for_call(&store, 5) != NULL);
  CHECK_EQ_INT(rings, 1); /* disarmed by the ring */
  dccl_table_store_arm_bell(&store, &entered, &decided);
  CHECK(dccl_table_store_commit(&store, NULL, NULL) == 0); /* a publisher's commit rings too */
  CHECK_EQ_INT(rings, 2);
  dccl_table_store_arm_bell(&store, &entered, &decided);
  CHECK_EQ_INT((int)decided, 7);
  dccl_table_store_disarm_bell(&store);
  CHECK(dccl_table_store_for_call(&store, 9) != NULL);
  CHECK_EQ_INT(rings, 2);
  dccl_table_store_arm_bell(&store, &entered, &decided);
  dccl_table_store_set_bell(&store, NULL, NULL); /* cleared: nothing rings */
  CHECK(dccl_table_store_for_call(&store, 10) != NULL);
  CHECK_EQ_INT(rings, 2);
}

/* A sleeper that arms the bell whenever it saw no move, and then waits for a ring, is never left
 * asleep while the hot path moves on: the move it did not see on arming rings. The hot path runs free
 * (moves racing the arming), and every 100 epochs pauses so that the sleeper sleeps, enters one more
 * epoch and waits for the sleeper to see it: that takes microseconds when the move rings, the sleeper's
 * 2 s timeout when it does not. */
#define BELL_EPOCHS 20000
typedef struct bell_race {
  dccl_table_store store;
  sem_t rung;
  _Atomic int done;
  _Atomic uint64_t observed; /* the epochs entered as the sleeper last read them */
  int sleeps;
} bell_race;

static void post_ring(void* context) { sem_post(&((bell_race*)context)->rung); }

static void* sleeper(void* argument) {
  bell_race* r = argument;
  uint64_t seen_entered = 0, seen_decided = 0;
  while (!atomic_load(&r->done)) {
    uint64_t entered, decided;
    dccl_table_store_arm_bell(&r->store, &entered, &decided);
    atomic_store(&r->observed, entered);
    if (entered != seen_entered || decided != seen_decided) {
      seen_entered = entered;
      seen_decided = decided;
      dccl_table_store_disarm_bell(&r->store);
      continue;
    }
    r->sleeps++;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    while (sem_timedwait(&r->rung, &until) != 0 && errno == EINTR) {
    }
  }
  return NULL;
}

static void test_bell_never_misses_a_move(void) {
  static bell_race r;
  dccl_table_store_init(&r.store, 1);
  sem_init(&r.rung, 0, 0);
  dccl_table_store_set_bell(&r.store, post_ring, &r);
  pthread_t thread;
  pthread_create(&thread, NULL, sleeper, &r);
  int late = 0, checks = 0;
  for (uint64_t epoch = 0; epoch < BELL_EPOCHS && late < 3; epoch++) { /* (each miss costs a second) */
    CHECK(dccl_table_store_for_call(&r.store, epoch) != NULL);
    if (epoch % 100 != 99) continue;
    nanosleep(&(struct timespec){0, 200000}, NULL); /* the sleeper sees no move and sleeps */
    CHECK(dccl_table_store_for_call(&r.store, ++epoch) != NULL);
    uint64_t start = dccl_monotonic_ns();
    while (atomic_load(&r.observed) < epoch + 1 && dccl_monotonic_ns() - start < 1000000000ULL) sched_yield();
    late += atomic_load(&r.observed) < epoch + 1 || dccl_monotonic_ns() - start > 500000000ULL;
    checks++;
  }
  atomic_store(&r.done, 1);
  sem_post(&r.rung);
  pthread_join(thread, NULL);
  sem_destroy(&r.rung);
  CHECK_MSG(late == 0, "the sleeper slept through %d of %d moves", late, checks);
  CHECK_MSG(r.sleeps > 10, "the sleeper slept only %d times", r.sleeps);
  printf("  the sleeper slept %d times over %d epochs; %d of %d checked moves woke it within 0.5 s\n", r.sleeps,
         BELL_EPOCHS, checks - late, checks);
}

/* A publisher commits tables as fast as it can while the hot path runs. Every call of an epoch must
 * see one whole table, and the table of every epoch must be exactly the last one the publisher
 * committed for an epoch at or before it: the publisher's record alone tells what every epoch ran,
 * which is what a coordinated leader sends to its workers. */
#define RACE_EPOCHS 200000
typedef struct race {
  dccl_table_store store;
  _Atomic int stop, started;
  uint32_t committed[RACE_EPOCHS]; /* stamp committed for an epoch, 0: none */
  uint32_t seen[RACE_EPOCHS];
} race;

static void* publisher(void* argument) {
  race* r = argument;
  uint32_t stamp = 1;
  atomic_store(&r->started, 1);
  while (!atomic_load(&r->stop)) {
    dccl_table* t = dccl_table_store_begin(&r->store);
    if (t == NULL) continue;
    stamp = stamp % 60 + 1;
    dccl_table_fill(t, dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, (int)stamp, 0));
    uint64_t epoch;
    if (dccl_table_store_commit(&r->store, t, &epoch) == 0 && epoch < RACE_EPOCHS) r->committed[epoch] = stamp;
  }
  return NULL;
}

/* A copy has the same decisions; a change of decision, exploration or mask in any cell is a difference. */
static void test_copy_and_compare(void) {
  static dccl_table a, b;
  dccl_table_fill(&a, DCCL_ACTION_NCCL);
  dccl_action ring = dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 4, 0);
  dccl_table_set(&a, 7, ring);
  dccl_table_set_explore(&a, 9, ring, DCCL_TABLE_ALTERNATE_MASK);
  a.epoch = 3;
  dccl_table_copy(&b, &a);
  CHECK(dccl_table_same_decisions(&a, &b) && b.epoch == 3);
  b.epoch = 4;
  CHECK(dccl_table_same_decisions(&a, &b)); /* epochs aside */
  dccl_table_set(&b, DCCL_TABLE_CELLS - 1, ring);
  CHECK(!dccl_table_same_decisions(&a, &b));
  dccl_table_copy(&b, &a);
  dccl_table_set_explore(&b, 9, ring, DCCL_TABLE_BLOCKS_MASK);
  CHECK(!dccl_table_same_decisions(&a, &b));
  dccl_table_copy(&b, &a);
  dccl_table_set_explore(&b, 9, DCCL_ACTION_NCCL, DCCL_TABLE_ALTERNATE_MASK);
  CHECK(!dccl_table_same_decisions(&a, &b));
}

static void test_publication_is_exact(void) {
  static race r;
  dccl_table_store_init(&r.store, 4);
  pthread_t thread;
  pthread_create(&thread, NULL, publisher, &r);
  while (!atomic_load(&r.started)) sched_yield();
  int torn = 0;
  for (uint64_t epoch = 0; epoch < RACE_EPOCHS && !torn; epoch++) {
    if (epoch % 64 == 0) sched_yield(); /* let the publisher in even on a loaded machine */
    const dccl_table* t = dccl_table_store_for_call(&r.store, epoch * 4);
    dccl_action first = dccl_table_get(t, 0);
    for (int k = 1; k < 4; k++)
      if (dccl_table_store_for_call(&r.store, epoch * 4 + (uint64_t)k) != t) torn = 1;
    for (int cell = 0; cell < DCCL_TABLE_CELLS; cell += 97)
      if (dccl_table_get(t, cell) != first) torn = 1;
    r.seen[epoch] = dccl_action_is_nccl(first) ? 0 : (uint32_t)dccl_action_channels(first);
  }
  atomic_store(&r.stop, 1);
  pthread_join(thread, NULL);
  CHECK(!torn);
  uint32_t expected = 0;
  int wrong = 0, commits = 0;
  for (int e = 0; e < RACE_EPOCHS; e++) {
    if (r.committed[e] != 0) {
      expected = r.committed[e];
      commits++;
    }
    if (r.seen[e] != expected) wrong++;
  }
  CHECK_MSG(wrong == 0, "%d epochs ran a table other than the publisher's record", wrong);
  CHECK(commits > 0);
}

int main(void) {
  RUN(test_bins_and_buckets);
  RUN(test_cells_are_a_bijection);
  RUN(test_epoch_switching);
  RUN(test_hot_path_first);
  RUN(test_follower_waits);
  RUN(test_copy_and_compare);
  RUN(test_publication_is_exact);
  RUN(test_bell_rings_once_when_armed);
  RUN(test_bell_never_misses_a_move);
  TEST_SUMMARY();
}
