/* agents/config_agent.h: Agent-2, the config agent.
 *
 * For every decision-table cell in use it keeps, per context (calm / congested, from Agent-1), the
 * measured log latency of every action it tried ("arms") and of NCCL's own choice. The reward of an
 * action is -log(latency / reference), the reference being NCCL's own choice measured in the same cell
 * and context: rewards are scale-free across message sizes, average in log space (geometric means),
 * and 0 means "as good as NCCL". The DQN (q_network.h) learns Q(state, action) ~ reward from every
 * experience and generalises across cells, sizes and contexts.
 *
 * Decisions, made on the background thread and published as decision tables:
 *  - exploit: the action with the best lower confidence bound on its reward; NCCL's choice (reward 0)
 *    unless an action beats it with confidence;
 *  - explore: on a fraction epsilon of the cell's calls (decaying with the cell's samples, at most 8
 *    counted per epoch between two decisions, raised again on Agent-1 events), first a challenger measured faster than
 *    the exploited action until it is proven either way (raced), else the most promising untried or
 *    uncertain action by an upper bound that combines measurements with the DQN's prediction (the
 *    seed priors before the DQN has trained); actions that cannot beat the best any more are
 *    eliminated, untried actions whose relatives measured twice slower than the best get no optimism,
 *    an untried channel count that another collective at the same size runs is estimated from its gain
 *    there, and requests NCCL would run as an arm already measured (above its channel cap) are skipped;
 *  - guard: NCCL's own choice keeps being measured now and then; when the exploited action's recent
 *    latency is worse than NCCL's by more than the guard percentage, the cell returns to NCCL's choice
 *    until the action proves better again.
 * Readings: a run of 3 to 12 readings of a cell each 2.5x its arm's mean or slower (or 3 of the arm's
 * standard deviations above it, where that is more) is a burst of slow calls, every action alike: left out
 * of every arm once a reading that is not slow ends it; shorter runs and longer ones are booked as they
 * came.
 * A congestion onset switches the stream's cells to the congested context and restarts its statistics
 * (kept at a quarter of their weight, as CUSUM-UCB restarts), a recovery switches back likewise. A cell
 * loaded from a saved policy measures NCCL's choice again and restarts (keeping at most 2 samples an
 * arm) where this job contradicts the saved gap between its action and NCCL's choice. */
#ifndef DYNAMICCL_AGENTS_CONFIG_AGENT_H
#define DYNAMICCL_AGENTS_CONFIG_AGENT_H

#include <stdint.h>

#include "../core/decision_table.h"
#include "../core/features.h"
#include "baselines.h"
#include "q_network.h"

#define DCCL_AGENT_MAX_CELLS 256
#define DCCL_AGENT_CONTEXTS 2

typedef struct dccl_arm {
  float count;  /* samples, down-weighted on restarts */
  float mean;   /* mean log latency */
  float m2;     /* sum of squared deviations (Welford) */
  float recent; /* recent log latency, drift-corrected (the mean of the first 16 readings, then an
                   exponentially weighted average): the guard and check_loaded compare it */
  float recent_charge_us; /* the learner's charge for left work the recent reading is on, drift-corrected as
                             the readings (NaN: not known, as loaded); a new charge moves the recent
                             reading by the difference */
  uint16_t recent_count;
  uint8_t invalid; /* NCCL would not run it here */
  uint8_t channels_ran; /* channels NCCL last ran it on (0: not known); saved with the policy (format 4) */
} dccl_arm;

typedef struct dccl_agent_options {
  int learning;                 /* 0: frozen, exploit only, no randomness */
  double epsilon_start, epsilon_restart, epsilon_min;
  double epsilon_halflife;      /* cell samples over which epsilon halves */
  double epsilon_unresolved;    /* epsilon's floor while a candidate's upper bound still beats the exploited
                                   action by 3% (an unresolved cell not loaded from a saved policy), from
                                   its first observation ... */
  double unresolved_halflife;   /* ... halving every this many of them (0: no such floor) */
  double guard;                 /* e.g. 0.03: 3% */
  double explore_budget;        /* a cell explores (beyond a raced challenger) only while its explored calls
                                   have cost at most this share of its time (0: no limit) */
  double prior_strength;        /* pseudo-samples given to the DQN's (or the priors') prediction */
  uint64_t hold_after;          /* > 0: learn-once-then-hold after this many observations */
  int train_every;              /* observations per DQN training step */
  dccl_q_options q;
  dccl_action_space_options space;
  int n_ranks, n_nodes;
  double batch_size;            /* DYNAMICCL_BATCH_SIZE or 0 */
  double model_intensity;       /* DYNAMICCL_MODEL_INTENSITY or -1 (estimated from gaps) */
  uint64_t seed;
  dccl_strategy strategy;       /* dqn (this agent), or a baseline's decision rule (baselines.h) */
} dccl_agent_options;

