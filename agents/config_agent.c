/* agents/config_agent.c: Agent-2: arm statistics, exploitation by confidence bounds, DQN-guided
 * exploration, the guardrail, context restarts, and the decisions written into decision tables. */
#include "config_agent.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trigger.h"

#define TYPICAL_SIGMA 0.05 /* log-latency noise assumed before an arm has two samples */
#define MIN_SIGMA 0.01
#define EXPLOIT_MIN_SAMPLES 3
#define CONFIDENCE_Z 2.0 /* lower bounds at two standard errors: many arms are compared at once */
#define GUARD_MIN_SAMPLES 8
#define GUARD_MAY_WAIT 0.1823215567939546 /* log 1.2: an exploited action proven this much faster than NCCL's choice */
#define WAITING_GUARD_SHARE 0.5 /* NCCL's choice keeps this share of the explorations while the guard lacks its readings */
#define RECENT_READINGS 16 /* an arm's recent reading: the mean of its first 16 readings, then an exponentially
                              weighted average of weight 1/16 */
#define Q_READY_STEPS 200   /* training steps before the DQN's predictions replace the priors */
#define Q_REFRESH_STEPS 100 /* training steps between refreshes of a cell's cached predictions */
#define NEIGHBOUR_BONUS 0.02 /* optimism (log latency) for untried neighbours of the incumbent, */
#define NEIGHBOUR_DOUBT 0.2231435513142098 /* unless predicted slower than this (log 1.25) */
#define AGE_PER_EPOCH 8 /* epsilon ages by at most this many samples per epoch between decisions (one mask bit's share) */
#define RACE_MAX_SAMPLES 160 /* a challenger is raced until proven either way or this many samples: two
                                 standard errors under 3% (the 0.97 target) at up to 19% spread a reading
                                 (the GPU test machine's calls: 14%); 48 left more near ties unproven on
                                 the GPU replays (docs/agents.md) */
#define RACE_EPSILON 0.25   /* exploration rate while a challenger is raced */
#define RACE_FLOOR_SAMPLES 2 /* a challenger holds epsilon at RACE_EPSILON from this many samples, */
#define RACE_MARGIN 0.01    /* and while it measures this much faster (log latency: 1%) than the exploited action */
#define GUARD_STALE_CALLS 2048 /* NCCL's choice is read again after this many of the cell's calls without (dccl_agent_decide) */
#define LOADED_CHECK_SAMPLES 8 /* recent readings of a loaded cell's exploited action and NCCL's choice that check it
                                  (at 4 a near-random draw where the gap moved by about the margin: docs/agents.md) */
#define LOADED_KEEP_SAMPLES 2.0f /* samples per arm a loaded cell keeps when this job contradicts it */
#define LOADED_CONGESTED 2 /* a cell's `loaded` while its saved congested statistics are checked (dccl_agent_on_event) */
#define CHECK_EPSILON 0.25 /* exploration rate of a loaded cell until it is checked */
#define BEHIND_TRAIN_SHARE 4 /* while the learner is behind, one DQN training step in this many runs */
#define DRIFT_WEIGHT (1.0f / 64) /* the common drift follows the residuals of all cells' calls at this weight */
#define DRIFT_MIN_SAMPLES 8      /* from arms with this many samples, */
#define DRIFT_SIGMA 0.2          /* at DRIFT_SIGMA^2 / variance of it where an arm spreads wider (dccl_arm_drift_weight) */
#define RUN_LEVEL_PRIOR 2.0f /* a run's level: the residuals in it of arms read RUN_LEVEL_RATIO times as */
#define RUN_LEVEL_RATIO 2.0f /* often or more (and RUN_LEVEL_READINGS), over their count plus the prior */
#define RUN_LEVEL_READINGS 8 /* (run_corrected) */
#define RUN_LONGEST 32       /* a cell's run ends after this many readings */
#define LEVEL_READINGS 64 /* a loaded cell's level: from this job's first 64 readings of NCCL's choice (corrected_reading) */
#define LEVEL_PRIOR 4.0f  /* readings' worth of weight on a level of 0 (the saved statistics' own) */
#define LEVEL_MOST 0.1397619423751587f /* log 1.15: a level at most 15% either way */
_Static_assert(LEVEL_READINGS <= 255, "a cell counts its level's readings in 8 bits");
#define FEW_CHANNELS 4 /* an untried request for under a quarter of NCCL's channels waits for its pair */
#define BURST_MIN_SAMPLES 4 /* a reading is held as slow against an arm with this many samples (reads_slow), */
#define BURST_SLOWER 0.9162907318741551 /* at 2.5x its mean (log 2.5) or slower (book_or_hold); */
#define BURST_SHORTEST 3 /* this many slow readings in a row are a burst, left out */
#define BURSTS_OF_ONE_ARM 2 /* this many bursts in a row of one arm's readings alone: the arm is slow (book_or_hold) */
#define UNRESOLVED_MARGIN 0.0295588022415444 /* log 1.03: a candidate that may beat the exploited action by more
                                               than this keeps a cell unresolved (dccl_agent_decide) */
#define SLOW_RELATIVES 0.6931471805599453 /* log 2: relatives twice slower than the best measured beside them */
#define TAIL_MIN_SAMPLES 3 /* a reading is booked at most at its arm's mean plus TAIL_DEVIATIONS of the arm's */
#define TAIL_DEVIATIONS 2.5 /* standard deviations or TAIL_FLOOR, the more, once the arm has this many */
#define TAIL_FLOOR 0.26236426446749106 /* samples (log 1.3; booked_tail_limit) */

void dccl_agent_default_options(dccl_agent_options* o) {
  memset(o, 0, sizeof(*o));
  o->learning = 1;
  o->epsilon_start = 0.3;
  o->epsilon_restart = 0.15;
  o->epsilon_min = 0.01;
  o->epsilon_halflife = 48;
  o->epsilon_unresolved = 0.2;
  o->unresolved_halflife = 300;
  o->guard = 0.03;
  o->explore_budget = 0; /* no limit */
  o->prior_strength = 1.0;
  o->train_every = 4;
  dccl_q_default_options(&o->q);
  o->space.max_channels = 32;
  o->space.tune_chunk = 0;
  o->n_ranks = 2;
  o->n_nodes = 1;
  o->model_intensity = -1;
  o->seed = 1;
}

static int compare_actions(const void* a, const void* b) {
  dccl_action x = *(const dccl_action*)a, y = *(const dccl_action*)b;
  return x < y ? -1 : x > y;
}

int dccl_agent_init(dccl_config_agent* agent, const dccl_agent_options* options) {
  memset(agent, 0, sizeof(*agent));
  agent->options = *options;
  dccl_rng_seed(&agent->rng, options->seed ^ 0xA6E27ULL);
  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++) {
    int n = dccl_action_space_build(coll, options->n_ranks, options->n_nodes, &options->space, NULL, 0);
    agent->actions[coll] = malloc((size_t)(n > 0 ? n : 1) * sizeof(dccl_action));
    agent->action_features[coll] = malloc((size_t)(n > 0 ? n : 1) * DCCL_ACTION_FEATURES * sizeof(float));
    if (agent->actions[coll] == NULL || agent->action_features[coll] == NULL) {
      dccl_agent_free(agent);
      return -1;
    }
    dccl_action_space_build(coll, options->n_ranks, options->n_nodes, &options->space, agent->actions[coll], n);
    qsort(agent->actions[coll], (size_t)n, sizeof(dccl_action), compare_actions);
    for (int i = 0; i < n; i++)
      dccl_action_features(agent->action_features[coll] + (size_t)i * DCCL_ACTION_FEATURES, agent->actions[coll][i]);
    agent->n_actions[coll] = n;
    if (n > agent->max_actions) agent->max_actions = n;
  }
  size_t arms = (size_t)DCCL_AGENT_MAX_CELLS * DCCL_AGENT_CONTEXTS * agent->max_actions;
  agent->arm_pool = calloc(arms, sizeof(dccl_arm));
  agent->q_pool = calloc((size_t)DCCL_AGENT_MAX_CELLS * agent->max_actions, sizeof(float));
  agent->measured_capacity = arms;
  agent->measured = agent->max_actions < 32768 ? malloc(arms * sizeof(uint32_t)) : NULL;
  if (agent->measured == NULL || agent->arm_pool == NULL || agent->q_pool == NULL || dccl_q_init(&agent->q, &options->q, &agent->rng) != 0) {
    dccl_agent_free(agent);
    return -1;
  }
  for (int c = 0; c < DCCL_TABLE_CELLS; c++) agent->slot_of_cell[c] = -1;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) agent->cells[s].cell = -1;
  return 0;
}

void dccl_agent_free(dccl_config_agent* agent) {
  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++) {
    free(agent->actions[coll]);
    free(agent->action_features[coll]);
    agent->actions[coll] = NULL;
    agent->action_features[coll] = NULL;
  }
  free(agent->arm_pool);
  free(agent->q_pool);
  free(agent->measured);
  agent->measured = NULL;
  agent->arm_pool = NULL;
  agent->q_pool = NULL;
  dccl_q_free(&agent->q);
}

size_t dccl_agent_memory_bytes(const dccl_config_agent* agent) {
  size_t bytes = (size_t)DCCL_AGENT_MAX_CELLS * DCCL_AGENT_CONTEXTS * agent->max_actions * sizeof(dccl_arm);
  bytes += (size_t)DCCL_AGENT_MAX_CELLS * agent->max_actions * sizeof(float);
  bytes += agent->measured_capacity * sizeof(uint32_t);
  for (int c = 0; c < DCCL_NUM_COLLS; c++)
    bytes += (size_t)agent->n_actions[c] * (sizeof(dccl_action) + DCCL_ACTION_FEATURES * sizeof(float));
  return bytes + dccl_q_memory_bytes(&agent->q);
}

int dccl_agent_action_index(const dccl_config_agent* agent, int coll, dccl_action action) {
  const dccl_action* list = agent->actions[coll];
  int lo = 0, hi = agent->n_actions[coll] - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (list[mid] == action) return mid;
    if (list[mid] < action) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

dccl_agent_cell* dccl_agent_cell_slot(dccl_config_agent* agent, int cell, int create) {
  if (cell < 0 || cell >= DCCL_TABLE_CELLS) return NULL;
  int slot = agent->slot_of_cell[cell];
  if (slot >= 0) return &agent->cells[slot];
  if (!create) return NULL;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    dccl_agent_cell* c = &agent->cells[s];
    if (c->cell >= 0) continue;
    memset(c, 0, sizeof(*c));
    c->cell = cell;
    int pipe, reg, bin;
    dccl_cell_decode(cell, &c->info.coll, &bin, &pipe, &reg);
    c->info.pipe_bucket = pipe;
    c->info.reg_buff = reg;
    c->info.log2_bytes = bin;
    c->info.n_ranks = agent->options.n_ranks;
    c->info.n_nodes = agent->options.n_nodes;
    c->info.batch_size = agent->options.batch_size;
    c->arms = agent->arm_pool + (size_t)s * DCCL_AGENT_CONTEXTS * agent->max_actions;
    c->q = agent->q_pool + (size_t)s * agent->max_actions;
    memset(c->arms, 0, (size_t)DCCL_AGENT_CONTEXTS * agent->max_actions * sizeof(dccl_arm));
    c->exploit = DCCL_ACTION_NCCL;
    c->epsilon_peak = (float)agent->options.epsilon_start;
    agent->slot_of_cell[cell] = (int16_t)s;
    return c;
  }
  return NULL;
}


