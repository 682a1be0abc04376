/* core/decision_table.h: the decision table getCollInfo answers from, and the store through which
 * policies publish new tables to the hot path.
 *
 * A table has one cell per (collective, log2 size bin, pipelined-ops bucket, registered-buffer flag);
 * a cell holds one packed dccl_action (0 = NCCL's choice). Lookup is O(1): an index computation and
 * one relaxed atomic load.
 *
 * Exploration is part of the table: a cell may also hold an exploration action and an 8-bit mask.
 * The hot path counts the calls of every cell; call number n of a cell runs the exploration action
 * when bit (n mod 8) of the mask is set. All ranks make the same calls, so they count alike and
 * explore on the same calls.
 *
 * Publication works in epochs of calls. The hot path of a communicator counts its getCollInfo calls;
 * call number n belongs to epoch n / epoch_calls. Every epoch has exactly one table, fixed before the
 * epoch's first call and never changed during it; that is what makes identical decisions on all
 * ranks possible. An epoch is decided by whichever comes first:
 *  - the publisher (a policy, the learner, or the coordination layer on a worker) commits a table
 *    for the next epoch while the hot path runs the last decided one (at most one epoch ahead);
 *  - the hot path, reaching an undecided epoch below the store's limit, decides it itself: "same
 *    table as before". On a coordinated worker the limit is what the leader has sent: the epochs it
 *    decided without change; at an epoch past the limit the hot path waits for the publisher.
 * Both decide by compare-and-swap on one word, so exactly one of them decides each epoch.
 *
 * Threads: one hot-path thread per communicator (NCCL never runs getCollInfo concurrently on one
 * communicator) and one publisher thread. A publisher only fills a slot the hot path cannot be
 * reading: not the slot of the last decided epoch, and only once the hot path has entered it.
 *
 * The bell: a thread that acts on the store's progress (the coordination service, which sends a
 * leader's decided epochs and commits a worker's received tables) may sleep instead of polling. It
 * arms the bell, reading the counters at the same time; whoever next moves them (the hot path
 * entering an epoch, a commit) disarms it and rings it once. Either that thread saw the move or the
 * bell rings: both sides use sequentially consistent operations. A store without a bell costs the hot
 * path a load and a branch per change of epoch; with one, a sequentially consistent store (a full
 * fence on x86) and a load, and the ring (a non-blocking write) only after the thread went to sleep. */
#ifndef DYNAMICCL_CORE_DECISION_TABLE_H
#define DYNAMICCL_CORE_DECISION_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "action.h"

#define DCCL_SIZE_BINS 48   /* floor(log2(bytes)), clamped to 0..47 */
#define DCCL_PIPE_BUCKETS 4 /* numPipeOps 1, 2, 3-4, >=5 */
#define DCCL_REG_STATES 2   /* regBuff 0, 1 */
#define DCCL_TABLE_CELLS (DCCL_NUM_COLLS * DCCL_SIZE_BINS * DCCL_PIPE_BUCKETS * DCCL_REG_STATES)
#define DCCL_TABLE_SLOTS 4

typedef struct dccl_table {
  uint64_t epoch; /* first epoch this table applies to */
  _Atomic uint32_t cells[DCCL_TABLE_CELLS];
  _Atomic uint32_t explore[DCCL_TABLE_CELLS];     /* exploration action (may be NCCL's choice) */
  _Atomic uint8_t explore_mask[DCCL_TABLE_CELLS]; /* which of every 8 calls of the cell explore */
} dccl_table;