void dccl_agent_default_options(dccl_agent_options* options);

#define DCCL_AGENT_READINGS 16 /* a cell's last readings, which an Agent-1 onset can take back */

/* One reading booked in a cell (dccl_agent_observe), as an onset may take it back. */
typedef struct dccl_agent_reading {
  uint32_t stream_call; /* its stream's observation count when it was booked */
  int16_t index;        /* the arm (-1: none; NCCL's choice whose algorithm and protocol are not an action) */
  uint8_t context, nccl;/* nccl: also a reading of NCCL's own arm */
  float log_latency;    /* as booked (drift-corrected) */
} dccl_agent_reading;

#define DCCL_AGENT_BURST_LONGEST 12 /* the longest burst of slow calls a cell's readings are held out for */

#define DCCL_AGENT_RUN_ARMS 8 /* arms whose residuals a cell's run keeps (a ninth arm's tell no level) */

/* A reading on its way into its arms, held while it may be part of a burst of slow calls. */
typedef struct dccl_agent_held {
  dccl_agent_reading reading;
  float charge;      /* the learner's charge for left work, in the reading's units */
  float drift_owed;  /* what the common drift did not take of the reading's tail (corrected_reading): taken
                        where the reading is not booked clipped (left out in a burst, or a change) */
  uint8_t channels;  /* NCCL ran it on (0: not reported) */
} dccl_agent_held;

typedef struct dccl_agent_cell {
  int cell; /* decision-table cell, -1 when the slot is free */
  dccl_cell_static info;
  dccl_arm* arms;                      /* [context][action] */
  dccl_arm nccl[DCCL_AGENT_CONTEXTS];  /* NCCL's own choice */
  float* q;                            /* DQN predictions per action in the current context */
  uint64_t q_steps;                    /* training step the predictions were made at (0: none) */
  dccl_dynamic_state dynamic;
  uint32_t samples[DCCL_AGENT_CONTEXTS];
  uint32_t undecided;                  /* samples since the cell was last decided */
  uint64_t decided_epoch;              /* the newest epoch measured when the cell was last decided */
  uint32_t age;                        /* epsilon's age: samples since the exploited action last changed,
                                          at most AGE_PER_EPOCH of them counted per epoch elapsed
                                          between two decisions */
  float epsilon_peak;
  uint8_t context, dirty, holding;
  uint8_t loaded;                      /* statistics loaded from a saved policy and not yet checked against
                                          this job's measurements (check_loaded in config_agent.c; 2: the
                                          congested ones, from this job's first onset) */
  uint8_t nccl_read_last;              /* the cell's last reading was NCCL's choice's (check_loaded waits) */
  uint8_t from_policy;                 /* loaded from a saved policy (dccl_agent_cell_loaded): no unresolved floor */
  uint8_t congested_from_policy;       /* its congested statistics are still the saving job's: checked from
                                          this job's first onset (dccl_agent_on_event) */
  uint8_t tail_as_it_came;             /* loaded from a policy whose readings were booked with their slow tail
                                          (format 4 or older): this job's are too (booked_tail_limit) */
  uint8_t channel_cap;                 /* NCCL ran a request for more channels on this many (0: none seen, or
                                          NCCL ran more since: dccl_agent_observe); saved with the policy */
  uint8_t leveling;                    /* loaded from a saved policy with 64 readings of NCCL's choice or more,
                                          its level not yet settled */
  uint8_t level_readings;              /* this job's readings of NCCL's choice that set the level so far */
  float level;                         /* this job's log latency above the saved statistics' (0 unless loaded),
                                          taken off every reading of the cell (corrected_reading in
                                          config_agent.c) */
  float level_reference;               /* NCCL's choice's saved mean as loaded, which the level is measured against */
  dccl_action exploit, explore;
  dccl_action loaded_exploit;          /* the decision the saved statistics gave when loaded (check_loaded) */
  dccl_action calm_exploit;            /* the calm context's decision when congestion began */
  uint8_t explore_mask;
  uint64_t observations, guard_trips;
  uint64_t nccl_read_at;               /* `observations` when NCCL's choice was last read here */
  double time_us;                      /* latency of every call measured here in this job */
  double explore_cost_us;              /* latency of explored calls beyond the exploited action's mean */
  dccl_autoccl_state autoccl;          /* strategy autoccl only */
  /* The cell's last readings since its statistics were last decayed, a ring: an Agent-1 onset takes those
   * that came after the change it dates out of the calm context (dccl_agent_on_event). */
  dccl_agent_reading readings[DCCL_AGENT_READINGS];
  uint8_t readings_count, readings_head;
  dccl_agent_held held[DCCL_AGENT_BURST_LONGEST + 1]; /* the cell's last readings, each slow (book_or_hold) */
  uint8_t held_count;
  /* The cell's current run: its readings since another cell's came between, RUN_LONGEST at most. Each arm's
   * residuals in it (against its mean, or its recent reading where the mean is stale), whose mean over the
   * arms read twice as often or more is the run's level as a reading of one arm sees it (run_corrected in
   * config_agent.c). */
  int16_t run_arm[DCCL_AGENT_RUN_ARMS];       /* as held_arm_key gives them */
  float run_residuals[DCCL_AGENT_RUN_ARMS];   /* their sum */
  float run_counts[DCCL_AGENT_RUN_ARMS];      /* the arm's readings when it last added one */
  uint8_t run_readings[DCCL_AGENT_RUN_ARMS], run_arms;
  uint8_t run_length;                         /* the run's readings so far */
  uint8_t burst_repeats;               /* bursts in a row that left burst_arm's readings alone out */
  int16_t burst_arm;                   /* the arm whose readings alone the last burst left out, as
                                          held_arm_key gives it (0: none, or a burst of several arms' readings),
                                          until that arm reads not slow (book_or_hold) */
} dccl_agent_cell;