/* One reading of an arm, with the learner's charge for left work in it. The recent reading is compared
 * with other arms' (the guard, check_loaded), so it is kept on the newest charge: the learner's estimate
 * is 0 until the cell has a level to tell it from (agents/leftover.h), and then may be most of the cost
 * (tree's at AllReduce 64 KiB over sockets: 104 us of 171, after 15 readings of its 67-us span). */
static void arm_update(dccl_arm* a, float x, float charge_us) {
  a->count += 1.0f;
  float delta = x - a->mean;
  a->mean += delta / a->count;
  a->m2 += delta * (x - a->mean);
  if (a->recent_count > 0 && charge_us != a->recent_charge_us && !isnan(a->recent_charge_us)) {
    float moved_us = expf(a->recent) + charge_us - a->recent_charge_us;
    /* A reading holds its charge; one that would not (the drift level moved since the readings were
     * charged) starts the readings again. */
    if (moved_us > charge_us) a->recent = logf(moved_us);
    else a->recent_count = 0;
  }
  a->recent_charge_us = charge_us;
  if (a->recent_count < 65535) a->recent_count++;
  a->recent += (x - a->recent) / (float)(a->recent_count < RECENT_READINGS ? a->recent_count : RECENT_READINGS);
}

/* The arm of `exploit` in the cell's context: NCCL's own arm for NCCL's choice; NULL when the action is
 * not in the action space. */
static const dccl_arm* exploited_arm(dccl_config_agent* agent, dccl_agent_cell* c, dccl_action exploit) {
  if (dccl_action_is_nccl(exploit)) return &c->nccl[c->context];
  int index = dccl_agent_action_index(agent, c->info.coll, exploit);
  return index >= 0 ? dccl_agent_arm(agent, c, c->context, index) : NULL;
}

/* A log latency measured now in the cell on the scale its readings are booked on: without the machine's
 * common drift and the cell's level (corrected_reading). */
static float on_booked_scale(const dccl_config_agent* agent, const dccl_agent_cell* c, float log_latency) {
  return log_latency - agent->drift_level - c->level;
}

/* Books a call's latency in its cell, and what an explored call cost beyond the exploited action's mean
 * (negative when it ran faster), against the cell's exploration budget. */
static void charge_exploration(dccl_config_agent* agent, dccl_agent_cell* c, const dccl_agent_observation* o) {
  c->time_us += o->latency_us;
  if (o->decided == c->exploit) return;
  const dccl_arm* exploited = exploited_arm(agent, c, c->exploit);
  if (exploited != NULL && exploited->count > 0)
    c->explore_cost_us += o->latency_us - exp(exploited->mean - on_booked_scale(agent, c, 0)); /* as it runs now */
}

static void arm_decay(dccl_arm* a, float keep) {
  a->count *= keep;
  a->m2 *= keep;
  a->recent_count = 0;
}

/* Takes back one reading of weight 1 that arm_update booked since the arm last decayed (Welford in
 * reverse). Its recent reading keeps it: a context's recent readings end at its next restart. */
static void arm_remove(dccl_arm* a, float x) {
  float count = a->count - 1.0f;
  if (count < 1e-3f) {
    a->count = a->mean = a->m2 = 0;
    return;
  }
  float mean = (a->count * a->mean - x) / count;
  a->m2 -= (x - mean) * (x - a->mean);
  if (a->m2 < 0) a->m2 = 0;
  a->mean = mean;
  a->count = count;
}

double dccl_arm_variance(const dccl_arm* a) {
  double v = a->count >= 2 ? a->m2 / (a->count - 1) : TYPICAL_SIGMA * TYPICAL_SIGMA;
  return v > MIN_SIGMA * MIN_SIGMA ? v : MIN_SIGMA * MIN_SIGMA;
}

void dccl_agent_set_cost(dccl_config_agent* agent, int cell, const float* cost) {
  dccl_agent_cell* c = dccl_agent_cell_slot(agent, cell, 1);
  if (c == NULL) return;
  memcpy(c->info.cost, cost, sizeof(c->info.cost));
  c->info.cost_known = 1;
  int coll = c->info.coll;
  for (int i = 0; i < agent->n_actions[coll]; i++) {
    dccl_action a = agent->actions[coll][i];
    float x = cost[dccl_action_pair(a)];
    int invalid = !(x >= 0.0f) || !isfinite(x);
    for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) dccl_agent_arm(agent, c, k, i)->invalid = (uint8_t)invalid;
  }
  c->dirty = 1;
}

/* Records an arm's first sample in the list of measured arms. */
static void note_measured(dccl_config_agent* agent, const dccl_agent_cell* c, int context, int index) {
  if (agent->measured_count < agent->measured_capacity)
    agent->measured[agent->measured_count++] =
      (uint32_t)(c - agent->cells) << 16 | (uint32_t)context << 15 | (uint32_t)index;
}

void dccl_agent_index_measured(dccl_config_agent* agent) {
  agent->measured_count = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_agent_cell* c = &agent->cells[s];
    if (c->cell < 0) continue;
    for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++)
      for (int i = 0; i < agent->n_actions[c->info.coll]; i++)
        if (c->arms[(size_t)k * agent->max_actions + i].count > 0) note_measured(agent, c, k, i);
  }
}

/* Reward against NCCL's mean log latency, clipped to +-3 (a factor of 20) for the network. */
static float clipped_reward(double reference, double log_latency) {
  double r = reference - log_latency;
  return (float)(r > 3 ? 3 : r < -3 ? -3 : r);
}

static void copy_action_features(const dccl_config_agent* agent, int coll, int index, float* out) {
  memcpy(out, agent->action_features[coll] + (size_t)index * DCCL_ACTION_FEATURES, DCCL_ACTION_FEATURES * sizeof(float));
}

/* A measured arm drawn uniformly, with its mean reward as the target (gamma = 0: no next state). */
static int build_summary_sample(dccl_config_agent* agent, float* state, float* action, float* reward, int* next_count) {
  if (agent->measured_count == 0) return 0;
  uint32_t packed = agent->measured[dccl_rng_below(&agent->rng, agent->measured_count)];
  int slot = (int)(packed >> 16), context = (int)(packed >> 15) & 1, index = (int)(packed & 0x7FFF);
  dccl_agent_cell* c = &agent->cells[slot];
  if (c->cell < 0 || c->nccl[context].count < 1) return 0;
  const dccl_arm* a = &c->arms[(size_t)context * agent->max_actions + index];
  if (a->count < 0.5f || a->invalid) return 0;
  dccl_dynamic_state d = c->dynamic;
  d.trigger_state = context ? DCCL_TRIGGER_CONGESTED : DCCL_TRIGGER_NONE;
  d.latency_ratio = 0;
  dccl_state_features(state, &c->info, &d);
  copy_action_features(agent, c->info.coll, index, action);
  *reward = clipped_reward(c->nccl[context].mean, a->mean);
  *next_count = 0;
  return 1;
}

/* Builds one training sample from a replay entry (see dccl_q_sample_builder). */
static int build_sample(void* argument, const dccl_replay_entry* e, float* state, float* action, float* reward,
                        float* next_state, float* next_actions, int* next_count) {
  dccl_config_agent* agent = argument;
  if (e == NULL) return build_summary_sample(agent, state, action, reward, next_count);
  dccl_agent_cell* c = &agent->cells[e->cell_slot];
  if (c->cell != e->cell || c->nccl[e->context].count < 1) return 0;
  dccl_dynamic_state d = {e->trigger_state, e->cusum_up, e->cusum_down, e->congested_fraction, e->latency_ratio,
                          e->intensity};
  dccl_state_features(state, &c->info, &d);
  if (e->action == DCCL_REPLAY_NCCL) dccl_action_features(action, DCCL_ACTION_NCCL);
  else copy_action_features(agent, c->info.coll, e->action, action);
  *reward = clipped_reward(c->nccl[e->context].mean, e->log_latency);
  *next_count = 0;
  if (agent->options.q.gamma > 0) {
    /* Next state: the cell now; candidates: NCCL's choice and the best-measured arms. */
    dccl_state_features(next_state, &c->info, &c->dynamic);
    dccl_action_features(next_actions, DCCL_ACTION_NCCL);
    int n = 1, coll = c->info.coll;
    for (int i = 0; i < agent->n_actions[coll] && n < DCCL_Q_NEXT_CANDIDATES; i++) {
      const dccl_arm* a = dccl_agent_arm(agent, c, c->context, i);
      if (a->count >= EXPLOIT_MIN_SAMPLES && !a->invalid)
        copy_action_features(agent, coll, i, next_actions + (size_t)n++ * DCCL_ACTION_FEATURES);
    }
    *next_count = n;
  }
  return 1;
}

/* Whether a reading `residual` above its arm's mean is slow: part of a burst of slow calls or a spike
 * (book_or_hold), at BURST_SLOWER or three of the arm's standard deviations, the more, once the arm has
 * BURST_MIN_SAMPLES. From 8 a burst among an arm's first readings was booked: on the pairs replay seed 177
 * had one (4-5x, 7 calls) among NCCL's choice's first 13 readings at ReduceScatter 16 MiB, which left the arm
 * at a spread of 46% over 64 readings, the guard's margin too wide to trip, and the size frozen on an action
 * 4% slower than NCCL's choice (docs/agents.md, "A burst among an arm's first readings"). */
static int reads_slow(const dccl_arm* ran, double residual) {
  return ran->count >= BURST_MIN_SAMPLES && residual >= fmax(BURST_SLOWER, 3.0 * sqrt(dccl_arm_variance(ran)));
}

/* How far above its arm's mean a reading is booked at most (log latency). The GPU test machine's calls have
 * a slow tail that their core spread does not explain (ReduceScatter 1 MiB on the H200, run 20: 4.3% of
 * calls over 1.4x their neighbours' median, 1.2% over 2x, at a core spread of 0.10 a call; bench/gpu/
 * summarize.py, "The slow tail of the learning run's calls"), which moves a mean of a few readings by a
 * call's whole excess: a near tie is then left on one slow call (ring/Simple on 1 channel there, 1.07-1.10x
 * NCCL's choice in the pairs, left at 0.925x after 8.5 readings, three of them 1.4-1.6x), while the pairs
 * that judge compare median calls. Clipped, the gaps between arms' means come nearer those between their
 * median calls (all 7 traced GPU runs). Not below TAIL_FLOOR, so that the core spread of a skewed arm (the
 * charge for left work) is booked as it comes; an arm's first TAIL_MIN_SAMPLES readings as they come, so
 * that a young arm is not held at its first readings. Longer runs of slow readings are a change
 * (book_or_hold), booked as they come; so are the readings of a cell loaded from a policy saved before the
 * clip (its means hold the tail; mixed with clipped readings, the pairs replay warm-started from GPU run
 * 19's policy ended 16 sizes below NCCL over two seeds instead of 7). Measured in docs/agents.md (On real
 * hardware, the 53rd stop). */
static double booked_tail_limit(const dccl_agent_cell* c, const dccl_arm* ran) {
  if (ran->count < TAIL_MIN_SAMPLES || c->tail_as_it_came) return INFINITY;
  return fmax(TAIL_FLOOR, TAIL_DEVIATIONS * sqrt(dccl_arm_variance(ran)));
}

