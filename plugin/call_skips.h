/* plugin/call_skips.h: the measured calls the agents leave out, judged call by call in the order the
 * profiler delivers them: a call right after its cell's call of another action, the first call of a run
 * of a cell's calls right after a larger call of another cell, a call of a run launched after a host pause
 * where the cell's calls come back to back, and a communicator's first call of a
 * collective, datatype, algorithm and protocol (why each: plugin/call_skips.c). The learner asks for every
 * joined measurement (plugin/learner.c); bench/bench_trigger_trace asks for a GPU trace's calls, to feed
 * Agent-1 what the learner fed it. Fixed memory; no allocation. */
#ifndef DYNAMICCL_PLUGIN_CALL_SKIPS_H
#define DYNAMICCL_PLUGIN_CALL_SKIPS_H

#include <stdint.h>

#include "../core/decision_table.h"
#include "../core/measurement.h"
#include "../core/types.h"

typedef struct dccl_call_skips {
  int previous_cell;          /* the last call's decision cell; -1: none, or it joined no call */
  dccl_measurement previous;  /* the last call */
  /* Per collective and datatype, one bit per (algorithm, protocol) pair measured so far. */
  uint32_t measured_pairs[DCCL_NUM_COLLS][DCCL_NUM_DATATYPES];
  /* Per decision cell, of its calls right after another call by call order: how many, and how many of
   * them right after a call of the same cell. */
  uint32_t calls_after_a_call[DCCL_TABLE_CELLS], calls_after_own_cell[DCCL_TABLE_CELLS];
  /* and of those right after its own, how many were launched within that call (dccl_launched_within). */
  uint32_t calls_launched_within[DCCL_TABLE_CELLS];
} dccl_call_skips;

/* Why a call would be left out; each judged whatever the others say (a run start is never right after
 * a switch: that is the same cell), but for after_pause, set only where after_switch is not (both are of a
 * call right after its own cell's). */
typedef struct dccl_skip_reasons {
  int after_switch, run_start, after_pause, first_call;
} dccl_skip_reasons;

void dccl_call_skips_init(dccl_call_skips* skips);
/* Judges measurement `m` of decision cell `cell` (< DCCL_TABLE_CELLS); it then becomes the call before
 * the next one. */
void dccl_call_skips_next(dccl_call_skips* skips, const dccl_measurement* m, int cell, dccl_skip_reasons* out);
/* A measurement that joined no call: the next one has no known call right before it. */
static inline void dccl_call_skips_break(dccl_call_skips* skips) { skips->previous_cell = -1; }

/* Whether `next` is the communicator's call right after `m` by the profiler's call order, launched before
 * m's kernel end reached the profiler (both with host stamps): the stream was backlogged behind m. */
int dccl_launched_within(const dccl_measurement* m, const dccl_measurement* next);

#endif