typedef struct dccl_agent_stats {
  uint64_t observations, explorations_published, guard_trips, restarts, invalid_actions, stale_samples;
  uint64_t burst_readings; /* readings left out as parts of bursts of slow calls (book_or_hold) */
  uint64_t loaded_restarts; /* restarts of loaded cells that this job contradicted (also in `restarts`) */
  uint64_t training_deferred, training_dropped; /* DQN steps owed while the learner was behind; steps
                                                  dropped beyond DCCL_AGENT_MAX_OWED */
} dccl_agent_stats;

#define DCCL_AGENT_MAX_OWED 4096 /* DQN training steps a learner behind the job may owe */

typedef struct dccl_config_agent {
  dccl_agent_options options;
  dccl_rng rng;
  dccl_action* actions[DCCL_NUM_COLLS]; /* sorted action lists (without NCCL's choice) */
  int n_actions[DCCL_NUM_COLLS], max_actions;
  float* action_features[DCCL_NUM_COLLS];
  dccl_agent_cell cells[DCCL_AGENT_MAX_CELLS];
  int16_t slot_of_cell[DCCL_TABLE_CELLS];
  dccl_arm* arm_pool;
  float* q_pool;
  /* Every measured arm, as slot << 16 | context << 15 | action index, for balanced DQN training. */
  uint32_t* measured;
  size_t measured_count, measured_capacity;
  dccl_q_network q;
  int holding;
  int defer_training;     /* set by the learner while it is behind the job: 3 training steps in 4 are owed */
  uint32_t training_owed; /* DQN steps owed (at most DCCL_AGENT_MAX_OWED) */
  dccl_agent_stats stats;
  uint64_t newest_epoch; /* the newest epoch an observation came from */
  float drift_level;     /* the machine's slow common drift (log latency), taken off every sample */
  int last_cell;         /* the cell of the last observation, plus 1 (0: none yet): where a cell's run ends */
  /* The most channels NCCL has run a ring, tree or PAT call of this communicator on: no more than it
   * has. An AllGather's explicit channel count is published only up to it (dccl_agent_channels_safe). */
  int nccl_channels_seen;
  uint32_t stream_calls[DCCL_NUM_COLLS * DCCL_SIZE_BINS]; /* observations per Agent-1 stream (collective, size bin) */
} dccl_config_agent;

/* One measured collective, joined with the decision that produced it. */
typedef struct dccl_agent_observation {
  int cell;
  dccl_action decided;          /* what the table said (DCCL_ACTION_NCCL: NCCL's own choice) */
  int executed_algo, executed_proto;
  size_t bytes;
  double latency_us;
  dccl_dynamic_state dynamic;
  int executed_channels;        /* channels NCCL ran it on (0: not reported) */
  uint64_t epoch;               /* the decision-table epoch the call ran in */
  double charge_us;             /* of latency_us, what the learner charged for work the call's action
                                   leaves behind (an estimate, DYNAMICCL_COST=leftover; 0: none) */
} dccl_agent_observation;

int dccl_agent_init(dccl_config_agent* agent, const dccl_agent_options* options);
void dccl_agent_free(dccl_config_agent* agent);
/* The loaded cells that took a level this job (their readings put on the saved statistics' scale,
 * config_agent.c's corrected_reading), and the level farthest from 0 (log latency, signed; 0 when none). */
