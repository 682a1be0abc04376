/* coord/history.c: the leader's per-epoch record of decided tables (see history.h). */
#include "history.h"

#include <stdlib.h>
#include <string.h>

#include "../core/grow.h"

#define INITIAL_ENTRIES 16u
#define INITIAL_CELLS 256u

int dccl_history_init(dccl_history* h, const dccl_table* epoch0, uint32_t max_entries, uint32_t max_cells) {
  dccl_table_copy(&h->base, epoch0);
  dccl_table_copy(&h->last, epoch0);
  h->base_epoch = 0;
  h->count = 0;
  h->cells_used = 0;
  h->max_entries = max_entries;
  h->max_cells = max_cells;
  h->entries_capacity = max_entries < INITIAL_ENTRIES ? max_entries : INITIAL_ENTRIES;
  h->cells_capacity = max_cells < INITIAL_CELLS ? max_cells : INITIAL_CELLS;
  h->entries = calloc(h->entries_capacity, sizeof(*h->entries));
  h->cells = calloc(h->cells_capacity, sizeof(*h->cells));
  if (h->entries == NULL || h->cells == NULL) {
    dccl_history_free(h);
    return -1;
  }
  return 0;
}

void dccl_history_free(dccl_history* h) {
  free(h->entries);
  free(h->cells);
  h->entries = NULL;
  h->cells = NULL;
}

size_t dccl_history_memory_bytes(const dccl_history* h) {
  return sizeof(*h) + h->entries_capacity * sizeof(*h->entries) + h->cells_capacity * sizeof(*h->cells);
}

/* Room for one more entry and `cells` more cells, doubling the arrays up to their maxima; -1 when not. */
static int make_room(dccl_history* h, uint32_t cells) {
  return dccl_grow_array((void**)&h->entries, &h->entries_capacity, h->count + 1, h->max_entries, sizeof(*h->entries)) ||
         dccl_grow_array((void**)&h->cells, &h->cells_capacity, h->cells_used + cells, h->max_cells, sizeof(*h->cells))
           ? -1
           : 0;
}

static dccl_wire_cell cell_of(const dccl_table* t, int cell) {
  dccl_wire_cell c = {(uint16_t)cell, atomic_load_explicit(&t->explore_mask[cell], memory_order_relaxed),
                      dccl_table_get(t, cell), atomic_load_explicit(&t->explore[cell], memory_order_relaxed)};
  return c;
}

static int same_cell(const dccl_wire_cell* a, const dccl_wire_cell* b) {
  return a->action == b->action && a->explore == b->explore && a->explore_mask == b->explore_mask;
}

static void apply(dccl_table* t, const dccl_wire_cell* c) {
  dccl_table_set(t, c->cell, c->action);
  dccl_table_set_explore(t, c->cell, c->explore, c->explore_mask);
}

int dccl_history_append(dccl_history* h, uint64_t epoch, const dccl_table* table) {
  uint32_t changes = 0;
  for (int i = 0; i < DCCL_TABLE_CELLS; i++) {
    dccl_wire_cell now = cell_of(table, i), before = cell_of(&h->last, i);
    changes += !same_cell(&now, &before);
  }
  if (make_room(h, changes) != 0) return -1;
  uint32_t first = h->cells_used;
  for (int i = 0; i < DCCL_TABLE_CELLS; i++) {
    dccl_wire_cell now = cell_of(table, i), before = cell_of(&h->last, i);
    if (same_cell(&now, &before)) continue;
    if (h->cells_used - first == changes) { /* the table changed under us (its publisher's alone: cannot) */
      h->cells_used = first;
      return -1;
    }
    h->cells[h->cells_used++] = now;
  }
  uint32_t changed = h->cells_used - first;
  h->entries[h->count++] = (dccl_history_entry){epoch, first, changed};
  for (uint32_t k = first; k < h->cells_used; k++) apply(&h->last, &h->cells[k]);
  return (int)changed;
}

static void rebuild_last(dccl_history* h) {
  dccl_table_copy(&h->last, &h->base);
  for (uint32_t k = 0; k < h->cells_used; k++) apply(&h->last, &h->cells[k]);
}

void dccl_history_drop_last(dccl_history* h) {
  if (h->count == 0) return;
  h->count--;
  h->cells_used = h->entries[h->count].first_cell;
  rebuild_last(h);
}

