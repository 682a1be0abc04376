/* coord/history.h: the leader's record of the tables it decided, per epoch, kept until every
 * worker has received them: a base table plus the cells each later change touched. From it the
 * leader writes, for any worker, the table in force at the epoch the worker resumes from and the
 * changes after it. */
#ifndef DYNAMICCL_COORD_HISTORY_H
#define DYNAMICCL_COORD_HISTORY_H

#include <stdint.h>

#include "../core/decision_table.h"
#include "wire.h"

typedef struct dccl_history_entry {
  uint64_t epoch;
  uint32_t first_cell, cells; /* cells[first_cell .. first_cell + cells) */
} dccl_history_entry;

typedef struct dccl_history {
  dccl_table base;     /* the table in force at epoch base_epoch */
  uint64_t base_epoch; /* every entry is for a later epoch */
  dccl_table last;     /* the table after the newest entry */
  dccl_table scratch;
  dccl_history_entry* entries;
  uint32_t count, entries_capacity, max_entries;
  dccl_wire_cell* cells;
  uint32_t cells_used, cells_capacity, max_cells;
} dccl_history;

/* `epoch0`: the table of epoch 0. The record starts small (a frozen leader never adds to it) and
 * doubles as changes come, up to max_entries changes of max_cells cells in all. Returns -1 when out of
 * memory. */
int dccl_history_init(dccl_history* h, const dccl_table* epoch0, uint32_t max_entries, uint32_t max_cells);
void dccl_history_free(dccl_history* h);
size_t dccl_history_memory_bytes(const dccl_history* h);

/* Records that epoch `epoch` (later than every recorded one) runs `table`. Returns the number of
 * cells that changed, or -1 when the record is full, or cannot grow (the change must wait). */
int dccl_history_append(dccl_history* h, uint64_t epoch, const dccl_table* table);
/* Takes back the newest append (its commit did not happen). */
void dccl_history_drop_last(dccl_history* h);
/* Every worker has received the epochs below `received`: their changes fold into the base (no worker
 * will ask for them again; one resuming asks for epoch `received` or later). */
void dccl_history_forget(dccl_history* h, uint64_t received);

/* Writes one DECISIONS message for a worker: epochs [from, decided) are decided. With full, its
 * first entry is the whole table of epoch `from` (a worker joining or rejoining); then the changes
 * after it (or from `from` on, without full), as many as fit in the writer and in
 * DCCL_WIRE_MAX_ENTRIES. Returns the number of decided epochs the message states (less than `decided`
 * when it could not hold every change), or -1 when `from` is older than the record (the worker fell
 * behind what the leader kept). */
int64_t dccl_history_write(dccl_history* h, dccl_wire_writer* w, uint32_t rank, uint64_t comm_id, uint64_t token, uint64_t from,
                           int full, uint64_t decided);

#endif
