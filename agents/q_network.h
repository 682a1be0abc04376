/* agents/q_network.h: the config agent's Q-function: an MLP over (state features, action features)
 * with a target network, a replay buffer and Double-DQN targets.
 *
 * Q(s, a) estimates the reward of action a in state s, where the reward is -log(latency / reference)
 * and the reference is NCCL's own choice measured in the same cell and context (see config_agent.h).
 * With discount gamma = 0 (the default: an action does not change the next call's state) the target
 * is the reward; with gamma > 0 it is r + gamma * Q_target(s', argmax_a' Q_online(s', a')), the
 * argmax taken over the candidate actions of the next state (Double DQN). Training samples minibatches
 * from the replay buffer; gradients are clipped by global norm; the target network follows the online
 * one by Polyak averaging. Memory is fixed at init. */
#ifndef DYNAMICCL_AGENTS_Q_NETWORK_H
#define DYNAMICCL_AGENTS_Q_NETWORK_H

#include <stdint.h>

#include "../core/features.h"
#include "../nn/dense.h"

#define DCCL_Q_INPUTS (DCCL_STATE_FEATURES + DCCL_ACTION_FEATURES)
#define DCCL_Q_HIDDEN1 64
#define DCCL_Q_HIDDEN2 32
#define DCCL_Q_BATCH 32
#define DCCL_Q_NEXT_CANDIDATES 8

/* One experience. The state is rebuilt from the cell at training time (static part) plus the dynamic
 * part stored here, so an entry stays small. */
typedef struct dccl_replay_entry {
  uint16_t cell_slot;   /* the agent's cell slot */
  uint16_t cell;        /* decision-table cell, to detect a recycled slot */
  uint16_t action;      /* index in the collective's action list; DCCL_REPLAY_NCCL for NCCL's choice */
  uint8_t context;
  uint8_t trigger_state;
  float log_latency;
  float cusum_up, cusum_down, congested_fraction, latency_ratio, intensity;
} dccl_replay_entry;
#define DCCL_REPLAY_NCCL 0xFFFFu

typedef struct dccl_q_options {
  double learning_rate, gamma, tau, huber_delta, gradient_clip;
  int replay_capacity;
} dccl_q_options;

void dccl_q_default_options(dccl_q_options* options);

/* Fills the state and action features and the reward of a replay entry; returns 0 when the entry is
 * stale (its cell slot was recycled). With entry NULL the agent supplies a sample of its own choosing
 * (the config agent: a uniformly drawn measured action with its mean reward), or returns 0. For gamma > 0 it also gives the next state (the cell's latest
 * dynamic state) and up to DCCL_Q_NEXT_CANDIDATES candidate actions there. */
typedef int (*dccl_q_sample_builder)(void* agent, const dccl_replay_entry* entry, float* state, float* action,
                                     float* reward, float* next_state, float* next_actions, int* next_count);

typedef struct dccl_q_network {
  dccl_q_options options;
  dccl_params online, target;
  dccl_mlp online_mlp, target_mlp;
  dccl_replay_entry* replay;
  int replay_count, replay_head;
  uint64_t training_steps, samples_seen;
  float inputs[DCCL_Q_BATCH * DCCL_Q_INPUTS];
  float targets[DCCL_Q_BATCH], gradients[DCCL_Q_BATCH];
  float next_inputs[DCCL_Q_NEXT_CANDIDATES * DCCL_Q_INPUTS];
  double last_loss;
} dccl_q_network;

int dccl_q_init(dccl_q_network* q, const dccl_q_options* options, dccl_rng* rng);
void dccl_q_free(dccl_q_network* q);
/* Bytes allocated by dccl_q_init: both parameter blocks, the layer buffers and the replay buffer. */
size_t dccl_q_memory_bytes(const dccl_q_network* q);
void dccl_q_remember(dccl_q_network* q, const dccl_replay_entry* entry);
/* One minibatch step; returns the loss, or -1 when the buffer is too small. */
double dccl_q_train(dccl_q_network* q, dccl_rng* rng, dccl_q_sample_builder build, void* agent);
/* Q of `count` actions (action features, count x DCCL_ACTION_FEATURES) in one state, with the online
 * network; the state's share of the first layer is computed once. */
void dccl_q_evaluate(dccl_q_network* q, const float* state, const float* actions, int count, float* out);

#endif