static inline int dccl_size_bin(size_t bytes) {
  if (bytes <= 1) return 0;
  int bin = 63 - __builtin_clzll((unsigned long long)bytes);
  return bin < DCCL_SIZE_BINS ? bin : DCCL_SIZE_BINS - 1;
}
static inline int dccl_pipe_bucket(int num_pipe_ops) {
  return num_pipe_ops <= 1 ? 0 : num_pipe_ops == 2 ? 1 : num_pipe_ops <= 4 ? 2 : 3;
}
/* coll must be in [0, DCCL_NUM_COLLS). */
static inline int dccl_cell_index(int coll, int size_bin, int pipe_bucket, int reg_buff) {
  return ((coll * DCCL_SIZE_BINS + size_bin) * DCCL_PIPE_BUCKETS + pipe_bucket) * DCCL_REG_STATES + (reg_buff ? 1 : 0);
}
static inline int dccl_cell_for_call(int coll, size_t bytes, int num_pipe_ops, int reg_buff) {
  return dccl_cell_index(coll, dccl_size_bin(bytes), dccl_pipe_bucket(num_pipe_ops), reg_buff);
}
/* Inverse of dccl_cell_index. */
void dccl_cell_decode(int cell, int* coll, int* size_bin, int* pipe_bucket, int* reg_buff);

static inline dccl_action dccl_table_get(const dccl_table* table, int cell) {
  return atomic_load_explicit(&table->cells[cell], memory_order_relaxed);
}
static inline void dccl_table_set(dccl_table* table, int cell, dccl_action action) {
  atomic_store_explicit(&table->cells[cell], action, memory_order_relaxed);
}
static inline void dccl_table_set_explore(dccl_table* table, int cell, dccl_action action, uint8_t mask) {
  atomic_store_explicit(&table->explore[cell], action, memory_order_relaxed);
  atomic_store_explicit(&table->explore_mask[cell], mask, memory_order_relaxed);
}
/* The exploration mask of a fixed table's `A|B` cell: its calls alternate, B on the odd-numbered ones. */
#define DCCL_TABLE_ALTERNATE_MASK 0xAA
/* The exploration mask of a fixed table's `A||B` cell: blocks of four calls, A on calls 0-3 of every
 * eight and B on calls 4-7 (a call that leaves work behind its kernel then slows mostly its own kind).
 * bench/gpu/collbench.c's pairs mode reads its halves from it; the config agent measures NCCL's own
 * choice on the same calls before it has a reference. */
#define DCCL_TABLE_BLOCKS_MASK 0xF0
/* The action for call number `cell_call` of a cell (its per-cell call counter). */
static inline dccl_action dccl_table_action(const dccl_table* table, int cell, uint32_t cell_call) {
  uint8_t mask = atomic_load_explicit(&table->explore_mask[cell], memory_order_relaxed);
  if (mask != 0 && ((mask >> (cell_call & 7u)) & 1u))
    return atomic_load_explicit(&table->explore[cell], memory_order_relaxed);
  return atomic_load_explicit(&table->cells[cell], memory_order_relaxed);
}
/* Sets every cell to `action`, without exploration. */
void dccl_table_fill(dccl_table* table, dccl_action action);
void dccl_table_copy(dccl_table* dst, const dccl_table* src);
/* 1 when both tables hold the same decisions, explorations and masks in every cell (epochs aside). */
int dccl_table_same_decisions(const dccl_table* a, const dccl_table* b);
/* Sets every cell of one collective whose size bin lies in [first_bin, last_bin], for all pipeline
 * buckets and registration states. */
void dccl_table_set_range(dccl_table* table, int coll, int first_bin, int last_bin, dccl_action action);

/* ---- publication ---- */
typedef struct dccl_table_store {
  dccl_table slots[DCCL_TABLE_SLOTS];
  /* (number of decided epochs) << 8 | slot of the last decided epoch. Changed only by CAS. */
  _Alignas(64) _Atomic uint64_t decided;
  /* Epochs the hot path has entered (it runs epoch entered - 1). Written by the hot path only. */
  _Atomic uint64_t entered;
  _Atomic uint64_t switches; /* epochs whose table differed from the previous epoch's */
  unsigned epoch_shift;      /* epoch = call >> epoch_shift */
  /* The hot path may decide epochs below this one itself (UINT64_MAX: all; a coordinated worker:
   * the epochs the leader decided without change). */
  _Atomic uint64_t self_limit;
  /* The bell (see above): set before the first call and before the thread that arms it can see the
   * store, cleared after the last call where that thread cannot be running it; armed by that thread,
   * disarmed by whoever rings it. */
  _Atomic int bell_armed;
  void (*bell)(void* context);
  void* bell_context;
  /* hot path only */
  uint32_t current_slot;
  uint64_t current_epoch; /* valid when entered > 0 */
} dccl_table_store;

