/* core/decision_table.c: decision-table cell helpers and the epoch-based publication store. */
#include "decision_table.h"

#include <string.h>

void dccl_cell_decode(int cell, int* coll, int* size_bin, int* pipe_bucket, int* reg_buff) {
  *reg_buff = cell % DCCL_REG_STATES;
  cell /= DCCL_REG_STATES;
  *pipe_bucket = cell % DCCL_PIPE_BUCKETS;
  cell /= DCCL_PIPE_BUCKETS;
  *size_bin = cell % DCCL_SIZE_BINS;
  *coll = cell / DCCL_SIZE_BINS;
}

void dccl_table_fill(dccl_table* table, dccl_action action) {
  for (int i = 0; i < DCCL_TABLE_CELLS; i++) {
    dccl_table_set(table, i, action);
    dccl_table_set_explore(table, i, DCCL_ACTION_NCCL, 0);
  }
}

void dccl_table_copy(dccl_table* dst, const dccl_table* src) {
  for (int i = 0; i < DCCL_TABLE_CELLS; i++) {
    dccl_table_set(dst, i, dccl_table_get(src, i));
    dccl_table_set_explore(dst, i, atomic_load_explicit(&src->explore[i], memory_order_relaxed),
                           atomic_load_explicit(&src->explore_mask[i], memory_order_relaxed));
  }
  dst->epoch = src->epoch;
}

int dccl_table_same_decisions(const dccl_table* a, const dccl_table* b) {
  for (int i = 0; i < DCCL_TABLE_CELLS; i++)
    if (dccl_table_get(a, i) != dccl_table_get(b, i) ||
        atomic_load_explicit(&a->explore[i], memory_order_relaxed) !=
          atomic_load_explicit(&b->explore[i], memory_order_relaxed) ||
        atomic_load_explicit(&a->explore_mask[i], memory_order_relaxed) !=
          atomic_load_explicit(&b->explore_mask[i], memory_order_relaxed))
      return 0;
  return 1;
}

void dccl_table_set_range(dccl_table* table, int coll, int first_bin, int last_bin, dccl_action action) {
  if (first_bin < 0) first_bin = 0;
  if (last_bin >= DCCL_SIZE_BINS) last_bin = DCCL_SIZE_BINS - 1;
  for (int bin = first_bin; bin <= last_bin; bin++)
    for (int pipe = 0; pipe < DCCL_PIPE_BUCKETS; pipe++)
      for (int reg = 0; reg < DCCL_REG_STATES; reg++) dccl_table_set(table, dccl_cell_index(coll, bin, pipe, reg), action);
}

void dccl_table_store_init(dccl_table_store* store, uint64_t epoch_calls) {
  for (int s = 0; s < DCCL_TABLE_SLOTS; s++) {
    dccl_table_fill(&store->slots[s], DCCL_ACTION_NCCL);
    store->slots[s].epoch = 0;
  }
  unsigned shift = 0;
  while (shift < 40 && (1ULL << shift) < epoch_calls) shift++;
  store->epoch_shift = shift;
  store->current_slot = 0;
  store->current_epoch = 0;
  atomic_store(&store->switches, 0);
  atomic_store(&store->entered, 0);
  atomic_store(&store->self_limit, UINT64_MAX);
  atomic_store(&store->decided, (uint64_t)1 << 8);
  atomic_store(&store->bell_armed, 0);
  store->bell = NULL;
  store->bell_context = NULL;
}

dccl_table* dccl_table_store_initial(dccl_table_store* store) { return &store->slots[0]; }

void dccl_table_store_follow(dccl_table_store* store) {
  atomic_store(&store->self_limit, 0);
  atomic_store(&store->decided, 0);
}

void dccl_table_store_set_bell(dccl_table_store* store, void (*bell)(void* context), void* context) {
  atomic_store(&store->bell_armed, 0);
  store->bell = bell;
  store->bell_context = context;
}

void dccl_table_store_arm_bell(dccl_table_store* store, uint64_t* entered, uint64_t* decided) {
  atomic_store(&store->bell_armed, 1);
  *entered = atomic_load(&store->entered);
  *decided = atomic_load(&store->decided) >> 8;
}

void dccl_table_store_disarm_bell(dccl_table_store* store) {
  atomic_store_explicit(&store->bell_armed, 0, memory_order_relaxed);
}

