/* plugin/call_skips.c: which measured calls the agents leave out, and why: right after a switch of action,
 * a run's first call after a larger call, a call of a run launched after a host pause, a kernel's first call. */
#include "call_skips.h"

#include <string.h>

#include "../agents/leftover.h"
#include "../core/types.h"

int dccl_launched_within(const dccl_measurement* m, const dccl_measurement* next) {
  return next->call_order == m->call_order + 1 && m->host_done_ns != 0 && next->host_launch_ns != 0 &&
         next->host_launch_ns <= m->host_done_ns;
}

void dccl_call_skips_init(dccl_call_skips* s) {
  memset(s, 0, sizeof(*s));
  s->previous_cell = -1;
}

/* Whether the call right before this one was the same cell's and ran another action (what NCCL ran:
 * algorithm, protocol, channels). Such a call's span holds work that action left behind its kernel,
 * not this action's cost: on the GPU test machine a call right after tree on 1 channel runs longer by
 * 18-20% of tree's call (docs/results/gpu). The agents skip it. Exploration runs in contiguous calls
 * of a cell (config_agent.c), so that in a loop of one cell's calls only a run's first call and the
 * first call after it are skipped. "Right before" is by the profiler's call order where both have host
 * stamps, else by arrival (measurements arrive in call order). A workload that interleaves cells keeps
 * every measurement; DYNAMICCL_AFTER_SWITCH=learn keeps them all (plugin/learner.c). */
static int after_switch(const dccl_call_skips* s, const dccl_measurement* m, int cell) {
  const dccl_measurement* p = &s->previous;
  int stamped = m->host_launch_ns != 0 && p->host_launch_ns != 0;
  return s->previous_cell == cell && dccl_leftover_key_ran(p) != dccl_leftover_key_ran(m) &&
         (!stamped || m->call_order == p->call_order + 1);
}

#define RUNS_MIN_CALLS 16     /* calls right after another call before a cell's calls are known to come in runs */
#define RUNS_WINDOW_CALLS 4096 /* the counts halve here, so that they follow the workload as it changes */

/* Counts `m` among its cell's calls right after another call by the profiler's call order (both with host
 * stamps), and of those, right after a call of its own cell, and of those, launched within that call
 * (dccl_launched_within). Returns whether it is such a call: run_start and after_pause judge only those. */
static int count_after_a_call(dccl_call_skips* s, const dccl_measurement* m, int cell) {
  const dccl_measurement* p = &s->previous;
  if (s->previous_cell < 0 || m->host_launch_ns == 0 || p->host_launch_ns == 0 || m->call_order != p->call_order + 1)
    return 0;
  int own_cell = s->previous_cell == cell;
  if (s->calls_after_a_call[cell] >= RUNS_WINDOW_CALLS) {
    s->calls_after_a_call[cell] /= 2;
    s->calls_after_own_cell[cell] /= 2;
    s->calls_launched_within[cell] /= 2;
  }
  s->calls_after_a_call[cell]++;
  s->calls_after_own_cell[cell] += (uint32_t)own_cell;
  s->calls_launched_within[cell] += (uint32_t)(own_cell && dccl_launched_within(p, m));
  return 1;
}

/* Whether this call is the first of a run of its cell's calls, right after a larger call (more bytes) of
 * another cell, in a cell whose calls mostly come in runs (3 in 4 or more of them right after a call of
 * the same cell, by the profiler's call order). Such a call waits in its kernel for what the larger call
 * left: on the GPU test machine collbench's learning run plays each size in rounds of 13 calls, and
 * waits for the stream and checks the results between sizes, so a round's first call was launched 15-140
 * ms after the larger call's end was seen (run 15's learning trace, docs/results/gpu), and still
 * AllReduce 1 KiB's first call of a round, right after a 64 MiB call, read 4.4-6.4x its usual span,
 * AllGather and ReduceScatter 1 KiB's 4.9-44x. The ranks leave the check apart: at AllGather 1 KiB rank 1
 * launched 0.8 ms before rank 0 (median) and its kernel spanned 0.94 ms, waiting for rank 0's; at
 * AllReduce 1 KiB both ranks' spans (155-226 us against a usual 35) exceed their 58 us skew. Launched
 * back to back, the same call waits for the larger call's last transfers. Either way the reading falls
 * on whichever action the run began with, NCCL's choice most often: an arm that took one among a few
 * readings was written off (tree/LL at AllReduce 1 KiB, 1.17-1.24x faster than NCCL's choice, read 0.60x
 * over 2 readings in run 15, where this rule still asked for a launch within the larger call). The
 * agents skip it, as a call right after a switch of action (after_switch). A run's first call right after
 * a smaller one reads 1.1-1.9x there, and is kept: skipping every run's first call cost 0.3% of the
 * simulated suite's total latency, as each cell of a sweep loses a reading in 10-20 (docs/agents.md).
 * Where a cell's calls are interleaved with others' (a data-parallel job's last, smaller bucket after the
 * others), all are kept: what they wait for is common to every action of the cell. */