/* How far the common drift follows a reading of `arm`: DRIFT_WEIGHT, shrunk by DRIFT_SIGMA^2 over the arm's
 * variance where its spread is wider than DRIFT_SIGMA (the least-variance mix of the cells' residuals, on the
 * time scale of the steady ones). The drift is one level for every cell, and at equal weights the noisiest
 * cells moved it most: the GPU test machine's AllGather and ReduceScatter at 1-4 KiB spread 0.65-0.84 a
 * call, against 0.04-0.14 from 64 KiB up, and on its pairs replay the level wandered by 0.1-0.15 (log)
 * within 2,000 readings, on a machine whose own drift is 0.06. A reading is booked on the level of its
 * moment, so an arm read in a few calls kept that moment's error: against its cell's most read arm, an arm
 * of 1-2 readings read 7.5% slower than measured and one of 50 or more 3.4% (medians; weighted, 5.6% and
 * 2.0%: tools/replay_misses.py --bias), and 13 sizes of 600 froze below NCCL (2 weighted; docs/agents.md,
 * "The common drift weighs its readings"). */
double dccl_arm_drift_weight(const dccl_arm* arm) {
  double variance = dccl_arm_variance(arm);
  return variance > DRIFT_SIGMA * DRIFT_SIGMA ? DRIFT_WEIGHT * DRIFT_SIGMA * DRIFT_SIGMA / variance : DRIFT_WEIGHT;
}

/* A sample's log latency without the machine's slow common drift, which follows the residuals of every
 * cell's calls against the mean of the arm that ran (arms with DRIFT_MIN_SAMPLES or more), nor the cell's
 * level.
 *
 * A cell loaded from a saved policy holds another job's statistics, on that job's scale: NCCL's choice may
 * run a few percent faster or slower in this one, cell by cell, which the common drift (one level for all
 * cells) does not follow. The gaps between actions carry over between jobs; the level does not. A loaded
 * cell's level is the mean residual of this job's first LEVEL_READINGS readings of NCCL's choice against
 * its saved mean as loaded (level_reference; slow readings left out, as reads_slow tells them against the
 * arm's mean; shrunk towards 0 by LEVEL_PRIOR readings), at most LEVEL_MOST either way (further off is
 * another machine, whose gaps check_loaded and the guard judge), and is taken off every reading of the
 * cell. A cell saved with fewer readings of NCCL's choice than that takes none: its saved mean is no
 * firmer a reference than this job's readings. The readings that set the level do not move the common
 * drift. The level stands once set, or from check_loaded's restart (this job contradicted the saved gaps);
 * a congestion onset's and recovery's restarts do not end it (they do not move the saved mean), and a cell
 * congested for good keeps the level it had (the congested context's arm does not level). Measured, and
 * the forms not kept, in docs/agents.md (Persistence; On real hardware, the 51st and 52nd stops). */
static float corrected_reading(dccl_config_agent* agent, dccl_agent_cell* c, const dccl_arm* ran, float log_latency,
                               float* drift_owed) {
  float corrected = on_booked_scale(agent, c, log_latency);
  *drift_owed = 0;
  if (ran == NULL || ran->count < DRIFT_MIN_SAMPLES) return corrected;
  /* The level and the drift follow the reading as it will be booked, its tail clipped against the arm as it
   * is now (spikes held before it may be booked first, which moves the limit a little): the arms' means are
   * of such readings, and a drift that followed the tail would move every reading by it, which the busiest
   * arms' means would then follow down, away from the rarely read ones (7% apart within a 40,000-call
   * replay). What the drift does not take is owed, and taken where the reading is not booked clipped
   * (book_or_hold): a slowdown held as bursts reaches the arms through the drift. */
  double residual = corrected - ran->mean, booked = fmin(residual, booked_tail_limit(c, ran));
  if (c->leveling && ran == &c->nccl[0]) {
    if (reads_slow(ran, residual)) return corrected; /* a burst's or a spike's: no level */
    c->level_readings++;
    c->level += (ran->mean + booked - c->level_reference) / (c->level_readings + LEVEL_PRIOR);
    c->level = fmaxf(-LEVEL_MOST, fminf(LEVEL_MOST, c->level));
    if (c->level_readings >= LEVEL_READINGS) c->leveling = 0;
  } else {
    double weight = dccl_arm_drift_weight(ran);
    agent->drift_level += weight * booked;
    *drift_owed = (float)(weight * (residual - booked));
  }
  return corrected;
}

void dccl_agent_levels(const dccl_config_agent* agent, int* cells, double* largest) {
  *cells = 0;
  *largest = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_agent_cell* c = &agent->cells[s];
    if (c->cell < 0 || c->level_readings == 0) continue;
    (*cells)++;
    if (fabs(c->level) > fabs(*largest)) *largest = c->level;
  }
}

static uint32_t* stream_calls_of(dccl_config_agent* agent, int cell) {
  int coll, bin, pipe, reg;
  dccl_cell_decode(cell, &coll, &bin, &pipe, &reg);
  return &agent->stream_calls[coll * DCCL_SIZE_BINS + bin];
}

/* The ring holds readings of weight 1 only: any decay of the cell's arms empties it. */
static void forget_readings(dccl_agent_cell* c) { c->readings_count = 0; }

/* Keeps a booked reading in the cell's ring for an Agent-1 event that dates its change before it. */
static void keep_reading(dccl_agent_cell* c, const dccl_agent_reading* r) {
  c->readings[c->readings_head] = *r;
  c->readings_head = (uint8_t)((c->readings_head + 1) % DCCL_AGENT_READINGS);
  if (c->readings_count < DCCL_AGENT_READINGS) c->readings_count++;
}

/* Books a reading into its arms (NCCL's own and the action's; an arm's first reading also lists it for
 * balanced DQN training, and the channels NCCL ran it on hold in every context) and into the cell's ring
 * of readings. */
static void book_reading(dccl_config_agent* agent, dccl_agent_cell* c, const dccl_agent_held* held, int clip_tail) {
  dccl_agent_held booked = *held;
  dccl_agent_reading* r = &booked.reading;
  if (clip_tail) {
    /* The tail clipped against the arm that ran (booked_tail_limit); the ring keeps the reading as booked,
     * for an onset to take back what was booked. */
    const dccl_arm* ran = r->nccl ? &c->nccl[r->context] : r->index >= 0 ? dccl_agent_arm(agent, c, r->context, r->index) : NULL;
    if (ran != NULL) r->log_latency = (float)fmin(r->log_latency, ran->mean + booked_tail_limit(c, ran));
  }
  if (r->nccl) arm_update(&c->nccl[r->context], r->log_latency, held->charge);
  if (r->index >= 0) {
    dccl_arm* a = dccl_agent_arm(agent, c, r->context, r->index);
    if (a->count == 0) note_measured(agent, c, r->context, r->index);
    arm_update(a, r->log_latency, held->charge);
    if (held->channels > 0)
      for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) dccl_agent_arm(agent, c, k, r->index)->channels_ran = held->channels;
  }
  keep_reading(c, r);
}

/* Leaves the cell's held readings out of its arms; the drift takes what it did not of their tail, as it
 * would have taken them whole (corrected_reading). */
static void drop_held(dccl_config_agent* agent, dccl_agent_cell* c) {
  for (int k = 0; k < c->held_count; k++) agent->drift_level += c->held[k].drift_owed;
  c->held_count = 0;
}

/* The arm a held reading goes to, as a key: its action's index and context (NCCL's choice where its
 * algorithm and protocol are no action: -1 - context); never 0, the key of none. */
static int held_arm_key(const dccl_agent_reading* r) {
  return r->index >= 0 ? 1 + r->index * DCCL_AGENT_CONTEXTS + r->context : -1 - r->context;
}

/* Books a reading, or holds it while it may be part of a burst of slow calls. The GPU test machine has
 * bursts of 3 to 12 calls at 2.5 to 10x (every action alike, docs/simulator.md); booked, a burst's
 * readings stay in whichever arm ran them, and that arm reads slower than it is: NCCL's own choice
 * most often, whose mean then lets a slower action be exploited (AllReduce 4 MiB in the replay, 1.05x
 * NCCL's latency, docs/agents.md). A reading is slow at BURST_SLOWER above its arm's mean, or three of
 * the arm's standard deviations where that is more (a noisy size's own spread is not a burst); a run of
 * BURST_SHORTEST or more slow readings of the cell, ended by one that is not slow, is left out of every
 * arm; a shorter run (a spike) is booked, its tail clipped (booked_tail_limit); a run longer than any
 * burst is a change, booked as it came. A burst slows every action and passes: where BURSTS_OF_ONE_ARM
 * bursts in a row left one arm's readings alone out, with no reading of it that is not slow between them,
 * the arm itself is slow (a loaded arm far off this machine's, read between explorations of other actions,
 * which ended each of its runs before it was long enough to be a change: 477 calls at 3.9x NCCL's choice
 * unlearned, docs/agents.md, "An arm's slowness taken for bursts"): its readings are booked as they come, a
 * change. (After one such burst, two jobs contending on the replay booked slowdowns of NCCL's choice that
 * then passed.) */
static void book_or_hold(dccl_config_agent* agent, dccl_agent_cell* c, const dccl_agent_held* r, const dccl_arm* ran) {
  int slow = reads_slow(ran, r->reading.log_latency - ran->mean);
  int key = held_arm_key(&r->reading);
  if (slow && key == c->burst_arm && c->burst_repeats >= BURSTS_OF_ONE_ARM && c->held_count == 0) {
    agent->drift_level += r->drift_owed;
    book_reading(agent, c, r, 0); /* the arm's own slowness, as it came */
    return;
  }
  if (!slow && key == c->burst_arm) c->burst_arm = 0;
  if (slow) {
    c->held[c->held_count++] = *r;
    if (c->held_count <= DCCL_AGENT_BURST_LONGEST) return; /* may still be a burst */
  } else if (c->held_count >= BURST_SHORTEST) {
    agent->stats.burst_readings += c->held_count; /* a burst, ended: left out, but for the drift */
    int one_arm = held_arm_key(&c->held[0].reading);
    for (int k = 1; k < c->held_count; k++)
      if (held_arm_key(&c->held[k].reading) != one_arm) one_arm = 0;
    one_arm = one_arm != key ? one_arm : 0;
    c->burst_repeats = one_arm != 0 && one_arm == c->burst_arm && c->burst_repeats < UINT8_MAX ? c->burst_repeats + 1 : 1;
    c->burst_arm = (int16_t)one_arm;
    drop_held(agent, c);
  }
  /* Spikes before a reading that is not slow (their tail clipped, as the drift took them), or a change
   * (slow beyond any burst: booked as it came, and the drift takes it whole). */
  for (int k = 0; k < c->held_count; k++) {
    if (slow) agent->drift_level += c->held[k].drift_owed;
    book_reading(agent, c, &c->held[k], !slow);
  }
  c->held_count = 0;
  if (!slow) book_reading(agent, c, r, 1);
}

/* The run's level as a reading of arm `ran` sees it: the residuals in the cell's run of the arms read
 * RUN_LEVEL_RATIO times as often or more (RUN_LEVEL_READINGS at least), summed, over their count plus
 * RUN_LEVEL_PRIOR (shrunk towards 0: a level told by one reading is mostly that reading's own noise); 0
 * where no such arm has read in the run. */
