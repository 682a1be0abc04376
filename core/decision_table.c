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

void dccl_table_set_range(dccl_table* table, int coll, int first_bin, int last_bin, dccl_action action) {
  if (first_bin < 0) first_bin = 0;
  if (last_bin >= DCCL_SIZE_BINS) last_bin = DCCL_SIZE_BINS - 1;
  for (int bin = first_bin; bin <= last_bin; bin++)
    for (int pipe = 0; pipe < DCCL_PIPE_BUCKETS; pipe++)
      for (int reg = 0; reg < DCCL_REG_STATES; reg++) dccl_table_set(table, dccl_cell_index(coll, bin, pipe, reg), action);
}

void dccl_table_store_init(dccl_table_store* store, const dccl_table* initial, uint64_t epoch_calls) {
  for (int s = 0; s < DCCL_TABLE_SLOTS; s++) {
    dccl_table_fill(&store->slots[s], DCCL_ACTION_NCCL);
    store->slots[s].epoch = 0;
  }
  if (initial != NULL) dccl_table_copy(&store->slots[0], initial);
  store->slots[0].epoch = 0;
  unsigned shift = 0;
  while (shift < 40 && (1ULL << shift) < epoch_calls) shift++;
  store->epoch_shift = shift;
  atomic_store(&store->switches, 0);
  atomic_store(&store->state, 0u);
}

dccl_table* dccl_table_store_begin(dccl_table_store* store) {
  uint32_t state = atomic_load_explicit(&store->state, memory_order_acquire);
  uint32_t current = state & 0xFFu, pending = state >> 8;
  for (uint32_t s = 0; s < DCCL_TABLE_SLOTS; s++)
    if (s != current && s + 1 != pending) return &store->slots[s];
  return NULL;
}

void dccl_table_store_publish(dccl_table_store* store, dccl_table* table, uint64_t epoch) {
  table->epoch = epoch;
  uint32_t slot = (uint32_t)(table - store->slots);
  uint32_t state = atomic_load_explicit(&store->state, memory_order_acquire);
  for (;;) {
    uint32_t desired = (state & 0xFFu) | ((slot + 1) << 8);
    if (atomic_compare_exchange_weak_explicit(&store->state, &state, desired, memory_order_acq_rel,
                                              memory_order_acquire))
      return;
  }
}

const dccl_table* dccl_table_store_latest(dccl_table_store* store) {
  uint32_t state = atomic_load_explicit(&store->state, memory_order_acquire);
  uint32_t pending = state >> 8;
  return &store->slots[pending != 0 ? pending - 1 : (state & 0xFFu)];
}

const dccl_table* dccl_table_store_current(dccl_table_store* store) {
  uint32_t state = atomic_load_explicit(&store->state, memory_order_acquire);
  return &store->slots[state & 0xFFu];
}
