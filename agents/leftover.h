/* agents/leftover.h: what each action leaves to the next call, per decision cell (DYNAMICCL_COST=leftover).
 *
 * Over network transports an algorithm can leave work behind its kernel that holds the communicator's
 * next kernel back (tree over sockets: a third of its call on the H100 testbed, docs/results/gpu). A
 * call's "excess" is how long after its kernel ended the next call's kernel started, where NCCL had
 * launched that call already (where the application launched it later, the gap tells nothing about
 * the call, and the call gives no sample), and its "stream time" is its span plus its excess: how
 * long it kept the stream.
 *
 * An application can make the next collective wait too (a gradient bucket waiting for its backward
 * pass on another CUDA stream, or compute between two calls): that is not the call's cost. So each
 * action's excess is estimated per cell, and the action with the least (among those sampled
 * DCCL_LEFTOVER_LEVEL_SAMPLES times) sets the cell's level:
 *  - where even the level action waits more than a span after its kernel, the cell's calls wait on the
 *    application: their excess is the application's, and nothing is charged (as `span`);
 *  - else an action with 2 samples or more is charged what its mean excess exceeds the level's, where
 *    that difference is more than twice its standard error (else nothing): the work it leaves behind
 *    (as `stream`, but not for the level);
 *  - but where the level waits more than half its span, the calls are not quite back to back: a fixed
 *    gap between them (the application's kernels, a launch gap; the gpu-sweep workloads' 20 us) adds
 *    the same to every action's excess, while a wait that ends at a set time makes an action faster
 *    than the level wait longer by what it saves. Such an action is charged only beyond that saving.
 *    (Charging nothing there let a warm start keep tree/LL at AllReduce 1 KiB at 1.5x NCCL: its span
 *    is half its cost, docs/agents.md.)
 * A sample's excess counts at most DCCL_LEFTOVER_CLIP_SPANS of its action's mean span (this sample's
 * included): tree's left work averages 1.9 of its mean span on the testbed and reaches 3.2 in single
 * calls (AllReduce 64 KiB on tree/LL and 2 channels: mean span 56 us, docs/results/gpu run 9's traces),
 * and a compute phase after a burst of calls must not swamp the means. Not this call's own span: span and
 * excess trade off from call to call (up to 9.7 of its own span in a call that leaves 0.91 of its stream
 * time). What this cannot tell: an application whose waits end at a set time that only the slowest
 * actions outlast, these waiting under half their span (their excess is small, the faster ones' is the
 * wait), charges the faster ones up to that time;
 * and work left behind that makes the next kernel longer rather than later (tree on 1 channel over
 * sockets) is not excess: the learner's skip after a switch of action handles it. The estimates are
 * saved with the policy (a warm start charges from its first call, each estimate weighing at most
 * DCCL_LEFTOVER_LOADED_SAMPLES), but not restarted with the agents' statistics on congestion (measured
 * and not kept: docs/agents.md).
 *
 * Background thread only; fixed memory, no allocation. */
#ifndef DYNAMICCL_AGENTS_LEFTOVER_H
#define DYNAMICCL_AGENTS_LEFTOVER_H

#include <stdint.h>

#include "../core/measurement.h"

#define DCCL_LEFTOVER_ACTIONS 8 /* actions tracked per cell; a new one takes the place of the least
                                   recently sampled, never of the level */
#define DCCL_LEFTOVER_WINDOW 64 /* samples after which the estimates weigh new ones as 1 / this (an
                                   exponential average, which the margin counts as this many samples) */
#define DCCL_LEFTOVER_LEVEL_SAMPLES 4 /* samples an action needs to be the cell's level */
#define DCCL_LEFTOVER_CLIP_SPANS 4 /* a sample's excess counts at most this many of its action's mean span */
#define DCCL_LEFTOVER_BACK_TO_BACK 0.5 /* a level action whose mean excess is more than this share of its
                                          span says the cell's calls are not quite back to back: an action
                                          faster than the level is charged only beyond what it saves */
#define DCCL_LEFTOVER_WAITS_SPANS 1.0 /* one whose mean excess is more than this many of its spans says the
                                         cell's calls wait on the application: no charge */
#define DCCL_LEFTOVER_LOADED_SAMPLES 4 /* a saved estimate weighs at most this many samples when loaded:
                                         the job's own calls soon outweigh it (its application may wait
                                         otherwise than the job that saved it) */
#define DCCL_LEFTOVER_MAX_US 1e9 /* a saved mean or span beyond this (about 17 minutes) is damage */

/* Mean and (population) variance of a quantity (Welford's, then exponentially weighted). */
typedef struct dccl_running_moments {
  double mean, variance;
} dccl_running_moments;

typedef struct dccl_leftover_estimate {
  uint32_t action;    /* what ran: algorithm << 16 | protocol << 8 | channels */
  uint32_t count;     /* samples (at most DCCL_LEFTOVER_WINDOW); 0: the entry is free */
  uint32_t last_used; /* the cell's sample count when this entry last took one */
  dccl_running_moments excess_us;
  double span_mean_us; /* only tells whether the level waits */
} dccl_leftover_estimate;

typedef struct dccl_leftover_cell {
  dccl_leftover_estimate actions[DCCL_LEFTOVER_ACTIONS];
  uint32_t samples; /* taken by the cell, for last_used */
} dccl_leftover_cell;

static inline uint32_t dccl_leftover_key(int algo, int proto, int channels) {
  return (uint32_t)algo << 16 | (uint32_t)proto << 8 | (uint32_t)channels;
}
/* What a measured call ran (algorithm, protocol, channels), as a key. */
static inline uint32_t dccl_leftover_key_ran(const dccl_measurement* m) {
  return dccl_leftover_key(m->algo, m->proto, m->channels);
}

/* Adds one call of the action that ran: its span and its excess (us, >= 0). */
void dccl_leftover_add(dccl_leftover_cell* cell, uint32_t action, double span_us, double excess_us);
/* What the action is charged beyond its span (us, >= 0). */
double dccl_leftover_charge(const dccl_leftover_cell* cell, uint32_t action);

/* Whether a cell read from a saved policy is one dccl_leftover_add could have built: every used entry
 * of a distinct, well-formed action, with 1 to DCCL_LEFTOVER_WINDOW samples, finite moments within
 * DCCL_LEFTOVER_MAX_US, and used no later than the cell's count. */
int dccl_leftover_cell_valid(const dccl_leftover_cell* cell);

/* A saved cell as the job starts from it: each estimate weighs at most DCCL_LEFTOVER_LOADED_SAMPLES. */
void dccl_leftover_cell_loaded(dccl_leftover_cell* cell);

#endif