static float run_level(const dccl_agent_cell* c, const dccl_arm* ran) {
  float sum = 0, least = fmaxf(RUN_LEVEL_READINGS, RUN_LEVEL_RATIO * ran->count);
  int readings = 0;
  for (int k = 0; k < c->run_arms; k++)
    if (c->run_counts[k] >= least) sum += c->run_residuals[k], readings += c->run_readings[k];
  return readings > 0 ? sum / (readings + RUN_LEVEL_PRIOR) : 0.0f;
}

/* The entry of arm `key` (held_arm_key's) in the cell's run, added where it has none; -1 where the run holds
 * DCCL_AGENT_RUN_ARMS arms already. */
static int run_entry(dccl_agent_cell* c, int key) {
  for (int k = 0; k < c->run_arms; k++)
    if (c->run_arm[k] == key) return k;
  if (c->run_arms == DCCL_AGENT_RUN_ARMS) return -1;
  int k = c->run_arms++;
  c->run_arm[k] = (int16_t)key, c->run_residuals[k] = 0, c->run_readings[k] = 0;
  return k;
}

/* A reading `x` of arm `ran` (`key`: held_arm_key's), already corrected for the common drift and the cell's
 * level, less the level of the cell's run (run_level); its residual against its arm's mean is added to the
 * run (once the arm has BURST_MIN_SAMPLES; its tail clipped as it will be booked; a slow reading, a burst's
 * or a spike's, tells none). On the GPU test machine a round of a size's calls shares a level, drawn afresh
 * for the next round, whatever action each call runs (0.08-0.12 in log terms from 256 KiB up, 0.41 at
 * AllReduce 64 KiB; docs/simulator.md, "The noise of runs"): an explored action read for a call or two in
 * one round booked that round's level against arms read over hundreds, and near ties were written off
 * (AllGather and ReduceScatter 64 KiB, AllReduce 16 KiB on the pairs replay). An arm's reading is corrected
 * by the arms read at least twice as often: NCCL's choice, read by the guard a call or two at a time, by
 * the exploited action, an explored one by both, and the cell's most read arm by none. That order is what
 * keeps the means on the latency's scale: corrected by each other, two arms' means drift together, each
 * reading the other's error as a level (an arm's first reading at 50x left the other's mean 41% high in 60
 * calls, tests/test_learner.c), and one arm's change (its charge for left work beginning) moves the other
 * (10%). A run is the cell's readings since another cell's came between, and ends after RUN_LONGEST: in a
 * job of one busy cell it would otherwise hold the whole job, and a residual of long ago move every later
 * reading. Measured in docs/agents.md, "A round's level taken off". */
static float run_corrected(dccl_agent_cell* c, const dccl_arm* ran, int key, float x) {
  if (c->run_length == 0 || c->run_length >= RUN_LONGEST) c->run_arms = 0, c->run_length = 0; /* a new run */
  c->run_length++;
  float level = run_level(c, ran);
  int k = ran->count >= BURST_MIN_SAMPLES && !reads_slow(ran, x - ran->mean) ? run_entry(c, key) : -1;
  if (k >= 0) {
    /* Against the arm's recent reading where its mean holds readings from before those (a loaded arm's,
     * another job's; a restarted arm's) and it has RUN_LEVEL_READINGS of them: against such a mean, a stale
     * one, the residuals told its error as every run's level (the disagreeing warm start, bench/
     * bench_disagreeing_warm_start.sh: seeds with a stream 10% slower than NCCL's choice 56 -> 72; 53 so).
     * Elsewhere against the mean: a recent reading, 1/31 of each, takes up a share of the run's own level. */
    int stale = ran->count > ran->recent_count + 0.5f && ran->recent_count >= RUN_LEVEL_READINGS;
    double residual = x - (stale ? ran->recent : ran->mean);
    c->run_residuals[k] += (float)fmin(residual, booked_tail_limit(c, ran));
    c->run_readings[k]++;
    c->run_counts[k] = ran->count;
  }
  return x - level;
}

void dccl_agent_observe(dccl_config_agent* agent, const dccl_agent_observation* o) {
  uint32_t stream_call = o->cell >= 0 && o->cell < DCCL_TABLE_CELLS ? ++*stream_calls_of(agent, o->cell) : 0;
  dccl_agent_cell* c = dccl_agent_cell_slot(agent, o->cell, 1);
  if (c == NULL) {
    agent->stats.stale_samples++;
    return;
  }
  if (c->observations == 0 && o->bytes > 0) c->info.log2_bytes = log2((double)o->bytes);
  if (agent->last_cell != o->cell + 1) c->run_length = 0; /* another cell's came between: a new run */
  agent->last_cell = o->cell + 1;
  if (dccl_algo_takes_channels(o->executed_algo) && o->executed_channels > agent->nccl_channels_seen &&
      o->executed_channels <= DCCL_MAX_CHANNELS)
    agent->nccl_channels_seen = o->executed_channels;
  int context = c->context, coll = c->info.coll;
  float x = (float)log(o->latency_us > 1e-3 ? o->latency_us : 1e-3);
  /* The charge in the units of the drift-corrected readings. */
  float charge = (float)(o->charge_us * exp(on_booked_scale(agent, c, 0)));
  uint16_t replay_action = DCCL_REPLAY_NCCL;
  int channels = o->executed_channels > 0 && o->executed_channels <= DCCL_MAX_CHANNELS ? o->executed_channels : 0;
  charge_exploration(agent, c, o);
  /* A cap that NCCL does not keep here (a saved policy's, from a machine whose NCCL ran fewer channels):
   * not known again until a request runs on fewer channels than it asked for. */
  if (c->channel_cap > 0 && channels > c->channel_cap && dccl_algo_takes_channels(o->executed_algo)) c->channel_cap = 0;
  if (dccl_action_is_nccl(o->decided)) {
    c->nccl_read_at = c->observations;
    float drift_owed;
    x = corrected_reading(agent, c, &c->nccl[context], x, &drift_owed);
    /* NCCL's own choice is also the action (its algorithm, its protocol, NCCL's channels and chunk). */
    int i = dccl_agent_action_index(agent, coll, dccl_action_make(o->executed_algo, o->executed_proto, 0, 0));
    if (i >= 0 && dccl_agent_arm(agent, c, context, i)->invalid) i = -1;
    dccl_agent_held r = {{stream_call, (int16_t)i, (uint8_t)context, 1, x}, charge, drift_owed, (uint8_t)channels};
    r.reading.log_latency = x = run_corrected(c, &c->nccl[context], held_arm_key(&r.reading), x);
    book_or_hold(agent, c, &r, &c->nccl[context]);
  } else {
    int i = dccl_agent_action_index(agent, coll, o->decided);
    if (i < 0) {
      agent->stats.stale_samples++;
      return;
    }
    if (o->executed_algo != dccl_action_algo(o->decided) || o->executed_proto != dccl_action_proto(o->decided)) {
      /* NCCL did not run it (an entry it ignores here): never choose it again in this cell. */
      for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) dccl_agent_arm(agent, c, k, i)->invalid = 1;
      agent->stats.invalid_actions++;
      c->dirty = 1;
      return;
    }
    dccl_arm* ran = dccl_agent_arm(agent, c, context, i);
    float drift_owed;
    x = corrected_reading(agent, c, ran, x, &drift_owed);
    dccl_agent_held r = {{stream_call, (int16_t)i, (uint8_t)context, 0, x}, charge, drift_owed, (uint8_t)channels};
    r.reading.log_latency = x = run_corrected(c, ran, held_arm_key(&r.reading), x);
    book_or_hold(agent, c, &r, ran);
    if (o->executed_channels > 0 && o->executed_channels < dccl_action_channels(o->decided))
      c->channel_cap = (uint8_t)o->executed_channels;
    replay_action = (uint16_t)i;
  }
  c->nccl_read_last = dccl_action_is_nccl(o->decided);
  c->dynamic = o->dynamic;
  if (c->nccl[context].count >= 1) c->dynamic.latency_ratio = x - c->nccl[context].mean;
  c->samples[context]++;
  c->undecided++;
  if (o->epoch > agent->newest_epoch) agent->newest_epoch = o->epoch;
  c->observations++;
  c->dirty = 1;
  agent->stats.observations++;
  if (agent->options.learning && !agent->holding && agent->options.strategy == DCCL_STRATEGY_DQN) {
    dccl_replay_entry e = {(uint16_t)(c - agent->cells), (uint16_t)c->cell, replay_action, (uint8_t)context,
                           (uint8_t)c->dynamic.trigger_state, x, c->dynamic.cusum_up, c->dynamic.cusum_down,
                           c->dynamic.congested_fraction, c->dynamic.latency_ratio, c->dynamic.intensity};
    dccl_q_remember(&agent->q, &e);
    if (agent->options.train_every > 0 && agent->stats.observations % (uint64_t)agent->options.train_every == 0) {
      /* While the learner is behind the job, one step in BEHIND_TRAIN_SHARE trains; the others are owed. */
      uint64_t due = agent->stats.observations / (uint64_t)agent->options.train_every;
      if (!agent->defer_training || due % BEHIND_TRAIN_SHARE == 0) {
        dccl_q_train(&agent->q, &agent->rng, build_sample, agent);
      } else if (agent->training_owed < DCCL_AGENT_MAX_OWED) {
        agent->training_owed++;
        agent->stats.training_deferred++;
      } else {
        agent->stats.training_dropped++;
      }
    }
  }
  if (agent->options.hold_after > 0 && agent->stats.observations >= agent->options.hold_after) agent->holding = 1;
}

int dccl_agent_train_owed(dccl_config_agent* agent, int max_steps) {
  /* An agent that no longer trains (frozen, holding, another strategy) just forgets what it owed. */
  int trains = agent->options.learning && !agent->holding && agent->options.strategy == DCCL_STRATEGY_DQN;
  int ran = 0;
  for (; ran < max_steps && agent->training_owed > 0; ran++, agent->training_owed--)
    if (trains) dccl_q_train(&agent->q, &agent->rng, build_sample, agent);
  return ran;
}

static void arm_decay_to(dccl_arm* a, float keep, float most) { arm_decay(a, a->count * keep > most ? most / a->count : keep); }

/* Every arm of a cell's context, NCCL's included, keeps `keep` of its weight, at most `most` samples, and
 * no recent reading (arm_decay). */
static void decay_context(dccl_config_agent* agent, dccl_agent_cell* c, int context, float keep, float most) {
  for (int i = 0; i < agent->n_actions[c->info.coll]; i++) arm_decay_to(dccl_agent_arm(agent, c, context, i), keep, most);
  arm_decay_to(&c->nccl[context], keep, most);
  forget_readings(c);
}

/* Restarts a cell's statistics in a context (decay_context), and epsilon from the restart value
 * (epsilon_restart). A loaded cell not yet checked stays to be checked (check_loaded), in the context it
 * is in then. */
static void restart_cell(dccl_config_agent* agent, dccl_agent_cell* c, int context, float keep, float most) {
  decay_context(agent, c, context, keep, most);
  drop_held(agent, c); /* slow readings of before, which the restarted arms would book whole */
  c->samples[context] = 0;
  c->undecided = c->age = 0;
  c->epsilon_peak = (float)agent->options.epsilon_restart;
  c->q_steps = 0;
  c->dirty = 1;
  agent->stats.restarts++;
}

/* Takes the cell's calm readings among its stream's last `back` calls (`calls` so far) back out of their
 * arms. An arm left without readings leaves the list of measured arms (its next first reading lists it
 * again). */
