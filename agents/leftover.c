/* agents/leftover.c: per-cell estimates of what each action leaves to the next call, and the charge beyond its span. */
#include "leftover.h"

#include <math.h>
#include <stddef.h>

#include "../core/action.h"

/* The cell's level: the action with the least mean excess among those with enough samples (NULL: none). */
static const dccl_leftover_estimate* level_of(const dccl_leftover_cell* cell) {
  const dccl_leftover_estimate* level = NULL;
  for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++) {
    const dccl_leftover_estimate* e = &cell->actions[i];
    if (e->count >= DCCL_LEFTOVER_LEVEL_SAMPLES && (level == NULL || e->excess_us.mean < level->excess_us.mean)) level = e;
  }
  return level;
}

/* The action's entry, or NULL. */
static const dccl_leftover_estimate* entry_of(const dccl_leftover_cell* cell, uint32_t action) {
  for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++)
    if (cell->actions[i].count > 0 && cell->actions[i].action == action) return &cell->actions[i];
  return NULL;
}

/* The action's entry; a new action takes a free one, else the least recently sampled but the level's. */
static dccl_leftover_estimate* find(dccl_leftover_cell* cell, uint32_t action) {
  const dccl_leftover_estimate* known = entry_of(cell, action);
  if (known != NULL) return &cell->actions[known - cell->actions];
  const dccl_leftover_estimate* level = level_of(cell);
  dccl_leftover_estimate* room = NULL;
  for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++) {
    dccl_leftover_estimate* e = &cell->actions[i];
    if (e == level) continue;
    if (room == NULL || (room->count > 0 && (e->count == 0 || e->last_used < room->last_used))) room = e;
  }
  *room = (dccl_leftover_estimate){.action = action};
  return room;
}

/* Welford's update while the window fills (weight 1 / count); exponentially weighted after. */
static void moments_add(dccl_running_moments* m, double x, double weight) {
  double deviation = x - m->mean;
  m->mean += deviation * weight;
  m->variance += (deviation * (x - m->mean) - m->variance) * weight;
}

void dccl_leftover_add(dccl_leftover_cell* cell, uint32_t action, double span_us, double excess_us) {
  if (!(excess_us >= 0) || !(span_us >= 0) || !isfinite(excess_us + span_us)) return;
  dccl_leftover_estimate* e = find(cell, action);
  e->last_used = ++cell->samples;
  if (e->count < DCCL_LEFTOVER_WINDOW) e->count++;
  e->span_mean_us += (span_us - e->span_mean_us) / e->count;
  /* Work left behind is at most a few of the action's spans (3.2 of its mean span on the GPU testbed); a
   * longer wait is the application's, whose outliers (a compute phase after a burst of calls) must not
   * swamp means. The mean span, not this call's: a call's span and what it leaves trade off (tree/LL on 2
   * channels leaves up to 9.7 of its own span), and clipping by its own span cut the calls that leave most. */
  double most = DCCL_LEFTOVER_CLIP_SPANS * e->span_mean_us;
  moments_add(&e->excess_us, excess_us < most ? excess_us : most, 1.0 / e->count);
}

/* Twice the standard error of the difference of two actions' mean excess (both with 2 samples or more):
 * a difference within it is charged nothing (one beyond it is charged whole, or less the margin in a
 * DCCL_LEFTOVER_SHRINK build). */
static double margin(const dccl_leftover_estimate* own, const dccl_leftover_estimate* level) {
  double level_variance = level->excess_us.variance * level->count / (level->count - 1);
  double own_variance = own->excess_us.variance * own->count / (own->count - 1);
  return 2 * sqrt(own_variance / own->count + level_variance / level->count);
}

double dccl_leftover_charge(const dccl_leftover_cell* cell, uint32_t action) {
  const dccl_leftover_estimate *level = level_of(cell), *own = entry_of(cell, action);
  if (own == NULL || own->count < 2 || level == NULL || own == level) return 0;
  /* Calls that wait on the application (the level action waits more than DCCL_LEFTOVER_WAITS_SPANS of its
   * span after its kernel): their excess is the wait, counted up to the clip, so that every action's
   * scales with its span. Nothing is charged. */
  if (level->excess_us.mean > DCCL_LEFTOVER_WAITS_SPANS * level->span_mean_us) return 0;
  double difference = own->excess_us.mean - level->excess_us.mean, noise = margin(own, level);
  /* Calls not quite back to back (the level waits more than half its span): a gap between calls that may
   * be fixed (the application's kernels between them, a launch gap), which adds the same to every
   * action's excess, or may end at a set time, so that an action faster than the level waits longer by
   * what it saves. Only what it waits beyond that saving is its own. */
  if (level->excess_us.mean > DCCL_LEFTOVER_BACK_TO_BACK * level->span_mean_us && level->span_mean_us > own->span_mean_us)
    difference -= level->span_mean_us - own->span_mean_us;
  /* The whole difference, once it is told from noise. Tree's excess varies by a quarter from call to
   * call on the GPU testbed: a charge shrunk by the margin left tree on 2 channels 7% cheaper against
   * NCCL's ring than collbench timed it (mean over 15 AllReduce sizes of run 9's traces, where the
   * whole difference is within 0.1%: docs/agents.md). */
  if (difference <= noise) return 0;
#ifdef DCCL_LEFTOVER_SHRINK /* the rule to commit b64522d, for side-by-side benchmarks (docs/agents.md) */
  difference -= noise;
#endif
  return difference;
}

int dccl_leftover_cell_valid(const dccl_leftover_cell* cell) {
  for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++) {
    const dccl_leftover_estimate* e = &cell->actions[i];
    if (e->count == 0) continue;
    int algo = (int)(e->action >> 16), proto = (int)(e->action >> 8 & 0xff), channels = (int)(e->action & 0xff);
    if (algo >= DCCL_NUM_ALGOS || proto >= DCCL_NUM_PROTOS || channels > DCCL_MAX_CHANNELS || e->count > DCCL_LEFTOVER_WINDOW ||
        e->last_used > cell->samples || !(e->excess_us.mean >= 0 && e->excess_us.mean <= DCCL_LEFTOVER_MAX_US) ||
        !(e->excess_us.variance >= 0 && e->excess_us.variance <= DCCL_LEFTOVER_MAX_US * DCCL_LEFTOVER_MAX_US) ||
        !(e->span_mean_us >= 0 && e->span_mean_us <= DCCL_LEFTOVER_MAX_US))
      return 0;
    for (int j = 0; j < i; j++)
      if (cell->actions[j].count > 0 && cell->actions[j].action == e->action) return 0;
  }
  return 1;
}

void dccl_leftover_cell_loaded(dccl_leftover_cell* cell) {
  for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++)
    if (cell->actions[i].count > DCCL_LEFTOVER_LOADED_SAMPLES) cell->actions[i].count = DCCL_LEFTOVER_LOADED_SAMPLES;
}