void dccl_agent_levels(const dccl_config_agent* agent, int* cells, double* largest);

/* Bytes allocated by dccl_agent_init (not counting the struct itself). */
size_t dccl_agent_memory_bytes(const dccl_config_agent* agent);

/* NCCL's cost table for a cell, as the hot path saw it (marks actions NCCL ignores as invalid). */
void dccl_agent_set_cost(dccl_config_agent* agent, int cell, const float* cost);
void dccl_agent_observe(dccl_config_agent* agent, const dccl_agent_observation* observation);
/* Runs up to `max_steps` of the DQN training steps owed since defer_training was set; returns how many
 * ran. The learner pays them back when it has caught up with the job. */
int dccl_agent_train_owed(dccl_config_agent* agent, int max_steps);
/* Agent-1 event on stream (collective, size bin): DCCL_TRIGGER_EVENT_ONSET or _RECOVERED. At an onset the
 * stream's last `change_calls` observations came after the change (dccl_trigger_result's change_calls):
 * their readings are taken out of the calm context, and not booked in the congested one. */
void dccl_agent_on_event(dccl_config_agent* agent, int coll, int size_bin, int event, int change_calls);
/* Writes the decisions of changed cells into `table` (a copy of the table in force). Returns the
 * number of cells written. */
int dccl_agent_decide(dccl_config_agent* agent, dccl_table* table);

/* Whether `action` may be published for collective `coll`: NCCL 2.29 and later schedule a group of
 * Broadcasts from several roots as one AllGatherV, on as many channels as a tuner's answer for an
 * AllGather says, unclamped (src/scheduler/allgatherv_sched.cc: channels NCCL never set up are read
 * there, a crash); its ordinary schedule clamps a request to the channels it has. So an AllGather's
 * explicit channel count must be one NCCL has shown it has: at most agent->nccl_channels_seen. A frozen
 * agent, which measures nothing, publishes its saved policy as it is: the learning job that saved it
 * asked no AllGather for more channels than its NCCL ran (a machine of the same shape whose NCCL has
 * fewer channels should learn, not freeze). */
int dccl_agent_channels_safe(const dccl_config_agent* agent, int coll, dccl_action action);
/* Whether arm `index` of a cell's context (collective `coll`) may run at all: NCCL does not ignore it
 * (its cost table) and its channel count is safe (dccl_agent_channels_safe). Every choice an agent makes
 * (exploit, race, explore, draw) is among such arms. */
int dccl_agent_arm_runnable(const dccl_config_agent* agent, const dccl_arm* arm, int coll, int index);
/* Called by the policy loader once a cell's saved statistics are in place. The cell starts in the calm
 * context, whatever context the job that saved it ended in (this job's Agent-1 starts calm). A learning agent measures
 * its own recent readings (the guard compares what runs now, not what ran in the job that saved the
 * policy; a frozen one measures no reference and keeps the saved ones), and checks the saved statistics
 * against this job's once it has measured the exploited action and NCCL's choice. `tail_clipped`: the saved
 * statistics were booked with the slow tail of readings clipped (format 5 on); else this job's readings of
 * the cell are booked as they come too, so that the arms keep one kind of mean. */
void dccl_agent_cell_loaded(dccl_config_agent* agent, dccl_agent_cell* cell, int tail_clipped);

/* Writes every known cell's exploit action (no exploration) into `table`: the frozen policy. */
void dccl_agent_exploit_table(dccl_config_agent* agent, dccl_table* table);

/* Rebuilds the list of measured arms after arms were set directly (policy load). */
void dccl_agent_index_measured(dccl_config_agent* agent);

/* An arm of a cell: context 0 (calm) or 1 (congested), index in the collective's action list. */
static inline dccl_arm* dccl_agent_arm(const dccl_config_agent* agent, dccl_agent_cell* c, int context, int index) {
  return &c->arms[(size_t)context * agent->max_actions + index];
}
/* Variance of an arm's log-latency samples (a typical value until it has two). */
double dccl_arm_variance(const dccl_arm* arm);
/* How far the machine's common drift follows a reading of `arm` (of its residual): 1/64 where the arm's spread
 * is 0.2 or less, less by 0.2^2 over its variance where wider. */
double dccl_arm_drift_weight(const dccl_arm* arm);

/* Index of an action in its collective's list, or -1. */
int dccl_agent_action_index(const dccl_config_agent* agent, int coll, dccl_action action);
/* The slot of a cell, creating it when `create` (NULL when full or absent). */
dccl_agent_cell* dccl_agent_cell_slot(dccl_config_agent* agent, int cell, int create);

#endif