static void take_back_calm_readings(dccl_config_agent* agent, dccl_agent_cell* c, uint32_t calls, uint32_t back) {
  int emptied = 0;
  for (int k = 0; k < c->readings_count; k++) {
    const dccl_agent_reading* r =
      &c->readings[(c->readings_head + DCCL_AGENT_READINGS - c->readings_count + k) % DCCL_AGENT_READINGS];
    if (calls - r->stream_call >= back || r->context != 0) continue;
    if (r->nccl) arm_remove(&c->nccl[0], r->log_latency);
    if (r->index >= 0) {
      dccl_arm* a = dccl_agent_arm(agent, c, 0, r->index);
      arm_remove(a, r->log_latency);
      emptied |= a->count == 0;
    }
    if (c->samples[0] > 0) c->samples[0]--;
  }
  if (emptied) dccl_agent_index_measured(agent);
}

void dccl_agent_on_event(dccl_config_agent* agent, int coll, int size_bin, int event, int change_calls) {
  if (agent->holding || !agent->options.learning || agent->options.strategy == DCCL_STRATEGY_AUTOCCL) return;
  uint32_t calls = *stream_calls_of(agent, dccl_cell_index(coll, size_bin, 0, 0));
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    dccl_agent_cell* c = &agent->cells[s];
    if (c->cell < 0) continue;
    int cc, bin, pipe, reg;
    dccl_cell_decode(c->cell, &cc, &bin, &pipe, &reg);
    if (cc != coll || bin != size_bin) continue;
    int onset = event == DCCL_TRIGGER_EVENT_ONSET, context = onset ? 1 : 0;
    /* The readings since the change Agent-1 dates are no calm readings: left in, a burst of slow calls
     * that an onset comes a few calls into stays in the calm statistics (run 15 on the GPU: PAT/Simple,
     * the best action at ReduceScatter 64 KiB, read 306 us in one against its usual 40, and was written
     * off). Nor are they booked as congested: a burst is over by its onset. Measured in docs/agents.md. */
    if (onset && c->context == 0) {
      if (change_calls > 0) take_back_calm_readings(agent, c, calls, (uint32_t)change_calls);
      c->calm_exploit = c->exploit;
    }
    /* Readings held as a possible burst came after the change too (a burst that an onset comes a few
     * calls into): dropped with the context they were read in (restart_cell). */
    c->context = (uint8_t)context;
    restart_cell(agent, c, context, onset ? 0.25f : 0.5f, INFINITY);
    /* A loaded cell's first onset meets the saving job's congested statistics: another congestion (another
     * load on the network, or another machine), which the calm check did not cover, and a quarter of them
     * outweighs this job's first readings (tests/test_config_agent.c: an action saved fastest under
     * congestion, 1.3x NCCL's choice in this job's, ran 192 of the next 640 calls). They are checked as the
     * calm ones were (check_loaded, in the congested context: 64 calls). A recovery before that check ends
     * it (the calm statistics were checked); a calm check still pending at the onset is made in the
     * congested context, and goes on after a recovery. Measured in docs/agents.md (Persistence). */
    if (onset && c->congested_from_policy) {
      c->congested_from_policy = 0;
      if (!c->loaded) c->loaded = LOADED_CONGESTED, c->loaded_exploit = DCCL_ACTION_NCCL;
    } else if (!onset && c->loaded == LOADED_CONGESTED) {
      c->loaded = 0;
    }
  }
}

#define DCCL_RUN_GROUPS (DCCL_COST_ENTRIES * (DCCL_CHUNK_LOG2_MAX + 1))
/* Requests NCCL runs alike but for the channel count: the same algorithm, protocol and chunk size. */
static int run_group(dccl_action action) { return dccl_action_pair(action) * (DCCL_CHUNK_LOG2_MAX + 1) + dccl_action_chunk_log2(action); }

/* Whether arm `index` measures what a busier arm of the cell's context measures: the same algorithm,
 * protocol and chunk size, run by NCCL on the same channels (a request above the cell's channel cap, or
 * NCCL's own channel count). Its samples would only repeat that arm's, so it is neither exploited, raced
 * nor explored: on the GPU test machine ring/Simple with 24 channels runs as NCCL's ring/Simple on 2, and
 * its noisy mean kept drawing the exploration that a real alternative (1 channel, 6% faster) needed. */
static int duplicate_arm(const dccl_config_agent* agent, dccl_agent_cell* c, int context, int index) {
  int coll = c->info.coll;
  const dccl_arm* a = dccl_agent_arm(agent, c, context, index);
  if (a->count <= 0 || a->channels_ran == 0) return 0;
  int group = run_group(agent->actions[coll][index]);
  for (int j = 0; j < agent->n_actions[coll]; j++) {
    const dccl_arm* other = dccl_agent_arm(agent, c, context, j);
    if (j == index || other->channels_ran != a->channels_ran || run_group(agent->actions[coll][j]) != group ||
        !dccl_agent_arm_runnable(agent, other, coll, j))
      continue;
    if (other->count > a->count || (other->count == a->count && j < index)) return 1;
  }
  return 0;
}

/* The variance of an arm's recent reading per unit sample variance: that of a mean of its readings up to
 * RECENT_READINGS, then decaying towards that of the exponentially weighted average (w / (2 - w), 1/31). */
static double recent_variance(const dccl_arm* a) {
  double n = a->recent_count > 0 ? a->recent_count : 1, w = 1.0 / RECENT_READINGS;
  if (n <= RECENT_READINGS) return 1.0 / n;
  double kept = pow(1 - w, 2 * (n - RECENT_READINGS)), settled = w / (2 - w);
  return kept * w + (1 - kept) * settled;
}

/* How far an arm's recent reading may run slower than NCCL's (log latency) before it says the arm is
 * slower: the guard's percentage and two standard errors of the two recent readings. */
static double recent_margin(const dccl_config_agent* agent, const dccl_arm* a, const dccl_arm* nccl) {
  return log1p(agent->options.guard) +
         CONFIDENCE_Z * sqrt(dccl_arm_variance(a) * recent_variance(a) + dccl_arm_variance(nccl) * recent_variance(nccl));
}

/* A loaded cell that this job contradicted (check_loaded, or the guard before it) learns again from
 * LOADED_KEEP_SAMPLES of each arm's saved samples; the cell's level stands (corrected_reading). */
static void restart_contradicted(dccl_config_agent* agent, dccl_agent_cell* c) {
  c->loaded = 0;
  restart_cell(agent, c, c->context, 1.0f, LOADED_KEEP_SAMPLES);
  c->leveling = 0;
  agent->stats.loaded_restarts++;
}

/* A cell loaded from a saved policy, once this job has measured its exploited action and NCCL's choice
 * LOADED_CHECK_SAMPLES times each: where the exploited action now runs slower against NCCL's choice
 * than the loaded statistics say, beyond the guard's margin, they describe another machine or another
 * state of it (the policy was learned elsewhere, or the network changed between jobs), and the cell
 * learns again from LOADED_KEEP_SAMPLES of them. The comparison is of gaps between two actions measured
 * in the same stretch of calls, so a change common to all (the drift above) does not count. The guard
 * alone would not do: it compares recent readings with a margin set by the arms' whole variance, which
 * the mix of saved and new samples inflates, and the exploited action's lower bound stands on the saved
 * means (the GPU replay's policy on the calibrated model of the same testbed kept PAT on 1 channel at
 * AllGather 128 KiB, 8% slower than NCCL's ring: 2.5% slower by the learner's drift-corrected recent
 * readings, within the guard's 13% margin, against 37% faster saved). */
static int check_loaded(dccl_config_agent* agent, dccl_agent_cell* c) {
  int context = c->context;
  const dccl_arm* nccl = &c->nccl[context];
  /* A cell that left the loaded decision for NCCL's choice before its check is checked on that decision:
   * NCCL's first readings here, less the run's level that the loaded action's readings tell (run_corrected),
   * can show NCCL's choice faster at once, and unchecked the loaded action's saved mean, thousands of
   * readings, took the cell back to it a little later, 2.5% slower than NCCL's choice and within the guard's
   * margin (tests/test_config_agent.c, the loaded-policy check). */
  dccl_action checked = dccl_action_is_nccl(c->exploit) ? c->loaded_exploit : c->exploit;
  const dccl_arm* a = dccl_action_is_nccl(checked) ? NULL : exploited_arm(agent, c, checked);
  if (a == NULL) {
    c->loaded = 0;
    return 0;
  }
  /* After a reading of NCCL's choice, the exploited arm may not carry the charge for left work that the
   * reading let the learner tell yet (agents/leftover.h: NCCL's choice often sets the cell's level). */
  if (a->recent_count < LOADED_CHECK_SAMPLES || nccl->recent_count < LOADED_CHECK_SAMPLES || c->nccl_read_last) return 0;
  c->loaded = 0;
  double now = a->recent - nccl->recent, saved = a->mean - nccl->mean;
  if (now - saved <= recent_margin(agent, a, nccl)) return 0;
  restart_contradicted(agent, c);
  return 1;
}

/* The action with the best lower confidence bound on the reward in the cell's context, NCCL's choice
 * (0) by default; *best_index its arm (-1: NCCL's choice). */
static dccl_action best_bounded(dccl_config_agent* agent, dccl_agent_cell* c, double* best_bound, int* best_index) {
  int context = c->context, coll = c->info.coll;
  const dccl_arm* nccl = &c->nccl[context];
  double reference = nccl->mean;
  double nccl_se2 = dccl_arm_variance(nccl) / (nccl->count > 1 ? nccl->count : 1);
  dccl_action best = DCCL_ACTION_NCCL;
  double best_lcb = 0.0;
  *best_index = -1;
  /* Under congestion, the calm decision stands until the congested evidence says otherwise: a
   * restart must not throw away what still holds (the guard, choose_exploit, still returns to NCCL's
   * choice when the calm decision turns out slower than NCCL's under congestion). */
  if (context == 1 && !dccl_action_is_nccl(c->calm_exploit)) {
    int i = dccl_agent_action_index(agent, coll, c->calm_exploit);
    const dccl_arm* a = i >= 0 ? dccl_agent_arm(agent, c, context, i) : NULL;
    if (a != NULL && dccl_agent_arm_runnable(agent, a, coll, i)) {
      best = c->calm_exploit;
      *best_index = i;
      if (a->count >= EXPLOIT_MIN_SAMPLES) {
        double lcb = reference - a->mean - CONFIDENCE_Z * sqrt(dccl_arm_variance(a) / a->count + nccl_se2);
        if (lcb > 0) best_lcb = lcb;
      }
    }
  }
  /* A frozen policy gets no feedback to correct a lucky streak: there an arm needs as many samples as
   * the guard (the GPU replay's ReduceScatter 32 MiB froze PAT on 3 samples 26% fast, truly 3% slow). */
  float min_samples = agent->options.learning ? EXPLOIT_MIN_SAMPLES : GUARD_MIN_SAMPLES;
  for (int i = 0; i < agent->n_actions[coll]; i++) {
    const dccl_arm* a = dccl_agent_arm(agent, c, context, i);
    if (a->count < min_samples || !dccl_agent_arm_runnable(agent, a, coll, i)) continue;
    double reward = reference - a->mean;
    double lcb = reward - CONFIDENCE_Z * sqrt(dccl_arm_variance(a) / a->count + nccl_se2);
    if (lcb > best_lcb && !duplicate_arm(agent, c, context, i)) {
      best_lcb = lcb;
      best = agent->actions[coll][i];
      *best_index = i;
    }
  }
  *best_bound = best_lcb;
  return best;
}

