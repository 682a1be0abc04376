/* bench/bench_nn.c: CPU time of the DQN's two operations on the learner thread: one training step
 * (minibatch of 32: forward, Huber loss, backward, clipping, Adam, target blend) and the evaluation
 * of a collective's candidate actions in one state (refresh_predictions in agents/config_agent.c).
 * Inputs are random features with the agent's shapes; the figures are medians over repetitions of
 * the per-operation thread CPU time. A checksum of the network's outputs after the run lets two
 * builds be checked for identical arithmetic (same seed, same checksum).
 * Usage: bench_nn [repetitions] [candidates]   (defaults 15, 64) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agents/q_network.h"
#include "../core/clock.h"
#include "../core/rng.h"
#include "../core/sorting.h"

#define TRAIN_STEPS_PER_REPETITION 500
#define EVALUATIONS_PER_REPETITION 2000

/* Random features of the agent's shapes and a reward near 0 (log latency ratios). */
static int random_sample(void* context, const dccl_replay_entry* entry, float* state, float* action, float* reward,
                         float* next_state, float* next_actions, int* next_count) {
  (void)entry, (void)next_state, (void)next_actions;
  dccl_rng* rng = context;
  for (int i = 0; i < DCCL_STATE_FEATURES; i++) state[i] = (float)(2 * dccl_rng_uniform(rng) - 1);
  for (int i = 0; i < DCCL_ACTION_FEATURES; i++) action[i] = dccl_rng_uniform(rng) < 0.3 ? 1.0f : 0.0f;
  *reward = (float)(0.2 * dccl_rng_normal(rng));
  *next_count = 0;
  return 1;
}

static double median(double* values, int n) {
  dccl_sort_doubles(values, (size_t)n);
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

int main(int argc, char** argv) {
  int repetitions = argc > 1 ? atoi(argv[1]) : 15;
  int candidates = argc > 2 ? atoi(argv[2]) : 64;
  if (repetitions < 1 || candidates < 1 || candidates > 4096) {
    fprintf(stderr, "usage: bench_nn [repetitions >= 1] [candidates 1-4096]\n");
    return 2;
  }
  dccl_rng rng, sample_rng;
  dccl_rng_seed(&rng, 1);
  dccl_rng_seed(&sample_rng, 2);
  dccl_q_options options;
  dccl_q_default_options(&options);
  dccl_q_network q;
  float* actions = malloc((size_t)candidates * DCCL_ACTION_FEATURES * sizeof(float));
  float* values = malloc((size_t)candidates * sizeof(float));
  double* train_us = malloc((size_t)repetitions * sizeof(double));
  double* evaluate_us = malloc((size_t)repetitions * sizeof(double));
  if (actions == NULL || values == NULL || train_us == NULL || evaluate_us == NULL || dccl_q_init(&q, &options, &rng) != 0) {
    fprintf(stderr, "bench_nn: out of memory\n");
    return 1;
  }
  dccl_replay_entry entry;
  memset(&entry, 0, sizeof(entry));
  for (int i = 0; i < DCCL_Q_BATCH * 4; i++) dccl_q_remember(&q, &entry);
  for (int i = 0; i < candidates * DCCL_ACTION_FEATURES; i++) actions[i] = dccl_rng_uniform(&rng) < 0.3 ? 1.0f : 0.0f;
  float state[DCCL_STATE_FEATURES];
  for (int i = 0; i < DCCL_STATE_FEATURES; i++) state[i] = (float)(2 * dccl_rng_uniform(&rng) - 1);

  double checksum = 0;
  for (int r = 0; r < repetitions; r++) {
    uint64_t start = dccl_thread_cpu_ns();
    for (int s = 0; s < TRAIN_STEPS_PER_REPETITION; s++) checksum += dccl_q_train(&q, &rng, random_sample, &sample_rng);
    train_us[r] = (double)(dccl_thread_cpu_ns() - start) / 1000.0 / TRAIN_STEPS_PER_REPETITION;
    start = dccl_thread_cpu_ns();
    for (int e = 0; e < EVALUATIONS_PER_REPETITION; e++) {
      state[e % DCCL_STATE_FEATURES] += 1e-3f; /* a new state each time, as cells change */
      dccl_q_evaluate(&q, state, actions, candidates, values);
      checksum += values[e % candidates];
    }
    evaluate_us[r] = (double)(dccl_thread_cpu_ns() - start) / 1000.0 / EVALUATIONS_PER_REPETITION;
  }
  printf("DQN %d -> %d -> %d -> 1, %d repetitions (thread CPU time, medians)\n", DCCL_Q_INPUTS, DCCL_Q_HIDDEN1,
         DCCL_Q_HIDDEN2, repetitions);
  printf("  training step (minibatch %d)          %8.2f us\n", DCCL_Q_BATCH, median(train_us, repetitions));
  printf("  evaluation of %4d candidates          %8.2f us\n", candidates, median(evaluate_us, repetitions));
  printf("  checksum %.9g (equal across builds of the same arithmetic)\n", checksum);
  dccl_q_free(&q);
  free(actions);
  free(values);
  free(train_us);
  free(evaluate_us);
  return 0;
}
