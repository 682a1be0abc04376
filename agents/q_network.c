/* agents/q_network.c: the DQN: replay buffer, Double-DQN targets, Huber loss, Adam, target network. */
#include "q_network.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../nn/loss.h"

static const int layer_sizes[4] = {DCCL_Q_INPUTS, DCCL_Q_HIDDEN1, DCCL_Q_HIDDEN2, 1};

void dccl_q_default_options(dccl_q_options* o) {
  o->learning_rate = 3e-3;
  o->gamma = 0.0;
  o->tau = 0.01;
  o->huber_delta = 1.0;
  o->gradient_clip = 5.0;
  o->replay_capacity = 32768;
}

int dccl_q_init(dccl_q_network* q, const dccl_q_options* options, dccl_rng* rng) {
  memset(q, 0, sizeof(*q));
  q->options = *options;
  size_t count = dccl_mlp_param_count(layer_sizes, 3);
  if (dccl_params_init(&q->online, count) != 0 || dccl_params_init(&q->target, count) != 0 ||
      dccl_mlp_init(&q->online_mlp, &q->online, layer_sizes, 3, DCCL_Q_BATCH, rng) != 0 ||
      dccl_mlp_init(&q->target_mlp, &q->target, layer_sizes, 3, DCCL_Q_NEXT_CANDIDATES, rng) != 0) {
    dccl_q_free(q);
    return -1;
  }
  /* Predictions start at 0 (no better or worse than NCCL) until data says otherwise. */
  memset(q->online_mlp.layers[2].w, 0, DCCL_Q_HIDDEN2 * sizeof(float));
  dccl_params_copy_values(&q->target, &q->online);
  q->replay = calloc((size_t)options->replay_capacity, sizeof(dccl_replay_entry));
  if (q->replay == NULL) {
    dccl_q_free(q);
    return -1;
  }
  return 0;
}

void dccl_q_free(dccl_q_network* q) {
  dccl_mlp_free(&q->online_mlp);
  dccl_mlp_free(&q->target_mlp);
  dccl_params_free(&q->online);
  dccl_params_free(&q->target);
  free(q->replay);
  q->replay = NULL;
}

size_t dccl_q_memory_bytes(const dccl_q_network* q) {
  return dccl_params_memory_bytes(&q->online) + dccl_params_memory_bytes(&q->target) +
         dccl_mlp_memory_bytes(&q->online_mlp) + dccl_mlp_memory_bytes(&q->target_mlp) +
         (size_t)q->options.replay_capacity * sizeof(dccl_replay_entry);
}

void dccl_q_remember(dccl_q_network* q, const dccl_replay_entry* entry) {
  q->replay[q->replay_head] = *entry;
  q->replay_head = (q->replay_head + 1) % q->options.replay_capacity;
  if (q->replay_count < q->options.replay_capacity) q->replay_count++;
  q->samples_seen++;
}

