/* bench/bench_trigger.c: measures Agent-1, the congestion trigger, on simulated latency streams, LSTM+CUSUM
 * (use_lstm = 1) against plain CUSUM (use_lstm = 0) on identical inputs: (a) the average run length to a
 * false alarm (ARL) on calm streams, (b) the detection delay after a slowdown of at least 20%.
 *
 * Streams: for each hardware profile, four (collective, size) streams, interleaved call by call into one
 * trigger per (profile, detector), as the plugin feeds its single trigger (the LSTM is shared and trained
 * on all of them). Each stream switches between three actions (NCCL's choice and the two fastest other
 * actions) every 100-500 of its calls, as a learner would; NCCL's choice is keyed by what NCCL ran, like
 * plugin/learner.c. Latencies are the simulator's true latencies through its noise model
 * (dccl_sim_measure: log-normal noise of the profile's sigma, wider under congestion, rare outliers).
 * The inter-call gap is passed as 0 (unknown).
 *
 * (a) ARL: --calls calm calls per stream. After a false onset the stream is restored to its last calm
 *     snapshot (the usual restart after an alarm; a stream left in "congested" would hide later alarms).
 *     The calm calls of the delay trials count too. ARL = calm calls / max(1, false alarms).
 * (b) Delay: --trials trials per slowdown. Each restores every stream to its calm state at the end of
 *     (a), runs 200-500 calm calls per stream with fresh noise and actions, then slows all streams at
 *     once; a stream's delay is its calls from the first slowed one to its onset event, inclusive (none
 *     within 2000 calls is a miss). Slowdowns:
 *       cond : a simulator condition per stream: the lowest network congestion level (0.1 steps) that
 *              slows each of its three actions by >= 20% (true latency); when none does (intra-node
 *              profiles, latency-bound sizes) the lowest compute interference level that does; "-" when
 *              neither reaches 20% (that stream stays calm in these trials);
 *       x1.2, x1.5 : the calm measurement multiplied by 1.2 and 1.5.
 * Both detectors see the same noise, actions and onset points (everything derives from --seed).
 *
 * Usage: bench_trigger [--calls N] [--trials N] [--seed S]   (defaults 200000, 200, 1) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agents/trigger.h"
#include "../core/action.h"
#include "../core/clock.h"
#include "../core/decision_table.h"
#include "../core/rng.h"
#include "../sim/sim.h"

#define N_ACTIONS 3
#define DELAY_CAP 2000
#define ARL_TARGET 100000.0
#define DELAY_TARGET 20
#define SNAPSHOT_EVERY 1000

enum { KIND_COND = 0, KIND_X12 = 1, KIND_X15 = 2, N_KINDS = 3 };

/* The profiles measured (--profiles replaces them; e.g. h100-sockets-2ranks-replay, the GPU machine's
 * measured latencies, per-call noise and drift). */
#define MAX_PROFILES 16
static const char* profile_names[MAX_PROFILES] = {"pcie-8gpu", "roce-16x1", "h100-2x8-ib", "sockets-1gpu-4ranks"};
static int n_profiles = 4;

typedef struct stream_spec {
  const char* label;
  int coll;
  size_t bytes;
} stream_spec;

static const stream_spec stream_specs[] = {
  {"allreduce 64K", DCCL_COLL_ALLREDUCE, (size_t)64 << 10},
  {"allreduce 4M", DCCL_COLL_ALLREDUCE, (size_t)4 << 20},
  {"allreduce 256M", DCCL_COLL_ALLREDUCE, (size_t)256 << 20},
  {"allgather 1M", DCCL_COLL_ALLGATHER, (size_t)1 << 20},
};
#define N_STREAMS ((int)(sizeof(stream_specs) / sizeof(stream_specs[0])))

/* One stream on one profile: its actions, their true latencies calm and under the chosen condition. */
typedef struct stream_setup {
  const dccl_sim* sim;
  dccl_call call;
  int size_bin;
  dccl_action keys[N_ACTIONS]; /* what the trigger is told ran */
  double calm_us[N_ACTIONS], slow_us[N_ACTIONS];
  dccl_conditions calm, slow;
  int slow_kind;      /* 0 congestion, 1 interference, -1 none reaches 20% */
  double slow_level;  /* condition level */
  double slow_ratio;  /* smallest true-latency ratio over the actions */
  double max_ratio;   /* when none reaches 20%: the best smallest ratio any level gives */
} stream_setup;