static int run_start(const dccl_call_skips* s, const dccl_measurement* m, int cell) {
  uint32_t after_a_call = s->calls_after_a_call[cell], after_own_cell = s->calls_after_own_cell[cell];
  return s->previous_cell != cell && s->previous.bytes > m->bytes && after_a_call >= RUNS_MIN_CALLS &&
         4 * after_own_cell >= 3 * after_a_call;
}

/* Whether this call of a run was launched after a host pause (the call before it, of the same cell, had
 * ended before this one was launched: the GPU sat idle, waiting for the application), in a cell whose
 * calls come back to back (3 in 4 or more of its calls right after its own were launched within them).
 * On the GPU test machine collbench waits for its stream and checks a size's first result after its 3
 * warm-up calls; the timed call after that pause read 1.09-1.28x the same action's back-to-back calls at
 * 256 KiB-64 MiB and 1.22-2.30x at 1-4 KiB (medians, run 20's learning trace: `python3
 * bench/gpu/summarize.py docs/results/gpu/20-h200-cold-learn-trace`, "Calls after a host pause"), and it
 * fell on whichever action the exploration mask put there: ReduceScatter 1 MiB's ring/Simple on 1
 * channel, 1.07-1.10x NCCL's choice in the pairs, booked 3 of its 8.5 readings so (375-429 us against
 * 231-288 back to back) and was left at 0.925x, the one size that missed the best in runs 21-22. The
 * agents skip it. Where every call follows a pause (a training step's compute between collectives), all
 * are kept. */
static int after_pause(const dccl_call_skips* s, const dccl_measurement* m, int cell) {
  uint32_t after_own_cell = s->calls_after_own_cell[cell];
  return s->previous_cell == cell && s->previous.host_done_ns != 0 && !dccl_launched_within(&s->previous, m) &&
         after_own_cell >= RUNS_MIN_CALLS && 4 * s->calls_launched_within[cell] >= 3 * after_own_cell;
}

/* Whether this is the communicator's first measured call of its collective, datatype, algorithm and
 * protocol. Such a call holds NCCL's one-time work: the first launch of its kernel in the process (each
 * collective, datatype, reduction, algorithm and protocol has its own, loaded at its first launch) and,
 * since NCCL 2.22, the connection of the algorithm's channels at its first use. On the GPU test machine
 * the first call of each collective in a process took 1-25 ms (30-560x a 1-KiB call) and tree's first
 * call 4x its median (docs/results/gpu/10-leftover-learn-pairs-r6's traces); one such reading among an
 * arm's first few writes the action off. The agents skip it. DYNAMICCL_FIRST_CALLS=learn keeps it (plugin/learner.c). Keyed
 * per communicator by what the measurement holds: a second communicator of the process loses one reading
 * per kernel to it, and the profiler does not tell the reduction (a later first call of another
 * reduction on the same datatype is learned). */
static int first_call(dccl_call_skips* s, const dccl_measurement* m) {
  if (m->algo >= DCCL_NUM_ALGOS || m->proto >= DCCL_NUM_PROTOS || m->datatype >= DCCL_NUM_DATATYPES) return 0;
  uint32_t bit = 1u << (m->algo * DCCL_NUM_PROTOS + m->proto);
  uint32_t* measured = &s->measured_pairs[m->coll][m->datatype];
  int first = (*measured & bit) == 0;
  *measured |= bit;
  return first;
}

void dccl_call_skips_next(dccl_call_skips* s, const dccl_measurement* m, int cell, dccl_skip_reasons* out) {
  int counted = count_after_a_call(s, m, cell);
  out->run_start = counted && run_start(s, m, cell);
  out->after_switch = after_switch(s, m, cell);
  out->after_pause = counted && !out->after_switch && after_pause(s, m, cell);
  s->previous_cell = cell;
  s->previous = *m;
  out->first_call = first_call(s, m);
}
