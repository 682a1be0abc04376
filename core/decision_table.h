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
 * call number n belongs to epoch n / epoch_calls. A publisher (a policy, later the learner or the
 * coordination layer) fills a free slot and publishes it for an epoch e; the hot path switches to it
 * at the first epoch boundary >= e, never inside an epoch. So every call of an epoch sees one table,
 * which is what makes identical decisions on all ranks possible.
 *
 * Threads: one hot-path thread per communicator (NCCL never runs getCollInfo concurrently on one
 * communicator) and one publisher thread. The slot in use and the slot pending are one atomic word,
 * changed only by compare-and-swap, so a publisher never overwrites a slot the hot path may read. */
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
/* Sets every cell of one collective whose size bin lies in [first_bin, last_bin], for all pipeline
 * buckets and registration states. */
void dccl_table_set_range(dccl_table* table, int coll, int first_bin, int last_bin, dccl_action action);

/* ---- publication ---- */
typedef struct dccl_table_store {
  dccl_table slots[DCCL_TABLE_SLOTS];
  /* (current slot) | (pending slot + 1) << 8; pending 0 means none. */
  _Atomic uint32_t state;
  _Atomic uint64_t switches; /* tables switched to by the hot path */
  unsigned epoch_shift;      /* epoch = call >> epoch_shift */
} dccl_table_store;

/* Initialises with `initial` (NULL: all NCCL) in use from epoch 0. epoch_calls is rounded up to a
 * power of two (1 = switch at the next call). */
void dccl_table_store_init(dccl_table_store* store, const dccl_table* initial, uint64_t epoch_calls);

/* Publisher side. Returns a slot that is neither in use nor pending (NULL if none is free, which
 * cannot happen with one publisher), to be filled and then handed to dccl_table_store_publish. */
dccl_table* dccl_table_store_begin(dccl_table_store* store);
/* Publishes a filled slot for `epoch`; replaces a pending table that the hot path has not taken. */
void dccl_table_store_publish(dccl_table_store* store, dccl_table* table, uint64_t epoch);
/* The table the hot path uses now (publisher-side observation). */
const dccl_table* dccl_table_store_current(dccl_table_store* store);
/* The newest published table: the pending one if the hot path has not taken it yet, else the
 * current one. A publisher that changes a few cells copies this one, so no change is lost. */
const dccl_table* dccl_table_store_latest(dccl_table_store* store);
/* The first epoch that has not begun after `calls` calls: where a table published now can apply. */
static inline uint64_t dccl_table_store_next_epoch(const dccl_table_store* store, uint64_t calls) {
  return calls == 0 ? 0 : ((calls - 1) >> store->epoch_shift) + 1;
}

/* Hot-path side: the table for call number `call`. Switches to a pending table when `call` starts
 * an epoch at or past the pending table's epoch. Lock-free, no allocation. */
static inline const dccl_table* dccl_table_store_for_call(dccl_table_store* store, uint64_t call) {
  uint32_t state = atomic_load_explicit(&store->state, memory_order_acquire);
  uint32_t pending = state >> 8;
  if (pending != 0 && (call & ((1ULL << store->epoch_shift) - 1)) == 0) {
    const dccl_table* next = &store->slots[pending - 1];
    if (next->epoch <= (call >> store->epoch_shift) &&
        atomic_compare_exchange_strong_explicit(&store->state, &state, pending - 1, memory_order_acq_rel,
                                                memory_order_acquire)) {
      atomic_fetch_add_explicit(&store->switches, 1, memory_order_relaxed);
      return next;
    }
    state = atomic_load_explicit(&store->state, memory_order_acquire);
  }
  return &store->slots[state & 0xFFu];
}

#endif