/* After a move of `entered` or `decided`, made sequentially consistent like the arming and the counters'
 * reading in dccl_table_store_arm_bell: either that reading saw the move (or an earlier one of the same
 * call) or this load sees the bell armed. Rings an armed bell once. (A hot path's own decision is always
 * followed by its entering the epoch, which is the move the bell's thread sees.) */
static void ring_bell(dccl_table_store* store) {
  if (store->bell == NULL || !atomic_load(&store->bell_armed)) return;
  if (atomic_exchange(&store->bell_armed, 0)) store->bell(store->bell_context);
}

void dccl_table_store_allow(dccl_table_store* store, uint64_t limit) {
  uint64_t now = atomic_load_explicit(&store->self_limit, memory_order_relaxed);
  while (now < limit && !atomic_compare_exchange_weak_explicit(&store->self_limit, &now, limit, memory_order_release,
                                                               memory_order_relaxed)) {
  }
}

dccl_table* dccl_table_store_begin(dccl_table_store* store) {
  uint64_t word = atomic_load_explicit(&store->decided, memory_order_acquire);
  if (atomic_load_explicit(&store->entered, memory_order_acquire) != word >> 8) return NULL;
  for (uint32_t s = 0; s < DCCL_TABLE_SLOTS; s++)
    if (s != (word & 0xFFu)) return &store->slots[s];
  return NULL;
}

int dccl_table_store_commit(dccl_table_store* store, dccl_table* table, uint64_t* epoch) {
  uint64_t word = atomic_load_explicit(&store->decided, memory_order_acquire);
  uint64_t decided = word >> 8;
  if (atomic_load_explicit(&store->entered, memory_order_acquire) != decided) return -1;
  uint64_t slot = word & 0xFFu;
  if (table != NULL) {
    uint64_t filled = (uint64_t)(table - store->slots);
    if (filled >= DCCL_TABLE_SLOTS || (filled == slot && decided > 0)) return -1;
    table->epoch = decided;
    slot = filled;
  }
  if (!atomic_compare_exchange_strong_explicit(&store->decided, &word, ((decided + 1) << 8) | slot,
                                               memory_order_seq_cst, memory_order_acquire))
    return -1;
  if (epoch != NULL) *epoch = decided;
  ring_bell(store);
  return 0;
}

const dccl_table* dccl_table_store_latest(dccl_table_store* store) {
  uint64_t word = atomic_load_explicit(&store->decided, memory_order_acquire);
  return &store->slots[word & 0xFFu];
}

/* After the hot path entered epochs: the last move made sequentially consistent (see ring_bell), then
 * the bell rung if armed. Once per call, however many epochs it entered. */
static void entered_epochs(dccl_table_store* store, uint64_t entered) {
  if (store->bell == NULL) return;
  atomic_store_explicit(&store->entered, entered, memory_order_seq_cst);
  ring_bell(store);
}

const dccl_table* dccl_table_store_enter(dccl_table_store* store, uint64_t epoch) {
  uint64_t first = atomic_load_explicit(&store->entered, memory_order_relaxed), entered = first;
  while (entered <= epoch) { /* enter epoch `entered` */
    uint64_t word = atomic_load_explicit(&store->decided, memory_order_acquire);
    while ((word >> 8) <= entered) {
      if (entered >= atomic_load_explicit(&store->self_limit, memory_order_acquire)) {
        if (entered != first) entered_epochs(store, entered);
        return NULL;
      }
      uint64_t same = ((entered + 1) << 8) | (word & 0xFFu);
      if (atomic_compare_exchange_weak_explicit(&store->decided, &word, same, memory_order_acq_rel,
                                                memory_order_acquire))
        word = same;
    }
    uint32_t slot = (uint32_t)(word & 0xFFu);
    if (entered > 0 && slot != store->current_slot)
      atomic_store_explicit(&store->switches, atomic_load_explicit(&store->switches, memory_order_relaxed) + 1,
                            memory_order_relaxed);
    store->current_slot = slot;
    store->current_epoch = entered;
    entered++;
    atomic_store_explicit(&store->entered, entered, memory_order_release);
  }
  if (entered != first) entered_epochs(store, entered);
  return &store->slots[store->current_slot];
}