/* Which action runs: a new one (never the current) every 100-500 calls. */
typedef struct action_schedule {
  dccl_rng rng;
  int current, left;
} action_schedule;

/* What one detector did on one stream of one profile. */
typedef struct stream_result {
  double calls, alarms; /* calm calls and false onsets */
  double run_alarms;    /* of which in the long calm run (a), the rest in trial lead-ins */
  int* delays[N_KINDS];
  int n_delays[N_KINDS];
} stream_result;

typedef struct detector_totals {
  double calls, alarms, run_calls, run_alarms, seconds, observations, training_steps;
  double forecast_square, forecasts;
  int* delays[N_KINDS];
  int n_delays[N_KINDS];
} detector_totals;

static uint64_t derive_seed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return dccl_mix64(seed ^ dccl_mix64(a + 1) ^ dccl_mix64((b + 1) << 8) ^ dccl_mix64((c + 1) << 16) ^
                    dccl_mix64((d + 1) << 24));
}

static void schedule_init(action_schedule* s, uint64_t seed) {
  dccl_rng_seed(&s->rng, seed);
  s->current = (int)dccl_rng_below(&s->rng, N_ACTIONS);
  s->left = 100 + (int)dccl_rng_below(&s->rng, 401);
}

static int schedule_next(action_schedule* s) {
  if (s->left-- <= 0) {
    s->current = (s->current + 1 + (int)dccl_rng_below(&s->rng, N_ACTIONS - 1)) % N_ACTIONS;
    s->left = 100 + (int)dccl_rng_below(&s->rng, 401);
  }
  return s->current;
}

static double true_us(const stream_setup* st, dccl_action action, const dccl_conditions* c) {
  dccl_execution e;
  if (dccl_sim_execute(st->sim, &st->call, action, &e) != 0) return INFINITY;
  return dccl_sim_true_us(st->sim, &st->call, &e, c);
}

static double min_ratio(const stream_setup* st, const dccl_action* actions, const dccl_conditions* c) {
  double r = INFINITY;
  for (int a = 0; a < N_ACTIONS; a++) {
    double x = true_us(st, actions[a], c) / st->calm_us[a];
    if (x < r) r = x;
  }
  return r;
}

/* Picks the stream's actions (NCCL's choice and the two fastest distinct others) and its condition. */
static int setup_stream(stream_setup* st, const dccl_sim* sim, const stream_spec* spec) {
  memset(st, 0, sizeof(*st));
  st->sim = sim;
  st->call = (dccl_call){.coll = spec->coll, .bytes = spec->bytes, .pipe_ops = 1};
  st->size_bin = dccl_size_bin(spec->bytes);
  dccl_action actions[N_ACTIONS];
  dccl_execution nccl;
  if (dccl_sim_execute(sim, &st->call, DCCL_ACTION_NCCL, &nccl) != 0) return -1;
  actions[0] = DCCL_ACTION_NCCL;
  st->keys[0] = dccl_action_make(nccl.algo, nccl.proto, 0, 0);
  st->calm_us[0] = dccl_sim_true_us(sim, &st->call, &nccl, &st->calm);

  dccl_action_space_options options = {.max_channels = 32, .tune_chunk = 0};
  static dccl_action space[4096];
  int n = dccl_action_space_build(spec->coll, sim->profile.n_ranks, sim->profile.n_nodes, &options, space, 4096);
  if (n > 4096) n = 4096;
  int picked = 1;
  for (; picked < N_ACTIONS; picked++) {
    double best = INFINITY;
    dccl_action best_action = DCCL_ACTION_NCCL;
    for (int i = 0; i < n; i++) {
      dccl_execution e;
      if (dccl_sim_execute(sim, &st->call, space[i], &e) != 0) continue;
      if (e.algo != dccl_action_algo(space[i]) || e.proto != dccl_action_proto(space[i])) continue; /* not run */
      if (e.algo == nccl.algo && e.proto == nccl.proto && e.channels == nccl.channels && e.chunk == nccl.chunk)
        continue; /* same as NCCL's choice */
      int taken = space[i] == st->keys[0];
      for (int j = 1; j < picked; j++) taken |= space[i] == actions[j];
      if (taken) continue;
      double us = dccl_sim_true_us(sim, &st->call, &e, &st->calm);
      if (us < best) {
        best = us;
        best_action = space[i];
      }
    }
    if (!isfinite(best)) return -1;
    actions[picked] = best_action;
    st->keys[picked] = best_action;
    st->calm_us[picked] = best;
  }

  /* The slowdown condition: lowest congestion, else interference, level slowing every action >= 20%. */
  st->slow_kind = -1;
  for (int kind = 0; kind < 2 && st->slow_kind < 0; kind++)
    for (int step = 1; step <= 10; step++) {
      dccl_conditions c = {kind == 0 ? 0.1 * step : 0.0, kind == 1 ? 0.1 * step : 0.0};
      double r = min_ratio(st, actions, &c);
      if (r > st->max_ratio) st->max_ratio = r;
      if (r >= 1.2) {
        st->slow_kind = kind;
        st->slow_level = 0.1 * step;
        st->slow_ratio = r;
        st->slow = c;
        break;
      }
    }
  for (int a = 0; a < N_ACTIONS; a++) st->slow_us[a] = st->slow_kind >= 0 ? true_us(st, actions[a], &st->slow) : 0;
  return 0;
}