double dccl_q_train(dccl_q_network* q, dccl_rng* rng, dccl_q_sample_builder build, void* agent) {
  if (q->replay_count < DCCL_Q_BATCH * 4) return -1;
  int n = 0;
  float next_state[DCCL_STATE_FEATURES], next_actions[DCCL_Q_NEXT_CANDIDATES * DCCL_ACTION_FEATURES];
  for (int attempt = 0; attempt < DCCL_Q_BATCH * 4 && n < DCCL_Q_BATCH; attempt++) {
    /* Half the minibatch replays experiences; the other half asks the agent for a summary sample
     * (entry NULL), which keeps rare actions from drowning in the frequent ones. */
    const dccl_replay_entry* e = (n & 1) ? NULL : &q->replay[dccl_rng_below(rng, (uint64_t)q->replay_count)];
    float* input = q->inputs + (size_t)n * DCCL_Q_INPUTS;
    float reward;
    int next_count = 0;
    if (!build(agent, e, input, input + DCCL_STATE_FEATURES, &reward, next_state, next_actions, &next_count)) continue;
    double target = reward;
    if (q->options.gamma > 0 && next_count > 0) {
      /* Double DQN: the online network picks the next action, the target network values it. */
      for (int k = 0; k < next_count; k++) {
        memcpy(q->next_inputs + (size_t)k * DCCL_Q_INPUTS, next_state, sizeof(next_state));
        memcpy(q->next_inputs + (size_t)k * DCCL_Q_INPUTS + DCCL_STATE_FEATURES, next_actions + k * DCCL_ACTION_FEATURES,
               DCCL_ACTION_FEATURES * sizeof(float));
      }
      float online_values[DCCL_Q_NEXT_CANDIDATES];
      dccl_q_evaluate(q, next_state, next_actions, next_count, online_values);
      int best = 0;
      for (int k = 1; k < next_count; k++)
        if (online_values[k] > online_values[best]) best = k;
      const float* value = dccl_mlp_forward(&q->target_mlp, q->next_inputs + (size_t)best * DCCL_Q_INPUTS, 1);
      target += q->options.gamma * value[0];
    }
    q->targets[n++] = (float)target;
  }
  if (n == 0) return -1;
  const float* prediction = dccl_mlp_forward(&q->online_mlp, q->inputs, n);
  double loss = dccl_huber(prediction, q->targets, q->gradients, n, q->options.huber_delta);
  dccl_mlp_backward(&q->online_mlp, &q->online, q->gradients, NULL, n);
  dccl_params_clip(&q->online, q->options.gradient_clip);
  dccl_params_adam(&q->online, q->options.learning_rate, 0.9, 0.999, 1e-8);
  dccl_params_blend(&q->target, &q->online, q->options.tau);
  q->training_steps++;
  q->last_loss = loss;
  return loss;
}

#define EVALUATE_CHUNK 32

void dccl_q_evaluate(dccl_q_network* q, const float* state, const float* actions, int count, float* out) {
  const dccl_dense* l1 = &q->online_mlp.layers[0];
  const dccl_dense* l2 = &q->online_mlp.layers[1];
  const dccl_dense* l3 = &q->online_mlp.layers[2];
  /* The first layer's state half is shared by every candidate: computed once. */
  float state_part[DCCL_Q_HIDDEN1];
  dccl_affine_rows(l1->w, DCCL_Q_INPUTS, l1->b, DCCL_STATE_FEATURES, state, DCCL_STATE_FEATURES, state_part,
                   DCCL_Q_HIDDEN1, DCCL_Q_HIDDEN1, 1);
  for (int first = 0; first < count; first += EVALUATE_CHUNK) {
    int rows = count - first < EVALUATE_CHUNK ? count - first : EVALUATE_CHUNK;
    float h1[EVALUATE_CHUNK * DCCL_Q_HIDDEN1], h2[EVALUATE_CHUNK * DCCL_Q_HIDDEN2];
    dccl_affine_rows(l1->w + DCCL_STATE_FEATURES, DCCL_Q_INPUTS, state_part, DCCL_ACTION_FEATURES,
                     actions + (size_t)first * DCCL_ACTION_FEATURES, DCCL_ACTION_FEATURES, h1, DCCL_Q_HIDDEN1,
                     DCCL_Q_HIDDEN1, rows);
    dccl_relu(h1, rows * DCCL_Q_HIDDEN1);
    dccl_affine_rows(l2->w, DCCL_Q_HIDDEN1, l2->b, DCCL_Q_HIDDEN1, h1, DCCL_Q_HIDDEN1, h2, DCCL_Q_HIDDEN2,
                     DCCL_Q_HIDDEN2, rows);
    dccl_relu(h2, rows * DCCL_Q_HIDDEN2);
    dccl_affine_rows(l3->w, DCCL_Q_HIDDEN2, l3->b, DCCL_Q_HIDDEN2, h2, DCCL_Q_HIDDEN2, out + first, 1, 1, rows);
  }
}
