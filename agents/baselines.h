/* agents/baselines.h: the baseline tuners that share Agent-2's measurements and decision tables, so
 * that comparisons isolate the decision rule (DYNAMICCL_AGENT):
 *  - autoccl: AutoCCL's online tuner (AutoCCL, NSDI'25, section 4; Algorithms 1 and 2): NCCL's own
 *    choice first, then every implementation subspace (algorithm x protocol the cell can run) in turn,
 *    coordinate descent over the resource parameters the plugin ABI exposes (channels; the chunk size
 *    on tuner v6) with a step that grows with the relative improvement; the best configuration is then
 *    held for the rest of the run (no re-tuning).
 *  - bandit: Thompson sampling per cell over every valid action and NCCL's choice (Gaussian posterior
 *    on the mean log latency; untried actions drawn from the seed priors around NCCL's latency),
 *    restarted by Agent-1's alarms as CUSUM-UCB restarts, redrawn at every table publication. */
#ifndef DYNAMICCL_AGENTS_BASELINES_H
#define DYNAMICCL_AGENTS_BASELINES_H

#include <stdint.h>

#include "../core/action.h"

typedef enum { DCCL_STRATEGY_DQN = 0, DCCL_STRATEGY_AUTOCCL = 1, DCCL_STRATEGY_BANDIT = 2 } dccl_strategy;

const char* dccl_strategy_name(dccl_strategy strategy);
/* "dqn", "autoccl", "bandit"; -1 when unknown. */
int dccl_strategy_parse(const char* text);

/* AutoCCL's per-cell search state. */
typedef struct dccl_autoccl_state {
  uint8_t phase;        /* 0: measuring NCCL's choice, 1: searching, 2: done (holding) */
  uint8_t subspace;     /* index of the (algorithm, protocol) pair being searched */
  uint8_t dim, tuned_dims, direction_tried;
  int8_t direction;     /* +1 / -1 along the current dimension */
  int16_t channel_index, chunk_index; /* the candidate's position on the subspace's grid */
  int16_t best_channel_index, best_chunk_index;
  float lr;             /* relative improvement of the last step */
  float best_mean;      /* mean log latency of the subspace's optimum (candidate grid point) */
  float global_mean;    /* the overall optimum so far (NCCL's choice at first) */
  dccl_action global;   /* DCCL_ACTION_NCCL: NCCL's choice */
  dccl_action candidate;
  float candidate_base; /* the candidate arm's sample count when it became the candidate */
} dccl_autoccl_state;

struct dccl_config_agent;
struct dccl_agent_cell;
/* Sets the cell's exploit action (and no exploration) for the next epoch. */
void dccl_autoccl_decide(struct dccl_config_agent* agent, struct dccl_agent_cell* cell);
void dccl_bandit_decide(struct dccl_config_agent* agent, struct dccl_agent_cell* cell);

#endif