/* Initialises with all-NCCL tables, epoch 0 decided and no limit. epoch_calls is rounded up to a
 * power of two (1 = a new epoch at every call). */
void dccl_table_store_init(dccl_table_store* store, uint64_t epoch_calls);
/* Before the first call only: the table of epoch 0, to fill in place (a fixed table, a policy). */
dccl_table* dccl_table_store_initial(dccl_table_store* store);
/* Before the first call only: makes this a follower store. Nothing is decided until the publisher
 * commits epoch 0, and the hot path decides no epoch itself until dccl_table_store_allow raises the
 * limit. */
void dccl_table_store_follow(dccl_table_store* store);
/* Publisher side: lets the hot path decide, unchanged, every epoch below `limit` (never lowers it). */
void dccl_table_store_allow(dccl_table_store* store, uint64_t limit);

/* Before the first call and before the arming thread can see the store, or after the last call where
 * that thread cannot be running it: the bell's function (NULL: none) and its context. */
void dccl_table_store_set_bell(dccl_table_store* store, void (*bell)(void* context), void* context);
/* The sleeping side: arms the bell and reads, after arming, the epochs entered and decided. When
 * they differ from what the caller saw last, it must not sleep (the move may not ring). */
void dccl_table_store_arm_bell(dccl_table_store* store, uint64_t* entered, uint64_t* decided);
/* The sleeping side, awake again: disarms the bell (ringing it now would wake nobody). */
void dccl_table_store_disarm_bell(dccl_table_store* store);

/* Publisher side. A slot to fill for the next epoch, or NULL when the next epoch cannot be decided
 * now (the hot path has not entered the last decided epoch yet: try again later). */
dccl_table* dccl_table_store_begin(dccl_table_store* store);
/* Decides the next epoch: `table` (a slot from begin) or, with NULL, the same table as the last
 * decided epoch. Returns 0 and the epoch decided, or -1 when it cannot be decided now (the hot path
 * decided it first, or has not entered the last decided epoch): the publisher tries again later. */
int dccl_table_store_commit(dccl_table_store* store, dccl_table* table, uint64_t* epoch);
/* The table of the last decided epoch. A publisher that changes a few cells copies this one. */
const dccl_table* dccl_table_store_latest(dccl_table_store* store);
/* Number of decided epochs. */
static inline uint64_t dccl_table_store_decided(const dccl_table_store* store) {
  return atomic_load_explicit(&store->decided, memory_order_acquire) >> 8;
}
/* Number of epochs the hot path has entered. */
static inline uint64_t dccl_table_store_entered(const dccl_table_store* store) {
  return atomic_load_explicit(&store->entered, memory_order_acquire);
}

/* Hot-path slow path: enters epochs up to `epoch`. Returns NULL when one of them is undecided and
 * past the limit (the caller waits and calls again). */
const dccl_table* dccl_table_store_enter(dccl_table_store* store, uint64_t epoch);

/* Hot-path side: the table for call number `call`, or NULL when the caller must wait (follower).
 * Lock-free, no allocation; inside an epoch one shift and one compare. */
static inline const dccl_table* dccl_table_store_for_call(dccl_table_store* store, uint64_t call) {
  uint64_t epoch = call >> store->epoch_shift;
  if (epoch == store->current_epoch && atomic_load_explicit(&store->entered, memory_order_relaxed) != 0)
    return &store->slots[store->current_slot];
  return dccl_table_store_enter(store, epoch);
}

#endif