/* The exploited action: the best lower confidence bound on the reward, NCCL's choice (0) by default,
 * unless the guard finds it running slower than NCCL's choice now. */
static dccl_action choose_exploit(dccl_config_agent* agent, dccl_agent_cell* c, double* best_bound) {
  int best_index;
  dccl_action best = best_bounded(agent, c, best_bound, &best_index);
  /* Guardrail: the exploited action's recent latency against NCCL's recent latency. */
  if (best_index >= 0) {
    const dccl_arm* nccl = &c->nccl[c->context];
    dccl_arm* a = dccl_agent_arm(agent, c, c->context, best_index);
    if (a->recent_count >= GUARD_MIN_SAMPLES && nccl->recent_count >= GUARD_MIN_SAMPLES &&
        a->recent - nccl->recent > recent_margin(agent, a, nccl)) {
      /* In a loaded cell not yet checked, the guard's finding is the check's: the loaded action ran slower
       * than NCCL's choice where its saved mean was faster (a bound above NCCL's). Decayed alone, the arm's
       * saved mean took the cell back to it until check_loaded had LOADED_CHECK_SAMPLES readings of it again. */
      if (c->loaded) restart_contradicted(agent, c);
      else arm_decay(a, 0.25f);
      forget_readings(c);
      c->guard_trips++;
      agent->stats.guard_trips++;
      best = DCCL_ACTION_NCCL;
      *best_bound = 0;
    }
  }
  return best;
}

/* A job starts calm: its Agent-1 has raised no alarm, and would never raise the recovery that returns a
 * cell saved in the congested context to its calm statistics, so such a cell ran the whole job on the
 * saving job's congested decision (a frozen one: for good). A cell saved congested starts calm, and
 * from the statistics of the context it measured more in since its last switch: most often a false
 * alarm that never recovered, which left the saving job's learning in the congested context (the GPU
 * replay's drift: docs/agents.md), or a congestion that outlasted the calm stretch before it; either
 * way the likelier state of the network as the next job starts. The congested statistics stay for
 * this job's onsets. Measured in docs/agents.md (Loading a policy saved under an alarm). */
void dccl_agent_cell_loaded(dccl_config_agent* agent, dccl_agent_cell* c, int tail_clipped) {
  c->tail_as_it_came = !tail_clipped;
  c->from_policy = 1;
  if (c->context != 0) {
    if (c->samples[1] > c->samples[0]) {
      c->nccl[0] = c->nccl[1];
      c->samples[0] = c->samples[1];
      memcpy(c->arms, c->arms + agent->max_actions, sizeof(dccl_arm) * (size_t)agent->max_actions);
    }
    double bound;
    int index;
    c->context = 0;
    c->calm_exploit = DCCL_ACTION_NCCL;
    c->exploit = best_bounded(agent, c, &bound, &index); /* by the calm statistics; the guard checks it next */
    c->age = c->samples[0];
  }
  if (!agent->options.learning || agent->options.strategy != DCCL_STRATEGY_DQN) return;
  for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) decay_context(agent, c, k, 1.0f, INFINITY); /* recent readings only */
  c->loaded = 1;
  c->loaded_exploit = c->exploit;
  /* Saved congested statistics, to check from this job's first onset (dccl_agent_on_event); none where the
   * saving job never measured the cell congested (there the calm decision stands at an onset, unchecked,
   * as in a cell learned in this job). */
  c->congested_from_policy = c->nccl[1].count > 0;
  for (int i = 0; i < agent->n_actions[c->info.coll] && !c->congested_from_policy; i++)
    c->congested_from_policy = dccl_agent_arm(agent, c, 1, i)->count > 0;
  c->leveling = c->nccl[0].count >= LEVEL_READINGS; /* a saved mean no firmer than the level's own readings: none */
  c->level = 0;
  c->level_readings = 0;
  c->level_reference = c->nccl[0].mean;
}

static void refresh_predictions(dccl_config_agent* agent, dccl_agent_cell* c) {
  if (agent->q.training_steps < Q_READY_STEPS) return;
  if (c->q_steps != 0 && agent->q.training_steps - c->q_steps < Q_REFRESH_STEPS) return;
  float state[DCCL_STATE_FEATURES];
  dccl_state_features(state, &c->info, &c->dynamic);
  dccl_q_evaluate(&agent->q, state, agent->action_features[c->info.coll], agent->n_actions[c->info.coll], c->q);
  c->q_steps = agent->q.training_steps;
}

/* The arm with the best mean reward among those with two samples or more in a cell's context (-1:
 * none), and that reward. */
static int best_measured_arm(const dccl_config_agent* agent, dccl_agent_cell* c, int context, double* reward) {
  int best = -1;
  for (int i = 0; i < agent->n_actions[c->info.coll]; i++) {
    const dccl_arm* a = dccl_agent_arm(agent, c, context, i);
    if (a->count < 2 || !dccl_agent_arm_runnable(agent, a, c->info.coll, i)) continue;
    if (best < 0 || c->nccl[context].mean - a->mean > *reward) {
      best = i;
      *reward = c->nccl[context].mean - a->mean;
    }
  }
  return best;
}

/* The best mean reward measured in a cell's context: NCCL's choice (0) or a better arm; NAN when NCCL's
 * choice was not measured there (no reference). */
static double best_measured_reward(const dccl_config_agent* agent, dccl_agent_cell* c, int context) {
  if (c == NULL || c->nccl[context].count <= 0) return NAN;
  double reward;
  return best_measured_arm(agent, c, context, &reward) >= 0 && reward > 0 ? reward : 0;
}

/* The reward the exploited action stands for: its measured mean, or its confidence bound when that is
 * higher (NCCL's choice: 0). */
static double exploited_reward(dccl_config_agent* agent, dccl_agent_cell* c, dccl_action exploit, double best_bound) {
  const dccl_arm* a = exploited_arm(agent, c, exploit);
  double reward = a != NULL && a->count > 0 ? c->nccl[c->context].mean - a->mean : 0;
  return reward > best_bound ? reward : best_bound;
}

/* Where an untried action's relatives were measured: its (algorithm, protocol) pair's channel and
 * chunk variants in this cell, and the same action in the neighbouring size bins, in either context.
 * For each place, how much slower (log latency) than the best action measured there. */
typedef struct relatives {
  dccl_agent_cell* next_door[2];
  dccl_agent_cell* siblings[DCCL_NUM_COLLS]; /* the other collectives' cells at this size (NULL: none) */
  double pair_gap[DCCL_AGENT_CONTEXTS][DCCL_COST_ENTRIES]; /* the cell's best mean reward minus the
                                                              pair's best variant's (NAN: none) */
  double next_door_best[2][DCCL_AGENT_CONTEXTS];
} relatives;

static void find_relatives(dccl_config_agent* agent, dccl_agent_cell* c, relatives* r) {
  int coll, bin, pipe, reg;
  dccl_cell_decode(c->cell, &coll, &bin, &pipe, &reg);
  for (int k = 0; k < 2; k++) {
    int other = bin + (k == 0 ? -1 : 1);
    r->next_door[k] = other < 0 || other >= DCCL_SIZE_BINS
                        ? NULL
                        : dccl_agent_cell_slot(agent, dccl_cell_index(coll, other, pipe, reg), 0);
    for (int context = 0; context < DCCL_AGENT_CONTEXTS; context++)
      r->next_door_best[k][context] = best_measured_reward(agent, r->next_door[k], context);
  }
  for (int other = 0; other < DCCL_NUM_COLLS; other++)
    r->siblings[other] = other == coll ? NULL : dccl_agent_cell_slot(agent, dccl_cell_index(other, bin, pipe, reg), 0);
  for (int context = 0; context < DCCL_AGENT_CONTEXTS; context++) {
    double best = best_measured_reward(agent, c, context);
    for (int p = 0; p < DCCL_COST_ENTRIES; p++) r->pair_gap[context][p] = NAN;
    if (isnan(best)) continue;
    for (int i = 0; i < agent->n_actions[coll]; i++) {
      const dccl_arm* a = dccl_agent_arm(agent, c, context, i);
      if (a->invalid || a->count <= 0) continue;
      double gap = best - (c->nccl[context].mean - a->mean);
      double* pair_gap = &r->pair_gap[context][dccl_action_pair(agent->actions[coll][i])];
      if (isnan(*pair_gap) || gap < *pair_gap) *pair_gap = gap;
    }
  }
}

/* The smallest gap over the places where action `index` has relatives (NAN: nowhere). */
static double smallest_relative_gap(const dccl_config_agent* agent, const relatives* r, int index, dccl_action action) {
  double smallest = NAN;
  for (int context = 0; context < DCCL_AGENT_CONTEXTS; context++) {
    double gap = r->pair_gap[context][dccl_action_pair(action)];
    if (!isnan(gap) && (isnan(smallest) || gap < smallest)) smallest = gap;
    for (int k = 0; k < 2; k++) {
      dccl_agent_cell* n = r->next_door[k];
      if (isnan(r->next_door_best[k][context])) continue;
      const dccl_arm* a = dccl_agent_arm(agent, n, context, index);
      if (a->invalid || a->count <= 0) continue;
      gap = r->next_door_best[k][context] - (n->nccl[context].mean - a->mean);
      if (isnan(smallest) || gap < smallest) smallest = gap;
    }
  }
  return smallest;
}

/* An untried channel variant's reward (NCCL's chunk size) estimated from the other collectives at this
 * size (NAN: none to go by). Where another collective runs the variant (its exploited action): the least
 * gain of the variant over its (algorithm, protocol) pair on NCCL's channels and chunk size, over the
 * collectives that measured both (twice or more, in one context, this cell's first), added to that pair's
 * measured reward here. Channels act on one pair's kernels much alike at one size whatever the
 * collective: on the GPU test machine ring/LL on 1 channel ran 1.50-1.56x NCCL's ring/LL on 2 at
 * AllReduce 16 KiB, 1.34-1.39x at AllGather and 1.31-1.37x at ReduceScatter, and ring/Simple on 1 channel
 * 1.07-1.16x NCCL's on 2 at 1 MiB and 0.86-0.97x from 4 MiB up, in all three (runs 18-19's pairs). There
 * the DQN predicted ring/LL on 1 channel 0.76x NCCL's choice at AllReduce 16 KiB, and neither learning
 * run tried it while AllGather and ReduceScatter ran it. Chunk sizes are not carried: NCCL
 * clamps them to ceilings that differ between collectives (docs/agents.md), and carrying them sent 9 of
 * 16 warm starts on a machine that disagrees with the policy (test_learning's) to a stream 10% slower
 * than NCCL, against 3 without; channels alone, 3. */
