/* sim/sim.c: the simulated cluster facade and the cached oracle. */
#include "sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dccl_sim_init(dccl_sim* sim, const dccl_profile* profile, const dccl_schedule* schedule, uint64_t seed,
                  uint64_t horizon, char* error, size_t error_size) {
  memset(sim, 0, sizeof(*sim));
  sim->profile = *profile;
  sim->seed = seed;
  dccl_nccl_model_init(&sim->model, &sim->profile);
  if (schedule != NULL) {
    sim->schedule = *schedule;
    sim->schedule.segments = NULL;
    sim->schedule.n_segments = 0;
  }
  if (dccl_schedule_build(&sim->schedule, seed, horizon) != 0) {
    snprintf(error, error_size, "out of memory expanding the conditions schedule");
    return -1;
  }
  return 0;
}

void dccl_sim_free(dccl_sim* sim) { dccl_schedule_free(&sim->schedule); }

size_t dccl_sim_conditions(const dccl_sim* sim, uint64_t call, size_t* hint, dccl_conditions* out) {
  return dccl_schedule_at(&sim->schedule, call, hint, out);
}

int dccl_sim_execute(const dccl_sim* sim, const dccl_call* call, dccl_action action, dccl_execution* out) {
  return dccl_nccl_execute(&sim->model, call->coll, call->bytes, call->pipe_ops, action, out);
}

double dccl_sim_true_us(const dccl_sim* sim, const dccl_call* call, const dccl_execution* execution,
                        const dccl_conditions* conditions) {
  return dccl_truth_latency_us(&sim->profile, call->coll, call->bytes, call->pipe_ops, execution, conditions);
}

/* The factor of a burst of slow calls over `call` (1: none): a burst starts at a call with the profile's
 * probability, lasts 3 to burst_calls calls (3 + floor(u^2 (burst_calls - 2)), u uniform: shorter ones
 * likelier) and slows each of its calls by burst_scale / 4 to burst_scale (uniform), every action and
 * rank alike: the GPU machine's disturbances, as measured in docs/simulator.md. */
static double burst_factor(const dccl_sim* sim, uint64_t call) {
  const dccl_truth_params* t = &sim->profile.truth;
  int longest = (int)t->burst_calls;
  for (int back = 0; back < longest && (uint64_t)back <= call; back++) {
    dccl_rng rng;
    dccl_rng_seed(&rng, dccl_mix64(sim->seed ^ dccl_mix64((call - (uint64_t)back) ^ 0xB0B5B0B5ull)));
    if (dccl_rng_uniform(&rng) >= t->burst_probability) continue;
    double u = dccl_rng_uniform(&rng);
    if (back >= 3 + (int)floor(u * u * (longest - 2))) continue;
    dccl_rng_seed(&rng, dccl_mix64(sim->seed ^ dccl_mix64(call ^ 0xB0B5F00Dull)));
    return t->burst_scale * (0.25 + 0.75 * dccl_rng_uniform(&rng));
  }
  return 1.0;
}

double dccl_sim_measure(const dccl_sim* sim, int coll, double bytes, double true_us, const dccl_conditions* conditions,
                        uint64_t call, int rank) {
  dccl_rng rng;
  dccl_rng_seed(&rng, dccl_mix64(sim->seed ^ dccl_mix64(call)));
  double sigma = dccl_profile_noise_sigma(&sim->profile, coll, bytes);
  double shared = dccl_truth_measure(&sim->profile, sigma, true_us, conditions, &rng);
  const dccl_truth_params* t = &sim->profile.truth;
  if (t->drift_sigma > 0 && t->drift_calls >= 1) {
    /* The machine's slow drift (other processes, where threads land): one factor per segment of calls,
     * the same for every action and rank, as measured between sets of processes on the GPU machine. */
    uint64_t segment = (uint64_t)((double)call / t->drift_calls);
    dccl_rng_seed(&rng, dccl_mix64(sim->seed ^ dccl_mix64(segment ^ 0xD1F7D1F7ull)));
    shared *= exp(t->drift_sigma * dccl_rng_normal(&rng));
  }
  if (t->burst_probability > 0) shared *= burst_factor(sim, call);
  dccl_rng_seed(&rng, dccl_mix64(sim->seed ^ dccl_mix64(call) ^ dccl_mix64(0xA5A5u + (uint64_t)rank)));
  return shared * exp(0.25 * sigma * dccl_rng_normal(&rng));
}

double dccl_sim_run_factor(const dccl_sim* sim, const dccl_call* call, const dccl_execution* e) {
  const dccl_profile* p = &sim->profile;
  if (p->n_noise_points == 0) return 1.0;
  double level = dccl_profile_noise_level(p, call->coll, (double)call->bytes);
  double amplitude = dccl_profile_noise_alternation(p, call->coll, e->algo, e->proto, (double)call->bytes);
  if (level <= 0 && amplitude <= 0) return 1.0;
  uint64_t start = call->run_start <= call->index ? call->run_start : call->index;
  dccl_rng rng;
  dccl_rng_seed(&rng, dccl_mix64(sim->seed ^ dccl_mix64(start ^ 0x1E7E1A17ull)));
  double log_factor = level * dccl_rng_normal(&rng);
  if (amplitude > 0) {
    int slow = (dccl_rng_uniform(&rng) < 0.5) ^ (int)((call->index - start) & 1);
    log_factor += (slow ? amplitude : -amplitude) - log(cosh(amplitude));
  }
  return exp(log_factor);
}

