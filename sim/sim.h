/* sim/sim.h: the simulated cluster: a hardware profile, NCCL's model of it, the conditions over time
 * and seeded measurement noise, plus the oracle that knows the best action at every moment.
 * A dccl_sim holds pointers into itself: initialise it in place and do not copy it. */
#ifndef DYNAMICCL_SIM_SIM_H
#define DYNAMICCL_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "../core/action.h"
#include "nccl_model.h"
#include "profile.h"
#include "schedule.h"
#include "truth.h"
#include "workload.h"

typedef struct dccl_sim {
  dccl_profile profile;
  dccl_nccl_model model;
  dccl_schedule schedule;
  uint64_t seed;
} dccl_sim;

/* `schedule` may be NULL (calm). The schedule is copied and expanded over [0, horizon). */
int dccl_sim_init(dccl_sim* sim, const dccl_profile* profile, const dccl_schedule* schedule, uint64_t seed,
                  uint64_t horizon, char* error, size_t error_size);
void dccl_sim_free(dccl_sim* sim);

/* Conditions at a call (hint: see dccl_schedule_at). */
size_t dccl_sim_conditions(const dccl_sim* sim, uint64_t call, size_t* hint, dccl_conditions* out);
/* What NCCL runs for a call when the tuner answers `action`. -1 when nothing is runnable. */
int dccl_sim_execute(const dccl_sim* sim, const dccl_call* call, dccl_action action, dccl_execution* out);
/* Noise-free latency of an execution under conditions. */
double dccl_sim_true_us(const dccl_sim* sim, const dccl_call* call, const dccl_execution* execution,
                        const dccl_conditions* conditions);
/* The measured duration a rank observes of call number `call` (a collective `coll` of `bytes`): noise common
 * to all ranks of the call (they finish the collective together), of the profile's sigma for that collective
 * and size, and a small per-rank jitter; deterministic in (seed, call, rank). */
double dccl_sim_measure(const dccl_sim* sim, int coll, double bytes, double true_us, const dccl_conditions* conditions,
                        uint64_t call, int rank);

/* The factor of a call's measurement that its run (sim/workload.h's run_start: the consecutive calls of its
 * collective and size) sets, to multiply dccl_sim_measure's: the run's level (the profile's noise.level_at:
 * log-normal, one draw per run, the same for every action and rank) and, for the execution's algorithm
 * and protocol, the alternation of the run's calls (noise.alternation_at, amplitude a: the run's calls
 * alternate exp(+a) and exp(-a) over cosh(a), which comes first drawn per run), so that two consecutive
 * calls take the measured latency's time on average, as collbench's median of an even number of calls
 * reads it. 1 where the profile has neither. Deterministic in (seed, run, position in the run). */
double dccl_sim_run_factor(const dccl_sim* sim, const dccl_call* call, const dccl_execution* execution);

/* The shares of a call's latency that the execution's kernel leaves to the next one (the profile's
 * `leftover` lines, by collective and size; 0 where none): `later`, by which the next kernel starts later,
 * and `longer`, by which it runs longer. With a line's spread each is drawn per call (deterministic in
 * seed and call, clipped to [0, 0.9]); together they are at most 0.9. */
void dccl_sim_leftover(const dccl_sim* sim, const dccl_call* call, const dccl_execution* execution, double* later,
                       double* longer);

/* ---- oracle ---- */
typedef struct dccl_oracle_answer {
  dccl_action best;      /* DCCL_ACTION_NCCL when NCCL's default is already best */
  double best_us;
  double default_us;     /* NCCL's own choice under the same conditions */
  dccl_execution best_execution, default_execution;
} dccl_oracle_answer;

typedef struct dccl_oracle_entry dccl_oracle_entry;

typedef struct dccl_oracle {
  const dccl_sim* sim;
  dccl_action_space_options options;
  dccl_action* actions[DCCL_NUM_COLLS];
  int n_actions[DCCL_NUM_COLLS];
  dccl_oracle_entry* cache;
  size_t cache_mask;
  uint64_t hits, misses;
} dccl_oracle;

/* The oracle searches the action space `options` describes (the same one a tuner could use). */
int dccl_oracle_init(dccl_oracle* oracle, const dccl_sim* sim, const dccl_action_space_options* options);
void dccl_oracle_free(dccl_oracle* oracle);
/* The best valid action for this call under these conditions, and NCCL's default for comparison.
 * Cached by (collective, size, pipelined ops, conditions). */
void dccl_oracle_query(dccl_oracle* oracle, const dccl_call* call, const dccl_conditions* conditions,
                       dccl_oracle_answer* out);

#endif