static double sibling_estimate(const dccl_config_agent* agent, dccl_agent_cell* c, const relatives* r, dccl_action action) {
  int coll = c->info.coll, context = c->context;
  dccl_action pair = dccl_action_make(dccl_action_algo(action), dccl_action_proto(action), 0, 0);
  int own = dccl_agent_action_index(agent, coll, pair);
  if (pair == action || dccl_action_chunk_log2(action) != 0 || own < 0) return NAN;
  const dccl_arm* own_arm = dccl_agent_arm(agent, c, context, own);
  if (own_arm->invalid || own_arm->count <= 0 || c->nccl[context].count <= 0) return NAN;
  double least_gain = NAN;
  int run_beside = 0;
  for (int other = 0; other < DCCL_NUM_COLLS; other++) {
    dccl_agent_cell* s = r->siblings[other];
    int variant_there = s != NULL ? dccl_agent_action_index(agent, other, action) : -1;
    int pair_there = s != NULL ? dccl_agent_action_index(agent, other, pair) : -1;
    if (variant_there < 0 || pair_there < 0) continue;
    for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) {
      int sibling_context = k == 0 ? context : 1 - context;
      const dccl_arm* a = dccl_agent_arm(agent, s, sibling_context, variant_there);
      const dccl_arm* b = dccl_agent_arm(agent, s, sibling_context, pair_there);
      if (a->invalid || b->invalid || a->count < 2 || b->count < 2) continue;
      double gain = b->mean - a->mean;
      if (isnan(least_gain) || gain < least_gain) least_gain = gain;
      run_beside |= s->exploit == action;
      break;
    }
  }
  return isnan(least_gain) || !run_beside ? NAN : c->nccl[context].mean - own_arm->mean + least_gain;
}

/* The action to race against the exploited one: an arm whose mean beats the exploited action's bound
 * (its first samples) or its measured mean (later), with too few samples to be proven either way.
 * Sampling it costs nothing in expectation, since it measures faster than what the cell runs; at 14%
 * per-call noise (the GPU test machine) a 10% gain takes about 8 samples to prove, and the decaying
 * epsilon used to stop after 3. NCCL's choice (none) when there is no such arm. */
static dccl_action challenger(dccl_config_agent* agent, dccl_agent_cell* c, dccl_action exploit, double best_bound,
                              float* samples, double* gain) {
  int context = c->context, coll = c->info.coll;
  double reference = c->nccl[context].mean, exploit_reward = exploited_reward(agent, c, exploit, best_bound);
  dccl_action best = DCCL_ACTION_NCCL;
  double best_reward = 0;
  for (int i = 0; i < agent->n_actions[coll]; i++) {
    const dccl_arm* a = dccl_agent_arm(agent, c, context, i);
    if (a->count < 1 || a->count >= RACE_MAX_SAMPLES || agent->actions[coll][i] == exploit ||
        !dccl_agent_arm_runnable(agent, a, coll, i))
      continue;
    double reward = reference - a->mean;
    double to_beat = a->count < EXPLOIT_MIN_SAMPLES ? best_bound : exploit_reward + RACE_MARGIN;
    if (reward > to_beat && (dccl_action_is_nccl(best) || reward > best_reward) && !duplicate_arm(agent, c, context, i)) {
      best = agent->actions[coll][i];
      best_reward = reward;
      if (samples != NULL) *samples = a->count;
      if (gain != NULL) *gain = reward - exploit_reward;
    }
  }
  return best;
}

/* Executions measured in a cell's context, as one bit per channel count NCCL ran (bit ch - 1) for each
 * (algorithm, protocol, chunk size) of the requests. Returns the most channels NCCL ran a request for its
 * own channel count on (0: none known). */
static int channels_measured(const dccl_config_agent* agent, dccl_agent_cell* c, int context, uint64_t* ran) {
  int nccl_channels = 0;
  memset(ran, 0, DCCL_RUN_GROUPS * sizeof(uint64_t));
  for (int i = 0; i < agent->n_actions[c->info.coll]; i++) {
    const dccl_arm* a = dccl_agent_arm(agent, c, context, i);
    dccl_action action = agent->actions[c->info.coll][i];
    if (a->invalid || a->count <= 0 || a->channels_ran == 0) continue;
    ran[run_group(action)] |= 1ULL << (a->channels_ran - 1);
    if (dccl_action_channels(action) == 0 && a->channels_ran > nccl_channels) nccl_channels = a->channels_ran;
  }
  return nccl_channels;
}

/* Whether NCCL would run `action` on channels that an arm of the same algorithm, protocol and chunk
 * size measured in this context ran on. Known only for explicit channel counts, once NCCL has shown the
 * cell's cap (it honours requests up to the cap and runs larger ones on it). */
static int runs_as_measured(const dccl_agent_cell* c, const uint64_t* ran, dccl_action action) {
  int channels = dccl_action_channels(action);
  if (channels == 0 || c->channel_cap == 0) return 0;
  if (channels > c->channel_cap) channels = c->channel_cap;
  return (ran[run_group(action)] >> (channels - 1)) & 1;
}

/* The most promising action to explore by an upper bound mixing measurements with the DQN's prediction (or
 * the seed priors before the DQN has trained), among actions that can still beat the best (NCCL's choice:
 * none); *lead (when not NULL) how far its upper bound beats the exploited action's mean (0: none does). */
static dccl_action most_promising(dccl_config_agent* agent, dccl_agent_cell* c, dccl_action exploit, double best_bound,
                                  double* lead) {
  int context = c->context, coll = c->info.coll;
  const dccl_arm* nccl = &c->nccl[context];
  refresh_predictions(agent, c);
  int predicted = c->q_steps != 0;
  double kappa = agent->options.prior_strength, reference = nccl->mean;
  double exploration = 2.0 * TYPICAL_SIGMA * sqrt(log(2.0 + c->samples[context]));
  double bytes = exp2(c->info.log2_bytes);
  /* The incumbent: the best mean so far with two samples or more, the centre of the local search. */
  double incumbent_reward = 0;
  int incumbent_index = best_measured_arm(agent, c, context, &incumbent_reward);
  dccl_action incumbent = incumbent_index >= 0 ? agent->actions[coll][incumbent_index] : DCCL_ACTION_NCCL;
  relatives related;
  find_relatives(agent, c, &related);
  dccl_agent_cell* const* next_door = related.next_door;
  /* A candidate must promise more than the exploited action's measured mean (not merely its lower
   * bound): once nothing does, exploration stops, whatever epsilon says. */
  double exploit_mean = exploited_reward(agent, c, exploit, best_bound);
  uint64_t ran[DCCL_RUN_GROUPS];
  int nccl_channels = channels_measured(agent, c, context, ran);
  dccl_action best = DCCL_ACTION_NCCL;
  double best_upper = exploit_mean;
  for (int i = 0; i < agent->n_actions[coll]; i++) {
    const dccl_arm* a = dccl_agent_arm(agent, c, context, i);
    dccl_action action = agent->actions[coll][i];
    if (action == exploit || !dccl_agent_arm_runnable(agent, a, coll, i)) continue;
    /* An untried request that NCCL would run exactly as an arm measured here (its channel count above
     * the cell's cap, or equal to what that arm ran on) would only measure that arm again. */
    if (a->count <= 0 && runs_as_measured(c, ran, action)) continue;
    double prediction = predicted ? c->q[i] : 0.3 * (dccl_action_prior(action, coll, bytes) - 1.0);
    /* Untried here, but its relatives were measured at least twice slower than the best action
     * measured beside them, wherever they were measured: its (algorithm, protocol) pair's other
     * channel counts and chunk sizes in this cell, the same action in the neighbouring size bins
     * (latency ratios change smoothly with size), in either context (congestion moves every action,
     * NCCL's choice included, but an action several times slower than the best stays slower). Then
     * that gap below the exploited action is its estimate, with no optimism: on the GPU test machine
     * LL is 3-4x slower than ring/Simple at every size from 2 to 64 MiB and every channel count, and
     * the DQN's optimism and the incumbent's neighbours kept offering its variants. */
    int untried = a->count <= 0;
    double gap = untried ? smallest_relative_gap(agent, &related, i, action) : NAN;
    int slow_relatives = !isnan(gap) && gap > SLOW_RELATIVES;
    /* Far fewer channels, untried and with no relative measured anywhere (its pair never ran in this
     * cell, the action never ran next door), wait for their pair at NCCL's resources: where NCCL runs
     * many channels the message is bandwidth-bound, a request for a fraction of them can be that
     * fraction's bandwidth, and the DQN's prediction is least reliable far from what was measured
     * (llama-8b's 857 MB AllReduce, called 20 times: tree/LL128 on one channel of NCCL's 16, predicted
     * 11% slower than NCCL's choice, ran 18x slower). */
    if (untried && isnan(gap) && dccl_action_channels(action) != 0 &&
        FEW_CHANNELS * dccl_action_channels(action) < nccl_channels)
      continue;
    /* A new pair: an (algorithm, protocol) pair nothing of which was measured in this context, with
     * NCCL's channels and chunk. Pairs come before their resources (AutoCCL's subspaces): NVLS, which
     * has no channel or chunk variants, was otherwise tried only after the incumbent's channel ladder
     * (yi-34b's 56 MB AllGather under interference: 1.7x the oracle for its first 550 calls). */
    int new_pair = untried && dccl_action_channels(action) == 0 && dccl_action_chunk_log2(action) == 0 &&
                   isnan(related.pair_gap[context][dccl_action_pair(action)]);
    if (slow_relatives) {
      prediction = exploit_mean - gap;
    } else if (untried && prediction > -NEIGHBOUR_DOUBT &&
               (new_pair || (!dccl_action_is_nccl(incumbent) && dccl_action_neighbours(action, incumbent)) ||
                (next_door[0] != NULL && action == next_door[0]->exploit) ||
                (next_door[1] != NULL && action == next_door[1]->exploit))) {
      /* A new pair, an untried neighbour of the incumbent, or the choice of a neighbouring size:
       * optimistic (a new pair twice as much), unless predicted more than 25% slower (NCCL's own
       * ring/Simple, as the incumbent, has every pair on its resources as a neighbour: ring/LL and
       * tree/LL at 64 MiB, predicted 3x slower, took the optimism and ran at 3.6x on the GPU test
       * machine's replay). */
      double optimistic = (incumbent_reward > 0 ? incumbent_reward : 0) + (new_pair ? 2 : 1) * NEIGHBOUR_BONUS +
                          0.1 * prediction;
      if (optimistic > prediction) prediction = optimistic;
    }
    if (untried && !slow_relatives) {
      /* A channel count that another collective at this size runs: its gain there over its pair, where
       * that says more than the DQN. */
      double beside = sibling_estimate(agent, c, &related, action);
      if (!isnan(beside) && beside > prediction) prediction = beside;
    }
    double estimate = (a->count * (reference - a->mean) + kappa * prediction) / (a->count + kappa);
    double upper = estimate + exploration / sqrt(a->count + kappa) + 1e-6 * dccl_rng_uniform(&agent->rng);
    if (upper > best_upper && !duplicate_arm(agent, c, context, i)) {
      best_upper = upper;
      best = action;
    }
  }
  if (lead != NULL) *lead = dccl_action_is_nccl(best) ? 0 : best_upper - exploit_mean;
  return best;
}

/* Whether NCCL's choice, while another action is exploited, was last read GUARD_STALE_CALLS or more of the
 * cell's calls ago: the guard's comparison then stands on an old reading of it (dccl_agent_decide). */
static int nccl_reading_stale(const dccl_agent_cell* c) {
  return !dccl_action_is_nccl(c->exploit) && c->observations - c->nccl_read_at > GUARD_STALE_CALLS;
}

/* The action to explore: NCCL's choice while the guard needs its readings (or its last reading is stale),
 * `raced` (the challenger, when there is one), else the most promising (most_promising). */