/* One form's share for a call: the profile's, drawn per call with its spread (normal, clipped to [0, 0.9]),
 * the same for every rank of a call (it is the call's work); the tag, mixed with the call, keeps the draw
 * apart from the call's latency noise (seeded by the call) and from the other form's. */
static double draw_share(const dccl_sim* sim, const dccl_call* call, const dccl_execution* e, int channels, int form,
                         uint64_t tag) {
  double spread;
  double share = dccl_profile_leftover(&sim->profile, form, call->coll, e->algo, e->proto, channels,
                                       (double)call->bytes, &spread);
  if (share <= 0 || spread <= 0) return share;
  dccl_rng rng;
  dccl_rng_seed(&rng, dccl_mix64(sim->seed ^ dccl_mix64(call->index ^ tag)));
  share *= 1 + spread * dccl_rng_normal(&rng);
  return share < 0 ? 0 : share > 0.9 ? 0.9 : share;
}

void dccl_sim_leftover(const dccl_sim* sim, const dccl_call* call, const dccl_execution* e, double* later, double* longer) {
  /* The work left behind is that of the measured group the call's latency comes from. */
  int channels = dccl_truth_measured_channels(&sim->profile, call->coll, (double)call->bytes, e);
  *later = draw_share(sim, call, e, channels, DCCL_LEFTOVER_LATER, 0x1EF7E1EFull);
  *longer = draw_share(sim, call, e, channels, DCCL_LEFTOVER_LONGER, 0x10E6E410ull);
  if (*later + *longer > 0.9) *longer = 0.9 - *later; /* the kernel keeps a tenth of its call at least */
}

/* ---- oracle ---- */

struct dccl_oracle_entry {
  int used;
  int coll, pipe_ops;
  size_t bytes;
  double congestion, interference;
  dccl_oracle_answer answer;
};

#define ORACLE_CACHE_ENTRIES 8192

int dccl_oracle_init(dccl_oracle* o, const dccl_sim* sim, const dccl_action_space_options* options) {
  memset(o, 0, sizeof(*o));
  o->sim = sim;
  o->options = *options;
  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++) {
    int n = dccl_action_space_build(coll, sim->profile.n_ranks, sim->profile.n_nodes, options, NULL, 0);
    o->actions[coll] = malloc((size_t)(n > 0 ? n : 1) * sizeof(dccl_action));
    if (o->actions[coll] == NULL) {
      dccl_oracle_free(o);
      return -1;
    }
    o->n_actions[coll] =
      dccl_action_space_build(coll, sim->profile.n_ranks, sim->profile.n_nodes, options, o->actions[coll], n);
  }
  o->cache = calloc(ORACLE_CACHE_ENTRIES, sizeof(dccl_oracle_entry));
  if (o->cache == NULL) {
    dccl_oracle_free(o);
    return -1;
  }
  o->cache_mask = ORACLE_CACHE_ENTRIES - 1;
  return 0;
}

void dccl_oracle_free(dccl_oracle* o) {
  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++) free(o->actions[coll]);
  free(o->cache);
  memset(o, 0, sizeof(*o));
}

static uint64_t hash_double(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof(bits));
  return bits;
}

static void search(dccl_oracle* o, const dccl_call* call, const dccl_conditions* c, dccl_oracle_answer* out) {
  const dccl_sim* sim = o->sim;
  float cost[DCCL_NUM_ALGOS * DCCL_NUM_PROTOS];
  dccl_nccl_cost_table(&sim->model, call->coll, call->bytes, call->pipe_ops, cost);
  memset(out, 0, sizeof(*out));
  out->best = DCCL_ACTION_NCCL;
  out->best_us = INFINITY;
  out->default_us = INFINITY;
  if (dccl_sim_execute(sim, call, DCCL_ACTION_NCCL, &out->default_execution) == 0) {
    out->default_us = dccl_sim_true_us(sim, call, &out->default_execution, c);
    out->best_us = out->default_us;
    out->best_execution = out->default_execution;
  }
  for (int i = 0; i < o->n_actions[call->coll]; i++) {
    dccl_action action = o->actions[call->coll][i];
    if (cost[dccl_action_algo(action) * DCCL_NUM_PROTOS + dccl_action_proto(action)] < 0.0f) continue;
    dccl_execution e;
    if (dccl_sim_execute(sim, call, action, &e) != 0) continue;
    double us = dccl_sim_true_us(sim, call, &e, c);
    if (us < out->best_us) {
      out->best_us = us;
      out->best = action;
      out->best_execution = e;
    }
  }
}

void dccl_oracle_query(dccl_oracle* o, const dccl_call* call, const dccl_conditions* c, dccl_oracle_answer* out) {
  uint64_t h = dccl_mix64((uint64_t)call->coll * 0x9E3779B97F4A7C15ULL ^ (uint64_t)call->bytes ^
                          ((uint64_t)call->pipe_ops << 48) ^ dccl_mix64(hash_double(c->congestion)) ^
                          dccl_mix64(hash_double(c->interference) + 1));
  dccl_oracle_entry* entry = &o->cache[h & o->cache_mask];
  if (entry->used && entry->coll == call->coll && entry->bytes == call->bytes && entry->pipe_ops == call->pipe_ops &&
      entry->congestion == c->congestion && entry->interference == c->interference) {
    o->hits++;
    *out = entry->answer;
    return;
  }
  o->misses++;
  search(o, call, c, out);
  entry->used = 1;
  entry->coll = call->coll;
  entry->bytes = call->bytes;
  entry->pipe_ops = call->pipe_ops;
  entry->congestion = c->congestion;
  entry->interference = c->interference;
  entry->answer = *out;
}
