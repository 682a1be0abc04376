/* agents/bandit.c: the bandit baseline's decision rule (see baselines.h): Thompson sampling per cell,
 * restarted by Agent-1's alarms, redrawn at every table publication. */
#include <math.h>
#include <string.h>

#include "config_agent.h"

#define PRIOR_SIGMA 0.1    /* spread of an untried action's log latency around its prior */
#define PRIOR_WEIGHT 0.5   /* how much slower than NCCL an action the seed priors rate 0 is expected */
#define REFERENCE_SAMPLES 2

const char* dccl_strategy_name(dccl_strategy strategy) {
  return strategy == DCCL_STRATEGY_AUTOCCL ? "autoccl" : strategy == DCCL_STRATEGY_BANDIT ? "bandit" : "dqn";
}

int dccl_strategy_parse(const char* text) {
  if (strcmp(text, "dqn") == 0) return DCCL_STRATEGY_DQN;
  if (strcmp(text, "autoccl") == 0) return DCCL_STRATEGY_AUTOCCL;
  if (strcmp(text, "bandit") == 0) return DCCL_STRATEGY_BANDIT;
  return -1;
}

void dccl_bandit_decide(dccl_config_agent* agent, dccl_agent_cell* c) {
  int context = c->context, coll = c->info.coll;
  const dccl_arm* nccl = &c->nccl[context];
  c->explore_mask = 0;
  if (nccl->count < REFERENCE_SAMPLES) { /* NCCL's choice first: the prior's centre */
    c->exploit = DCCL_ACTION_NCCL;
    return;
  }
  double noise = dccl_arm_variance(nccl);
  double bytes = exp2(c->info.log2_bytes);
  dccl_action best = DCCL_ACTION_NCCL;
  double best_draw = nccl->mean + sqrt(noise / nccl->count) * dccl_rng_normal(&agent->rng);
  for (int i = 0; i < agent->n_actions[coll]; i++) {
    const dccl_arm* a = dccl_agent_arm(agent, c, context, i);
    dccl_action action = agent->actions[coll][i];
    if (!dccl_agent_arm_runnable(agent, a, coll, i)) continue;
    double draw;
    if (a->count >= 1) {
      double variance = a->count >= 2 ? dccl_arm_variance(a) : noise;
      draw = a->mean + sqrt(variance / a->count) * dccl_rng_normal(&agent->rng);
    } else {
      double prior = nccl->mean + PRIOR_WEIGHT * (1.0 - dccl_action_prior(action, coll, bytes));
      draw = prior + PRIOR_SIGMA * dccl_rng_normal(&agent->rng);
    }
    if (draw < best_draw) {
      best_draw = draw;
      best = action;
    }
  }
  c->exploit = best;
}