static dccl_action choose_exploration(dccl_config_agent* agent, dccl_agent_cell* c, dccl_action exploit,
                                      double best_bound, dccl_action raced) {
  int context = c->context;
  const dccl_arm* nccl = &c->nccl[context];
  /* Keep NCCL's own choice measured: the guard compares GUARD_MIN_SAMPLES recent readings of it with the
   * exploited action's. Until it has them, every exploration goes to NCCL's choice, unless the exploited
   * action, checked against this job if loaded from a saved policy (check_loaded), is proven (its lower
   * bound) more than 20% faster than it, beyond what the guard's margin (3% and two standard errors, once
   * it has 16 readings at the GPU's 15-20% a call) lets it tell: then half do. A settled cell explores a
   * run of two calls on about 4% of its decisions, of which the learner books one, and a restart empties
   * the recent readings, so NCCL's choice took every exploration of a busy cell: on the pairs replay
   * warm-started from the GPU's run 19 policy, AllReduce 16 KiB (tree/LL on 2 channels exploited at 1.5x
   * NCCL's choice; ring/LL on 1 channel, the best, never tried on the GPU) missed the best on 162 of 200
   * seeds, 136 with this share (docs/agents.md). */
  if (!dccl_action_is_nccl(exploit)) {
    if (nccl_reading_stale(c)) return DCCL_ACTION_NCCL;
    double nccl_share = nccl->recent_count >= GUARD_MIN_SAMPLES          ? 0.15
                        : best_bound > GUARD_MAY_WAIT && !c->loaded ? WAITING_GUARD_SHARE
                                                                    : 1.0;
    if (nccl_share >= 1.0 || dccl_rng_uniform(&agent->rng) < nccl_share) return DCCL_ACTION_NCCL;
  }
  refresh_predictions(agent, c); /* here too, before a raced challenger returns: the predictions age as before */
  /* A challenger (measured faster than the exploited action, not yet proven) gets more samples before
   * anything else. */
  if (!dccl_action_is_nccl(raced)) return raced;
  return most_promising(agent, c, exploit, best_bound, NULL);
}

int dccl_agent_channels_safe(const dccl_config_agent* agent, int coll, dccl_action action) {
  if (!agent->options.learning) return 1; /* frozen: the policy as saved (it measures nothing) */
  return coll != DCCL_COLL_ALLGATHER || dccl_action_channels(action) <= agent->nccl_channels_seen;
}

int dccl_agent_arm_runnable(const dccl_config_agent* agent, const dccl_arm* arm, int coll, int index) {
  return !arm->invalid && dccl_agent_channels_safe(agent, coll, agent->actions[coll][index]);
}

/* The one place a cell's decisions are published: an action NCCL may not be given yet (an AllGather on
 * more channels than NCCL has shown) runs as NCCL's choice, and is measured as such. */
static void write_cell(const dccl_config_agent* agent, dccl_table* table, dccl_agent_cell* c) {
  int coll = c->info.coll;
  dccl_action exploit = dccl_agent_channels_safe(agent, coll, c->exploit) ? c->exploit : DCCL_ACTION_NCCL;
  int explore_safe = dccl_agent_channels_safe(agent, coll, c->explore);
  dccl_table_set(table, c->cell, exploit);
  dccl_table_set_explore(table, c->cell, explore_safe ? c->explore : DCCL_ACTION_NCCL, explore_safe ? c->explore_mask : 0);
}

int dccl_agent_decide(dccl_config_agent* agent, dccl_table* table) {
  int written = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    dccl_agent_cell* c = &agent->cells[s];
    if (c->cell < 0 || !c->dirty) continue;
    c->dirty = 0;
    written++;
    if (agent->holding) {
      /* Learn once, then hold: the last exploited action, no exploration, no guard. */
      c->explore_mask = 0;
      write_cell(agent, table, c);
      continue;
    }
    if (agent->options.learning && agent->options.strategy != DCCL_STRATEGY_DQN) {
      if (agent->options.strategy == DCCL_STRATEGY_AUTOCCL) dccl_autoccl_decide(agent, c);
      else dccl_bandit_decide(agent, c);
      write_cell(agent, table, c);
      continue;
    }
    if (c->nccl[c->context].count < 1) {
      /* No reference in this context yet: measure NCCL's choice on half the calls. */
      c->explore = DCCL_ACTION_NCCL;
      c->explore_mask = agent->options.learning ? DCCL_TABLE_BLOCKS_MASK : 0;
      write_cell(agent, table, c);
      continue;
    }
    double bound;
    dccl_action previous = c->exploit;
    c->exploit = choose_exploit(agent, c, &bound);
    /* The decision just taken, so that a loaded cell whose saved statistics favour another action than
     * the one saved (a guard trip before the save) is checked on that action. A restart re-decides. */
    if (c->loaded && check_loaded(agent, c)) c->exploit = choose_exploit(agent, c, &bound);
    if (c->exploit != previous) c->undecided = c->age = 0;
    uint64_t elapsed = agent->newest_epoch > c->decided_epoch ? agent->newest_epoch - c->decided_epoch : 1;
    uint64_t counted = AGE_PER_EPOCH * elapsed;
    c->age += c->undecided < counted ? c->undecided : (uint32_t)counted;
    c->undecided = 0;
    c->decided_epoch = agent->newest_epoch;
    c->explore_mask = 0;
    if (agent->options.learning) {
      /* Epsilon decays with the samples since the exploited action last changed (a cell that keeps
       * finding better actions keeps exploring), counted up to one mask bit's share per epoch elapsed
       * since the cell's last decision: a table explores one action per cell, so a busy cell decided
       * every epoch would otherwise stop exploring after a handful of candidates. A cell decided less
       * often (it ran in bursts, or the learner fell behind) ages by all its samples: its one
       * candidate per decision got many of them. A challenger still being raced (two samples or
       * more) keeps epsilon at least at RACE_EPSILON. */
      uint32_t age = c->age < c->samples[c->context] ? c->age : c->samples[c->context];
      double epsilon = c->epsilon_peak * exp2(-(double)age / agent->options.epsilon_halflife);
      if (epsilon < agent->options.epsilon_min) epsilon = agent->options.epsilon_min;
      float raced_samples = 0;
      double raced_gain = 0;
      dccl_action raced = challenger(agent, c, c->exploit, bound, &raced_samples, &raced_gain);
      if (epsilon < RACE_EPSILON && !dccl_action_is_nccl(raced) && raced_samples >= RACE_FLOOR_SAMPLES &&
          raced_gain > RACE_MARGIN)
        epsilon = RACE_EPSILON;
      /* A loaded cell is checked against NCCL's choice as it runs now (check_loaded, which keeps a cell
       * loaded only while it exploits another action or its loaded decision was one), which exploration
       * measures first while it has few recent readings; epsilon alone, at its minimum in a settled cell,
       * would take a whole job. */
      if (epsilon < CHECK_EPSILON && c->loaded) epsilon = CHECK_EPSILON;
      /* An unresolved cell, one whose most promising candidate's upper bound still beats the exploited
       * action's mean by 3%, explores at a floor of its own (epsilon_unresolved, 0.2), which halves every
       * unresolved_halflife (300) of the cell's observations; a restart does not take them back (a floor
       * over the context's samples came back whole after every alarm: test_learning's replayed-GPU run then
       * ended with a stream 1.10x NCCL). Not in a cell loaded from a saved policy: the job that saved it
       * resolved it, and check_loaded restarts it where this job disagrees (with the floor, the disagreeing
       * warm start of bench/bench_disagreeing_warm_start.sh ended 876 streams more than 2% slower than
       * NCCL over 192 seeds, without it 699). At epsilon's floor alone a settled cell explores a run of two
       * calls on 4% of its decisions and books one, most of them the guard's readings of NCCL's choice: on
       * the pairs replay of the GPU test machine half the sizes that missed the best had read the best
       * action at most twice in their 1,600 calls (AllReduce 16 KiB's ring/LL on 1 channel, 3.5% faster
       * than the exploited tree/LL, on 38 of 200 seeds). Early in a cell the floor costs little, its
       * candidates' bounds closing after a few readings each but for near ties; a slower halving (600) paid
       * for it later, in the calls a job runs for (docs/agents.md, Exploration). */
      double unresolved = agent->options.unresolved_halflife > 0
                            ? agent->options.epsilon_unresolved *
                                  exp2(-(double)c->observations / agent->options.unresolved_halflife)
                            : 0;
      if (epsilon < unresolved && dccl_action_is_nccl(raced) && !c->from_policy) {
        double lead = 0;
        most_promising(agent, c, c->exploit, bound, &lead);
        if (lead > UNRESOLVED_MARGIN) epsilon = unresolved;
      }
      int bits = (int)floor(8 * epsilon + dccl_rng_uniform(&agent->rng));
      /* Over its budget (DYNAMICCL_EXPLORE_BUDGET_PCT), a cell explores only a challenger measured
       * faster than what it runs: a collective called 20 times in a short job (a data-parallel gradient
       * AllReduce of 1.7 GB) cannot repay a handful of candidates 2-4x slower than NCCL's choice. */
      int over_budget = agent->options.explore_budget > 0 && c->explore_cost_us > agent->options.explore_budget * c->time_us;
      if (over_budget && dccl_action_is_nccl(raced)) bits = 0;
      /* The explored calls are a run of contiguous calls of the cell, at a random place among each
       * eight: the learner skips a call right after a switch of action (plugin/learner.c), so a run
       * of one would teach nothing where a cell's calls come back to back. One call becomes two half
       * the time: the same share of calls on average. */
      if (bits == 1) bits = dccl_rng_uniform(&agent->rng) < 0.5 ? 2 : 0;
      /* While another action is exploited, NCCL's choice is read at least once every GUARD_STALE_CALLS of
       * the cell's calls (a run of two, of which the learner books one; choose_exploration): the guard compares recent
       * readings, and in a job of one busy cell the common drift, which follows every reading, takes a
       * slowdown of the exploited action as the machine's within a few hundred calls; the exploited arm's
       * readings then look as before, and only a fresh reading of NCCL's choice (faster by the drift)
       * shows the change. At epsilon's floor NCCL's choice was read on 15% of 4% of decisions: one cell
       * settled over 6,000 calls on an action that then ran 30% slower than NCCL's choice was back on
       * NCCL's choice within 3,000 calls on 15 of 30 seeds, on all 30 with this read (every 1,024 calls,
       * 30 too, at twice the cost: each read takes 2 calls in 8 until the next decision; a settled cell
       * decided every 64 calls then explores 0.7% of its calls without it, 1.6% with it, 2.2% at 1,024;
       * test_guard_returns_to_nccl). */
      int stale = nccl_reading_stale(c);
      if (stale && bits < 2) bits = 2;
      if (bits > 0) {
        c->explore = over_budget && !stale ? raced : choose_exploration(agent, c, c->exploit, bound, raced);
        if (c->explore != c->exploit) {
          unsigned run = bits >= 8 ? 0xFFu : (1u << bits) - 1, offset = (unsigned)dccl_rng_below(&agent->rng, 8);
          c->explore_mask = (uint8_t)((run << offset | run >> (8 - offset)) & 0xFFu);
          agent->stats.explorations_published++;
        }
      }
    }
    write_cell(agent, table, c);
  }
  return written;
}

void dccl_agent_exploit_table(dccl_config_agent* agent, dccl_table* table) {
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    dccl_agent_cell* c = &agent->cells[s];
    if (c->cell < 0) continue;
    double bound;
    c->exploit = c->nccl[c->context].count >= 1 ? choose_exploit(agent, c, &bound) : DCCL_ACTION_NCCL;
    c->explore_mask = 0;
    write_cell(agent, table, c);
  }
}