void dccl_history_forget(dccl_history* h, uint64_t received) {
  /* Changes of epochs below `received` fold into the base, which becomes the table of epoch
   * received - 1; the change of epoch `received` itself may not have been sent yet and stays. */
  if (received == 0 || received - 1 <= h->base_epoch) return;
  uint32_t folded = 0;
  while (folded < h->count && h->entries[folded].epoch < received) {
    const dccl_history_entry* e = &h->entries[folded];
    for (uint32_t k = 0; k < e->cells; k++) apply(&h->base, &h->cells[e->first_cell + k]);
    folded++;
  }
  h->base_epoch = received - 1;
  if (folded == 0) return;
  uint32_t first_kept = folded < h->count ? h->entries[folded].first_cell : h->cells_used;
  memmove(h->cells, h->cells + first_kept, (h->cells_used - first_kept) * sizeof(*h->cells));
  h->cells_used -= first_kept;
  memmove(h->entries, h->entries + folded, (h->count - folded) * sizeof(*h->entries));
  h->count -= folded;
  for (uint32_t i = 0; i < h->count; i++) h->entries[i].first_cell -= first_kept;
}

int64_t dccl_history_write(dccl_history* h, dccl_wire_writer* w, uint32_t rank, uint64_t comm_id, uint64_t token, uint64_t from,
                           int full, uint64_t decided) {
  if (from < h->base_epoch) return -1;
  size_t at = dccl_wire_begin(w, DCCL_MSG_DECISIONS, rank, comm_id, token);
  size_t decided_at = w->length;
  dccl_wire_put_u64(w, decided);
  size_t count_at = w->length;
  dccl_wire_put_u32(w, 0);
  uint32_t entries = 0;
  uint32_t i = 0;
  if (full) {
    /* The table in force at `from`: the base with every change up to `from`. */
    dccl_table_copy(&h->scratch, &h->base);
    for (; i < h->count && h->entries[i].epoch <= from; i++)
      for (uint32_t k = 0; k < h->entries[i].cells; k++) apply(&h->scratch, &h->cells[h->entries[i].first_cell + k]);
    uint32_t cells = 0;
    for (int c = 0; c < DCCL_TABLE_CELLS; c++) {
      dccl_wire_cell now = cell_of(&h->scratch, c);
      if (!dccl_action_is_nccl(now.action) || now.explore_mask != 0) cells++;
    }
    dccl_wire_entry_header e = {from, 1, cells};
    dccl_wire_put_entry_header(w, &e);
    for (int c = 0; c < DCCL_TABLE_CELLS; c++) {
      dccl_wire_cell now = cell_of(&h->scratch, c);
      if (!dccl_action_is_nccl(now.action) || now.explore_mask != 0) dccl_wire_put_cell(w, &now);
    }
    entries++;
  } else {
    while (i < h->count && h->entries[i].epoch < from) i++;
  }
  uint64_t stated = decided;
  for (; i < h->count && h->entries[i].epoch < decided; i++) {
    const dccl_history_entry* e = &h->entries[i];
    size_t need = DCCL_WIRE_ENTRY_BYTES + (size_t)e->cells * DCCL_WIRE_CELL_BYTES;
    if (w->capacity - w->length < need || w->length - at - DCCL_WIRE_HEADER_BYTES + need > DCCL_WIRE_MAX_PAYLOAD ||
        entries == DCCL_WIRE_MAX_ENTRIES) {
      stated = e->epoch; /* the rest in a later message; epochs from here on are not stated yet */
      break;
    }
    dccl_wire_entry_header header = {e->epoch, 0, e->cells};
    dccl_wire_put_entry_header(w, &header);
    for (uint32_t k = 0; k < e->cells; k++) dccl_wire_put_cell(w, &h->cells[e->first_cell + k]);
    entries++;
  }
  if (full && stated <= from) stated = from + 1;
  if (!w->overflow) {
    uint8_t* p = w->bytes + decided_at;
    for (int b = 0; b < 8; b++) p[b] = (uint8_t)(stated >> (8 * b));
    p = w->bytes + count_at;
    for (int b = 0; b < 4; b++) p[b] = (uint8_t)(entries >> (8 * b));
  }
  if (dccl_wire_end(w, at) != 0) {
    w->length = at;
    w->overflow = 0;
    return 0; /* did not fit: nothing written, try when there is room */
  }
  return (int64_t)stated;
}