/* One call of the stream: a noisy measurement, calm or slowed, fed to the trigger. Returns the event. */
static int feed(dccl_trigger* t, const stream_setup* st, action_schedule* sched, uint64_t call_index, int slow_kind,
                int slowed) {
  int a = schedule_next(sched);
  double us;
  if (slowed && slow_kind == KIND_COND) {
    us = dccl_sim_measure(st->sim, st->call.coll, (double)st->call.bytes, st->slow_us[a], &st->slow, call_index, 0);
  } else {
    us = dccl_sim_measure(st->sim, st->call.coll, (double)st->call.bytes, st->calm_us[a], &st->calm, call_index, 0);
    if (slowed) us *= slow_kind == KIND_X12 ? 1.2 : 1.5;
  }
  dccl_trigger_result r;
  dccl_trigger_observe(t, st->call.coll, st->size_bin, st->keys[a], us, 0.0, &r);
  return r.event;
}

static int compare_ints(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values. */
static int percentile(const int* sorted, int n, double p) {
  if (n == 0) return -1;
  int rank = (int)ceil(p * n);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return sorted[rank - 1];
}

static void format_delay(int d, char* buffer, size_t size) {
  if (d < 0) snprintf(buffer, size, "-");
  else if (d > DELAY_CAP) snprintf(buffer, size, ">%d", DELAY_CAP);
  else snprintf(buffer, size, "%d", d);
}

static void format_arl(double calls, double alarms, char* buffer, size_t size) {
  if (alarms == 0) snprintf(buffer, size, ">=%.0f", calls);
  else snprintf(buffer, size, "%.0f", calls / alarms);
}

/* Median, p90 and misses of n delays (sorted in place) as "med p90 miss". */
static void format_delays(int* delays, int n, char* buffer, size_t size) {
  if (n == 0) {
    snprintf(buffer, size, "%5s %5s %4s", "-", "-", "-");
    return;
  }
  qsort(delays, (size_t)n, sizeof(int), compare_ints);
  int misses = 0;
  for (int i = 0; i < n; i++) misses += delays[i] > DELAY_CAP;
  char med[16], p90[16];
  format_delay(percentile(delays, n, 0.5), med, sizeof(med));
  format_delay(percentile(delays, n, 0.9), p90, sizeof(p90));
  snprintf(buffer, size, "%5s %5s %4d", med, p90, misses);
}

static void usage(void) {
  fprintf(stderr, "usage: bench_trigger [--calls N] [--trials N] [--seed S] [--profiles LIST]\n");
}

static dccl_trigger_stream* stream_of(dccl_trigger* t, const stream_setup* st) {
  return &t->streams[st->call.coll * DCCL_SIZE_BINS + st->size_bin];
}

/* After an onset in calm conditions: count it and restart the stream from its calm snapshot. */
static void false_alarm(dccl_trigger_stream* stream, const dccl_trigger_stream* snapshot, stream_result* r) {
  r->alarms++;
  *stream = *snapshot;
  dccl_cusum_reset(&stream->cusum);
}

/* One detector on the streams of one profile (`valid` marks the streams that have three actions). */
static int run_detector(int use_lstm, const stream_setup* setups, const int* valid, int profile, long calls,
                        long trials, uint64_t seed, stream_result* results, detector_totals* totals) {
  double start = dccl_monotonic_seconds();
  dccl_trigger_options options;
  dccl_trigger_default_options(&options);
  options.use_lstm = use_lstm;
  options.seed = derive_seed(seed, (uint64_t)profile, 0, 7, 0);
  static dccl_trigger trigger;
  if (dccl_trigger_init(&trigger, &options) != 0) return -1;
  dccl_trigger_stream* streams[N_STREAMS];
  dccl_trigger_stream snapshots[N_STREAMS]; /* the fresh stream until a calm snapshot exists */
  action_schedule scheds[N_STREAMS];
  for (int s = 0; s < N_STREAMS; s++) {
    if (!valid[s]) continue;
    streams[s] = stream_of(&trigger, &setups[s]);
    snapshots[s] = *streams[s];
    schedule_init(&scheds[s], derive_seed(seed, (uint64_t)profile, (uint64_t)s, 1, 0));
    memset(&results[s], 0, sizeof(results[s]));
    for (int k = 0; k < N_KINDS; k++) {
      results[s].delays[k] = malloc((size_t)trials * sizeof(int));
      if (results[s].delays[k] == NULL) return -1;
    }
  }

  /* (a) calm run, streams interleaved call by call. */
  for (long i = 0; i < calls; i++)
    for (int s = 0; s < N_STREAMS; s++) {
      if (!valid[s]) continue;
      uint64_t index = (uint64_t)i * N_STREAMS + (uint64_t)s;
      if (feed(&trigger, &setups[s], &scheds[s], index, 0, 0) == DCCL_TRIGGER_EVENT_ONSET) {
        false_alarm(streams[s], &snapshots[s], &results[s]);
        results[s].run_alarms++;
      }
      results[s].calls++;
      if (use_lstm && i >= 1000 && streams[s]->calm_count > 1000) {
        totals->forecast_square += (double)streams[s]->forecast * streams[s]->forecast;
        totals->forecasts++;
      }
      if (i % SNAPSHOT_EVERY == SNAPSHOT_EVERY - 1 && streams[s]->state == DCCL_TRIGGER_NONE &&
          streams[s]->calm_count >= 1000)
        snapshots[s] = *streams[s];
    }
  for (int s = 0; s < N_STREAMS; s++)
    if (valid[s] && streams[s]->state == DCCL_TRIGGER_NONE) snapshots[s] = *streams[s];

  /* (b) delay trials: all streams restored, calm lead-in, then every slowed stream until its onset. */
  for (int k = 0; k < N_KINDS; k++)
    for (long trial = 0; trial < trials; trial++) {
      dccl_rng trial_rng;
      dccl_rng_seed(&trial_rng, derive_seed(seed, (uint64_t)profile, 99, 2 + (uint64_t)k, (uint64_t)trial));
      int lead = 200 + (int)dccl_rng_below(&trial_rng, 301);
      uint64_t base = ((uint64_t)1 << 40) + (((uint64_t)k * (uint64_t)trials + (uint64_t)trial) << 16);
      int slowed[N_STREAMS], delay[N_STREAMS], pending = 0;
      for (int s = 0; s < N_STREAMS; s++) {
        if (!valid[s]) continue;
        *streams[s] = snapshots[s];
        dccl_cusum_reset(&streams[s]->cusum);
        schedule_init(&scheds[s], derive_seed(seed, (uint64_t)profile, (uint64_t)s, 2 + (uint64_t)k, (uint64_t)trial));
        slowed[s] = k != KIND_COND || setups[s].slow_kind >= 0;
        delay[s] = 0;
        pending += slowed[s];
      }
      for (int j = 0; j < lead + DELAY_CAP && (j < lead || pending > 0); j++)
        for (int s = 0; s < N_STREAMS; s++) {
          if (!valid[s]) continue;
          int slow = j >= lead && slowed[s];
          uint64_t index = base + (uint64_t)j * N_STREAMS + (uint64_t)s;
          int event = feed(&trigger, &setups[s], &scheds[s], index, k, slow);
          if (!slow) {
            results[s].calls++;
            if (event == DCCL_TRIGGER_EVENT_ONSET) false_alarm(streams[s], &snapshots[s], &results[s]);
          } else if (delay[s] == 0 && event == DCCL_TRIGGER_EVENT_ONSET) {
            delay[s] = j - lead + 1;
            pending--;
          }
        }
      for (int s = 0; s < N_STREAMS; s++)
        if (valid[s] && slowed[s]) results[s].delays[k][results[s].n_delays[k]++] = delay[s] > 0 ? delay[s] : DELAY_CAP + 1;
    }

  totals->observations += (double)trigger.observations;
  totals->training_steps += (double)trigger.training_steps;
  dccl_trigger_free(&trigger);
  for (int s = 0; s < N_STREAMS; s++) {
    if (!valid[s]) continue;
    totals->calls += results[s].calls;
    totals->alarms += results[s].alarms;
    totals->run_calls += (double)calls;
    totals->run_alarms += results[s].run_alarms;
    for (int k = 0; k < N_KINDS; k++) {
      memcpy(totals->delays[k] + totals->n_delays[k], results[s].delays[k], (size_t)results[s].n_delays[k] * sizeof(int));
      totals->n_delays[k] += results[s].n_delays[k];
    }
  }
  totals->seconds += dccl_monotonic_seconds() - start;
  return 0;
}

int main(int argc, char** argv) {
  long calls = 200000, trials = 200;
  uint64_t seed = 1;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--calls") == 0) calls = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--trials") == 0) trials = atol(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) seed = strtoull(argv[++i], NULL, 0);
    else if (i + 1 < argc && strcmp(argv[i], "--profiles") == 0) {
      n_profiles = 0;
      for (char* name = strtok(argv[++i], ","); name != NULL && n_profiles < MAX_PROFILES; name = strtok(NULL, ","))
        profile_names[n_profiles++] = name;
      if (n_profiles == 0) {
        usage();
        return 2;
      }
    }
    else {
      usage();
      return 2;
    }
  }
  if (calls < 2000 || trials < 1 || trials > 100000) {
    usage();
    return 2;
  }

  static const char* const detector_names[2] = {"cusum", "lstm+cusum"};
  detector_totals totals[2];
  memset(totals, 0, sizeof(totals));
  size_t per_kind = (size_t)n_profiles * N_STREAMS * (size_t)trials;
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < N_KINDS; k++) {
      totals[d].delays[k] = malloc(per_kind * sizeof(int));
      if (totals[d].delays[k] == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
      }
    }

  printf("Agent-1 congestion trigger on simulated streams: %ld calm calls per stream, %ld trials per slowdown, "
         "seed %llu\n", calls, trials, (unsigned long long)seed);
  printf("ARL = calm calls / false onsets; delay = calls of the stream from the first slowed call to its onset "
         "(inclusive), median/p90, miss = none in %d\n", DELAY_CAP);
  printf("cond = simulator condition slowing all 3 actions of the stream >= 20%% (cong = network congestion, "
         "intf = compute interference, xR = smallest true slowdown of the 3; \"-\": no level reaches 20%%, xR = "
         "the best any level gives); x1.2/x1.5 = calm measurement times 1.2/1.5\n\n");
  printf("%-19s %-14s %-10s %10s %3s | %-16s %5s %5s %4s | x1.2 %5s %5s %4s | x1.5 %5s %5s %4s\n", "profile",
         "stream", "detector", "ARL", "FA", "cond", "med", "p90", "miss", "med", "p90", "miss", "med", "p90", "miss");

  static dccl_sim sim;
  for (int p = 0; p < n_profiles; p++) {
    char error[512];
    dccl_profile profile;
    if (dccl_profile_find(profile_names[p], &profile, error, sizeof(error)) != 0 ||
        dccl_sim_init(&sim, &profile, NULL, derive_seed(seed, (uint64_t)p, 0, 0, 0), 1, error, sizeof(error)) != 0) {
      fprintf(stderr, "%s\n", error);
      return 1;
    }
    stream_setup setups[N_STREAMS];
    int valid[N_STREAMS];
    for (int s = 0; s < N_STREAMS; s++) valid[s] = setup_stream(&setups[s], &sim, &stream_specs[s]) == 0;
    stream_result results[2][N_STREAMS];
    for (int d = 0; d < 2; d++)
      if (run_detector(d, setups, valid, p, calls, trials, seed, results[d], &totals[d]) != 0) {
        fprintf(stderr, "out of memory\n");
        return 1;
      }
    for (int s = 0; s < N_STREAMS; s++) {
      if (!valid[s]) {
        printf("%-19s %-14s (fewer than three runnable actions: skipped)\n", profile_names[p], stream_specs[s].label);
        continue;
      }
      char cond[32];
      if (setups[s].slow_kind < 0) snprintf(cond, sizeof(cond), "- (best x%.2f)", setups[s].max_ratio);
      else snprintf(cond, sizeof(cond), "%s %.1f x%.2f", setups[s].slow_kind == 0 ? "cong" : "intf",
                    setups[s].slow_level, setups[s].slow_ratio);
      for (int d = 0; d < 2; d++) {
        stream_result* r = &results[d][s];
        char arl[32], cells[N_KINDS][48];
        format_arl(r->calls, r->alarms, arl, sizeof(arl));
        for (int k = 0; k < N_KINDS; k++) format_delays(r->delays[k], r->n_delays[k], cells[k], sizeof(cells[k]));
        printf("%-19s %-14s %-10s %10s %3.0f | %-16s %s | %s | %s\n", profile_names[p], stream_specs[s].label,
               detector_names[d], arl, r->alarms, cond, cells[KIND_COND], cells[KIND_X12], cells[KIND_X15]);
        for (int k = 0; k < N_KINDS; k++) free(r->delays[k]);
      }
    }
    fflush(stdout);
    dccl_sim_free(&sim);
  }

  printf("\nsummary per detector (all profiles and streams pooled; delays as median p90 misses)\n");
  int met[2], arl_ok[2], delay_ok[2];
  for (int d = 0; d < 2; d++) {
    detector_totals* t = &totals[d];
    char arl[32], kinds[N_KINDS][48], all_cell[48];
    format_arl(t->calls, t->alarms, arl, sizeof(arl));
    arl_ok[d] = t->calls / (t->alarms > 0 ? t->alarms : 1) >= ARL_TARGET;
    /* Every slowdown is >= 20%: the target applies to all trials pooled. */
    int all_n = 0;
    for (int k = 0; k < N_KINDS; k++) all_n += t->n_delays[k];
    int* all = malloc((size_t)(all_n > 0 ? all_n : 1) * sizeof(int));
    if (all == NULL) return 1;
    all_n = 0;
    for (int k = 0; k < N_KINDS; k++) {
      memcpy(all + all_n, t->delays[k], (size_t)t->n_delays[k] * sizeof(int));
      all_n += t->n_delays[k];
      format_delays(t->delays[k], t->n_delays[k], kinds[k], sizeof(kinds[k]));
    }
    format_delays(all, all_n, all_cell, sizeof(all_cell)); /* sorts `all` */
    int median = percentile(all, all_n, 0.5);
    delay_ok[d] = median >= 0 && median <= DELAY_TARGET;
    met[d] = arl_ok[d] && delay_ok[d];
    printf("%-10s ARL %s calls (%.0f false onsets in %.0f calm calls: %.0f in the %.0f calls of the calm runs, %.0f in "
           "trial lead-ins) | delay cond [%s] x1.2 [%s] x1.5 [%s] "
           "all [%s] | %.2f us/observation",
           detector_names[d], arl, t->alarms, t->calls, t->run_alarms, t->run_calls, t->alarms - t->run_alarms,
           kinds[KIND_COND], kinds[KIND_X12], kinds[KIND_X15],
           all_cell, t->observations > 0 ? 1e6 * t->seconds / t->observations : 0.0);
    if (d == 1)
      printf(" | %.0f training steps, forecast RMS %.3f residual sd", t->training_steps,
             t->forecasts > 0 ? sqrt(t->forecast_square / t->forecasts) : 0.0);
    printf("\n");
    free(all);
  }
  printf("targets (ARL >= %.0f calls, median delay <= %d calls at >= 20%% slowdowns): cusum %s (ARL %s, delay %s), "
         "lstm+cusum %s (ARL %s, delay %s)\n",
         ARL_TARGET, DELAY_TARGET, met[0] ? "MET" : "NOT MET", arl_ok[0] ? "ok" : "short", delay_ok[0] ? "ok" : "slow",
         met[1] ? "MET" : "NOT MET", arl_ok[1] ? "ok" : "short", delay_ok[1] ? "ok" : "slow");
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < N_KINDS; k++) free(totals[d].delays[k]);
  return 0;
}
